import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import {
  createFetchHandler,
  defaultRoutes,
  discoveryRoutes,
  DOCS_CONTENT_SECURITY_POLICY,
  openApiDocument
} from "@switchboard/http-adapter"
import { expectEnvelope, makeHandler, makeSharedStorage, request } from "./helpers.js"

// docs/api-reference.md, the discovery group (tag Guide): GET {base}/ in the
// envelope, GET {base}/openapi.json and GET {base}/docs (and its files) raw; no API key;
// rate limited per client address.

const swaggerUiDirectory = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist"))
const handler = makeHandler(makeSharedStorage())
afterAll(() => handler.dispose())

const get = (url: string, headers: Record<string, string> = {}) => request(handler, { method: "GET", url, headers })

describe("GET {base}/", () => {
  it("describes the API in the envelope, without an API key, with links to the document and the page", async () => {
    for (const url of ["/api/v1/api/", "/api/v1/api"]) {
      const response = await get(url)
      const result = expectEnvelope(response.statusCode, response.body)
      expect(result.status).toBe(200)
      expect(result.data).toMatchObject({
        name: "Switchboard Developer Messaging API",
        version: "1.0.0",
        links: { openapi: "/api/v1/api/openapi.json", docs: "/api/v1/api/docs", verify: "/api/v1/api/verify" }
      })
      expect(response.headers["content-type"]).toBe("application/json; charset=utf-8")
    }
  })

  it("ignores an Authorization header, even a bad one (the group needs no key)", async () => {
    const response = await get("/api/v1/api/", { authorization: "Basic Zm9vOmJhcg==" })
    expect(response.statusCode).toBe(200)
  })
})

describe("GET {base}/openapi.json", () => {
  it("serves the generated OpenAPI 3.1 document raw (not in the envelope)", async () => {
    const response = await get("/api/v1/api/openapi.json")
    expect(response.statusCode).toBe(200)
    expect(response.headers["content-type"]).toBe("application/json; charset=utf-8")
    expect(response.headers["x-request-id"]).toBeTruthy()
    expect(response.headers["ratelimit-limit"]).toBeTruthy()
    const served = response.json()
    expect(served).not.toHaveProperty("success")
    expect(served).toEqual(JSON.parse(JSON.stringify(openApiDocument({ basePath: "/api/v1/api", routes: defaultRoutes }))))
    expect(Number(response.headers["content-length"])).toBe(Buffer.byteLength(response.body))
  })

  it("builds the document once, on the first request, then serves it from memory", async () => {
    let reads = 0
    const counted = {
      ...discoveryRoutes[0]!,
      path: "/counted",
      get summary() {
        reads += 1
        return "Counted"
      }
    }
    const own = makeHandler(makeSharedStorage(), { routes: [...discoveryRoutes, counted] })
    try {
      expect(reads).toBe(0)
      const first = await request(own, { method: "GET", url: "/api/v1/api/openapi.json" })
      expect(first.json().paths["/counted"].get.summary).toBe("Counted")
      const afterFirst = reads
      expect(afterFirst).toBeGreaterThan(0)
      const second = await request(own, { method: "GET", url: "/api/v1/api/openapi.json" })
      expect(second.body).toBe(first.body)
      expect(reads).toBe(afterFirst)
    } finally {
      await own.dispose()
    }
  })

  it("answers the same document every time, and follows the handler's base path and routes", async () => {
    const first = await get("/api/v1/api/openapi.json")
    const second = await get("/api/v1/api/openapi.json")
    expect(second.body).toBe(first.body)

    const custom = makeHandler(makeSharedStorage(), { basePath: "/messaging/" })
    try {
      const response = await request(custom, { method: "GET", url: "/messaging/openapi.json" })
      const served = response.json()
      expect(served.servers).toEqual([{ url: "/messaging", description: "This server" }])
      expect(Object.keys(served.paths)).toContain("/contacts/{uuid}")
      const index = expectEnvelope(...(await request(custom, { method: "GET", url: "/messaging/" }).then((r) => [r.statusCode, r.body] as const)))
      expect(index.data.links.docs).toBe("/messaging/docs")
    } finally {
      await custom.dispose()
    }
  })
})

describe("GET {base}/docs", () => {
  it("serves the reference page with a strict Content-Security-Policy, no CDN and no inline script", async () => {
    const response = await get("/api/v1/api/docs")
    expect(response.statusCode).toBe(200)
    expect(response.headers["content-type"]).toBe("text/html; charset=utf-8")
    expect(response.headers["content-security-policy"]).toBe(DOCS_CONTENT_SECURITY_POLICY)
    expect(DOCS_CONTENT_SECURITY_POLICY).toContain("script-src 'self'")
    expect(DOCS_CONTENT_SECURITY_POLICY).not.toMatch(/script-src[^;]*unsafe/)
    expect(response.headers["x-content-type-options"]).toBe("nosniff")
    expect(response.body).toContain('href="/api/v1/api/docs/swagger-ui.css"')
    expect(response.body).toContain('src="/api/v1/api/docs/swagger-ui-bundle.js"')
    expect(response.body).toContain('data-openapi-url="/api/v1/api/openapi.json"')
    expect(response.body).not.toMatch(/https?:\/\//)
    expect(response.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/)
  })

  it("serves Swagger UI's files from node_modules with their content types", async () => {
    const bundle = await get("/api/v1/api/docs/swagger-ui-bundle.js")
    expect(bundle.statusCode).toBe(200)
    expect(bundle.headers["content-type"]).toBe("text/javascript; charset=utf-8")
    expect(bundle.body).toBe(readFileSync(join(swaggerUiDirectory, "swagger-ui-bundle.js"), "utf8"))
    expect(Number(bundle.headers["content-length"])).toBe(Buffer.byteLength(bundle.body))

    const css = await get("/api/v1/api/docs/swagger-ui.css")
    expect(css.headers["content-type"]).toBe("text/css; charset=utf-8")
    expect(css.body).toBe(readFileSync(join(swaggerUiDirectory, "swagger-ui.css"), "utf8"))

    const starter = await get("/api/v1/api/docs/switchboard-docs.js")
    expect(starter.headers["content-type"]).toBe("text/javascript; charset=utf-8")
    expect(starter.body).toContain("SwaggerUIBundle(")
    expect(starter.body).toContain("validatorUrl: null")
  })

  it("answers 404 not_found in the envelope for any other file name, traversal included", async () => {
    for (const name of ["index.html", "package.json", "..%2Fpackage.json", "swagger-ui.js.map", "constructor"]) {
      const response = await get(`/api/v1/api/docs/${name}`)
      const result = expectEnvelope(response.statusCode, response.body)
      expect(result.status, name).toBe(404)
      expect(result.errors[0]?.code).toBe("not_found")
    }
  })

  it("answers HEAD with the headers and no body", async () => {
    const response = await request(handler, { method: "HEAD", url: "/api/v1/api/docs" })
    expect(response.statusCode).toBe(200)
    expect(response.headers["content-type"]).toBe("text/html; charset=utf-8")
    expect(response.body).toBe("")
  })
})

describe("discovery rate limits (docs/rate-limits.md: keyed by client address)", () => {
  it("counts each client address in the general bucket, 429 rate_limited past the limit", async () => {
    const limited = makeHandler(makeSharedStorage(), { rateLimit: { general: { max: 2, windowMs: 3_600_000 } }, trustProxy: true })
    try {
      const from = (address: string, url: string) =>
        request(limited, { method: "GET", url, headers: { "x-forwarded-for": address } })
      expect((await from("203.0.113.7", "/api/v1/api/")).statusCode).toBe(200)
      expect((await from("203.0.113.7", "/api/v1/api/openapi.json")).statusCode).toBe(200)
      const refused = await from("203.0.113.7", "/api/v1/api/docs")
      const result = expectEnvelope(refused.statusCode, refused.body)
      expect(result.status).toBe(429)
      expect(result.errors[0]?.code).toBe("rate_limited")
      expect(refused.headers["retry-after"]).toBeTruthy()
      expect((await from("198.51.100.2", "/api/v1/api/docs")).statusCode).toBe(200)
    } finally {
      await limited.dispose()
    }
  })
})

describe("through createFetchHandler (Fetch API hosts)", () => {
  it("serves the document, the page and its files the same way", async () => {
    const fetchHandler = createFetchHandler({ storage: makeSharedStorage(), logger: false })
    try {
      const document = await fetchHandler(new Request("http://localhost/api/v1/api/openapi.json"))
      expect(document.status).toBe(200)
      expect(document.headers.get("content-type")).toBe("application/json; charset=utf-8")
      expect(((await document.json()) as { openapi: string }).openapi).toBe("3.1.0")
      const page = await fetchHandler(new Request("http://localhost/api/v1/api/docs"))
      expect(page.headers.get("content-security-policy")).toBe(DOCS_CONTENT_SECURITY_POLICY)
      expect(await page.text()).toContain("swagger-ui-bundle.js")
      const css = await fetchHandler(new Request("http://localhost/api/v1/api/docs/swagger-ui.css"))
      expect(css.headers.get("content-type")).toBe("text/css; charset=utf-8")
      expect(await css.text()).toBe(readFileSync(join(swaggerUiDirectory, "swagger-ui.css"), "utf8"))
    } finally {
      await fetchHandler.dispose()
    }
  })
})

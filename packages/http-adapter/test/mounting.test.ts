import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Effect, Layer, Logger } from "effect"
import { MemoryStorage, Storage, StorageError } from "@switchboard/core"
import { defaultRoutes, defineRoute, type RequestLogLine } from "@switchboard/http-adapter"
import { bearer, createOrganization, makeHandler, makeSharedStorage, request } from "./helpers.js"

const bodyRoute = defineRoute({
  method: "POST",
  path: "/test/echo",
  tag: "Test",
  summary: "Echo",
  body: { name: { type: "string" } },
  handle: ({ body }) => Effect.succeed({ message: "echo", data: body })
})

describe("behind a real node:http server", () => {
  const storage = makeSharedStorage()
  const handler = makeHandler(storage, { routes: [...defaultRoutes, bodyRoute], bodyLimit: 1024 })
  const server = createServer(handler)
  let base = ""
  let apiKey = ""

  beforeAll(async () => {
    apiKey = (await createOrganization(storage)).key.api_key
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve))
    await handler.dispose()
  })

  it("serves /verify over a socket", async () => {
    const response = await fetch(`${base}/api/v1/api/verify`, { headers: bearer(apiKey) })
    expect(response.status).toBe(200)
    expect((await response.json()) as object).toMatchObject({ status: 200, success: true })
  })

  it("413 for a chunked body that grows past the limit (no Content-Length)", async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${base}/api/v1/api/test/echo`, {
        method: "POST",
        headers: { ...bearer(apiKey), "content-type": "application/json", "transfer-encoding": "chunked" }
      })
      req.on("response", (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      })
      req.on("error", reject)
      req.write('{"name":"')
      req.write("x".repeat(2048))
      req.end('"}')
    })
    expect(status).toBe(413)
  })

  it("reads a streamed JSON body under the limit", async () => {
    const response = await fetch(`${base}/api/v1/api/test/echo`, {
      method: "POST",
      headers: { ...bearer(apiKey), "content-type": "application/json" },
      body: JSON.stringify({ name: "Ada" })
    })
    expect(response.status).toBe(200)
    expect(((await response.json()) as { data: unknown }).data).toEqual({ name: "Ada" })
  })
})

describe("as Express/Connect middleware", () => {
  const storage = makeSharedStorage()
  const handler = makeHandler(storage)
  let apiKey = ""
  beforeAll(async () => {
    apiKey = (await createOrganization(storage)).key.api_key
  })
  afterAll(() => handler.dispose())

  /** A minimal connect-style chain: the handler first, then the app's own fallback. */
  const chain = (mount: string) => (req: IncomingMessage & { originalUrl?: string }, res: ServerResponse) => {
    const originalUrl = req.url ?? "/"
    if (mount !== "" && originalUrl.startsWith(mount)) {
      req.originalUrl = originalUrl
      req.url = originalUrl.slice(mount.length) || "/"
    }
    handler(req, res, () => {
      res.statusCode = 200
      res.end("app route")
    })
  }

  it("calls next() for paths outside the base path", async () => {
    const response = await request(chain(""), {
      method: "GET",
      url: "/health"
    })
    expect(response.body).toBe("app route")
  })

  it("matches on originalUrl when the host strips a mount prefix", async () => {
    const mounted = chain("/api/v1/api")
    const response = await request(mounted, { method: "GET", url: "/api/v1/api/verify", headers: bearer(apiKey) })
    expect(response.statusCode).toBe(200)
    expect(response.json().success).toBe(true)
  })

  it("answers unknown paths inside the base path itself, without next()", async () => {
    const response = await request(chain(""), {
      method: "GET",
      url: "/api/v1/api/unknown"
    })
    expect(response.statusCode).toBe(404)
    expect(response.json().errors[0].code).toBe("route_not_found")
  })

  it("honours a custom base path", async () => {
    const custom = makeHandler(makeSharedStorage(), { basePath: "/messaging/" })
    const response = await request(custom, { method: "GET", url: "/messaging/verify" })
    expect(response.json().errors[0].code).toBe("missing_api_key")
    await custom.dispose()
  })
})

/** A store whose key look-up fails: every authenticated request answers 500. */
const failing = Layer.sync(Storage, () => {
  const store = MemoryStorage.make()
  return {
    ...store,
    organizations: {
      ...store.organizations,
      findCredentialByHash: () =>
        Effect.fail(new StorageError({ operation: "organizations.findCredentialByHash", cause: new Error("disk I/O error at /var/db") }))
    }
  }
})

describe("failures of the store", () => {

  it("answers 500 internal_error exposing no cause and logs it", async () => {
    const lines: Array<string> = []
    const handler = makeHandler(failing, {
      logger: Logger.make(({ message, cause }) => lines.push(`${String(message)} ${String(cause)}`))
    })
    const response = await request(handler, { method: "GET", url: "/api/v1/api/verify", headers: bearer("sb_any") })
    expect(response.statusCode).toBe(500)
    expect(response.json()).toEqual({
      status: 500,
      success: false,
      message: "Internal server error",
      data: null,
      errors: [{ code: "internal_error", message: "Internal server error" }]
    })
    expect(response.body).not.toContain("disk I/O")
    await handler.dispose()
    expect(lines.some((line) => line.startsWith("Storage failure") && line.includes("disk I/O"))).toBe(true)
  })

  it("writes the request line of a 500 at level ERROR and that of a 200 at INFO", async () => {
    const levels: Array<string> = []
    const requestLine = Logger.make(({ message, logLevel, annotations }) => {
      if (message === "request") levels.push(`${String(Object.fromEntries(annotations).status)} ${logLevel.label}`)
    })
    const broken = makeHandler(failing, { logger: requestLine })
    await request(broken, { method: "GET", url: "/api/v1/api/verify", headers: bearer("sb_any") })
    await broken.dispose()
    const storage = makeSharedStorage()
    const { key } = await createOrganization(storage)
    const working = makeHandler(storage, { logger: requestLine })
    await request(working, { method: "GET", url: "/api/v1/api/verify", headers: bearer(key.api_key) })
    await working.dispose()
    expect(levels).toEqual(["500 ERROR", "200 INFO"])
  })

  it("answers 500 when the storage Layer cannot be built, and ready rejects", async () => {
    const broken = Layer.fail(new Error("cannot open database"))
    const handler = makeHandler(broken)
    await expect(handler.ready).rejects.toBeDefined()
    const response = await request(handler, { method: "GET", url: "/api/v1/api/verify", headers: bearer("sb_any") })
    expect(response.statusCode).toBe(500)
    expect(response.body).not.toContain("cannot open")
    await handler.dispose().catch(() => undefined)
  })

  it("leaves no unhandled rejection when the storage cannot be built and ready is never awaited", async () => {
    const unhandled: Array<unknown> = []
    const record = (reason: unknown) => unhandled.push(reason)
    process.on("unhandledRejection", record)
    try {
      const handler = makeHandler(Layer.fail(new Error("cannot open database")))
      // Let the runtime fail and Node look for rejection handlers (after the microtask queue).
      await new Promise((resolve) => setTimeout(resolve, 50))
      expect(unhandled).toEqual([])
      await handler.dispose().catch(() => undefined)
    } finally {
      process.off("unhandledRejection", record)
    }
  })
})

describe("request logs (docs/http-adapter.md 'Every response')", () => {
  it("writes one line per request with method, route, status, duration, organization and request id, and never the key", async () => {
    const entries: Array<{ message: unknown; annotations: Record<string, unknown> }> = []
    const storage = makeSharedStorage()
    const { organization, key } = await createOrganization(storage)
    const handler = makeHandler(storage, {
      logger: Logger.make(({ message, annotations }) => {
        entries.push({ message, annotations: Object.fromEntries(annotations) })
      })
    })
    await request(handler, {
      method: "GET",
      url: "/api/v1/api/verify",
      headers: { ...bearer(key.api_key), "x-request-id": "trace-1" }
    })
    await request(handler, { method: "GET", url: "/api/v1/api/verify", headers: bearer(key.api_key + "x") })
    await handler.dispose()
    expect(entries).toHaveLength(2)
    expect(entries[0]?.annotations).toMatchObject({
      method: "GET",
      route: "/verify",
      status: 200,
      organization_id: organization.id,
      request_id: "trace-1"
    })
    expect(typeof entries[0]?.annotations.duration_ms).toBe("number")
    expect(entries[1]?.annotations).toMatchObject({ status: 401, organization_id: null })
    expect(JSON.stringify(entries)).not.toContain(key.api_key)
  })

  it("hands each request line to requestLog as plain data instead of logger, which keeps the other lines", async () => {
    const lines: Array<RequestLogLine> = []
    const loggerMessages: Array<string> = []
    const storage = makeSharedStorage()
    const { organization, key } = await createOrganization(storage)
    const handler = makeHandler(storage, {
      requestLog: (line) => lines.push(line),
      logger: Logger.make(({ message }) => loggerMessages.push(String(message)))
    })
    const before = Date.now()
    await request(handler, {
      method: "GET",
      url: "/api/v1/api/verify",
      headers: { ...bearer(key.api_key), "x-request-id": "trace-2" }
    })
    await request(handler, { method: "GET", url: "/api/v1/api/verify", headers: bearer(key.api_key + "x") })
    await request(handler, { method: "POST", url: "/api/v1/api/nowhere" })
    await handler.dispose()
    expect(lines).toHaveLength(3)
    expect(lines[0]).toMatchObject({
      level: "INFO",
      method: "GET",
      route: "/verify",
      status: 200,
      organizationId: organization.id,
      requestId: "trace-2"
    })
    expect(lines[0]?.durationMs).toBeGreaterThanOrEqual(0)
    expect(lines[0]?.timestamp).toBeGreaterThanOrEqual(before)
    expect(lines[0]?.timestamp).toBeLessThanOrEqual(Date.now())
    expect(lines[1]).toMatchObject({ status: 401, organizationId: null, route: "/verify" })
    expect(lines[2]).toMatchObject({ status: 404, method: "POST", route: "(unmatched)", organizationId: null })
    expect(loggerMessages).not.toContain("request")
    expect(JSON.stringify(lines)).not.toContain(key.api_key)
  })

  it("gives requestLog the lines of a 5xx at level ERROR, even with logger: false", async () => {
    const lines: Array<RequestLogLine> = []
    const broken = makeHandler(failing, { logger: false, requestLog: (line) => lines.push(line) })
    const response = await request(broken, { method: "GET", url: "/api/v1/api/verify", headers: bearer("sb_any") })
    await broken.dispose()
    expect(response.statusCode).toBe(500)
    expect(lines).toMatchObject([{ level: "ERROR", status: 500 }])
  })

  it("a requestLog that throws loses its lines, never the responses", async () => {
    const storage = makeSharedStorage()
    const { key } = await createOrganization(storage)
    let calls = 0
    const handler = makeHandler(storage, {
      requestLog: () => {
        calls += 1
        throw new Error("the log sink is full")
      }
    })
    const verified = await request(handler, { method: "GET", url: "/api/v1/api/verify", headers: bearer(key.api_key) })
    const unknown = await request(handler, { method: "GET", url: "/api/v1/api/nowhere" })
    await handler.dispose()
    expect([verified.statusCode, unknown.statusCode]).toEqual([200, 404])
    expect(calls).toBe(2)
  })

  it("a logger that throws loses its lines, never the responses (docs/http-adapter.md)", async () => {
    const storage = makeSharedStorage()
    const { key } = await createOrganization(storage)
    let calls = 0
    const handler = makeHandler(storage, {
      logger: Logger.make(() => {
        calls += 1
        throw new Error("the log sink is full")
      })
    })
    const verified = await request(handler, { method: "GET", url: "/api/v1/api/verify", headers: bearer(key.api_key) })
    const unknown = await request(handler, { method: "GET", url: "/api/v1/api/nowhere" })
    const again = await request(handler, { method: "GET", url: "/api/v1/api/verify", headers: bearer(key.api_key) })
    await handler.dispose()
    expect([verified.statusCode, unknown.statusCode, again.statusCode]).toEqual([200, 404, 200])
    expect(JSON.parse(verified.body)).toMatchObject({ status: 200, success: true })
    expect(calls).toBe(3)
  })
})

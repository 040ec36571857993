import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Effect, Layer, Logger } from "effect"
import { createFetchHandler, defaultRoutes, defineRoute, type FetchHandler, type FetchHandlerOptions } from "@switchboard/http-adapter"
import { bearer, createOrganization, expectEnvelope, makeSharedStorage, publicRoute } from "./helpers.js"

/** A route with a JSON body, to see the body rules through the Fetch handler. */
const echoRoute = defineRoute({
  method: "POST",
  path: "/test/echo",
  tag: "Test",
  summary: "Echo",
  body: { name: { type: "string" } },
  handle: ({ body }) => Effect.succeed({ message: "echo", data: body })
})

const routes = [...defaultRoutes, echoRoute, publicRoute]
const ORIGIN = "http://switchboard.test"
const handlers: Array<FetchHandler> = []
afterAll(() => Promise.all(handlers.map((handler) => handler.dispose())))

const setUp = (options: Partial<FetchHandlerOptions> = {}) => {
  const storage = makeSharedStorage()
  const handler = createFetchHandler({ storage, logger: false, routes, bodyLimit: 1024, ...options })
  handlers.push(handler)
  return { storage, handler }
}

/** Calls the handler and checks the envelope rules (same checks as the Node handler's tests). */
const call = async (handler: FetchHandler, request: Request, context?: { clientAddress?: string }) => {
  const response = await handler(request, context)
  const text = await response.text()
  return { response, result: expectEnvelope(response.status, text) }
}

const json = (apiKey: string, body: string, extra: Record<string, string> = {}) => ({
  method: "POST",
  headers: { ...bearer(apiKey), "content-type": "application/json", ...extra },
  body
})

describe("createFetchHandler: the API as (Request) => Promise<Response>", () => {
  const { storage, handler } = setUp()
  let apiKey = ""
  beforeAll(async () => {
    apiKey = (await createOrganization(storage)).key.api_key
  })

  it("answers GET /verify with a key: 200, the envelope, JSON content type and X-Request-Id", async () => {
    const { response, result } = await call(handler, new Request(`${ORIGIN}/api/v1/api/verify`, { headers: bearer(apiKey) }))
    expect(result.status).toBe(200)
    expect(response.headers.get("content-type")).toBe("application/json; charset=utf-8")
    expect(response.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/)
  })

  it("keeps a sane X-Request-Id sent by the client", async () => {
    const { response } = await call(
      handler,
      new Request(`${ORIGIN}/api/v1/api/verify`, { headers: { ...bearer(apiKey), "x-request-id": "trace-42" } })
    )
    expect(response.headers.get("x-request-id")).toBe("trace-42")
  })

  it("401 missing_api_key without a key, with WWW-Authenticate and no rate-limit headers", async () => {
    const { response, result } = await call(handler, new Request(`${ORIGIN}/api/v1/api/verify`))
    expect(result.status).toBe(401)
    expect(result.errors[0]?.code).toBe("missing_api_key")
    expect(response.headers.get("www-authenticate")).toBe('Bearer realm="api"')
    expect(response.headers.get("ratelimit-limit")).toBeNull()
  })

  it("401 invalid_api_key for an unknown key", async () => {
    const { result } = await call(handler, new Request(`${ORIGIN}/api/v1/api/verify`, { headers: bearer(apiKey + "x") }))
    expect(result.errors[0]?.code).toBe("invalid_api_key")
  })

  it("404 route_not_found inside and outside the base path; 405 with Allow", async () => {
    const inside = await call(handler, new Request(`${ORIGIN}/api/v1/api/nothing-here`, { headers: bearer(apiKey) }))
    expect(inside.result.status).toBe(404)
    expect(inside.result.errors[0]?.code).toBe("route_not_found")
    const outside = await call(handler, new Request(`${ORIGIN}/health`))
    expect(outside.result.errors[0]?.code).toBe("route_not_found")
    const wrongMethod = await call(handler, new Request(`${ORIGIN}/api/v1/api/verify`, { method: "DELETE" }))
    expect(wrongMethod.result.status).toBe(405)
    expect(wrongMethod.response.headers.get("allow")).toBe("GET, HEAD")
  })

  it("POST with a JSON body: creates a group, then lists it", async () => {
    const created = await call(handler, new Request(`${ORIGIN}/api/v1/api/contact-groups`, json(apiKey, '{"name":"VIP"}')))
    expect(created.result.status).toBe(200)
    expect(created.result.data).toMatchObject({ name: "VIP", contacts_count: 0 })
    const listed = await call(handler, new Request(`${ORIGIN}/api/v1/api/contact-groups`, { headers: bearer(apiKey) }))
    expect(listed.result.data.groups).toEqual([expect.objectContaining({ uuid: created.result.data.uuid, name: "VIP" })])
  })

  it("passes the query string to the route (pagination)", async () => {
    const { result } = await call(handler, new Request(`${ORIGIN}/api/v1/api/contacts?page=3&per_page=5`, { headers: bearer(apiKey) }))
    expect(result.data.pagination).toMatchObject({ page: 3, per_page: 5 })
  })

  it("400 invalid_json for a malformed body, 400 invalid_type for a JSON array", async () => {
    const malformed = await call(handler, new Request(`${ORIGIN}/api/v1/api/test/echo`, json(apiKey, '{"name":')))
    expect(malformed.result.status).toBe(400)
    expect(malformed.result.errors[0]?.code).toBe("invalid_json")
    const array = await call(handler, new Request(`${ORIGIN}/api/v1/api/test/echo`, json(apiKey, "[1]")))
    expect(array.result.errors[0]?.code).toBe("invalid_type")
  })

  it("415 unsupported_media_type for a body route without a JSON content type", async () => {
    const { result } = await call(
      handler,
      new Request(`${ORIGIN}/api/v1/api/test/echo`, {
        method: "POST",
        headers: { ...bearer(apiKey), "content-type": "text/plain" },
        body: '{"name":"Ada"}'
      })
    )
    expect(result.status).toBe(415)
    expect(result.errors[0]?.code).toBe("unsupported_media_type")
  })

  it("413 payload_too_large for a body over bodyLimit (1024 bytes here)", async () => {
    const { result } = await call(
      handler,
      new Request(`${ORIGIN}/api/v1/api/test/echo`, json(apiKey, JSON.stringify({ name: "x".repeat(2048) })))
    )
    expect(result.status).toBe(413)
    expect(result.errors[0]?.code).toBe("payload_too_large")
  })

  it("413 for a streamed body without Content-Length that grows past the limit", async () => {
    const encoder = new TextEncoder()
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode('{"name":"'))
        for (let index = 0; index < 4; index++) controller.enqueue(encoder.encode("x".repeat(512)))
        controller.enqueue(encoder.encode('"}'))
        controller.close()
      }
    })
    const request = new Request(`${ORIGIN}/api/v1/api/test/echo`, {
      method: "POST",
      headers: { ...bearer(apiKey), "content-type": "application/json" },
      body: stream,
      duplex: "half"
    } as RequestInit)
    expect(request.headers.get("content-length")).toBeNull()
    const { result } = await call(handler, request)
    expect(result.status).toBe(413)
  })

  it("reads a body under the limit and drops unknown fields", async () => {
    const { result } = await call(
      handler,
      new Request(`${ORIGIN}/api/v1/api/test/echo`, json(apiKey, '{"name":"Ada","admin":true}'))
    )
    expect(result.data).toEqual({ name: "Ada" })
  })

  it("serves the discovery routes without a key: the base path in the envelope, openapi.json raw", async () => {
    const root = await call(handler, new Request(`${ORIGIN}/api/v1/api`), { clientAddress: "192.0.2.50" })
    expect(root.result.status).toBe(200)
    const document = await handler(new Request(`${ORIGIN}/api/v1/api/openapi.json`), { clientAddress: "192.0.2.50" })
    expect(document.status).toBe(200)
    expect(document.headers.get("content-type")).toContain("json")
    const body = (await document.json()) as { openapi?: string; success?: unknown }
    expect(body.openapi).toMatch(/^3\.1/)
    expect(body.success).toBeUndefined()
  })

  it("answers HEAD like GET without a body", async () => {
    const response = await handler(new Request(`${ORIGIN}/api/v1/api/verify`, { method: "HEAD", headers: bearer(apiKey) }))
    expect(response.status).toBe(200)
    expect(await response.text()).toBe("")
  })
})

describe("createFetchHandler: rate limits", () => {
  it("carries RateLimit-* headers and answers 429 rate_limited with Retry-After past the limit", async () => {
    const { storage, handler } = setUp({ rateLimit: { general: { max: 2, windowMs: 60_000 } } })
    const { key } = await createOrganization(storage)
    const verify = () => call(handler, new Request(`${ORIGIN}/api/v1/api/verify`, { headers: bearer(key.api_key) }))
    const first = await verify()
    expect(first.response.headers.get("ratelimit-limit")).toBe("2")
    expect(first.response.headers.get("ratelimit-remaining")).toBe("1")
    expect(Number(first.response.headers.get("ratelimit-reset"))).toBeGreaterThan(0)
    await verify()
    const third = await verify()
    expect(third.result.status).toBe(429)
    expect(third.result.errors[0]?.code).toBe("rate_limited")
    expect(third.response.headers.get("ratelimit-remaining")).toBe("0")
    expect(Number(third.response.headers.get("retry-after"))).toBeGreaterThan(0)
  })

  it("counts unauthenticated routes by the client address of the context", async () => {
    const { handler } = setUp({ rateLimit: { general: { max: 1, windowMs: 60_000 } } })
    const open = (clientAddress?: string) =>
      call(handler, new Request(`${ORIGIN}/api/v1/api/test/public`), clientAddress === undefined ? undefined : { clientAddress })
    expect((await open("203.0.113.1")).result.status).toBe(200)
    expect((await open("203.0.113.1")).result.status).toBe(429)
    expect((await open("203.0.113.2")).result.status).toBe(200)
    expect((await open("::ffff:203.0.113.2")).result.status).toBe(429)
  })

  it("without a context address, uses the clientAddress option, then one shared 'unknown' bucket", async () => {
    const { handler } = setUp({
      rateLimit: { general: { max: 1, windowMs: 60_000 } },
      clientAddress: (request) => request.headers.get("cf-connecting-ip") ?? undefined
    })
    const open = (headers: Record<string, string> = {}) =>
      call(handler, new Request(`${ORIGIN}/api/v1/api/test/public`, { headers }))
    expect((await open({ "cf-connecting-ip": "198.51.100.1" })).result.status).toBe(200)
    expect((await open({ "cf-connecting-ip": "198.51.100.1" })).result.status).toBe(429)
    expect((await open({ "cf-connecting-ip": "198.51.100.2" })).result.status).toBe(200)
    expect((await open()).result.status).toBe(200)
    expect((await open()).result.status).toBe(429)
  })

  it("with trustProxy, keys by the first X-Forwarded-For address; without it, ignores the header", async () => {
    const trusting = setUp({ trustProxy: true, rateLimit: { general: { max: 1, windowMs: 60_000 } } }).handler
    const forwarded = (handler: FetchHandler, address: string) =>
      call(handler, new Request(`${ORIGIN}/api/v1/api/test/public`, { headers: { "x-forwarded-for": `${address}, 10.0.0.1` } }), {
        clientAddress: "10.0.0.1"
      })
    expect((await forwarded(trusting, "192.0.2.1")).result.status).toBe(200)
    expect((await forwarded(trusting, "192.0.2.2")).result.status).toBe(200)
    expect((await forwarded(trusting, "192.0.2.1")).result.status).toBe(429)
    const untrusting = setUp({ rateLimit: { general: { max: 1, windowMs: 60_000 } } }).handler
    expect((await forwarded(untrusting, "192.0.2.1")).result.status).toBe(200)
    expect((await forwarded(untrusting, "192.0.2.2")).result.status).toBe(429)
  })
})

describe("createFetchHandler: a client that goes away", () => {
  it("interrupts the request's fiber when request.signal aborts", async () => {
    let started: () => void = () => undefined
    const running = new Promise<void>((resolve) => {
      started = resolve
    })
    let interrupted = false
    const hangingRoute = defineRoute({
      method: "GET",
      path: "/test/hang",
      tag: "Test",
      summary: "Never answers",
      authenticated: false,
      handle: () =>
        Effect.sync(() => started()).pipe(
          Effect.zipRight(Effect.never),
          Effect.onInterrupt(() =>
            Effect.sync(() => {
              interrupted = true
            })
          )
        )
    })
    const { handler } = setUp({ routes: [...routes, hangingRoute] })
    const controller = new AbortController()
    const answer = handler(new Request(`${ORIGIN}/api/v1/api/test/hang`, { signal: controller.signal }), {
      clientAddress: "192.0.2.9"
    })
    await running
    controller.abort()
    const response = await answer
    expect(interrupted).toBe(true)
    expect(response.status).toBe(500)
  })
})

describe("createFetchHandler: base path, logs, failures", () => {
  it("honours a custom base path", async () => {
    const { storage, handler } = setUp({ basePath: "/messaging" })
    const { key } = await createOrganization(storage)
    const { result } = await call(handler, new Request(`${ORIGIN}/messaging/verify`, { headers: bearer(key.api_key) }))
    expect(result.status).toBe(200)
    const old = await call(handler, new Request(`${ORIGIN}/api/v1/api/verify`, { headers: bearer(key.api_key) }))
    expect(old.result.errors[0]?.code).toBe("route_not_found")
  })

  it("writes the same request log line as the Node handler", async () => {
    const entries: Array<Record<string, unknown>> = []
    const { storage, handler } = setUp({
      logger: Logger.make(({ annotations }) => {
        entries.push(Object.fromEntries(annotations))
      })
    })
    const { organization, key } = await createOrganization(storage)
    await handler(new Request(`${ORIGIN}/api/v1/api/verify`, { headers: { ...bearer(key.api_key), "x-request-id": "log-1" } }))
    await handler.dispose()
    expect(entries).toHaveLength(1)
    expect(entries[0]).toMatchObject({
      method: "GET",
      route: "/verify",
      status: 200,
      organization_id: organization.id,
      request_id: "log-1"
    })
    expect(JSON.stringify(entries)).not.toContain(key.api_key)
  })

  it("answers 500 internal_error when the storage cannot be opened, and ready rejects", async () => {
    const handler = createFetchHandler({ storage: Layer.fail(new Error("cannot open database")), logger: false })
    await expect(handler.ready).rejects.toBeDefined()
    const response = await handler(new Request(`${ORIGIN}/api/v1/api/verify`, { headers: bearer("sb_any") }))
    expect(response.status).toBe(500)
    const text = await response.text()
    expect(JSON.parse(text)).toMatchObject({ status: 500, errors: [{ code: "internal_error" }] })
    expect(text).not.toContain("cannot open")
    await handler.dispose().catch(() => undefined)
  })
})

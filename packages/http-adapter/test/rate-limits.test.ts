import { afterAll, describe, expect, it } from "vitest"
import { Effect, HashMap, Layer, Logger } from "effect"
import { RateLimitStore, StorageError } from "@switchboard/core"
import { defaultRoutes, defineRoute, type HandlerOptions, type SwitchboardHandler } from "@switchboard/http-adapter"
import {
  bearer,
  createOrganization,
  expectEnvelope,
  listen,
  makeHandler,
  makeSharedStorage,
  publicRoute,
  request,
  updatePlan
} from "./helpers.js"

/** Stands in for `POST /send/template` and the other send routes (docs/rate-limits.md "Buckets"). */
const sendRoute = defineRoute({
  method: "POST",
  path: "/test/send",
  tag: "Test",
  summary: "A send",
  bucket: "send",
  body: { phone: { type: "string" } },
  handle: ({ body }) => Effect.succeed({ message: "sent", data: body })
})

/** An unauthenticated route whose handler wrongly reads `auth`. */
const leakyRoute = defineRoute({
  method: "GET",
  path: "/test/leaky",
  tag: "Guide",
  summary: "Reads auth",
  authenticated: false,
  handle: ({ auth }) => Effect.succeed({ message: "leak", data: { id: auth.organization.id } })
})

const routes = [...defaultRoutes, sendRoute, publicRoute, leakyRoute]
const handlers: Array<SwitchboardHandler> = []
afterAll(() => Promise.all(handlers.map((handler) => handler.dispose())))

/** A fresh store and a handler with `options` (test routes included); the handler is disposed after the file. */
const setUp = (options: Partial<HandlerOptions> = {}) => {
  const storage = makeSharedStorage()
  const handler = makeHandler(storage, { routes, ...options })
  handlers.push(handler)
  const tenant = async () => (await createOrganization(storage)).key.api_key
  return { storage, handler, tenant }
}

const verify = (handler: SwitchboardHandler, apiKey: string) =>
  request(handler, { method: "GET", url: "/api/v1/api/verify", headers: bearer(apiKey) })

const send = (handler: SwitchboardHandler, apiKey: string, body: unknown = { phone: "+31612345678" }) =>
  request(handler, {
    method: "POST",
    url: "/api/v1/api/test/send",
    headers: { ...bearer(apiKey), "content-type": "application/json" },
    payload: JSON.stringify(body)
  })

const publicCall = (handler: SwitchboardHandler, remoteAddress: string, headers: Record<string, string> = {}) =>
  request(handler, { method: "GET", url: "/api/v1/api/test/public", remoteAddress, headers })

const rateHeaders = (response: { headers: Record<string, unknown> }) => ({
  limit: response.headers["ratelimit-limit"],
  remaining: response.headers["ratelimit-remaining"],
  reset: response.headers["ratelimit-reset"]
})

describe("RateLimit-* headers and the 429 (docs/rate-limits.md 'Headers and the 429')", () => {
  it("every response that passed the limiter carries limit, remaining and reset in whole seconds", async () => {
    const { handler, tenant } = setUp({ rateLimit: { general: { max: 3, windowMs: 60_000 } } })
    const apiKey = await tenant()
    const first = await verify(handler, apiKey)
    expect(first.statusCode).toBe(200)
    expect(rateHeaders(first)).toEqual({ limit: "3", remaining: "2", reset: expect.stringMatching(/^\d+$/) })
    const reset = Number(first.headers["ratelimit-reset"])
    expect(reset).toBeGreaterThanOrEqual(1)
    expect(reset).toBeLessThanOrEqual(60)
    expect(rateHeaders(await verify(handler, apiKey)).remaining).toBe("1")
  })

  it("429 rate_limited in the envelope with Retry-After, once the organization's limit is used up", async () => {
    const { handler, tenant } = setUp({ rateLimit: { general: { max: 2, windowMs: 60_000 } } })
    const apiKey = await tenant()
    await verify(handler, apiKey)
    await verify(handler, apiKey)
    const refused = await verify(handler, apiKey)
    const result = expectEnvelope(refused.statusCode, refused.body)
    expect(result.status).toBe(429)
    expect(result.errors).toEqual([{ code: "rate_limited", message: result.message }])
    expect(result.message).toMatch(/^Too many requests for the organization/)
    const retryAfter = Number(refused.headers["retry-after"])
    expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true)
    expect(rateHeaders(refused)).toEqual({ limit: "2", remaining: "0", reset: String(retryAfter) })
  })

  it("counts a request that fails later (400 after the limiter) and still sends the headers", async () => {
    const { handler, tenant } = setUp({ rateLimit: { send: { max: 2 } } })
    const apiKey = await tenant()
    const invalid = await send(handler, apiKey, { phone: 42 })
    expect(invalid.statusCode).toBe(400)
    expect(rateHeaders(invalid)).toMatchObject({ limit: "2", remaining: "1" })
    expect((await send(handler, apiKey)).statusCode).toBe(200)
    expect((await send(handler, apiKey)).statusCode).toBe(429)
  })

  it("limits before validating: an invalid body over the limit is a 429, not a 400", async () => {
    const { handler, tenant } = setUp({ rateLimit: { send: { max: 1 } } })
    const apiKey = await tenant()
    await send(handler, apiKey)
    expect((await send(handler, apiKey, { phone: 42 })).statusCode).toBe(429)
    const unparseable = await request(handler, {
      method: "POST",
      url: "/api/v1/api/test/send",
      headers: { ...bearer(apiKey), "content-type": "application/json" },
      payload: "{"
    })
    expect(unparseable.statusCode).toBe(429)
  })
})

describe("what is never counted (docs/rate-limits.md, docs/http-api.md 'Order of checks')", () => {
  it("401s consume nothing and carry no RateLimit headers", async () => {
    const { handler, tenant } = setUp({ rateLimit: { general: { max: 2 } } })
    const apiKey = await tenant()
    for (const headers of [{}, bearer(`${apiKey}x`), { authorization: "Basic abc" }, bearer(apiKey.slice(0, -1))]) {
      const response = await request(handler, { method: "GET", url: "/api/v1/api/verify", headers })
      expect(response.statusCode).toBe(401)
      expect(response.headers["ratelimit-limit"]).toBeUndefined()
    }
    expect((await verify(handler, apiKey)).statusCode).toBe(200)
    expect((await verify(handler, apiKey)).statusCode).toBe(200)
    expect((await verify(handler, apiKey)).statusCode).toBe(429)
  })

  it("403s (inactive subscription or no API access) consume nothing", async () => {
    const { storage, handler } = setUp({ rateLimit: { general: { max: 1 } } })
    const { organization, key } = await createOrganization(storage, { name: "Dormant", plan: { api_access: false } })
    for (let i = 0; i < 3; i++) {
      const denied = await verify(handler, key.api_key)
      expect(denied.statusCode).toBe(403)
      expect(denied.headers["ratelimit-limit"]).toBeUndefined()
    }
    await updatePlan(storage, organization.id, { api_access: true })
    expect((await verify(handler, key.api_key)).statusCode).toBe(200)
  })

  it("404 and 405 need no key and are not counted", async () => {
    const { handler, tenant } = setUp({ rateLimit: { general: { max: 1 } } })
    const apiKey = await tenant()
    for (let i = 0; i < 3; i++) {
      const missing = await request(handler, { method: "GET", url: "/api/v1/api/nowhere", headers: bearer(apiKey) })
      expect(missing.statusCode).toBe(404)
      expect(missing.headers["ratelimit-limit"]).toBeUndefined()
      const wrong = await request(handler, { method: "DELETE", url: "/api/v1/api/verify", headers: bearer(apiKey) })
      expect(wrong.statusCode).toBe(405)
    }
    expect((await verify(handler, apiKey)).statusCode).toBe(200)
  })
})

describe("buckets and subjects", () => {
  it("sends count in the send bucket only: they never consume the general bucket, and the reverse", async () => {
    const { handler, tenant } = setUp({ rateLimit: { general: { max: 3 }, send: { max: 2 } } })
    const apiKey = await tenant()
    expect(rateHeaders(await send(handler, apiKey))).toMatchObject({ limit: "2", remaining: "1" })
    expect((await send(handler, apiKey)).statusCode).toBe(200)
    const refused = await send(handler, apiKey)
    expect(refused.statusCode).toBe(429)
    expect(refused.json().message).toMatch(/send requests/)
    expect(rateHeaders(await verify(handler, apiKey))).toMatchObject({ limit: "3", remaining: "2" })
    await verify(handler, apiKey)
    await verify(handler, apiKey)
    expect((await verify(handler, apiKey)).statusCode).toBe(429)
  })

  it("keeps organizations apart", async () => {
    const { handler, tenant } = setUp({ rateLimit: { general: { max: 1 } } })
    const [acme, globex] = [await tenant(), await tenant()]
    await verify(handler, acme)
    expect((await verify(handler, acme)).statusCode).toBe(429)
    expect((await verify(handler, globex)).statusCode).toBe(200)
  })

  it("accepts exactly max of many concurrent requests over real sockets, the rest 429", async () => {
    const { handler, tenant } = setUp({ rateLimit: { general: { max: 7 } } })
    const apiKey = await tenant()
    const server = await listen(handler)
    try {
      const results = await Promise.all(Array.from({ length: 30 }, () => server.fetchApi(apiKey, "GET", "/verify")))
      const statuses = results.map((result) => result.status)
      expect(statuses.filter((status) => status === 200)).toHaveLength(7)
      expect(statuses.filter((status) => status === 429)).toHaveLength(23)
    } finally {
      await server.close()
    }
  })
})

describe("unauthenticated routes: keyed by client address", () => {
  it("need no key and count per socket address in the general bucket", async () => {
    const { handler } = setUp({ rateLimit: { general: { max: 2 } } })
    expect(rateHeaders(await publicCall(handler, "203.0.113.1"))).toMatchObject({ limit: "2", remaining: "1" })
    await publicCall(handler, "203.0.113.1")
    const refused = await publicCall(handler, "203.0.113.1")
    expect(refused.statusCode).toBe(429)
    expect(refused.json().message).toMatch(/^Too many requests for this client/)
    expect((await publicCall(handler, "203.0.113.2")).statusCode).toBe(200)
    expect((await publicCall(handler, "::ffff:203.0.113.1")).statusCode).toBe(429)
  })

  it("ignore X-Forwarded-For unless trustProxy is set", async () => {
    const { handler } = setUp({ rateLimit: { general: { max: 1 } } })
    await publicCall(handler, "10.0.0.1", { "x-forwarded-for": "198.51.100.1" })
    expect((await publicCall(handler, "10.0.0.1", { "x-forwarded-for": "198.51.100.2" })).statusCode).toBe(429)
  })

  it("with trustProxy, count by the first X-Forwarded-For address (the socket's when it is not an IP)", async () => {
    const { handler } = setUp({ rateLimit: { general: { max: 1 } }, trustProxy: true })
    await publicCall(handler, "10.0.0.1", { "x-forwarded-for": "198.51.100.1, 10.0.0.9" })
    expect((await publicCall(handler, "10.0.0.1", { "x-forwarded-for": "198.51.100.2" })).statusCode).toBe(200)
    expect((await publicCall(handler, "10.0.0.2", { "x-forwarded-for": "198.51.100.1" })).statusCode).toBe(429)
    expect((await publicCall(handler, "10.0.0.3", { "x-forwarded-for": "not-an-ip" })).statusCode).toBe(200)
    expect((await publicCall(handler, "10.0.0.3", { "x-forwarded-for": "garbage" })).statusCode).toBe(429)
  })

  it("give a route that reads auth without authentication a 500, never a made-up organization", async () => {
    const { handler } = setUp()
    const response = await request(handler, { method: "GET", url: "/api/v1/api/test/leaky" })
    expect(response.statusCode).toBe(500)
    expect(response.json()).toMatchObject({ success: false, errors: [{ code: "internal_error" }] })
  })
})

describe("when the store fails (onStoreError)", () => {
  const failingStore = Layer.succeed(RateLimitStore, {
    increment: () => Effect.fail(new StorageError({ operation: "rateLimits.increment", cause: new Error("redis down") }))
  })
  const hangingStore = Layer.succeed(RateLimitStore, { increment: () => Effect.never })

  const captureWarnings = () => {
    const warnings: Array<Record<string, unknown>> = []
    const logger = Logger.make(({ logLevel, message, annotations }) => {
      if (logLevel.label === "WARN") warnings.push({ message, ...Object.fromEntries(HashMap.toEntries(annotations)) })
    })
    return { warnings, logger }
  }

  it("fail-open (the default) answers as if unlimited, without RateLimit headers, and logs a warning", async () => {
    const { warnings, logger } = captureWarnings()
    const { handler, tenant } = setUp({ rateLimit: { general: { max: 1 }, store: failingStore }, logger })
    const apiKey = await tenant()
    for (let i = 0; i < 3; i++) {
      const response = await verify(handler, apiKey)
      expect(response.statusCode).toBe(200)
      expect(response.headers["ratelimit-limit"]).toBeUndefined()
    }
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatchObject({ operation: "rateLimits.increment", cause: "redis down" })
  })

  it("fail-closed answers 503 rate_limit_unavailable, exposing no cause", async () => {
    const { handler, tenant } = setUp({ rateLimit: { onStoreError: "fail-closed", store: failingStore } })
    const response = await verify(handler, await tenant())
    expect(response.statusCode).toBe(503)
    expect(response.json()).toMatchObject({
      status: 503,
      success: false,
      data: null,
      errors: [{ code: "rate_limit_unavailable" }]
    })
    expect(response.body).not.toContain("redis down")
  })

  it("never hangs on a store that does not answer: storeTimeoutMs applies (fail-open 200, fail-closed 503)", async () => {
    const open = setUp({ rateLimit: { storeTimeoutMs: 50, store: hangingStore } })
    expect((await verify(open.handler, await open.tenant())).statusCode).toBe(200)
    const closed = setUp({ rateLimit: { storeTimeoutMs: 50, store: hangingStore, onStoreError: "fail-closed" } })
    expect((await verify(closed.handler, await closed.tenant())).statusCode).toBe(503)
  })

  it("rejects invalid limits when the handler is built", async () => {
    const { handler } = setUp({ rateLimit: { general: { max: 0 } } })
    await expect(handler.ready).rejects.toThrow(/general.max must be a positive integer/)
  })
})

import { afterAll, beforeAll, describe, expect, it } from "vitest"
import Fastify, { type FastifyInstance } from "fastify"
import { Effect } from "effect"
import { defaultRoutes, defineRoute, type SwitchboardHandler } from "@switchboard/http-adapter"
import { bearer, createOrganization, expectEnvelope, makeHandler, makeSharedStorage } from "./helpers.js"

/** A route with a JSON body, to see the body rules through Fastify. */
const echoRoute = defineRoute({
  method: "POST",
  path: "/test/echo",
  tag: "Test",
  summary: "Echo",
  body: { name: { type: "string" } },
  handle: ({ body }) => Effect.succeed({ message: "echo", data: body })
})

/**
 * The mount documented in docs/mounting.md "Fastify": an encapsulated plugin under the
 * API's prefix whose only content-type parser leaves the body stream unread, and one
 * catch-all route that hands the raw request and response to the Node handler.
 */
const mountSwitchboard = (app: FastifyInstance, handler: SwitchboardHandler, prefix = "/api/v1/api") =>
  app.register(
    async (api) => {
      api.removeAllContentTypeParsers()
      api.addContentTypeParser("*", (_request, _payload, done) => done(null))
      const forward = (request: { raw: Parameters<SwitchboardHandler>[0] }, reply: { hijack: () => void; raw: Parameters<SwitchboardHandler>[1] }) => {
        reply.hijack()
        handler(request.raw, reply.raw)
      }
      api.all("/", forward)
      api.all("/*", forward)
    },
    { prefix }
  )

describe("mounted in Fastify (docs/mounting.md)", () => {
  const storage = makeSharedStorage()
  const handler = makeHandler(storage, { routes: [...defaultRoutes, echoRoute], bodyLimit: 1024 })
  const app = Fastify()
  let origin = ""
  let apiKey = ""

  beforeAll(async () => {
    // The app's own routes, with Fastify's default JSON parser.
    app.get("/health", async () => ({ status: "ok" }))
    app.post("/echo", async (request) => ({ received: request.body }))
    await mountSwitchboard(app, handler)
    apiKey = (await createOrganization(storage)).key.api_key
    origin = await app.listen({ port: 0, host: "127.0.0.1" })
  })
  afterAll(async () => {
    await app.close()
    await handler.dispose()
  })

  const fetchEnvelope = async (path: string, init: RequestInit = {}) => {
    const response = await fetch(`${origin}${path}`, init)
    return { response, result: expectEnvelope(response.status, await response.text()) }
  }
  const postJson = (body: string) => ({
    method: "POST",
    headers: { ...bearer(apiKey), "content-type": "application/json" },
    body
  })

  it("keeps the app's own routes and Fastify's JSON parser working", async () => {
    expect(await (await fetch(`${origin}/health`)).json()).toEqual({ status: "ok" })
    const echoed = await fetch(`${origin}/echo`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ a: 1 })
    })
    expect(await echoed.json()).toEqual({ received: { a: 1 } })
  })

  it("serves GET /verify with the request id and rate-limit headers", async () => {
    const { response, result } = await fetchEnvelope("/api/v1/api/verify", {
      headers: { ...bearer(apiKey), "x-request-id": "fastify-1" }
    })
    expect(result.status).toBe(200)
    expect(response.headers.get("x-request-id")).toBe("fastify-1")
    expect(response.headers.get("ratelimit-remaining")).not.toBeNull()
  })

  it("hands the JSON body to the API unread: a POST is echoed, unknown fields dropped", async () => {
    const { result } = await fetchEnvelope("/api/v1/api/test/echo", postJson('{"name":"Ada","extra":1}'))
    expect(result.status).toBe(200)
    expect(result.data).toEqual({ name: "Ada" })
  })

  it("answers body errors with the API's envelope, not Fastify's: invalid_json, 415, 413", async () => {
    const malformed = await fetchEnvelope("/api/v1/api/test/echo", postJson('{"name":'))
    expect(malformed.result.errors[0]?.code).toBe("invalid_json")
    const plain = await fetchEnvelope("/api/v1/api/test/echo", {
      method: "POST",
      headers: { ...bearer(apiKey), "content-type": "text/plain" },
      body: "name=Ada"
    })
    expect(plain.result.status).toBe(415)
    expect(plain.result.errors[0]?.code).toBe("unsupported_media_type")
    const large = await fetchEnvelope("/api/v1/api/test/echo", postJson(JSON.stringify({ name: "x".repeat(2048) })))
    expect(large.result.status).toBe(413)
    expect(large.result.errors[0]?.code).toBe("payload_too_large")
  })

  it("serves the base path itself (discovery, no key) through the plugin's '/' route", async () => {
    const { result } = await fetchEnvelope("/api/v1/api")
    expect(result.status).toBe(200)
    const document = await fetch(`${origin}/api/v1/api/openapi.json`)
    expect(((await document.json()) as { openapi?: string }).openapi).toMatch(/^3\.1/)
  })

  it("answers 401, the API's own 404 and 405 under the prefix, and HEAD without a body", async () => {
    const anonymous = await fetchEnvelope("/api/v1/api/verify")
    expect(anonymous.result.errors[0]?.code).toBe("missing_api_key")
    const unknown = await fetchEnvelope("/api/v1/api/nothing", { headers: bearer(apiKey) })
    expect(unknown.result.status).toBe(404)
    expect(unknown.result.errors[0]?.code).toBe("route_not_found")
    const wrongMethod = await fetchEnvelope("/api/v1/api/verify", { method: "PUT", headers: bearer(apiKey) })
    expect(wrongMethod.result.status).toBe(405)
    expect(wrongMethod.response.headers.get("allow")).toBe("GET, HEAD")
    const head = await fetch(`${origin}/api/v1/api/verify`, { method: "HEAD", headers: bearer(apiKey) })
    expect(head.status).toBe(200)
    expect(await head.text()).toBe("")
  })
})

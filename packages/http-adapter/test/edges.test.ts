import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Effect } from "effect"
import { defaultRoutes, defineRoute } from "@switchboard/http-adapter"
import { bearer, createOrganization, makeHandler, makeSharedStorage, request } from "./helpers.js"

/** A body route standing in for the resource routes of later issues (docs/http-adapter.md "Request edges"). */
const echoRoute = defineRoute({
  method: "POST",
  path: "/test/echo",
  tag: "Test",
  summary: "Echo the validated body",
  body: {
    name: { type: "string", min: 1, max: 10 },
    count: { type: "number", integer: true, min: 1, max: 5, optional: true },
    email: { type: "email", optional: true }
  },
  handle: ({ body }) => Effect.succeed({ message: "echo", data: body })
})

const uuidRoute = defineRoute({
  method: "GET",
  path: "/test/items/:uuid",
  tag: "Test",
  summary: "Read an item",
  params: { uuid: { type: "uuid" } },
  query: { page: { type: "number", integer: true, min: 1, convert: true, optional: true } },
  handle: ({ params, query }) => Effect.succeed({ message: "item", data: { params, query } })
})

const storage = makeSharedStorage()
const handler = makeHandler(storage, { routes: [...defaultRoutes, echoRoute, uuidRoute], bodyLimit: 256 })
let headers: Record<string, string> = {}

beforeAll(async () => {
  headers = bearer((await createOrganization(storage)).key.api_key)
})
afterAll(() => handler.dispose())

const echo = (payload: string, extra: Record<string, string> = { "content-type": "application/json" }) =>
  request(handler, { method: "POST", url: "/api/v1/api/test/echo", headers: { ...headers, ...extra }, payload })

const expectFailure = (response: Awaited<ReturnType<typeof echo>>, status: number, code: string) => {
  expect(response.statusCode).toBe(status)
  const body = response.json()
  expect(body).toMatchObject({ status, success: false, data: null })
  expect(body.errors.map((error: { code: string }) => error.code)).toContain(code)
  expect(response.body).not.toMatch(/at .*\.ts:\d+/)
}

describe("routing (docs/http-adapter.md 'Request edges')", () => {
  it("404 route_not_found for an unknown path, without a key", async () => {
    expectFailure(await request(handler, { method: "GET", url: "/api/v1/api/nowhere" }), 404, "route_not_found")
    // GET {base} itself is the discovery index (test/discovery.test.ts).
    expectFailure(await request(handler, { method: "GET", url: "/api/v1/api/v2" }), 404, "route_not_found")
  })

  it("404 route_not_found outside the base path when no next() is given", async () => {
    expectFailure(await request(handler, { method: "GET", url: "/elsewhere" }), 404, "route_not_found")
    expectFailure(await request(handler, { method: "GET", url: "/api/v1/apiverify" }), 404, "route_not_found")
  })

  it("405 with Allow for a known path and a wrong method, without a key", async () => {
    const response = await request(handler, { method: "DELETE", url: "/api/v1/api/verify" })
    expectFailure(response, 405, "method_not_allowed")
    expect(response.headers.allow).toBe("GET, HEAD")
  })

  it("ignores a trailing slash and the query string when matching", async () => {
    const response = await request(handler, { method: "GET", url: "/api/v1/api/verify/?x=1", headers })
    expect(response.statusCode).toBe(200)
  })

  it("answers HEAD like GET, without a body", async () => {
    const response = await request(handler, { method: "HEAD", url: "/api/v1/api/verify", headers })
    expect(response.statusCode).toBe(200)
    expect(response.body).toBe("")
  })

  it("400 for a malformed uuid in a path, naming the parameter; a good one passes", async () => {
    const bad = await request(handler, { method: "GET", url: "/api/v1/api/test/items/not-a-uuid", headers })
    expectFailure(bad, 400, "invalid_format")
    expect(bad.json().errors[0].field).toBe("uuid")
    const good = await request(handler, {
      method: "GET",
      url: "/api/v1/api/test/items/0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6a?page=2",
      headers
    })
    expect(good.statusCode).toBe(200)
    expect(good.json().data).toEqual({ params: { uuid: "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6a" }, query: { page: 2 } })
  })

  it("400 naming a bad query parameter", async () => {
    const response = await request(handler, {
      method: "GET",
      url: "/api/v1/api/test/items/0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6a?page=0",
      headers
    })
    expectFailure(response, 400, "out_of_range")
    expect(response.json().errors[0].field).toBe("page")
  })
})

describe("request bodies (docs/http-adapter.md 'Request edges')", () => {
  it("accepts a valid JSON body and drops unknown fields", async () => {
    const response = await echo(JSON.stringify({ name: "Ada", count: 2, admin: true }))
    expect(response.statusCode).toBe(200)
    expect(response.json().data).toEqual({ name: "Ada", count: 2 })
  })

  it("accepts application/json with a charset and +json types", async () => {
    const body = JSON.stringify({ name: "Ada" })
    expect((await echo(body, { "content-type": "application/json; charset=utf-8" })).statusCode).toBe(200)
    expect((await echo(body, { "content-type": "application/merge-patch+json" })).statusCode).toBe(200)
  })

  it("415 unsupported_media_type without a JSON content type", async () => {
    expectFailure(await echo(JSON.stringify({ name: "Ada" }), { "content-type": "text/plain" }), 415, "unsupported_media_type")
    expectFailure(await echo(JSON.stringify({ name: "Ada" }), {}), 415, "unsupported_media_type")
  })

  it("400 invalid_json for malformed or empty JSON", async () => {
    expectFailure(await echo('{"name": "Ada"'), 400, "invalid_json")
    expectFailure(await echo(""), 400, "invalid_json")
  })

  it("400 invalid_type for JSON that is not an object", async () => {
    expectFailure(await echo("[1,2]"), 400, "invalid_type")
    expectFailure(await echo('"text"'), 400, "invalid_type")
  })

  it("413 payload_too_large over the body limit", async () => {
    expectFailure(await echo(JSON.stringify({ name: "x".repeat(300) })), 413, "payload_too_large")
  })

  it("400 with one error item per bad field, each with code and field", async () => {
    const response = await echo(JSON.stringify({ count: 9, email: "nope" }))
    expectFailure(response, 400, "required")
    const errors = response.json().errors
    expect(errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ code: "required", field: "name" }),
        expect.objectContaining({ code: "out_of_range", field: "count" }),
        expect.objectContaining({ code: "invalid_format", field: "email" })
      ])
    )
    expect(errors).toHaveLength(3)
    for (const error of errors) expect(typeof error.message).toBe("string")
  })

  it("maps type and length problems to invalid_type and too_long", async () => {
    const wrongType = await echo(JSON.stringify({ name: 42 }))
    expectFailure(wrongType, 400, "invalid_type")
    const tooLong = await echo(JSON.stringify({ name: "x".repeat(11) }))
    expectFailure(tooLong, 400, "too_long")
  })

  it("authenticates before reading the body: no key and bad JSON is a 401", async () => {
    const response = await request(handler, {
      method: "POST",
      url: "/api/v1/api/test/echo",
      headers: { "content-type": "text/plain" },
      payload: "{"
    })
    expectFailure(response, 401, "missing_api_key")
  })

  it("uses a body the host already parsed (express.json())", async () => {
    const parsedBody = { name: "Host", extra: 1 }
    const response = await new Promise<{ status: number; body: string }>((resolve) => {
      void import("light-my-request").then(({ default: inject }) =>
        inject(
          (req, res) => {
            Object.assign(req, { body: parsedBody })
            handler(req, res)
          },
          { method: "POST", url: "/api/v1/api/test/echo", headers: { ...headers, "content-type": "application/json" } }
        ).then((r) => resolve({ status: r.statusCode, body: r.body }))
      )
    })
    expect(response.status).toBe(200)
    expect(JSON.parse(response.body).data).toEqual({ name: "Host" })
  })
})

describe("request ids (docs/http-adapter.md 'Every response')", () => {
  it("echoes a sane client X-Request-Id and replaces an insane one", async () => {
    const kept = await request(handler, { method: "GET", url: "/api/v1/api/verify", headers: { ...headers, "x-request-id": "req-123.abc" } })
    expect(kept.headers["x-request-id"]).toBe("req-123.abc")
    const replaced = await request(handler, { method: "GET", url: "/api/v1/api/verify", headers: { ...headers, "x-request-id": "bad id\twith spaces" } })
    expect(replaced.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/)
  })

  it("sets X-Request-Id on failures too", async () => {
    const response = await request(handler, { method: "GET", url: "/api/v1/api/nowhere" })
    expect(response.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/)
  })
})

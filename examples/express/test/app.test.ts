import type { Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import express from "express"
import { Effect, Layer } from "effect"
import { Core, MemoryStorage, Organizations, Storage } from "@switchboard/core"
import { createHandler } from "@switchboard/http-adapter"
import { createApp } from "../src/app.js"

/** A memory store shared by the app under test and the test's own set-up calls. */
const storage = Layer.succeed(Storage, MemoryStorage.make())

const issueKey = () =>
  Effect.runPromise(
    Effect.gen(function* () {
      const organizations = yield* Organizations
      const organization = yield* organizations.create({ name: "Acme" })
      return (yield* organizations.issueApiKey(organization.id)).api_key
    }).pipe(Effect.provide(Core.layer), Effect.provide(storage))
  )

/** Serves an Express app on a free port of 127.0.0.1; returns its origin and a closer. */
const serve = async (app: express.Express) => {
  const server = await new Promise<Server>((resolve) => {
    const listening = app.listen(0, "127.0.0.1", () => resolve(listening))
  })
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

/** Checks a Switchboard envelope: exactly its five keys, `status` equal to the HTTP status. */
const envelope = async (response: Response) => {
  expect(response.headers.get("content-type")).toBe("application/json; charset=utf-8")
  const body = (await response.json()) as Record<string, any>
  expect(Object.keys(body).sort()).toEqual(["data", "errors", "message", "status", "success"])
  expect(body.status).toBe(response.status)
  return body
}

describe("the Express example: the app's own routes and the API mounted at /api/v1/api", () => {
  const { app, api } = createApp({ storage, logger: false })
  let origin = ""
  let close: () => Promise<void> = async () => undefined
  let apiKey = ""
  const auth = () => ({ authorization: `Bearer ${apiKey}` })

  beforeAll(async () => {
    apiKey = await issueKey()
    await api.ready
    ;({ origin, close } = await serve(app))
  })
  afterAll(async () => {
    await close()
    await api.dispose()
  })

  it("serves the app's own GET /health", async () => {
    const response = await fetch(`${origin}/health`)
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ status: "ok" })
  })

  it("serves the app's own JSON route, parsed by express.json() on its router", async () => {
    const created = await fetch(`${origin}/notes`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ text: "call Ada" })
    })
    expect(created.status).toBe(201)
    expect(await created.json()).toEqual({ id: 1, text: "call Ada" })
    const listed = await fetch(`${origin}/notes`)
    expect(await listed.json()).toEqual({ notes: [{ id: 1, text: "call Ada" }] })
    const invalid = await fetch(`${origin}/notes`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ text: 3 })
    })
    expect(invalid.status).toBe(400)
  })

  it("answers GET /api/v1/api/verify through the mount, with the request id and rate-limit headers", async () => {
    const response = await fetch(`${origin}/api/v1/api/verify`, { headers: { ...auth(), "x-request-id": "express-1" } })
    expect(response.status).toBe(200)
    expect(response.headers.get("x-request-id")).toBe("express-1")
    expect(response.headers.get("ratelimit-limit")).toBe("5000")
    expect(await envelope(response)).toMatchObject({ success: true })
  })

  it("gives the API its JSON body untouched: create a group, then read it", async () => {
    const created = await fetch(`${origin}/api/v1/api/contact-groups`, {
      method: "POST",
      headers: { ...auth(), "content-type": "application/json" },
      body: JSON.stringify({ name: "Customers" })
    })
    expect(created.status).toBe(200)
    const group = (await envelope(created)).data as { uuid: string; name: string }
    expect(group.name).toBe("Customers")
    const listed = await fetch(`${origin}/api/v1/api/contact-groups`, { headers: auth() })
    expect((await envelope(listed)).data.groups).toEqual([expect.objectContaining({ uuid: group.uuid, name: "Customers" })])
  })

  it("answers malformed JSON and a missing key with the API's envelope, not Express's error page", async () => {
    const malformed = await fetch(`${origin}/api/v1/api/contact-groups`, {
      method: "POST",
      headers: { ...auth(), "content-type": "application/json" },
      body: '{"name":'
    })
    expect(malformed.status).toBe(400)
    expect((await envelope(malformed)).errors[0].code).toBe("invalid_json")
    const anonymous = await fetch(`${origin}/api/v1/api/verify`)
    expect(anonymous.status).toBe(401)
    expect((await envelope(anonymous)).errors[0].code).toBe("missing_api_key")
  })

  it("answers unknown paths under the mount with the API's 404, others with the app's own 404", async () => {
    const insideApi = await fetch(`${origin}/api/v1/api/nothing`, { headers: auth() })
    expect(insideApi.status).toBe(404)
    expect((await envelope(insideApi)).errors[0].code).toBe("route_not_found")
    const outside = await fetch(`${origin}/nothing`)
    expect(outside.status).toBe(404)
    expect(await outside.json()).toEqual({ error: "not found" })
  })
})

describe("app.use(api) without a mount path (docs/mounting.md)", () => {
  it("serves the API under its base path and hands every other path to the next middleware", async () => {
    const api = createHandler({ storage, logger: false })
    const app = express()
    app.use(api)
    app.get("/health", (_req, res) => {
      res.json({ status: "ok" })
    })
    const { origin, close } = await serve(app)
    const apiKey = await issueKey()
    try {
      expect(await (await fetch(`${origin}/health`)).json()).toEqual({ status: "ok" })
      const verified = await fetch(`${origin}/api/v1/api/verify`, { headers: { authorization: `Bearer ${apiKey}` } })
      expect((await envelope(verified)).success).toBe(true)
    } finally {
      await close()
      await api.dispose()
    }
  })
})

describe("body parser order (docs/mounting.md)", () => {
  it("an app-wide express.json() before the mount: parsed bodies reach the API, but Express answers malformed JSON itself", async () => {
    const api = createHandler({ storage, logger: false })
    const app = express()
    app.use(express.json())
    app.use("/api/v1/api", api)
    const { origin, close } = await serve(app)
    const apiKey = await issueKey()
    try {
      const created = await fetch(`${origin}/api/v1/api/contact-groups`, {
        method: "POST",
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "Parsed by Express" })
      })
      expect(created.status).toBe(200)
      expect((await envelope(created)).data).toMatchObject({ name: "Parsed by Express" })
      const malformed = await fetch(`${origin}/api/v1/api/contact-groups`, {
        method: "POST",
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
        body: '{"name":'
      })
      expect(malformed.status).toBe(400)
      expect(malformed.headers.get("content-type")).not.toContain("application/json")
    } finally {
      await close()
      await api.dispose()
    }
  })

  it("the same parser after the mount leaves the API's body alone: malformed JSON gets the envelope", async () => {
    const api = createHandler({ storage, logger: false })
    const app = express()
    app.use("/api/v1/api", api)
    app.use(express.json())
    const { origin, close } = await serve(app)
    const apiKey = await issueKey()
    try {
      const malformed = await fetch(`${origin}/api/v1/api/contact-groups`, {
        method: "POST",
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
        body: '{"name":'
      })
      expect(malformed.status).toBe(400)
      expect((await envelope(malformed)).errors[0].code).toBe("invalid_json")
    } finally {
      await close()
      await api.dispose()
    }
  })
})

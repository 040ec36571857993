import { describe, expect, it } from "vitest"
import { Cause, Effect, HashMap, Layer, Logger } from "effect"
import * as core from "@switchboard/core"
import { MAX_WEBHOOK_ENDPOINTS_PER_ORGANIZATION, Storage } from "@switchboard/core"
import type { HandlerOptions } from "@switchboard/http-adapter"
import { bearer, makeHandler, makeSharedStorage, makeTenant, phone, request, UNKNOWN_UUID } from "./helpers.js"

// Webhook endpoints over HTTP (docs/webhooks.md): the routes, the signing secret shown on
// create and rotate only, validation naming fields, 404s, tenant isolation, the limit,
// the deliveries log and hand retries, and the secret in no log line.

const SECRET_KEY = Buffer.alloc(32, 9).toString("base64")
const URL_A = "https://hooks.example.com/switchboard"

/**
 * The handler's `webhooks` option for these tests (a handler without that option ignores
 * it): no dispatcher of its own, since the tests record delivery attempts by hand; and
 * internal addresses allowed, so that registering `hooks.example.com` makes no DNS query
 * (names are not looked up then). The address rules have their own test, without it.
 */
const TEST_WEBHOOKS = { dispatch: false, allowPrivateNetworks: true }

/** A handler with a secret key (and `logger` when given), and a fresh tenant on it. */
const setup = async (
  options: {
    readonly logger?: Logger.Logger<unknown, unknown>
    readonly secretKey?: string | null
    readonly webhooks?: HandlerOptions["webhooks"]
  } = {}
) => {
  const storage = makeSharedStorage()
  const handler = makeHandler(storage, {
    webhooks: options.webhooks ?? TEST_WEBHOOKS,
    ...(options.secretKey === null ? {} : { secretKey: options.secretKey ?? SECRET_KEY }),
    ...(options.logger ? { logger: options.logger } : {})
  })
  const tenant = await makeTenant(storage, handler)
  return { storage, handler, ...tenant }
}

/** Every `field: code` of a failure's errors. */
const errorsOf = (result: { readonly errors: ReadonlyArray<{ readonly code: string; readonly field?: string }> }) =>
  result.errors.map((error) => `${error.field ?? ""}: ${error.code}`)

describe("POST /webhook-endpoints", () => {
  it("registers an endpoint and shows its secret in this answer only", async () => {
    const { api, handler } = await setup()
    const created = await api.post("/webhook-endpoints", { url: URL_A, events: ["message.received"], description: "CRM" })
    expect(created.status).toBe(200)
    expect(created.data).toMatchObject({ url: URL_A, events: ["message.received"], description: "CRM", enabled: true })
    expect(created.data.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
    const secret: string = created.data.secret

    const listed = await api.get("/webhook-endpoints")
    expect(listed.status).toBe(200)
    const { secret: _secret, ...record } = created.data
    expect(listed.data).toEqual({ webhook_endpoints: [record] })
    const fetched = await api.get(`/webhook-endpoints/${created.data.uuid}`)
    expect(fetched.data).toEqual(record)
    for (const body of [JSON.stringify(listed), JSON.stringify(fetched)]) {
      expect(body).not.toContain(secret)
      expect(body).not.toContain("secret")
    }
    await handler.dispose()
  })

  it("every events value omitted or null means every type; description is optional", async () => {
    const { api, handler } = await setup()
    const all = await api.post("/webhook-endpoints", { url: URL_A })
    expect(all.data).toMatchObject({ events: null, description: null })
    expect((await api.post("/webhook-endpoints", { url: URL_A, events: null, description: null })).data.events).toBeNull()
    await handler.dispose()
  })

  it("answers 400 naming each bad field, and writes nothing", async () => {
    const { api, handler } = await setup()
    const cases: ReadonlyArray<readonly [unknown, ReadonlyArray<string>]> = [
      [{}, ["url: required"]],
      [{ url: "" }, ["url: required"]],
      [{ url: "   " }, ["url: required"]],
      [{ url: 7 }, ["url: invalid_type"]],
      [{ url: `${URL_A}/${"x".repeat(2048)}` }, ["url: too_long"]],
      [{ url: URL_A, events: [] }, ["events: required"]],
      [{ url: URL_A, events: "chat.updated" }, ["events: invalid_type"]],
      [{ url: URL_A, events: ["message.sent"] }, ["events[0]: invalid_format"]],
      [{ url: URL_A, events: ["chat.updated", "chat.updated"] }, ["events: invalid_format"]],
      [{ url: URL_A, description: "d".repeat(256) }, ["description: too_long"]]
    ]
    for (const [body, expected] of cases) {
      const result = await api.post("/webhook-endpoints", body)
      expect(result.status, JSON.stringify(body)).toBe(400)
      expect(errorsOf(result), JSON.stringify(body)).toEqual(expected)
    }
    const refused = await api.post("/webhook-endpoints", { url: "not a url" })
    expect(refused.status).toBe(400)
    expect(errorsOf(refused)).toEqual(["url: webhook_url_refused"])
    expect((await api.get("/webhook-endpoints")).data.webhook_endpoints).toEqual([])
    await handler.dispose()
  })

  it(`refuses the endpoint past ${MAX_WEBHOOK_ENDPOINTS_PER_ORGANIZATION} with 400 webhook_endpoint_limit_reached`, async () => {
    const { api, handler } = await setup()
    for (let index = 0; index < MAX_WEBHOOK_ENDPOINTS_PER_ORGANIZATION; index++) {
      expect((await api.post("/webhook-endpoints", { url: `${URL_A}/${index}` })).status).toBe(200)
    }
    const refused = await api.post("/webhook-endpoints", { url: URL_A })
    expect(refused.status).toBe(400)
    expect(errorsOf(refused)).toEqual([": webhook_endpoint_limit_reached"])
    expect((await api.get("/webhook-endpoints")).data.webhook_endpoints).toHaveLength(MAX_WEBHOOK_ENDPOINTS_PER_ORGANIZATION)
    await handler.dispose()
  })

  it("answers 503 secret_key_not_configured without a secret key", async () => {
    const { apiKey, handler } = await setup({ secretKey: null })
    const calls = [
      { method: "POST" as const, url: "/webhook-endpoints", payload: JSON.stringify({ url: URL_A }) },
      { method: "GET" as const, url: "/webhook-endpoints" },
      { method: "GET" as const, url: `/webhook-endpoints/${UNKNOWN_UUID}/deliveries` }
    ]
    for (const call of calls) {
      const response = await request(handler, {
        method: call.method,
        url: `/api/v1/api${call.url}`,
        headers: { ...bearer(apiKey), ...(call.payload === undefined ? {} : { "content-type": "application/json" }) },
        ...(call.payload === undefined ? {} : { payload: call.payload })
      })
      expect(response.statusCode).toBe(503)
      expect(response.json()).toMatchObject({ status: 503, success: false, data: null, errors: [{ code: "secret_key_not_configured" }] })
    }
    await handler.dispose()
  })
})

/**
 * Whether core has the address rules (an https-only, public-addresses-only
 * `checkWebhookUrl`, which exports `internalAddressRange`) rather than the placeholder
 * that only parses the URL.
 */
const addressRulesImplemented = "internalAddressRange" in core

describe("address rules (docs/webhooks.md \"Address safety\")", () => {
  it.skipIf(!addressRulesImplemented)(
    "refuse http, credentials and internal addresses with 400 webhook_url_refused; the handler's development options accept them",
    async () => {
      const { api, handler, storage } = await setup({ webhooks: { dispatch: false } })
      for (const url of ["http://hooks.example.com/x", "https://user:password@hooks.example.com/x", "https://127.0.0.1/x", "https://10.1.2.3/x", "https://[::1]/x", "https://169.254.169.254/latest"]) {
        const refused = await api.post("/webhook-endpoints", { url })
        expect(refused.status, url).toBe(400)
        expect(errorsOf(refused), url).toEqual(["url: webhook_url_refused"])
        expect(JSON.stringify(refused)).not.toContain("password")
      }
      const created = await api.post("/webhook-endpoints", { url: "https://93.184.215.14/x" })
      expect(created.status).toBe(200)
      const moved = await api.put(`/webhook-endpoints/${created.data.uuid}`, { url: "https://192.168.1.10/x" })
      expect(errorsOf(moved)).toEqual(["url: webhook_url_refused"])
      expect((await api.get("/webhook-endpoints")).data.webhook_endpoints).toHaveLength(1)
      await handler.dispose()

      const relaxed = makeHandler(storage, {
        secretKey: SECRET_KEY,
        webhooks: { dispatch: false, allowInsecureUrls: true, allowPrivateNetworks: true }
      })
      const tenant = await makeTenant(storage, relaxed)
      const local = await tenant.api.post("/webhook-endpoints", { url: "http://127.0.0.1:4000/hooks" })
      expect(local.status).toBe(200)
      expect(local.data.url).toBe("http://127.0.0.1:4000/hooks")
      await relaxed.dispose()
    }
  )
})

describe("PUT, DELETE and rotate-secret", () => {
  it("PUT changes the given fields; rotate-secret answers a new secret; DELETE removes", async () => {
    const { api, handler } = await setup()
    const created = await api.post("/webhook-endpoints", { url: URL_A, description: "old" })
    const uuid: string = created.data.uuid
    const updated = await api.put(`/webhook-endpoints/${uuid}`, {
      url: "https://hooks.example.com/v2",
      events: ["template.status_updated", "contact.created"],
      description: null,
      enabled: false
    })
    expect(updated.status).toBe(200)
    expect(updated.data).toMatchObject({
      uuid,
      url: "https://hooks.example.com/v2",
      events: ["template.status_updated", "contact.created"],
      description: null,
      enabled: false
    })
    expect(updated.data.secret).toBeUndefined()
    expect((await api.put(`/webhook-endpoints/${uuid}`, { enabled: true })).data.enabled).toBe(true)

    const rotated = await api.post(`/webhook-endpoints/${uuid}/rotate-secret`, undefined)
    expect(rotated.status).toBe(200)
    expect(rotated.data.uuid).toBe(uuid)
    expect(rotated.data.secret).toMatch(/^whsec_/)
    expect(rotated.data.secret).not.toBe(created.data.secret)
    expect(JSON.stringify(await api.get(`/webhook-endpoints/${uuid}`))).not.toContain(rotated.data.secret)

    const deleted = await api.delete(`/webhook-endpoints/${uuid}`)
    expect(deleted.data).toEqual({ uuid, deleted: true })
    expect((await api.get(`/webhook-endpoints/${uuid}`)).status).toBe(404)
    await handler.dispose()
  })

  it("PUT answers 400 naming the bad fields, for an empty body too, and changes nothing", async () => {
    const { api, handler } = await setup()
    const created = await api.post("/webhook-endpoints", { url: URL_A })
    const path = `/webhook-endpoints/${created.data.uuid}`
    const cases: ReadonlyArray<readonly [unknown, ReadonlyArray<string>]> = [
      [{}, ["body: required"]],
      [{ enabled: "yes" }, ["enabled: invalid_type"]],
      [{ url: "" }, ["url: required"]],
      [{ events: [] }, ["events: required"]],
      [{ url: "not a url" }, ["url: webhook_url_refused"]]
    ]
    for (const [body, expected] of cases) {
      const result = await api.put(path, body)
      expect(result.status, JSON.stringify(body)).toBe(400)
      expect(errorsOf(result), JSON.stringify(body)).toEqual(expected)
    }
    const { secret: _secret, ...record } = created.data
    expect((await api.get(path)).data).toEqual(record)
    await handler.dispose()
  })
})

describe("rotate-secret with an overlap (docs/webhooks.md 'The secret')", () => {
  const HOUR_MS = 3_600_000
  /** Expects `at` to be `seconds` after an instant between `before` and `after` (epoch ms). */
  const expectExpiry = (at: unknown, before: number, after: number, seconds: number) => {
    expect(typeof at).toBe("string")
    const ms = Date.parse(at as string)
    expect(ms).toBeGreaterThanOrEqual(before + seconds * 1000 - 1000)
    expect(ms).toBeLessThanOrEqual(after + seconds * 1000 + 1000)
  }

  it("answers previous_secret_expires_at (24 h by default); a second rotation inside the window is 409 rotation_in_progress unless force", async () => {
    const { api, handler } = await setup()
    const created = await api.post("/webhook-endpoints", { url: URL_A })
    const uuid: string = created.data.uuid
    const path = `/webhook-endpoints/${uuid}/rotate-secret`

    const before = Date.now()
    const first = await api.post(path, undefined)
    const after = Date.now()
    expect(first.status).toBe(200)
    expect(first.message).toBe("Webhook secret rotated")
    expect(first.data.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
    expect(first.data.secret).not.toBe(created.data.secret)
    expectExpiry(first.data.previous_secret_expires_at, before, after, 86_400)
    const { secret: _first, previous_secret_expires_at: _expiry, ...record } = first.data
    expect((await api.get(`/webhook-endpoints/${uuid}`)).data).toEqual(record)

    // Inside the window: refused, nothing changed (updated_at kept).
    for (const body of [{}, { force: false }, { previous_secret_expires_in: 0 }]) {
      const refused = await api.post(path, body)
      expect(refused.status, JSON.stringify(body)).toBe(409)
      expect(refused.errors.map((error: { code: string }) => error.code)).toEqual(["rotation_in_progress"])
      expect(refused.errors[0]?.message).toContain(first.data.previous_secret_expires_at)
      for (const secret of [created.data.secret, first.data.secret]) expect(JSON.stringify(refused)).not.toContain(secret)
    }
    expect((await api.get(`/webhook-endpoints/${uuid}`)).data).toEqual(record)

    // force: rotates again; an hour's overlap.
    const forcedBefore = Date.now()
    const forced = await api.post(path, { force: true, previous_secret_expires_in: 3600 })
    expect(forced.status).toBe(200)
    expect(forced.data.secret).not.toBe(first.data.secret)
    expectExpiry(forced.data.previous_secret_expires_at, forcedBefore, Date.now(), 3600)
    expect(Date.parse(forced.data.previous_secret_expires_at)).toBeLessThan(Date.parse(first.data.previous_secret_expires_at) - 20 * HOUR_MS)

    // 0: the old secret stops at once, so the next rotation is not refused.
    const now = await api.post(path, { force: true, previous_secret_expires_in: 0 })
    expect(now.status).toBe(200)
    expect(now.data.previous_secret_expires_at).toBeNull()
    const next = await api.post(path, { previous_secret_expires_in: 604_800 })
    expect(next.status).toBe(200)
    expectExpiry(next.data.previous_secret_expires_at, before, Date.now(), 604_800)
    await handler.dispose()
  })

  it("answers 400 naming the bad field (out of range, not a whole number, wrong types) and changes nothing", async () => {
    const { api, handler } = await setup()
    const created = await api.post("/webhook-endpoints", { url: URL_A })
    const uuid: string = created.data.uuid
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      [{ previous_secret_expires_in: -1 }, "previous_secret_expires_in"],
      [{ previous_secret_expires_in: 604_801 }, "previous_secret_expires_in"],
      [{ previous_secret_expires_in: 1.5 }, "previous_secret_expires_in"],
      [{ previous_secret_expires_in: "60" }, "previous_secret_expires_in"],
      [{ previous_secret_expires_in: true }, "previous_secret_expires_in"],
      [{ previous_secret_expires_in: [60] }, "previous_secret_expires_in"],
      [{ force: "yes" }, "force"],
      [{ force: 1 }, "force"]
    ]
    for (const [body, field] of cases) {
      const result = await api.post(`/webhook-endpoints/${uuid}/rotate-secret`, body)
      expect(result.status, JSON.stringify(body)).toBe(400)
      expect(result.errors.map((error: { field?: string }) => error.field), JSON.stringify(body)).toContain(field)
    }
    const { secret: _secret, ...record } = created.data
    expect((await api.get(`/webhook-endpoints/${uuid}`)).data).toEqual(record)
    // Nothing was rotated: a rotation now is not refused as in progress.
    expect((await api.post(`/webhook-endpoints/${uuid}/rotate-secret`, {})).status).toBe(200)
    await handler.dispose()
  })
})

describe("unknown and foreign endpoints", () => {
  it("answer 404 not_found on every route, and a malformed uuid 400 naming uuid", async () => {
    const { api, handler } = await setup()
    const results = [
      await api.get(`/webhook-endpoints/${UNKNOWN_UUID}`),
      await api.put(`/webhook-endpoints/${UNKNOWN_UUID}`, { enabled: false }),
      await api.delete(`/webhook-endpoints/${UNKNOWN_UUID}`),
      await api.post(`/webhook-endpoints/${UNKNOWN_UUID}/rotate-secret`, undefined),
      await api.get(`/webhook-endpoints/${UNKNOWN_UUID}/deliveries`),
      await api.post(`/webhook-endpoints/${UNKNOWN_UUID}/deliveries/${UNKNOWN_UUID}/retry`, undefined)
    ]
    for (const result of results) {
      expect(result.status).toBe(404)
      expect(result.errors[0]?.code).toBe("not_found")
    }
    const malformed = await api.get("/webhook-endpoints/not-a-uuid")
    expect(malformed.status).toBe(400)
    expect(errorsOf(malformed)).toEqual(["uuid: invalid_format"])
    await handler.dispose()
  })

  it("another organization's endpoint is invisible and untouchable", async () => {
    const { api, handler, storage } = await setup()
    const intruder = await makeTenant(storage, handler, { name: "Intruder" })
    const created = await api.post("/webhook-endpoints", { url: URL_A })
    const uuid: string = created.data.uuid
    expect((await intruder.api.get("/webhook-endpoints")).data.webhook_endpoints).toEqual([])
    for (const result of [
      await intruder.api.get(`/webhook-endpoints/${uuid}`),
      await intruder.api.put(`/webhook-endpoints/${uuid}`, { url: "https://hooks.example.com/stolen" }),
      await intruder.api.post(`/webhook-endpoints/${uuid}/rotate-secret`, undefined),
      await intruder.api.get(`/webhook-endpoints/${uuid}/deliveries`),
      await intruder.api.delete(`/webhook-endpoints/${uuid}`)
    ]) {
      expect(result.status).toBe(404)
    }
    const { secret: _secret, ...record } = created.data
    expect((await api.get(`/webhook-endpoints/${uuid}`)).data).toEqual(record)
    await handler.dispose()
  })
})

describe("GET /webhook-endpoints/{uuid}/deliveries and POST …/deliveries/{id}/retry", () => {
  it("lists attempts newest first in cursor pages and makes a failed delivery due again", async () => {
    const { api, handler, storage } = await setup()
    const created = await api.post("/webhook-endpoints", { url: URL_A, events: ["contact.created"] })
    const uuid: string = created.data.uuid
    // Three events, each attempted once and failed, as the dispatcher would record them.
    const deliveryIds: Array<string> = []
    for (const index of [1, 2, 3]) {
      expect((await api.post("/contacts/bulk", { contacts: [{ first_name: "Ada", phone: phone(index) }] })).status).toBe(200)
      deliveryIds.push(...(await failDue(storage, `2026-01-01T00:00:0${index}.000Z`, index)))
    }
    expect(deliveryIds).toHaveLength(3)

    const first = await api.get(`/webhook-endpoints/${uuid}/deliveries?limit=2`)
    expect(first.status).toBe(200)
    expect(first.data.deliveries.map((attempt: { delivery_id: string }) => attempt.delivery_id)).toEqual([deliveryIds[2], deliveryIds[1]])
    expect(first.data.deliveries[0]).toMatchObject({ event_type: "contact.created", attempt: 1, status: 503, delivery_status: "failed" })
    expect(first.data.pagination).toMatchObject({ mode: "cursor", limit: 2, has_more: true })
    const second = await api.get(`/webhook-endpoints/${uuid}/deliveries?limit=2&cursor=${encodeURIComponent(first.data.pagination.next_cursor)}`)
    expect(second.data.deliveries.map((attempt: { delivery_id: string }) => attempt.delivery_id)).toEqual([deliveryIds[0]])
    expect(second.data.pagination).toEqual({ mode: "cursor", limit: 2, next_cursor: null, has_more: false })

    const badCursor = await api.get(`/webhook-endpoints/${uuid}/deliveries?cursor=junk&limit=500`)
    expect(badCursor.status).toBe(400)
    expect(errorsOf(badCursor)).toEqual(["limit: out_of_range"])
    expect(errorsOf(await api.get(`/webhook-endpoints/${uuid}/deliveries?cursor=junk`))).toEqual(["cursor: invalid_cursor"])

    const retried = await api.post(`/webhook-endpoints/${uuid}/deliveries/${deliveryIds[0]}/retry`, undefined)
    expect(retried.status).toBe(200)
    expect(retried.data).toEqual({ endpoint_uuid: uuid, delivery_id: deliveryIds[0], delivery_status: "pending" })
    const due = await Effect.runPromise(
      Effect.flatMap(Storage, (store) => store.webhooks.claimDue("2100-01-01T00:00:00.000Z", "2100-01-01T00:01:00.000Z", 100)).pipe(
        Effect.provide(storage)
      )
    )
    expect(due.map((delivery) => delivery.delivery_id)).toEqual([deliveryIds[0]])
    const unknown = await api.post(`/webhook-endpoints/${uuid}/deliveries/${UNKNOWN_UUID}/retry`, undefined)
    expect(unknown.status).toBe(404)
    expect(unknown.errors[0]?.message).toContain("webhook delivery")
    await handler.dispose()
  })

  it("refuses to send a delivery again while its endpoint is disabled (409): a disabled endpoint receives nothing", async () => {
    const { api, handler, storage } = await setup()
    const created = await api.post("/webhook-endpoints", { url: URL_A, events: ["contact.created"] })
    const uuid: string = created.data.uuid
    expect((await api.post("/contacts/bulk", { contacts: [{ first_name: "Ada", phone: phone(1) }] })).status).toBe(200)
    const [deliveryId] = await failDue(storage, "2026-01-01T00:00:01.000Z", 1)
    expect((await api.put(`/webhook-endpoints/${uuid}`, { enabled: false })).status).toBe(200)

    const refused = await api.post(`/webhook-endpoints/${uuid}/deliveries/${deliveryId}/retry`, undefined)
    expect(refused.status).toBe(409)
    expect(refused.errors).toEqual([
      expect.objectContaining({ code: "webhook_endpoint_disabled", message: expect.stringContaining("enable") })
    ])
    expect(await failDue(storage, "2026-01-01T00:00:02.000Z", 2)).toEqual([])
    // Enabled again, the endpoint's failed delivery may be sent by hand.
    expect((await api.put(`/webhook-endpoints/${uuid}`, { enabled: true })).status).toBe(200)
    expect((await api.post(`/webhook-endpoints/${uuid}/deliveries/${deliveryId}/retry`, undefined)).status).toBe(200)
    expect(await failDue(storage, "2026-01-01T00:00:03.000Z", 3)).toEqual([deliveryId])
    await handler.dispose()
  })
})

describe("the signing secret never leaves the server but in the create and rotate answers", () => {
  it("appears in no log line", async () => {
    const lines: Array<string> = []
    const logger = Logger.make(({ annotations, cause, message }) => {
      lines.push(`${JSON.stringify(message)} ${JSON.stringify([...HashMap.toEntries(annotations)])} ${Cause.pretty(cause)}`)
    })
    const { api, apiKey, handler } = await setup({ logger })
    const created = await api.post("/webhook-endpoints", { url: URL_A })
    const uuid: string = created.data.uuid
    const rotated = await api.post(`/webhook-endpoints/${uuid}/rotate-secret`, undefined)
    await api.post(`/webhook-endpoints/${uuid}/rotate-secret`, undefined)
    const forced = await api.post(`/webhook-endpoints/${uuid}/rotate-secret`, { force: true })
    await api.get("/webhook-endpoints")
    await api.get(`/webhook-endpoints/${uuid}`)
    await api.put(`/webhook-endpoints/${uuid}`, { description: "x" })
    await request(handler, { method: "GET", url: `/api/v1/api/webhook-endpoints/${uuid}/deliveries`, headers: bearer(apiKey) })
    await handler.dispose()
    expect(lines.length).toBeGreaterThanOrEqual(6)
    const secrets = [created.data.secret as string, rotated.data.secret as string, forced.data.secret as string]
    for (const line of lines) {
      for (const secret of secrets) {
        expect(line).not.toContain(secret)
        expect(line).not.toContain(secret.slice("whsec_".length))
      }
    }
  })
})

/** Claims every due delivery and records one failed attempt of each (HTTP 503); their ids. */
const failDue = (storage: Layer.Layer<Storage>, attemptedAt: string, sequence: number) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const store = yield* Storage
      const claimed = yield* store.webhooks.claimDue("2100-01-01T00:00:00.000Z", "2100-01-01T00:01:00.000Z", 100)
      for (const delivery of claimed) {
        yield* store.webhooks.recordAttempt(delivery.delivery_id, delivery.lease, {
          attempt_id: `0190f6b4-7b7e-7c4e-8a5d-${String(sequence).padStart(12, "0")}`,
          delivery_status: "failed",
          status: 503,
          error: null,
          duration_ms: 20,
          response_body: null,
          attempted_at: attemptedAt,
          next_attempt_at: null
        })
      }
      return claimed.map((delivery) => delivery.delivery_id)
    }).pipe(Effect.provide(storage))
  )

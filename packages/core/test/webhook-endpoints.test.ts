import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import {
  Contacts,
  Core,
  MAX_WEBHOOK_ENDPOINTS_PER_ORGANIZATION,
  MemoryStorage,
  Organizations,
  SecretKey,
  Storage,
  WebhookEndpoints,
  generateSecretKey,
  openSecret,
  type InvalidInput,
  type OrganizationId,
  type WebhookEndpointId
} from "@switchboard/core"
import { failureOf } from "./failure.js"

// Webhook endpoints in core (docs/webhooks.md): registration with its checks, the signing
// secret shown once and stored sealed, updates, rotation, the deliveries log and hand retries,
// on the memory store.

const KEY = generateSecretKey()

/** Core on a fresh memory store, with `key` (default {@link KEY}; `null`: none). */
const layerWith = (key: Uint8Array | null = KEY) =>
  Core.layer.pipe(Layer.provide(key === null ? Layer.empty : SecretKey.layer(key)), Layer.provideMerge(MemoryStorage.layer))

const URL_A = "https://hooks.example.com/switchboard"
const UNKNOWN = "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6a" as WebhookEndpointId

const newOrganization = Effect.flatMap(Organizations, (organizations) => organizations.create({ name: "Acme" }))

/** The issues of an `InvalidInput`, as `field: code`. */
const issuesOf = (error: unknown) =>
  (error as InvalidInput).issues.map((issue) => `${issue.field ?? ""}: ${issue.code}`)

/** Imports one contact: a `contact.created` event, and a delivery per subscribed endpoint. */
const importContact = (organizationId: OrganizationId, phone: string) =>
  Effect.flatMap(Contacts, (contacts) => contacts.importBulk(organizationId, [{ first_name: "Ada", phone }]))

/** Records one failed attempt of each due delivery, as the dispatcher would; returns their delivery ids. */
const failDueDeliveries = (attemptedAt: string) =>
  Effect.gen(function* () {
    const storage = yield* Storage
    const claimed = yield* storage.webhooks.claimDue("2100-01-01T00:00:00.000Z", "2100-01-01T00:01:00.000Z", 100)
    let sequence = 0
    for (const delivery of claimed) {
      sequence += 1
      yield* storage.webhooks.recordAttempt(delivery.delivery_id, delivery.lease, {
        attempt_id: `0190f6b4-7b7e-7c4e-8a5d-${String(sequence).padStart(4, "0")}${attemptedAt.slice(17, 19)}000000`,
        delivery_status: "failed",
        status: 500,
        error: null,
        duration_ms: 12,
        response_body: "down",
        attempted_at: attemptedAt,
        next_attempt_at: null
      })
    }
    return claimed.map((delivery) => delivery.delivery_id)
  })

describe("WebhookEndpoints", () => {
  it.effect("create answers the secret once and stores it sealed; list and get never carry it", () =>
    Effect.gen(function* () {
      const endpoints = yield* WebhookEndpoints
      const organization = yield* newOrganization
      const created = yield* endpoints.create(organization.id, { url: ` ${URL_A} `, description: "  CRM sync  " })
      expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/)
      expect(Buffer.from(created.secret.slice("whsec_".length), "base64")).toHaveLength(32)
      expect(created.endpoint).toMatchObject({ url: URL_A, events: null, description: "CRM sync", enabled: true })
      expect(Object.keys(created.endpoint).sort()).toEqual(["created_at", "description", "enabled", "events", "updated_at", "url", "uuid"])

      const stored = yield* Effect.flatMap(Storage, (storage) => storage.webhooks.findEndpoint(organization.id, created.endpoint.uuid))
      const sealed = Option.getOrThrow(stored).secret_sealed
      expect(sealed).not.toContain(created.secret.slice("whsec_".length))
      expect(openSecret(KEY, sealed)).toEqual(Option.some(created.secret))

      expect(yield* endpoints.list(organization.id)).toEqual([created.endpoint])
      expect(yield* endpoints.get(organization.id, created.endpoint.uuid)).toEqual(created.endpoint)
      const second = yield* endpoints.create(organization.id, { url: URL_A, events: ["message.received", "chat.updated"] })
      expect(second.endpoint.events).toEqual(["message.received", "chat.updated"])
      expect(second.secret).not.toBe(created.secret)
      expect((yield* endpoints.list(organization.id)).map((endpoint) => endpoint.uuid)).toEqual([second.endpoint.uuid, created.endpoint.uuid])
    }).pipe(Effect.provide(layerWith())))

  it.effect("reports every bad field at once and writes nothing", () =>
    Effect.gen(function* () {
      const endpoints = yield* WebhookEndpoints
      const organization = yield* newOrganization
      const many = yield* failureOf(
        endpoints.create(organization.id, {
          url: "https://hooks.example.com/" + "x".repeat(2048),
          events: ["message.received", "message.sent" as never, "message.received", 7 as never],
          description: "d".repeat(256)
        })
      )
      expect(many._tag).toBe("InvalidInput")
      expect(issuesOf(many)).toEqual([
        "url: too_long",
        "events[1]: invalid_format",
        "events[2]: invalid_format",
        "events[3]: invalid_type",
        "description: too_long"
      ])
      expect(issuesOf(yield* failureOf(endpoints.create(organization.id, { url: "  " })))).toEqual(["url: required"])
      expect(issuesOf(yield* failureOf(endpoints.create(organization.id, {} as never)))).toEqual(["url: required"])
      expect(issuesOf(yield* failureOf(endpoints.create(organization.id, { url: URL_A, events: [] })))).toEqual(["events: required"])
      expect(issuesOf(yield* failureOf(endpoints.create(organization.id, { url: URL_A, events: "chat.updated" as never })))).toEqual([
        "events: invalid_type"
      ])
      expect(issuesOf(yield* failureOf(endpoints.create(organization.id, { url: 42 as never })))).toEqual(["url: invalid_type"])
      const refused = yield* failureOf(endpoints.create(organization.id, { url: "not a url" }))
      expect(refused._tag).toBe("WebhookUrlRefused")
      expect(yield* endpoints.list(organization.id)).toEqual([])
      // A URL of exactly 2048 characters is accepted.
      const longest = "https://hooks.example.com/" + "x".repeat(2048 - "https://hooks.example.com/".length)
      expect((yield* endpoints.create(organization.id, { url: longest, events: null, description: null })).endpoint.url).toBe(longest)
    }).pipe(Effect.provide(layerWith())))

  it.effect(`an organization has at most ${MAX_WEBHOOK_ENDPOINTS_PER_ORGANIZATION} endpoints; others are not counted`, () =>
    Effect.gen(function* () {
      const endpoints = yield* WebhookEndpoints
      const organization = yield* newOrganization
      const other = yield* newOrganization
      yield* endpoints.create(other.id, { url: URL_A })
      for (let index = 0; index < MAX_WEBHOOK_ENDPOINTS_PER_ORGANIZATION; index++) {
        yield* endpoints.create(organization.id, { url: `${URL_A}/${index}` })
      }
      const error = yield* failureOf(endpoints.create(organization.id, { url: URL_A }))
      expect(error).toMatchObject({ _tag: "WebhookEndpointLimitReached", limit: MAX_WEBHOOK_ENDPOINTS_PER_ORGANIZATION })
      expect(yield* endpoints.list(organization.id)).toHaveLength(MAX_WEBHOOK_ENDPOINTS_PER_ORGANIZATION)
    }).pipe(Effect.provide(layerWith())))

  it.effect("update changes the given fields, needs at least one, and checks them as create does", () =>
    Effect.gen(function* () {
      const endpoints = yield* WebhookEndpoints
      const organization = yield* newOrganization
      const { endpoint } = yield* endpoints.create(organization.id, { url: URL_A, description: "old" })
      const updated = yield* endpoints.update(organization.id, endpoint.uuid, {
        url: "https://hooks.example.com/v2",
        events: ["template.status_updated"],
        description: "",
        enabled: false
      })
      expect(updated).toMatchObject({
        uuid: endpoint.uuid,
        url: "https://hooks.example.com/v2",
        events: ["template.status_updated"],
        description: null,
        enabled: false
      })
      expect((yield* endpoints.update(organization.id, endpoint.uuid, { events: null })).events).toBeNull()
      expect(issuesOf(yield* failureOf(endpoints.update(organization.id, endpoint.uuid, {})))).toEqual(["body: required"])
      expect(
        issuesOf(yield* failureOf(endpoints.update(organization.id, endpoint.uuid, { url: "", enabled: "yes" as never })))
      ).toEqual(["url: required", "enabled: invalid_type"])
      expect((yield* failureOf(endpoints.update(organization.id, endpoint.uuid, { url: "not a url" })))._tag).toBe("WebhookUrlRefused")
      expect((yield* endpoints.get(organization.id, endpoint.uuid)).url).toBe("https://hooks.example.com/v2")
      expect(yield* failureOf(endpoints.update(organization.id, UNKNOWN, { enabled: true }))).toMatchObject({
        _tag: "RecordNotFound",
        missing: [{ resource: "webhook_endpoint", uuid: UNKNOWN }]
      })
    }).pipe(Effect.provide(layerWith())))

  it.effect("another organization's endpoint is not found by any operation", () =>
    Effect.gen(function* () {
      const endpoints = yield* WebhookEndpoints
      const owner = yield* newOrganization
      const intruder = yield* newOrganization
      const { endpoint } = yield* endpoints.create(owner.id, { url: URL_A })
      const attempts: Array<Effect.Effect<unknown, { readonly _tag: string }>> = [
        endpoints.get(intruder.id, endpoint.uuid),
        endpoints.update(intruder.id, endpoint.uuid, { enabled: false }),
        endpoints.rotateSecret(intruder.id, endpoint.uuid),
        endpoints.deliveries(intruder.id, endpoint.uuid, {}),
        endpoints.retry(intruder.id, endpoint.uuid, UNKNOWN),
        endpoints.remove(intruder.id, endpoint.uuid)
      ]
      for (const attempt of attempts) expect((yield* failureOf(attempt))._tag).toBe("RecordNotFound")
      expect(yield* endpoints.list(intruder.id)).toEqual([])
      expect(yield* endpoints.get(owner.id, endpoint.uuid)).toEqual(endpoint)
    }).pipe(Effect.provide(layerWith())))

  it.effect("rotateSecret answers a new secret, stored sealed in place of the old; remove deletes", () =>
    Effect.gen(function* () {
      const endpoints = yield* WebhookEndpoints
      const organization = yield* newOrganization
      const created = yield* endpoints.create(organization.id, { url: URL_A })
      const rotated = yield* endpoints.rotateSecret(organization.id, created.endpoint.uuid)
      expect(rotated.secret).toMatch(/^whsec_/)
      expect(rotated.secret).not.toBe(created.secret)
      expect(rotated.endpoint.uuid).toBe(created.endpoint.uuid)
      const stored = yield* Effect.flatMap(Storage, (storage) => storage.webhooks.findEndpoint(organization.id, created.endpoint.uuid))
      expect(openSecret(KEY, Option.getOrThrow(stored).secret_sealed)).toEqual(Option.some(rotated.secret))
      yield* endpoints.remove(organization.id, created.endpoint.uuid)
      expect((yield* failureOf(endpoints.get(organization.id, created.endpoint.uuid)))._tag).toBe("RecordNotFound")
      expect((yield* failureOf(endpoints.remove(organization.id, created.endpoint.uuid)))._tag).toBe("RecordNotFound")
    }).pipe(Effect.provide(layerWith())))

  it.effect("deliveries pages the attempts newest first by cursor; retry makes a failed delivery due again", () =>
    Effect.gen(function* () {
      const endpoints = yield* WebhookEndpoints
      const organization = yield* newOrganization
      const { endpoint } = yield* endpoints.create(organization.id, { url: URL_A, events: ["contact.created"] })
      const { endpoint: otherEndpoint } = yield* endpoints.create(organization.id, { url: URL_A, events: ["chat.updated"] })
      yield* importContact(organization.id, "+31612345671")
      const [first] = yield* failDueDeliveries("2026-01-01T00:00:01.000Z")
      yield* importContact(organization.id, "+31612345672")
      yield* failDueDeliveries("2026-01-01T00:00:02.000Z")
      yield* importContact(organization.id, "+31612345673")
      yield* failDueDeliveries("2026-01-01T00:00:03.000Z")

      const page1 = yield* endpoints.deliveries(organization.id, endpoint.uuid, { limit: 2 })
      expect(page1.deliveries.map((attempt) => attempt.attempted_at)).toEqual(["2026-01-01T00:00:03.000Z", "2026-01-01T00:00:02.000Z"])
      expect(page1.deliveries[0]).toMatchObject({ event_type: "contact.created", attempt: 1, status: 500, delivery_status: "failed" })
      expect(page1.pagination).toMatchObject({ mode: "cursor", limit: 2, has_more: true })
      const page2 = yield* endpoints.deliveries(organization.id, endpoint.uuid, { limit: 2, cursor: page1.pagination.next_cursor ?? "" })
      expect(page2.deliveries.map((attempt) => attempt.delivery_id)).toEqual([first])
      expect(page2.pagination).toEqual({ mode: "cursor", limit: 2, next_cursor: null, has_more: false })
      expect((yield* endpoints.deliveries(organization.id, otherEndpoint.uuid, {})).deliveries).toEqual([])

      const wrongList = yield* failureOf(
        endpoints.deliveries(organization.id, otherEndpoint.uuid, { cursor: page1.pagination.next_cursor ?? "" })
      )
      expect(issuesOf(wrongList)).toEqual(["cursor: invalid_cursor"])
      expect(issuesOf(yield* failureOf(endpoints.deliveries(organization.id, endpoint.uuid, { limit: 0, cursor: "junk" })))).toEqual([
        "limit: out_of_range",
        "cursor: invalid_cursor"
      ])

      yield* endpoints.retry(organization.id, endpoint.uuid, first ?? "")
      const claimed = yield* Effect.flatMap(Storage, (storage) =>
        storage.webhooks.claimDue("2100-01-01T00:00:00.000Z", "2100-01-01T00:01:00.000Z", 100)
      )
      expect(claimed.map((delivery) => delivery.delivery_id)).toEqual([first])
      expect(claimed[0]?.attempt).toBe(2)
      expect(yield* failureOf(endpoints.retry(organization.id, otherEndpoint.uuid, first ?? ""))).toMatchObject({
        _tag: "RecordNotFound",
        missing: [{ resource: "webhook_delivery" }]
      })
    }).pipe(Effect.provide(layerWith())))

  it.effect("without a secret key every operation fails with SecretKeyMissing", () =>
    Effect.gen(function* () {
      const endpoints = yield* WebhookEndpoints
      const organization = yield* newOrganization
      const operations: Array<Effect.Effect<unknown, { readonly _tag: string }>> = [
        endpoints.create(organization.id, { url: URL_A }),
        endpoints.list(organization.id),
        endpoints.get(organization.id, UNKNOWN),
        endpoints.update(organization.id, UNKNOWN, { enabled: false }),
        endpoints.remove(organization.id, UNKNOWN),
        endpoints.rotateSecret(organization.id, UNKNOWN),
        endpoints.deliveries(organization.id, UNKNOWN, {}),
        endpoints.retry(organization.id, UNKNOWN, "x")
      ]
      for (const operation of operations) expect((yield* failureOf(operation))._tag).toBe("SecretKeyMissing")
    }).pipe(Effect.provide(layerWith(null))))

  it.effect("the first secret sealed stores the key's check value: another key is refused at start-up", () =>
    Effect.gen(function* () {
      const storage = MemoryStorage.make()
      const shared = Layer.succeed(Storage, storage)
      const withKey = (key: Uint8Array) => Core.layer.pipe(Layer.provide(SecretKey.layer(key)), Layer.provideMerge(shared))
      yield* Effect.gen(function* () {
        const organization = yield* newOrganization
        yield* Effect.flatMap(WebhookEndpoints, (endpoints) => endpoints.create(organization.id, { url: URL_A }))
      }).pipe(Effect.provide(withKey(KEY)))
      const error = yield* failureOf(Effect.provide(WebhookEndpoints, withKey(generateSecretKey())))
      expect((error as { _tag: string })._tag).toBe("SecretKeyMismatch")
    }))
})

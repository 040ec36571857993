import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import {
  type AttemptRecord,
  type ClaimedDelivery,
  type ContactId,
  MAX_WEBHOOK_ENDPOINTS_PER_ORGANIZATION,
  MESSAGE_STATUS_PREDECESSORS,
  type MessageId,
  type OrganizationId,
  Storage,
  type TemplateId,
  type WebhookEndpoint,
  type WebhookEndpointId,
  type WebhookEventType
} from "@switchboard/core"
import { append, inboundRequest, outboundRequest, patchChat } from "./chat-support.js"
import type { StorageContractOptions } from "./options.js"
import * as fixtures from "./fixtures.js"
import { contactOf, importContact, insertOrganization, runner, sorted } from "./support.js"
import { LATER, LATER_LEASE, addEndpoint, claim, endpointRecord, onlyEvent, outbox } from "./webhook-support.js"

const { instant, phone } = fixtures

/** What rotateSecret writes: the expected sealed secret, the new one, the previous one and its expiry. */
const rotation = (expected: string, sealed: string, previous: string | null, expiresAt: string | null) => ({
  expected_secret_sealed: expected,
  secret_sealed: sealed,
  previous_secret_sealed: previous,
  previous_secret_expires_at: expiresAt
})

/** One attempt's outcome: `delivered` with status 200 at `attemptedAt` unless `overrides` say otherwise. */
const attemptRecord = (attemptedAt: string, overrides: Partial<AttemptRecord> = {}): AttemptRecord => ({
  attempt_id: fixtures.uuid(),
  delivery_status: "delivered",
  status: 200,
  error: null,
  duration_ms: 35,
  response_body: "ok",
  attempted_at: attemptedAt,
  next_attempt_at: null,
  ...overrides
})

/** One event for `endpoint`: an import of one new contact at `now`; returns the contact's uuid. */
const importEvent = (organizationId: OrganizationId, n: number, now: string) => importContact(organizationId, phone(n), now)

/** Claims exactly one delivery at `now` and returns it. */
const claimOne = (now: string, leaseUntil: string) =>
  Effect.gen(function* () {
    const claimed = yield* claim(now, leaseUntil)
    expect(claimed).toHaveLength(1)
    return claimed[0]!
  })

/** A queued outbound message to a new contact at `instant(0)`; returns it. */
const queuedMessage = (organizationId: OrganizationId, contactPhone: string) =>
  Effect.gen(function* () {
    const contactId = yield* importContact(organizationId, contactPhone)
    return (yield* append(organizationId, outboundRequest(contactId))).message
  })

/** The send's write once the provider accepted: `sent` with `providerId`. */
const markSent = (organizationId: OrganizationId, id: MessageId, providerId: string, now: string) =>
  Effect.flatMap(Storage, ({ chats }) =>
    chats.updateMessageStatus(organizationId, id, { status: "sent", from: MESSAGE_STATUS_PREDECESSORS.sent, provider_message_id: providerId, now })
  )

/**
 * Contract of `Storage.webhooks` (docs/webhooks.md): endpoints (limit, newest first, only
 * differing fields updated, disabling cancels pending deliveries, rotation, deletion,
 * tenant isolation); the outbox written by the write methods named in `WebhookRepository`
 * (an event and one delivery per subscribed enabled endpoint, nothing otherwise); claims
 * with leases, attempts, hand retries and pruning.
 */
export const webhooksContract = (options: StorageContractOptions): void => {
  const run = runner(options)

  describe("webhook endpoints", () => {
    it.effect("inserts endpoints and finds one with its sealed secret; lists newest first (created_at desc, uuid desc)", () =>
      run(
        Effect.gen(function* () {
          const { webhooks } = yield* Storage
          const org = yield* insertOrganization()
          const first = yield* addEndpoint(org.id, { created_at: instant(1), updated_at: instant(1), events: ["chat.updated", "message.received"] })
          const [a, b] = sorted([fixtures.uuid(), fixtures.uuid()]) as Array<WebhookEndpointId>
          const second = yield* addEndpoint(org.id, { uuid: a!, created_at: instant(2), updated_at: instant(2), description: "CRM" }, "sealed-2")
          const third = yield* addEndpoint(org.id, { uuid: b!, created_at: instant(2), updated_at: instant(2), enabled: false })
          expect(yield* webhooks.listEndpoints(org.id)).toEqual([third, second, first])
          expect(yield* webhooks.findEndpoint(org.id, second.uuid)).toEqual(
            Option.some({
              organization_id: org.id,
              endpoint: second,
              secret_sealed: "sealed-2",
              previous_secret_sealed: null,
              previous_secret_expires_at: null
            })
          )
          expect(yield* webhooks.findEndpoint(org.id, fixtures.uuid() as WebhookEndpointId)).toEqual(Option.none())
        })
      ))

    it.effect(`insertEndpoint → LimitReached at the limit (${MAX_WEBHOOK_ENDPOINTS_PER_ORGANIZATION}), nothing written; the limit is per organization`, () =>
      run(
        Effect.gen(function* () {
          const { webhooks } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          for (let n = 0; n < MAX_WEBHOOK_ENDPOINTS_PER_ORGANIZATION; n++) yield* addEndpoint(org.id)
          const refused = endpointRecord()
          expect(yield* webhooks.insertEndpoint(org.id, { endpoint: refused, secret_sealed: "s" }, MAX_WEBHOOK_ENDPOINTS_PER_ORGANIZATION)).toEqual({
            _tag: "LimitReached",
            limit: MAX_WEBHOOK_ENDPOINTS_PER_ORGANIZATION
          })
          expect(yield* webhooks.findEndpoint(org.id, refused.uuid)).toEqual(Option.none())
          expect(yield* webhooks.listEndpoints(org.id)).toHaveLength(MAX_WEBHOOK_ENDPOINTS_PER_ORGANIZATION)
          expect((yield* webhooks.insertEndpoint(org.id, { endpoint: endpointRecord(), secret_sealed: "s" }, 11))._tag).toBe("Inserted")
          yield* addEndpoint(other.id)
        })
      ))

    it.effect("updateEndpoint sets only the differing fields, updated_at only when one differs; None when missing", () =>
      run(
        Effect.gen(function* () {
          const { webhooks } = yield* Storage
          const org = yield* insertOrganization()
          const endpoint = yield* addEndpoint(org.id, { events: ["chat.updated"], description: "CRM" })
          const same = { url: endpoint.url, events: ["chat.updated" as const], description: "CRM", enabled: true }
          expect(yield* webhooks.updateEndpoint(org.id, endpoint.uuid, same, instant(5))).toEqual(Option.some(endpoint))
          expect(yield* webhooks.updateEndpoint(org.id, endpoint.uuid, {}, instant(5))).toEqual(Option.some(endpoint))
          const changed = { ...endpoint, events: null, description: null, updated_at: instant(6) }
          expect(yield* webhooks.updateEndpoint(org.id, endpoint.uuid, { events: null, description: null }, instant(6))).toEqual(Option.some(changed))
          const moved = { ...changed, url: "https://example.org/in", events: ["message.received" as const], updated_at: instant(7) }
          expect(
            yield* webhooks.updateEndpoint(org.id, endpoint.uuid, { url: moved.url, events: moved.events }, instant(7))
          ).toEqual(Option.some(moved))
          expect(Option.map(yield* webhooks.findEndpoint(org.id, endpoint.uuid), (stored) => stored.endpoint)).toEqual(Option.some(moved))
          expect(yield* webhooks.updateEndpoint(org.id, fixtures.uuid() as WebhookEndpointId, { enabled: false }, instant(8))).toEqual(Option.none())
        })
      ))

    it.effect("disabling an endpoint cancels its pending deliveries (a leased one too); enabling again does not bring them back", () =>
      run(
        Effect.gen(function* () {
          const { webhooks } = yield* Storage
          const org = yield* insertOrganization()
          const disabled = yield* addEndpoint(org.id)
          const kept = yield* addEndpoint(org.id)
          yield* importEvent(org.id, 1, instant(1))
          const leased = (yield* claim(instant(1), instant(2))).find((delivery) => delivery.endpoint_uuid === disabled.uuid)!
          yield* importEvent(org.id, 2, instant(1))
          yield* webhooks.updateEndpoint(org.id, disabled.uuid, { enabled: false }, instant(1))
          expect(yield* webhooks.recordAttempt(leased.delivery_id, leased.lease, attemptRecord(instant(1)))).toBe(false)
          yield* webhooks.updateEndpoint(org.id, disabled.uuid, { enabled: true }, instant(4))
          expect((yield* outbox()).map((delivery) => delivery.endpoint)).toEqual([kept.uuid, kept.uuid])
        })
      ))

    it.effect("rotateSecret replaces the sealed secret, the previous one and its expiry, and updated_at; pending deliveries are claimed with them; NotFound when missing", () =>
      run(
        Effect.gen(function* () {
          const { webhooks } = yield* Storage
          const org = yield* insertOrganization()
          const endpoint = yield* addEndpoint(org.id, {}, "old")
          yield* importEvent(org.id, 1, instant(1))
          const rotated = { ...endpoint, updated_at: instant(2) }
          expect(yield* webhooks.rotateSecret(org.id, endpoint.uuid, rotation("old", "new", "old", instant(50)), instant(2))).toEqual({
            _tag: "Rotated",
            endpoint: rotated
          })
          expect(yield* webhooks.findEndpoint(org.id, endpoint.uuid)).toEqual(
            Option.some({
              organization_id: org.id,
              endpoint: rotated,
              secret_sealed: "new",
              previous_secret_sealed: "old",
              previous_secret_expires_at: instant(50)
            })
          )
          const claimed = yield* claimOne(LATER, LATER_LEASE)
          expect([claimed.secret_sealed, claimed.previous_secret_sealed, claimed.previous_secret_expires_at]).toEqual(["new", "old", instant(50)])
          // No overlap: both previous fields cleared.
          expect((yield* webhooks.rotateSecret(org.id, endpoint.uuid, rotation("new", "newer", null, null), instant(3)))._tag).toBe("Rotated")
          expect(Option.map(yield* webhooks.findEndpoint(org.id, endpoint.uuid), (stored) => [stored.secret_sealed, stored.previous_secret_sealed, stored.previous_secret_expires_at])).toEqual(
            Option.some(["newer", null, null])
          )
          expect(yield* webhooks.rotateSecret(org.id, fixtures.uuid() as WebhookEndpointId, rotation("x", "y", null, null), instant(3))).toEqual({
            _tag: "NotFound"
          })
        })
      ))

    it.effect("rotateSecret is a compare-and-set on the sealed secret: SecretChanged, nothing written, when it is no longer the expected one", () =>
      run(
        Effect.gen(function* () {
          const { webhooks } = yield* Storage
          const org = yield* insertOrganization()
          const endpoint = yield* addEndpoint(org.id, {}, "current")
          expect(yield* webhooks.rotateSecret(org.id, endpoint.uuid, rotation("stale", "new", "stale", instant(50)), instant(2))).toEqual({
            _tag: "SecretChanged"
          })
          expect(yield* webhooks.findEndpoint(org.id, endpoint.uuid)).toEqual(
            Option.some({ organization_id: org.id, endpoint, secret_sealed: "current", previous_secret_sealed: null, previous_secret_expires_at: null })
          )
          // Two rotations that read the same secret: one wins, the other changes nothing.
          const outcomes = yield* Effect.all(
            ["a", "b"].map((sealed) => webhooks.rotateSecret(org.id, endpoint.uuid, rotation("current", sealed, "current", instant(50)), instant(3))),
            { concurrency: "unbounded" }
          )
          expect(outcomes.map((outcome) => outcome._tag).sort()).toEqual(["Rotated", "SecretChanged"])
          const winner = outcomes[0]!._tag === "Rotated" ? "a" : "b"
          expect(Option.map(yield* webhooks.findEndpoint(org.id, endpoint.uuid), (stored) => [stored.secret_sealed, stored.previous_secret_sealed])).toEqual(
            Option.some([winner, "current"])
          )
        })
      ))

    it.effect("listSealedSecrets pages every organization's endpoints by uuid; resealSecret is a compare-and-set on one sealed column, updated_at kept", () =>
      run(
        Effect.gen(function* () {
          const { webhooks } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const a = yield* addEndpoint(org.id, { uuid: "00000000-0000-4000-8000-00000000000a" as WebhookEndpointId }, "sealed-a")
          const b = yield* addEndpoint(other.id, { uuid: "00000000-0000-4000-8000-00000000000b" as WebhookEndpointId }, "sealed-b")
          const c = yield* addEndpoint(org.id, { uuid: "00000000-0000-4000-8000-00000000000c" as WebhookEndpointId }, "sealed-c")
          yield* webhooks.rotateSecret(org.id, c.uuid, rotation("sealed-c", "sealed-c2", "sealed-c", instant(50)), instant(1))
          expect(yield* webhooks.listSealedSecrets(null, 2)).toEqual([
            { uuid: a.uuid, secret_sealed: "sealed-a", previous_secret_sealed: null },
            { uuid: b.uuid, secret_sealed: "sealed-b", previous_secret_sealed: null }
          ])
          expect(yield* webhooks.listSealedSecrets(b.uuid, 2)).toEqual([
            { uuid: c.uuid, secret_sealed: "sealed-c2", previous_secret_sealed: "sealed-c" }
          ])
          expect(yield* webhooks.listSealedSecrets(c.uuid, 2)).toEqual([])
          expect(yield* webhooks.resealSecret(b.uuid, "secret", "stale", "x")).toBe(false)
          expect(yield* webhooks.resealSecret(b.uuid, "secret", "sealed-b", "resealed-b")).toBe(true)
          expect(yield* webhooks.resealSecret(b.uuid, "secret", "sealed-b", "again")).toBe(false)
          expect(yield* webhooks.resealSecret(a.uuid, "previous_secret", "sealed-a", "x")).toBe(false)
          expect(yield* webhooks.resealSecret(c.uuid, "previous_secret", "sealed-c", "resealed-c")).toBe(true)
          expect(yield* webhooks.resealSecret(fixtures.uuid() as WebhookEndpointId, "secret", "sealed-a", "x")).toBe(false)
          expect(yield* webhooks.findEndpoint(other.id, b.uuid)).toEqual(
            Option.some({ organization_id: other.id, endpoint: b, secret_sealed: "resealed-b", previous_secret_sealed: null, previous_secret_expires_at: null })
          )
          expect(yield* webhooks.findEndpoint(org.id, c.uuid)).toEqual(
            Option.some({
              organization_id: org.id,
              endpoint: { ...c, updated_at: instant(1) },
              secret_sealed: "sealed-c2",
              previous_secret_sealed: "resealed-c",
              previous_secret_expires_at: instant(50)
            })
          )
        })
      ))

    it.effect("deleteEndpoint removes the endpoint with its deliveries and attempts; false when missing", () =>
      run(
        Effect.gen(function* () {
          const { webhooks } = yield* Storage
          const org = yield* insertOrganization()
          const deleted = yield* addEndpoint(org.id)
          const kept = yield* addEndpoint(org.id)
          yield* importEvent(org.id, 1, instant(1))
          for (const delivery of yield* claim(instant(1), instant(2))) {
            yield* webhooks.recordAttempt(delivery.delivery_id, delivery.lease, attemptRecord(instant(1), {
              delivery_status: "pending", status: 500, next_attempt_at: instant(3)
            }))
          }
          expect(yield* webhooks.deleteEndpoint(org.id, deleted.uuid)).toBe(true)
          expect(yield* webhooks.deleteEndpoint(org.id, deleted.uuid)).toBe(false)
          expect(yield* webhooks.findEndpoint(org.id, deleted.uuid)).toEqual(Option.none())
          expect(yield* webhooks.listAttempts(org.id, deleted.uuid, null, 10)).toEqual(Option.none())
          expect(Option.map(yield* webhooks.listAttempts(org.id, kept.uuid, null, 10), (attempts) => attempts.length)).toEqual(Option.some(1))
          expect((yield* outbox()).map((delivery) => delivery.endpoint)).toEqual([kept.uuid])
          expect(yield* webhooks.pruneDeliveries(LATER)).toBe(1)
        })
      ))

    it.effect("another organization's endpoints and deliveries are invisible: find, list, update, rotate, delete, attempts, retry", () =>
      run(
        Effect.gen(function* () {
          const { webhooks } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const endpoint = yield* addEndpoint(org.id)
          yield* importEvent(org.id, 1, instant(1))
          const delivery = yield* claimOne(instant(1), instant(2))
          yield* webhooks.recordAttempt(delivery.delivery_id, delivery.lease, attemptRecord(instant(1), { delivery_status: "failed", status: 500 }))
          expect(yield* webhooks.listEndpoints(other.id)).toEqual([])
          expect(yield* webhooks.findEndpoint(other.id, endpoint.uuid)).toEqual(Option.none())
          expect(yield* webhooks.updateEndpoint(other.id, endpoint.uuid, { enabled: false }, instant(2))).toEqual(Option.none())
          expect(yield* webhooks.rotateSecret(other.id, endpoint.uuid, rotation("sealed-1", "x", null, null), instant(2))).toEqual({
            _tag: "NotFound"
          })
          expect(yield* webhooks.listAttempts(other.id, endpoint.uuid, null, 10)).toEqual(Option.none())
          expect(yield* webhooks.retryDelivery(other.id, endpoint.uuid, delivery.delivery_id, instant(2))).toBe(false)
          expect(yield* webhooks.deleteEndpoint(other.id, endpoint.uuid)).toBe(false)
          expect(yield* webhooks.findEndpoint(org.id, endpoint.uuid)).toEqual(
            Option.some({
              organization_id: org.id,
              endpoint,
              secret_sealed: "sealed-1",
              previous_secret_sealed: null,
              previous_secret_expires_at: null
            })
          )
          expect(yield* claim()).toEqual([])
        })
      ))
  })

  describe("webhook outbox", () => {
    it.effect("importBulk: contact.created for each created contact (not updated ones), one delivery per subscribed enabled endpoint", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const existing = yield* importContact(org.id, phone(1), instant(0))
          const first = yield* addEndpoint(org.id)
          const second = yield* addEndpoint(org.id, { events: ["contact.created"] })
          yield* addEndpoint(org.id, { enabled: false })
          yield* addEndpoint(org.id, { events: ["message.received", "chat.updated"] })
          const { contacts } = yield* Storage
          const request = fixtures.importRequest(
            [fixtures.importRow(phone(1), { first_name: "Ada" }), fixtures.importRow(phone(2), { last_name: "Lovelace" }, [fixtures.groupNamed("VIP")])],
            { now: instant(3) }
          )
          const outcome = yield* contacts.importBulk(org.id, request)
          const created = outcome._tag === "Imported" ? outcome.result.contacts.find((contact) => contact.status === "created")! : expect.fail(outcome._tag)
          expect(created.uuid).not.toBe(existing)
          const events = yield* outbox()
          const contact = yield* contactOf(org.id, created.uuid)
          expect(events.map(({ endpoint, type, event }) => [endpoint, type, event.created_at, event.data])).toEqual(
            sorted([first.uuid, second.uuid]).map((endpoint) => [endpoint, "contact.created", instant(3), contact])
          )
          expect(events[0]!.event.id).toBe(events[1]!.event.id)
        })
      ))

    it.effect("importBulk writes no event with events: false, nor when refused (LimitExceeded, GroupsNotFound)", () =>
      run(
        Effect.gen(function* () {
          const { contacts } = yield* Storage
          const org = yield* insertOrganization()
          yield* addEndpoint(org.id)
          const quiet = yield* contacts.importBulk(org.id, { ...fixtures.importRequest([fixtures.importRow(phone(1))]), events: false })
          expect(quiet._tag).toBe("Imported")
          const limited = yield* contacts.importBulk(org.id, fixtures.importRequest([fixtures.importRow(phone(2))], { contactsLimit: 1 }))
          expect(limited._tag).toBe("LimitExceeded")
          const missing = fixtures.groupWithId(fixtures.uuid() as never)
          const refused = yield* contacts.importBulk(org.id, fixtures.importRequest([fixtures.importRow(phone(3), {}, [missing])]))
          expect(refused._tag).toBe("GroupsNotFound")
          expect(yield* outbox()).toEqual([])
          const explicit = yield* contacts.importBulk(org.id, { ...fixtures.importRequest([fixtures.importRow(phone(4))]), events: true })
          expect(explicit._tag).toBe("Imported")
          expect((yield* outbox()).map((delivery) => delivery.type)).toEqual(["contact.created"])
        })
      ))

    it.effect("no event when the organization has no endpoint, only disabled ones, or only ones whose events exclude the type", () =>
      run(
        Effect.gen(function* () {
          const { webhooks } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          yield* addEndpoint(other.id)
          yield* importEvent(org.id, 1, instant(1))
          expect(yield* outbox()).toEqual([])
          const endpoint = yield* addEndpoint(org.id, { enabled: false })
          yield* importEvent(org.id, 2, instant(1))
          expect(yield* outbox()).toEqual([])
          yield* webhooks.updateEndpoint(org.id, endpoint.uuid, { enabled: true, events: ["message.received"] }, instant(2))
          yield* importEvent(org.id, 3, instant(2))
          expect(yield* outbox()).toEqual([])
          yield* webhooks.updateEndpoint(org.id, endpoint.uuid, { events: ["message.received", "contact.created"] }, instant(3))
          yield* importEvent(org.id, 4, instant(3))
          expect((yield* outbox()).map((delivery) => [delivery.endpoint, delivery.type])).toEqual([[endpoint.uuid, "contact.created"]])
        })
      ))

    it.effect("appendMessage: message.received for an inbound message, with the message as stored; none for outbound or a duplicate", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const endpoint = yield* addEndpoint(org.id, { events: ["message.received", "chat.updated"] })
          const received = yield* append(org.id, inboundRequest(phone(1), { now: instant(1), providerId: "wamid.1" }))
          expect(yield* onlyEvent(endpoint, "message.received", instant(1))).toEqual(received.message)
          const { chats } = yield* Storage
          const duplicate = yield* chats.appendMessage(org.id, inboundRequest(phone(1), { now: instant(2), providerId: "wamid.1" }))
          expect(duplicate._tag).toBe("Duplicate")
          yield* append(org.id, outboundRequest(received.message.contact_uuid, { now: instant(3) }))
          expect(yield* outbox()).toEqual([])
        })
      ))

    it.effect("appendMessage: chat.updated with the chat as returned when an inbound message reopened the chat, not otherwise", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const first = yield* append(org.id, inboundRequest(phone(1), { now: instant(1) }))
          const endpoint = yield* addEndpoint(org.id, { events: ["chat.updated"] })
          yield* append(org.id, inboundRequest(phone(1), { now: instant(2) }))
          expect(yield* outbox()).toEqual([])
          yield* patchChat(org.id, first.chat.uuid, { status: "resolved" }, instant(3))
          yield* outbox()
          const reopened = yield* append(org.id, inboundRequest(phone(1), { now: instant(4) }))
          expect(reopened.chat.status).toBe("open")
          expect(yield* onlyEvent(endpoint, "chat.updated", instant(4))).toEqual(reopened.chat)
        })
      ))

    it.effect("updateMessageStatus: message.status_updated with the message when the status changed; none when it would move back", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const message = yield* queuedMessage(org.id, phone(1))
          const endpoint = yield* addEndpoint(org.id, { events: ["message.status_updated"] })
          const sent = yield* markSent(org.id, message.uuid, "wamid.1", instant(1))
          expect(sent._tag === "Updated" && sent.changed).toBe(true)
          expect(yield* onlyEvent(endpoint, "message.status_updated", instant(1))).toEqual(sent._tag === "Updated" && sent.message)
          const back = yield* chats.updateMessageStatus(org.id, message.uuid, { status: "sent", from: MESSAGE_STATUS_PREDECESSORS.sent, now: instant(2) })
          expect(back._tag === "Updated" && back.changed).toBe(false)
          expect(yield* outbox()).toEqual([])
        })
      ))

    it.effect("updateMessageStatus applying pending reports: message.status_updated, one with the message as finally stored", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const message = yield* queuedMessage(org.id, phone(1))
          const endpoint = yield* addEndpoint(org.id)
          const report = { status: "delivered" as const, from: MESSAGE_STATUS_PREDECESSORS.delivered, now: instant(1), pendingUntil: instant(60) }
          expect(yield* chats.updateMessageStatusByProviderId(org.id, "wamid.1", report)).toEqual({ _tag: "Pending" })
          expect(yield* outbox()).toEqual([])
          const sent = yield* markSent(org.id, message.uuid, "wamid.1", instant(2))
          expect(sent._tag === "Updated" && sent.message.status).toBe("delivered")
          // One event, or one per status written (a store without transactions writes the
          // send's status and each pending report separately, each with its event).
          const events = yield* outbox()
          expect(events.length).toBeGreaterThanOrEqual(1)
          for (const { endpoint: uuid, event } of events) expect([uuid, event.type, event.created_at]).toEqual([endpoint.uuid, "message.status_updated", instant(2)])
          expect(events.map(({ event }) => event.data)).toContainEqual(sent._tag === "Updated" && sent.message)
        })
      ))

    it.effect("updateMessageStatusByProviderId: message.status_updated when the status changed; none when it would move back", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const message = yield* queuedMessage(org.id, phone(1))
          yield* markSent(org.id, message.uuid, "wamid.1", instant(1))
          const endpoint = yield* addEndpoint(org.id, { events: ["message.status_updated"] })
          const read = yield* chats.updateMessageStatusByProviderId(org.id, "wamid.1", {
            status: "read", from: MESSAGE_STATUS_PREDECESSORS.read, now: instant(2), pendingUntil: instant(60)
          })
          expect(read._tag === "Updated" && read.changed).toBe(true)
          expect(yield* onlyEvent(endpoint, "message.status_updated", instant(2))).toEqual(read._tag === "Updated" && read.message)
          const late = yield* chats.updateMessageStatusByProviderId(org.id, "wamid.1", {
            status: "delivered", from: MESSAGE_STATUS_PREDECESSORS.delivered, now: instant(3), pendingUntil: instant(60)
          })
          expect(late._tag === "Updated" && late.changed).toBe(false)
          expect(yield* outbox()).toEqual([])
        })
      ))

    it.effect("chats.update: one chat.updated with the chat as returned when anything changed (status, assignee and favorite in one step); none otherwise", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const { chat } = yield* append(org.id, inboundRequest(phone(1), { now: instant(1) }))
          const endpoint = yield* addEndpoint(org.id, { events: ["chat.updated"] })
          const updated = yield* patchChat(org.id, chat.uuid, { status: "pending", assigned_to: "user-1", favorite: true }, instant(2))
          expect(updated.chat).toMatchObject({ status: "pending", assigned_to: "user-1", favorite: true, updated_at: instant(2) })
          expect(yield* onlyEvent(endpoint, "chat.updated", instant(2))).toEqual(updated.chat)
          const unchanged = yield* patchChat(org.id, chat.uuid, { assigned_to: "user-1" }, instant(3))
          expect(unchanged.changed).toBe(false)
          expect(yield* outbox()).toEqual([])
        })
      ))

    it.effect("templates.updateStatus: template.status_updated with the template when anything changed; none otherwise", () =>
      run(
        Effect.gen(function* () {
          const { templates } = yield* Storage
          const org = yield* insertOrganization()
          const uuid = fixtures.uuid() as TemplateId
          const content = {
            waba_id: null,
            provider_template_id: null,
            name: "order_update",
            language: "en_US",
            category: "UTILITY" as const,
            status: "PENDING" as const,
            components: [{ type: "BODY" as const, text: "Hi" }],
            problems: []
          }
          yield* templates.create(org.id, { uuid, content, now: instant(0) })
          const endpoint = yield* addEndpoint(org.id, { events: ["template.status_updated"] })
          const rejected = yield* templates.updateStatus(org.id, uuid, { status: "REJECTED", rejected_reason: "INVALID_FORMAT", now: instant(1) })
          expect(rejected._tag === "Updated" && rejected.changed).toBe(true)
          expect(yield* onlyEvent(endpoint, "template.status_updated", instant(1))).toEqual(rejected._tag === "Updated" && rejected.template)
          const again = yield* templates.updateStatus(org.id, uuid, { status: "REJECTED", rejected_reason: "INVALID_FORMAT", now: instant(2) })
          expect(again._tag === "Updated" && again.changed).toBe(false)
          expect(yield* outbox()).toEqual([])
        })
      ))

    it.effect("templates.updateStatus with a category: the category written, template.category_updated when it changed; none otherwise", () =>
      run(
        Effect.gen(function* () {
          const { templates } = yield* Storage
          const org = yield* insertOrganization()
          const uuid = fixtures.uuid() as TemplateId
          const content = {
            waba_id: "102290129340398",
            provider_template_id: "5001",
            name: "order_update",
            language: "en_US",
            category: "UTILITY" as const,
            status: "APPROVED" as const,
            components: [{ type: "BODY" as const, text: "Hi" }],
            problems: []
          }
          yield* templates.create(org.id, { uuid, content, now: instant(0) })
          const endpoint = yield* addEndpoint(org.id, { events: ["template.category_updated"] })
          const moved = yield* templates.updateStatus(org.id, uuid, { status: "APPROVED", rejected_reason: null, category: "MARKETING", now: instant(1) })
          expect(moved._tag === "Updated" && [moved.changed, moved.template.category, moved.template.status, moved.template.updated_at]).toEqual([true, "MARKETING", "APPROVED", instant(1)])
          expect(yield* onlyEvent(endpoint, "template.category_updated", instant(1))).toEqual(moved._tag === "Updated" && moved.template)
          expect(Option.map(yield* templates.findById(org.id, uuid), (found) => found.category)).toEqual(Option.some("MARKETING"))
          const again = yield* templates.updateStatus(org.id, uuid, { status: "APPROVED", rejected_reason: null, category: "MARKETING", now: instant(2) })
          expect(again._tag === "Updated" && again.changed).toBe(false)
          // A status change without a category keeps the category.
          const paused = yield* templates.updateStatus(org.id, uuid, { status: "PAUSED", rejected_reason: null, now: instant(3) })
          expect(paused._tag === "Updated" && paused.template.category).toBe("MARKETING")
          expect(yield* outbox()).toEqual([])
        })
      ))
  })

  describe("webhook deliveries", () => {
    it.effect("claimDue: only due deliveries, oldest due first, up to the limit, with everything needed to send them", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const endpoint = yield* addEndpoint(org.id, {}, "sealed-x")
          const ids: Array<ContactId> = []
          for (const minute of [3, 1, 2]) ids.push(yield* importEvent(org.id, minute, instant(minute)))
          expect(yield* claim(instant(0), instant(5))).toEqual([])
          const firstTwo = yield* claim(instant(3), instant(5), 2)
          expect(firstTwo.map((delivery) => delivery.event.created_at)).toEqual([instant(1), instant(2)])
          const delivery: ClaimedDelivery = firstTwo[0]!
          expect(delivery).toEqual({
            delivery_id: delivery.delivery_id,
            lease: delivery.lease,
            organization_id: org.id,
            endpoint_uuid: endpoint.uuid,
            url: endpoint.url,
            secret_sealed: "sealed-x",
            previous_secret_sealed: null,
            previous_secret_expires_at: null,
            event: { id: delivery.event.id, type: "contact.created", created_at: instant(1), data: yield* contactOf(org.id, ids[1]!) },
            attempt: 1
          })
          expect(firstTwo[0]!.lease).not.toBe(firstTwo[1]!.lease)
          expect((yield* claim(instant(4), instant(10), 5)).map((claimed) => claimed.event.created_at)).toEqual([instant(3)])
        })
      ))

    it.effect("claimDue skips leased deliveries until their lease has ended, then claims them again under a new lease", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          yield* addEndpoint(org.id)
          yield* importEvent(org.id, 1, instant(1))
          const first = yield* claimOne(instant(1), instant(5))
          expect(yield* claim(instant(4), instant(8))).toEqual([])
          expect(yield* claim(instant(5), instant(8))).toEqual([])
          const again = yield* claimOne(instant(6), instant(8))
          expect([again.delivery_id, again.attempt]).toEqual([first.delivery_id, 1])
          expect(again.lease).not.toBe(first.lease)
        })
      ))

    it.effect("claims running together get disjoint deliveries", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          yield* addEndpoint(org.id)
          yield* addEndpoint(org.id)
          for (let n = 0; n < 6; n++) yield* importEvent(org.id, n, instant(1))
          const claims = yield* Effect.all([claim(instant(2), instant(3), 5), claim(instant(2), instant(3), 5), claim(instant(2), instant(3), 5)], {
            concurrency: "unbounded"
          })
          const ids = claims.flat().map((delivery) => delivery.delivery_id)
          expect(ids).toHaveLength(12)
          expect(new Set(ids).size).toBe(12)
        })
      ))

    it.effect("recordAttempt with a lease that does not hold the delivery → false, nothing written", () =>
      run(
        Effect.gen(function* () {
          const { webhooks } = yield* Storage
          const org = yield* insertOrganization()
          const endpoint = yield* addEndpoint(org.id)
          yield* importEvent(org.id, 1, instant(1))
          const first = yield* claimOne(instant(1), instant(2))
          expect(yield* webhooks.recordAttempt(first.delivery_id, "another-lease", attemptRecord(instant(1)))).toBe(false)
          expect(yield* webhooks.recordAttempt("no-such-delivery", first.lease, attemptRecord(instant(1)))).toBe(false)
          const second = yield* claimOne(instant(3), instant(4))
          expect(second.attempt).toBe(1)
          expect(yield* webhooks.recordAttempt(first.delivery_id, first.lease, attemptRecord(instant(3)))).toBe(false)
          expect(yield* webhooks.listAttempts(org.id, endpoint.uuid, null, 10)).toEqual(Option.some([]))
          expect(yield* webhooks.recordAttempt(second.delivery_id, second.lease, attemptRecord(instant(3)))).toBe(true)
          expect(yield* webhooks.recordAttempt(second.delivery_id, second.lease, attemptRecord(instant(3)))).toBe(false)
        })
      ))

    it.effect("recordAttempt: pending again is due at next_attempt_at with the next attempt number; delivered and failed are never claimed again", () =>
      run(
        Effect.gen(function* () {
          const { webhooks } = yield* Storage
          const org = yield* insertOrganization()
          const endpoint = yield* addEndpoint(org.id)
          yield* importEvent(org.id, 1, instant(1))
          const first = yield* claimOne(instant(1), instant(2))
          const retry = attemptRecord(instant(1), { delivery_status: "pending", status: 503, response_body: null, next_attempt_at: instant(10) })
          expect(yield* webhooks.recordAttempt(first.delivery_id, first.lease, retry)).toBe(true)
          expect(yield* claim(instant(9), instant(20))).toEqual([])
          const second = yield* claimOne(instant(10), instant(11))
          expect([second.delivery_id, second.attempt]).toEqual([first.delivery_id, 2])
          const failed = attemptRecord(instant(10), { delivery_status: "failed", status: null, error: "timeout", duration_ms: 10_000 })
          expect(yield* webhooks.recordAttempt(second.delivery_id, second.lease, failed)).toBe(true)
          expect(yield* claim()).toEqual([])
          yield* importEvent(org.id, 2, instant(11))
          const third = yield* claimOne(instant(11), instant(12))
          expect(yield* webhooks.recordAttempt(third.delivery_id, third.lease, attemptRecord(instant(11)))).toBe(true)
          expect(yield* claim()).toEqual([])
          const attempts = Option.getOrThrow(yield* webhooks.listAttempts(org.id, endpoint.uuid, null, 10))
          expect(attempts).toEqual([
            {
              id: attempts[0]!.id, delivery_id: third.delivery_id, event_id: third.event.id, event_type: "contact.created", attempt: 1,
              status: 200, error: null, duration_ms: 35, attempted_at: instant(11), delivery_status: "delivered", next_attempt_at: null
            },
            {
              id: failed.attempt_id, delivery_id: first.delivery_id, event_id: first.event.id, event_type: "contact.created", attempt: 2,
              status: null, error: "timeout", duration_ms: 10_000, attempted_at: instant(10), delivery_status: "failed", next_attempt_at: null
            },
            {
              id: retry.attempt_id, delivery_id: first.delivery_id, event_id: first.event.id, event_type: "contact.created", attempt: 1,
              status: 503, error: null, duration_ms: 35, attempted_at: instant(1), delivery_status: "pending", next_attempt_at: instant(10)
            }
          ])
        })
      ))

    it.effect("listAttempts: newest first (attempted_at desc, id desc), strictly after the position, up to the limit; only the endpoint's", () =>
      run(
        Effect.gen(function* () {
          const { webhooks } = yield* Storage
          const org = yield* insertOrganization()
          const endpoint = yield* addEndpoint(org.id, { events: ["contact.created"] })
          const other = yield* addEndpoint(org.id, { events: ["contact.created"] })
          const attemptIds = sorted([fixtures.uuid(), fixtures.uuid(), fixtures.uuid(), fixtures.uuid()])
          const times = [instant(5), instant(3), instant(3), instant(4)]
          for (let n = 0; n < 4; n++) yield* importEvent(org.id, n, instant(1))
          const claimed = yield* claim(instant(1), instant(2))
          const mine = claimed.filter((delivery) => delivery.endpoint_uuid === endpoint.uuid)
          for (const [n, delivery] of mine.entries()) {
            yield* webhooks.recordAttempt(delivery.delivery_id, delivery.lease, attemptRecord(times[n]!, { attempt_id: attemptIds[n]! }))
          }
          for (const delivery of claimed.filter((delivery) => delivery.endpoint_uuid === other.uuid)) {
            yield* webhooks.recordAttempt(delivery.delivery_id, delivery.lease, attemptRecord(instant(6)))
          }
          const order = [attemptIds[0], attemptIds[3], attemptIds[2], attemptIds[1]]
          const page = (after: { attempted_at: string; id: string } | null, limit: number) =>
            Effect.map(webhooks.listAttempts(org.id, endpoint.uuid, after, limit), Option.map((attempts) => attempts.map((attempt) => attempt.id)))
          expect(yield* page(null, 10)).toEqual(Option.some(order))
          expect(yield* page(null, 2)).toEqual(Option.some(order.slice(0, 2)))
          expect(yield* page({ attempted_at: instant(4), id: attemptIds[3]! }, 10)).toEqual(Option.some(order.slice(2)))
          expect(yield* page({ attempted_at: instant(3), id: attemptIds[2]! }, 10)).toEqual(Option.some(order.slice(3)))
          expect(yield* page({ attempted_at: instant(3), id: attemptIds[1]! }, 10)).toEqual(Option.some([]))
          expect(yield* webhooks.listAttempts(org.id, fixtures.uuid() as WebhookEndpointId, null, 10)).toEqual(Option.none())
        })
      ))

    it.effect("retryDelivery makes a failed or delivered delivery due now, attempt count kept; false for another endpoint or an unknown one", () =>
      run(
        Effect.gen(function* () {
          const { webhooks } = yield* Storage
          const org = yield* insertOrganization()
          const endpoint = yield* addEndpoint(org.id)
          const other = yield* addEndpoint(org.id, { events: ["chat.updated"] })
          yield* importEvent(org.id, 1, instant(1))
          const first = yield* claimOne(instant(1), instant(2))
          yield* webhooks.recordAttempt(first.delivery_id, first.lease, attemptRecord(instant(1), { delivery_status: "failed", status: 410 }))
          expect(yield* webhooks.retryDelivery(org.id, other.uuid, first.delivery_id, instant(5))).toBe(false)
          expect(yield* webhooks.retryDelivery(org.id, endpoint.uuid, "no-such-delivery", instant(5))).toBe(false)
          expect(yield* claim()).toEqual([])
          expect(yield* webhooks.retryDelivery(org.id, endpoint.uuid, first.delivery_id, instant(5))).toBe(true)
          expect(yield* claim(instant(4), instant(6))).toEqual([])
          const again = yield* claimOne(instant(5), instant(6))
          expect([again.delivery_id, again.attempt, again.event]).toEqual([first.delivery_id, 2, first.event])
          yield* webhooks.recordAttempt(again.delivery_id, again.lease, attemptRecord(instant(5)))
          expect(yield* webhooks.retryDelivery(org.id, endpoint.uuid, first.delivery_id, instant(7))).toBe(true)
          const third = yield* claimOne(instant(7), instant(9))
          expect(third.attempt).toBe(3)
          // A retry of a delivery being sent keeps its lease: nobody else claims it meanwhile.
          expect(yield* webhooks.retryDelivery(org.id, endpoint.uuid, first.delivery_id, instant(8))).toBe(true)
          expect(yield* claim(instant(8), instant(10))).toEqual([])
          expect(yield* webhooks.recordAttempt(third.delivery_id, third.lease, attemptRecord(instant(8)))).toBe(true)
        })
      ))

    it.effect("retryDelivery is false and changes nothing while the endpoint is disabled; true once it is enabled again", () =>
      run(
        Effect.gen(function* () {
          const { webhooks } = yield* Storage
          const org = yield* insertOrganization()
          const endpoint = yield* addEndpoint(org.id)
          yield* importEvent(org.id, 1, instant(1))
          const first = yield* claimOne(instant(1), instant(2))
          yield* webhooks.recordAttempt(first.delivery_id, first.lease, attemptRecord(instant(1), { delivery_status: "failed", status: 410 }))
          yield* webhooks.updateEndpoint(org.id, endpoint.uuid, { enabled: false }, instant(2))
          expect(yield* webhooks.retryDelivery(org.id, endpoint.uuid, first.delivery_id, instant(3))).toBe(false)
          expect(yield* claim(instant(3), instant(4))).toEqual([])
          yield* webhooks.updateEndpoint(org.id, endpoint.uuid, { enabled: true }, instant(4))
          expect(yield* claim(instant(4), instant(5))).toEqual([])
          expect(yield* webhooks.retryDelivery(org.id, endpoint.uuid, first.delivery_id, instant(5))).toBe(true)
          expect((yield* claimOne(instant(5), instant(6))).delivery_id).toBe(first.delivery_id)
        })
      ))

    it.effect("pruneDeliveries deletes the deliveries created before the instant with their attempts; returns how many", () =>
      run(
        Effect.gen(function* () {
          const { webhooks } = yield* Storage
          const org = yield* insertOrganization()
          const endpoint = yield* addEndpoint(org.id)
          yield* importEvent(org.id, 1, instant(1))
          yield* importEvent(org.id, 2, instant(2))
          yield* importEvent(org.id, 3, instant(3))
          for (const delivery of yield* claim(instant(3), instant(4))) {
            yield* webhooks.recordAttempt(delivery.delivery_id, delivery.lease, attemptRecord(delivery.event.created_at, {
              delivery_status: "pending", status: 500, next_attempt_at: instant(5)
            }))
          }
          expect(yield* webhooks.pruneDeliveries(instant(3))).toBe(2)
          expect(yield* webhooks.pruneDeliveries(instant(3))).toBe(0)
          const attempts = Option.getOrThrow(yield* webhooks.listAttempts(org.id, endpoint.uuid, null, 10))
          expect(attempts.map((attempt) => attempt.attempted_at)).toEqual([instant(3)])
          expect((yield* outbox()).map((delivery) => delivery.event.created_at)).toEqual([instant(3)])
        })
      ))
  })
}

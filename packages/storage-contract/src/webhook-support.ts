import { expect } from "@effect/vitest"
import { Effect } from "effect"
import {
  MAX_WEBHOOK_ENDPOINTS_PER_ORGANIZATION,
  type OrganizationId,
  Storage,
  type WebhookEndpoint,
  type WebhookEndpointId,
  type WebhookEventType
} from "@switchboard/core"
import * as fixtures from "./fixtures.js"

// Effectful helpers of the webhook endpoints and of reading the events the write methods
// put in the webhook outbox (not exported from the package).

const { instant } = fixtures

/** Far after every write of these tests: every delivery is due then. */
export const LATER = instant(100_000)
/** The lease end of claims at {@link LATER}. */
export const LATER_LEASE = instant(100_001)

/** An endpoint record created at `instant(0)`, subscribed to every type; `overrides` replace fields. */
export const endpointRecord = (overrides: Partial<WebhookEndpoint> = {}): WebhookEndpoint => ({
  uuid: fixtures.uuid() as WebhookEndpointId,
  url: "https://example.com/hooks",
  events: null,
  description: null,
  enabled: true,
  created_at: instant(0),
  updated_at: instant(0),
  ...overrides
})

/** Inserts an endpoint (limit 10) and expects it inserted; returns it. */
export const addEndpoint = (organizationId: OrganizationId, overrides: Partial<WebhookEndpoint> = {}, secretSealed = "sealed-1") =>
  Effect.gen(function* () {
    const { webhooks } = yield* Storage
    const endpoint = endpointRecord(overrides)
    const outcome = yield* webhooks.insertEndpoint(organizationId, { endpoint, secret_sealed: secretSealed }, MAX_WEBHOOK_ENDPOINTS_PER_ORGANIZATION)
    if (outcome._tag !== "Inserted") return expect.fail(`expected Inserted, got ${outcome._tag}`)
    expect(outcome.endpoint).toEqual(endpoint)
    return endpoint
  })

/** Claims up to `limit` deliveries due at `now`, leased until `leaseUntil`. */
export const claim = (now: string = LATER, leaseUntil: string = LATER_LEASE, limit = 100) =>
  Effect.flatMap(Storage, ({ webhooks }) => webhooks.claimDue(now, leaseUntil, limit))

/** What the outbox holds, as claimed at {@link LATER}: type, endpoint, event; sorted by endpoint then event id. */
export const outbox = () =>
  Effect.map(claim(), (claimed) =>
    claimed
      .map((delivery) => ({ type: delivery.event.type, endpoint: delivery.endpoint_uuid, event: delivery.event }))
      .sort((a, b) => (a.endpoint + a.event.id < b.endpoint + b.event.id ? -1 : 1))
  )

/** Expects the outbox to hold exactly one event, for `endpoint`, of `type` at `now`; returns its data. */
export const onlyEvent = (endpoint: WebhookEndpoint, type: WebhookEventType, now: string) =>
  Effect.gen(function* () {
    const events = yield* outbox()
    expect(events.map(({ endpoint, type, event }) => [endpoint, type, event.type, event.created_at])).toEqual([[endpoint.uuid, type, type, now]])
    return events[0]!.event.data
  })

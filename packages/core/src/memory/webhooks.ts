import { randomUUID } from "node:crypto"
import { Effect, Option } from "effect"
import type { OrganizationId } from "../model/organizations.js"
import {
  applyEndpointPatch,
  type WebhookDeliveryAttempt,
  type WebhookDeliveryStatus,
  type WebhookEndpoint,
  type WebhookEndpointId,
  type WebhookEvent,
  type WebhookEventType
} from "../model/webhooks.js"
import type { ClaimedDelivery, StoredWebhookEndpoint, WebhookRepository } from "../storage/WebhookRepository.js"
import type { MemoryState } from "./state.js"

/** An event of the outbox as the memory store keeps it. */
interface EventRow extends WebhookEvent {
  readonly organization_id: OrganizationId
}

/** A delivery of one event to one endpoint, as the memory store keeps it. */
interface DeliveryRow {
  readonly id: string
  readonly organization_id: OrganizationId
  readonly endpoint_uuid: WebhookEndpointId
  readonly event_id: string
  readonly status: WebhookDeliveryStatus
  /** How many attempts were recorded. */
  readonly attempts: number
  readonly next_attempt_at: string | null
  readonly lease: string | null
  readonly lease_until: string | null
  readonly created_at: string
}

/** An attempt as the memory store keeps it: the record, its endpoint and response body. */
interface AttemptRow extends WebhookDeliveryAttempt {
  readonly endpoint_uuid: WebhookEndpointId
  readonly response_body: string | null
}

/** What the memory store holds for outgoing webhooks, beside the {@link MemoryState}. */
interface WebhookState {
  /** Organization → its endpoints by uuid: the outbox reads only the organization's own. */
  readonly endpoints: Map<OrganizationId, Map<WebhookEndpointId, StoredWebhookEndpoint>>
  readonly events: Map<string, EventRow>
  readonly deliveries: Map<string, DeliveryRow>
  readonly attempts: Map<string, AttemptRow>
}

const webhookStates = new WeakMap<MemoryState, WebhookState>()

/** The webhook state that belongs to one memory store, created on first use. */
const webhookStateOf = (state: MemoryState): WebhookState => {
  let webhooks = webhookStates.get(state)
  if (webhooks === undefined) {
    webhooks = { endpoints: new Map(), events: new Map(), deliveries: new Map(), attempts: new Map() }
    webhookStates.set(state, webhooks)
  }
  return webhooks
}

/**
 * The outbox of the memory store (the rules at the top of `WebhookRepository`): when the
 * organization has enabled endpoints subscribed to `type`, stores a new event (`data` from
 * `data()`, copied) and one `pending` delivery due at `now` for each of them; else writes
 * nothing and never calls `data`. Called by the write methods inside their synchronous
 * (so atomic) bodies.
 */
export const recordWebhookEvent = (
  state: MemoryState,
  organizationId: OrganizationId,
  type: WebhookEventType,
  now: string,
  data: () => unknown
): void => {
  const webhooks = webhookStateOf(state)
  const endpoints = webhooks.endpoints.get(organizationId)
  if (endpoints === undefined) return
  const subscribed = [...endpoints.values()].filter(
    ({ endpoint }) => endpoint.enabled && (endpoint.events === null || endpoint.events.includes(type))
  )
  if (subscribed.length === 0) return
  const event: EventRow = { organization_id: organizationId, id: randomUUID(), type, created_at: now, data: structuredClone(data()) }
  webhooks.events.set(event.id, event)
  for (const { endpoint } of subscribed) {
    const id = randomUUID()
    webhooks.deliveries.set(id, {
      id,
      organization_id: organizationId,
      endpoint_uuid: endpoint.uuid,
      event_id: event.id,
      status: "pending",
      attempts: 0,
      next_attempt_at: now,
      lease: null,
      lease_until: null,
      created_at: now
    })
  }
}

const copyEndpoint = (endpoint: WebhookEndpoint): WebhookEndpoint => ({
  ...endpoint,
  events: endpoint.events === null ? null : [...endpoint.events]
})

/** Newest first (`created_at desc, uuid desc`). */
const newestEndpointFirst = (a: WebhookEndpoint, b: WebhookEndpoint): number =>
  a.created_at === b.created_at ? (a.uuid < b.uuid ? 1 : -1) : a.created_at < b.created_at ? 1 : -1

/** Newest first (`attempted_at desc, id desc`). */
const newestAttemptFirst = (a: { attempted_at: string; id: string }, b: { attempted_at: string; id: string }): number =>
  a.attempted_at === b.attempted_at ? (a.id < b.id ? 1 : a.id > b.id ? -1 : 0) : a.attempted_at < b.attempted_at ? 1 : -1

/** Oldest due first (`next_attempt_at`, then `created_at`, then id). */
const oldestDueFirst = (a: DeliveryRow, b: DeliveryRow): number => {
  const [x, y] = [[a.next_attempt_at ?? "", a.created_at, a.id], [b.next_attempt_at ?? "", b.created_at, b.id]]
  for (let index = 0; index < x.length; index++) {
    if (x[index]! < y[index]!) return -1
    if (x[index]! > y[index]!) return 1
  }
  return 0
}

const attemptRecord = ({ endpoint_uuid: _, response_body: __, ...attempt }: AttemptRow): WebhookDeliveryAttempt => attempt

/**
 * The webhooks repository of the memory store. Every method is synchronous, so each is
 * atomic: two claims never get the same delivery.
 */
export const webhookRepository = (state: MemoryState): WebhookRepository => {
  const webhooks = webhookStateOf(state)
  const endpointsOf = (organizationId: OrganizationId) => {
    let endpoints = webhooks.endpoints.get(organizationId)
    if (endpoints === undefined) {
      endpoints = new Map()
      webhooks.endpoints.set(organizationId, endpoints)
    }
    return endpoints
  }
  const deleteUnreferencedEvents = (eventIds: Iterable<string>) => {
    const referenced = new Set([...webhooks.deliveries.values()].map((delivery) => delivery.event_id))
    for (const id of eventIds) if (!referenced.has(id)) webhooks.events.delete(id)
  }
  const deleteDeliveries = (deliveries: ReadonlyArray<DeliveryRow>) => {
    const ids = new Set(deliveries.map((delivery) => delivery.id))
    for (const id of ids) webhooks.deliveries.delete(id)
    for (const [id, attempt] of webhooks.attempts) if (ids.has(attempt.delivery_id)) webhooks.attempts.delete(id)
    deleteUnreferencedEvents(deliveries.map((delivery) => delivery.event_id))
  }

  return {
    insertEndpoint: (organizationId, stored, limit) =>
      Effect.sync(() => {
        const endpoints = endpointsOf(organizationId)
        if (endpoints.size >= limit) return { _tag: "LimitReached", limit } as const
        const endpoint = copyEndpoint(stored.endpoint)
        endpoints.set(endpoint.uuid, {
          organization_id: organizationId,
          endpoint,
          secret_sealed: stored.secret_sealed,
          previous_secret_sealed: null,
          previous_secret_expires_at: null
        })
        return { _tag: "Inserted", endpoint: copyEndpoint(endpoint) } as const
      }),
    listEndpoints: (organizationId) =>
      Effect.sync(() =>
        [...(webhooks.endpoints.get(organizationId)?.values() ?? [])].map(({ endpoint }) => copyEndpoint(endpoint)).sort(newestEndpointFirst)
      ),
    findEndpoint: (organizationId, id) =>
      Effect.sync(() =>
        Option.map(Option.fromNullable(webhooks.endpoints.get(organizationId)?.get(id)), (stored) => ({
          ...stored,
          endpoint: copyEndpoint(stored.endpoint)
        }))
      ),
    updateEndpoint: (organizationId, id, patch, now) =>
      Effect.sync(() => {
        const stored = webhooks.endpoints.get(organizationId)?.get(id)
        if (stored === undefined) return Option.none()
        const current = stored.endpoint
        const { changed, endpoint } = applyEndpointPatch(current, patch, now)
        if (!changed) return Option.some(copyEndpoint(current))
        endpointsOf(organizationId).set(id, { ...stored, endpoint })
        if (current.enabled && !endpoint.enabled) {
          for (const delivery of webhooks.deliveries.values()) {
            if (delivery.endpoint_uuid === id && delivery.organization_id === organizationId && delivery.status === "pending") {
              webhooks.deliveries.set(delivery.id, { ...delivery, status: "cancelled", next_attempt_at: null, lease: null, lease_until: null })
            }
          }
        }
        return Option.some(copyEndpoint(endpoint))
      }),
    rotateSecret: (organizationId, id, rotation, now) =>
      Effect.sync(() => {
        const stored = webhooks.endpoints.get(organizationId)?.get(id)
        if (stored === undefined) return { _tag: "NotFound" } as const
        if (stored.secret_sealed !== rotation.expected_secret_sealed) return { _tag: "SecretChanged" } as const
        const endpoint = { ...stored.endpoint, updated_at: now }
        endpointsOf(organizationId).set(id, {
          ...stored,
          endpoint,
          secret_sealed: rotation.secret_sealed,
          previous_secret_sealed: rotation.previous_secret_sealed,
          previous_secret_expires_at: rotation.previous_secret_expires_at
        })
        return { _tag: "Rotated", endpoint: copyEndpoint(endpoint) } as const
      }),
    listSealedSecrets: (after, limit) =>
      Effect.sync(() =>
        [...webhooks.endpoints.values()]
          .flatMap((endpoints) => [...endpoints.values()])
          .filter((stored) => after === null || stored.endpoint.uuid > after)
          .sort((a, b) => (a.endpoint.uuid < b.endpoint.uuid ? -1 : a.endpoint.uuid > b.endpoint.uuid ? 1 : 0))
          .slice(0, Math.max(0, limit))
          .map((stored) => ({
            uuid: stored.endpoint.uuid,
            secret_sealed: stored.secret_sealed,
            previous_secret_sealed: stored.previous_secret_sealed
          }))
      ),
    resealSecret: (id, field, expected, sealed) =>
      Effect.sync(() => {
        for (const [organizationId, endpoints] of webhooks.endpoints) {
          const stored = endpoints.get(id)
          if (stored === undefined) continue
          const column = field === "secret" ? "secret_sealed" : "previous_secret_sealed"
          if (stored[column] !== expected) return false
          endpointsOf(organizationId).set(id, { ...stored, [column]: sealed })
          return true
        }
        return false
      }),
    deleteEndpoint: (organizationId, id) =>
      Effect.sync(() => {
        const endpoints = webhooks.endpoints.get(organizationId)
        if (endpoints?.get(id) === undefined) return false
        endpoints.delete(id)
        deleteDeliveries(
          [...webhooks.deliveries.values()].filter((delivery) => delivery.organization_id === organizationId && delivery.endpoint_uuid === id)
        )
        return true
      }),
    listAttempts: (organizationId, id, after, limit) =>
      Effect.sync(() => {
        if (webhooks.endpoints.get(organizationId)?.get(id) === undefined) return Option.none()
        const attempts = [...webhooks.attempts.values()]
          .filter((attempt) => attempt.endpoint_uuid === id && (after === null || newestAttemptFirst(attempt, after) > 0))
          .sort(newestAttemptFirst)
        return Option.some(attempts.slice(0, limit).map(attemptRecord))
      }),
    claimDue: (now, leaseUntil, limit) =>
      Effect.sync(() => {
        const due = [...webhooks.deliveries.values()]
          .filter(
            (delivery) =>
              delivery.status === "pending" &&
              delivery.next_attempt_at !== null &&
              delivery.next_attempt_at <= now &&
              (delivery.lease_until === null || delivery.lease_until < now)
          )
          .sort(oldestDueFirst)
          .slice(0, Math.max(0, limit))
        const claimed: Array<ClaimedDelivery> = []
        for (const delivery of due) {
          const stored = webhooks.endpoints.get(delivery.organization_id)?.get(delivery.endpoint_uuid)
          const event = webhooks.events.get(delivery.event_id)
          if (stored === undefined || event === undefined) continue
          const lease = randomUUID()
          webhooks.deliveries.set(delivery.id, { ...delivery, lease, lease_until: leaseUntil })
          claimed.push({
            delivery_id: delivery.id,
            lease,
            organization_id: delivery.organization_id,
            endpoint_uuid: delivery.endpoint_uuid,
            url: stored.endpoint.url,
            secret_sealed: stored.secret_sealed,
            previous_secret_sealed: stored.previous_secret_sealed,
            previous_secret_expires_at: stored.previous_secret_expires_at,
            event: { id: event.id, type: event.type, created_at: event.created_at, data: structuredClone(event.data) },
            attempt: delivery.attempts + 1
          })
        }
        return claimed
      }),
    recordAttempt: (deliveryId, lease, attempt) =>
      Effect.sync(() => {
        const delivery = webhooks.deliveries.get(deliveryId)
        if (delivery === undefined || delivery.status !== "pending" || delivery.lease !== lease) return false
        const event = webhooks.events.get(delivery.event_id)
        if (event === undefined) return false
        const next_attempt_at = attempt.delivery_status === "pending" ? attempt.next_attempt_at : null
        webhooks.deliveries.set(deliveryId, {
          ...delivery,
          status: attempt.delivery_status,
          attempts: delivery.attempts + 1,
          next_attempt_at,
          lease: null,
          lease_until: null
        })
        webhooks.attempts.set(attempt.attempt_id, {
          id: attempt.attempt_id,
          delivery_id: deliveryId,
          endpoint_uuid: delivery.endpoint_uuid,
          event_id: event.id,
          event_type: event.type,
          attempt: delivery.attempts + 1,
          status: attempt.status,
          error: attempt.error,
          duration_ms: attempt.duration_ms,
          response_body: attempt.response_body,
          attempted_at: attempt.attempted_at,
          delivery_status: attempt.delivery_status,
          next_attempt_at
        })
        return true
      }),
    retryDelivery: (organizationId, endpointId, deliveryId, now) =>
      Effect.sync(() => {
        const delivery = webhooks.deliveries.get(deliveryId)
        if (delivery === undefined || delivery.organization_id !== organizationId || delivery.endpoint_uuid !== endpointId) return false
        if (webhooks.endpoints.get(organizationId)?.get(endpointId)?.endpoint.enabled !== true) return false
        // A pending delivery keeps its lease: its holder is sending it right now.
        const leased = delivery.status === "pending" && delivery.lease !== null
        webhooks.deliveries.set(deliveryId, {
          ...delivery,
          status: "pending",
          next_attempt_at: now,
          lease: leased ? delivery.lease : null,
          lease_until: leased ? delivery.lease_until : null
        })
        return true
      }),
    pruneDeliveries: (before) =>
      Effect.sync(() => {
        const old = [...webhooks.deliveries.values()].filter((delivery) => delivery.created_at < before)
        deleteDeliveries(old)
        return old.length
      })
  }
}

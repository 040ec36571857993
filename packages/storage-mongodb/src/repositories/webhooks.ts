import { randomUUID } from "node:crypto"
import { Option } from "effect"
import { applyEndpointPatch } from "@switchboard/core"
import type {
  ClaimedDelivery,
  OrganizationId,
  WebhookDeliveryAttempt,
  WebhookEndpoint,
  WebhookEndpointId,
  WebhookEndpointInsertOutcome,
  WebhookEventType,
  WebhookSecretRotationOutcome,
  WebhookRepository
} from "@switchboard/core"
import type {
  ContactDocument,
  PendingWebhookEvent,
  WebhookAttemptDocument,
  WebhookDeliveryDocument,
  WebhookEndpointDocument
} from "../internal/documents.js"
import { attempt } from "../internal/driver.js"
import { anyOf, eq, literal, ofOrganization, owned } from "../internal/queries.js"
import { chatRecords } from "../internal/records.js"
import { type Collections, HAS_PENDING_EVENTS } from "../internal/schema.js"

/** How many documents of each collection one relay run reads (`claimDue` runs one first). */
export const RELAY_BATCH = 100

/** How many times a compare-and-set write is retried when another write came first. */
const CAS_ATTEMPTS = 10

/**
 * The uuids of the organization's enabled endpoints subscribed to a type, as read by
 * {@link subscribersOf} before a write.
 */
export type Subscribers = (type: WebhookEventType) => ReadonlyArray<string>

/**
 * The organization's enabled endpoints (one query on the index `webhook_endpoints_enabled`,
 * made by every write that may record an event), as {@link Subscribers}.
 */
export const subscribersOf = async (collections: Collections, organizationId: string): Promise<Subscribers> => {
  const found = await collections.webhookEndpoints
    .find({ ...ofOrganization(organizationId), enabled: eq(true) }, { projection: { events: 1 } })
    .toArray()
  return (type) => found.filter((endpoint) => endpoint.events === null || endpoint.events.includes(type)).map((endpoint) => endpoint._id)
}

/**
 * A new event to embed in the changed document (`data` the record, stored as JSON text;
 * `null` only for the `chat.updated` marker of `appendMessage`).
 */
export const pendingEvent = (
  type: WebhookEventType,
  now: string,
  endpoints: ReadonlyArray<string>,
  data: unknown
): PendingWebhookEvent => ({
  id: randomUUID(),
  type,
  created_at: now,
  data: data === null ? null : JSON.stringify(data),
  endpoints: [...endpoints]
})

/**
 * The first stage of `appendMessage`'s chat pipeline when the organization has endpoints
 * for `chat.updated`: appends `marker` (a `chat.updated` event without data) to the
 * contact's `pending_events` when the chat is about to be reopened, in the same atomic
 * update. It comes before the stages that change the status, so it reads the status as it
 * was. The caller then fills the marker's data with the chat record it returns.
 */
export const reopenMarkerStage = (
  reopen: { readonly from: ReadonlyArray<string>; readonly to: string },
  marker: PendingWebhookEvent
) => {
  const reopening = {
    $and: [{ $in: ["$chat.status", literal([...reopen.from])] }, { $ne: ["$chat.status", literal(reopen.to)] }]
  }
  const current = { $ifNull: ["$pending_events", literal([])] }
  return { $set: { pending_events: { $cond: [reopening, { $concatArrays: [current, literal([marker])] }, current] } } }
}

/** Sets the data of the marker event `eventId` of a contact (see {@link reopenMarkerStage}). */
export const fillMarker = (collections: Collections, contactId: string, eventId: string, data: unknown) =>
  collections.contacts.updateOne(
    { _id: eq(contactId), "pending_events.id": eq(eventId) },
    { $set: { "pending_events.$.data": JSON.stringify(data) } }
  )

/** The collections whose documents carry `pending_events`. */
const SOURCES = ["contacts", "messages", "templates", "channels", "broadcasts"] as const

/**
 * The relay: moves up to {@link RELAY_BATCH} documents' worth of embedded events from each
 * of contacts, messages, templates, channels and broadcasts to `webhook_events` (upserted, `_id` = the event id)
 * and `webhook_deliveries` (upserted, `_id` = `<event id>:<endpoint uuid>`, one per endpoint
 * of the event that still exists and has been enabled since the event's `created_at`),
 * then `$pull`s each event from its
 * document. Every step is idempotent, so a crash or two relays running together at worst
 * repeat one; an event is pulled only after it was moved. A `chat.updated` marker whose
 * data never came gets the chat as it is now. Returns how many events it moved.
 */
export const relayEvents = async (collections: Collections): Promise<number> => {
  let moved = 0
  for (const source of SOURCES) {
    const collection = collections[source] as unknown as Collections["contacts"]
    const documents = await collection.find(HAS_PENDING_EVENTS, { limit: RELAY_BATCH }).toArray()
    for (const document of documents) {
      for (const event of document.pending_events ?? []) {
        const data = event.data ?? (await currentChat(collections, document))
        if (data !== null) {
          await moveEvent(collections, document.organization_id, event, data)
          moved++
        }
        await collection.updateOne({ _id: eq(document._id) }, { $pull: { pending_events: { id: eq(event.id) } } })
      }
    }
  }
  return moved
}

/** The chat record of a contact document as it is now, as JSON text (`null` without a chat). */
const currentChat = async (collections: Collections, document: ContactDocument): Promise<string | null> => {
  if (document.chat === undefined) return null
  const [chat] = await chatRecords(collections, document.organization_id, [document])
  return chat === undefined ? null : JSON.stringify(chat)
}

const moveEvent = async (collections: Collections, organizationId: string, event: PendingWebhookEvent, data: string) => {
  await collections.webhookEvents.updateOne(
    { _id: eq(event.id) },
    { $setOnInsert: { organization_id: organizationId, type: event.type, data, created_at: event.created_at } },
    { upsert: true }
  )
  if (event.endpoints.length === 0) return
  const enabled = await collections.webhookEndpoints
    .find(
      { _id: anyOf(event.endpoints), ...ofOrganization(organizationId), enabled: eq(true), enabled_since: { $lte: event.created_at } },
      { projection: { _id: 1 } }
    )
    .toArray()
  for (const endpoint of enabled) {
    const delivery: Omit<WebhookDeliveryDocument, "_id"> = {
      organization_id: organizationId,
      endpoint_uuid: endpoint._id,
      event_id: event.id,
      event_type: event.type,
      status: "pending",
      attempts: 0,
      next_attempt_at: event.created_at,
      lease: null,
      lease_until: null,
      created_at: event.created_at
    }
    await collections.webhookDeliveries.updateOne({ _id: eq(`${event.id}:${endpoint._id}`) }, { $setOnInsert: delivery }, { upsert: true })
  }
}

const endpointRecord = (d: WebhookEndpointDocument): WebhookEndpoint => ({
  uuid: d._id as WebhookEndpointId,
  url: d.url,
  events: d.events === null ? null : ([...d.events] as Array<WebhookEventType>),
  description: d.description,
  enabled: d.enabled,
  created_at: d.created_at,
  updated_at: d.updated_at
})

const attemptRecord = (d: WebhookAttemptDocument): WebhookDeliveryAttempt => ({
  id: d._id,
  delivery_id: d.delivery_id,
  event_id: d.event_id,
  event_type: d.event_type as WebhookEventType,
  attempt: d.attempt,
  status: d.status,
  error: d.error,
  duration_ms: d.duration_ms,
  attempted_at: d.attempted_at,
  delivery_status: d.delivery_status,
  next_attempt_at: d.next_attempt_at
})

/** What a cancelled delivery holds. */
const CANCELLED = { status: "cancelled", next_attempt_at: null, lease: null, lease_until: null } as const

/**
 * `Storage.webhooks` on MongoDB, without multi-document transactions (docs/storage.md
 * "Outgoing webhook events"):
 * - THE OUTBOX. A write that records an event first reads the organization's enabled
 *   endpoints ({@link subscribersOf}, one indexed query) and, when some are subscribed,
 *   embeds the event in the document it changes, in the same single-document write, as
 *   `pending_events: [{id, type, created_at, data, endpoints}]` (an import: each created
 *   contact carries its own). `claimDue` first runs the relay ({@link relayEvents}), which
 *   moves them to `webhook_events` and `webhook_deliveries` and pulls them.
 * - CLAIMS. `claimDue` leases each delivery with one `findOneAndUpdate` (pending, due, not
 *   leased or the lease ended; sorted oldest due first) setting a new lease token: of two
 *   processes, one gets it. A delivery whose endpoint was deleted or disabled meanwhile is
 *   cancelled instead. `recordAttempt` is one `findOneAndUpdate` conditional on the lease
 *   token and `pending`, then inserts the attempt (a crash between loses that attempt's
 *   record, not the delivery's state).
 * - ENDPOINTS. `insertEndpoint` inserts, then counts: when the organization has more than
 *   `limit`, the endpoints past the limit in (created_at, _id) order delete themselves, so
 *   of concurrent inserts exactly the excess is refused. Disabling an endpoint cancels its
 *   pending deliveries with a second write (and claims cancel any left by a crash);
 *   deleting it deletes its deliveries and attempts after it.
 *
 * @category repositories
 */
export const webhookRepository = (collections: Collections): WebhookRepository => {
  const { webhookAttempts: attempts, webhookDeliveries: deliveries, webhookEndpoints: endpoints, webhookEvents: events } = collections
  const deleteUnreferencedEvents = async (eventIds: ReadonlyArray<string>) => {
    if (eventIds.length === 0) return
    const referenced = await deliveries.find({ event_id: anyOf(eventIds) }, { projection: { event_id: 1 } }).toArray()
    const kept = new Set(referenced.map((d) => d.event_id))
    const unreferenced = eventIds.filter((id) => !kept.has(id))
    if (unreferenced.length > 0) await events.deleteMany({ _id: anyOf(unreferenced) })
  }

  return {
    insertEndpoint: (organizationId, { endpoint, secret_sealed }, limit) =>
      attempt("webhooks.insertEndpoint", async (): Promise<WebhookEndpointInsertOutcome> => {
        if ((await endpoints.countDocuments(ofOrganization(organizationId))) >= limit) return { _tag: "LimitReached", limit }
        await endpoints.insertOne({
          _id: endpoint.uuid,
          organization_id: organizationId,
          url: endpoint.url,
          events: endpoint.events === null ? null : [...endpoint.events],
          description: endpoint.description,
          enabled: endpoint.enabled,
          enabled_since: endpoint.enabled ? endpoint.created_at : null,
          secret_sealed,
          created_at: endpoint.created_at,
          updated_at: endpoint.updated_at
        })
        const order = await endpoints
          .find(ofOrganization(organizationId), { sort: { created_at: 1, _id: 1 }, projection: { _id: 1 } })
          .toArray()
        if (order.findIndex((d) => d._id === endpoint.uuid) >= limit) {
          await endpoints.deleteOne(owned(organizationId, endpoint.uuid))
          return { _tag: "LimitReached", limit }
        }
        return { _tag: "Inserted", endpoint }
      }),
    listEndpoints: (organizationId) =>
      attempt("webhooks.listEndpoints", async () =>
        (await endpoints.find(ofOrganization(organizationId), { sort: { created_at: -1, _id: -1 } }).toArray()).map(endpointRecord)
      ),
    findEndpoint: (organizationId, id) =>
      attempt("webhooks.findEndpoint", async () =>
        Option.map(Option.fromNullable(await endpoints.findOne(owned(organizationId, id))), (d) => ({
          organization_id: organizationId,
          endpoint: endpointRecord(d),
          secret_sealed: d.secret_sealed,
          previous_secret_sealed: d.previous_secret_sealed ?? null,
          previous_secret_expires_at: d.previous_secret_expires_at ?? null
        }))
      ),
    updateEndpoint: (organizationId, id, patch, now) =>
      attempt("webhooks.updateEndpoint", async () => {
        const document = await endpoints.findOne(owned(organizationId, id))
        if (document === null) return Option.none()
        const current = endpointRecord(document)
        const { changed, endpoint: next } = applyEndpointPatch(current, patch, now)
        if (!changed) return Option.some(current)
        const result = await endpoints.updateOne(owned(organizationId, id), {
          $set: {
            url: next.url,
            events: next.events,
            description: next.description,
            enabled: next.enabled,
            ...(next.enabled === current.enabled ? {} : { enabled_since: next.enabled ? now : null }),
            updated_at: now
          }
        })
        if (result.matchedCount === 0) return Option.none()
        if (current.enabled && !next.enabled) {
          await deliveries.updateMany({ endpoint_uuid: eq(id), status: eq("pending") }, { $set: CANCELLED })
        }
        return Option.some(next)
      }),
    rotateSecret: (organizationId, id, rotation, now) =>
      attempt("webhooks.rotateSecret", async (): Promise<WebhookSecretRotationOutcome> => {
        // A compare-and-set on the sealed secret the rotation read: one document update.
        const document = await endpoints.findOneAndUpdate(
          { ...owned(organizationId, id), secret_sealed: eq(rotation.expected_secret_sealed) },
          {
            $set: {
              secret_sealed: rotation.secret_sealed,
              previous_secret_sealed: rotation.previous_secret_sealed,
              previous_secret_expires_at: rotation.previous_secret_expires_at,
              updated_at: now
            }
          },
          { returnDocument: "after" }
        )
        if (document !== null) return { _tag: "Rotated", endpoint: endpointRecord(document) }
        return (await endpoints.findOne(owned(organizationId, id), { projection: { _id: 1 } })) === null
          ? { _tag: "NotFound" }
          : { _tag: "SecretChanged" }
      }),
    listSealedSecrets: (after, limit) =>
      attempt("webhooks.listSealedSecrets", async () =>
        (
          await endpoints
            .find(after === null ? {} : { _id: { $gt: after } }, {
              sort: { _id: 1 },
              limit,
              projection: { _id: 1, secret_sealed: 1, previous_secret_sealed: 1 }
            })
            .toArray()
        ).map((d) => ({
          uuid: d._id as WebhookEndpointId,
          secret_sealed: d.secret_sealed,
          previous_secret_sealed: d.previous_secret_sealed ?? null
        }))
      ),
    resealSecret: (id, field, expected, sealed) =>
      attempt("webhooks.resealSecret", async () => {
        const column = field === "secret" ? "secret_sealed" : "previous_secret_sealed"
        const { modifiedCount } = await endpoints.updateOne({ _id: eq(id), [column]: eq(expected) }, { $set: { [column]: sealed } })
        return modifiedCount > 0
      }),
    deleteEndpoint: (organizationId, id) =>
      attempt("webhooks.deleteEndpoint", async () => {
        const { deletedCount } = await endpoints.deleteOne(owned(organizationId, id))
        if (deletedCount === 0) return false
        const eventIds = (await deliveries.find({ endpoint_uuid: eq(id) }, { projection: { event_id: 1 } }).toArray()).map((d) => d.event_id)
        await attempts.deleteMany({ endpoint_uuid: eq(id) })
        await deliveries.deleteMany({ endpoint_uuid: eq(id) })
        await deleteUnreferencedEvents([...new Set(eventIds)])
        return true
      }),
    listAttempts: (organizationId, id, after, limit) =>
      attempt("webhooks.listAttempts", async () => {
        if ((await endpoints.countDocuments(owned(organizationId, id), { limit: 1 })) === 0) return Option.none()
        if (limit <= 0) return Option.some([])
        // One range of webhook_attempts_newest: (attempted_at, _id) strictly below the position.
        const filter = {
          endpoint_uuid: eq(id),
          ...(after === null
            ? {}
            : { $or: [{ attempted_at: { $lt: after.attempted_at } }, { attempted_at: eq(after.attempted_at), _id: { $lt: after.id } }] })
        }
        const documents = await attempts.find(filter, { sort: { attempted_at: -1, _id: -1 }, limit }).toArray()
        return Option.some(documents.map(attemptRecord))
      }),
    claimDue: (now, leaseUntil, limit) =>
      attempt("webhooks.claimDue", async () => {
        await relayEvents(collections)
        const claimed: Array<ClaimedDelivery> = []
        while (claimed.length < limit) {
          const lease = randomUUID()
          const delivery = await deliveries.findOneAndUpdate(
            {
              status: eq("pending"),
              next_attempt_at: { $lte: now },
              $or: [{ lease_until: eq(null) }, { lease_until: { $lt: now } }]
            },
            { $set: { lease, lease_until: leaseUntil } },
            { sort: { next_attempt_at: 1, _id: 1 }, returnDocument: "after" }
          )
          if (delivery === null) break
          const [endpoint, event] = await Promise.all([
            endpoints.findOne({ _id: eq(delivery.endpoint_uuid) }),
            events.findOne({ _id: eq(delivery.event_id) })
          ])
          if (endpoint === null || event === null || !endpoint.enabled) {
            await deliveries.updateOne({ _id: eq(delivery._id), lease: eq(lease) }, { $set: CANCELLED })
            continue
          }
          claimed.push({
            delivery_id: delivery._id,
            lease,
            organization_id: delivery.organization_id as OrganizationId,
            endpoint_uuid: delivery.endpoint_uuid as WebhookEndpointId,
            url: endpoint.url,
            secret_sealed: endpoint.secret_sealed,
            previous_secret_sealed: endpoint.previous_secret_sealed ?? null,
            previous_secret_expires_at: endpoint.previous_secret_expires_at ?? null,
            event: { id: event._id, type: event.type as WebhookEventType, created_at: event.created_at, data: JSON.parse(event.data) },
            attempt: delivery.attempts + 1
          })
        }
        return claimed
      }),
    recordAttempt: (deliveryId, lease, record) =>
      attempt("webhooks.recordAttempt", async () => {
        const next = record.delivery_status === "pending" ? record.next_attempt_at : null
        const delivery = await deliveries.findOneAndUpdate(
          { _id: eq(deliveryId), lease: eq(lease), status: eq("pending") },
          { $set: { status: record.delivery_status, next_attempt_at: next, lease: null, lease_until: null }, $inc: { attempts: 1 } },
          { returnDocument: "after" }
        )
        if (delivery === null) return false
        await attempts.insertOne({
          _id: record.attempt_id,
          organization_id: delivery.organization_id,
          endpoint_uuid: delivery.endpoint_uuid,
          delivery_id: deliveryId,
          event_id: delivery.event_id,
          event_type: delivery.event_type,
          attempt: delivery.attempts,
          status: record.status,
          error: record.error,
          duration_ms: record.duration_ms,
          response_body: record.response_body,
          attempted_at: record.attempted_at,
          delivery_status: record.delivery_status,
          next_attempt_at: next
        })
        return true
      }),
    retryDelivery: (organizationId, endpointId, deliveryId, now) =>
      attempt("webhooks.retryDelivery", async () => {
        // Not atomic with a concurrent disabling: a delivery made due meanwhile is cancelled
        // by the claim that finds its endpoint disabled.
        const endpoint = await endpoints.findOne({ _id: eq(endpointId), ...ofOrganization(organizationId) }, { projection: { enabled: 1 } })
        if (endpoint?.enabled !== true) return false
        for (let round = 0; round < CAS_ATTEMPTS; round++) {
          const current = await deliveries.findOne({ _id: eq(deliveryId), ...ofOrganization(organizationId), endpoint_uuid: eq(endpointId) })
          if (current === null) return false
          // A pending delivery keeps its lease: its holder is sending it right now.
          const leased = current.status === "pending" && current.lease !== null
          const result = await deliveries.updateOne(
            { _id: eq(deliveryId), status: eq(current.status), lease: eq(current.lease) },
            {
              $set: {
                status: "pending",
                next_attempt_at: now,
                lease: leased ? current.lease : null,
                lease_until: leased ? current.lease_until : null
              }
            }
          )
          if (result.matchedCount > 0) return true
        }
        throw new Error("webhooks.retryDelivery: the delivery kept changing concurrently")
      }),
    pruneDeliveries: (before) =>
      attempt("webhooks.pruneDeliveries", async () => {
        const old = await deliveries.find({ created_at: { $lt: before } }, { projection: { event_id: 1 } }).toArray()
        if (old.length === 0) return 0
        const ids = old.map((d) => d._id)
        await attempts.deleteMany({ delivery_id: anyOf(ids) })
        const { deletedCount } = await deliveries.deleteMany({ _id: anyOf(ids) })
        await deleteUnreferencedEvents([...new Set(old.map((d) => d.event_id))])
        return deletedCount
      })
  }
}

import { Schema } from "effect"

/**
 * Identifier of a webhook endpoint (an organization's own URL that receives events).
 *
 * @category models
 */
export const WebhookEndpointId = Schema.UUID.pipe(Schema.brand("WebhookEndpointId"))
/** @category models */
export type WebhookEndpointId = typeof WebhookEndpointId.Type

/**
 * The event types an endpoint may receive (docs/webhooks.md "Events"):
 * - `message.received`: a customer's message was stored (data: the message);
 * - `message.status_updated`: a message's status changed, a send's own `sent`/`failed`
 *   included (data: the message);
 * - `message.media_updated`: the media of a customer's message was stored, or failed,
 *   or was deleted (data: the message, its `media.status` the new one: docs/media.md);
 * - `message.reactions_updated`: a message's `reactions` changed, by a customer's
 *   reaction or one of the business once Meta accepted it (data: the reacted-to message:
 *   docs/messaging.md "Reactions");
 * - `chat.updated`: a chat's status, assignee, favorite or read state changed (data: the chat);
 * - `contact.created`: a contact was created by an import or a send (data: the contact);
 * - `template.status_updated`: Meta's review changed a template's status (data: the template);
 * - `template.category_updated`: Meta moved a template to another category (data: the template);
 * - `channel.paused`: the send queue paused a channel after an account error of Meta
 *   (data: the channel); `channel.resumed`: it was resumed (data: the channel);
 * - `broadcast.completed`: none of a broadcast's recipients waits any more (data: the
 *   broadcast with its counts).
 *
 * @category models
 */
export const WebhookEventType = Schema.Literal(
  "message.received",
  "message.status_updated",
  "message.media_updated",
  "message.reactions_updated",
  "chat.updated",
  "contact.created",
  "template.status_updated",
  "template.category_updated",
  "channel.paused",
  "channel.resumed",
  "broadcast.completed"
)
/** @category models */
export type WebhookEventType = typeof WebhookEventType.Type

/** Every {@link WebhookEventType}, in declaration order. @category models */
export const WEBHOOK_EVENT_TYPES: ReadonlyArray<WebhookEventType> = WebhookEventType.literals

/**
 * A webhook endpoint as the API shows it (docs/webhooks.md "Endpoints"): its `url`
 * (`https`, 1–2048 characters), the `events` it receives (`null`: every type),
 * `description` (or `null`), and whether it is `enabled`. Its signing secret is never part
 * of the record: it is shown once, when the endpoint is created or the secret rotated.
 *
 * @category models
 */
export const WebhookEndpoint = Schema.Struct({
  uuid: WebhookEndpointId,
  url: Schema.String,
  events: Schema.NullOr(Schema.Array(WebhookEventType)),
  description: Schema.NullOr(Schema.String),
  enabled: Schema.Boolean,
  created_at: Schema.String,
  updated_at: Schema.String
})
/** @category models */
export type WebhookEndpoint = typeof WebhookEndpoint.Type

/**
 * An event as it is delivered: the body of every delivery's POST (docs/webhooks.md
 * "Payload"). `id` is the `webhook-id` header, the same on every attempt; `data` is the
 * record as the API shows it (a message, chat, contact or template).
 *
 * @category models
 */
export interface WebhookEvent {
  readonly id: string
  readonly type: WebhookEventType
  readonly created_at: string
  readonly data: unknown
}

/**
 * Where a delivery stands: `pending` (due at `next_attempt_at`), `delivered` (a 2xx),
 * `failed` (every attempt of the schedule failed), `cancelled` (its endpoint was disabled
 * or deleted first).
 *
 * @category models
 */
export const WebhookDeliveryStatus = Schema.Literal("pending", "delivered", "failed", "cancelled")
/** @category models */
export type WebhookDeliveryStatus = typeof WebhookDeliveryStatus.Type

/**
 * One attempt to deliver an event to an endpoint, as `GET /webhook-endpoints/{uuid}/deliveries`
 * lists it (newest first): the delivery's `id` and the event's id and type, the attempt's
 * number (from 1), the receiver's HTTP `status` or the `error` (timeout, refused
 * connection, refused address…), how long it took (`duration_ms`), when it ran, the
 * delivery's state after it, and when the next attempt is due (`null` when none).
 *
 * @category models
 */
export const WebhookDeliveryAttempt = Schema.Struct({
  id: Schema.String,
  delivery_id: Schema.String,
  event_id: Schema.String,
  event_type: WebhookEventType,
  attempt: Schema.Number,
  status: Schema.NullOr(Schema.Number),
  error: Schema.NullOr(Schema.String),
  duration_ms: Schema.Number,
  attempted_at: Schema.String,
  delivery_status: WebhookDeliveryStatus,
  next_attempt_at: Schema.NullOr(Schema.String)
})
/** @category models */
export type WebhookDeliveryAttempt = typeof WebhookDeliveryAttempt.Type

/** The most endpoints one organization may have (a fixed product limit). @category models */
export const MAX_WEBHOOK_ENDPOINTS_PER_ORGANIZATION = 10

/**
 * How long, in seconds, a rotated-out signing secret keeps signing deliveries beside the
 * new one by default: 86 400 (24 h; docs/webhooks.md "The secret").
 */
export const DEFAULT_PREVIOUS_SECRET_EXPIRES_IN_SECONDS = 86_400

/** The longest overlap a rotation may ask for, in seconds: 604 800 (7 days). */
export const MAX_PREVIOUS_SECRET_EXPIRES_IN_SECONDS = 604_800

/**
 * Whether a previous signing secret still signs at `now` (ISO 8601 instants compared as
 * instants): its expiry is set and later than `now`.
 */
export const previousSecretSigns = (previousSecretExpiresAt: string | null, now: string): boolean =>
  previousSecretExpiresAt !== null && Date.parse(previousSecretExpiresAt) > Date.parse(now)

/**
 * The retry schedule, in milliseconds after the previous attempt (docs/webhooks.md
 * "Retries"): about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h; each delay gets up to 10%
 * random jitter. After the last, the delivery is `failed`.
 *
 * @category models
 */
export const DEFAULT_RETRY_DELAYS_MS: ReadonlyArray<number> = [
  5_000,
  300_000,
  1_800_000,
  7_200_000,
  18_000_000,
  36_000_000,
  36_000_000
]

/** How long a claimed delivery is leased to one dispatcher: 60 s (longer than the 10 s timeout). @category models */
export const DELIVERY_LEASE_MS = 60_000

/** How long a delivery attempt may take: 10 s. @category models */
export const DELIVERY_TIMEOUT_MS = 10_000

/** How long deliveries and their attempts are kept: 30 days. @category models */
export const DELIVERY_RETENTION_MS = 30 * 24 * 3_600_000

/** Most bytes of a receiver's response body kept with an attempt: 1 KiB. @category models */
export const MAX_RESPONSE_BODY_BYTES = 1024

/**
 * Fields `WebhookRepository.updateEndpoint` may set; absent fields are kept.
 *
 * @category storage
 */
export interface WebhookEndpointPatch {
  readonly url?: string
  readonly events?: ReadonlyArray<WebhookEventType> | null
  readonly description?: string | null
  readonly enabled?: boolean
}

/**
 * The endpoint `current` after `patch` (fields left out kept, `updated_at` = `now`), and
 * whether any field differs: the rule of `WebhookRepository.updateEndpoint`, shared
 * by every store (when nothing differs, nothing is written and `current` is answered).
 *
 * @category storage
 */
export const applyEndpointPatch = (
  current: WebhookEndpoint,
  patch: WebhookEndpointPatch,
  now: string
): { readonly endpoint: WebhookEndpoint; readonly changed: boolean } => {
  const endpoint: WebhookEndpoint = {
    ...current,
    url: patch.url ?? current.url,
    events: patch.events === undefined ? current.events : patch.events === null ? null : [...patch.events],
    description: patch.description === undefined ? current.description : patch.description,
    enabled: patch.enabled ?? current.enabled,
    updated_at: now
  }
  const changed =
    endpoint.url !== current.url ||
    JSON.stringify(endpoint.events) !== JSON.stringify(current.events) ||
    endpoint.description !== current.description ||
    endpoint.enabled !== current.enabled
  return { endpoint, changed }
}

import type {
  ClaimedDelivery,
  OrganizationId,
  StoredWebhookEndpoint,
  WebhookDeliveryAttempt,
  WebhookDeliveryStatus,
  WebhookEndpoint,
  WebhookEndpointId,
  WebhookEventType,
  WebhookReject
} from "@switchboard/core"
import type { SqlValues } from "../SqlDialect.js"
import type { SqlBoolean, SqlJson } from "./values.js"

// Rows of the webhook tables (endpoints, deliveries, attempts) and of `webhook_rejects`,
// and their decoding into core's records.

/**
 * A row of `webhook_endpoints` (every column but `organization_id`).
 *
 * @category rows
 */
export interface EndpointRow {
  readonly uuid: string
  readonly url: string
  /** The event types (a JSON array), or `null` for every type. */
  readonly events: SqlJson
  readonly description: string | null
  readonly enabled: SqlBoolean
  readonly secret_sealed: string
  /** The rotated-out secret while (or after) an overlap, sealed; `null`: none. */
  readonly previous_secret_sealed: string | null
  readonly previous_secret_expires_at: string | null
  readonly created_at: string
  readonly updated_at: string
}

/**
 * The columns of an {@link EndpointRow}, in `SELECT` order.
 *
 * @category statements
 */
export const ENDPOINT_COLUMNS =
  "uuid, url, events, description, enabled, secret_sealed, previous_secret_sealed, previous_secret_expires_at, created_at, updated_at"

/**
 * The stored endpoint of a row: the record, its organization, and the sealed secrets.
 *
 * @category decoders
 */
export const storedEndpointOf = (
  organizationId: OrganizationId,
  endpoint: WebhookEndpoint,
  row: EndpointRow
): StoredWebhookEndpoint => ({
  organization_id: organizationId,
  endpoint,
  secret_sealed: row.secret_sealed,
  previous_secret_sealed: row.previous_secret_sealed,
  previous_secret_expires_at: row.previous_secret_expires_at
})

/**
 * A due delivery as a claim reads it, with its lease.
 *
 * @category rows
 */
export interface ClaimedRow {
  readonly id: string
  readonly lease: string
  readonly organization_id: string
  readonly endpoint_uuid: string
  readonly attempts: number
  readonly url: string
  readonly secret_sealed: string
  readonly previous_secret_sealed: string | null
  readonly previous_secret_expires_at: string | null
  readonly event_id: string
  readonly event_type: WebhookEventType
  readonly event_created_at: string
  readonly event_data: SqlJson
}

/**
 * A row of `webhook_attempts` as the lists read it.
 *
 * @category rows
 */
export interface AttemptRow {
  readonly id: string
  readonly delivery_id: string
  readonly event_id: string
  readonly event_type: WebhookEventType
  readonly attempt: number
  readonly status: number | null
  readonly error: string | null
  readonly duration_ms: number
  readonly attempted_at: string
  readonly delivery_status: WebhookDeliveryStatus
  readonly next_attempt_at: string | null
}

/**
 * The columns of an {@link AttemptRow}, in `SELECT` order.
 *
 * @category statements
 */
export const ATTEMPT_COLUMNS =
  "id, delivery_id, event_id, event_type, attempt, status, error, duration_ms, attempted_at, delivery_status, next_attempt_at"

/**
 * A row of `webhook_rejects`.
 *
 * @category rows
 */
export interface RejectRow {
  readonly id: string
  readonly received_at: string
  readonly organization_id: string | null
  readonly phone_number_id: string | null
  readonly reason: string
  readonly item: SqlJson
}

/**
 * The columns of a {@link RejectRow}, in `SELECT` order.
 *
 * @category statements
 */
export const REJECT_COLUMNS = "id, received_at, organization_id, phone_number_id, reason, item"

/**
 * The `events` parameter of an endpoint: JSON text, or `null` for every type.
 *
 * @category parameters
 */
export const eventsText = (events: ReadonlyArray<WebhookEventType> | null): string | null =>
  events === null ? null : JSON.stringify(events)

/**
 * An attempt record from its row.
 *
 * @category decoders
 */
export const decodeAttempt = (row: AttemptRow): WebhookDeliveryAttempt => ({ ...row })

/**
 * The decoders of the webhook rows for one dialect's values.
 *
 * @category decoders
 */
export interface WebhookDecoders {
  readonly endpoint: (row: EndpointRow) => WebhookEndpoint
  /** A claimed delivery from its row and the claim's lease token. */
  readonly claimed: (row: Omit<ClaimedRow, "lease">, lease: string) => ClaimedDelivery
  readonly reject: (row: RejectRow) => WebhookReject
}

/**
 * The {@link WebhookDecoders} of `values`.
 *
 * @category decoders
 */
export const webhookDecodersOf = ({ readBoolean, readJson }: SqlValues): WebhookDecoders => ({
  endpoint: (row) => ({
    uuid: row.uuid as WebhookEndpointId,
    url: row.url,
    events: readJson(row.events) as Array<WebhookEventType> | null,
    description: row.description,
    enabled: readBoolean(row.enabled),
    created_at: row.created_at,
    updated_at: row.updated_at
  }),
  claimed: (row, lease) => ({
    delivery_id: row.id,
    lease,
    organization_id: row.organization_id as OrganizationId,
    endpoint_uuid: row.endpoint_uuid as WebhookEndpointId,
    url: row.url,
    secret_sealed: row.secret_sealed,
    previous_secret_sealed: row.previous_secret_sealed,
    previous_secret_expires_at: row.previous_secret_expires_at,
    event: { id: row.event_id, type: row.event_type, created_at: row.event_created_at, data: readJson(row.event_data) },
    attempt: row.attempts + 1
  }),
  reject: (row) => ({
    id: row.id,
    received_at: row.received_at,
    organization_id: row.organization_id as OrganizationId | null,
    phone_number_id: row.phone_number_id,
    reason: row.reason,
    item: readJson(row.item)
  })
})

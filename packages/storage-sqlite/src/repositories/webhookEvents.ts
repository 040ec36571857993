import { randomUUID } from "node:crypto"
import type { OrganizationId, WebhookEventType } from "@switchboard/core"
import type { Statements } from "../internal/sql.js"

// The outbox of outgoing webhook events on SQLite: events and deliveries written inside the
// transactions of the writes that cause them.

/** The statements of the outbox (part of webhooks.ts's `SQL`, exported for the query-plan test). */
export const EVENT_SQL = {
  // The outbox's one look-up: a probe of webhook_endpoints_enabled, then the few rows found.
  subscribers: `SELECT uuid FROM webhook_endpoints
    WHERE organization_id = ? AND enabled = 1
      AND (events IS NULL OR EXISTS (SELECT 1 FROM json_each(events) WHERE value = ?))`,
  insertEvent: "INSERT INTO webhook_events (id, organization_id, type, data, created_at) VALUES (?, ?, ?, ?, ?)",
  insertDelivery: `INSERT INTO webhook_deliveries
      (id, organization_id, endpoint_uuid, event_id, status, attempts, next_attempt_at, lease, lease_until, created_at)
    VALUES (?, ?, ?, ?, 'pending', 0, ?, NULL, NULL, ?)`,
} as const

/**
 * The outbox of the SQLite store (the rules at the top of core's `WebhookRepository`):
 * finds the organization's enabled endpoints subscribed to `type` (one prepared statement,
 * one probe of an index) and, when there are any, inserts one event per element of
 * `records()` (`data` that record as JSON, `created_at` = `now`) and one `pending` delivery
 * per event and endpoint, due at `now`. Writes nothing and never calls `records` when there
 * is no such endpoint. Call it inside the write's `BEGIN IMMEDIATE` transaction, so the
 * events commit or roll back with the change; throws the driver's error.
 */
export const recordWebhookEvents = (
  statements: Statements,
  organizationId: OrganizationId,
  type: WebhookEventType,
  now: string,
  records: () => ReadonlyArray<unknown>
): void => {
  const endpoints = statements.prepare<string>(EVENT_SQL.subscribers).pluck().all(organizationId, type)
  if (endpoints.length === 0) return
  const insertEvent = statements.prepare(EVENT_SQL.insertEvent)
  const insertDelivery = statements.prepare(EVENT_SQL.insertDelivery)
  for (const record of records()) {
    const eventId = randomUUID()
    insertEvent.run(eventId, organizationId, type, JSON.stringify(record), now)
    for (const endpoint of endpoints) insertDelivery.run(randomUUID(), organizationId, endpoint, eventId, now, now)
  }
}

/** Whether the organization has an enabled endpoint subscribed to `type` (the probe {@link recordWebhookEvents} starts with). */
export const hasSubscriber = (statements: Statements, organizationId: OrganizationId, type: WebhookEventType): boolean =>
  statements.prepare(EVENT_SQL.subscribers).get(organizationId, type) !== undefined

/** {@link recordWebhookEvents} of one record. */
export const recordWebhookEvent = (
  statements: Statements,
  organizationId: OrganizationId,
  type: WebhookEventType,
  now: string,
  record: () => unknown
): void => recordWebhookEvents(statements, organizationId, type, now, () => [record()])

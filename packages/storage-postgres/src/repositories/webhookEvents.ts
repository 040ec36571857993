import { randomUUID } from "node:crypto"
import type { OrganizationId, WebhookEventType } from "@switchboard/core"
import type { Sql } from "../internal/sql.js"

// The outbox of outgoing webhooks (the rules at the top of core's `WebhookRepository`),
// written inside the transaction of the change that causes the events: every repository
// that records events (contacts, chats, templates, the send queue, broadcasts) calls these.

/**
 * The SQL condition that the endpoint row `alias` is an enabled endpoint of the organization
 * `organization` subscribed to the event type `type` (`events` `NULL` or listing it); both
 * are SQL (a parameter, a column or a literal).
 */
export const subscribesSql = (alias: string, organization: string, type: string): string =>
  `${alias}.organization_id = ${organization} AND ${alias}.enabled
        AND (${alias}.events IS NULL OR EXISTS (
          SELECT 1 FROM json_array_elements_text(${alias}.events) AS e (value) WHERE e.value = ${type}))`

/**
 * The uuids of the organization's enabled endpoints subscribed to `type` (`events` `NULL`
 * or listing it): one probe of `webhook_endpoints_enabled`, then the few rows found.
 */
export const subscribedEndpoints = async (
  sql: Sql,
  schema: string,
  organizationId: OrganizationId | string,
  type: WebhookEventType
): Promise<ReadonlyArray<string>> => {
  const rows = await sql.rows<{ uuid: string }>(
    `SELECT we.uuid FROM ${schema}.webhook_endpoints AS we WHERE ${subscribesSql("we", "$1", "$2::text")}`,
    [organizationId, type]
  )
  return rows.map((row) => row.uuid)
}

/**
 * Inserts one event per record (`data` the record as JSON, `created_at` = `now`) and one
 * `pending` delivery per event and endpoint of `endpoints`, due at `now`: one statement
 * whatever the number of records (the deliveries' foreign keys are checked at its end,
 * when the events it inserted are there).
 */
export const insertWebhookEvents = (
  sql: Sql,
  schema: string,
  organizationId: OrganizationId | string,
  type: WebhookEventType,
  now: string,
  endpoints: ReadonlyArray<string>,
  records: ReadonlyArray<unknown>
): Promise<void> => insertWebhookEventsAt(sql, schema, organizationId, type, endpoints, records.map((data) => ({ at: now, data })))

/**
 * {@link insertWebhookEvents} with a time per record: one event per record (`data` as JSON,
 * `created_at` = its `at`, ISO 8601), in the order given, and one `pending` delivery per
 * event and endpoint, due at its event's time. One statement whatever the number of records.
 */
export const insertWebhookEventsAt = async (
  sql: Sql,
  schema: string,
  organizationId: OrganizationId | string,
  type: WebhookEventType,
  endpoints: ReadonlyArray<string>,
  records: ReadonlyArray<{ readonly at: string; readonly data: unknown }>
): Promise<void> => {
  if (endpoints.length === 0 || records.length === 0) return
  const ids = records.map(() => randomUUID())
  const deliveries: Array<string> = []
  const events: Array<string> = []
  const targets: Array<string> = []
  const due: Array<string> = []
  for (const [index, eventId] of ids.entries()) {
    for (const endpoint of endpoints) {
      deliveries.push(randomUUID())
      events.push(eventId)
      targets.push(endpoint)
      due.push(records[index]!.at)
    }
  }
  await sql.run(
    `WITH inserted AS (
        INSERT INTO ${schema}.webhook_events (id, organization_id, type, data, created_at)
        SELECT e.id, $1, $2, e.data::json, e.at FROM unnest($3::text[], $4::text[], $5::timestamptz[]) WITH ORDINALITY AS e (id, data, at, n)
          ORDER BY e.n
      )
      INSERT INTO ${schema}.webhook_deliveries
        (id, organization_id, endpoint_uuid, event_id, status, attempts, next_attempt_at, lease, lease_until, created_at)
      SELECT d.id, $1, d.endpoint, d.event, 'pending', 0, d.at, NULL, NULL, d.at
      FROM unnest($6::text[], $7::text[], $8::text[], $9::timestamptz[]) WITH ORDINALITY AS d (id, event, endpoint, at, n) ORDER BY d.n`,
    [
      organizationId,
      type,
      ids,
      records.map((record) => JSON.stringify(record.data)),
      records.map((record) => record.at),
      deliveries,
      events,
      targets,
      due
    ]
  )
}

/**
 * The outbox of the PostgreSQL store (the rules at the top of core's `WebhookRepository`):
 * finds the organization's enabled endpoints subscribed to `type` and, when there are any,
 * inserts one event per element of `records()` and one `pending` delivery per event and
 * endpoint, due at `now`. Writes nothing and never calls `records` when there is no such
 * endpoint. Call it with the `sql` of the write's transaction, so the events commit or roll
 * back with the change; rejects with the driver's error.
 */
export const recordWebhookEvents = async (
  sql: Sql,
  schema: string,
  organizationId: OrganizationId | string,
  type: WebhookEventType,
  now: string,
  records: () => ReadonlyArray<unknown> | Promise<ReadonlyArray<unknown>>
): Promise<void> => {
  const endpoints = await subscribedEndpoints(sql, schema, organizationId, type)
  if (endpoints.length === 0) return
  await insertWebhookEvents(sql, schema, organizationId, type, now, endpoints, await records())
}

/** {@link recordWebhookEvents} of one record. */
export const recordWebhookEvent = (
  sql: Sql,
  schema: string,
  organizationId: OrganizationId | string,
  type: WebhookEventType,
  now: string,
  record: () => unknown
): Promise<void> => recordWebhookEvents(sql, schema, organizationId, type, now, async () => [await record()])

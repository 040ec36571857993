import { randomUUID } from "node:crypto"
import { Option } from "effect"
import { applyEndpointPatch } from "@switchboard/core"
import type {
  ClaimedDelivery,
  OrganizationId,
  StoredWebhookEndpoint,
  WebhookEndpointId,
  WebhookEndpointInsertOutcome,
  WebhookRepository,
  WebhookSecretRotationOutcome
} from "@switchboard/core"
import {
  ATTEMPT_COLUMNS,
  type AttemptRow,
  type ClaimedRow,
  decodeAttempt,
  ENDPOINT_COLUMNS,
  type EndpointRow,
  eventsText,
  type SealedSecretsRow,
  sealedValueStatementsOf,
  storedEndpointOf
} from "@switchboard/storage-sql"
import { decoders, sqliteDialect } from "../dialect.js"
import { attempt, type RepositoryFactory, snapshot, transaction } from "../internal/sql.js"
import { EVENT_SQL, recordWebhookEvents } from "./webhookEvents.js"
import { jsonArray } from "./rows.js"

/** The statements of this repository and of the outbox (exported for the query-plan test). */
export const SQL = {
  ...EVENT_SQL,
  countEndpoints: "SELECT COUNT(*) AS count FROM webhook_endpoints WHERE organization_id = ?",
  insertEndpoint: `INSERT INTO webhook_endpoints
      (uuid, organization_id, url, events, description, enabled, secret_sealed, created_at, updated_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  listEndpoints: `SELECT ${ENDPOINT_COLUMNS}
    FROM webhook_endpoints WHERE organization_id = ? ORDER BY created_at DESC, uuid DESC`,
  findEndpoint: `SELECT ${ENDPOINT_COLUMNS}
    FROM webhook_endpoints WHERE organization_id = ? AND uuid = ?`,
  updateEndpoint: `UPDATE webhook_endpoints SET url = ?, events = ?, description = ?, enabled = ?, updated_at = ?
    WHERE organization_id = ? AND uuid = ?`,
  cancelPending: `UPDATE webhook_deliveries SET status = 'cancelled', next_attempt_at = NULL, lease = NULL, lease_until = NULL
    WHERE endpoint_uuid = ? AND status = 'pending'`,
  // A compare-and-set on the sealed secret the rotation read.
  rotateSecret: `UPDATE webhook_endpoints SET secret_sealed = ?, previous_secret_sealed = ?, previous_secret_expires_at = ?, updated_at = ?
    WHERE organization_id = ? AND uuid = ? AND secret_sealed = ?`,
  eventsOfEndpoint: "SELECT DISTINCT event_id FROM webhook_deliveries WHERE endpoint_uuid = ?",
  deleteEndpointAttempts: "DELETE FROM webhook_attempts WHERE endpoint_uuid = ?",
  deleteEndpointDeliveries: "DELETE FROM webhook_deliveries WHERE endpoint_uuid = ?",
  deleteEndpoint: "DELETE FROM webhook_endpoints WHERE organization_id = ? AND uuid = ?",
  // Events among the JSON array `?` that no delivery references any more.
  deleteUnreferencedEvents: `DELETE FROM webhook_events WHERE id IN (SELECT value FROM json_each(?))
    AND NOT EXISTS (SELECT 1 FROM webhook_deliveries AS d WHERE d.event_id = webhook_events.id)`,
  attemptsFirst: `SELECT ${ATTEMPT_COLUMNS} FROM webhook_attempts WHERE endpoint_uuid = ?
    ORDER BY attempted_at DESC, id DESC LIMIT ?`,
  attemptsAfter: `SELECT ${ATTEMPT_COLUMNS} FROM webhook_attempts WHERE endpoint_uuid = ? AND (attempted_at, id) < (?, ?)
    ORDER BY attempted_at DESC, id DESC LIMIT ?`,
  // One range of webhook_deliveries_due (status = 'pending', next_attempt_at <= now), read in
  // its order (deliveries due at the same instant: in the index's rowid order, first inserted
  // first), stopping at the limit: no sort.
  due: `SELECT d.id, d.organization_id, d.endpoint_uuid, d.attempts, e.url, e.secret_sealed,
      e.previous_secret_sealed, e.previous_secret_expires_at,
      v.id AS event_id, v.type AS event_type, v.created_at AS event_created_at, v.data AS event_data
    FROM webhook_deliveries AS d
      JOIN webhook_endpoints AS e ON e.uuid = d.endpoint_uuid
      JOIN webhook_events AS v ON v.id = d.event_id
    WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND (d.lease_until IS NULL OR d.lease_until < ?)
    ORDER BY d.next_attempt_at LIMIT ?`,
  anyDue: `SELECT 1 FROM webhook_deliveries
    WHERE status = 'pending' AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until < ?) LIMIT 1`,
  lease: "UPDATE webhook_deliveries SET lease = ?, lease_until = ? WHERE id = ?",
  leased: `SELECT d.endpoint_uuid, d.attempts, v.id AS event_id, v.type AS event_type
    FROM webhook_deliveries AS d JOIN webhook_events AS v ON v.id = d.event_id
    WHERE d.id = ? AND d.lease = ? AND d.status = 'pending'`,
  recordDelivery: `UPDATE webhook_deliveries SET status = ?, attempts = attempts + 1, next_attempt_at = ?,
      lease = NULL, lease_until = NULL
    WHERE id = ?`,
  insertAttempt: `INSERT INTO webhook_attempts (${ATTEMPT_COLUMNS}, endpoint_uuid, response_body)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  // Every SET expression reads the row as it was: a pending delivery keeps its lease.
  retry: `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ?,
      lease = CASE WHEN status = 'pending' THEN lease ELSE NULL END,
      lease_until = CASE WHEN status = 'pending' THEN lease_until ELSE NULL END
    WHERE id = ? AND organization_id = ? AND endpoint_uuid = ?
      AND EXISTS (SELECT 1 FROM webhook_endpoints AS e WHERE e.uuid = webhook_deliveries.endpoint_uuid AND e.enabled = 1)`,
  oldDeliveries: "SELECT id, event_id FROM webhook_deliveries WHERE created_at < ?",
  deleteAttemptsOf: "DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT value FROM json_each(?))",
  deleteDeliveriesOf: "DELETE FROM webhook_deliveries WHERE id IN (SELECT value FROM json_each(?))"
} as const

/** The statements of `secret-key rotate` (shared with PostgreSQL). */
const SEALED = sealedValueStatementsOf(sqliteDialect)

/**
 * `Storage.webhooks` on SQLite: tables `webhook_endpoints`, `webhook_events`,
 * `webhook_deliveries` and `webhook_attempts` (migration 11, schema/delivery.ts).
 * Events are written by {@link recordWebhookEvents} inside the transactions of the writes
 * that cause them. Every write here is one `BEGIN IMMEDIATE` transaction: `claimDue` selects
 * the due deliveries and leases them under the write lock, so two connections or processes
 * on one file never claim the same delivery; `recordAttempt` writes only while the lease
 * token still matches a `pending` delivery. `claimDue` first checks, with a plain read, that
 * anything is due: the dispatcher claims on every write that may enqueue a delivery, and
 * most find nothing, so they take no write lock.
 *
 * @category repositories
 */
export const webhookRepository: RepositoryFactory<WebhookRepository> = (db, statements) => {
  const findRow = (organizationId: OrganizationId, id: string) =>
    statements.prepare<EndpointRow>(SQL.findEndpoint).get(organizationId, id)
  const deleteUnreferencedEvents = (eventIds: ReadonlyArray<string>) => {
    if (eventIds.length > 0) statements.prepare(SQL.deleteUnreferencedEvents).run(jsonArray(eventIds))
  }
  return {
    insertEndpoint: (organizationId, { endpoint, secret_sealed }, limit) =>
      attempt("webhooks.insertEndpoint", () =>
        transaction(db, (): WebhookEndpointInsertOutcome => {
          const count = statements.prepare<{ count: number }>(SQL.countEndpoints).get(organizationId)?.count ?? 0
          if (count >= limit) return { _tag: "LimitReached", limit }
          statements
            .prepare(SQL.insertEndpoint)
            .run(
              endpoint.uuid,
              organizationId,
              endpoint.url,
              eventsText(endpoint.events),
              endpoint.description,
              endpoint.enabled ? 1 : 0,
              secret_sealed,
              endpoint.created_at,
              endpoint.updated_at
            )
          return { _tag: "Inserted", endpoint }
        })
      ),
    listEndpoints: (organizationId) =>
      attempt("webhooks.listEndpoints", () => statements.prepare<EndpointRow>(SQL.listEndpoints).all(organizationId).map(decoders.webhooks.endpoint)),
    findEndpoint: (organizationId, id) =>
      attempt("webhooks.findEndpoint", () =>
        Option.map(
          Option.fromNullable(findRow(organizationId, id)),
          (row): StoredWebhookEndpoint => storedEndpointOf(organizationId, decoders.webhooks.endpoint(row), row)
        )
      ),
    updateEndpoint: (organizationId, id, patch, now) =>
      attempt("webhooks.updateEndpoint", () =>
        transaction(db, () => {
          const row = findRow(organizationId, id)
          if (row === undefined) return Option.none()
          const current = decoders.webhooks.endpoint(row)
          const { changed, endpoint: next } = applyEndpointPatch(current, patch, now)
          if (!changed) return Option.some(current)
          statements
            .prepare(SQL.updateEndpoint)
            .run(next.url, eventsText(next.events), next.description, next.enabled ? 1 : 0, now, organizationId, id)
          if (current.enabled && !next.enabled) statements.prepare(SQL.cancelPending).run(id)
          return Option.some(next)
        })
      ),
    rotateSecret: (organizationId, id, rotation, now) =>
      attempt("webhooks.rotateSecret", () =>
        transaction(db, (): WebhookSecretRotationOutcome => {
          const row = findRow(organizationId, id)
          if (row === undefined) return { _tag: "NotFound" }
          const { changes } = statements
            .prepare(SQL.rotateSecret)
            .run(
              rotation.secret_sealed,
              rotation.previous_secret_sealed,
              rotation.previous_secret_expires_at,
              now,
              organizationId,
              id,
              rotation.expected_secret_sealed
            )
          if (changes === 0) return { _tag: "SecretChanged" }
          return { _tag: "Rotated", endpoint: { ...decoders.webhooks.endpoint(row), updated_at: now } }
        })
      ),
    listSealedSecrets: (after, limit) =>
      attempt("webhooks.listSealedSecrets", () =>
        (after === null
          ? statements.prepare<SealedSecretsRow>(SEALED.secretsFirst).all(limit)
          : statements.prepare<SealedSecretsRow>(SEALED.secretsAfter).all(after, limit)
        ).map((row) => ({ ...row, uuid: row.uuid as WebhookEndpointId }))
      ),
    resealSecret: (id, field, expected, sealed) =>
      attempt("webhooks.resealSecret", () =>
        statements.prepare(field === "secret" ? SEALED.resealSecret : SEALED.resealPreviousSecret).run(sealed, id, expected).changes > 0
      ),
    deleteEndpoint: (organizationId, id) =>
      attempt("webhooks.deleteEndpoint", () =>
        transaction(db, () => {
          if (findRow(organizationId, id) === undefined) return false
          const eventIds = statements.prepare<string>(SQL.eventsOfEndpoint).pluck().all(id)
          statements.prepare(SQL.deleteEndpointAttempts).run(id)
          statements.prepare(SQL.deleteEndpointDeliveries).run(id)
          deleteUnreferencedEvents(eventIds)
          statements.prepare(SQL.deleteEndpoint).run(organizationId, id)
          return true
        })
      ),
    listAttempts: (organizationId, id, after, limit) =>
      attempt("webhooks.listAttempts", () =>
        snapshot(db, () => {
          if (findRow(organizationId, id) === undefined) return Option.none()
          const rows =
            after === null
              ? statements.prepare<AttemptRow>(SQL.attemptsFirst).all(id, limit)
              : statements.prepare<AttemptRow>(SQL.attemptsAfter).all(id, after.attempted_at, after.id, limit)
          return Option.some(rows.map(decodeAttempt))
        })
      ),
    claimDue: (now, leaseUntil, limit) =>
      attempt("webhooks.claimDue", () =>
        limit <= 0 || statements.prepare(SQL.anyDue).get(now, now) === undefined
          ? []
          : transaction(db, () => {
              const rows = statements.prepare<Omit<ClaimedRow, "lease">>(SQL.due).all(now, now, limit)
              const lease = statements.prepare(SQL.lease)
              return rows.map((row): ClaimedDelivery => {
                const token = randomUUID()
                lease.run(token, leaseUntil, row.id)
                return decoders.webhooks.claimed(row, token)
              })
            })
      ),
    recordAttempt: (deliveryId, lease, record) =>
      attempt("webhooks.recordAttempt", () =>
        transaction(db, () => {
          const held = statements
            .prepare<{ endpoint_uuid: string; attempts: number; event_id: string; event_type: string }>(SQL.leased)
            .get(deliveryId, lease)
          if (held === undefined) return false
          const next = record.delivery_status === "pending" ? record.next_attempt_at : null
          statements.prepare(SQL.recordDelivery).run(record.delivery_status, next, deliveryId)
          statements
            .prepare(SQL.insertAttempt)
            .run(
              record.attempt_id,
              deliveryId,
              held.event_id,
              held.event_type,
              held.attempts + 1,
              record.status,
              record.error,
              record.duration_ms,
              record.attempted_at,
              record.delivery_status,
              next,
              held.endpoint_uuid,
              record.response_body
            )
          return true
        })
      ),
    retryDelivery: (organizationId, endpointId, deliveryId, now) =>
      attempt("webhooks.retryDelivery", () =>
        statements.prepare(SQL.retry).run(now, deliveryId, organizationId, endpointId).changes > 0
      ),
    pruneDeliveries: (before) =>
      attempt("webhooks.pruneDeliveries", () =>
        transaction(db, () => {
          const old = statements.prepare<{ id: string; event_id: string }>(SQL.oldDeliveries).all(before)
          if (old.length === 0) return 0
          const ids = jsonArray(old.map((row) => row.id))
          statements.prepare(SQL.deleteAttemptsOf).run(ids)
          statements.prepare(SQL.deleteDeliveriesOf).run(ids)
          deleteUnreferencedEvents([...new Set(old.map((row) => row.event_id))])
          return old.length
        })
      )
  }
}

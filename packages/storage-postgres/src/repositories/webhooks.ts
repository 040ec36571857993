import { Option } from "effect"
import { applyEndpointPatch } from "@switchboard/core"
import type {
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
import { decoders, postgresDialect } from "../dialect.js"
import { attempt, type RepositoryFactory, type Sql } from "../internal/sql.js"

/** The statements of this repository, for a schema (already quoted). */
const statementsOf = (s: string) => ({
  ...sealedValueStatementsOf(postgresDialect(s)),
  countEndpoints: `SELECT COUNT(*) AS count FROM ${s}.webhook_endpoints WHERE organization_id = $1`,
  insertEndpoint: `INSERT INTO ${s}.webhook_endpoints
      (uuid, organization_id, url, events, description, enabled, secret_sealed, created_at, updated_at)
    VALUES ($1, $2, $3, $4::json, $5, $6, $7, $8, $9)`,
  listEndpoints: `SELECT ${ENDPOINT_COLUMNS} FROM ${s}.webhook_endpoints WHERE organization_id = $1
    ORDER BY created_at DESC, uuid DESC`,
  findEndpoint: `SELECT ${ENDPOINT_COLUMNS} FROM ${s}.webhook_endpoints WHERE organization_id = $1 AND uuid = $2`,
  updateEndpoint: `UPDATE ${s}.webhook_endpoints SET url = $1, events = $2::json, description = $3, enabled = $4, updated_at = $5
    WHERE organization_id = $6 AND uuid = $7`,
  cancelPending: `UPDATE ${s}.webhook_deliveries SET status = 'cancelled', next_attempt_at = NULL, lease = NULL, lease_until = NULL
    WHERE endpoint_uuid = $1 AND status = 'pending'`,
  // A compare-and-set on the sealed secret the rotation read.
  rotateSecret: `UPDATE ${s}.webhook_endpoints SET secret_sealed = $1, previous_secret_sealed = $2, previous_secret_expires_at = $3,
      updated_at = $4
    WHERE organization_id = $5 AND uuid = $6 AND secret_sealed = $7
    RETURNING ${ENDPOINT_COLUMNS}`,
  deleteEndpointAttempts: `DELETE FROM ${s}.webhook_attempts WHERE endpoint_uuid = $1`,
  // The endpoint's deliveries, then the events they referenced that no other endpoint's
  // delivery does (the NOT EXISTS reads the statement's snapshot, so it skips the endpoint's own).
  deleteEndpointDeliveries: `WITH gone AS (DELETE FROM ${s}.webhook_deliveries WHERE endpoint_uuid = $1 RETURNING event_id)
    DELETE FROM ${s}.webhook_events AS v WHERE v.id IN (SELECT event_id FROM gone)
      AND NOT EXISTS (SELECT 1 FROM ${s}.webhook_deliveries AS d WHERE d.event_id = v.id AND d.endpoint_uuid <> $1)`,
  deleteEndpoint: `DELETE FROM ${s}.webhook_endpoints WHERE organization_id = $1 AND uuid = $2`,
  // Waits for the transactions inserting deliveries to the endpoint without the organization's
  // lock (a provider's status report, providerStatus.ts, locks it FOR KEY SHARE), so the
  // deliveries deleted next include theirs.
  lockEndpoint: `SELECT 1 FROM ${s}.webhook_endpoints WHERE organization_id = $1 AND uuid = $2 FOR UPDATE`,
  attemptsFirst: `SELECT ${ATTEMPT_COLUMNS} FROM ${s}.webhook_attempts WHERE endpoint_uuid = $1
    ORDER BY attempted_at DESC, id DESC LIMIT $2`,
  attemptsAfter: `SELECT ${ATTEMPT_COLUMNS} FROM ${s}.webhook_attempts WHERE endpoint_uuid = $1 AND (attempted_at, id) < ($2, $3)
    ORDER BY attempted_at DESC, id DESC LIMIT $4`,
  // One statement: the due deliveries in order (a range of webhook_deliveries_due), locked
  // FOR UPDATE SKIP LOCKED (rows another claim holds are passed over, and a row another
  // claim leased since this statement's snapshot is re-checked and dropped), each leased
  // under a new token, answered with their endpoint and event.
  claimDue: `WITH due AS (
      SELECT id, next_attempt_at, seq FROM ${s}.webhook_deliveries
      WHERE status = 'pending' AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until < $1)
      ORDER BY next_attempt_at, seq LIMIT $3
      FOR UPDATE SKIP LOCKED
    ), leased AS (
      UPDATE ${s}.webhook_deliveries AS d SET lease = gen_random_uuid()::text, lease_until = $2
      FROM due WHERE d.id = due.id
      RETURNING d.id, d.lease, d.organization_id, d.endpoint_uuid, d.event_id, d.attempts, due.next_attempt_at, due.seq
    )
    SELECT l.id, l.lease, l.organization_id, l.endpoint_uuid, l.attempts, e.url, e.secret_sealed,
      e.previous_secret_sealed, e.previous_secret_expires_at,
      v.id AS event_id, v.type AS event_type, v.created_at AS event_created_at, v.data AS event_data
    FROM leased AS l
      JOIN ${s}.webhook_endpoints AS e ON e.uuid = l.endpoint_uuid
      JOIN ${s}.webhook_events AS v ON v.id = l.event_id
    ORDER BY l.next_attempt_at, l.seq`,
  // One statement: the delivery's new state only while the lease holds it, and the attempt.
  recordAttempt: `WITH held AS (
      UPDATE ${s}.webhook_deliveries SET status = $3, attempts = attempts + 1, next_attempt_at = $4,
        lease = NULL, lease_until = NULL
      WHERE id = $1 AND lease = $2 AND status = 'pending'
      RETURNING id, endpoint_uuid, event_id, attempts
    )
    INSERT INTO ${s}.webhook_attempts (${ATTEMPT_COLUMNS}, endpoint_uuid, response_body)
    SELECT $5, held.id, held.event_id, v.type, held.attempts, $6, $7, $8, $9, $3, $4, held.endpoint_uuid, $10
    FROM held JOIN ${s}.webhook_events AS v ON v.id = held.event_id`,
  // Every SET expression reads the row as it was: a pending delivery keeps its lease.
  retry: `UPDATE ${s}.webhook_deliveries AS d SET status = 'pending', next_attempt_at = $1,
      lease = CASE WHEN d.status = 'pending' THEN d.lease ELSE NULL END,
      lease_until = CASE WHEN d.status = 'pending' THEN d.lease_until ELSE NULL END
    WHERE d.id = $2 AND d.organization_id = $3 AND d.endpoint_uuid = $4
      AND EXISTS (SELECT 1 FROM ${s}.webhook_endpoints AS e WHERE e.uuid = d.endpoint_uuid AND e.enabled)`,
  pruneAttempts: `DELETE FROM ${s}.webhook_attempts AS a USING ${s}.webhook_deliveries AS d
    WHERE a.delivery_id = d.id AND d.created_at < $1`,
  // The old deliveries, then the events they referenced that no remaining delivery does;
  // answers how many deliveries went.
  pruneDeliveries: `WITH gone AS (DELETE FROM ${s}.webhook_deliveries WHERE created_at < $1 RETURNING event_id),
    events AS (
      DELETE FROM ${s}.webhook_events AS v WHERE v.id IN (SELECT event_id FROM gone)
        AND NOT EXISTS (SELECT 1 FROM ${s}.webhook_deliveries AS d WHERE d.event_id = v.id AND d.created_at >= $1)
    )
    SELECT COUNT(*) AS count FROM gone`
})

/**
 * `Storage.webhooks` on PostgreSQL: tables `webhook_endpoints`, `webhook_events`,
 * `webhook_deliveries` and `webhook_attempts` (schema/delivery.ts). Events are written by
 * `recordWebhookEvents` (webhookEvents.ts) inside the transactions of the writes that
 * cause them. `claimDue` is one statement that locks the due deliveries
 * `FOR UPDATE SKIP LOCKED` and leases each under a new token, so claims running together
 * in any number of processes get disjoint deliveries; `recordAttempt` is one statement
 * that writes only while the token still matches a `pending` delivery. Writes to one
 * organization's endpoints (the limit check and its insert, a disable and its cancels, a
 * delete, a hand retry) run in a transaction that locks the organization first.
 *
 * @category repositories
 */
export const webhookRepository: RepositoryFactory<WebhookRepository> = (db) => {
  const SQL = statementsOf(db.schema)
  const findRow = (sql: Sql, organizationId: OrganizationId, id: string) =>
    sql.row<EndpointRow>(SQL.findEndpoint, [organizationId, id])
  return {
    insertEndpoint: (organizationId, { endpoint, secret_sealed }, limit) =>
      attempt("webhooks.insertEndpoint", () =>
        db.transaction(async (sql): Promise<WebhookEndpointInsertOutcome> => {
          const count = (await sql.row<{ count: number }>(SQL.countEndpoints, [organizationId]))?.count ?? 0
          if (count >= limit) return { _tag: "LimitReached", limit }
          await sql.run(SQL.insertEndpoint, [
            endpoint.uuid,
            organizationId,
            endpoint.url,
            eventsText(endpoint.events),
            endpoint.description,
            endpoint.enabled,
            secret_sealed,
            endpoint.created_at,
            endpoint.updated_at
          ])
          return { _tag: "Inserted", endpoint }
        }, { lockOrganization: organizationId })
      ),
    listEndpoints: (organizationId) =>
      attempt("webhooks.listEndpoints", async () =>
        (await db.sql.rows<EndpointRow>(SQL.listEndpoints, [organizationId])).map(decoders.webhooks.endpoint)
      ),
    findEndpoint: (organizationId, id) =>
      attempt("webhooks.findEndpoint", async () =>
        Option.map(
          Option.fromNullable(await findRow(db.sql, organizationId, id)),
          (row): StoredWebhookEndpoint => storedEndpointOf(organizationId, decoders.webhooks.endpoint(row), row)
        )
      ),
    updateEndpoint: (organizationId, id, patch, now) =>
      attempt("webhooks.updateEndpoint", () =>
        db.transaction(async (sql) => {
          const row = await findRow(sql, organizationId, id)
          if (row === undefined) return Option.none()
          const current = decoders.webhooks.endpoint(row)
          const { changed, endpoint: next } = applyEndpointPatch(current, patch, now)
          if (!changed) return Option.some(current)
          await sql.run(SQL.updateEndpoint, [next.url, eventsText(next.events), next.description, next.enabled, now, organizationId, id])
          if (current.enabled && !next.enabled) await sql.run(SQL.cancelPending, [id])
          return Option.some(next)
        }, { lockOrganization: organizationId })
      ),
    rotateSecret: (organizationId, id, rotation, now) =>
      attempt("webhooks.rotateSecret", async (): Promise<WebhookSecretRotationOutcome> => {
        const row = await db.sql.row<EndpointRow>(SQL.rotateSecret, [
          rotation.secret_sealed,
          rotation.previous_secret_sealed,
          rotation.previous_secret_expires_at,
          now,
          organizationId,
          id,
          rotation.expected_secret_sealed
        ])
        if (row !== undefined) return { _tag: "Rotated", endpoint: decoders.webhooks.endpoint(row) }
        // Nothing written: no such endpoint, or its secret changed since the rotation read it.
        return (await findRow(db.sql, organizationId, id)) === undefined ? { _tag: "NotFound" } : { _tag: "SecretChanged" }
      }),
    listSealedSecrets: (after, limit) =>
      attempt("webhooks.listSealedSecrets", async () =>
        (after === null
          ? await db.sql.rows<SealedSecretsRow>(SQL.secretsFirst, [limit])
          : await db.sql.rows<SealedSecretsRow>(SQL.secretsAfter, [after, limit])
        ).map((row) => ({ ...row, uuid: row.uuid as WebhookEndpointId }))
      ),
    resealSecret: (id, field, expected, sealed) =>
      attempt("webhooks.resealSecret", async () =>
        (await db.sql.run(field === "secret" ? SQL.resealSecret : SQL.resealPreviousSecret, [sealed, id, expected])) > 0
      ),
    deleteEndpoint: (organizationId, id) =>
      attempt("webhooks.deleteEndpoint", () =>
        db.transaction(async (sql) => {
          if ((await sql.row(SQL.lockEndpoint, [organizationId, id])) === undefined) return false
          await sql.run(SQL.deleteEndpointAttempts, [id])
          await sql.run(SQL.deleteEndpointDeliveries, [id])
          await sql.run(SQL.deleteEndpoint, [organizationId, id])
          return true
        }, { lockOrganization: organizationId })
      ),
    listAttempts: (organizationId, id, after, limit) =>
      attempt("webhooks.listAttempts", () =>
        db.snapshot(async (sql) => {
          if ((await findRow(sql, organizationId, id)) === undefined) return Option.none()
          const rows =
            after === null
              ? await sql.rows<AttemptRow>(SQL.attemptsFirst, [id, limit])
              : await sql.rows<AttemptRow>(SQL.attemptsAfter, [id, after.attempted_at, after.id, limit])
          return Option.some(rows.map(decodeAttempt))
        })
      ),
    claimDue: (now, leaseUntil, limit) =>
      attempt("webhooks.claimDue", async () => {
        if (limit <= 0) return []
        const rows = await db.sql.rows<ClaimedRow>(SQL.claimDue, [now, leaseUntil, limit])
        return rows.map((row) => decoders.webhooks.claimed(row, row.lease))
      }),
    recordAttempt: (deliveryId, lease, record) =>
      attempt("webhooks.recordAttempt", async () => {
        const next = record.delivery_status === "pending" ? record.next_attempt_at : null
        const inserted = await db.sql.run(SQL.recordAttempt, [
          deliveryId,
          lease,
          record.delivery_status,
          next,
          record.attempt_id,
          record.status,
          record.error,
          record.duration_ms,
          record.attempted_at,
          record.response_body
        ])
        return inserted > 0
      }),
    retryDelivery: (organizationId, endpointId, deliveryId, now) =>
      attempt("webhooks.retryDelivery", () =>
        db.transaction(
          async (sql) => (await sql.run(SQL.retry, [now, deliveryId, organizationId, endpointId])) > 0,
          { lockOrganization: organizationId }
        )
      ),
    pruneDeliveries: (before) =>
      attempt("webhooks.pruneDeliveries", () =>
        db.transaction(async (sql) => {
          await sql.run(SQL.pruneAttempts, [before])
          return (await sql.row<{ count: number }>(SQL.pruneDeliveries, [before]))?.count ?? 0
        })
      )
  }
}

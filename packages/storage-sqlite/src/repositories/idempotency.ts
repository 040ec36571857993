import type { IdempotencyClaimOutcome, IdempotencyRepository } from "@switchboard/core"
import { attempt, type RepositoryFactory, transaction } from "../internal/sql.js"

/**
 * `Storage.idempotency` on SQLite: table `idempotency_keys` (migration 9; `resource_uuid`,
 * the uuid of what the request creates, migration 17), primary key
 * `(organization_id, idempotency_key)`. A claim reads and writes the key's row inside one
 * `BEGIN IMMEDIATE` transaction, so two connections or processes on one file can never
 * both hold a key, and a takeover reads the first claimant's `resource_uuid` in that same
 * transaction (a row written before migration 17 has none: the takeover stores its own);
 * `prune` deletes through the `expires_at` index.
 *
 * @category repositories
 */
export const idempotencyRepository: RepositoryFactory<IdempotencyRepository> = (db, statements) => ({
  claim: (organizationId, { key, fingerprint, resourceUuid, now, lockedUntil, expiresAt }) =>
    attempt("idempotency.claim", () =>
      transaction(db, (): IdempotencyClaimOutcome => {
        const row = statements.prepare<KeyRow>(SQL.find).get(organizationId, key)
        if (row === undefined || row.expires_at <= now) {
          statements.prepare(SQL.upsert).run(organizationId, key, fingerprint, resourceUuid, lockedUntil, expiresAt, now)
          return { _tag: "Claimed", resourceUuid, takeover: false }
        }
        if (row.fingerprint !== fingerprint) return { _tag: "FingerprintMismatch" }
        if (row.response_status !== null && row.response_body !== null) {
          return { _tag: "Completed", status: row.response_status, body: row.response_body }
        }
        if (row.locked_until > now) return { _tag: "InProgress" }
        // A takeover: the first claimant's uuid stays, so its message is answered, not sent again.
        const held = row.resource_uuid ?? resourceUuid
        statements.prepare(SQL.relock).run(lockedUntil, held, organizationId, key)
        return { _tag: "Claimed", resourceUuid: held, takeover: true }
      })
    ),
  complete: (organizationId, key, { status, body }) =>
    attempt("idempotency.complete", () => {
      statements.prepare(SQL.complete).run(status, body, organizationId, key)
    }),
  release: (organizationId, key) =>
    attempt("idempotency.release", () => {
      statements.prepare(SQL.release).run(organizationId, key)
    }),
  prune: (now) => attempt("idempotency.prune", () => statements.prepare(SQL.prune).run(now).changes)
})

/** The columns of `idempotency_keys` a claim reads (`resource_uuid` NULL on rows from before migration 17). */
interface KeyRow {
  readonly fingerprint: string
  readonly resource_uuid: string | null
  readonly locked_until: string
  readonly expires_at: string
  readonly response_status: number | null
  readonly response_body: string | null
}

/** The statements of this repository (exported for the query-plan test). */
export const SQL = {
  find: `SELECT fingerprint, resource_uuid, locked_until, expires_at, response_status, response_body FROM idempotency_keys
    WHERE organization_id = ? AND idempotency_key = ?`,
  upsert: `INSERT INTO idempotency_keys
      (organization_id, idempotency_key, fingerprint, resource_uuid, locked_until, expires_at, response_status, response_body, created_at)
    VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, ?)
    ON CONFLICT (organization_id, idempotency_key) DO UPDATE SET
      fingerprint = excluded.fingerprint, resource_uuid = excluded.resource_uuid, locked_until = excluded.locked_until,
      expires_at = excluded.expires_at, response_status = NULL, response_body = NULL, created_at = excluded.created_at`,
  relock: "UPDATE idempotency_keys SET locked_until = ?, resource_uuid = ? WHERE organization_id = ? AND idempotency_key = ?",
  complete: `UPDATE idempotency_keys SET response_status = ?, response_body = ?
    WHERE organization_id = ? AND idempotency_key = ? AND response_status IS NULL`,
  release: "DELETE FROM idempotency_keys WHERE organization_id = ? AND idempotency_key = ? AND response_status IS NULL",
  prune: "DELETE FROM idempotency_keys WHERE expires_at <= ?"
} as const


import type { IdempotencyClaimOutcome, IdempotencyRepository } from "@switchboard/core"
import { attempt, type RepositoryFactory } from "../internal/sql.js"

/**
 * How many times a claim reruns when the key's row changed between its upsert and its read
 * (released or pruned in between): each rerun is a fresh decision, so this only bounds a
 * pathological interleaving, after which the claim answers `InProgress` (the client retries).
 */
const CLAIM_ATTEMPTS = 5

/**
 * `Storage.idempotency` on PostgreSQL: table `idempotency_keys` (schema/catalog.ts), primary
 * key `(organization_id, idempotency_key)`. A claim is decided by one statement,
 * `INSERT … ON CONFLICT … DO UPDATE … WHERE <the record expired, or the same request's
 * unfinished claim passed its locked_until> RETURNING`: the primary key makes concurrent
 * claims of one key (any process) wait for each other's row lock, and each re-evaluates the
 * condition on the row the previous one left, so exactly one holds the key. A row written
 * answers `Claimed`: over an expired record with the request's own `resource_uuid`
 * (`takeover: false`, every column rewritten), or as a takeover keeping the first
 * claimant's `resource_uuid` (`takeover: true`; a record without one gets the request's).
 * When the condition refuses, a read of the row tells `FingerprintMismatch`, `Completed` or
 * `InProgress`; should the row have changed in between so that it is claimable again, the
 * claim runs again. `complete` writes only a claim not yet completed, `release` deletes only
 * such a claim, and `prune` deletes through the `expires_at` index.
 *
 * @category repositories
 */
export const idempotencyRepository: RepositoryFactory<IdempotencyRepository> = (db) => {
  const SQL = statements(db.schema)
  return {
    claim: (organizationId, { key, fingerprint, resourceUuid, now, lockedUntil, expiresAt }) =>
      attempt("idempotency.claim", async (): Promise<IdempotencyClaimOutcome> => {
        for (let attemptNumber = 1; ; attemptNumber++) {
          const won = await db.sql.row<{ resource_uuid: string; takeover: boolean }>(SQL.claim, [
            organizationId,
            key,
            fingerprint,
            resourceUuid,
            lockedUntil,
            expiresAt,
            now
          ])
          if (won !== undefined) return { _tag: "Claimed", resourceUuid: won.resource_uuid, takeover: won.takeover }
          const row = await db.sql.row<KeyRow>(SQL.find, [organizationId, key, now])
          if (row !== undefined && !row.expired) {
            if (row.fingerprint !== fingerprint) return { _tag: "FingerprintMismatch" }
            if (row.response_status !== null && row.response_body !== null) {
              return { _tag: "Completed", status: row.response_status, body: row.response_body }
            }
            if (row.locked) return { _tag: "InProgress" }
          }
          // Released, pruned, expired or unlocked since the upsert: claimable again.
          if (attemptNumber >= CLAIM_ATTEMPTS) return { _tag: "InProgress" }
        }
      }),
    complete: (organizationId, key, { status, body }) =>
      attempt("idempotency.complete", async () => {
        await db.sql.run(SQL.complete, [status, body, organizationId, key])
      }),
    release: (organizationId, key) =>
      attempt("idempotency.release", async () => {
        await db.sql.run(SQL.release, [organizationId, key])
      }),
    prune: (now) => attempt("idempotency.prune", () => db.sql.run(SQL.prune, [now]))
  }
}

/** What a refused claim reads of the key's row, `expired` and `locked` judged against its `now`. */
interface KeyRow {
  readonly fingerprint: string
  readonly response_status: number | null
  readonly response_body: string | null
  readonly expired: boolean
  readonly locked: boolean
}

/** The statements of this repository on `schema` (quoted). */
const statements = (schema: string) => {
  const table = `${schema}.idempotency_keys`
  // $7 is the claim's `now`; `k` the stored row, `excluded` the request's.
  const expired = "k.expires_at <= $7::timestamptz"
  const fresh = (column: string) => `CASE WHEN ${expired} THEN excluded.${column} ELSE k.${column} END`
  return {
    // Over an expired record every column is the request's; a takeover moves only the lock
    // (and gives a record without a uuid the request's). `takeover` is read off the row
    // written: a fresh claim's `created_at` is the claim's `now`, a taken-over claim's is its
    // first claimant's, which is before `now` since that claim's lock (after its `now`) has
    // passed.
    claim: `INSERT INTO ${table} AS k
        (organization_id, idempotency_key, fingerprint, resource_uuid, locked_until, expires_at, response_status,
          response_body, created_at)
      VALUES ($1, $2, $3, $4, $5, $6, NULL, NULL, $7)
      ON CONFLICT (organization_id, idempotency_key) DO UPDATE SET
        fingerprint = ${fresh("fingerprint")},
        resource_uuid = CASE WHEN ${expired} THEN excluded.resource_uuid
          ELSE COALESCE(k.resource_uuid, excluded.resource_uuid) END,
        locked_until = excluded.locked_until,
        expires_at = ${fresh("expires_at")},
        response_status = ${fresh("response_status")},
        response_body = ${fresh("response_body")},
        created_at = ${fresh("created_at")}
      WHERE ${expired}
        OR (k.fingerprint = excluded.fingerprint AND k.response_status IS NULL AND k.locked_until <= $7::timestamptz)
      RETURNING resource_uuid, created_at <> $7::timestamptz AS takeover`,
    find: `SELECT fingerprint, response_status, response_body, expires_at <= $3::timestamptz AS expired,
        locked_until > $3::timestamptz AS locked
      FROM ${table} WHERE organization_id = $1 AND idempotency_key = $2`,
    complete: `UPDATE ${table} SET response_status = $1, response_body = $2
      WHERE organization_id = $3 AND idempotency_key = $4 AND response_status IS NULL`,
    release: `DELETE FROM ${table} WHERE organization_id = $1 AND idempotency_key = $2 AND response_status IS NULL`,
    prune: `DELETE FROM ${table} WHERE expires_at <= $1`
  } as const
}

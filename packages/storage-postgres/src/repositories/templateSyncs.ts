import { Option } from "effect"
import type { TemplateSyncRepository } from "@switchboard/core"
import { type TemplateSyncRow, templateSyncResultValues, templateSyncStatementsOf, TEMPLATE_SYNC_COLUMNS } from "@switchboard/storage-sql"
import { decoders, postgresDialect, postgresValues } from "../dialect.js"
import { attempt, perSchema, type RepositoryFactory, type Sql } from "../internal/sql.js"

/**
 * `Storage.templateSyncs` on PostgreSQL: table `template_syncs`
 * (schema/templatesFromMeta.ts), instants `timestamptz`. `ensureDue` is one upsert (a
 * channel insert runs it in its transaction: {@link ensureTemplateSyncDue}); `claim` is
 * one statement leasing the due records it locks `FOR UPDATE SKIP LOCKED` (a record
 * another claim holds is passed over), so of claims running together in any number of
 * processes each record goes to one; `renew` and `record` are one conditional update
 * each, written only while the lease holds.
 *
 * @category repositories
 */
export const templateSyncRepository: RepositoryFactory<TemplateSyncRepository> = (db) => {
  const SQL = statementsOf(db.schema)
  return {
    ensureDue: (organizationId, wabaId, dueAt) =>
      attempt("templateSyncs.ensureDue", () => ensureTemplateSyncDue(db.sql, db.schema, organizationId, wabaId, dueAt)),
    claim: ({ now, lease, leaseUntil, limit }) =>
      attempt("templateSyncs.claim", async () =>
        limit <= 0 ? [] : (await db.sql.rows<TemplateSyncRow>(SQL.claim, [now, limit, lease, leaseUntil])).map(decode)
      ),
    claimAccount: (organizationId, wabaId, { lease, leaseUntil, now }) =>
      attempt("templateSyncs.claimAccount", async () => (await db.sql.run(SQL.claimAccount, [lease, leaseUntil, organizationId, wabaId, now])) > 0),
    renew: (organizationId, wabaId, lease, leaseUntil) =>
      attempt("templateSyncs.renew", async () => (await db.sql.run(SQL.renew, [leaseUntil, organizationId, wabaId, lease])) > 0),
    record: (organizationId, wabaId, lease, result) =>
      attempt(
        "templateSyncs.record",
        async () =>
          (await db.sql.run(SQL.record, [...templateSyncResultValues(postgresValues, result), organizationId, wabaId, lease])) > 0
      ),
    get: (organizationId, wabaId) =>
      attempt("templateSyncs.get", async () =>
        Option.map(Option.fromNullable(await db.sql.row<TemplateSyncRow>(SQL.get, [organizationId, wabaId])), decode)
      ),
    nextDueAt: () =>
      attempt("templateSyncs.nextDueAt", async () => Option.fromNullable((await db.sql.row<{ at: string | null }>(SQL.nextDue))?.at))
  }
}

/**
 * The record of an organization's account due at `dueAt` (`TemplateSyncRepository.ensureDue`):
 * one statement, run by `channels.insert` inside its transaction (`sql`).
 */
export const ensureTemplateSyncDue = async (
  sql: Sql,
  schema: string,
  organizationId: string,
  wabaId: string,
  dueAt: string
): Promise<void> => {
  await sql.run(statementsOf(schema).ensureDue, [organizationId, wabaId, dueAt])
}

/**
 * The statements of this repository on `schema` (quoted): @switchboard/storage-sql's, and
 * the claim: one statement, the due records in due order (a range of
 * `template_syncs_due`) locked `FOR UPDATE SKIP LOCKED`, each leased under `$3` until `$4`.
 */
const statementsFor = (schema: string) => ({
  ...templateSyncStatementsOf(postgresDialect(schema)),
  claim: `WITH due AS (
      SELECT organization_id, waba_id FROM ${schema}.template_syncs
      WHERE next_due_at <= $1::timestamptz AND (lease_until IS NULL OR lease_until <= $1::timestamptz)
      ORDER BY next_due_at, organization_id, waba_id LIMIT $2
      FOR UPDATE SKIP LOCKED),
    leased AS (
      UPDATE ${schema}.template_syncs AS t SET lease = $3, lease_until = $4::timestamptz FROM due
      WHERE t.organization_id = due.organization_id AND t.waba_id = due.waba_id
      RETURNING t.*)
    SELECT ${TEMPLATE_SYNC_COLUMNS} FROM leased ORDER BY next_due_at, organization_id, waba_id`
})

/** {@link statementsFor} `schema`, built once per schema. */
const statementsOf = perSchema(statementsFor)

const decode = decoders.templateSync

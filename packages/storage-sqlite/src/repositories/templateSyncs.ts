import { Option } from "effect"
import type { TemplateSync, TemplateSyncRepository } from "@switchboard/core"
import { type TemplateSyncRow, templateSyncResultValues, templateSyncStatementsOf, TEMPLATE_SYNC_COLUMNS } from "@switchboard/storage-sql"
import { decoders, sqliteDialect } from "../dialect.js"
import { attempt, type RepositoryFactory, type Statements, transaction } from "../internal/sql.js"

/**
 * `Storage.templateSyncs` on SQLite: table `template_syncs` (migration 20), instants as
 * ISO 8601 text. `ensureDue` is one upsert (a channel insert runs it in its transaction:
 * {@link ensureTemplateSyncDue}); `claim` selects the due records and leases them inside
 * one `BEGIN IMMEDIATE` transaction, so two connections or processes on one file never
 * lease one record twice (a plain read first: nothing due takes no write lock); `renew`
 * and `record` are one conditional update each, written only while the lease holds.
 *
 * @category repositories
 */
export const templateSyncRepository: RepositoryFactory<TemplateSyncRepository> = (db, statements) => ({
  ensureDue: (organizationId, wabaId, dueAt) =>
    attempt("templateSyncs.ensureDue", () => ensureTemplateSyncDue(statements, organizationId, wabaId, dueAt)),
  claim: ({ now, lease, leaseUntil, limit }) =>
    attempt("templateSyncs.claim", () =>
      limit <= 0 || statements.prepare(SQL.anyDue).get(now, now) === undefined
        ? []
        : transaction(db, () =>
            statements.prepare<TemplateSyncRow>(SQL.due).all(now, now, limit).map((row): TemplateSync => {
              statements.prepare(SQL.lease).run(lease, leaseUntil, row.organization_id, row.waba_id)
              return decode({ ...row, lease, lease_until: leaseUntil })
            })
          )
    ),
  claimAccount: (organizationId, wabaId, { lease, leaseUntil, now }) =>
    attempt("templateSyncs.claimAccount", () => statements.prepare(SQL.claimAccount).run(lease, leaseUntil, organizationId, wabaId, now).changes > 0),
  renew: (organizationId, wabaId, lease, leaseUntil) =>
    attempt("templateSyncs.renew", () => statements.prepare(SQL.renew).run(leaseUntil, organizationId, wabaId, lease).changes > 0),
  record: (organizationId, wabaId, lease, result) =>
    attempt(
      "templateSyncs.record",
      () => statements.prepare(SQL.record).run(...templateSyncResultValues(sqliteDialect, result), organizationId, wabaId, lease).changes > 0
    ),
  get: (organizationId, wabaId) =>
    attempt("templateSyncs.get", () =>
      Option.map(Option.fromNullable(statements.prepare<TemplateSyncRow>(SQL.get).get(organizationId, wabaId)), decode)
    ),
  nextDueAt: () =>
    attempt("templateSyncs.nextDueAt", () => Option.fromNullable(statements.prepare<{ at: string | null }>(SQL.nextDue).get()?.at))
})

/**
 * The record of an organization's account due at `dueAt` (`TemplateSyncRepository.ensureDue`):
 * one statement, run by `channels.insert` inside its transaction.
 */
export const ensureTemplateSyncDue = (statements: Statements, organizationId: string, wabaId: string, dueAt: string): void => {
  statements.prepare(SQL.ensureDue).run(organizationId, wabaId, dueAt)
}

/** The statements of this repository (exported for the query-plan test): @switchboard/storage-sql's and the claim's. */
export const SQL = {
  ...templateSyncStatementsOf(sqliteDialect),
  due: `SELECT ${TEMPLATE_SYNC_COLUMNS} FROM template_syncs
    WHERE next_due_at <= ? AND (lease_until IS NULL OR lease_until <= ?)
    ORDER BY next_due_at, organization_id, waba_id LIMIT ?`,
  lease: "UPDATE template_syncs SET lease = ?, lease_until = ? WHERE organization_id = ? AND waba_id = ?"
} as const

const decode = decoders.templateSync

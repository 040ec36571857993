import type { OrganizationId, TemplateSync, TemplateSyncOutcome, TemplateSyncResult } from "@switchboard/core"
import { compilerOf } from "../compile.js"
import type { SqlDialect, SqlValues } from "../SqlDialect.js"
import type { SqlJson } from "./values.js"

// Rows of `template_syncs` (one per organization and WhatsApp Business Account: core's
// TemplateSyncRepository.ts), their parameters, their decoding and the statements both
// engines write alike. Instants are ISO 8601 text on SQLite, `timestamptz` on PostgreSQL
// (read back as ISO text); `last_outcome` is JSON.

/**
 * A row of `template_syncs`.
 *
 * @category rows
 */
export interface TemplateSyncRow {
  readonly organization_id: string
  readonly waba_id: string
  readonly next_due_at: string
  readonly lease: string | null
  readonly lease_until: string | null
  readonly last_run_at: string | null
  readonly last_outcome: SqlJson
  readonly last_error: string | null
}

/**
 * The columns of a {@link TemplateSyncRow}, in `SELECT` order.
 *
 * @category statements
 */
export const TEMPLATE_SYNC_COLUMNS = "organization_id, waba_id, next_due_at, lease, lease_until, last_run_at, last_outcome, last_error"

/**
 * The sync record of a row, for one dialect's values.
 *
 * @category decoders
 */
export const templateSyncDecoderOf =
  ({ readJson }: SqlValues) =>
  (row: TemplateSyncRow): TemplateSync => ({
    organization_id: row.organization_id as OrganizationId,
    waba_id: row.waba_id,
    next_due_at: row.next_due_at,
    lease: row.lease,
    lease_until: row.lease_until,
    last_run_at: row.last_run_at,
    last_outcome: readJson(row.last_outcome) as TemplateSyncOutcome | null,
    last_error: row.last_error
  })

/**
 * The parameters of `record` after the key: next_due_at, last_run_at, last_outcome (the
 * dialect's JSON), last_error.
 *
 * @category parameters
 */
export const templateSyncResultValues = ({ json }: SqlValues, result: TemplateSyncResult) =>
  [result.next_due_at, result.last_run_at, json(result.last_outcome), result.last_error] as const

/**
 * The statements of `template_syncs` both engines share, compiled for `dialect`:
 *
 * - `ensureDue`: organization, waba, due: the record created due then, or an existing one
 *   brought forward to then when due later (one statement, atomic).
 * - `get`: organization, waba.
 * - `renew`: lease_until, organization, waba, lease.
 * - `record`: {@link templateSyncResultValues}, organization, waba, lease: the result
 *   written and the lease released, only while that lease holds it.
 * - `anyDue`: now twice (a plain read: nothing due takes no write lock).
 * - `nextDue`: none (answers `at`): the earliest `next_due_at`, a leased record's lease
 *   end when later.
 *
 * @category statements
 */
export const templateSyncStatementsOf = (dialect: SqlDialect) => {
  const compile = compilerOf(dialect)
  const syncs = dialect.table("template_syncs")
  const at = dialect.cast("timestamptz")
  return {
    ensureDue: compile(`INSERT INTO ${syncs} AS s (organization_id, waba_id, next_due_at) VALUES (?, ?, ${at})
      ON CONFLICT (organization_id, waba_id) DO UPDATE SET next_due_at = excluded.next_due_at
      WHERE s.next_due_at > excluded.next_due_at`),
    get: compile(`SELECT ${TEMPLATE_SYNC_COLUMNS} FROM ${syncs} WHERE organization_id = ? AND waba_id = ?`),
    renew: compile(`UPDATE ${syncs} SET lease_until = ${at} WHERE organization_id = ? AND waba_id = ? AND lease = ?`),
    record: compile(`UPDATE ${syncs} SET next_due_at = ${at}, last_run_at = ${at}, last_outcome = ${dialect.cast("json")},
      last_error = ?, lease = NULL, lease_until = NULL
      WHERE organization_id = ? AND waba_id = ? AND lease = ?`),
    claimAccount: compile(`UPDATE ${syncs} SET lease = ?, lease_until = ${at}
      WHERE organization_id = ? AND waba_id = ? AND (lease_until IS NULL OR lease_until <= ${at})`),
    anyDue: compile(`SELECT 1 AS found FROM ${syncs}
      WHERE next_due_at <= ${at} AND (lease_until IS NULL OR lease_until <= ${at}) LIMIT 1`),
    nextDue: compile(`SELECT MIN(CASE WHEN lease_until IS NOT NULL AND lease_until > next_due_at THEN lease_until
      ELSE next_due_at END) AS at FROM ${syncs}`)
  }
}

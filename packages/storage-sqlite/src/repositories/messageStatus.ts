import type { MessageFailure, MessageStatus, MessageStatusUpdate, OrganizationId } from "@switchboard/core"
import { statusMove } from "../dialect.js"
import type { Statements } from "../internal/sql.js"
import type { MessageRow } from "./chatRows.js"

// The status writes shared by `Storage.chats` (provider reports, a send recording its provider
// id) and `Storage.outbox` (a dispatcher's outcome, a settlement): one message row at a time,
// inside the caller's `BEGIN IMMEDIATE` transaction.

/** A row of `pending_message_statuses`, as {@link applyPending} reads it (JSON columns as text). */
interface PendingStatusRow {
  readonly status: MessageStatus
  readonly from_statuses: string
  readonly failure: string | null
  readonly reported_at: string
  readonly pending_until: string
}

/** A message row after one or more status writes, and whether any of them changed it. */
export interface StatusWritten<Row extends MessageRow> {
  readonly row: Row
  readonly changed: boolean
}

/** The statements of these writes (exported for the query-plan test). */
export const SQL = {
  // Without `provider_message_id` when it does not change: naming a column in SET makes SQLite
  // rewrite its index entries (messages_by_provider_id) even for the same value, a second WAL
  // page for every status report.
  updateMessage: "UPDATE messages SET status = ?, failure = ?, updated_at = ? WHERE uuid = ?",
  updateMessageAndProviderId: "UPDATE messages SET status = ?, provider_message_id = ?, failure = ?, updated_at = ? WHERE uuid = ?",
  // The dispatch state a message leaves the send queue without (migration 15).
  endDispatch: "UPDATE messages SET next_attempt_at = NULL, pair_rate_waits = 0, lease = NULL, lease_until = NULL WHERE uuid = ?",
  // In arrival order: the rowid ends every index, so this is one range of the index.
  pendingOf: `SELECT status, from_statuses, failure, reported_at, pending_until FROM pending_message_statuses
    WHERE organization_id = ? AND provider_message_id = ? ORDER BY id`,
  deletePendingOf: "DELETE FROM pending_message_statuses WHERE organization_id = ? AND provider_message_id = ?",
  anyPendingOf: "SELECT 1 FROM pending_message_statuses WHERE organization_id = ? AND provider_message_id = ? LIMIT 1"
} as const

export { isWaiting } from "@switchboard/storage-sql"

/**
 * Writes one status update to a message row per the rules of `MessageStatusUpdate`: the
 * status (with the failure given) only from one of `from`, the provider id when given,
 * `updated_at` = `now` when anything changed. A move out of `queued`/`sending` also ends the
 * message's dispatch state in the send queue (`next_attempt_at`, the lease and
 * `pair_rate_waits` cleared; a second statement, run only for a message that has one).
 * Returns the row as stored afterwards.
 */
export const applyStatus = <Row extends MessageRow>(
  statements: Statements,
  row: Row,
  update: Pick<MessageStatusUpdate, "status" | "from" | "failure" | "provider_message_id" | "now">
): StatusWritten<Row> => {
  const move = statusMove(row, update)
  if (!move.changed) return { row, changed: false }
  if (move.providerId === row.provider_message_id) {
    statements.prepare(SQL.updateMessage).run(move.status, move.failure, update.now, row.uuid)
  } else {
    statements.prepare(SQL.updateMessageAndProviderId).run(move.status, move.providerId, move.failure, update.now, row.uuid)
  }
  if (move.ends) statements.prepare(SQL.endDispatch).run(row.uuid)
  return { row: move.row, changed: true }
}

/** Whether any status report waits for `providerMessageId` of the organization (one probe of an index): {@link applyPending} would apply or delete it. */
export const hasPendingStatus = (statements: Statements, organizationId: OrganizationId, providerMessageId: string): boolean =>
  statements.prepare(SQL.anyPendingOf).get(organizationId, providerMessageId) !== undefined

/**
 * Applies to an outbound message the pending status reports of its provider id, in arrival
 * order, each by {@link applyStatus} at `now` (the send's time), skipping those past their
 * `pending_until` at `now`; then deletes them all.
 */
export const applyPending = <Row extends MessageRow>(
  statements: Statements,
  organizationId: OrganizationId,
  row: Row,
  providerMessageId: string,
  now: string
): StatusWritten<Row> => {
  const reports = statements.prepare<PendingStatusRow>(SQL.pendingOf).all(organizationId, providerMessageId)
  let written: StatusWritten<Row> = { row, changed: false }
  for (const report of reports.filter((pending) => pending.pending_until > now)) {
    const next = applyStatus(statements, written.row, {
      status: report.status,
      from: JSON.parse(report.from_statuses) as ReadonlyArray<MessageStatus>,
      failure: report.failure === null ? undefined : (JSON.parse(report.failure) as MessageFailure),
      now
    })
    written = { row: next.row, changed: written.changed || next.changed }
  }
  if (reports.length > 0) statements.prepare(SQL.deletePendingOf).run(organizationId, providerMessageId)
  return written
}

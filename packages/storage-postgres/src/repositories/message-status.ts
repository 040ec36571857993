import type { MessageFailure, MessageStatus, MessageStatusUpdate, OrganizationId } from "@switchboard/core"
import type { Sql } from "../internal/sql.js"
import { jsonOrNull, type MessageRow } from "./chat-rows.js"

// The status writes shared by `Storage.chats` (provider reports, a send recording its provider
// id) and `Storage.outbox` (a dispatcher's outcome, a settlement): one message row at a time,
// inside the caller's transaction, on a row the caller read `FOR UPDATE` (so the read status
// is the stored one until the transaction ends).

/** A row of `pending_message_statuses`, as {@link applyPending} reads it (JSON columns parsed). */
interface PendingStatusRow {
  readonly status: MessageStatus
  readonly from_statuses: ReadonlyArray<MessageStatus>
  readonly failure: MessageFailure | null
  readonly reported_at: string
  readonly pending_until: string
}

/** A message row after one or more status writes, and whether any of them changed it. */
export interface StatusWritten<Row extends MessageRow> {
  readonly row: Row
  readonly changed: boolean
}

/** The statements of these writes. */
const sqlOf = (schema: string) =>
  ({
    updateMessage: `UPDATE ${schema}.messages SET status = $1, provider_message_id = $2, failure = $3::json, updated_at = $4
      WHERE uuid = $5`,
    // The dispatch state a message leaves the send queue without.
    endDispatch: `UPDATE ${schema}.messages SET next_attempt_at = NULL, pair_rate_waits = 0, lease = NULL, lease_until = NULL
      WHERE uuid = $1`,
    // In arrival order: one range of pending_message_statuses_by_provider_id.
    pendingOf: `SELECT status, from_statuses, failure, reported_at, pending_until FROM ${schema}.pending_message_statuses
      WHERE organization_id = $1 AND provider_message_id = $2 ORDER BY id`,
    deletePendingOf: `DELETE FROM ${schema}.pending_message_statuses WHERE organization_id = $1 AND provider_message_id = $2`
  }) as const

/** Whether a message of this status waits in the send queue (`queued` or `sending`). */
export const isWaiting = (status: string): boolean => status === "queued" || status === "sending"

/**
 * Writes one status update to a message row per the rules of `MessageStatusUpdate`: the
 * status (with the failure given) only from one of `from`, the provider id when given,
 * `updated_at` = `now` when anything changed. A move out of `queued`/`sending` also ends the
 * message's dispatch state in the send queue (`next_attempt_at`, the lease and
 * `pair_rate_waits` cleared; a second statement, run only for a message that has one).
 * Returns the row as stored afterwards.
 */
export const applyStatus = async <Row extends MessageRow>(
  sql: Sql,
  schema: string,
  row: Row,
  update: Pick<MessageStatusUpdate, "status" | "from" | "failure" | "provider_message_id" | "now">
): Promise<StatusWritten<Row>> => {
  const written = update.from.includes(row.status as MessageStatus)
  const status = written ? update.status : row.status
  const failure = written && update.failure !== undefined ? update.failure : (row.failure ?? null)
  const providerId = update.provider_message_id ?? row.provider_message_id
  const changed =
    status !== row.status || providerId !== row.provider_message_id || jsonOrNull(failure) !== jsonOrNull(row.failure)
  if (!changed) return { row, changed }
  const statements = sqlOf(schema)
  await sql.run(statements.updateMessage, [status, providerId, jsonOrNull(failure), update.now, row.uuid])
  const ends = !isWaiting(status) && row.next_attempt_at !== null
  if (ends) await sql.run(statements.endDispatch, [row.uuid])
  return {
    row: {
      ...row,
      status,
      provider_message_id: providerId,
      failure,
      updated_at: update.now,
      ...(ends ? { next_attempt_at: null } : {})
    },
    changed
  }
}

/**
 * Applies to an outbound message the pending status reports of its provider id, in arrival
 * order, each by {@link applyStatus} at `now` (the send's time), skipping those past their
 * `pending_until` at `now`; then deletes them all.
 */
export const applyPending = async <Row extends MessageRow>(
  sql: Sql,
  schema: string,
  organizationId: OrganizationId,
  row: Row,
  providerMessageId: string,
  now: string
): Promise<StatusWritten<Row>> => {
  const statements = sqlOf(schema)
  const reports = await sql.rows<PendingStatusRow>(statements.pendingOf, [organizationId, providerMessageId])
  let written: StatusWritten<Row> = { row, changed: false }
  const nowMillis = Date.parse(now)
  for (const report of reports.filter((pending) => Date.parse(pending.pending_until) > nowMillis)) {
    const next = await applyStatus(sql, schema, written.row, {
      status: report.status,
      from: report.from_statuses,
      failure: report.failure ?? undefined,
      now
    })
    written = { row: next.row, changed: written.changed || next.changed }
  }
  if (reports.length > 0) await sql.run(statements.deletePendingOf, [organizationId, providerMessageId])
  return written
}

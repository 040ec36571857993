import type { MessageFailure, MessageStatus, MessageStatusUpdate, OrganizationId } from "@switchboard/core"
import type { Sql } from "../internal/sql.js"
import { isWaiting, type MessageRow } from "./outbox-rows.js"

// The status writes of the send queue (a dispatcher's outcome, a settlement): one message
// row at a time, inside the caller's transaction. The same rules as the chats area's
// provider reports (SQLite's message-status.ts, shared there by both; these could be too).

/** A message row after one or more status writes, and whether any of them changed it. */
export interface StatusWritten<Row extends MessageRow> {
  readonly row: Row
  readonly changed: boolean
}

/** A row of `pending_message_statuses`, as {@link applyPending} reads it. */
interface PendingStatusRow {
  readonly status: MessageStatus
  readonly from_statuses: ReadonlyArray<MessageStatus>
  readonly failure: MessageFailure | null
  readonly pending_until: string
}

/**
 * Writes one status update to a message row per the rules of `MessageStatusUpdate`: the
 * status (with the failure given) only from one of `from`, the provider id when given,
 * `updated_at` = `now` when anything changed; a move out of `queued`/`sending` also ends
 * the dispatch state (`next_attempt_at`, the lease and `pair_rate_waits` cleared) in the
 * same statement. Returns the row as stored afterwards.
 */
export const applyStatus = async <Row extends MessageRow>(
  sql: Sql,
  schema: string,
  row: Row,
  update: Pick<MessageStatusUpdate, "status" | "from" | "failure" | "provider_message_id" | "now">
): Promise<StatusWritten<Row>> => {
  const written = update.from.includes(row.status as MessageStatus)
  const status = written ? update.status : row.status
  const failure = written && update.failure !== undefined ? update.failure : row.failure
  const providerId = update.provider_message_id ?? row.provider_message_id
  const changed =
    status !== row.status || providerId !== row.provider_message_id || JSON.stringify(failure) !== JSON.stringify(row.failure)
  if (!changed) return { row, changed }
  const ends = !isWaiting(status) && row.next_attempt_at !== null
  await sql.run(
    `UPDATE ${schema}.messages SET status = $1, provider_message_id = $2, failure = $3::json, updated_at = $4
      ${ends ? ", next_attempt_at = NULL, pair_rate_waits = 0, lease = NULL, lease_until = NULL" : ""}
    WHERE uuid = $5`,
    [status, providerId, failure === null ? null : JSON.stringify(failure), update.now, row.uuid]
  )
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
 * order, each by {@link applyStatus} at `now`, skipping those past their `pending_until` at
 * `now`; then deletes them all.
 */
export const applyPending = async <Row extends MessageRow>(
  sql: Sql,
  schema: string,
  organizationId: OrganizationId | string,
  row: Row,
  providerMessageId: string,
  now: string
): Promise<StatusWritten<Row>> => {
  const reports = await sql.rows<PendingStatusRow>(
    `DELETE FROM ${schema}.pending_message_statuses WHERE organization_id = $1 AND provider_message_id = $2
      RETURNING id, status, from_statuses, failure, pending_until`,
    [organizationId, providerMessageId]
  )
  reports.sort((a, b) => (a as unknown as { id: number }).id - (b as unknown as { id: number }).id)
  let written: StatusWritten<Row> = { row, changed: false }
  for (const report of reports.filter((pending) => Date.parse(pending.pending_until) > Date.parse(now))) {
    const next = await applyStatus(sql, schema, written.row, {
      status: report.status,
      from: report.from_statuses,
      failure: report.failure === null ? undefined : report.failure,
      now
    })
    written = { row: next.row, changed: written.changed || next.changed }
  }
  return written
}

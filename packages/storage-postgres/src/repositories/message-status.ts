import type { MessageFailure, MessageStatus, MessageStatusUpdate, OrganizationId } from "@switchboard/core"
import type { Sql } from "../internal/sql.js"
import { jsonOrNull, MESSAGE_COLUMNS, messageColumnsOf, type MessageRow } from "./chat-rows.js"

// The status writes shared by `Storage.chats` (provider reports, a send recording its provider
// id) and `Storage.outbox` (a dispatcher's outcome, a settlement): one message row at a time,
// inside the caller's transaction, on a row the caller read `FOR UPDATE` (so the read status
// is the stored one until the transaction ends); `moveByProviderId` reads, locks and moves
// the row in one statement.

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

/**
 * What {@link moveByProviderId} found and did: the outbound message as stored afterwards,
 * its status before, whether anything changed (status or failure), and the uuids of the
 * organization's enabled endpoints subscribed to `message.status_updated` (read only when
 * the status changed, else empty; each locked `FOR KEY SHARE` until the transaction ends,
 * so none is deleted before the deliveries to it are inserted).
 */
export interface ProviderStatusMove {
  readonly row: MessageRow
  readonly previousStatus: string
  readonly changed: boolean
  readonly subscribers: ReadonlyArray<string>
}

/**
 * The statement of {@link moveByProviderId}. Every SET expression and the guard read the
 * newest version of the row: `target` locks it (`FOR NO KEY UPDATE` follows a concurrent
 * update to its newest committed version), and the UPDATE re-checks its WHERE on that
 * version. Parameters: $1 organization, $2 provider id, $3 status, $4 failure (JSON text or
 * NULL), $5 now, $6 the statuses it moves from.
 */
const moveByProviderIdSql = (schema: string) => {
  // The dispatch state ends with a move out of the waiting statuses of a message that has one (as applyStatus).
  const ends = `$3::text NOT IN ('queued', 'sending') AND m.next_attempt_at IS NOT NULL`
  return `WITH target AS (
      SELECT ${MESSAGE_COLUMNS} FROM ${schema}.messages
      WHERE organization_id = $1 AND direction = 'outbound' AND provider_message_id = $2
      LIMIT 1 FOR NO KEY UPDATE
    ), moved AS (
      UPDATE ${schema}.messages AS m SET
        status = $3::text,
        failure = COALESCE($4::text::json, m.failure),
        updated_at = $5,
        next_attempt_at = CASE WHEN ${ends} THEN NULL ELSE m.next_attempt_at END,
        pair_rate_waits = CASE WHEN ${ends} THEN 0 ELSE m.pair_rate_waits END,
        lease = CASE WHEN ${ends} THEN NULL ELSE m.lease END,
        lease_until = CASE WHEN ${ends} THEN NULL ELSE m.lease_until END
      FROM target
      WHERE m.uuid = target.uuid AND m.status = ANY($6::text[])
        AND (m.status <> $3::text OR ($4::text IS NOT NULL AND m.failure::text IS DISTINCT FROM $4::text))
      RETURNING ${messageColumnsOf("m")}
    ), subscribers AS (
      SELECT uuid FROM ${schema}.webhook_endpoints
      WHERE organization_id = $1 AND enabled
        AND (events IS NULL OR EXISTS (
          SELECT 1 FROM json_array_elements_text(events) AS e (value) WHERE e.value = 'message.status_updated'))
        AND EXISTS (SELECT 1 FROM moved, target WHERE moved.status <> target.status)
      FOR KEY SHARE
    )
    SELECT r.*, (SELECT status FROM target) AS previous_status, ARRAY(SELECT uuid FROM subscribers) AS subscribers
    FROM (
      SELECT true AS changed, ${MESSAGE_COLUMNS} FROM moved
      UNION ALL
      SELECT false AS changed, ${MESSAGE_COLUMNS} FROM target WHERE NOT EXISTS (SELECT 1 FROM moved)
    ) AS r`
}

/**
 * A provider's status report applied to the organization's outbound message with that
 * provider id, in one statement of the caller's transaction that locks that message row
 * only (no organization lock): per the rules of {@link applyStatus} (the status, with the
 * failure given, only from one of `from`; `updated_at` = `now` when anything changed; the
 * send queue's dispatch state ended by a move out of `queued`/`sending`), plus the
 * subscribers of `message.status_updated` when the status changed. `undefined` when no
 * outbound message of the organization has that provider id (nothing written, nothing
 * locked).
 */
export const moveByProviderId = async (
  sql: Sql,
  schema: string,
  organizationId: OrganizationId,
  providerMessageId: string,
  update: Pick<MessageStatusUpdate, "status" | "from" | "failure" | "now">
): Promise<ProviderStatusMove | undefined> => {
  const found = await sql.row<MessageRow & { changed: boolean; previous_status: string; subscribers: Array<string> }>(
    moveByProviderIdSql(schema),
    [organizationId, providerMessageId, update.status, jsonOrNull(update.failure), update.now, update.from]
  )
  if (found === undefined) return undefined
  const { changed, previous_status, subscribers, ...row } = found
  return { row, previousStatus: previous_status, changed, subscribers }
}

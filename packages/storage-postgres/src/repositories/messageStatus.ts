import type { MessageFailure, MessageStatus, MessageStatusUpdate, OrganizationId } from "@switchboard/core"
import { statusMove } from "../dialect.js"
import type { Sql } from "../internal/sql.js"
import { jsonOrNull, MESSAGE_COLUMNS, messageColumnsOf, type MessageRow } from "./chatRows.js"
import { subscribesSql } from "./webhookEvents.js"

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

export { isWaiting } from "@switchboard/storage-sql"

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
  const move = statusMove(row, update)
  if (!move.changed) return { row, changed: false }
  const statements = sqlOf(schema)
  await sql.run(statements.updateMessage, [move.status, move.providerId, jsonOrNull(move.failure), update.now, row.uuid])
  if (move.ends) await sql.run(statements.endDispatch, [row.uuid])
  return { row: move.row, changed: true }
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
 * The statement of {@link moveByProviderId} (`alone` false) or {@link moveByProviderIdAlone}
 * (`alone` true). Every SET expression and the guard read the newest version of the row:
 * `target` locks it (`FOR NO KEY UPDATE` follows a concurrent update to its newest
 * committed version), and the UPDATE re-checks its WHERE on that version. Parameters: $1
 * organization, $2 provider id, $3 status, $4 failure (JSON text or NULL), $5 now, $6 the
 * statuses it moves from.
 *
 * With `alone`, the statement runs on its own (autocommit): instead of locking the
 * subscribed endpoints it reads whether any exists (`subscribed`, a plain read of the
 * statement's snapshot), the UPDATE also requires that a status change has no subscriber,
 * and the row answers `blocked` (the status would change but an endpoint subscribes:
 * nothing written) instead of `subscribers`.
 */
const moveByProviderIdSql = (schema: string, alone: boolean) => {
  // The dispatch state ends with a move out of the waiting statuses of a message that has one (as applyStatus).
  const ends = `$3::text NOT IN ('queued', 'sending') AND m.next_attempt_at IS NOT NULL`
  const subscribes = subscribesSql("we", "$1", "'message.status_updated'")
  const subscribed = alone
    ? `, subscribed AS (
      SELECT EXISTS (SELECT 1 FROM ${schema}.webhook_endpoints AS we WHERE ${subscribes}) AS present
    )`
    : ""
  const guard = alone ? `AND (m.status = $3::text OR NOT (SELECT present FROM subscribed))` : ""
  const afterMove = alone
    ? `(SELECT present FROM subscribed) AND NOT EXISTS (SELECT 1 FROM moved)
        AND (SELECT status = ANY($6::text[]) AND status <> $3::text FROM target) AS blocked`
    : `ARRAY(SELECT uuid FROM subscribers) AS subscribers`
  const subscribers = alone
    ? ""
    : `, subscribers AS (
      SELECT we.uuid FROM ${schema}.webhook_endpoints AS we
      WHERE ${subscribes}
        AND EXISTS (SELECT 1 FROM moved, target WHERE moved.status <> target.status AND target.type <> 'reaction')
      FOR KEY SHARE
    )`
  return `WITH target AS (
      SELECT ${MESSAGE_COLUMNS} FROM ${schema}.messages
      WHERE organization_id = $1 AND direction = 'outbound' AND provider_message_id = $2
      LIMIT 1 FOR NO KEY UPDATE
    )${subscribed}, moved AS (
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
        ${guard}
      RETURNING ${messageColumnsOf("m")}
    )${subscribers}
    SELECT r.*, (SELECT status FROM target) AS previous_status, ${afterMove}
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
    moveByProviderIdSql(schema, false),
    [organizationId, providerMessageId, update.status, jsonOrNull(update.failure), update.now, update.from]
  )
  if (found === undefined) return undefined
  const { changed, previous_status, subscribers, ...row } = found
  return { row, previousStatus: previous_status, changed, subscribers }
}

/**
 * What {@link moveByProviderIdAlone} did: `Moved`, the report applied (or refused) with
 * nothing more to write (`row` the message as stored afterwards, `changed` as in
 * {@link ProviderStatusMove}); or `Blocked`, nothing written because the status would
 * change and an endpoint subscribes to `message.status_updated` (its event must be written
 * in the same transaction: run {@link moveByProviderId} in one).
 */
export type LoneProviderStatusMove =
  | { readonly _tag: "Moved"; readonly row: MessageRow; readonly changed: boolean }
  | { readonly _tag: "Blocked" }

/**
 * {@link moveByProviderId} as ONE statement on its own (autocommit on the pool, no
 * BEGIN/COMMIT: one round trip), for the reports that write nothing but the message row:
 * the same rules, locks and result, except that the UPDATE also requires that a status
 * change has no enabled endpoint of the organization subscribed to `message.status_updated`
 * (`Blocked` then: nothing written, the caller reruns the move in a transaction that writes
 * the event with it). A failure-only change or a refused move writes no event, so it is
 * `Moved` whatever the subscribers. `undefined` when no outbound message of the
 * organization has that provider id (nothing written).
 *
 * Safe as one statement: it is atomic (the row, its dispatch state and the send-queue
 * lane's next head, which the `messages_send_queue_head_*` triggers of schema/delivery.ts
 * set inside the UPDATE, move together or not at all: no lane work is left for the
 * caller); under READ COMMITTED the UPDATE re-checks its WHERE (the `from` guard and the
 * status compared with `$3`) on the row's newest version, which `target` locked; the
 * subscriber check reads the statement's snapshot, so an endpoint created concurrently and
 * committed after that snapshot is ordered after this report (as in the transactional
 * path, whose `subscribers` read the same snapshot) and gets no event of it.
 */
export const moveByProviderIdAlone = async (
  sql: Sql,
  schema: string,
  organizationId: OrganizationId,
  providerMessageId: string,
  update: Pick<MessageStatusUpdate, "status" | "from" | "failure" | "now">
): Promise<LoneProviderStatusMove | undefined> => {
  const found = await sql.row<MessageRow & { changed: boolean; previous_status: string; blocked: boolean }>(
    moveByProviderIdSql(schema, true),
    [organizationId, providerMessageId, update.status, jsonOrNull(update.failure), update.now, update.from]
  )
  if (found === undefined) return undefined
  const { changed, previous_status: _previous, blocked, ...row } = found
  return blocked ? { _tag: "Blocked" } : { _tag: "Moved", row, changed }
}

import { pendingStatusValues } from "@switchboard/storage-sql"
import type { OrganizationId, ProviderStatusOutcome, ProviderStatusUpdate } from "@switchboard/core"
import type { Database, Sql } from "../internal/sql.js"
import { decodeMessage, MESSAGE_COLUMNS, type MessageRow } from "./chatRows.js"
import { applyStatus, moveByProviderId, moveByProviderIdAlone } from "./messageStatus.js"
import { insertWebhookEvents, recordWebhookEvent } from "./webhookEvents.js"

/** The statements of the path that keeps the organization's lock (a provider id no message has yet). */
const sqlOf = (s: string) =>
  ({
    // One entry of messages_by_provider_id (organization_id, direction, provider_message_id).
    outboundByProviderId: `SELECT ${MESSAGE_COLUMNS} FROM ${s}.messages
      WHERE organization_id = $1 AND direction = 'outbound' AND provider_message_id = $2 LIMIT 1 FOR UPDATE`,
    insertPending: `INSERT INTO ${s}.pending_message_statuses
        (organization_id, provider_message_id, status, from_statuses, failure, reported_at, pending_until)
      VALUES ($1, $2, $3, $4::json, $5::json, $6, $7)`,
    prunePending: `DELETE FROM ${s}.pending_message_statuses WHERE pending_until <= $1`
  }) as const

/**
 * `chats.updateMessageStatusByProviderId` on PostgreSQL (docs/storage.md "PostgreSQL").
 *
 * The common case, a message with that provider id exists and its report writes no event
 * (no enabled endpoint of the organization subscribes to `message.status_updated`, or the
 * status does not change): ONE autocommit statement on the pool, no BEGIN/COMMIT
 * ({@link moveByProviderIdAlone}: it locks the message row, moves it, ends its send-queue
 * dispatch state, atomically; one round trip). When the status would change and an
 * endpoint subscribes, that statement writes nothing (`Blocked`) and the report runs as
 * one transaction of three round trips (BEGIN, {@link moveByProviderId}, COMMIT) plus
 * one statement writing the `message.status_updated` event and its deliveries, so the
 * event commits with the change. Neither takes an organization lock: the message row's
 * own lock orders the reports of one message (the UPDATE re-checks `from` on the row's
 * newest version), so reports of different messages run in parallel. The transaction locks
 * that row, then the subscribed endpoints `FOR KEY SHARE` and the organization's row `FOR
 * KEY SHARE` (the foreign keys of the event rows), which conflicts with no lock the
 * organization's other transactions take (`FOR NO KEY UPDATE`). An endpoint created
 * concurrently, committed after the statement's snapshot, is ordered after the report (no
 * event of it), on either path.
 *
 * Otherwise (no message has that provider id in the statement's snapshot), a transaction
 * that locks the organization's row first, as every write recording a provider id does: it
 * reads the message again (a send that recorded the id meanwhile is seen) and applies the
 * report to it (with its event), or stores it as pending until `update.pendingUntil`
 * (pruning the expired ones) for `updateMessageStatus` to apply when it records that id.
 * Answers `Updated` (the message as stored afterwards, `changed` when its status or
 * failure changed) or `Pending`. Rejects with the driver's error.
 */
export const updateStatusByProviderId = async (
  db: Database,
  organizationId: OrganizationId,
  providerMessageId: string,
  update: ProviderStatusUpdate
): Promise<ProviderStatusOutcome> => {
  const s = db.schema
  const alone = await moveByProviderIdAlone(db.sql, s, organizationId, providerMessageId, update)
  if (alone?._tag === "Moved") return { _tag: "Updated", message: decodeMessage(alone.row), changed: alone.changed }
  const moved =
    alone === undefined
      ? undefined
      : await db.transaction(async (sql): Promise<ProviderStatusOutcome | undefined> => {
          const found = await moveByProviderId(sql, s, organizationId, providerMessageId, update)
          if (found === undefined) return undefined
          const message = decodeMessage(found.row)
          await insertWebhookEvents(sql, s, organizationId, "message.status_updated", update.now, found.subscribers, [message])
          return { _tag: "Updated", message, changed: found.changed }
        })
  return (
    moved ??
    db.transaction((sql) => statusOrPending(sql, s, organizationId, providerMessageId, update), {
      lockOrganization: organizationId
    })
  )
}

/** The report applied to the message with the provider id, or stored as pending; inside a transaction holding the organization's lock. */
const statusOrPending = async (
  sql: Sql,
  s: string,
  organizationId: OrganizationId,
  providerMessageId: string,
  update: ProviderStatusUpdate
): Promise<ProviderStatusOutcome> => {
  const SQL = sqlOf(s)
  const row = await sql.row<MessageRow>(SQL.outboundByProviderId, [organizationId, providerMessageId])
  if (row !== undefined) {
    const written = await applyStatus(sql, s, row, update)
    const message = decodeMessage(written.row)
    if (written.row.status !== row.status) {
      await recordWebhookEvent(sql, s, organizationId, "message.status_updated", update.now, () => message)
    }
    return { _tag: "Updated", message, changed: written.changed }
  }
  await sql.run(SQL.prunePending, [update.now])
  await sql.run(SQL.insertPending, pendingStatusValues(organizationId, providerMessageId, update))
  return { _tag: "Pending" }
}

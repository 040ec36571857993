import { Option } from "effect"
import type {
  BroadcastCancelOutcome,
  BroadcastId,
  BroadcastRepository,
  ContactId,
  MessageFailure,
  OrganizationId
} from "@switchboard/core"
import { attempt, type RepositoryFactory, type Sql } from "../internal/sql.js"
import { audiencePage, countAudience } from "./broadcastAudience.js"
import {
  BROADCAST_COLUMNS,
  type BroadcastRow,
  decodeBroadcast,
  decodeRecipient,
  type RecipientRow,
  recordOf,
  recordsOf,
  ZERO_COUNTS
} from "./broadcastRows.js"
import { writeRecipientBatch } from "./broadcastWrite.js"
import { failQueuedBroadcastMessages } from "./outboxInsert.js"
import { recordWebhookEvent } from "./webhookEvents.js"

/** The statements of this repository, for a schema (already quoted). */
const statementsOf = (s: string) => {
  const recipientSelect = `SELECT m.contact_uuid, COALESCE(m.recipient, c.phone) AS phone, m.uuid AS message_uuid,
      m.status, m.failure
    FROM ${s}.messages AS m LEFT JOIN ${s}.contacts AS c ON c.uuid = m.contact_uuid`
  return {
    insert: `INSERT INTO ${s}.broadcasts (${BROADCAST_COLUMNS})
      VALUES ($1, $2, $3, $4, $5::json, $6::json, $7, $8, $9, $10, NULL, NULL, NULL, false, NULL, NULL, $11)`,
    find: `SELECT ${BROADCAST_COLUMNS} FROM ${s}.broadcasts WHERE organization_id = $1 AND uuid = $2`,
    findLocked: `SELECT ${BROADCAST_COLUMNS} FROM ${s}.broadcasts WHERE organization_id = $1 AND uuid = $2 FOR UPDATE`,
    // Keyset pages of broadcasts_newest, newest first.
    listFirst: `SELECT ${BROADCAST_COLUMNS} FROM ${s}.broadcasts WHERE organization_id = $1
      ORDER BY created_at DESC, uuid DESC LIMIT $2`,
    listAfter: `SELECT ${BROADCAST_COLUMNS} FROM ${s}.broadcasts WHERE organization_id = $1
        AND (created_at, uuid) < ($2::timestamptz, $3::text)
      ORDER BY created_at DESC, uuid DESC LIMIT $4`,
    // The organization's sending broadcasts: the partial index broadcasts_sending (every
    // sending broadcast, a handful), filtered by organization.
    sending: `SELECT ${BROADCAST_COLUMNS} FROM ${s}.broadcasts WHERE status = 'sending' AND organization_id = $1
      ORDER BY created_at, uuid`,
    // One range of messages_broadcast_recipients / messages_broadcast_statuses, in contact-uuid order.
    recipients: `${recipientSelect}
      WHERE m.broadcast_uuid = $1 AND m.contact_uuid > $2 AND COALESCE(m.recipient, c.phone) IS NOT NULL
      ORDER BY m.contact_uuid LIMIT $3`,
    recipientsWithStatus: `${recipientSelect}
      WHERE m.broadcast_uuid = $1 AND m.status = $4 AND m.contact_uuid > $2 AND COALESCE(m.recipient, c.phone) IS NOT NULL
      ORDER BY m.contact_uuid LIMIT $3`,
    // A start to resume (its lease free or ended), then a due scheduled broadcast, locked
    // SKIP LOCKED: of starters claiming together, each takes another (or none).
    resumable: `SELECT ${BROADCAST_COLUMNS} FROM ${s}.broadcasts
      WHERE status = 'sending' AND NOT start_finished AND (start_lease_until IS NULL OR start_lease_until <= $1)
      ORDER BY start_lease_until NULLS FIRST LIMIT 1 FOR UPDATE SKIP LOCKED`,
    dueScheduled: `SELECT ${BROADCAST_COLUMNS} FROM ${s}.broadcasts
      WHERE status = 'scheduled' AND send_at <= $1 ORDER BY send_at LIMIT 1 FOR UPDATE SKIP LOCKED`,
    // nextStartDueAt: those two branches without their time bound, in epoch ms: the
    // earliest send_at (broadcasts_scheduled), 0 for an unfinished start whose lease is free,
    // the earliest lease end of one (broadcasts_sending; ascending puts NULLs last, so each
    // probe reads the index in its order, no sort). LEAST ignores a NULL (nothing found):
    // NULL only when all three are.
    nextStartDue: `SELECT LEAST(
        (SELECT round(extract(epoch FROM send_at) * 1000) FROM ${s}.broadcasts
          WHERE status = 'scheduled' AND send_at IS NOT NULL ORDER BY send_at LIMIT 1),
        (SELECT 0 FROM ${s}.broadcasts
          WHERE status = 'sending' AND NOT start_finished AND start_lease_until IS NULL LIMIT 1),
        (SELECT start_lease_until FROM ${s}.broadcasts
          WHERE status = 'sending' AND NOT start_finished AND start_lease_until IS NOT NULL
          ORDER BY start_lease_until LIMIT 1)
      ) AS due`,
    claim: `UPDATE ${s}.broadcasts SET status = 'sending', started_at = COALESCE(started_at, $1), start_lease = $2,
        start_lease_until = $3
      WHERE uuid = $4 RETURNING ${BROADCAST_COLUMNS}`,
    recipientsAmong: `SELECT contact_uuid FROM ${s}.messages WHERE broadcast_uuid = $1 AND contact_uuid = ANY($2::text[])`,
    storeStart: `UPDATE ${s}.broadcasts SET start_cursor = $1, start_finished = $2, start_lease = $3, start_lease_until = $4
      WHERE uuid = $5`,
    end: `UPDATE ${s}.broadcasts SET status = $1, completed_at = $2, stopped_reason = $3::json, start_lease = NULL,
        start_lease_until = NULL
      WHERE uuid = $4 RETURNING ${BROADCAST_COLUMNS}`,
    // The sending broadcasts whose start finished and none of whose recipients waits.
    finished: `SELECT b.uuid, b.organization_id FROM ${s}.broadcasts AS b
      WHERE b.status = 'sending' AND b.start_finished
        AND NOT EXISTS (SELECT 1 FROM ${s}.messages AS m WHERE m.broadcast_uuid = b.uuid AND m.status IN ('queued', 'sending'))`,
    complete: `UPDATE ${s}.broadcasts AS b SET status = 'completed', completed_at = $1
      WHERE b.uuid = $2 AND b.status = 'sending' AND b.start_finished
        AND NOT EXISTS (SELECT 1 FROM ${s}.messages AS m WHERE m.broadcast_uuid = b.uuid AND m.status IN ('queued', 'sending'))
      RETURNING ${BROADCAST_COLUMNS}`
  }
}

/**
 * Ends a `scheduled` or `sending` broadcast of the organization as `status`, inside the
 * caller's transaction (the organization locked): `completed_at` = `now`, `stopped_reason`
 * = `failure` when `stopped`, its start lease ended, its `queued` recipients failed with
 * `failure` (set-based, an event each). `NotFound` or `Refused` write nothing.
 */
const end = async (
  sql: Sql,
  schema: string,
  organizationId: OrganizationId,
  id: BroadcastId,
  status: "cancelled" | "stopped",
  failure: MessageFailure,
  now: string
): Promise<BroadcastCancelOutcome> => {
  const SQL = statementsOf(schema)
  const row = await sql.row<BroadcastRow>(SQL.findLocked, [organizationId, id])
  if (row === undefined) return { _tag: "NotFound" }
  if (row.status !== "scheduled" && row.status !== "sending") {
    return { _tag: "Refused", broadcast: await recordOf(sql, schema, row) }
  }
  const ended = await sql.row<BroadcastRow>(SQL.end, [status, now, status === "stopped" ? JSON.stringify(failure) : null, id])
  await failQueuedBroadcastMessages(sql, schema, organizationId, id, failure, now)
  return { _tag: "Done", broadcast: await recordOf(sql, schema, ended!) }
}

/**
 * `Storage.broadcasts` on PostgreSQL: table `broadcasts`, the recipients as rows of
 * `messages` with `broadcast_uuid` set (schema/delivery.ts). A batch of recipients is written
 * set-based with the effect of `chats.appendMessage`'s writes for each (broadcastWrite.ts:
 * a fixed number of statements per batch), so a recipient is a chat message like any
 * single send.
 * `writeRecipients` (a whole batch), `cancel` and `stop` are each one transaction that
 * locks the organization first, then the broadcast; a batch is written only while the
 * start's lease token matches. `claimStart` locks the broadcast it takes
 * `FOR UPDATE SKIP LOCKED` (starters claiming together take different ones);
 * `completeFinished` completes each finished broadcast in its own transaction, guarded by
 * the same conditions. A cancel fails the waiting recipients set-based (outboxInsert.ts):
 * without a subscribed endpoint one statement, else batches read back for their events.
 * Counts are computed at every read from the recipients' statuses.
 *
 * @category repositories
 */
export const broadcastRepository: RepositoryFactory<BroadcastRepository> = (db) => {
  const s = db.schema
  const SQL = statementsOf(s)
  return {
    create: (organizationId, broadcast) =>
      attempt("broadcasts.create", async () => {
        const startedAt = broadcast.status === "sending" ? broadcast.now : null
        // ON CONFLICT: a held uuid (an Idempotency-Key's) whose other writer stored first.
        const row = await db.sql.row<BroadcastRow>(`${SQL.insert} ON CONFLICT (uuid) DO NOTHING RETURNING ${BROADCAST_COLUMNS}`, [
          organizationId,
          broadcast.uuid,
          broadcast.name,
          broadcast.status,
          JSON.stringify(broadcast.template),
          JSON.stringify(broadcast.audience),
          broadcast.channel_uuid,
          broadcast.send_at,
          broadcast.now,
          startedAt,
          broadcast.transport
        ])
        if (row !== undefined) return decodeBroadcast(row, ZERO_COUNTS)
        const stored = await db.sql.row<BroadcastRow>(SQL.find, [organizationId, broadcast.uuid])
        if (stored === undefined) throw new Error(`broadcasts.create: uuid ${broadcast.uuid} is another organization's`)
        return recordOf(db.sql, s, stored)
      }),
    findById: (organizationId, id) =>
      attempt("broadcasts.findById", () =>
        db.snapshot(async (sql) => {
          const row = await sql.row<BroadcastRow>(SQL.find, [organizationId, id])
          return row === undefined ? Option.none() : Option.some(await recordOf(sql, s, row))
        })
      ),
    list: (organizationId, { after, limit }) =>
      attempt("broadcasts.list", () =>
        db.snapshot(async (sql) =>
          recordsOf(
            sql,
            s,
            after === null
              ? await sql.rows<BroadcastRow>(SQL.listFirst, [organizationId, limit])
              : await sql.rows<BroadcastRow>(SQL.listAfter, [organizationId, after.created_at, after.uuid, limit])
          )
        )
      ),
    sending: (organizationId) =>
      attempt("broadcasts.sending", () =>
        db.snapshot(async (sql) => recordsOf(sql, s, await sql.rows<BroadcastRow>(SQL.sending, [organizationId])))
      ),
    recipients: (organizationId, id, { after, limit, status }) =>
      attempt("broadcasts.recipients", () =>
        db.snapshot(async (sql) => {
          if ((await sql.row(SQL.find, [organizationId, id])) === undefined) return []
          const rows =
            status === null
              ? await sql.rows<RecipientRow>(SQL.recipients, [id, after ?? "", limit])
              : await sql.rows<RecipientRow>(SQL.recipientsWithStatus, [id, after ?? "", limit, status])
          return rows.map(decodeRecipient)
        })
      ),
    countAudience: (organizationId, audience) =>
      attempt("broadcasts.countAudience", () => countAudience(db.sql, s, organizationId, audience)),
    audiencePage: (organizationId, audience, after, limit) =>
      attempt("broadcasts.audiencePage", () =>
        db.snapshot((sql) => audiencePage(sql, s, organizationId, audience, after, limit))
      ),
    claimStart: (request) =>
      attempt("broadcasts.claimStart", () =>
        db.transaction(async (sql) => {
          const nowIso = new Date(request.now).toISOString()
          const due =
            (await sql.row<BroadcastRow>(SQL.resumable, [request.now])) ??
            (await sql.row<BroadcastRow>(SQL.dueScheduled, [nowIso]))
          if (due === undefined) return Option.none()
          const claimed = (await sql.row<BroadcastRow>(SQL.claim, [nowIso, request.lease, request.leaseUntil, due.uuid]))!
          return Option.some({
            organization_id: claimed.organization_id as OrganizationId,
            broadcast: await recordOf(sql, s, claimed),
            lease: request.lease,
            cursor: due.start_cursor as ContactId | null
          })
        })
      ),
    nextStartDueAt: () =>
      attempt("broadcasts.nextStartDueAt", async () => (await db.sql.row<{ due: number | null }>(SQL.nextStartDue))?.due ?? null),
    writeRecipients: (organizationId, id, lease, batch) =>
      attempt("broadcasts.writeRecipients", () =>
        db.transaction(async (sql) => {
          const row = await sql.row<BroadcastRow>(SQL.findLocked, [organizationId, id])
          if (row === undefined || row.status !== "sending" || row.start_lease !== lease) return false
          const written = new Set(
            (await sql.rows<{ contact_uuid: string }>(SQL.recipientsAmong, [
              id,
              batch.recipients.map((recipient) => recipient.contact_uuid)
            ])).map((found) => found.contact_uuid)
          )
          const fresh = batch.recipients.filter((recipient) => {
            if (written.has(recipient.contact_uuid)) return false
            written.add(recipient.contact_uuid)
            return true
          })
          await writeRecipientBatch(sql, s, organizationId, id, fresh, batch.now)
          await sql.run(SQL.storeStart, [
            batch.cursor,
            batch.finished,
            batch.finished ? null : lease,
            batch.finished ? null : batch.leaseUntil,
            id
          ])
          return true
        }, { lockOrganization: organizationId })
      ),
    cancel: (organizationId, id, failure, now) =>
      attempt("broadcasts.cancel", () =>
        db.transaction((sql) => end(sql, s, organizationId, id, "cancelled", failure, now), { lockOrganization: organizationId })
      ),
    stop: (organizationId, id, reason, now) =>
      attempt("broadcasts.stop", () =>
        db.transaction(async (sql) => {
          const outcome = await end(sql, s, organizationId, id, "stopped", reason, now)
          return outcome._tag === "Done" ? Option.some(outcome.broadcast) : Option.none()
        }, { lockOrganization: organizationId })
      ),
    completeFinished: (now) =>
      attempt("broadcasts.completeFinished", async () => {
        const finished = await db.sql.rows<{ uuid: string; organization_id: string }>(SQL.finished)
        const completed = []
        for (const { organization_id: organizationId, uuid } of finished) {
          const record = await db.transaction(async (sql) => {
            const row = await sql.row<BroadcastRow>(SQL.complete, [now, uuid])
            if (row === undefined) return undefined
            const broadcast = await recordOf(sql, s, row)
            await recordWebhookEvent(sql, s, organizationId, "broadcast.completed", now, () => broadcast)
            return broadcast
          }, { lockOrganization: organizationId })
          if (record !== undefined) completed.push(record)
        }
        return completed
      })
  }
}

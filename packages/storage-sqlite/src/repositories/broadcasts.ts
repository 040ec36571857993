import { Option } from "effect"
import type {
  BroadcastCancelOutcome,
  BroadcastId,
  BroadcastRepository,
  ContactId,
  MessageFailure,
  OrganizationId
} from "@switchboard/core"
import { decoders } from "../dialect.js"
import { attempt, type RepositoryFactory, snapshot, type Statements, transaction } from "../internal/sql.js"
import { audiencePage } from "./broadcastAudience.js"
import { type BroadcastRow, recordOf, recordsOf, type RecipientRow, SQL, ZERO_COUNTS } from "./broadcastRows.js"
import { writeRecipient } from "./broadcastWrite.js"
import { failQueuedBroadcastMessages } from "./outboxInsert.js"
import { jsonArray, withRelations } from "./rows.js"
import { recordWebhookEvent } from "./webhookEvents.js"

/** The body of `claimStart`, inside its transaction: the first start due, leased; `undefined` when none is. */
const claimStart = (
  statements: Statements,
  request: { readonly now: number; readonly lease: string; readonly leaseUntil: number }
) => {
  const nowIso = new Date(request.now).toISOString()
  const due =
    statements.prepare<BroadcastRow>(SQL.resumable).get(request.now) ??
    statements.prepare<BroadcastRow>(SQL.dueScheduled).get(nowIso)
  if (due === undefined) return undefined
  const claimed = statements
    .prepare<BroadcastRow>(SQL.claim)
    .get(nowIso, request.lease, request.leaseUntil, due.uuid)!
  return {
    organization_id: claimed.organization_id as OrganizationId,
    broadcast: recordOf(statements, claimed),
    lease: request.lease,
    cursor: due.start_cursor as ContactId | null
  }
}

/**
 * Ends a `scheduled` or `sending` broadcast of the organization as `status`, inside the
 * caller's transaction: `completed_at` = `now`, `stopped_reason` = `failure` when
 * `stopped`, its start lease ended, its `queued` recipients failed with `failure` (an
 * event each). `NotFound` or `Refused` (it already ended) write nothing.
 */
const end = (
  statements: Statements,
  organizationId: OrganizationId,
  id: BroadcastId,
  status: "cancelled" | "stopped",
  failure: MessageFailure,
  now: string
): BroadcastCancelOutcome => {
  const row = statements.prepare<BroadcastRow>(SQL.find).get(organizationId, id)
  if (row === undefined) return { _tag: "NotFound" }
  if (row.status !== "scheduled" && row.status !== "sending") return { _tag: "Refused", broadcast: recordOf(statements, row) }
  const ended = statements
    .prepare<BroadcastRow>(SQL.end)
    .get(status, now, status === "stopped" ? JSON.stringify(failure) : null, id)!
  failQueuedBroadcastMessages(statements, organizationId, id, failure, now)
  return { _tag: "Done", broadcast: recordOf(statements, ended) }
}

export { SQL } from "./broadcastRows.js"

/**
 * `Storage.broadcasts` on SQLite: table `broadcasts`, the recipients as rows of `messages`
 * with `broadcast_uuid` set (migration 18, schema/delivery.ts). A recipient is
 * written by `chats.appendMessage`'s own writes (chats.ts `writeAppendedMessage` through broadcastWrite.ts, the send
 * queue's placement in outboxInsert.ts), so it is a chat message like any single send.
 * `claimStart`, `writeRecipients` (a whole batch), `cancel`, `stop` and `completeFinished`
 * are each one `BEGIN IMMEDIATE` transaction, so of several connections or processes on
 * one file one claimant holds a start and a batch is written only under its lease; events
 * (`message.status_updated` of the recipients a cancel or stop fails, `broadcast.completed`)
 * are written in those transactions (webhookEvents.ts). `claimStart` and `completeFinished`
 * first look with plain reads, so an idle starter takes no write lock; `nextStartDueAt` is
 * one read (the first row of each of claimStart's two ranges). Counts are computed
 * at every read from the recipients' statuses (one GROUP BY for a whole page of records).
 *
 * @category repositories
 */
export const broadcastRepository: RepositoryFactory<BroadcastRepository> = (db, statements) => ({
  create: (organizationId, broadcast) =>
    attempt("broadcasts.create", () => transaction(db, () => {
      // A held uuid (an Idempotency-Key's) whose other writer stored first: that broadcast.
      const stored = statements.prepare<BroadcastRow>(SQL.find).get(organizationId, broadcast.uuid)
      if (stored !== undefined) return recordOf(statements, stored)
      const row: BroadcastRow = {
        organization_id: organizationId,
        uuid: broadcast.uuid,
        name: broadcast.name,
        status: broadcast.status,
        template: JSON.stringify(broadcast.template),
        audience: JSON.stringify(broadcast.audience),
        channel_uuid: broadcast.channel_uuid,
        send_at: broadcast.send_at,
        created_at: broadcast.now,
        started_at: broadcast.status === "sending" ? broadcast.now : null,
        completed_at: null,
        stopped_reason: null,
        start_cursor: null,
        start_finished: 0,
        start_lease: null,
        start_lease_until: null,
        transport: broadcast.transport
      }
      statements.prepare(SQL.insert).run(row)
      return decoders.broadcasts.broadcast(row, ZERO_COUNTS)
    })),
  findById: (organizationId, id) =>
    attempt("broadcasts.findById", () =>
      snapshot(db, () => {
        const row = statements.prepare<BroadcastRow>(SQL.find).get(organizationId, id)
        return row === undefined ? Option.none() : Option.some(recordOf(statements, row))
      })
    ),
  list: (organizationId, { limit, after }) =>
    attempt("broadcasts.list", () =>
      snapshot(db, () =>
        recordsOf(
          statements,
          after === null
            ? statements.prepare<BroadcastRow>(SQL.listFirst).all(organizationId, limit)
            : statements.prepare<BroadcastRow>(SQL.listAfter).all(organizationId, after.created_at, after.uuid, limit)
        )
      )
    ),
  sending: (organizationId) =>
    attempt("broadcasts.sending", () =>
      snapshot(db, () => recordsOf(statements, statements.prepare<BroadcastRow>(SQL.sending).all(organizationId)))
    ),
  recipients: (organizationId, id, { status, limit, after }) =>
    attempt("broadcasts.recipients", () =>
      snapshot(db, () => {
        if (statements.prepare(SQL.find).get(organizationId, id) === undefined) return []
        const rows =
          status === null
            ? statements.prepare<RecipientRow>(SQL.recipients).all(id, after ?? "", limit)
            : statements.prepare<RecipientRow>(SQL.recipientsWithStatus).all(id, status, after ?? "", limit)
        return rows.map(decoders.broadcasts.recipient)
      })
    ),
  countAudience: (organizationId, audience) =>
    attempt("broadcasts.countAudience", () =>
      statements.prepare<{ count: number }>(SQL.countAudience).get({
        organization: organizationId,
        groups: jsonArray(audience.group_uuids),
        labels: jsonArray(audience.label_uuids),
        contacts: jsonArray(audience.contact_uuids)
      })!.count
    ),
  audiencePage: (organizationId, audience, after, limit) =>
    attempt("broadcasts.audiencePage", () =>
      snapshot(db, () => withRelations(statements, audiencePage(statements, organizationId, audience, after, limit)))
    ),
  claimStart: (request) =>
    attempt("broadcasts.claimStart", () => {
      const anyDue = snapshot(
        db,
        () =>
          statements.prepare(SQL.resumable).get(request.now) !== undefined ||
          statements.prepare(SQL.dueScheduled).get(new Date(request.now).toISOString()) !== undefined
      )
      return anyDue ? Option.fromNullable(transaction(db, () => claimStart(statements, request))) : Option.none()
    }),
  nextStartDueAt: () =>
    attempt("broadcasts.nextStartDueAt", () => {
      const row = statements.prepare<{ send_at: string | null; lease_until: number | null }>(SQL.nextStartDue).get()!
      const due = [row.send_at === null ? null : Date.parse(row.send_at), row.lease_until].filter((ms): ms is number => ms !== null)
      return due.length === 0 ? null : Math.min(...due)
    }),
  writeRecipients: (organizationId, id, lease, batch) =>
    attempt("broadcasts.writeRecipients", () =>
      transaction(db, () => {
        const row = statements.prepare<BroadcastRow>(SQL.find).get(organizationId, id)
        if (row === undefined || row.status !== "sending" || row.start_lease !== lease) return false
        for (const recipient of batch.recipients) writeRecipient(statements, organizationId, id, recipient, batch.now)
        statements
          .prepare(SQL.storeStart)
          .run(
            batch.cursor,
            batch.finished ? 1 : 0,
            batch.finished ? null : lease,
            batch.finished ? null : batch.leaseUntil,
            id
          )
        return true
      })
    ),
  cancel: (organizationId, id, failure, now) =>
    attempt("broadcasts.cancel", () => transaction(db, () => end(statements, organizationId, id, "cancelled", failure, now))),
  stop: (organizationId, id, reason, now) =>
    attempt("broadcasts.stop", () =>
      transaction(db, () => {
        const outcome = end(statements, organizationId, id, "stopped", reason, now)
        return outcome._tag === "Done" ? Option.some(outcome.broadcast) : Option.none()
      })
    ),
  completeFinished: (now) =>
    attempt("broadcasts.completeFinished", () => {
      const finished = snapshot(db, () => statements.prepare<string>(SQL.finished).pluck().all())
      if (finished.length === 0) return []
      return transaction(db, () =>
        finished.flatMap((id) => {
          const row = statements.prepare<BroadcastRow>(SQL.complete).get(now, id)
          if (row === undefined) return []
          const record = recordOf(statements, row)
          recordWebhookEvent(statements, row.organization_id as OrganizationId, "broadcast.completed", now, () => record)
          return [record]
        })
      )
    })
})

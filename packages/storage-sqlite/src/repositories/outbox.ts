import { Option } from "effect"
import {
  type ChannelQueueFigures,
  type GroupedCall,
  groupedQueue,
  type Message,
  type MessageStatus,
  type OrganizationId,
  type OutboxMoveOutcome,
  type OutboxRepository,
  type OutboxSummaryRow,
  type StorageError
} from "@switchboard/core"
import { RECORD_GROUP_SIZE, RECORD_GROUP_WINDOW_MS, type LeanableRecord, type RecordRequest, recordThrough } from "@switchboard/storage-sql"
import { attempt, type RepositoryFactory, snapshot, transaction, transactionPerGroup } from "../internal/sql.js"
import { forgetChannels } from "./channelCache.js"
import { type ChannelRow, decodeChannel } from "./channelRows.js"
import { decodeMessage } from "./chatRows.js"
import { anyDue, claimDue, nextDue } from "./outboxClaim.js"
import { recordOutcome, recordSentLean, settleMessage } from "./outboxRecord.js"
import { ENDED, type QueuedRow, retried, SQL, writeRow } from "./outboxRows.js"
import { recordWebhookEvent } from "./webhookEvents.js"

export { dueSql, SQL } from "./outboxRows.js"

/**
 * `Storage.outbox` on SQLite: the send queue's messages are rows of `messages` with their
 * dispatch state and each channel's pacing state is on its `channels` row (migration 15,
 * schema/delivery.ts); messages enter through `chats.appendMessage`
 * (outboxInsert.ts `insertOutboxMessage`). Every write is one `BEGIN IMMEDIATE` transaction (the
 * `record`s asked for within a few ms share one), so of
 * several connections or processes on one file each message goes to one claim, pacing
 * slots are reserved exactly and the lease guards hold. A claim first finds, with plain
 * reads, whether any channel has a due head, so an idle dispatcher takes no write lock;
 * then, under the lock: the channels with waiting messages (a loose index scan), per
 * channel and class the due heads a page at a time (a range of `messages_send_queue_due`),
 * taken round-robin, one per channel per turn, each reserving its slot (once a channel has
 * no slot left within the horizon, only its expired heads, from
 * `messages_send_queue_expiry`); then one `pacing_tat` write per paced channel. The heads
 * are kept by the triggers of migration 15. Events (`message.status_updated`,
 * `channel.paused`, `channel.resumed`) are written in the same transactions
 * (webhookEvents.ts).
 *
 * @category repositories
 */
export const outboxRepository: RepositoryFactory<OutboxRepository> = (db, statements) => {
  const queued = (organizationId: OrganizationId, id: string) =>
    statements.prepare<QueuedRow>(SQL.queued).get(organizationId, id)
  const recordOne = ({ id, lease, outcome, now }: RecordRequest): Option.Option<Message> => {
    const row = statements.prepare<QueuedRow>(SQL.leased).get(id, lease)
    if (row === undefined) return Option.none()
    const message = recordOutcome(statements, row, outcome, now)
    // A `Paused` outcome may have paused the channel: the cached channels start over.
    if (outcome._tag === "Paused") forgetChannels(db)
    return Option.some(message)
  }
  // The outcomes recorded within RECORD_GROUP_WINDOW_MS of each other share one transaction
  // (one lock, one commit: docs/benchmarks.md "Outbound dispatch"); each is still guarded by
  // its own lease, and a failure is answered to its own caller only (transactionPerGroup).
  // `record` and `recordSent` join the same groups: a request's `lean` decides its answer
  // (the message, or only its status), so each form narrows its own.
  const recordGrouped = groupedQueue(
    transactionPerGroup(db, "outbox.record", (request: LeanableRecord): Option.Option<Message> | Option.Option<MessageStatus> =>
      request.lean && request.outcome._tag === "Sent"
        ? recordSentLean(statements, request.id, request.lease, request.outcome, request.now)
        : recordOne(request)),
    { windowMs: RECORD_GROUP_WINDOW_MS, maxSize: RECORD_GROUP_SIZE }
  )
  const wholeRecords = recordGrouped as GroupedCall<LeanableRecord, Option.Option<Message>, StorageError>
  return {
    claim: (request) =>
      attempt("outbox.claim", () => {
        if (request.limit < 1 || !snapshot(db, () => anyDue(statements, request.now))) return []
        return transaction(db, () => claimDue(statements, request))
      }),
    record: recordThrough(wholeRecords),
    recordSent: (id, lease, outcome, now) =>
      recordGrouped.promise({ id, lease, outcome, now, lean: true }) as Promise<Option.Option<MessageStatus>>,
    settle: (organizationId, id, settlement) =>
      attempt("outbox.settle", () =>
        transaction(db, () => {
          const row = queued(organizationId, id)
          return row === undefined ? Option.none() : Option.some(settleMessage(statements, organizationId, row, settlement))
        })
      ),
    retry: (organizationId, id, now, expiresAt) =>
      attempt("outbox.retry", () =>
        transaction(db, (): OutboxMoveOutcome => {
          const row = queued(organizationId, id)
          if (row === undefined) return { _tag: "NotFound" }
          if (row.status !== "failed") return { _tag: "Refused", message: decodeMessage(row) }
          const after = writeRow(statements, retried(row, now, expiresAt))
          return { _tag: "Done", message: decodeMessage(after) }
        })
      ),
    cancel: (organizationId, id, failure, now) =>
      attempt("outbox.cancel", () =>
        transaction(db, (): OutboxMoveOutcome => {
          const row = queued(organizationId, id)
          if (row === undefined) return { _tag: "NotFound" }
          if (row.status !== "queued" && row.status !== "scheduled") return { _tag: "Refused", message: decodeMessage(row) }
          const message = decodeMessage(
            writeRow(statements, { ...row, ...ENDED, status: "failed", failure: JSON.stringify(failure), updated_at: now })
          )
          recordWebhookEvent(statements, organizationId, "message.status_updated", now, () => message)
          return { _tag: "Done", message }
        })
      ),
    nextDueAt: () => attempt("outbox.nextDueAt", () => snapshot(db, () => nextDue(statements))),
    channelQueue: (organizationId, channelId) =>
      attempt("outbox.channelQueue", (): ChannelQueueFigures =>
        statements.prepare<ChannelQueueFigures>(SQL.channelQueue).get(channelId, organizationId, channelId, organizationId)!
      ),
    summary: () =>
      attempt("outbox.summary", (): ReadonlyArray<OutboxSummaryRow> => statements.prepare<OutboxSummaryRow>(SQL.summary).all()),
    resumeChannel: (organizationId, channelId, now) =>
      attempt("outbox.resumeChannel", () =>
        transaction(db, () => {
          const row = statements.prepare<ChannelRow>(SQL.channel).get(organizationId, channelId)
          if (row === undefined) return Option.none()
          if (row.status === "active") return Option.some({ channel: decodeChannel(row), changed: false })
          const channel = decodeChannel(statements.prepare<ChannelRow>(SQL.resume).get(now, channelId)!)
          forgetChannels(db)
          statements.prepare(SQL.dueNow).run(now, channelId, organizationId)
          recordWebhookEvent(statements, organizationId, "channel.resumed", now, () => channel)
          return Option.some({ channel, changed: true })
        })
      )
  }
}

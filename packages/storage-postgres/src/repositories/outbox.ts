import { Effect, Option } from "effect"
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
import { type LeanableRecord, RECORD_GROUP_SIZE, RECORD_GROUP_WINDOW_MS, recordThrough } from "@switchboard/storage-sql"
import { attempt, type Database, type RepositoryFactory } from "../internal/sql.js"
import { CHANNEL_COLUMNS, type ChannelRow, decodeChannel } from "./channelRows.js"
import { anyDue, claimDue, LANES } from "./outboxClaim.js"
import {
  ENDED,
  type LeasedSent,
  leasedRow,
  leasedRows,
  queuedRow,
  recordableTogether,
  providerIdOf,
  recordOutcome,
  recordSentLeanTogether,
  recordSentTogether,
  settleMessage,
  withPendingReports,
  writeRow
} from "./outboxRecord.js"
import { retried } from "./outboxRows.js"
import { decodeMessage } from "./chatRows.js"
import { recordWebhookEvent } from "./webhookEvents.js"

/**
 * `Storage.outbox` on PostgreSQL: the send queue's messages are rows of `messages` with
 * their dispatch state, each channel's pacing state is on its `channels` row, the lanes'
 * heads are kept by the triggers of schema/delivery.ts; messages enter through
 * `chats.appendMessage` (`insertOutboxMessage`, outboxInsert.ts).
 *
 * `claim` first checks with one plain read that a head is due (an idle dispatcher opens no
 * transaction); then, in one transaction (outboxClaim.ts), locks the paced channels with
 * due heads `FOR NO KEY UPDATE SKIP LOCKED` (their pacing state read and reserved under the
 * lock: exact across processes, a channel another claim holds left to it) and their due
 * heads `FOR UPDATE SKIP LOCKED`, so claims running together in any number of processes
 * get disjoint messages. Pacing runs on the claim's `now` (the interface's clock). Every
 * other write locks the organization first, then the message `FOR UPDATE`, and is guarded
 * by the lease token and the status (the `record`s asked for within a few ms share one
 * transaction, {@link recordGroup}); its events (`message.status_updated`,
 * `channel.paused`, `channel.resumed`) are written in the same transaction
 * (webhookEvents.ts).
 *
 * @category repositories
 */
export const outboxRepository: RepositoryFactory<OutboxRepository> = (db) => {
  const s = db.schema
  // The outcomes recorded within RECORD_GROUP_WINDOW_MS of each other share one transaction
  // (docs/benchmarks.md "Outbound dispatch"); each is still guarded by its own lease.
  // `record` and `recordSent` join the same groups: a request's `lean` decides its answer
  // (the message, or only its status), so each form narrows its own.
  const recordGrouped = groupedQueue(recordGroup(db), { windowMs: RECORD_GROUP_WINDOW_MS, maxSize: RECORD_GROUP_SIZE })
  const wholeRecords = recordGrouped as GroupedCall<LeanableRecord, Option.Option<Message>, StorageError>
  return {
    claim: (request) =>
      attempt("outbox.claim", async () => {
        if (request.limit < 1 || !(await anyDue(db, request.now))) return []
        return db.transaction((sql) => claimDue(sql, s, request))
      }),
    record: recordThrough(wholeRecords),
    recordSent: (id, lease, outcome, now) =>
      recordGrouped.promise({ id, lease, outcome, now, lean: true }) as Promise<Option.Option<MessageStatus>>,
    settle: (organizationId, id, settlement) =>
      attempt("outbox.settle", () =>
        db.transaction(async (sql) => {
          const row = await queuedRow(sql, s, organizationId, id)
          return row === undefined ? Option.none() : Option.some(await settleMessage(sql, s, organizationId, row, settlement))
        }, { lockOrganization: organizationId })
      ),
    retry: (organizationId, id, now, expiresAt) =>
      attempt("outbox.retry", () =>
        db.transaction(async (sql): Promise<OutboxMoveOutcome> => {
          const row = await queuedRow(sql, s, organizationId, id)
          if (row === undefined) return { _tag: "NotFound" }
          if (row.status !== "failed") return { _tag: "Refused", message: decodeMessage(row) }
          const after = await writeRow(sql, s, retried(row, now, expiresAt))
          return { _tag: "Done", message: decodeMessage(after) }
        }, { lockOrganization: organizationId })
      ),
    cancel: (organizationId, id, failure, now) =>
      attempt("outbox.cancel", () =>
        db.transaction(async (sql): Promise<OutboxMoveOutcome> => {
          const row = await queuedRow(sql, s, organizationId, id)
          if (row === undefined) return { _tag: "NotFound" }
          if (row.status !== "queued" && row.status !== "scheduled") return { _tag: "Refused", message: decodeMessage(row) }
          const message = decodeMessage(
            await writeRow(sql, s, { ...row, ...ENDED, status: "failed", failure, updated_at: now })
          )
          await recordWebhookEvent(sql, s, organizationId, "message.status_updated", now, () => message)
          return { _tag: "Done", message }
        }, { lockOrganization: organizationId })
      ),
    nextDueAt: () =>
      attempt("outbox.nextDueAt", async () => (await db.sql.row<{ due: number | null }>(nextDueSql(s)))?.due ?? null),
    channelQueue: (organizationId, channelId) =>
      attempt("outbox.channelQueue", async (): Promise<ChannelQueueFigures> =>
        (await db.sql.row<ChannelQueueFigures>(
          `SELECT COUNT(*) FILTER (WHERE status <> 'sending') AS queued, COUNT(*) FILTER (WHERE status = 'sending') AS sending,
              MIN(created_at) FILTER (WHERE status <> 'sending') AS oldest_queued_at
            FROM ${s}.messages
            WHERE channel_uuid = $1 AND organization_id = $2 AND recipient IS NOT NULL
              AND status IN ('queued', 'sending', 'scheduled')`,
          [channelId, organizationId]
        ))!
      ),
    summary: () =>
      attempt("outbox.summary", (): Promise<ReadonlyArray<OutboxSummaryRow>> => db.sql.rows<OutboxSummaryRow>(summarySql(s))),
    resumeChannel: (organizationId, channelId, now) =>
      attempt("outbox.resumeChannel", () =>
        db.transaction(async (sql) => {
          const row = await sql.row<ChannelRow>(
            `SELECT ${CHANNEL_COLUMNS} FROM ${s}.channels WHERE organization_id = $1 AND uuid = $2 FOR NO KEY UPDATE`,
            [organizationId, channelId]
          )
          if (row === undefined) return Option.none()
          if (row.status === "active") return Option.some({ channel: decodeChannel(row), changed: false })
          const resumed = await sql.row<ChannelRow>(
            `UPDATE ${s}.channels SET status = 'active', paused_reason = NULL, paused_at = NULL, updated_at = $1
              WHERE uuid = $2 RETURNING ${CHANNEL_COLUMNS}`,
            [now, channelId]
          )
          const channel = decodeChannel(resumed!)
          await sql.run(
            `UPDATE ${s}.messages SET next_attempt_at = $1
              WHERE channel_uuid = $2 AND organization_id = $3 AND recipient IS NOT NULL AND status = 'queued'`,
            [now, channelId, organizationId]
          )
          await recordWebhookEvent(sql, s, organizationId as OrganizationId, "channel.resumed", now, () => channel)
          return Option.some({ channel, changed: true })
        }, { lockOrganization: organizationId })
      )
  }
}

/**
 * The statement of `outbox.summary` on the (quoted) schema `s`: one pass over
 * messages_send_queue_lanes (partial on the waiting messages, so nothing else is read) and
 * one over messages_send_queue_scheduled (the scheduled ones, counted as queued), grouped once; the paused channels without waiting messages are looked up against that
 * result, never with a probe of the messages per channel.
 */
export const summarySql = (s: string): string =>
  `WITH waiting AS MATERIALIZED (
      SELECT channel_uuid, COUNT(*) FILTER (WHERE status = 'queued') AS queued,
          COUNT(*) FILTER (WHERE status = 'sending') AS sending
        FROM (SELECT channel_uuid, status FROM ${s}.messages WHERE recipient IS NOT NULL AND status IN ('queued', 'sending')
          UNION ALL
          SELECT channel_uuid, 'queued' FROM ${s}.messages WHERE status = 'scheduled') AS m
        GROUP BY channel_uuid)
    SELECT w.channel_uuid AS channel_id, c.status AS channel_status, w.queued, w.sending
      FROM waiting AS w LEFT JOIN ${s}.channels AS c ON c.uuid = w.channel_uuid
    UNION ALL
    SELECT c.uuid, c.status, 0, 0 FROM ${s}.channels AS c
      WHERE c.status = 'paused' AND c.uuid NOT IN (SELECT channel_uuid FROM waiting WHERE channel_uuid IS NOT NULL)`

/**
 * The statement that opens a record group's transaction: the owner (`organization_id`) and
 * `type` of each message of `$1` (text[]) that exists, read once its organizations are
 * locked `FOR NO KEY UPDATE` in one order (their ids in byte order), as every write of an
 * organization locks it before its messages. The locks are a one-time filter of the
 * answer, taken before any row is written; the reads after it in the transaction see what
 * was committed before them.
 */
const ownersLocked = (s: string): string =>
  `WITH owners AS MATERIALIZED (SELECT uuid, organization_id, type FROM ${s}.messages WHERE uuid = ANY($1::text[])),
    locked AS MATERIALIZED (SELECT o.id FROM ${s}.organizations AS o WHERE o.id IN (SELECT organization_id FROM owners)
      ORDER BY o.id COLLATE "C" FOR NO KEY UPDATE)
  SELECT uuid, organization_id, type FROM owners WHERE (SELECT COUNT(*) FROM locked) >= 0`

/**
 * The `record`s of one group in ONE transaction: one statement reads their organizations
 * and locks them ({@link ownersLocked}), one records the lean `Sent` outcomes that need
 * nothing of their rows (outboxRecord.ts `recordSentLeanTogether`: four round trips in all
 * for a group of those), and for the others one statement reads and locks their `sending`
 * messages, and each outcome its lease still holds is recorded (an outcome whose lease no
 * longer holds changes nothing and answers none). The `Sent` outcomes are recorded set-based, in a fixed number of
 * statements (outboxRecord.ts `recordSentTogether`: the organization's lock is held for a
 * few round trips, not a few per outcome); the others, a `Sent` with a pending status
 * report or a reaction, and a message asked for twice, one by one, in the order asked.
 * A store runs one such transaction at a time: the groups that come meanwhile wait and are
 * recorded together (at most RECORD_GROUP_SIZE outcomes a transaction), so the outcomes wait
 * on one connection, not on one each holding the pool's connections while they queue for
 * the organization's lock (claims and attempts then found none free). When that
 * transaction fails, each is recorded again in a transaction of its own, so a failure
 * reaches only its own caller.
 */
const recordGroup = (db: Database): ((requests: ReadonlyArray<LeanableRecord>) => ReadonlyArray<Effect.Effect<Answer, StorageError>>) => {
  const s = db.schema
  const ownersLockedSql = ownersLocked(s)
  const recordAll = (group: ReadonlyArray<LeanableRecord>): Promise<Array<Answer>> =>
    db.transaction(async (sql) => {
      // Who owns each message and what type it is (neither ever changes), and those
      // organizations locked, in order, as every write of an organization locks it first: one
      // statement. The reactions are left to the whole record.
      const owners = await sql.rows<{ uuid: string; organization_id: string; type: string }>(ownersLockedSql, [
        group.map((request) => request.id)
      ])
      if (owners.length === 0) return group.map(() => Option.none())
      const ownerOf = new Map(owners.map((owner) => [owner.uuid, owner]))
      // A message asked for twice in one group: the second reads its row again, after the first's write.
      const asked = new Set<string>()
      const again = group.map((request) => {
        const seen = asked.has(request.id)
        asked.add(request.id)
        return seen
      })
      // The lean records that need nothing of their rows are written with one statement, their
      // rows never read; the others read and lock their rows with one statement.
      const { lean: leanIds, written } = await recordSentLeanTogether(sql, s, group.flatMap((request, index) => {
        const owner = ownerOf.get(request.id)
        return !again[index] && request.lean === true && request.outcome._tag === "Sent" && owner !== undefined && owner.type !== "reaction"
          ? [{ id: request.id, lease: request.lease, outcome: request.outcome, now: request.now, organization_id: owner.organization_id }]
          : []
      }))
      const whole = group.filter((request, index) => again[index] || !leanIds.has(request.id))
      const rows = new Map(whole.length === 0 ? [] : (await leasedRows(sql, s, whole.map((request) => request.id))).map((row) => [row.uuid, row]))
      const plan = group.map((request, index) => {
        const row = rows.get(request.id)
        return { request, again: again[index]!, row: row !== undefined && row.lease === request.lease ? row : undefined }
      })
      const sent: Array<LeasedSent> = plan.flatMap(({ again, request, row }) =>
        !again && row !== undefined && request.outcome._tag === "Sent" ? [{ row, outcome: request.outcome, now: request.now }] : []
      )
      const pending = await withPendingReports(sql, s, sent.map(({ outcome, row }) => providerIdOf(row.organization_id, outcome)))
      const together = sent.filter((each) => recordableTogether(each, pending))
      const messages = new Map<string, Message>()
      for (const [index, message] of (await recordSentTogether(sql, s, together)).entries()) messages.set(together[index]!.row.uuid, message)
      // The others one by one, in the order asked (a Sent message recorded above answers from its result).
      const recorded: Array<Answer> = []
      for (const { again, request, row } of plan) {
        if (!again && leanIds.has(request.id)) {
          recorded.push(written.has(request.id) ? Option.some<MessageStatus>("sent") : Option.none())
          continue
        }
        const done = again ? undefined : messages.get(request.id)
        let message: Option.Option<Message>
        if (done !== undefined && row !== undefined) message = Option.some(done)
        else {
          const current = again ? await leasedRow(sql, s, request.id, request.lease) : row
          message = current === undefined ? Option.none() : Option.some(await recordOutcome(sql, s, current, request.outcome, request.now))
        }
        recorded.push(request.lean === true ? Option.map(message, (each) => each.status) : message)
      }
      return recorded
    })
  // One transaction at a time per store: a group that comes while one runs waits, and joins
  // the waiting one while it has room (at most RECORD_GROUP_SIZE together).
  let next: Batch | undefined
  let tail: Promise<unknown> = Promise.resolve()
  const enqueue = (requests: ReadonlyArray<LeanableRecord>): { readonly batch: Batch; readonly offset: number } => {
    if (next !== undefined && next.requests.length + requests.length <= RECORD_GROUP_SIZE) {
      const offset = next.requests.length
      next.requests.push(...requests)
      return { batch: next, offset }
    }
    const batch: Batch = { requests: [...requests], result: undefined! }
    batch.result = tail.then(() => {
      // Started: nothing joins it any more.
      if (next === batch) next = undefined
      return recordAll(batch.requests)
    })
    // Each caller gets its answer through its own wait below; none is left unhandled.
    tail = batch.result.catch(() => undefined)
    next = batch
    return { batch, offset: 0 }
  }
  return (requests) => {
    const { batch, offset } = enqueue(requests)
    return requests.map((request, index) =>
      Effect.catchAll(
        attempt("outbox.record", () => batch.result.then((all) => all[offset + index]!)),
        (error) => (batch.requests.length === 1 ? Effect.fail(error) : attempt("outbox.record", async () => (await recordAll([request]))[0]!))
      )
    )
  }
}

/** The `record`s recorded in one transaction of {@link recordGroup}, and their answers in the same order. */
interface Batch {
  readonly requests: Array<LeanableRecord>
  result: Promise<Array<Answer>>
}

/** What one request of a group answers: the message as stored (`record`), or only its status (`recordSent`); `None` when its lease no longer held. */
type Answer = Option.Option<Message | MessageStatus>

/**
 * `outbox.nextDueAt`'s statement: the earliest due time (epoch ms) of a waiting head of a
 * channel not paused (or of no channel), or of a scheduled message. A `sending` head is due
 * at the later of its `next_attempt_at` and its `lease_until`. The channels with heads are
 * found by a loose index scan (one `LIMIT 1` probe each, as the claim finds them); then, per
 * channel (and for no channel) and send class, the first head along
 * `messages_send_queue_due` (`LIMIT 1`): the range's earliest, unless it is a `sending` head
 * whose lease ends after its `next_attempt_at` (a claim sets `next_attempt_at` past the
 * lease's end, so only an outcome can), and then the heads before that end are read too.
 * On a backlog of 20 000 recipients (20 000 heads, 20 channels) it takes ~1 ms, against
 * ~12 ms for a minimum over every head, asked after nearly every claim (docs/benchmarks.md
 * "Dispatch on PostgreSQL"). Those rarer reads are a join on the materialized first heads,
 * not a subquery per range: a subquery's estimate per range put the plan's cost past
 * `jit_above_cost`, and JIT compiling it took ~30 ms a call.
 */
const nextDueSql = (s: string): string => {
  const ms = (column: string) => `round(extract(epoch FROM ${column}) * 1000)`
  // Each range's first head (`channel`: the range's channel term), as a LATERAL subquery.
  const firstHead = (channel: string, sendClass: string) =>
    `SELECT m.status, m.lease_until, ${ms("m.next_attempt_at")} AS next_ms FROM ${s}.messages AS m
      WHERE m.head AND m.channel_uuid ${channel} AND m.send_class = ${sendClass}
      ORDER BY m.next_attempt_at, m.sequence LIMIT 1`
  // The heads of a range read before its first one's lease ends (`h`: a first head leased past its next_attempt_at).
  const before = (channel: string) =>
    `SELECT MIN(CASE WHEN e.status = 'sending' AND e.lease_until IS NOT NULL
        THEN GREATEST(${ms("e.next_attempt_at")}, e.lease_until) ELSE ${ms("e.next_attempt_at")} END) AS due
      FROM firsts AS h JOIN ${s}.messages AS e ON e.head AND e.channel_uuid ${channel} AND e.send_class = h.send_class
        AND e.next_attempt_at < to_timestamp(h.lease_until / 1000.0)
      WHERE h.status = 'sending' AND h.lease_until > h.next_ms AND h.channel_uuid IS ${channel === "IS NULL" ? "" : "NOT "}NULL`
  return `WITH RECURSIVE ${LANES(s)},
      classes (send_class) AS (VALUES ('single'), ('broadcast')),
      firsts AS MATERIALIZED (
        SELECT lanes.channel_uuid, classes.send_class, f.* FROM lanes LEFT JOIN ${s}.channels AS c ON c.uuid = lanes.channel_uuid
          CROSS JOIN classes CROSS JOIN LATERAL (${firstHead("= lanes.channel_uuid", "classes.send_class")}) AS f
          WHERE lanes.channel_uuid IS NOT NULL AND c.status IS DISTINCT FROM 'paused'
        UNION ALL
        SELECT NULL, classes.send_class, f.* FROM classes CROSS JOIN LATERAL (${firstHead("IS NULL", "classes.send_class")}) AS f)
    SELECT MIN(due) AS due FROM (
      SELECT CASE WHEN status = 'sending' AND lease_until > next_ms THEN lease_until ELSE next_ms END AS due FROM firsts
      UNION ALL (${before("= h.channel_uuid")})
      UNION ALL (${before("IS NULL")})
      UNION ALL
      SELECT ${ms("MIN(next_attempt_at)")} FROM ${s}.messages WHERE status = 'scheduled') AS each`
}

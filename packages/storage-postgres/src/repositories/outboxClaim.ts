import {
  type ClaimedMessage,
  type OutboxClaimRequest,
  pacingIntervalMs
} from "@switchboard/core"
import { type CandidateRow, claimedMessage, claimOrder } from "@switchboard/storage-sql"
import type { Database, Sql } from "../internal/sql.js"
import { decodeMessage, MESSAGE_COLUMNS, type MessageRow } from "./chatRows.js"
import { iso } from "./outboxRows.js"

// The claim of the send queue (the rules of `OutboxRepository.claim`), in one transaction.

/** A due head as a claim reads it, with its channel. */
interface ChannelCandidateRow extends CandidateRow {
  readonly channel_uuid: string | null
}

const CANDIDATE_COLUMNS =
  "uuid, organization_id, channel_uuid, recipient, send_class, expires_at, status, next_attempt_at, sequence, pair_rate_waits, scheduled_at"

/** The terms of a due head ($1: now ISO, $2: now epoch ms). */
const DUE = "head AND next_attempt_at <= $1 AND (status = 'queued' OR lease_until <= $2)"

/**
 * The recursive CTE `lanes` (after `WITH RECURSIVE`): the channels with a waiting head, by a
 * loose index scan along messages_send_queue_expiry (one `LIMIT 1` probe per channel), ending
 * with one `NULL` row. Shared by the claim and `outbox.nextDueAt`.
 */
export const LANES = (schema: string): string =>
  `lanes (channel_uuid) AS (
        (SELECT channel_uuid FROM ${schema}.messages WHERE head AND channel_uuid IS NOT NULL ORDER BY channel_uuid LIMIT 1)
        UNION ALL
        SELECT (SELECT m.channel_uuid FROM ${schema}.messages AS m WHERE m.head AND m.channel_uuid > lanes.channel_uuid
            ORDER BY m.channel_uuid LIMIT 1)
          FROM lanes WHERE lanes.channel_uuid IS NOT NULL)`

/**
 * The CTEs `lanes` and `w` ($1: now ISO, $2: now epoch ms): `w` the channels with a due head
 * (`NULL` for the messages without a channel), each with `expiring`: whether one of its due
 * heads has expired. The channels with heads are walked along messages_send_queue_expiry (a
 * loose index scan: one probe per channel, recursively), and each is probed for ONE due
 * head along messages_send_queue_due (`LIMIT 1`) and for one expired due head along
 * messages_send_queue_expiry (`LIMIT 1` in a `LATERAL`, so each is a probe of its channel's
 * range up to now, empty while nothing has expired; as an `EXISTS` PostgreSQL hashed it into
 * one scan of the whole index, ~8 ms a claim on a backlog of 20 000): a claim
 * reads a few rows per channel, where `SELECT DISTINCT channel_uuid … WHERE <due>` read every
 * head (one per lane: 20 000 for a backlog of 20 000 recipients, ~80 ms a claim). Only an
 * `expiring` channel's expired heads are read as a range of their own: read for every
 * channel, that range found none and walked every due head of the channel to learn it (the
 * whole backlog each claim: 25–190 ms on PostgreSQL's side, docs/benchmarks.md "Dispatch on
 * PostgreSQL: the expired heads only where there are").
 */
const WAITING_CHANNELS = (schema: string) =>
  `WITH RECURSIVE ${LANES(schema)},
      w AS (
        SELECT lanes.channel_uuid, expired.channel_uuid IS NOT NULL AS expiring FROM lanes CROSS JOIN LATERAL (
            SELECT 1 FROM ${schema}.messages WHERE channel_uuid = lanes.channel_uuid AND ${DUE} LIMIT 1) AS due
          LEFT JOIN LATERAL (
            SELECT channel_uuid FROM ${schema}.messages WHERE channel_uuid = lanes.channel_uuid AND expires_at <= $1 AND ${DUE} LIMIT 1) AS expired ON true
        UNION ALL
        SELECT NULL, true WHERE EXISTS (SELECT 1 FROM ${schema}.messages WHERE channel_uuid IS NULL AND ${DUE}))`

/** One channel's part of a claim: its pacing (none for no channel or an unknown one), its next slot and its candidates. */
interface ChannelTurn {
  readonly channelUuid: string | null
  readonly intervalMs: number | null
  readonly horizon: number
  slot: number
  reserved: boolean
  readonly candidates: Array<ChannelCandidateRow>
}

/**
 * Whether any head is due at `now` on a channel not paused (or on none), by one plain read:
 * an idle dispatcher opens no transaction.
 */
export const anyDue = async (db: Database, now: number): Promise<boolean> =>
  (await db.sql.row(
    `SELECT 1 FROM ${db.schema}.messages AS m LEFT JOIN ${db.schema}.channels AS c ON c.uuid = m.channel_uuid
      WHERE m.head AND m.next_attempt_at <= $1 AND (m.status = 'queued' OR m.lease_until <= $2)
        AND c.status IS DISTINCT FROM 'paused'
    UNION ALL
    SELECT 1 FROM ${db.schema}.messages WHERE status = 'scheduled' AND next_attempt_at <= $1
    LIMIT 1`,
    [iso(now), now]
  )) !== undefined

/**
 * The first step of a claim: the scheduled messages due at `nowIso` become `queued`, each
 * with a fresh sequence in `next_attempt_at` order (the tail of its lane; the trigger
 * `messages_send_queue_returned` makes it the head of an empty lane). Rows another claim
 * holds are skipped (it promotes them).
 */
const promoteScheduled = (sql: Sql, schema: string, nowIso: string): Promise<number> =>
  sql.run(
    `WITH due AS (
        SELECT uuid FROM ${schema}.messages WHERE status = 'scheduled' AND next_attempt_at <= $1
          ORDER BY next_attempt_at, sequence FOR UPDATE SKIP LOCKED),
      numbered AS (SELECT uuid, nextval('${schema}.send_queue_sequence') AS sequence FROM due)
    UPDATE ${schema}.messages AS m SET status = 'queued', sequence = n.sequence
      FROM numbered AS n WHERE m.uuid = n.uuid`,
    [nowIso]
  )

/** One range of a channel's due heads of one class, locked `FOR UPDATE SKIP LOCKED` (a CTE of {@link candidatesOf}). */
const candidateRange = (schema: string, channelTerm: string, sendClass: string, expiredOnly: boolean, limit: string) =>
  `SELECT ${CANDIDATE_COLUMNS} FROM ${schema}.messages
    WHERE ${channelTerm} AND send_class = '${sendClass}' AND ${DUE} ${expiredOnly ? "AND expires_at <= $1" : ""}
    ORDER BY next_attempt_at, sequence LIMIT ${limit} FOR UPDATE SKIP LOCKED`

/** Once per uuid, in the order read (a head can come in two ranges: due, and due and expired). */
const onceEach = (rows: ReadonlyArray<ChannelCandidateRow>): Array<ChannelCandidateRow> => {
  const seen = new Set<string>()
  return rows.filter((row) => !seen.has(row.uuid) && seen.add(row.uuid) !== undefined)
}

/**
 * The due heads of the messages without a channel, in one statement: per class at most
 * `limit`, and with `expiredLimit` > 0 also per class at most that many of the expired ones,
 * each range locked `FOR UPDATE SKIP LOCKED` (a head another transaction holds is passed
 * over; one claimed since this statement's snapshot is re-checked and dropped).
 */
const candidatesWithoutChannel = async (
  sql: Sql,
  schema: string,
  nowIso: string,
  now: number,
  limit: number,
  expiredLimit: number
): Promise<Array<ChannelCandidateRow>> => {
  const channelTerm = "channel_uuid IS NULL"
  return onceEach(
    await sql.rows<ChannelCandidateRow>(
      `WITH s AS (${candidateRange(schema, channelTerm, "single", false, "$3")}),
        b AS (${candidateRange(schema, channelTerm, "broadcast", false, "$3")}),
        se AS (${candidateRange(schema, channelTerm, "single", true, "$4")}),
        be AS (${candidateRange(schema, channelTerm, "broadcast", true, "$4")})
      SELECT * FROM s UNION ALL SELECT * FROM b UNION ALL SELECT * FROM se UNION ALL SELECT * FROM be`,
      [nowIso, now, limit, expiredLimit]
    )
  )
}

/** One range a claim reads of a channel's due heads: its class, at most how many, whether only the expired ones. */
interface CandidateRange {
  readonly channelUuid: string
  readonly sendClass: "single" | "broadcast"
  readonly limit: number
  readonly expiredOnly: boolean
}

/**
 * The due heads of every channel of `ranges`, in ONE statement (a claim used to read them
 * with one statement per channel: ~20 round trips inside its transaction): a `LATERAL`
 * read per range, in the order of messages_send_queue_due (channel, class, next_attempt_at,
 * sequence), at most its limit, locked `FOR UPDATE SKIP LOCKED` (a head another
 * transaction holds is passed over; one claimed since this statement's snapshot is
 * re-checked and dropped). Resolves each channel's heads, once per uuid.
 */
const candidatesOf = async (
  sql: Sql,
  schema: string,
  ranges: ReadonlyArray<CandidateRange>,
  nowIso: string,
  now: number
): Promise<Map<string, Array<ChannelCandidateRow>>> => {
  const byChannel = new Map<string, Array<ChannelCandidateRow>>()
  if (ranges.length === 0) return byChannel
  const rows = await sql.rows<ChannelCandidateRow>(
    `SELECT h.* FROM unnest($3::text[], $4::text[], $5::int[], $6::bool[]) AS r (channel_uuid, send_class, lim, expired_only)
      CROSS JOIN LATERAL (
        SELECT ${CANDIDATE_COLUMNS} FROM ${schema}.messages
          WHERE channel_uuid = r.channel_uuid AND send_class = r.send_class AND ${DUE}
            AND (NOT r.expired_only OR expires_at <= $1)
          ORDER BY next_attempt_at, sequence LIMIT r.lim FOR UPDATE SKIP LOCKED) AS h`,
    [
      nowIso,
      now,
      ranges.map((range) => range.channelUuid),
      ranges.map((range) => range.sendClass),
      ranges.map((range) => range.limit),
      ranges.map((range) => range.expiredOnly)
    ]
  )
  for (const row of rows) {
    const list = byChannel.get(row.channel_uuid!) ?? []
    list.push(row)
    byChannel.set(row.channel_uuid!, list)
  }
  for (const [channelUuid, list] of byChannel) byChannel.set(channelUuid, onceEach(list))
  return byChannel
}

/**
 * The body of `claim`, inside its transaction: the channels with due heads; the paced ones
 * among them locked `FOR NO KEY UPDATE SKIP LOCKED` (a channel another claim holds is left
 * to it: its pacing state is read and reserved under the lock, so slots are exact across
 * processes); per channel its due heads in claim order (only the expired ones once its
 * slots within the horizon are taken), locked `SKIP LOCKED`; then round-robin, one head per
 * channel per turn, each reserving its slot; then one statement writing the claimed
 * messages and the channels' `pacing_tat`. A claim is a fixed number of statements, however
 * many channels wait: the promotion of the scheduled messages, the channels, the
 * candidates of every channel ({@link candidatesOf}) and the write, plus one for the due
 * messages without a channel when there are (each a round trip that makes the claim's
 * slots, reserved from its `now`, older when it returns).
 */
export const claimDue = async (sql: Sql, schema: string, request: OutboxClaimRequest): Promise<Array<ClaimedMessage>> => {
  const { limit, now } = request
  const nowIso = iso(now)
  await promoteScheduled(sql, schema, nowIso)
  // The channels with due heads: whether each exists, and the active ones locked
  // FOR NO KEY UPDATE SKIP LOCKED (their pacing state read under the lock).
  const waiting = await sql.rows<{
    channel_uuid: string | null
    expiring: boolean
    known: boolean
    locked: boolean
    throughput_mps: number | null
    pacing_tat: number | null
  }>(
    `${WAITING_CHANNELS(schema)},
      l AS (SELECT uuid, throughput_mps, pacing_tat FROM ${schema}.channels
        WHERE uuid IN (SELECT channel_uuid FROM w) AND status = 'active' ORDER BY uuid FOR NO KEY UPDATE SKIP LOCKED)
    SELECT w.channel_uuid, w.expiring, c.uuid IS NOT NULL AS known, l.uuid IS NOT NULL AS locked, l.throughput_mps, l.pacing_tat
      FROM w LEFT JOIN ${schema}.channels AS c ON c.uuid = w.channel_uuid LEFT JOIN l ON l.uuid = w.channel_uuid`,
    [nowIso, now]
  )
  const horizon = now + request.horizonMs
  const pending: Array<Omit<ChannelTurn, "candidates">> = []
  const ranges: Array<CandidateRange> = []
  let withoutChannel: Array<ChannelCandidateRow> = []
  for (const { channel_uuid: channelUuid, expiring, known, locked, throughput_mps, pacing_tat } of waiting) {
    // A channel that exists but was not locked is paused or held by another claim.
    if (channelUuid !== null && known && !locked) continue
    const paced = channelUuid !== null && locked
    const intervalMs = paced ? pacingIntervalMs(throughput_mps!) : null
    const slot = paced ? Math.max(pacing_tat!, now) : now
    const slots = intervalMs === null ? limit : slot > horizon ? 0 : Math.floor((horizon - slot) / intervalMs) + 1
    // Per class at most as many as its free slots, and once they are fewer than the
    // limit also the expired ones (claimed without a slot), where it has any.
    const dueLimit = Math.min(limit, slots)
    const expiredLimit = slots < limit && expiring ? limit : 0
    if (channelUuid === null) {
      withoutChannel = await candidatesWithoutChannel(sql, schema, nowIso, now, dueLimit, expiredLimit)
    } else {
      for (const sendClass of ["single", "broadcast"] as const) {
        if (dueLimit > 0) ranges.push({ channelUuid, sendClass, limit: dueLimit, expiredOnly: false })
        if (expiredLimit > 0) ranges.push({ channelUuid, sendClass, limit: expiredLimit, expiredOnly: true })
      }
    }
    pending.push({ channelUuid, intervalMs, horizon, slot, reserved: false })
  }
  const candidatesByChannel = await candidatesOf(sql, schema, ranges, nowIso, now)
  const turns: Array<ChannelTurn> = []
  for (const turn of pending) {
    const candidates = turn.channelUuid === null ? withoutChannel : (candidatesByChannel.get(turn.channelUuid) ?? [])
    if (candidates.length === 0) continue
    candidates.sort(claimOrder)
    turns.push({ ...turn, candidates })
  }
  // The channel whose first due head comes first in claim order takes the first turn.
  turns.sort((a, b) => claimOrder(a.candidates[0]!, b.candidates[0]!))
  const claimed: Array<{ row: CandidateRow; notBefore: number }> = []
  let active = turns
  while (claimed.length < limit && active.length > 0) {
    const still: Array<ChannelTurn> = []
    for (const turn of active) {
      if (claimed.length >= limit) break
      const noSlot = turn.intervalMs !== null && turn.slot > turn.horizon
      const index = noSlot ? turn.candidates.findIndex((row) => row.expires_at <= nowIso) : 0
      if (index < 0 || turn.candidates.length === 0) continue
      const [row] = turn.candidates.splice(index, 1)
      let notBefore = now
      if (turn.intervalMs !== null && row!.expires_at > nowIso) {
        notBefore = turn.slot
        turn.slot += turn.intervalMs
        turn.reserved = true
      }
      claimed.push({ row: row!, notBefore })
      if (turn.candidates.length > 0) still.push(turn)
    }
    active = still
  }
  if (claimed.length === 0) return []
  // One statement: the channels' pacing_tat (a data-modifying CTE always runs) and the claimed messages.
  const reserved = turns.filter((turn) => turn.reserved)
  const rows = await sql.rows<MessageRow>(
    `WITH paced AS (
        UPDATE ${schema}.channels AS c SET pacing_tat = r.tat FROM unnest($6::text[], $7::float8[]) AS r (uuid, tat)
          WHERE c.uuid = r.uuid)
    UPDATE ${schema}.messages SET status = 'sending', lease = $1, lease_until = $2, next_attempt_at = $3, updated_at = $4
      WHERE uuid = ANY($5::text[]) RETURNING ${MESSAGE_COLUMNS}`,
    [
      request.lease,
      request.leaseUntil,
      iso(request.leaseUntil + request.settleMs),
      nowIso,
      claimed.map(({ row }) => row.uuid),
      reserved.map((turn) => turn.channelUuid),
      reserved.map((turn) => turn.slot)
    ]
  )
  const byUuid = new Map(rows.map((row) => [row.uuid, row]))
  return claimed.map(({ notBefore, row }) => claimedMessage(row, decodeMessage(byUuid.get(row.uuid)!), request, notBefore))
}

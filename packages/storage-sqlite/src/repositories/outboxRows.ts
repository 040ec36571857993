import type { SendClass } from "@switchboard/core"
import { MESSAGE_COLUMNS, MESSAGE_VALUE_COUNT, QUEUED_STATE_COLUMNS, type QueuedRow, queuedRowValues } from "@switchboard/storage-sql"
import type { Statements } from "../internal/sql.js"
import { CHANNEL_COLUMNS } from "./channelRows.js"

// The send queue on SQLite: its statements and the write of a queued row's moving fields
// (the rows and their decoding are @switchboard/storage-sql's: `QueuedRow`, `CandidateRow`).
// A queued row's `failure` stays JSON text here, as SQLite stores it.

export { ENDED, iso, type CandidateRow, type QueuedRow, retried } from "@switchboard/storage-sql"

/** The columns of a {@link QueuedRow}, in `SELECT` order. */
const QUEUED_COLUMNS = `${MESSAGE_COLUMNS}, ${QUEUED_STATE_COLUMNS}`

/** The columns of a {@link CandidateRow} from `messages AS m`. */
const CANDIDATE_COLUMNS =
  "m.uuid, m.organization_id, m.recipient, m.send_class, m.expires_at, m.status, m.next_attempt_at, m.sequence, m.pair_rate_waits, " +
  "m.scheduled_at"

/** A channel's status and pacing state. */
export interface PacingRow {
  readonly status: string
  readonly throughput_mps: number
  readonly pacing_tat: number
  readonly cooldown_ms: number
}

/** The classes of a channel's messages in claim order: single sends before broadcast recipients. */
export const CLASSES: ReadonlyArray<SendClass> = ["single", "broadcast"]

/** The terms of a waiting message (in the send queue, `queued` or `sending`): the WHERE of messages_send_queue_lanes. */
const WAITING = "recipient IS NOT NULL AND status IN ('queued', 'sending')"

/** The terms of a lane's head (`head = 1`, kept by the triggers of migration 15): the WHERE of the due and expiry indexes. */
const HEAD = "head = 1"

/**
 * The `SET` of waiting messages the store fails itself (a deleted channel, an ended
 * broadcast): `failed` with the failure (bound first, JSON text) at `updated_at` (bound
 * second), their dispatch state ended as {@link ENDED} does.
 */
const FAILED_BY_STORE =
  "status = 'failed', failure = ?, next_attempt_at = NULL, pair_rate_waits = 0, lease = NULL, lease_until = NULL, updated_at = ?"

/**
 * How many messages one `fail…Batch` statement fails and reads back for their events, so a
 * cancel of 100 000 recipients or a channel deleted under 100 000 waiting messages holds
 * one batch of rows at a time (docs/benchmarks.md "Broadcasts"). 100, not PostgreSQL's
 * 1 000: a statement here costs no round trip, and a smaller batch leaves less for V8 to
 * promote (a cancel of 100 000: +10 to +11 MB of RSS, +12 to +73 MB with batches of 1 000).
 */
export const FAIL_BATCH = 100

// The ranges the store fails itself; parameters: the channel or broadcast, then the organization.
const FAIL_CHANNEL = `channel_uuid = ? AND organization_id = ? AND ${WAITING}`
const FAIL_CHANNEL_SCHEDULED = "channel_uuid = ? AND organization_id = ? AND status = 'scheduled'"
const FAIL_BROADCAST_QUEUED = "broadcast_uuid = ? AND status = 'queued' AND organization_id = ? AND recipient IS NOT NULL"

/** Fails the first {@link FAIL_BATCH} messages `where` selects, returning them (a failed message leaves the range). */
const failBatchSql = (where: string): string =>
  `UPDATE messages SET ${FAILED_BY_STORE}
    WHERE uuid IN (SELECT uuid FROM messages WHERE ${where} LIMIT ${FAIL_BATCH})
    RETURNING ${MESSAGE_COLUMNS}`

/** The statements of this repository (exported for the query-plan test). */
export const SQL = {
  nextSequence: `INSERT INTO settings (key, value) VALUES ('send_queue_sequence', '1')
    ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)
    RETURNING CAST(value AS INTEGER) AS sequence`,
  // The message's columns and organization_id, recipient, send_class, expires_at, sequence;
  // pair_rate_waits starts at 0; lease, lease_until, head.
  // scheduled_at (the placement's notBefore, else NULL); head.
  insert: `INSERT INTO messages (${QUEUED_COLUMNS}, scheduled_at, head) VALUES
    (${Array.from({ length: MESSAGE_VALUE_COUNT + 4 }, () => "?").join(", ")}, 0, ?, ?, ?, ?)`,
  // The scheduled messages due at ? (ISO), in the order they join their lanes: one range of
  // messages_send_queue_scheduled (migration 22).
  scheduledDue: `SELECT uuid FROM messages WHERE status = 'scheduled' AND next_attempt_at <= ?
    ORDER BY next_attempt_at, sequence`,
  anyScheduledDue: "SELECT 1 FROM messages WHERE status = 'scheduled' AND next_attempt_at <= ? LIMIT 1",
  // A due scheduled message joins the tail of its lane: queued with a fresh sequence (the
  // trigger messages_send_queue_returned makes it the head of an empty lane).
  promote: "UPDATE messages SET status = 'queued', sequence = ? WHERE uuid = ? AND status = 'scheduled'",
  nextScheduled: "SELECT MIN(next_attempt_at) FROM messages WHERE status = 'scheduled'",
  // One probe of messages_send_queue_lanes.
  laneWaits: `SELECT 1 FROM messages
    WHERE organization_id = ? AND channel_uuid IS ? AND recipient = ? AND send_class = ? AND ${WAITING} LIMIT 1`,
  pacing: "SELECT status, throughput_mps, pacing_tat, cooldown_ms FROM channels WHERE uuid = ?",
  reservePacing: "UPDATE channels SET pacing_tat = ? WHERE uuid = ?",
  coolDown: "UPDATE channels SET cooldown_ms = ?, pacing_tat = ? WHERE uuid = ?",
  endCoolDown: "UPDATE channels SET cooldown_ms = 0 WHERE uuid = ? AND cooldown_ms <> 0",
  pause: `UPDATE channels SET status = 'paused', paused_reason = ?, paused_at = ?, updated_at = ?
    WHERE uuid = ? AND status = 'active' RETURNING ${CHANNEL_COLUMNS}`,
  channel: `SELECT ${CHANNEL_COLUMNS} FROM channels WHERE organization_id = ? AND uuid = ?`,
  resume: `UPDATE channels SET status = 'active', paused_reason = NULL, paused_at = NULL, updated_at = ?
    WHERE uuid = ? RETURNING ${CHANNEL_COLUMNS}`,
  dueNow: `UPDATE messages SET next_attempt_at = ?
    WHERE channel_uuid = ? AND organization_id = ? AND recipient IS NOT NULL AND status = 'queued'`,
  // The channels with waiting messages (every lane with one has a head), in uuid order: one
  // probe per channel of an index of heads led by channel_uuid (a loose index scan), however
  // many messages each has.
  channelsWaiting: `WITH RECURSIVE waiting (channel_uuid) AS (
      SELECT (SELECT channel_uuid FROM messages WHERE channel_uuid IS NOT NULL AND ${HEAD}
        ORDER BY channel_uuid LIMIT 1)
      UNION ALL
      SELECT (SELECT m.channel_uuid FROM messages AS m WHERE m.channel_uuid > waiting.channel_uuid AND m.head = 1
          ORDER BY m.channel_uuid LIMIT 1)
        FROM waiting WHERE waiting.channel_uuid IS NOT NULL
    )
    SELECT channel_uuid FROM waiting WHERE channel_uuid IS NOT NULL`,
  // A channel's first expired due head in claim order (channel_uuid IS ?: NULL for none), for a
  // channel whose pacing allows no slot: one range of messages_send_queue_expiry (usually empty).
  expiredDue: `SELECT ${CANDIDATE_COLUMNS} FROM messages AS m
    WHERE m.channel_uuid IS ? AND m.expires_at <= ? AND m.head = 1
      AND m.next_attempt_at <= ? AND (m.status = 'queued' OR m.lease_until <= ?)
    ORDER BY m.send_class = 'broadcast', m.next_attempt_at, m.sequence LIMIT 1`,
  // A channel's waiting heads of one class, soonest due first (nextDueAt reads until the first).
  heads: `SELECT m.status, m.next_attempt_at, m.lease_until FROM messages AS m
    WHERE m.channel_uuid IS ? AND m.send_class = ? AND m.head = 1
    ORDER BY m.next_attempt_at, m.sequence`,
  queued: `SELECT ${QUEUED_COLUMNS} FROM messages WHERE organization_id = ? AND uuid = ? AND recipient IS NOT NULL`,
  leased: `SELECT ${QUEUED_COLUMNS} FROM messages WHERE uuid = ? AND lease = ? AND status = 'sending' AND recipient IS NOT NULL`,
  // A `Sent` outcome while the lease holds it (`outbox.recordSent`): the write of `outcomeRow`'s
  // `Sent` in SQL, reading back only what decides whether the whole message is needed after it.
  recordSent: `UPDATE messages SET status = 'sent', provider_message_id = COALESCE(?, provider_message_id), failure = NULL,
      attempts = attempts + ?, next_attempt_at = NULL, pair_rate_waits = 0, lease = NULL, lease_until = NULL, updated_at = ?
    WHERE uuid = ? AND lease = ? AND status = 'sending' AND recipient IS NOT NULL
    RETURNING organization_id, channel_uuid, type`,
  queuedById: `SELECT ${QUEUED_COLUMNS} FROM messages WHERE uuid = ?`,
  // A claim's lease of one message: only the columns it changes, so the indexes on the others
  // (provider id, expiry) are left alone.
  lease: `UPDATE messages SET status = 'sending', lease = ?, lease_until = ?, next_attempt_at = ?, updated_at = ?
    WHERE uuid = ? RETURNING ${MESSAGE_COLUMNS}`,
  // Every field a move of the send queue writes, from the row computed in JavaScript.
  write: `UPDATE messages SET status = ?, provider_message_id = ?, failure = ?, attempts = ?, next_attempt_at = ?,
      expires_at = ?, pair_rate_waits = ?, lease = ?, lease_until = ?, updated_at = ?
    WHERE uuid = ?`,
  // The waiting messages (a range of messages_send_queue_lanes), then the scheduled ones
  // (a range of messages_send_queue_scheduled_by_channel, migration 22), counted as queued:
  // bound (channel, organization) twice.
  channelQueue: `SELECT COALESCE(SUM(queued), 0) AS queued, COALESCE(SUM(sending), 0) AS sending, MIN(oldest) AS oldest_queued_at
    FROM (
      SELECT SUM(status = 'queued') AS queued, SUM(status = 'sending') AS sending,
          MIN(CASE WHEN status = 'queued' THEN created_at END) AS oldest
        FROM messages WHERE channel_uuid = ? AND organization_id = ? AND ${WAITING}
      UNION ALL
      SELECT COUNT(*), 0, MIN(created_at) FROM messages
        WHERE channel_uuid = ? AND organization_id = ? AND status = 'scheduled')`,
  // One pass over messages_send_queue_lanes (a partial index whose WHERE is WAITING: only
  // waiting messages are read) and one over messages_send_queue_scheduled (scheduled ones,
  // counted as queued), grouped once; the paused channels without waiting messages are
  // looked up against that result, never with a probe of the messages per channel.
  summary: `WITH waiting AS MATERIALIZED (
      SELECT channel_uuid, SUM(queued) AS queued, SUM(sending) AS sending FROM (
        SELECT channel_uuid, status = 'queued' AS queued, status = 'sending' AS sending FROM messages WHERE ${WAITING}
        UNION ALL
        SELECT channel_uuid, 1, 0 FROM messages WHERE status = 'scheduled')
      GROUP BY channel_uuid)
    SELECT w.channel_uuid AS channel_id, c.status AS channel_status, w.queued, w.sending
      FROM waiting AS w LEFT JOIN channels AS c ON c.uuid = w.channel_uuid
    UNION ALL
    SELECT c.uuid, c.status, 0, 0 FROM channels AS c
      WHERE c.status = 'paused' AND c.uuid NOT IN (SELECT channel_uuid FROM waiting WHERE channel_uuid IS NOT NULL)`,
  // The store's own failures (outboxInsert.ts `failMessages`): each `fail…` statement fails
  // every message of its range and reads nothing back (no subscriber to tell); its
  // `fail…Batch` twin fails the first FAIL_BATCH of the same range and returns them for
  // their events, run again until a batch comes back short.
  failChannel: `UPDATE messages SET ${FAILED_BY_STORE} WHERE ${FAIL_CHANNEL}`,
  failChannelBatch: failBatchSql(FAIL_CHANNEL),
  // One range of messages_send_queue_scheduled_by_channel (migration 22).
  failChannelScheduled: `UPDATE messages SET ${FAILED_BY_STORE} WHERE ${FAIL_CHANNEL_SCHEDULED}`,
  failChannelScheduledBatch: failBatchSql(FAIL_CHANNEL_SCHEDULED),
  // One range of messages_broadcast_statuses (migration 18): the broadcast's queued recipients.
  failBroadcastQueued: `UPDATE messages SET ${FAILED_BY_STORE} WHERE ${FAIL_BROADCAST_QUEUED}`,
  failBroadcastQueuedBatch: failBatchSql(FAIL_BROADCAST_QUEUED)
} as const

/**
 * A page of at most `size` of a channel's due heads of one class (`channel_uuid IS ?`: NULL
 * for the messages without one), after `(next_attempt_at, sequence) = (?, ?)`, in claim
 * order: one range of messages_send_queue_due. The size is a literal of the text, never a parameter:
 * with `LIMIT ?` the same statement took about ten times as long (measured: ~30 µs
 * against ~3 µs per page), so each size is its own cached statement (sizes are powers of 2).
 */
export const dueSql = (size: number): string => `SELECT ${CANDIDATE_COLUMNS} FROM messages AS m
    WHERE m.channel_uuid IS ? AND m.send_class = ? AND m.head = 1
      AND (m.next_attempt_at, m.sequence) > (?, ?) AND m.next_attempt_at <= ?
      AND (m.status = 'queued' OR m.lease_until <= ?)
    ORDER BY m.next_attempt_at, m.sequence LIMIT ${size}`

/** The page sizes of {@link dueSql}: powers of 2 from 1 to 1 024. */
export const pageSize = (wanted: number): number => Math.min(1024, 2 ** Math.ceil(Math.log2(Math.max(1, wanted))))

/** Writes every field of `row` that a move of the send queue changes; returns it. */
export const writeRow = (statements: Statements, row: QueuedRow): QueuedRow => {
  statements
    .prepare(SQL.write)
    .run(...queuedRowValues(row, row.failure as string | null))
  return row
}

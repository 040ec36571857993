import { Exit, Option } from "effect"
import {
  CHANNEL_REMOVED_FAILURE,
  type ChannelQueueFigures,
  type OutboxSummaryRow,
  type ClaimedMessage,
  type Message,
  MESSAGE_STATUS_PREDECESSORS,
  type MessageFailure,
  type MessageStatus,
  nextCooldownMs,
  type OrganizationId,
  type OutboxClaimRequest,
  type OutboxMoveOutcome,
  type OutboxOutcome,
  type OutboxPlacement,
  type OutboxRepository,
  pacingIntervalMs,
  type SendClass,
  groupedQueue
} from "@switchboard/core"
import { attempt, type RepositoryFactory, snapshot, type Statements, transaction, transactionPerGroup } from "../internal/sql.js"
import { forgetChannels } from "./channel-cache.js"
import { CHANNEL_COLUMNS, type ChannelRow, decodeChannel } from "./channel-rows.js"
import { decodeMessage, MESSAGE_COLUMNS, type MessageRow, messageValues } from "./chat-rows.js"
import { applyPending, applyStatus } from "./message-status.js"
import { recordWebhookEvent, recordWebhookEvents } from "./webhooks.js"

/**
 * The uuid of the head of the lane of `p` (`new` or `old` in a trigger): its waiting message
 * of lowest sequence, one probe of messages_send_queue_lanes.
 */
const laneHead = (p: string): string =>
  `SELECT uuid FROM messages WHERE organization_id = ${p}.organization_id AND channel_uuid IS ${p}.channel_uuid
      AND recipient = ${p}.recipient AND send_class = ${p}.send_class
      AND recipient IS NOT NULL AND status IN ('queued', 'sending') ORDER BY sequence LIMIT 1`

/**
 * Migration 15: the send queue (docs/messaging.md "The send queue", docs/storage.md "The
 * send queue on SQLite").
 * - `messages` is rebuilt, every row and both indexes kept, because its status CHECK must
 *   allow `sending` and SQLite cannot alter a CHECK: the documented way, as migration 7 did
 *   (chats-schema.ts). Nothing references `messages` (no foreign key, trigger or view
 *   names it), so foreign keys stay on; the whole migration runs in the migration
 *   transaction, so a failure leaves version 14 as it was.
 * - New columns of every message: `attempts` (0), `next_attempt_at`, `broadcast_uuid`
 *   (public); and the dispatch state of a message created in the send queue: `recipient`
 *   (the `to` of its placement: `NULL` for every message not in the queue, every existing
 *   row among them), `send_class`, `expires_at`, `sequence` (a store-wide counter,
 *   `settings` key `send_queue_sequence`), `pair_rate_waits`, and the lease (`lease`
 *   token, `lease_until` in epoch ms). A CHECK keeps the dispatch state whole.
 * - `head` (1 or 0): the message is the HEAD of its lane, its waiting message (in the queue,
 *   `queued` or `sending`) of lowest sequence. An append sets it (no other waiting message
 *   in the lane); three triggers keep it whoever writes the status: a head leaving the
 *   waiting statuses (an outcome, a provider report, a cancel, a deleted channel) hands it
 *   to its lane's next waiting message, a deleted head (a deleted contact) too, and a
 *   message coming back to the waiting statuses (a retry) makes the lane's lowest sequence
 *   the head again. A claim never changes it.
 * - `messages_send_queue_lanes` (organization, channel, recipient, class, sequence),
 *   partial on the waiting messages: a lane's next head is the first entry of its range.
 *   `messages_send_queue_due` (channel, class, next_attempt_at, sequence) and
 *   `messages_send_queue_expiry` (channel, expires_at), partial on the heads: a channel's
 *   due heads, in claim order, are a range of the first; its expired heads (claimed even
 *   when its pacing allows no slot) a range of the second; the channels with waiting
 *   messages, one probe per channel of either. However many messages wait behind a head,
 *   a claim never reads them.
 * - `channels` gains `status` (`active` or `paused`), `paused_reason` (JSON `{code,
 *   title}`), `paused_at`, and its pacing state: `pacing_tat` (epoch ms, fractional) and
 *   `cooldown_ms`. Every existing channel is `active`, never paced yet.
 */
export const SEND_QUEUE_MIGRATION = `
  CREATE TABLE messages_v15 (
    uuid TEXT PRIMARY KEY NOT NULL,
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    chat_uuid TEXT NOT NULL REFERENCES chats (uuid) ON DELETE CASCADE,
    contact_uuid TEXT NOT NULL,
    direction TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound')),
    type TEXT NOT NULL CHECK (type IN ('text', 'template', 'media', 'image', 'audio', 'video', 'document',
      'sticker', 'location', 'contacts', 'interactive', 'button', 'reaction', 'unsupported')),
    text TEXT,
    template TEXT CHECK (template IS NULL OR json_valid(template)),
    media TEXT CHECK (media IS NULL OR json_valid(media)),
    content TEXT CHECK (content IS NULL OR json_valid(content)),
    status TEXT NOT NULL CHECK (status IN ('queued', 'sending', 'sent', 'delivered', 'read', 'failed')),
    provider_message_id TEXT,
    failure TEXT CHECK (failure IS NULL OR json_valid(failure)),
    channel_uuid TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at TEXT,
    broadcast_uuid TEXT,
    recipient TEXT,
    send_class TEXT CHECK (send_class IN ('single', 'broadcast')),
    expires_at TEXT,
    sequence INTEGER,
    pair_rate_waits INTEGER NOT NULL DEFAULT 0 CHECK (pair_rate_waits >= 0),
    lease TEXT,
    lease_until INTEGER,
    head INTEGER NOT NULL DEFAULT 0 CHECK (head IN (0, 1)),
    CHECK ((recipient IS NULL) = (send_class IS NULL) AND (recipient IS NULL) = (expires_at IS NULL)
      AND (recipient IS NULL) = (sequence IS NULL))
  ) STRICT;
  INSERT INTO messages_v15 (uuid, organization_id, chat_uuid, contact_uuid, direction, type, text, template, media,
      content, status, provider_message_id, failure, channel_uuid, created_at, updated_at)
    SELECT uuid, organization_id, chat_uuid, contact_uuid, direction, type, text, template, media,
      content, status, provider_message_id, failure, channel_uuid, created_at, updated_at
    FROM messages;
  DROP TABLE messages;
  ALTER TABLE messages_v15 RENAME TO messages;
  CREATE INDEX messages_by_chat ON messages (chat_uuid, created_at DESC, uuid DESC);
  CREATE INDEX messages_by_provider_id ON messages (organization_id, direction, provider_message_id)
    WHERE provider_message_id IS NOT NULL;
  CREATE INDEX messages_send_queue_lanes ON messages (organization_id, channel_uuid, recipient, send_class, sequence)
    WHERE recipient IS NOT NULL AND status IN ('queued', 'sending');
  CREATE INDEX messages_send_queue_due ON messages (channel_uuid, send_class, next_attempt_at, sequence)
    WHERE head = 1;
  CREATE INDEX messages_send_queue_expiry ON messages (channel_uuid, expires_at)
    WHERE head = 1;
  CREATE TRIGGER messages_send_queue_head_left AFTER UPDATE OF status ON messages
    WHEN old.head = 1 AND new.status NOT IN ('queued', 'sending') BEGIN
    UPDATE messages SET head = 0 WHERE uuid = new.uuid;
    UPDATE messages SET head = 1 WHERE uuid = (${laneHead("new")});
  END;
  CREATE TRIGGER messages_send_queue_head_deleted AFTER DELETE ON messages WHEN old.head = 1 BEGIN
    UPDATE messages SET head = 1 WHERE uuid = (${laneHead("old")});
  END;
  CREATE TRIGGER messages_send_queue_returned AFTER UPDATE OF status ON messages
    WHEN new.recipient IS NOT NULL AND old.status NOT IN ('queued', 'sending') AND new.status IN ('queued', 'sending') BEGIN
    UPDATE messages SET head = (uuid = (${laneHead("new")}))
      WHERE organization_id = new.organization_id AND channel_uuid IS new.channel_uuid AND recipient = new.recipient
        AND send_class = new.send_class AND recipient IS NOT NULL AND status IN ('queued', 'sending');
  END;

  ALTER TABLE channels ADD COLUMN status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused'));
  ALTER TABLE channels ADD COLUMN paused_reason TEXT CHECK (paused_reason IS NULL OR json_valid(paused_reason));
  ALTER TABLE channels ADD COLUMN paused_at TEXT;
  ALTER TABLE channels ADD COLUMN pacing_tat REAL NOT NULL DEFAULT 0;
  ALTER TABLE channels ADD COLUMN cooldown_ms INTEGER NOT NULL DEFAULT 0 CHECK (cooldown_ms >= 0);
`

/** A message row with its organization and its dispatch state (a message in the send queue). */
interface QueuedRow extends MessageRow {
  readonly organization_id: string
  readonly recipient: string
  readonly send_class: SendClass
  readonly expires_at: string
  readonly sequence: number
  readonly pair_rate_waits: number
  readonly lease: string | null
  readonly lease_until: number | null
}

/** The columns of a {@link QueuedRow}, in `SELECT` order. */
const QUEUED_COLUMNS =
  `${MESSAGE_COLUMNS}, organization_id, recipient, send_class, expires_at, sequence, pair_rate_waits, lease, lease_until`

/** A due head as a claim reads it: what decides whether and how it is claimed. */
interface CandidateRow {
  readonly uuid: string
  readonly organization_id: string
  readonly recipient: string
  readonly send_class: SendClass
  readonly expires_at: string
  readonly status: string
  readonly next_attempt_at: string
  readonly sequence: number
  readonly pair_rate_waits: number
}

/** The columns of a {@link CandidateRow} from `messages AS m`. */
const CANDIDATE_COLUMNS =
  "m.uuid, m.organization_id, m.recipient, m.send_class, m.expires_at, m.status, m.next_attempt_at, m.sequence, m.pair_rate_waits"

/** A channel's status and pacing state. */
interface PacingRow {
  readonly status: string
  readonly throughput_mps: number
  readonly pacing_tat: number
  readonly cooldown_ms: number
}

/** The classes of a channel's messages in claim order: single sends before broadcast recipients. */
const CLASSES: ReadonlyArray<SendClass> = ["single", "broadcast"]

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

/** The statements of this repository (exported for the query-plan test). */
export const SQL = {
  nextSequence: `INSERT INTO settings (key, value) VALUES ('send_queue_sequence', '1')
    ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)
    RETURNING CAST(value AS INTEGER) AS sequence`,
  insert: `INSERT INTO messages (${QUEUED_COLUMNS}, head) VALUES
    (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
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
  // A claim's lease of one message: only the columns it changes, so the indexes on the others
  // (provider id, expiry) are left alone.
  lease: `UPDATE messages SET status = 'sending', lease = ?, lease_until = ?, next_attempt_at = ?, updated_at = ?
    WHERE uuid = ? RETURNING ${MESSAGE_COLUMNS}`,
  // Every field a move of the send queue writes, from the row computed in JavaScript.
  write: `UPDATE messages SET status = ?, provider_message_id = ?, failure = ?, attempts = ?, next_attempt_at = ?,
      expires_at = ?, pair_rate_waits = ?, lease = ?, lease_until = ?, updated_at = ?
    WHERE uuid = ?`,
  channelQueue: `SELECT COALESCE(SUM(status = 'queued'), 0) AS queued, COALESCE(SUM(status = 'sending'), 0) AS sending,
      MIN(CASE WHEN status = 'queued' THEN created_at END) AS oldest_queued_at
    FROM messages WHERE channel_uuid = ? AND organization_id = ? AND ${WAITING}`,
  // One pass over messages_send_queue_lanes (a partial index whose WHERE is WAITING: only
  // waiting messages are read), grouped once; the paused channels without waiting messages
  // are looked up against that result, never with a probe of the messages per channel.
  summary: `WITH waiting AS MATERIALIZED (
      SELECT channel_uuid, SUM(status = 'queued') AS queued, SUM(status = 'sending') AS sending
        FROM messages WHERE ${WAITING} GROUP BY channel_uuid)
    SELECT w.channel_uuid AS channel_id, c.status AS channel_status, w.queued, w.sending
      FROM waiting AS w LEFT JOIN channels AS c ON c.uuid = w.channel_uuid
    UNION ALL
    SELECT c.uuid, c.status, 0, 0 FROM channels AS c
      WHERE c.status = 'paused' AND c.uuid NOT IN (SELECT channel_uuid FROM waiting WHERE channel_uuid IS NOT NULL)`,
  failChannel: `UPDATE messages SET ${FAILED_BY_STORE} WHERE channel_uuid = ? AND organization_id = ? AND ${WAITING}
    RETURNING ${MESSAGE_COLUMNS}`,
  // One range of messages_broadcast_statuses (migration 18): the broadcast's queued recipients.
  failBroadcastQueued: `UPDATE messages SET ${FAILED_BY_STORE}
    WHERE broadcast_uuid = ? AND status = 'queued' AND organization_id = ? AND recipient IS NOT NULL
    RETURNING ${MESSAGE_COLUMNS}`
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
const pageSize = (wanted: number): number => Math.min(1024, 2 ** Math.ceil(Math.log2(Math.max(1, wanted))))

const iso = (millis: number): string => new Date(millis).toISOString()

/** Writes every field of `row` that a move of the send queue changes; returns it. */
const write = (statements: Statements, row: QueuedRow): QueuedRow => {
  statements
    .prepare(SQL.write)
    .run(
      row.status,
      row.provider_message_id,
      row.failure,
      row.attempts,
      row.next_attempt_at,
      row.expires_at,
      row.pair_rate_waits,
      row.lease,
      row.lease_until,
      row.updated_at,
      row.uuid
    )
  return row
}

/** The fields of a message leaving the queue's waiting statuses: no due time, no lease, no pair-rate waits. */
const ENDED = { next_attempt_at: null, pair_rate_waits: 0, lease: null, lease_until: null } as const

const jsonOf = (failure: MessageFailure | null): string | null => (failure === null ? null : JSON.stringify(failure))

/**
 * Inserts `message` (its chat and contact set) in the send queue with the dispatch state of
 * `placement`, inside `appendMessage`'s transaction (the rules of `OutboxPlacement`):
 * claimed at once (`sending` under the placement's lease; a pacing slot at `now` reserved
 * unless `bypass`) when it may go now, else `queued` — due at `now` when never to be
 * claimed here, else at its channel's next pacing slot; the head of its lane when no other
 * message waits there. Returns the message as stored.
 */
export const insertOutboxMessage = (
  statements: Statements,
  organizationId: OrganizationId,
  message: Message,
  placement: OutboxPlacement,
  now: string
): Message => {
  const nowMillis = Date.parse(now)
  const channelUuid = message.channel_uuid
  const pacing =
    channelUuid === null ? undefined : statements.prepare<PacingRow>(SQL.pacing).get(channelUuid)
  const slot = pacing === undefined ? nowMillis : Math.max(pacing.pacing_tat, nowMillis)
  const claim = placement.claim
  const head = statements.prepare(SQL.laneWaits).get(organizationId, channelUuid, placement.to, placement.class) === undefined
  const claimed = claim !== null && (claim.bypass || (pacing?.status !== "paused" && slot === nowMillis && head))
  if (claimed && !claim.bypass && pacing !== undefined) {
    statements.prepare(SQL.reservePacing).run(nowMillis + pacingIntervalMs(pacing.throughput_mps), channelUuid)
  }
  const { sequence } = statements.prepare<{ sequence: number }>(SQL.nextSequence).get()!
  const stored: Message = {
    ...message,
    status: claimed ? "sending" : "queued",
    next_attempt_at: claimed ? iso(claim.leaseUntil + claim.settleMs) : claim === null ? now : iso(slot)
  }
  statements
    .prepare(SQL.insert)
    .run(
      ...messageValues(stored, stored.chat_uuid, stored.contact_uuid, organizationId),
      placement.to,
      placement.class,
      placement.expires_at,
      sequence,
      0,
      claimed ? claim.lease : null,
      claimed ? claim.leaseUntil : null,
      head ? 1 : 0
    )
  return stored
}

/**
 * Fails the waiting send-queue messages of a channel being deleted with
 * `CHANNEL_REMOVED_FAILURE` at `now`, each with its `message.status_updated` event, inside
 * `channels.delete`'s transaction.
 */
export const failChannelMessages = (
  statements: Statements,
  organizationId: OrganizationId,
  channelId: string,
  now: string
): void => failMessages(statements, organizationId, SQL.failChannel, CHANNEL_REMOVED_FAILURE, now, channelId, organizationId)

/**
 * Fails the `queued` send-queue messages of a broadcast being cancelled or stopped with
 * `failure` at `now` (those already `sending` finish their attempt), each with its
 * `message.status_updated` event, inside the transaction of `broadcasts.cancel` or
 * `broadcasts.stop` (broadcasts.ts).
 */
export const failQueuedBroadcastMessages = (
  statements: Statements,
  organizationId: OrganizationId,
  broadcastId: string,
  failure: MessageFailure,
  now: string
): void => failMessages(statements, organizationId, SQL.failBroadcastQueued, failure, now, broadcastId, organizationId)

/**
 * Runs `sql`, an `UPDATE … SET ${FAILED_BY_STORE} … RETURNING` of messages, with the failure,
 * `now` and then `where`, and writes one `message.status_updated` event per message it
 * failed.
 */
const failMessages = (
  statements: Statements,
  organizationId: OrganizationId,
  sql: string,
  failure: MessageFailure,
  now: string,
  ...where: ReadonlyArray<string>
): void => {
  const rows = statements.prepare<MessageRow>(sql).all(JSON.stringify(failure), now, ...where)
  if (rows.length > 0) {
    recordWebhookEvents(statements, organizationId, "message.status_updated", now, () => rows.map(decodeMessage))
  }
}

/** The due heads of one channel (or of the messages without one), read a page at a time in claim order. */
interface Candidates {
  readonly peek: () => CandidateRow | undefined
  readonly next: () => CandidateRow | undefined
}

const candidatesOf = (
  statements: Statements,
  channelUuid: string | null,
  nowIso: string,
  nowMillis: number,
  firstPage: number
): Candidates => {
  let classIndex = 0
  let after: readonly [string, number] = ["", 0]
  let page: Array<CandidateRow> = []
  let size = firstPage
  let classDone = false
  const fill = (): void => {
    while (page.length === 0 && classIndex < CLASSES.length) {
      if (classDone) {
        classIndex += 1
        after = ["", 0]
        classDone = false
        size = firstPage
        continue
      }
      page = statements
        .prepare<CandidateRow>(dueSql(size))
        .all(channelUuid, CLASSES[classIndex], after[0], after[1], nowIso, nowMillis)
      classDone = page.length < size
      const last = page.at(-1)
      if (last !== undefined) after = [last.next_attempt_at!, last.sequence]
      size = pageSize(size * 2)
    }
  }
  return {
    peek: () => {
      fill()
      return page[0]
    },
    next: () => {
      fill()
      return page.shift()
    }
  }
}

/** One channel's part of a claim: its pacing (none for no channel or an unknown one), its next slot and its candidates. */
interface ChannelTurn {
  readonly channelUuid: string | null
  readonly intervalMs: number | null
  slot: number
  reserved: boolean
  readonly candidates: Candidates
}

/** The order of a claim's candidates: `single` first, then `next_attempt_at`, then `sequence`. */
const claimOrder = (a: CandidateRow, b: CandidateRow): number =>
  CLASSES.indexOf(a.send_class) - CLASSES.indexOf(b.send_class) ||
  (a.next_attempt_at! < b.next_attempt_at! ? -1 : a.next_attempt_at! > b.next_attempt_at! ? 1 : 0) ||
  a.sequence - b.sequence

/** The body of `claim`, inside its transaction (the rules of `OutboxRepository.claim`). */
const claimDue = (statements: Statements, request: OutboxClaimRequest): Array<ClaimedMessage> => {
  const { now, limit } = request
  const nowIso = iso(now)
  const channels: Array<string | null> = [
    ...statements.prepare<string>(SQL.channelsWaiting).pluck().all(),
    null
  ]
  const firstPage = pageSize(Math.ceil(limit / channels.length))
  const turns: Array<ChannelTurn> = []
  for (const channelUuid of channels) {
    const pacing = channelUuid === null ? undefined : statements.prepare<PacingRow>(SQL.pacing).get(channelUuid)
    if (pacing?.status === "paused") continue
    const candidates = candidatesOf(statements, channelUuid, nowIso, now, firstPage)
    if (candidates.peek() === undefined) continue
    turns.push({
      channelUuid,
      intervalMs: pacing === undefined ? null : pacingIntervalMs(pacing.throughput_mps),
      slot: pacing === undefined ? now : Math.max(pacing.pacing_tat, now),
      reserved: false,
      candidates
    })
  }
  // The channel whose first due head comes first in claim order takes the first turn.
  turns.sort((a, b) => claimOrder(a.candidates.peek()!, b.candidates.peek()!))
  const claimed: Array<ClaimedMessage> = []
  let active = turns
  while (claimed.length < limit && active.length > 0) {
    const still: Array<ChannelTurn> = []
    for (const turn of active) {
      if (claimed.length >= limit) {
        still.push(turn)
        continue
      }
      // No pacing slot left within the horizon: only expired messages, which take none.
      const row =
        turn.intervalMs !== null && turn.slot > now + request.horizonMs
          ? statements.prepare<CandidateRow>(SQL.expiredDue).get(turn.channelUuid, nowIso, nowIso, now)
          : turn.candidates.next()
      if (row === undefined) continue
      let notBefore = now
      if (turn.intervalMs !== null && row.expires_at > nowIso) {
        notBefore = turn.slot
        turn.slot += turn.intervalMs
        turn.reserved = true
      }
      claimed.push(claimOne(statements, row, request, notBefore))
      still.push(turn)
    }
    active = still
  }
  for (const turn of turns) {
    if (turn.reserved) statements.prepare(SQL.reservePacing).run(turn.slot, turn.channelUuid)
  }
  return claimed
}

/** Leases one due head to the claim: `sending` until `leaseUntil`, due again after the settle time. */
const claimOne = (
  statements: Statements,
  row: CandidateRow,
  request: OutboxClaimRequest,
  notBefore: number
): ClaimedMessage => {
  const after = statements
    .prepare<MessageRow>(SQL.lease)
    .get(request.lease, request.leaseUntil, iso(request.leaseUntil + request.settleMs), iso(request.now), row.uuid)!
  return {
    organization_id: row.organization_id as OrganizationId,
    message: decodeMessage(after),
    lease: request.lease,
    to: row.recipient,
    class: row.send_class,
    expires_at: row.expires_at,
    pair_rate_waits: row.pair_rate_waits,
    not_before: notBefore,
    reclaimed: row.status === "sending"
  }
}

/** The body of `record`, inside its transaction, for a message `lease` still holds. */
const recordOutcome = (statements: Statements, row: QueuedRow, outcome: OutboxOutcome, now: string): Message => {
  const organizationId = row.organization_id as OrganizationId
  const nowMillis = Date.parse(now)
  const channelUuid = row.channel_uuid
  const base = { ...row, updated_at: now, pair_rate_waits: 0 }
  let message: Message
  switch (outcome._tag) {
    case "Sent": {
      const sent = write(statements, {
        ...base,
        ...ENDED,
        status: "sent",
        provider_message_id: outcome.provider_message_id ?? row.provider_message_id,
        failure: null,
        attempts: row.attempts + outcome.attempts
      })
      const final =
        outcome.provider_message_id === null
          ? sent
          : applyPending(statements, organizationId, sent, outcome.provider_message_id, now).row
      if (channelUuid !== null) statements.prepare(SQL.endCoolDown).run(channelUuid)
      message = decodeMessage(final)
      recordWebhookEvent(statements, organizationId, "message.status_updated", now, () => message)
      return message
    }
    case "Failed": {
      message = decodeMessage(
        write(statements, {
          ...base,
          ...ENDED,
          status: "failed",
          failure: JSON.stringify(outcome.failure),
          attempts: row.attempts + outcome.attempts
        })
      )
      recordWebhookEvent(statements, organizationId, "message.status_updated", now, () => message)
      return message
    }
    case "Requeued": {
      message = decodeMessage(
        write(statements, {
          ...base,
          status: "queued",
          next_attempt_at: outcome.next_attempt_at,
          failure: jsonOf(outcome.failure),
          attempts: row.attempts + outcome.attempts,
          pair_rate_waits: outcome.pairRate ? row.pair_rate_waits + 1 : 0,
          lease: null,
          lease_until: null
        })
      )
      if (outcome.throttled && channelUuid !== null) {
        const pacing = statements.prepare<PacingRow>(SQL.pacing).get(channelUuid)
        if (pacing !== undefined) {
          const cooldownMs = nextCooldownMs(pacing.cooldown_ms)
          statements.prepare(SQL.coolDown).run(cooldownMs, Math.max(pacing.pacing_tat, nowMillis + cooldownMs), channelUuid)
        }
      }
      if (outcome.attempts > 0) recordWebhookEvent(statements, organizationId, "message.status_updated", now, () => message)
      return message
    }
    case "Unknown":
      return decodeMessage(
        write(statements, {
          ...base,
          next_attempt_at: outcome.next_attempt_at,
          attempts: row.attempts + outcome.attempts,
          lease: null,
          lease_until: nowMillis
        })
      )
    case "Paused": {
      message = decodeMessage(
        write(statements, { ...base, status: "queued", next_attempt_at: now, lease: null, lease_until: null })
      )
      if (channelUuid !== null) {
        const paused = statements
          .prepare<ChannelRow>(SQL.pause)
          .get(JSON.stringify(outcome.reason), now, now, channelUuid)
        if (paused !== undefined) {
          recordWebhookEvent(statements, organizationId, "channel.paused", now, () => decodeChannel(paused))
        }
      }
      return message
    }
  }
}

/** The body of `settle`, inside its transaction, for an outbox message of the organization. */
const settleMessage = (
  statements: Statements,
  organizationId: OrganizationId,
  row: QueuedRow,
  settlement: { readonly provider_message_id: string; readonly status: MessageStatus; readonly failure?: MessageFailure | undefined; readonly now: string }
) => {
  const recordsId = row.provider_message_id === null
  const written = applyStatus(statements, row, {
    status: settlement.status,
    from: MESSAGE_STATUS_PREDECESSORS[settlement.status],
    failure: settlement.failure,
    provider_message_id: recordsId ? settlement.provider_message_id : undefined,
    now: settlement.now
  })
  const final = recordsId
    ? applyPending(statements, organizationId, written.row, settlement.provider_message_id, settlement.now)
    : { row: written.row, changed: false }
  const message = decodeMessage(final.row)
  if (final.row.status !== row.status) {
    recordWebhookEvent(statements, organizationId, "message.status_updated", settlement.now, () => message)
  }
  return { message, changed: written.changed || final.changed }
}

/**
 * The earliest time (epoch ms) a waiting head of an active channel (or without one) is due,
 * or `null`: per channel and class, the heads read soonest due first until one cannot beat
 * the best found (a `sending` head is due at the later of `next_attempt_at` and `lease_until`).
 */
const nextDue = (statements: Statements): number | null => {
  let best: number | null = null
  const channels = [...statements.prepare<string>(SQL.channelsWaiting).pluck().all(), null]
  for (const channelUuid of channels) {
    if (channelUuid !== null && statements.prepare<PacingRow>(SQL.pacing).get(channelUuid)?.status === "paused") continue
    for (const sendClass of CLASSES) {
      const heads = statements
        .prepare<{ status: string; next_attempt_at: string; lease_until: number | null }>(SQL.heads)
        .iterate(channelUuid, sendClass)
      for (const head of heads) {
        const nextMillis = Date.parse(head.next_attempt_at)
        if (best !== null && nextMillis >= best) break
        const due = head.status === "sending" ? Math.max(nextMillis, head.lease_until ?? nextMillis) : nextMillis
        if (best === null || due < best) best = due
      }
    }
  }
  return best
}

/**
 * `Storage.outbox` on SQLite: the send queue's messages are rows of `messages` with their
 * dispatch state and each channel's pacing state is on its `channels` row (migration 15,
 * {@link SEND_QUEUE_MIGRATION}); messages enter through `chats.appendMessage`
 * ({@link insertOutboxMessage}). Every write is one `BEGIN IMMEDIATE` transaction (the
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
 * (webhooks.ts).
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
  const recordGrouped = groupedQueue(transactionPerGroup(db, "outbox.record", recordOne), {
    windowMs: RECORD_GROUP_WINDOW_MS,
    maxSize: RECORD_GROUP_SIZE
  })
  return {
    claim: (request) =>
      attempt("outbox.claim", () => {
        if (request.limit < 1 || !snapshot(db, () => anyDue(statements, request.now))) return []
        return transaction(db, () => claimDue(statements, request))
      }),
    record: (id, lease, outcome, now) => recordGrouped({ id, lease, outcome, now }),
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
          const after = write(statements, {
            ...row,
            ...ENDED,
            status: "queued",
            next_attempt_at: now,
            attempts: 0,
            failure: null,
            expires_at: expiresAt,
            updated_at: now
          })
          return { _tag: "Done", message: decodeMessage(after) }
        })
      ),
    cancel: (organizationId, id, failure, now) =>
      attempt("outbox.cancel", () =>
        transaction(db, (): OutboxMoveOutcome => {
          const row = queued(organizationId, id)
          if (row === undefined) return { _tag: "NotFound" }
          if (row.status !== "queued") return { _tag: "Refused", message: decodeMessage(row) }
          const message = decodeMessage(
            write(statements, { ...row, ...ENDED, status: "failed", failure: JSON.stringify(failure), updated_at: now })
          )
          recordWebhookEvent(statements, organizationId, "message.status_updated", now, () => message)
          return { _tag: "Done", message }
        })
      ),
    nextDueAt: () => attempt("outbox.nextDueAt", () => snapshot(db, () => nextDue(statements))),
    channelQueue: (organizationId, channelId) =>
      attempt("outbox.channelQueue", (): ChannelQueueFigures =>
        statements.prepare<ChannelQueueFigures>(SQL.channelQueue).get(channelId, organizationId)!
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

/**
 * How long a `record` waits for others to share its transaction, in ms, and how many share
 * one at most. Outcomes arrive one by one as Meta answers; alone, each paid a whole
 * transaction (~150 µs of CPU, most of it the commit); grouped, about 40 µs
 * (docs/benchmarks.md "Outbound dispatch"). A send answered in the request waits up to this
 * long more for its answer.
 */
const RECORD_GROUP_WINDOW_MS = 10
const RECORD_GROUP_SIZE = 64

/** One `record` call: the message, its lease, the outcome and the time (ISO 8601). */
interface RecordRequest {
  readonly id: string
  readonly lease: string
  readonly outcome: OutboxOutcome
  readonly now: string
}

/**
 * Whether any channel not paused (or no channel) has a due head at `now` (epoch ms), by
 * plain reads: one probe of `messages_send_queue_due` per channel with waiting messages and
 * class. Run inside a snapshot.
 */
const anyDue = (statements: Statements, now: number): boolean => {
  const nowIso = iso(now)
  const channels = [...statements.prepare<string>(SQL.channelsWaiting).pluck().all(), null]
  return channels.some((channelUuid) => {
    if (channelUuid !== null && statements.prepare<PacingRow>(SQL.pacing).get(channelUuid)?.status === "paused") return false
    return CLASSES.some(
      (sendClass) => statements.prepare(dueSql(1)).get(channelUuid, sendClass, "", 0, nowIso, now) !== undefined
    )
  })
}

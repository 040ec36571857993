import type {
  Broadcast,
  BroadcastCounts,
  BroadcastId,
  BroadcastRecipient,
  BroadcastStatus,
  ContactId,
  MessageFailure,
  MessageId,
  MessageStatus,
  TransportKind
} from "@switchboard/core"
import type { SqlValues } from "../SqlDialect.js"
import type { SqlBoolean, SqlJson } from "./values.js"

// Rows of `broadcasts` and of their recipients (rows of `messages` with `broadcast_uuid`),
// their decoding into core's records, and the pure steps of their reads.

/**
 * A row of `broadcasts`; `start_lease_until` epoch ms.
 *
 * @category rows
 */
export interface BroadcastRow {
  readonly organization_id: string
  readonly uuid: string
  readonly name: string
  readonly status: string
  readonly template: SqlJson
  readonly audience: SqlJson
  readonly channel_uuid: string | null
  readonly send_at: string | null
  readonly created_at: string
  readonly started_at: string | null
  readonly completed_at: string | null
  readonly stopped_reason: SqlJson
  readonly start_cursor: string | null
  readonly start_finished: SqlBoolean
  readonly start_lease: string | null
  readonly start_lease_until: number | null
  readonly transport: string
}

/**
 * The columns of a {@link BroadcastRow}, in `SELECT` order.
 *
 * @category statements
 */
export const BROADCAST_COLUMNS =
  "organization_id, uuid, name, status, template, audience, channel_uuid, send_at, created_at, started_at, " +
  "completed_at, stopped_reason, start_cursor, start_finished, start_lease, start_lease_until, transport"

/**
 * A recipient as the recipients list reads it: its message's columns and the phone it went to.
 *
 * @category rows
 */
export interface RecipientRow {
  readonly contact_uuid: string
  readonly phone: string
  readonly message_uuid: string
  readonly status: string
  readonly failure: SqlJson
}

/**
 * The counts of a broadcast without recipients.
 *
 * @category broadcasts
 */
export const ZERO_COUNTS: BroadcastCounts = { total: 0, queued: 0, sending: 0, sent: 0, delivered: 0, read: 0, failed: 0 }

/**
 * The counts of broadcasts (keyed by uuid; one with no recipient is absent) from the rows
 * of a `GROUP BY broadcast_uuid, status` of their recipients.
 *
 * @category broadcasts
 */
export const countsByBroadcast = (
  rows: ReadonlyArray<{ readonly broadcast_uuid: string; readonly status: MessageStatus; readonly count: number }>
): Map<string, BroadcastCounts> => {
  const byBroadcast = new Map<string, { -readonly [K in keyof BroadcastCounts]: number }>()
  for (const row of rows) {
    let counts = byBroadcast.get(row.broadcast_uuid)
    if (counts === undefined) {
      counts = { ...ZERO_COUNTS }
      byBroadcast.set(row.broadcast_uuid, counts)
    }
    counts[row.status === "scheduled" ? "queued" : row.status] += row.count
    counts.total += row.count
  }
  return byBroadcast
}

/**
 * The next candidates of an audience page: the first `needed` uuids above `position` of
 * the union of `linked` (the members and carriers read, each a keyset range of at most
 * `needed`) and `listed` (the audience's own uuids, sorted), in ascending order.
 *
 * @category broadcasts
 */
export const nextAudienceCandidates = (
  linked: Iterable<string>,
  listed: ReadonlyArray<string>,
  position: string,
  needed: number
): Array<string> => {
  const candidates = new Set<string>(linked)
  let taken = 0
  for (const id of listed) {
    if (taken >= needed) break
    if (id > position) {
      candidates.add(id)
      taken += 1
    }
  }
  return [...candidates].sort().slice(0, needed)
}

/**
 * The decoders of broadcasts and their recipients for one dialect's values.
 *
 * @category decoders
 */
export interface BroadcastDecoders {
  /** A broadcast record from its row and its counts. */
  readonly broadcast: (row: BroadcastRow, counts: BroadcastCounts) => Broadcast
  readonly recipient: (row: RecipientRow) => BroadcastRecipient
}

/**
 * The {@link BroadcastDecoders} of `values`.
 *
 * @category decoders
 */
export const broadcastDecodersOf = ({ readJson }: SqlValues): BroadcastDecoders => ({
  broadcast: (row, counts) => ({
    uuid: row.uuid as BroadcastId,
    name: row.name,
    status: row.status as BroadcastStatus,
    template: readJson(row.template) as Broadcast["template"],
    audience: readJson(row.audience) as Broadcast["audience"],
    channel_uuid: row.channel_uuid as Broadcast["channel_uuid"],
    transport: row.transport as TransportKind,
    send_at: row.send_at,
    created_at: row.created_at,
    started_at: row.started_at,
    completed_at: row.completed_at,
    stopped_reason: readJson(row.stopped_reason) as MessageFailure | null,
    counts
  }),
  recipient: (row) => ({
    contact_uuid: row.contact_uuid as ContactId,
    phone: row.phone,
    message_uuid: row.message_uuid as MessageId,
    status: row.status as MessageStatus,
    failure: readJson(row.failure) as MessageFailure | null
  })
})

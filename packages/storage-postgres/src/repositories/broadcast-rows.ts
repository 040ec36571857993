import type {
  Broadcast,
  BroadcastCounts,
  BroadcastId,
  BroadcastRecipient,
  BroadcastStatus,
  ContactId,
  MessageFailure,
  MessageId,
  MessageStatus
} from "@switchboard/core"
import type { Sql } from "../internal/sql.js"

// Rows of `broadcasts` and of their recipients (rows of `messages` with `broadcast_uuid`),
// and their decoding into core's records. JSON columns come back parsed, instants as ISO
// strings (internal/connection.ts).

/** A row of `broadcasts`; `start_lease_until` epoch ms. */
export interface BroadcastRow {
  readonly organization_id: string
  readonly uuid: string
  readonly name: string
  readonly status: string
  readonly template: Broadcast["template"]
  readonly audience: Broadcast["audience"]
  readonly channel_uuid: string | null
  readonly send_at: string | null
  readonly created_at: string
  readonly started_at: string | null
  readonly completed_at: string | null
  readonly stopped_reason: MessageFailure | null
  readonly start_cursor: string | null
  readonly start_finished: boolean
  readonly start_lease: string | null
  readonly start_lease_until: number | null
}

/** The columns of a {@link BroadcastRow}, in `SELECT` order. */
export const BROADCAST_COLUMNS =
  "organization_id, uuid, name, status, template, audience, channel_uuid, send_at, created_at, started_at, " +
  "completed_at, stopped_reason, start_cursor, start_finished, start_lease, start_lease_until"

/** A recipient as the recipients list reads it: its message's columns and the phone it went to. */
export interface RecipientRow {
  readonly contact_uuid: string
  readonly phone: string
  readonly message_uuid: string
  readonly status: string
  readonly failure: MessageFailure | null
}

export const ZERO_COUNTS: BroadcastCounts = { total: 0, queued: 0, sending: 0, sent: 0, delivered: 0, read: 0, failed: 0 }

/**
 * The counts of these broadcasts (keyed by uuid; one with no recipient is absent), read
 * from their recipients' current statuses in one query (per broadcast a range of the
 * covering index `messages_broadcast_statuses`).
 */
const countsOf = async (sql: Sql, schema: string, ids: ReadonlyArray<string>): Promise<Map<string, BroadcastCounts>> => {
  const byBroadcast = new Map<string, { -readonly [K in keyof BroadcastCounts]: number }>()
  if (ids.length === 0) return byBroadcast
  const rows = await sql.rows<{ broadcast_uuid: string; status: MessageStatus; count: number }>(
    `SELECT broadcast_uuid, status, COUNT(*) AS count FROM ${schema}.messages
      WHERE broadcast_uuid = ANY($1::text[]) GROUP BY broadcast_uuid, status`,
    [ids]
  )
  for (const row of rows) {
    let counts = byBroadcast.get(row.broadcast_uuid)
    if (counts === undefined) {
      counts = { ...ZERO_COUNTS }
      byBroadcast.set(row.broadcast_uuid, counts)
    }
    counts[row.status] += row.count
    counts.total += row.count
  }
  return byBroadcast
}

/** A broadcast record from its row and its counts. */
export const decodeBroadcast = (row: BroadcastRow, counts: BroadcastCounts): Broadcast => ({
  uuid: row.uuid as BroadcastId,
  name: row.name,
  status: row.status as BroadcastStatus,
  template: row.template,
  audience: row.audience,
  channel_uuid: row.channel_uuid as Broadcast["channel_uuid"],
  send_at: row.send_at,
  created_at: row.created_at,
  started_at: row.started_at,
  completed_at: row.completed_at,
  stopped_reason: row.stopped_reason,
  counts
})

/** The records of these rows, in their order, with their counts (one query for all). */
export const recordsOf = async (sql: Sql, schema: string, rows: ReadonlyArray<BroadcastRow>): Promise<Array<Broadcast>> => {
  const counts = await countsOf(sql, schema, rows.map((row) => row.uuid))
  return rows.map((row) => decodeBroadcast(row, counts.get(row.uuid) ?? ZERO_COUNTS))
}

/** The record of one row, with its counts. */
export const recordOf = async (sql: Sql, schema: string, row: BroadcastRow): Promise<Broadcast> =>
  (await recordsOf(sql, schema, [row]))[0]!

/** A recipient record from its row. */
export const decodeRecipient = (row: RecipientRow): BroadcastRecipient => ({
  contact_uuid: row.contact_uuid as ContactId,
  phone: row.phone,
  message_uuid: row.message_uuid as MessageId,
  status: row.status as MessageStatus,
  failure: row.failure
})

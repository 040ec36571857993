import type { Broadcast, MessageStatus } from "@switchboard/core"
import { type BroadcastRow, countsByBroadcast, ZERO_COUNTS } from "@switchboard/storage-sql"
import { decoders } from "../dialect.js"
import type { Sql } from "../internal/sql.js"

// The reads of broadcasts' records with their counts, on PostgreSQL; the rows of
// `broadcasts` and of their recipients and their decoding are @switchboard/storage-sql's.

export { BROADCAST_COLUMNS, type BroadcastRow, type RecipientRow, ZERO_COUNTS } from "@switchboard/storage-sql"

/** A broadcast record from its row and its counts. */
export const decodeBroadcast = decoders.broadcasts.broadcast

/** A recipient record from its row. */
export const decodeRecipient = decoders.broadcasts.recipient

/**
 * The counts of these broadcasts (keyed by uuid; one with no recipient is absent), read
 * from their recipients' current statuses in one query (per broadcast a range of the
 * covering index `messages_broadcast_statuses`).
 */
const countsOf = async (sql: Sql, schema: string, ids: ReadonlyArray<string>) => {
  if (ids.length === 0) return countsByBroadcast([])
  const rows = await sql.rows<{ broadcast_uuid: string; status: MessageStatus; count: number }>(
    `SELECT broadcast_uuid, status, COUNT(*) AS count FROM ${schema}.messages
      WHERE broadcast_uuid = ANY($1::text[]) GROUP BY broadcast_uuid, status`,
    [ids]
  )
  return countsByBroadcast(rows)
}

/** The records of these rows, in their order, with their counts (one query for all). */
export const recordsOf = async (sql: Sql, schema: string, rows: ReadonlyArray<BroadcastRow>): Promise<Array<Broadcast>> => {
  const counts = await countsOf(sql, schema, rows.map((row) => row.uuid))
  return rows.map((row) => decodeBroadcast(row, counts.get(row.uuid) ?? ZERO_COUNTS))
}

/** The record of one row, with its counts. */
export const recordOf = async (sql: Sql, schema: string, row: BroadcastRow): Promise<Broadcast> =>
  (await recordsOf(sql, schema, [row]))[0]!

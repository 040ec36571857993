import type { Chat, WebhookEventType } from "@switchboard/core"
import { type ChatJoinRow, columnsOf, MESSAGE_COLUMNS, MESSAGE_VALUE_COUNT, MESSAGE_VALUE_TYPES } from "@switchboard/storage-sql"
import { decoders } from "../dialect.js"
import type { Sql } from "../internal/sql.js"
import { subscribesSql } from "./webhookEvents.js"

// The statements of chats and messages (schema/chats.ts) several repositories share, on
// PostgreSQL; their rows, decoders and insert parameters are @switchboard/storage-sql's
// (dialect.ts `decoders`).

export { MESSAGE_COLUMNS, type MessageRow, messageValues, jsonOrNull } from "@switchboard/storage-sql"

/** A message record from its row. */
export const decodeMessage = decoders.message

/** {@link MESSAGE_COLUMNS} each prefixed with `alias.`. */
export const messageColumnsOf = (alias: string): string => columnsOf(MESSAGE_COLUMNS, alias)

/**
 * The values of {@link MESSAGE_COLUMNS} and `organization_id` for an `INSERT`: `value(k)`
 * names the k-th (from 0, as {@link messageValues} orders them) as a parameter or an
 * expression, each cast to its column's type.
 */
export const messageValuesSql = (value: (k: number) => string): string =>
  MESSAGE_VALUE_TYPES.map((type, k) => `${value(k)}::${type}`).join(", ")

/** `$1::text, …, $20::text`: the parameters of {@link messageValues}, each cast to its column's type. */
const MESSAGE_PARAMETERS = messageValuesSql((k) => `$${k + 1}`)

/** `INSERT INTO messages` of {@link MESSAGE_COLUMNS} and `organization_id` ($1…$20): bind {@link messageValues}. */
export const insertMessageSql = (schema: string): string =>
  `INSERT INTO ${schema}.messages (${MESSAGE_COLUMNS}, organization_id) VALUES (${MESSAGE_PARAMETERS})`

/**
 * {@link insertMessageSql} unless the organization ($20, the last) has a message of that direction
 * ($4) and provider id ($11) already (then nothing is inserted), `RETURNING`
 * {@link LAST_MESSAGE_COLUMNS}: for a
 * `WITH` clause. The check reads the statement's snapshot: the caller holds a lock that
 * orders every insert of that provider id (chats.ts `appendToLockedChat`).
 */
export const insertMessageUnlessStoredSql = (schema: string): string =>
  `INSERT INTO ${schema}.messages (${MESSAGE_COLUMNS}, organization_id) SELECT ${MESSAGE_PARAMETERS}
    WHERE NOT EXISTS (SELECT 1 FROM ${schema}.messages
      WHERE organization_id = $${MESSAGE_VALUE_COUNT} AND direction = $4 AND provider_message_id = $11)
    RETURNING ${LAST_MESSAGE_COLUMNS}`

/**
 * Keyset pages of a chat's messages, newest first: `first` binds `(chat_uuid, limit)`,
 * `after` binds `(chat_uuid, created_at, uuid, limit)` of the last message of the previous
 * page. Each is one range of the index `messages_by_chat`; reaction rows are skipped (they
 * show in their target's `reactions`).
 */
export const messagePageSql = (schema: string) =>
  ({
    first: `SELECT ${MESSAGE_COLUMNS} FROM ${schema}.messages WHERE chat_uuid = $1 AND type <> 'reaction'
      ORDER BY created_at DESC, uuid DESC LIMIT $2`,
    after: `SELECT ${MESSAGE_COLUMNS} FROM ${schema}.messages WHERE chat_uuid = $1
      AND (created_at, uuid) < ($2::timestamptz, $3::text) AND type <> 'reaction' ORDER BY created_at DESC, uuid DESC LIMIT $4`
  }) as const

/** A chat record's row: the chat joined with its contact and last message, and the contact's groups and labels. */
export interface ChatRecordRow extends ChatJoinRow {
  readonly groups: Chat["groups"]
  readonly labels: Chat["labels"]
}

/**
 * Where a chat record's rows come from: the chat rows (`chats`, the table by default, or a
 * `WITH` clause returning every column of it), the join that reads its last message `m`
 * (`lastMessage`, from the table by default), the `WHERE` clause on the chat `c`, and
 * `extra` columns.
 */
interface ChatRecordSources {
  readonly chats?: string
  readonly lastMessage?: string
  readonly where: string
  readonly extra?: string
}

/**
 * The chat records of `sources` (chats with contact, last message, groups and labels).
 * `-infinity` (no message) is read as null: it has no ISO form. The contact's groups and
 * labels are JSON arrays of one index range each, in the order of the record.
 */
const chatRecordSql = (schema: string, sources: ChatRecordSources): string =>
  `SELECT c.id, c.uuid, c.status, c.assigned_to, c.favorite, c.unread_count,
        NULLIF(c.last_message_at, '-infinity') AS last_message_at, c.last_inbound_at, c.last_inbound_channel_uuid,
        c.created_at, c.updated_at, ct.uuid AS contact_uuid, ct.first_name, ct.last_name, ct.phone,
        m.uuid AS m_uuid, m.direction AS m_direction, m.type AS m_type, m.text AS m_text,
        m.status AS m_status, m.created_at AS m_created_at,${sources.extra ?? ""}
        (SELECT COALESCE(json_agg(json_build_object('uuid', g.uuid, 'name', g.name)
            ORDER BY g.name COLLATE "C", g.uuid COLLATE "C"), '[]'::json)
          FROM ${schema}.group_members AS gm JOIN ${schema}.contact_groups AS g ON g.uuid = gm.group_uuid
          WHERE gm.contact_uuid = ct.uuid) AS groups,
        (SELECT COALESCE(json_agg(json_build_object('uuid', l.uuid, 'name', l.name, 'color', l.color)
            ORDER BY l.name COLLATE "C", l.uuid COLLATE "C"), '[]'::json)
          FROM ${schema}.contact_labels AS cl JOIN ${schema}.labels AS l ON l.uuid = cl.label_uuid
          WHERE cl.contact_uuid = ct.uuid) AS labels
      FROM ${sources.chats ?? `${schema}.chats`} AS c
      JOIN ${schema}.contacts AS ct ON ct.uuid = c.contact_uuid
      ${sources.lastMessage ?? `LEFT JOIN ${schema}.messages AS m ON m.uuid = c.last_message_uuid`}
      WHERE ${sources.where}`

/**
 * The columns `subscribers_0`, … of a chat record: the uuids of the enabled endpoints of
 * the chat's organization subscribed to the event type bound at `$first`, `$first+1`, …
 * (`count` of them), as `subscribedEndpoints` in webhookEvents.ts reads them.
 */
const subscriberColumns = (schema: string, first: number, count: number): string =>
  Array.from(
    { length: count },
    (_, i) => `
        ARRAY(SELECT we.uuid FROM ${schema}.webhook_endpoints AS we
          WHERE ${subscribesSql("we", "c.organization_id", `$${first + i}::text`)}) AS subscribers_${i},`
  ).join("")

/** The statements of this module, for `schema`; `extra` columns in `chats`. */
const sqlOf = (schema: string, extra = "") =>
  ({
    chats: chatRecordSql(schema, { where: "c.id = ANY($1::bigint[])", extra })
  }) as const

/**
 * The chat record of the chat row a `WITH` clause `updated` returns (every column of
 * `chats`, after an update of the message a clause `inserted` returns, `RETURNING`
 * {@link LAST_MESSAGE_COLUMNS}, may have made its last message), and the endpoints
 * subscribed to each of `types` bound at `$first`, …: the final `SELECT` of a statement
 * that writes the chat; no row when `updated` returns none. Decode it with
 * {@link chatAndSubscribersOf}.
 */
export const updatedChatRecordSql = (schema: string, updated: string, inserted: string, first: number, count: number): string =>
  chatRecordSql(schema, {
    chats: updated,
    // Each branch looked up by the uuid (a join on a UNION ALL may scan every message).
    lastMessage: `LEFT JOIN LATERAL (SELECT ${LAST_MESSAGE_COLUMNS} FROM ${inserted} WHERE uuid = c.last_message_uuid
        UNION ALL SELECT ${LAST_MESSAGE_COLUMNS} FROM ${schema}.messages WHERE uuid = c.last_message_uuid LIMIT 1) AS m ON true`,
    where: "true",
    extra: subscriberColumns(schema, first, count)
  })

/** The columns of a chat's last message its record reads (a `RETURNING` list for {@link updatedChatRecordSql}). */
export const LAST_MESSAGE_COLUMNS = "uuid, direction, type, text, status, created_at"

/** The chat record and the subscribers of `count` event types of a row of {@link updatedChatRecordSql} or `chatWithSubscribers`. */
export const chatAndSubscribersOf = (
  row: ChatRecordRow & Record<string, unknown>,
  count: number
): { readonly chat: Chat; readonly subscribers: ReadonlyArray<ReadonlyArray<string>> } => ({
  chat: decodeChat(row),
  subscribers: Array.from({ length: count }, (_, i) => row[`subscribers_${i}`] as Array<string>)
})

/**
 * The chat records of the page `statement` selects (a statement selecting the row `id`s of
 * the page in order, a `Single` plan's `exact` of the chat-list planner), in its order, in
 * one statement: the ids as an array in the statement's order (`ARRAY(…)` keeps it), each
 * with its position (`WITH ORDINALITY`), then their records. One round trip, and one
 * snapshot without a transaction, where the ids and then {@link chatsByIds} took two
 * statements in a `REPEATABLE READ` transaction (four round trips with its `BEGIN` and
 * `COMMIT`).
 */
export const chatsOfPage = async (sql: Sql, schema: string, statement: { readonly sql: string; readonly params: ReadonlyArray<unknown> }): Promise<Array<Chat>> => {
  const rows = await sql.rows<ChatRecordRow & { readonly page_position: string }>(
    chatRecordSql(schema, {
      chats: `(SELECT c.*, p.position AS page_position FROM unnest(ARRAY(${statement.sql})) WITH ORDINALITY AS p (id, position)
        JOIN ${schema}.chats AS c ON c.id = p.id)`,
      where: "true",
      extra: " c.page_position,"
    }),
    statement.params
  )
  return rows.sort((a, b) => Number(a.page_position) - Number(b.page_position)).map(decodeChat)
}

/**
 * The chat records of the chats with these row ids, in the order given: one query for the
 * whole page (chats with contact, last message, groups and labels), never one per chat.
 */
export const chatsByIds = async (sql: Sql, schema: string, ids: ReadonlyArray<number>): Promise<Array<Chat>> => {
  if (ids.length === 0) return []
  const rows = await sql.rows<ChatRecordRow>(sqlOf(schema).chats, [ids])
  const byId = new Map(rows.map((row) => [Number(row.id), row]))
  return ids.flatMap((id) => {
    const row = byId.get(Number(id))
    return row === undefined ? [] : [decodeChat(row)]
  })
}

/**
 * The chat record of the chat with this row id (which must exist) and, in the same
 * statement, the uuids of its organization's enabled endpoints subscribed to each of
 * `types` (`subscribers[i]` those of `types[i]`), as `subscribedEndpoints` in
 * webhookEvents.ts reads them: one round trip where {@link chatsByIds} and one look-up
 * per type took one each.
 */
export const chatWithSubscribers = async (
  sql: Sql,
  schema: string,
  id: number,
  types: ReadonlyArray<WebhookEventType>
): Promise<{ readonly chat: Chat; readonly subscribers: ReadonlyArray<ReadonlyArray<string>> }> => {
  const row = await sql.row<ChatRecordRow & Record<string, unknown>>(sqlOf(schema, subscriberColumns(schema, 2, types.length)).chats, [
    [id],
    ...types
  ])
  return chatAndSubscribersOf(row!, types.length)
}

const decodeChat = (row: ChatRecordRow): Chat => decoders.chat(row, row.groups, row.labels)

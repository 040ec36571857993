import {
  type Chat,
  type ChatId,
  type ChatStatus,
  type ContactId,
  type Message,
  type MessageDirection,
  type MessageId,
  type MessageStatus,
  type MessageType,
  type NewMessage,
  type WebhookEventType,
  windowExpiresAt
} from "@switchboard/core"
import type { Sql } from "../internal/sql.js"
import { subscribesSql } from "./webhook-events.js"

// Rows of `chats` and `messages` (schema/chats.ts) and their decoding into core's records.
// The casts to branded ids are safe: every id was written from a branded value. JSON
// columns (`json`) come back parsed, timestamps as ISO strings (internal/connection.ts).

/** A row of `messages` (every column but `organization_id` and the send queue's own). */
export interface MessageRow {
  readonly uuid: string
  readonly chat_uuid: string
  readonly contact_uuid: string
  readonly direction: string
  readonly type: string
  readonly text: string | null
  readonly template: unknown
  readonly media: unknown
  readonly content: unknown
  readonly status: string
  readonly provider_message_id: string | null
  readonly failure: unknown
  readonly channel_uuid: string | null
  readonly created_at: string
  readonly updated_at: string
  readonly attempts: number
  readonly next_attempt_at: string | null
  readonly broadcast_uuid: string | null
}

/**
 * The columns of a {@link MessageRow}, in `SELECT` order (the send queue's own dispatch
 * columns are read by repositories/outbox.ts only).
 */
export const MESSAGE_COLUMNS =
  "uuid, chat_uuid, contact_uuid, direction, type, text, template, media, content, status, provider_message_id, " +
  "failure, channel_uuid, created_at, updated_at, attempts, next_attempt_at, broadcast_uuid"

/** {@link MESSAGE_COLUMNS} each prefixed with `alias.`. */
export const messageColumnsOf = (alias: string): string =>
  MESSAGE_COLUMNS.split(", ").map((column) => `${alias}.${column}`).join(", ")

/** The column types of {@link MESSAGE_COLUMNS} and `organization_id`, in that order (the parameters' casts). */
const MESSAGE_VALUE_TYPES = [
  "text", "text", "text", "text", "text", "text", "json", "json", "json", "text", "text",
  "json", "text", "timestamptz", "timestamptz", "integer", "timestamptz", "text", "text"
] as const

/**
 * The values of {@link MESSAGE_COLUMNS} and `organization_id` for an `INSERT`: `value(k)`
 * names the k-th (from 0, as {@link messageValues} orders them) as a parameter or an
 * expression, each cast to its column's type.
 */
export const messageValuesSql = (value: (k: number) => string): string =>
  MESSAGE_VALUE_TYPES.map((type, k) => `${value(k)}::${type}`).join(", ")

/** `$1::text, …, $19::text`: the parameters of {@link messageValues}, each cast to its column's type. */
const MESSAGE_PARAMETERS = messageValuesSql((k) => `$${k + 1}`)

/** `INSERT INTO messages` of {@link MESSAGE_COLUMNS} and `organization_id` ($1…$19): bind {@link messageValues}. */
export const insertMessageSql = (schema: string): string =>
  `INSERT INTO ${schema}.messages (${MESSAGE_COLUMNS}, organization_id) VALUES (${MESSAGE_PARAMETERS})`

/**
 * {@link insertMessageSql} unless the organization ($19) has a message of that direction
 * ($4) and provider id ($11) already (then nothing is inserted), `RETURNING`
 * {@link LAST_MESSAGE_COLUMNS}: for a
 * `WITH` clause. The check reads the statement's snapshot: the caller holds a lock that
 * orders every insert of that provider id (chats.ts `appendToLockedChat`).
 */
export const insertMessageUnlessStoredSql = (schema: string): string =>
  `INSERT INTO ${schema}.messages (${MESSAGE_COLUMNS}, organization_id) SELECT ${MESSAGE_PARAMETERS}
    WHERE NOT EXISTS (SELECT 1 FROM ${schema}.messages WHERE organization_id = $19 AND direction = $4 AND provider_message_id = $11)
    RETURNING ${LAST_MESSAGE_COLUMNS}`

/**
 * Keyset pages of a chat's messages, newest first: `first` binds `(chat_uuid, limit)`,
 * `after` binds `(chat_uuid, created_at, uuid, limit)` of the last message of the previous
 * page. Each is one range of the index `messages_by_chat`.
 */
export const messagePageSql = (schema: string) =>
  ({
    first: `SELECT ${MESSAGE_COLUMNS} FROM ${schema}.messages WHERE chat_uuid = $1
      ORDER BY created_at DESC, uuid DESC LIMIT $2`,
    after: `SELECT ${MESSAGE_COLUMNS} FROM ${schema}.messages WHERE chat_uuid = $1
      AND (created_at, uuid) < ($2::timestamptz, $3::text) ORDER BY created_at DESC, uuid DESC LIMIT $4`
  }) as const

/** A JSON document as the text a `json` column stores (key order kept), or null. */
export const jsonOrNull = (value: unknown): string | null =>
  value === null || value === undefined ? null : JSON.stringify(value)

/** The parameters of {@link insertMessageSql} for a message of a chat and contact. */
export const messageValues = (
  message: NewMessage,
  chatId: string,
  contactId: string,
  organizationId: string
): Array<string | number | null> => [
  message.uuid,
  chatId,
  contactId,
  message.direction,
  message.type,
  message.text,
  jsonOrNull(message.template),
  jsonOrNull(message.media),
  jsonOrNull(message.content),
  message.status,
  message.provider_message_id,
  jsonOrNull(message.failure),
  message.channel_uuid,
  message.created_at,
  message.updated_at,
  message.attempts,
  message.next_attempt_at,
  message.broadcast_uuid,
  organizationId
]

/** A message record from its row. */
export const decodeMessage = (row: MessageRow): Message => ({
  uuid: row.uuid as MessageId,
  chat_uuid: row.chat_uuid as ChatId,
  contact_uuid: row.contact_uuid as ContactId,
  direction: row.direction as MessageDirection,
  type: row.type as MessageType,
  text: row.text,
  template: (row.template ?? null) as Message["template"],
  media: (row.media ?? null) as Message["media"],
  content: (row.content ?? null) as Message["content"],
  status: row.status as MessageStatus,
  provider_message_id: row.provider_message_id,
  failure: (row.failure ?? null) as Message["failure"],
  channel_uuid: row.channel_uuid,
  attempts: row.attempts,
  next_attempt_at: row.next_attempt_at,
  broadcast_uuid: row.broadcast_uuid,
  created_at: row.created_at,
  updated_at: row.updated_at
})

/** A chat joined with its contact, its last message (`m_*`, null without one), and the contact's groups and labels. */
export interface ChatJoinRow {
  readonly id: number
  readonly uuid: string
  readonly status: string
  readonly assigned_to: string | null
  readonly favorite: boolean
  readonly unread_count: number
  readonly last_message_at: string | null
  readonly last_inbound_at: string | null
  readonly last_inbound_channel_uuid: string | null
  readonly created_at: string
  readonly updated_at: string
  readonly contact_uuid: string
  readonly first_name: string | null
  readonly last_name: string | null
  readonly phone: string
  readonly m_uuid: string | null
  readonly m_direction: string | null
  readonly m_type: string | null
  readonly m_text: string | null
  readonly m_status: string | null
  readonly m_created_at: string | null
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
 * (`count` of them), as `subscribedEndpoints` in webhook-events.ts reads them.
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
  row: ChatJoinRow & Record<string, unknown>,
  count: number
): { readonly chat: Chat; readonly subscribers: ReadonlyArray<ReadonlyArray<string>> } => ({
  chat: decodeChat(row),
  subscribers: Array.from({ length: count }, (_, i) => row[`subscribers_${i}`] as Array<string>)
})

/**
 * The chat records of the chats with these row ids, in the order given: one query for the
 * whole page (chats with contact, last message, groups and labels), never one per chat.
 */
export const chatsByIds = async (sql: Sql, schema: string, ids: ReadonlyArray<number>): Promise<Array<Chat>> => {
  if (ids.length === 0) return []
  const rows = await sql.rows<ChatJoinRow>(sqlOf(schema).chats, [ids])
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
 * webhook-events.ts reads them: one round trip where {@link chatsByIds} and one look-up
 * per type took one each.
 */
export const chatWithSubscribers = async (
  sql: Sql,
  schema: string,
  id: number,
  types: ReadonlyArray<WebhookEventType>
): Promise<{ readonly chat: Chat; readonly subscribers: ReadonlyArray<ReadonlyArray<string>> }> => {
  const row = await sql.row<ChatJoinRow & Record<string, unknown>>(sqlOf(schema, subscriberColumns(schema, 2, types.length)).chats, [
    [id],
    ...types
  ])
  return chatAndSubscribersOf(row!, types.length)
}

const decodeChat = (row: ChatJoinRow): Chat => ({
  uuid: row.uuid as ChatId,
  contact: { uuid: row.contact_uuid as ContactId, first_name: row.first_name, last_name: row.last_name, phone: row.phone },
  status: row.status as ChatStatus,
  assigned_to: row.assigned_to,
  groups: row.groups,
  labels: row.labels,
  favorite: row.favorite,
  unread: row.unread_count > 0,
  unread_count: row.unread_count,
  last_message_at: row.last_message_at,
  last_message:
    row.m_uuid === null
      ? null
      : {
          uuid: row.m_uuid as MessageId,
          direction: row.m_direction as MessageDirection,
          type: row.m_type as MessageType,
          text: row.m_text,
          status: row.m_status as MessageStatus,
          created_at: row.m_created_at!
        },
  last_inbound_channel_uuid: row.last_inbound_channel_uuid,
  window_expires_at: windowExpiresAt(row.last_inbound_at),
  created_at: row.created_at,
  updated_at: row.updated_at
})

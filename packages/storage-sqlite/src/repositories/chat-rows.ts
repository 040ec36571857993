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
  windowExpiresAt
} from "@switchboard/core"
import type { Statements } from "../internal/sql.js"
import { groupsAndLabelsOf } from "./rows.js"

// Rows of migrations 4, 7, 15 and 16 (chats, messages) and their decoding into core's records. The
// casts to branded ids are safe: every id was written from a branded value.

/** A row of `messages` (every column but `organization_id`); JSON columns as text. */
export interface MessageRow {
  readonly uuid: string
  readonly chat_uuid: string
  readonly contact_uuid: string
  readonly direction: string
  readonly type: string
  readonly text: string | null
  readonly template: string | null
  readonly media: string | null
  readonly content: string | null
  readonly status: string
  readonly provider_message_id: string | null
  readonly failure: string | null
  readonly channel_uuid: string | null
  readonly created_at: string
  readonly updated_at: string
  readonly attempts: number
  readonly next_attempt_at: string | null
  readonly broadcast_uuid: string | null
}

/**
 * The columns of a {@link MessageRow}, in `SELECT` order (migrations 7 and 15; the send
 * queue's own dispatch columns are read by repositories/outbox.ts only).
 */
export const MESSAGE_COLUMNS =
  "uuid, chat_uuid, contact_uuid, direction, type, text, template, media, content, status, provider_message_id, " +
  "failure, channel_uuid, created_at, updated_at, attempts, next_attempt_at, broadcast_uuid"

/** `INSERT INTO messages` of {@link MESSAGE_COLUMNS} and `organization_id`: bind {@link messageValues}. */
export const INSERT_MESSAGE_SQL = `INSERT INTO messages (${MESSAGE_COLUMNS}, organization_id)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

/**
 * Keyset pages of a chat's messages, newest first: `first` binds `(chat_uuid, limit)`,
 * `after` binds `(chat_uuid, created_at, uuid, limit)` of the last message of the previous
 * page. Each is one range of the index `messages_by_chat` (test/chats-query-plan.test.ts).
 */
export const MESSAGE_PAGE_SQL = {
  first: `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE chat_uuid = ? ORDER BY created_at DESC, uuid DESC LIMIT ?`,
  after: `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE chat_uuid = ? AND (created_at, uuid) < (?, ?)
    ORDER BY created_at DESC, uuid DESC LIMIT ?`
} as const

const jsonOrNull = (value: unknown): string | null => (value === null ? null : JSON.stringify(value))
const parsedOrNull = (text: string | null) => (text === null ? null : JSON.parse(text))

/** The parameters of {@link INSERT_MESSAGE_SQL} for a message of a chat and contact. */
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
  template: parsedOrNull(row.template),
  media: parsedOrNull(row.media),
  content: parsedOrNull(row.content),
  status: row.status as MessageStatus,
  provider_message_id: row.provider_message_id,
  failure: parsedOrNull(row.failure),
  channel_uuid: row.channel_uuid,
  attempts: row.attempts,
  next_attempt_at: row.next_attempt_at,
  broadcast_uuid: row.broadcast_uuid,
  created_at: row.created_at,
  updated_at: row.updated_at
})

/** A chat joined with its contact and its last message (`m_*`, null without one). */
interface ChatJoinRow {
  readonly id: number
  readonly uuid: string
  readonly status: string
  readonly assigned_to: string | null
  readonly favorite: number
  readonly unread_count: number
  readonly last_message_at: string
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
}

const SQL = {
  chats: `SELECT c.id, c.uuid, c.status, c.assigned_to, c.favorite, c.unread_count, c.last_message_at,
      c.last_inbound_at, c.last_inbound_channel_uuid, c.created_at, c.updated_at, ct.uuid AS contact_uuid, ct.first_name, ct.last_name, ct.phone,
      m.uuid AS m_uuid, m.direction AS m_direction, m.type AS m_type, m.text AS m_text,
      m.status AS m_status, m.created_at AS m_created_at
    FROM chats AS c
    JOIN contacts AS ct ON ct.uuid = c.contact_uuid
    LEFT JOIN messages AS m ON m.uuid = c.last_message_uuid
    WHERE c.id IN (SELECT value FROM json_each(?))`
} as const

/**
 * The chat records of the chats with these row ids, in the order given: three queries for
 * the whole page (chats with contact and last message, groups, labels), never one per chat.
 */
export const chatsByIds = (statements: Statements, ids: ReadonlyArray<number>): Array<Chat> => {
  if (ids.length === 0) return []
  const rows = statements.prepare<ChatJoinRow>(SQL.chats).all(JSON.stringify(ids))
  const { groups, labels } = groupsAndLabelsOf(statements, rows.map((row) => row.contact_uuid))
  const byId = new Map(rows.map((row) => [row.id, row]))
  return ids.flatMap((id) => {
    const row = byId.get(id)
    return row === undefined ? [] : [decodeChat(row, groups.get(row.contact_uuid) ?? [], labels.get(row.contact_uuid) ?? [])]
  })
}

const decodeChat = (row: ChatJoinRow, groups: Chat["groups"], labels: Chat["labels"]): Chat => ({
  uuid: row.uuid as ChatId,
  contact: { uuid: row.contact_uuid as ContactId, first_name: row.first_name, last_name: row.last_name, phone: row.phone },
  status: row.status as ChatStatus,
  assigned_to: row.assigned_to,
  groups,
  labels,
  favorite: row.favorite === 1,
  unread: row.unread_count > 0,
  unread_count: row.unread_count,
  last_message_at: row.last_message_at === "" ? null : row.last_message_at,
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

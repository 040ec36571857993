import type { Chat } from "@switchboard/core"
import { type ChatJoinRow, MESSAGE_COLUMNS, MESSAGE_VALUE_COUNT } from "@switchboard/storage-sql"
import { decoders } from "../dialect.js"
import type { Statements } from "../internal/sql.js"
import { groupsAndLabelsOf } from "./rows.js"

// The statements of chats and messages several repositories share, on SQLite; their rows,
// decoders and insert parameters are @switchboard/storage-sql's (dialect.ts `decoders`).

export { MESSAGE_COLUMNS, messageInChat, type MessageRow, messageValues } from "@switchboard/storage-sql"

/** A message record from its row. */
export const decodeMessage = decoders.message

/** `INSERT INTO messages` of {@link MESSAGE_COLUMNS} and `organization_id`: bind {@link messageValues}. */
export const INSERT_MESSAGE_SQL = `INSERT INTO messages (${MESSAGE_COLUMNS}, organization_id)
  VALUES (${Array.from({ length: MESSAGE_VALUE_COUNT }, () => "?").join(", ")})`

/**
 * Keyset pages of a chat's messages, newest first: `first` binds `(chat_uuid, limit)`,
 * `after` binds `(chat_uuid, created_at, uuid, limit)` of the last message of the previous
 * page. Each is one range of the index `messages_by_chat` (test/chats-query-plan.test.ts);
 * reaction rows are skipped (they show in their target's `reactions`).
 */
export const MESSAGE_PAGE_SQL = {
  first: `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE chat_uuid = ? AND type <> 'reaction' ORDER BY created_at DESC, uuid DESC LIMIT ?`,
  after: `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE chat_uuid = ? AND (created_at, uuid) < (?, ?) AND type <> 'reaction'
    ORDER BY created_at DESC, uuid DESC LIMIT ?`
} as const

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
    return row === undefined ? [] : [decoders.chat(row, groups.get(row.contact_uuid) ?? [], labels.get(row.contact_uuid) ?? [])]
  })
}

import {
  type ChatId,
  type ChatImportEntry,
  type ChatImportOutcome,
  type ChatImportRequest,
  chatSearchText,
  type ContactId,
  type NewMessage,
  type OrganizationId
} from "@switchboard/core"
import { newMessages } from "@switchboard/storage-sql"
import type { Statements } from "../internal/sql.js"
import { INSERT_MESSAGE_SQL, messageValues } from "./chatRows.js"

/**
 * The body of `chats.importChats` (the admin import and `seed`, docs/import.md); run it inside one
 * `BEGIN IMMEDIATE` transaction. Checks every contact first (`ContactsNotFound` before any
 * write), then writes entry by entry with cached prepared statements:
 * - a new chat is inserted with its final `last_message_at`, `last_message_uuid` and
 *   `search_text` already set, so the triggers of migration 4 write its `chat_links` rows
 *   and its FTS entry once (the trigger's `search_text` refresh finds the same text and
 *   changes nothing), then its messages, with no per-message lookup;
 * - an existing chat reads its messages' identities (direction, type, text, created_at)
 *   through the `messages_by_chat` index, appends the others and updates the chat once.
 * Throws the driver's error.
 */
export const importChats = (
  statements: Statements,
  organizationId: OrganizationId,
  request: ChatImportRequest
): ChatImportOutcome => {
  const contacts = new Map<string, ContactSearchRow>()
  const missing: Array<ContactId> = []
  const contactStatement = statements.prepare<ContactSearchRow>(SQL.contact)
  for (const entry of request.chats) {
    const row = contactStatement.get(organizationId, entry.contactId)
    if (row === undefined) missing.push(entry.contactId)
    else contacts.set(entry.contactId, row)
  }
  if (missing.length > 0) return { _tag: "ContactsNotFound", contactIds: missing }
  const chatStatement = statements.prepare<ExistingChatRow>(SQL.chatOfContact)
  const results = request.chats.map((entry) => {
    const existing = chatStatement.get(organizationId, entry.contactId)
    return existing === undefined
      ? insertChat(statements, organizationId, entry, contacts.get(entry.contactId)!)
      : updateChat(statements, organizationId, entry, existing, request.now)
  })
  return { _tag: "Imported", chats: results }
}

/** The contact columns of the search text. */
interface ContactSearchRow {
  readonly phone: string
  readonly first_name: string | null
  readonly last_name: string | null
  readonly email: string | null
}

/** The stored state of a chat that an import may change. */
interface ExistingChatRow {
  readonly id: number
  readonly uuid: string
  readonly status: string
  readonly assigned_to: string | null
  readonly favorite: number
  readonly unread_count: number
  readonly last_message_at: string
  readonly last_message_uuid: string | null
}

const SQL = {
  contact: "SELECT phone, first_name, last_name, email FROM contacts WHERE organization_id = ? AND uuid = ?",
  chatOfContact: `SELECT id, uuid, status, assigned_to, favorite, unread_count, last_message_at, last_message_uuid
    FROM chats WHERE organization_id = ? AND contact_uuid = ?`,
  insertChat: `INSERT INTO chats (uuid, organization_id, contact_uuid, status, assigned_to, favorite, unread_count,
      last_message_at, last_message_uuid, search_text, created_at, updated_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  messageKeys: "SELECT direction, type, text, created_at FROM messages WHERE chat_uuid = ?",
  updateChat: `UPDATE chats SET status = ?, assigned_to = ?, favorite = ?, unread_count = ?, last_message_at = ?,
      last_message_uuid = ?, updated_at = ? WHERE id = ?`
} as const

type ImportedChat = Extract<ChatImportOutcome, { _tag: "Imported" }>["chats"][number]

/** The identity of a message within its chat (the rule of `importChats`). */
const messageKey = (message: { direction: string; type: string; text: string | null; created_at: string }): string =>
  JSON.stringify([message.direction, message.type, message.text, message.created_at])


/** The newest of `messages` (the later one on a tie) after the current last one, if any. */
const newestOf = (messages: ReadonlyArray<NewMessage>, current: { at: string; uuid: string | null }) =>
  messages.reduce((last, message) => (message.created_at >= last.at ? { at: message.created_at, uuid: message.uuid } : last), current)

const insertChat = (
  statements: Statements,
  organizationId: OrganizationId,
  entry: ChatImportEntry,
  contact: ContactSearchRow
): ImportedChat => {
  const messages = newMessages(entry.messages, new Set(), messageKey)
  const last = newestOf(messages, { at: "", uuid: null })
  const { status = "open", assigned_to = null, favorite = false, unread_count = 0 } = entry.attributes
  const updatedAt = last.at > entry.created_at ? last.at : entry.created_at
  statements
    .prepare(SQL.insertChat)
    .run(
      entry.chatId,
      organizationId,
      entry.contactId,
      status,
      assigned_to,
      favorite ? 1 : 0,
      unread_count,
      last.at,
      last.uuid,
      chatSearchText(contact),
      entry.created_at,
      updatedAt
    )
  insertMessages(statements, organizationId, entry.chatId, entry.contactId, messages)
  return { uuid: entry.chatId, created: true, messagesAdded: messages.length }
}

const updateChat = (
  statements: Statements,
  organizationId: OrganizationId,
  entry: ChatImportEntry,
  existing: ExistingChatRow,
  now: string
): ImportedChat => {
  const known = new Set(statements.prepare<NewMessage>(SQL.messageKeys).all(existing.uuid).map(messageKey))
  const messages = newMessages(entry.messages, known, messageKey)
  const last = newestOf(messages, { at: existing.last_message_at, uuid: existing.last_message_uuid })
  const { attributes } = entry
  const next = {
    status: attributes.status ?? existing.status,
    assigned_to: attributes.assigned_to === undefined ? existing.assigned_to : attributes.assigned_to,
    favorite: attributes.favorite === undefined ? existing.favorite : attributes.favorite ? 1 : 0,
    unread_count: attributes.unread_count ?? existing.unread_count
  }
  const changed = messages.length > 0 || (Object.keys(next) as Array<keyof typeof next>).some((key) => next[key] !== existing[key])
  insertMessages(statements, organizationId, existing.uuid, entry.contactId, messages)
  if (changed) {
    statements
      .prepare(SQL.updateChat)
      .run(next.status, next.assigned_to, next.favorite, next.unread_count, last.at, last.uuid, now, existing.id)
  }
  return { uuid: existing.uuid as ChatId, created: false, messagesAdded: messages.length }
}

const insertMessages = (
  statements: Statements,
  organizationId: OrganizationId,
  chatId: string,
  contactId: string,
  messages: ReadonlyArray<NewMessage>
): void => {
  const insert = statements.prepare(INSERT_MESSAGE_SQL)
  for (const message of messages) insert.run(...messageValues(message, chatId, contactId, organizationId))
}

import type {
  ChatId,
  ChatImportEntry,
  ChatImportOutcome,
  ChatImportRequest,
  ContactId,
  NewMessage,
  OrganizationId
} from "@switchboard/core"
import { MESSAGE_VALUE_COUNT, newMessages } from "@switchboard/storage-sql"
import type { Sql } from "../internal/sql.js"
import { MESSAGE_COLUMNS, messageValues } from "./chatRows.js"

/**
 * The body of `chats.importChats` (the admin import and `seed`, docs/import.md); run it inside
 * one transaction holding the organization's lock. Checks every contact first
 * (`ContactsNotFound` before any write, one query), then writes:
 * - the new chats are inserted with their final `last_message_at` and `last_message_uuid`
 *   already set, {@link INSERT_BATCH} chats per multi-row `INSERT` (the statement-level
 *   trigger that writes their `chat_links` rows and the organization's count then runs once
 *   a statement, not once a chat), then all their messages, {@link INSERT_BATCH} per
 *   multi-row `INSERT`;
 * - an existing chat reads its messages' identities (direction, type, text, created_at)
 *   through the `messages_by_chat` index, appends the others and updates the chat once.
 * Rejects with the driver's error.
 */
export const importChats = async (
  sql: Sql,
  s: string,
  organizationId: OrganizationId,
  request: ChatImportRequest
): Promise<ChatImportOutcome> => {
  const SQL = sqlOf(s)
  const contactIds = request.chats.map((entry) => entry.contactId)
  const found = new Set(
    (await sql.rows<{ uuid: string }>(SQL.contacts, [organizationId, contactIds])).map((row) => row.uuid)
  )
  const missing: Array<ContactId> = contactIds.filter((id) => !found.has(id))
  if (missing.length > 0) return { _tag: "ContactsNotFound", contactIds: missing }
  const existing = new Map(
    (await sql.rows<ExistingChatRow>(SQL.chatsOfContacts, [organizationId, contactIds])).map((row) => [row.contact_uuid, row])
  )
  const created = await insertChats(
    sql,
    s,
    organizationId,
    request.chats.filter((entry) => !existing.has(entry.contactId))
  )
  const results: Array<ImportedChat> = []
  for (const entry of request.chats) {
    const chat = existing.get(entry.contactId)
    results.push(chat === undefined ? created.get(entry.contactId)! : await updateChat(sql, s, organizationId, entry, chat, request.now))
  }
  return { _tag: "Imported", chats: results }
}

/** The stored state of a chat that an import may change. */
interface ExistingChatRow {
  readonly id: number
  readonly uuid: string
  readonly contact_uuid: string
  readonly status: string
  readonly assigned_to: string | null
  readonly favorite: boolean
  readonly unread_count: number
  /** null without messages. */
  readonly last_message_at: string | null
  readonly last_message_uuid: string | null
}

const sqlOf = (s: string) =>
  ({
    contacts: `SELECT uuid FROM ${s}.contacts WHERE organization_id = $1 AND uuid = ANY($2::text[])`,
    chatsOfContacts: `SELECT id, uuid, contact_uuid, status, assigned_to, favorite, unread_count,
        NULLIF(last_message_at, '-infinity') AS last_message_at, last_message_uuid
      FROM ${s}.chats WHERE organization_id = $1 AND contact_uuid = ANY($2::text[])`,
    messageKeys: `SELECT direction, type, text, created_at FROM ${s}.messages WHERE chat_uuid = $1`,
    updateChat: `UPDATE ${s}.chats SET status = $1, assigned_to = $2, favorite = $3, unread_count = $4,
        last_message_at = COALESCE($5::timestamptz, '-infinity'), last_message_uuid = $6, updated_at = $7 WHERE id = $8`
  }) as const

type ImportedChat = Extract<ChatImportOutcome, { _tag: "Imported" }>["chats"][number]

/** The identity of a message within its chat (the rule of `importChats`); instants compared as instants. */
const messageKey = (message: { direction: string; type: string; text: string | null; created_at: string }): string =>
  JSON.stringify([message.direction, message.type, message.text, new Date(message.created_at).toISOString()])


/** The newest of `messages` (the later one on a tie) after the current last one, if any. */
const newestOf = (messages: ReadonlyArray<NewMessage>, current: { at: string | null; uuid: string | null }) =>
  messages.reduce(
    (last, message) =>
      last.at === null || message.created_at >= last.at ? { at: message.created_at as string | null, uuid: message.uuid as string | null } : last,
    current
  )

/**
 * Inserts the chats of `entries` (none of them has a chat yet) and their messages:
 * {@link INSERT_BATCH} chats per statement, then the messages of them all. Answers each
 * chat's outcome by its contact.
 */
const insertChats = async (
  sql: Sql,
  s: string,
  organizationId: OrganizationId,
  entries: ReadonlyArray<ChatImportEntry>
): Promise<Map<ContactId, ImportedChat>> => {
  const chats = entries.map((entry) => {
    const messages = newMessages(entry.messages, new Set(), messageKey)
    const last = newestOf(messages, { at: null, uuid: null })
    const { status = "open", assigned_to = null, favorite = false, unread_count = 0 } = entry.attributes
    const updatedAt = last.at !== null && last.at > entry.created_at ? last.at : entry.created_at
    const values = [entry.chatId, organizationId, entry.contactId, status, assigned_to, favorite, unread_count, last.at, last.uuid, entry.created_at, updatedAt]
    return { entry, messages, values }
  })
  await insertInBatches(
    sql,
    `INSERT INTO ${s}.chats (uuid, organization_id, contact_uuid, status, assigned_to, favorite, unread_count,
        last_message_at, last_message_uuid, created_at, updated_at) VALUES`,
    chats.map((chat) => chat.values),
    ($) => `(${$(1)}, ${$(2)}, ${$(3)}, ${$(4)}, ${$(5)}, ${$(6)}::boolean, ${$(7)}::integer,
        COALESCE(${$(8)}::timestamptz, '-infinity'), ${$(9)}, ${$(10)}::timestamptz, ${$(11)}::timestamptz)`
  )
  await insertMessages(
    sql,
    s,
    organizationId,
    chats.flatMap(({ entry, messages }) => messages.map((message) => ({ chatId: entry.chatId, contactId: entry.contactId, message })))
  )
  return new Map(
    chats.map(({ entry, messages }) => [entry.contactId, { uuid: entry.chatId, created: true, messagesAdded: messages.length }])
  )
}

const updateChat = async (
  sql: Sql,
  s: string,
  organizationId: OrganizationId,
  entry: ChatImportEntry,
  existing: ExistingChatRow,
  now: string
): Promise<ImportedChat> => {
  const SQL = sqlOf(s)
  const stored = await sql.rows<{ direction: string; type: string; text: string | null; created_at: string }>(SQL.messageKeys, [
    existing.uuid
  ])
  const messages = newMessages(entry.messages, new Set(stored.map(messageKey)), messageKey)
  const last = newestOf(messages, { at: existing.last_message_at, uuid: existing.last_message_uuid })
  const { attributes } = entry
  const next = {
    status: attributes.status ?? existing.status,
    assigned_to: attributes.assigned_to === undefined ? existing.assigned_to : attributes.assigned_to,
    favorite: attributes.favorite ?? existing.favorite,
    unread_count: attributes.unread_count ?? existing.unread_count
  }
  const changed = messages.length > 0 || (Object.keys(next) as Array<keyof typeof next>).some((key) => next[key] !== existing[key])
  await insertMessages(
    sql,
    s,
    organizationId,
    messages.map((message) => ({ chatId: existing.uuid, contactId: entry.contactId, message }))
  )
  if (changed) {
    await sql.run(SQL.updateChat, [next.status, next.assigned_to, next.favorite, next.unread_count, last.at, last.uuid, now, existing.id])
  }
  return { uuid: existing.uuid as ChatId, created: false, messagesAdded: messages.length }
}

/**
 * Rows per multi-row `INSERT`: a message has MESSAGE_VALUE_COUNT (20) parameters, 20 000 a
 * statement; a chat 11, 11 000 a statement; both under PostgreSQL's 65 535.
 */
const INSERT_BATCH = 1000

/**
 * Runs `head` (an `INSERT … VALUES`) over `rows` (each row's values, all rows alike),
 * {@link INSERT_BATCH} rows per statement, in their order: `tuple($)` writes one row's
 * tuple, `$(n)` naming its n-th value (from 1) as a parameter.
 */
const insertInBatches = async (
  sql: Sql,
  head: string,
  rows: ReadonlyArray<ReadonlyArray<unknown>>,
  tuple: ($: (n: number) => string) => string
): Promise<void> => {
  for (let start = 0; start < rows.length; start += INSERT_BATCH) {
    const batch = rows.slice(start, start + INSERT_BATCH)
    let offset = 0
    const tuples = batch.map((row) => {
      const first = offset
      offset += row.length
      return tuple((n) => `$${first + n}`)
    })
    await sql.run(`${head} ${tuples.join(", ")}`, batch.flat())
  }
}

/** Inserts `rows` (each message with its chat and contact), {@link INSERT_BATCH} per statement, in their order. */
const insertMessages = (
  sql: Sql,
  s: string,
  organizationId: OrganizationId,
  rows: ReadonlyArray<{ readonly chatId: string; readonly contactId: string; readonly message: NewMessage }>
): Promise<void> =>
  insertInBatches(
    sql,
    `INSERT INTO ${s}.messages (${MESSAGE_COLUMNS}, organization_id) VALUES`,
    rows.map(({ chatId, contactId, message }) => messageValues(message, chatId, contactId, organizationId)),
    ($) => `(${Array.from({ length: MESSAGE_VALUE_COUNT }, (_, n) => $(n + 1)).join(", ")})`
  )

import { Option } from "effect"
import {
  type ChatAppendOutcome,
  type ChatAppendRequest,
  type ChatEnsureOutcome,
  type ChatFilters,
  type ChatRepository,
  type ChatStatus,
  chatSearchMatches,
  type ChatUpdateOutcome,
  type InboundReaction,
  listedMessageType,
  type Message,
  type MessageReactionParty,
  type MessageStatusOutcome,
  type OrganizationId,
  endOfTurnQueue,
  withReaction
} from "@switchboard/core"
import { attempt, type RepositoryFactory, snapshot, type Statements, transaction, transactionPerGroup } from "../internal/sql.js"
import {
  chatsByIds,
  decodeMessage,
  INSERT_MESSAGE_SQL,
  MESSAGE_COLUMNS,
  MESSAGE_PAGE_SQL,
  messageInChat,
  type MessageRow,
  messageValues
} from "./chatRows.js"
import { SEARCH_FUNCTION } from "../dialect.js"
import { planChatCount, planChatList, runChatList } from "./chatList.js"
import { importChats } from "./chatsImport.js"
import { applyPending, applyStatus } from "./messageStatus.js"
import { insertInboundMedia } from "./media.js"
import { insertOutboxMessage } from "./outboxInsert.js"
import { countOf, pageBounds } from "./rows.js"
import { type StatusReport, STATUS_REPORT_SQL, writeStatusReport } from "./providerStatus.js"
import { recordWebhookEvent } from "./webhookEvents.js"

/**
 * `Storage.chats` on SQLite: tables `chats`, `messages` and the FTS5 index `chat_search`
 * (migration 4, `schema/chats.ts`), and the provider's status reports waiting for their
 * message in `pending_message_statuses` (migration 10), and the customer service windows
 * in `customer_service_windows` (migration 16). `appendMessage` (a message whose uuid is
 * stored already answered as `Duplicate` first; contact, chat, message,
 * the chat's counters and, with `inboundAt`, the window; with `outbox`, the message placed in the send queue and
 * possibly claimed, `outboxInsert.ts`; with `media`, the media record and its fetch job,
 * `media.ts`), `update`, `updateMessageStatus` (with the pending
 * reports of the provider id it records) and `updateMessageStatusByProviderId` (the
 * message's status, or a pending report; both end the send queue's dispatch state of a
 * message leaving `queued`/`sending`, `messageStatus.ts`) are each one `BEGIN IMMEDIATE` transaction, so
 * core's rules apply atomically across processes; reads of several statements share one
 * snapshot. Their webhook events (`message.received`, `message.status_updated`,
 * `chat.updated`) are written to the outbox inside those transactions (`webhookEvents.ts`). The
 * list's query plans are in `chatList.ts`. A broadcast's recipients are appended by the
 * same writes (`writeAppendedMessage`, used by broadcastWrite.ts). Registers
 * the SQL function `switchboard_chat_search` (core's `chatSearchMatches`) on the connection.
 *
 * @category repositories
 */
export const chatRepository: RepositoryFactory<ChatRepository> = (db, statements) => {
  db.function(SEARCH_FUNCTION, { deterministic: true }, (text, term) =>
    chatSearchMatches(String(text), String(term)) ? 1 : 0
  )
  // The status reports of one event-loop turn share one write transaction (one lock, one
  // commit; docs/storage.md "What each guarantees"); each is answered after that commit.
  const statusReportAtEndOfTurn = endOfTurnQueue(
    transactionPerGroup(db, "chats.updateMessageStatusByProviderId", (report: StatusReport) => writeStatusReport(statements, report))
  )
  return {
    appendMessage: (organizationId, request) =>
      attempt("chats.appendMessage", () => transaction(db, () => appendMessage(statements, organizationId, request))),
    ensure: (organizationId, contactId, newChat, now) =>
      attempt("chats.ensure", () =>
        transaction(db, (): ChatEnsureOutcome => {
          if (statements.prepare(SQL.contactById).get(organizationId, contactId) === undefined) {
            return { _tag: "ContactNotFound" }
          }
          const { id, created } = chatOfContact(statements, organizationId, contactId, newChat, now)
          return { _tag: "Ensured", chat: chatsByIds(statements, [id])[0]!, created }
        })
      ),
    update: (organizationId, id, patch, now) =>
      attempt("chats.update", () =>
        transaction(db, (): ChatUpdateOutcome => {
          const row = statements.prepare<ChatStateRow>(SQL.state).get(organizationId, id)
          if (row === undefined) return { _tag: "NotFound" }
          const next = {
            status: patch.status ?? row.status,
            assigned_to: patch.assigned_to === undefined ? row.assigned_to : patch.assigned_to,
            favorite: patch.favorite === undefined ? row.favorite : patch.favorite ? 1 : 0,
            unread_count: patch.unread_count ?? row.unread_count
          }
          const changed = (Object.keys(next) as Array<keyof typeof next>).some((key) => next[key] !== row[key])
          if (!changed) return { _tag: "Updated", chat: chatsByIds(statements, [row.id])[0]!, changed }
          statements.prepare(SQL.update).run(next.status, next.assigned_to, next.favorite, next.unread_count, now, row.id)
          const chat = chatsByIds(statements, [row.id])[0]!
          recordWebhookEvent(statements, organizationId, "chat.updated", now, () => chat)
          return { _tag: "Updated", chat, changed }
        })
      ),
    findById: (organizationId, id) =>
      attempt("chats.findById", () => snapshot(db, () => chatWhere(statements, SQL.idByUuid, organizationId, id))),
    findByContact: (organizationId, contactId) =>
      attempt("chats.findByContact", () => snapshot(db, () => chatWhere(statements, SQL.idByContact, organizationId, contactId))),
    listAfter: (organizationId, filters, sort, after, limit) =>
      attempt("chats.listAfter", () =>
        snapshot(db, () => {
          const plan = planChatList(organizationId, filters, sort, { after, offset: 0, limit })
          return chatsByIds(statements, runChatList(statements, plan))
        })
      ),
    listPage: (organizationId, filters, sort, page) =>
      attempt("chats.listPage", () =>
        snapshot(db, () => {
          const [limit, offset] = pageBounds(page)
          const plan = planChatList(organizationId, filters, sort, { after: null, offset, limit })
          // Unfiltered, the total is the organization's counter (migration 12), not a COUNT(*).
          const count = hasFilters(filters) ? planChatCount(organizationId, filters) : { sql: SQL.chatsCount, params: [organizationId] }
          return {
            items: chatsByIds(statements, runChatList(statements, plan)),
            total: countOf(statements, count.sql, ...count.params)
          }
        })
      ),
    findMessage: (organizationId, id) =>
      attempt("chats.findMessage", () =>
        Option.map(Option.fromNullable(statements.prepare<MessageRow>(SQL.message).get(organizationId, id)), decodeMessage)
      ),
    listMessages: (organizationId, chatId, page) =>
      attempt("chats.listMessages", () =>
        snapshot(db, () => {
          if (statements.prepare(SQL.idByUuid).get(organizationId, chatId) === undefined) return Option.none()
          const rows = statements.prepare<MessageRow>(SQL.messagesPage).all(chatId, ...pageBounds(page))
          return Option.some({ items: rows.map(decodeMessage), total: countOf(statements, SQL.messagesCount, chatId) })
        })
      ),
    listMessagesAfter: (organizationId, chatId, after, limit) =>
      attempt("chats.listMessagesAfter", () =>
        snapshot(db, () => {
          if (statements.prepare(SQL.idByUuid).get(organizationId, chatId) === undefined) return Option.none()
          const rows =
            after === null
              ? statements.prepare<MessageRow>(MESSAGE_PAGE_SQL.first).all(chatId, limit)
              : statements.prepare<MessageRow>(MESSAGE_PAGE_SQL.after).all(chatId, after.created_at, after.uuid, limit)
          return Option.some(rows.map(decodeMessage))
        })
      ),
    importChats: (organizationId, request) =>
      attempt("chats.importChats", () => transaction(db, () => importChats(statements, organizationId, request))),
    updateMessageStatus: (organizationId, id, update) =>
      attempt("chats.updateMessageStatus", () =>
        transaction(db, (): MessageStatusOutcome => {
          const row = statements.prepare<MessageRow>(SQL.message).get(organizationId, id)
          if (row === undefined) return { _tag: "NotFound" }
          const written = applyStatus(statements, row, update)
          const providerId = update.provider_message_id
          const final =
            providerId === undefined || row.direction !== "outbound"
              ? written
              : applyPending(statements, organizationId, written.row, providerId, update.now)
          const message = decodeMessage(final.row)
          if (final.row.status !== row.status && listedMessageType(message.type)) {
            recordWebhookEvent(statements, organizationId, "message.status_updated", update.now, () => message)
          }
          return { _tag: "Updated", message, changed: written.changed || final.changed }
        })
      ),
    updateMessageStatusByProviderId: (organizationId, providerMessageId, update) =>
      statusReportAtEndOfTurn({ organizationId, providerMessageId, update }),
    lastInboundChannel: (organizationId, contactId) =>
      attempt("chats.lastInboundChannel", () =>
        Option.fromNullable(
          statements.prepare<{ channel_uuid: string }>(SQL.lastInboundChannel).get(organizationId, contactId)?.channel_uuid
        )
      ),
    latestInboundMessage: (organizationId, chatId) =>
      attempt("chats.latestInboundMessage", () =>
        Option.map(Option.fromNullable(statements.prepare<MessageRow>(SQL.latestInboundMessage).get(chatId, organizationId)), decodeMessage)
      ),
    lastInboundAt: (organizationId, contactId, channelId) =>
      attempt("chats.lastInboundAt", () =>
        Option.fromNullable(
          statements.prepare<{ last_inbound_at: string }>(SQL.lastInboundAt).get(organizationId, contactId, channelId)?.last_inbound_at
        )
      )
  }
}

/** The columns of a chat that `update` compares. */
interface ChatStateRow {
  readonly id: number
  readonly status: ChatStatus
  readonly assigned_to: string | null
  readonly favorite: number
  readonly unread_count: number
}

/** The statements of this repository (exported for the query-plan test). */
export const SQL = {
  ...STATUS_REPORT_SQL,
  state: "SELECT id, status, assigned_to, favorite, unread_count FROM chats WHERE organization_id = ? AND uuid = ?",
  update: "UPDATE chats SET status = ?, assigned_to = ?, favorite = ?, unread_count = ?, updated_at = ? WHERE id = ?",
  idByUuid: "SELECT id FROM chats WHERE organization_id = ? AND uuid = ?",
  idByContact: "SELECT id FROM chats WHERE organization_id = ? AND contact_uuid = ?",
  duplicate: `SELECT ${MESSAGE_COLUMNS} FROM messages
    WHERE organization_id = ? AND direction = ? AND provider_message_id = ? LIMIT 1`,
  contactByPhone: "SELECT uuid FROM contacts WHERE organization_id = ? AND phone = ?",
  contactById: "SELECT uuid FROM contacts WHERE organization_id = ? AND uuid = ?",
  insertContact: `INSERT INTO contacts (uuid, organization_id, phone, phone_valid, first_name, last_name, created_at, updated_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  chatOfContact: "SELECT id, uuid, status FROM chats WHERE organization_id = ? AND contact_uuid = ?",
  // search_text is filled from the contact by the trigger chats_after_insert.
  insertChat: "INSERT INTO chats (uuid, organization_id, contact_uuid, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
  // Every SET expression reads the row as it was: the message becomes the last one unless
  // the chat has a newer one ('' = none, below every timestamp). A reaction row binds NULL
  // for its instant and for now: it moves neither the last message nor updated_at.
  touchChat: `UPDATE chats SET
      unread_count = unread_count + ?,
      status = CASE WHEN status IN (SELECT value FROM json_each(?)) THEN ? ELSE status END,
      last_message_uuid = CASE WHEN ? >= last_message_at THEN ? ELSE last_message_uuid END,
      last_message_at = CASE WHEN ? >= last_message_at THEN ? ELSE last_message_at END,
      updated_at = COALESCE(?, updated_at)
    WHERE id = ?`,
  message: `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE organization_id = ? AND uuid = ?`,
  // One entry of messages_by_provider_id (organization_id, direction, provider_message_id).
  messagesPage: `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE chat_uuid = ? AND type <> 'reaction'
    ORDER BY created_at DESC, uuid DESC LIMIT ? OFFSET ?`,
  messagesCount: "SELECT COUNT(*) AS count FROM messages WHERE chat_uuid = ? AND type <> 'reaction'",
  // The organization's message with a provider id: outbound first, then inbound (two
  // probes of messages_by_provider_id).
  byProviderId: `SELECT ${MESSAGE_COLUMNS} FROM messages
    WHERE organization_id = ? AND direction = ? AND provider_message_id = ? LIMIT 1`,
  writeReactions: "UPDATE messages SET reactions = ?, updated_at = ? WHERE uuid = ?",
  chatsCount: "SELECT COALESCE((SELECT count FROM chat_counts WHERE organization_id = ?), 0) AS count",
  // The newest inbound message with a channel in the contact's chat: one range of
  // messages_by_chat, newest first, read until the first match.
  lastInboundChannel: `SELECT channel_uuid FROM messages
    WHERE chat_uuid = (SELECT uuid FROM chats WHERE organization_id = ? AND contact_uuid = ?)
      AND direction = 'inbound' AND channel_uuid IS NOT NULL
    ORDER BY created_at DESC, uuid DESC LIMIT 1`,
  // The newest inbound message of a chat but reactions (a read receipt's): one range of
  // messages_by_chat, newest first, read until the first match.
  latestInboundMessage: `SELECT ${MESSAGE_COLUMNS} FROM messages
    WHERE chat_uuid = ? AND organization_id = ? AND direction = 'inbound' AND type <> 'reaction'
    ORDER BY created_at DESC, uuid DESC LIMIT 1`,
  // The customer service window (migration 16): the contact's instant on the channel moves
  // forward only; the chat row follows the latest instant over every channel.
  upsertWindow: `INSERT INTO customer_service_windows (contact_uuid, channel_uuid, last_inbound_at) VALUES (?, ?, ?)
    ON CONFLICT (contact_uuid, channel_uuid) DO UPDATE SET last_inbound_at = MAX(last_inbound_at, excluded.last_inbound_at)`,
  touchChatWindow: `UPDATE chats SET
      last_inbound_channel_uuid = CASE WHEN last_inbound_at IS NULL OR ? >= last_inbound_at THEN ? ELSE last_inbound_channel_uuid END,
      last_inbound_at = CASE WHEN last_inbound_at IS NULL OR ? >= last_inbound_at THEN ? ELSE last_inbound_at END
    WHERE id = ?`,
  lastInboundAt: `SELECT w.last_inbound_at FROM customer_service_windows AS w
    JOIN contacts AS ct ON ct.uuid = w.contact_uuid
    WHERE ct.organization_id = ? AND w.contact_uuid = ? AND w.channel_uuid = ?`
} as const

/** The chat whose id `sql` selects with `(organizationId, key)`. */
const chatWhere = (statements: Statements, sql: string, organizationId: OrganizationId, key: string) => {
  const row = statements.prepare<{ id: number }>(sql).get(organizationId, key)
  return Option.fromNullable(row === undefined ? undefined : chatsByIds(statements, [row.id])[0])
}

/** The body of `appendMessage`, inside its transaction: checks (a message with that uuid, a redelivery under `dedupe`), then writes. */
const appendMessage = (
  statements: Statements,
  organizationId: OrganizationId,
  request: ChatAppendRequest
): ChatAppendOutcome => {
  const { message, now } = request
  // A held uuid (an Idempotency-Key's) the other writer stored first: one probe of the primary key.
  const held = statements.prepare<MessageRow>(SQL.message).get(organizationId, message.uuid)
  const found =
    held ??
    (request.dedupe && message.provider_message_id !== null
      ? statements.prepare<MessageRow>(SQL.duplicate).get(organizationId, message.direction, message.provider_message_id)
      : undefined)
  if (found !== undefined) {
    const chat = chatWhere(statements, SQL.idByUuid, organizationId, found.chat_uuid)
    if (Option.isSome(chat)) return { _tag: "Duplicate", chat: chat.value, message: decodeMessage(found) }
  }
  const replyTo =
    request.replyTo === undefined ? message.reply_to : (byProviderId(statements, organizationId, request.replyTo)?.uuid ?? null)
  const written = writeAppendedMessage(statements, organizationId, { ...request, message: { ...message, reply_to: replyTo } })
  if (written === undefined) return { _tag: "ContactNotFound" }
  const { chat, contact, message: stored } = written
  const record = chatsByIds(statements, [chat.id])[0]!
  if (request.reaction !== undefined) {
    foldReaction(statements, organizationId, "contact", request.reaction, now)
  } else if (message.direction === "inbound") {
    recordWebhookEvent(statements, organizationId, "message.received", now, () => stored)
  }
  if (message.direction === "inbound") {
    if (!chat.created && record.status !== chat.status) recordWebhookEvent(statements, organizationId, "chat.updated", now, () => record)
  }
  return { _tag: "Appended", chat: record, message: stored, contactCreated: contact.created, chatCreated: chat.created }
}

/** The organization's message row with this provider id: outbound first, then inbound. */
const byProviderId = (statements: Statements, organizationId: OrganizationId, providerId: string): MessageRow | undefined =>
  statements.prepare<MessageRow>(SQL.byProviderId).get(organizationId, "outbound", providerId) ??
  statements.prepare<MessageRow>(SQL.byProviderId).get(organizationId, "inbound", providerId)

/**
 * Folds a reaction of `party` into its target (the message with `reaction.message_id` as
 * provider id), inside the caller's transaction: its `reactions` (core's `withReaction`)
 * and `updated_at`, with `message.reactions_updated`, when they changed. No such message:
 * nothing.
 */
export const foldReaction = (
  statements: Statements,
  organizationId: OrganizationId,
  party: MessageReactionParty,
  reaction: InboundReaction,
  now: string
): void => {
  const row = byProviderId(statements, organizationId, reaction.message_id)
  if (row === undefined) return
  const target = decodeMessage(row)
  const reactions = withReaction(target.reactions, party, reaction.emoji, reaction.at)
  if (reactions === target.reactions) return
  statements.prepare(SQL.writeReactions).run(JSON.stringify(reactions), now, target.uuid)
  const written: Message = { ...target, reactions, updated_at: now }
  recordWebhookEvent(statements, organizationId, "message.reactions_updated", now, () => written)
}

/**
 * What {@link writeAppendedMessage} wrote: the chat (row id, uuid, its status before this
 * write, whether it was created), the contact (uuid, whether it was created) and the
 * message as stored.
 */
export interface AppendedMessage {
  readonly chat: { readonly id: number; readonly uuid: string; readonly status: ChatStatus; readonly created: boolean }
  readonly contact: { readonly uuid: string; readonly created: boolean }
  readonly message: Message
}

/**
 * The writes of `chats.appendMessage` after its duplicate check, inside the caller's
 * `BEGIN IMMEDIATE` transaction: resolves the contact (`undefined`, nothing written, when
 * there is no such contact), takes its chat (inserted as `request.newChat` when missing),
 * inserts the message (through the send queue with `request.outbox`,
 * {@link insertOutboxMessage}) and with `request.media` its media record and fetch job,
 * moves the chat's unread count, status, last message and `updated_at`, and with
 * `request.inboundAt` the customer service window. Writes no
 * webhook event and builds no chat record: the caller does what it needs of those
 * (`appendMessage` here, a broadcast's recipients in broadcastWrite.ts).
 */
export const writeAppendedMessage = (
  statements: Statements,
  organizationId: OrganizationId,
  request: ChatAppendRequest
): AppendedMessage | undefined => {
  const { message, now } = request
  const contact = resolveContact(statements, organizationId, request)
  if (contact === undefined) return undefined
  const chat = chatOfContact(statements, organizationId, contact.uuid, request.newChat, now)
  const given = messageInChat(message, chat.uuid, contact.uuid)
  const stored =
    request.outbox === undefined
      ? given
      : insertOutboxMessage(statements, organizationId, given, request.outbox, now)
  if (request.outbox === undefined) {
    statements.prepare(INSERT_MESSAGE_SQL).run(...messageValues(stored, stored.chat_uuid, stored.contact_uuid, organizationId))
  }
  if (request.media !== undefined) insertInboundMedia(statements, organizationId, request.media, stored.uuid, contact.uuid)
  // A reaction row is no message of its own: NULL moves neither the last message nor updated_at.
  const listed = listedMessageType(message.type)
  const at = listed ? message.created_at : null
  statements
    .prepare(SQL.touchChat)
    .run(
      request.unreadIncrement,
      JSON.stringify(request.reopen.from),
      request.reopen.to,
      at,
      message.uuid,
      at,
      at,
      listed ? now : null,
      chat.id
    )
  if (request.inboundAt !== undefined && message.direction === "inbound" && message.channel_uuid !== null) {
    statements.prepare(SQL.upsertWindow).run(contact.uuid, message.channel_uuid, request.inboundAt)
    statements
      .prepare(SQL.touchChatWindow)
      .run(request.inboundAt, message.channel_uuid, request.inboundAt, request.inboundAt, chat.id)
  }
  return { chat, contact, message: stored }
}

/** The chat of a contact of the organization (its status before this write), inserted as `newChat` when missing. */
const chatOfContact = (
  statements: Statements,
  organizationId: OrganizationId,
  contactId: string,
  newChat: { readonly uuid: string; readonly status: ChatStatus },
  now: string
): { readonly id: number; readonly uuid: string; readonly status: ChatStatus; readonly created: boolean } => {
  const found = statements.prepare<{ id: number; uuid: string; status: ChatStatus }>(SQL.chatOfContact).get(organizationId, contactId)
  if (found !== undefined) return { ...found, created: false }
  const { lastInsertRowid } = statements
    .prepare(SQL.insertChat)
    .run(newChat.uuid, organizationId, contactId, newChat.status, now, now)
  return { id: Number(lastInsertRowid), uuid: newChat.uuid, status: newChat.status, created: true }
}

/** The contact of a request: found by uuid or phone, or created by phone (never refused). */
const resolveContact = (statements: Statements, organizationId: OrganizationId, request: ChatAppendRequest) => {
  const reference = request.contact
  if (reference._tag === "ById") {
    const row = statements.prepare<{ uuid: string }>(SQL.contactById).get(organizationId, reference.uuid)
    return row === undefined ? undefined : { uuid: row.uuid, created: false }
  }
  const row = statements.prepare<{ uuid: string }>(SQL.contactByPhone).get(organizationId, reference.phone)
  if (row !== undefined) return { uuid: row.uuid, created: false }
  const { uuid, first_name, last_name, phone_valid } = reference.create
  statements
    .prepare(SQL.insertContact)
    .run(uuid, organizationId, reference.phone, phone_valid === false ? 0 : 1, first_name, last_name, request.now, request.now)
  return { uuid: uuid as string, created: true }
}

/** Whether any filter of the chat list is set (`undefined` fields are unset). */
const hasFilters = (filters: ChatFilters): boolean => Object.values(filters).some((value) => value !== undefined)

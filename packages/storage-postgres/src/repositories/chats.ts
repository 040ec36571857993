import { Option } from "effect"
import type {
  ChatAppendOutcome,
  ChatAppendRequest,
  ChatEnsureOutcome,
  ChatFilters,
  ChatRepository,
  ChatStatus,
  ChatUpdateOutcome,
  Message,
  MessageStatusOutcome,
  OrganizationId
} from "@switchboard/core"
import { attempt, pageBounds, type RepositoryFactory, type Sql } from "../internal/sql.js"
import { insertOutboxMessage, recordWebhookEvent } from "./chat-hooks.js"
import { planChatCount, planChatList, runChatList } from "./chat-list.js"
import {
  chatsByIds,
  chatWithSubscribers,
  decodeMessage,
  insertMessageSql,
  MESSAGE_COLUMNS,
  messagePageSql,
  type MessageRow,
  messageValues
} from "./chat-rows.js"
import { importChats } from "./chats-import.js"
import { insertWebhookEvents } from "./webhook-events.js"
import { applyPending, applyStatus } from "./message-status.js"
import { updateStatusByProviderId } from "./provider-status.js"

/**
 * `Storage.chats` on PostgreSQL: tables `chats` (with the `pg_trgm` index of its search
 * text), `chat_links`, `chat_counts` and `messages`, the provider's status reports waiting
 * for their message in `pending_message_statuses`, and the customer service windows in
 * `customer_service_windows` (schema/chats.ts). `appendMessage` (contact, chat, message,
 * the chat's counters and, with `inboundAt`, the window; with `outbox`, the message placed
 * in the send queue and possibly claimed), `ensure`, `update`, `importChats`,
 * `updateMessageStatus` (with the pending reports of the provider id it records; it ends
 * the send queue's dispatch state of a message leaving `queued`/`sending`,
 * `message-status.ts`) are each one transaction that first locks the organization's row,
 * so core's check-then-write rules apply atomically across processes; reads of several
 * statements share one snapshot. `updateMessageStatusByProviderId` locks only the
 * message's row when the message exists, the organization's row otherwise
 * (`provider-status.ts`). Their webhook events (`message.received`,
 * `message.status_updated`, `chat.updated`) are written inside those transactions. The
 * list's query plans are in `chat-list.ts`. A broadcast's recipients are appended with the
 * same effect, a batch at a time (broadcast-write.ts).
 *
 * @category repositories
 */
export const chatRepository: RepositoryFactory<ChatRepository> = (db) => {
  const s = db.schema
  const SQL = sqlOf(s)
  const locked = <A>(organizationId: OrganizationId, fn: (sql: Sql) => Promise<A>) =>
    db.transaction(fn, { lockOrganization: organizationId })
  return {
    appendMessage: (organizationId, request) =>
      attempt("chats.appendMessage", () => locked(organizationId, (sql) => appendMessage(sql, s, organizationId, request))),
    ensure: (organizationId, contactId, newChat, now) =>
      attempt("chats.ensure", () =>
        locked(organizationId, async (sql): Promise<ChatEnsureOutcome> => {
          if ((await sql.row(SQL.contactById, [organizationId, contactId])) === undefined) return { _tag: "ContactNotFound" }
          const { id, created } = await chatOfContact(sql, s, organizationId, contactId, newChat, now)
          return { _tag: "Ensured", chat: (await chatsByIds(sql, s, [id]))[0]!, created }
        })
      ),
    update: (organizationId, id, patch, now) =>
      attempt("chats.update", () =>
        locked(organizationId, async (sql): Promise<ChatUpdateOutcome> => {
          const row = await sql.row<ChatStateRow>(SQL.state, [organizationId, id])
          if (row === undefined) return { _tag: "NotFound" }
          const next = {
            status: patch.status ?? row.status,
            assigned_to: patch.assigned_to === undefined ? row.assigned_to : patch.assigned_to,
            favorite: patch.favorite ?? row.favorite,
            unread_count: patch.unread_count ?? row.unread_count
          }
          const changed = (Object.keys(next) as Array<keyof typeof next>).some((key) => next[key] !== row[key])
          if (!changed) return { _tag: "Updated", chat: (await chatsByIds(sql, s, [row.id]))[0]!, changed }
          await sql.run(SQL.update, [next.status, next.assigned_to, next.favorite, next.unread_count, now, row.id])
          const chat = (await chatsByIds(sql, s, [row.id]))[0]!
          await recordWebhookEvent(sql, s, organizationId, "chat.updated", now, () => chat)
          return { _tag: "Updated", chat, changed }
        })
      ),
    findById: (organizationId, id) =>
      attempt("chats.findById", () => db.snapshot((sql) => chatWhere(sql, s, SQL.idByUuid, organizationId, id))),
    findByContact: (organizationId, contactId) =>
      attempt("chats.findByContact", () => db.snapshot((sql) => chatWhere(sql, s, SQL.idByContact, organizationId, contactId))),
    listAfter: (organizationId, filters, sort, after, limit) =>
      attempt("chats.listAfter", () =>
        db.snapshot(async (sql) => {
          const plan = planChatList(s, organizationId, filters, sort, { after, offset: 0, limit })
          return chatsByIds(sql, s, await runChatList(sql, plan))
        })
      ),
    listPage: (organizationId, filters, sort, page) =>
      attempt("chats.listPage", () =>
        db.snapshot(async (sql) => {
          const [limit, offset] = pageBounds(page)
          const plan = planChatList(s, organizationId, filters, sort, { after: null, offset, limit })
          // Unfiltered, the total is the organization's counter, not a COUNT(*).
          const count = hasFilters(filters)
            ? planChatCount(s, organizationId, filters)
            : { sql: SQL.chatsCount, params: [organizationId] }
          const items = await chatsByIds(sql, s, await runChatList(sql, plan))
          return { items, total: (await sql.row<{ count: number }>(count.sql, count.params))?.count ?? 0 }
        })
      ),
    findMessage: (organizationId, id) =>
      attempt("chats.findMessage", async () =>
        Option.map(Option.fromNullable(await db.sql.row<MessageRow>(SQL.message, [organizationId, id])), decodeMessage)
      ),
    listMessages: (organizationId, chatId, page) =>
      attempt("chats.listMessages", () =>
        db.snapshot(async (sql) => {
          if ((await sql.row(SQL.idByUuid, [organizationId, chatId])) === undefined) return Option.none()
          const rows = await sql.rows<MessageRow>(SQL.messagesPage, [chatId, ...pageBounds(page)])
          const total = (await sql.row<{ count: number }>(SQL.messagesCount, [chatId]))?.count ?? 0
          return Option.some({ items: rows.map(decodeMessage), total })
        })
      ),
    listMessagesAfter: (organizationId, chatId, after, limit) =>
      attempt("chats.listMessagesAfter", () =>
        db.snapshot(async (sql) => {
          if ((await sql.row(SQL.idByUuid, [organizationId, chatId])) === undefined) return Option.none()
          const pages = messagePageSql(s)
          const rows =
            after === null
              ? await sql.rows<MessageRow>(pages.first, [chatId, limit])
              : await sql.rows<MessageRow>(pages.after, [chatId, after.created_at, after.uuid, limit])
          return Option.some(rows.map(decodeMessage))
        })
      ),
    importChats: (organizationId, request) =>
      attempt("chats.importChats", () => locked(organizationId, (sql) => importChats(sql, s, organizationId, request))),
    updateMessageStatus: (organizationId, id, update) =>
      attempt("chats.updateMessageStatus", () =>
        locked(organizationId, async (sql): Promise<MessageStatusOutcome> => {
          const row = await sql.row<MessageRow>(SQL.messageForUpdate, [organizationId, id])
          if (row === undefined) return { _tag: "NotFound" }
          const written = await applyStatus(sql, s, row, update)
          const providerId = update.provider_message_id
          const final =
            providerId === undefined || row.direction !== "outbound"
              ? written
              : await applyPending(sql, s, organizationId, written.row, providerId, update.now)
          const message = decodeMessage(final.row)
          if (final.row.status !== row.status) {
            await recordWebhookEvent(sql, s, organizationId, "message.status_updated", update.now, () => message)
          }
          return { _tag: "Updated", message, changed: written.changed || final.changed }
        })
      ),
    updateMessageStatusByProviderId: (organizationId, providerMessageId, update) =>
      attempt("chats.updateMessageStatusByProviderId", () =>
        updateStatusByProviderId(db, organizationId, providerMessageId, update)
      ),
    lastInboundChannel: (organizationId, contactId) =>
      attempt("chats.lastInboundChannel", async () =>
        Option.fromNullable(
          (await db.sql.row<{ channel_uuid: string }>(SQL.lastInboundChannel, [organizationId, contactId]))?.channel_uuid
        )
      ),
    lastInboundAt: (organizationId, contactId, channelId) =>
      attempt("chats.lastInboundAt", async () =>
        Option.fromNullable(
          (await db.sql.row<{ last_inbound_at: string }>(SQL.lastInboundAt, [organizationId, contactId, channelId]))
            ?.last_inbound_at
        )
      )
  }
}

/** The columns of a chat that `update` compares. */
interface ChatStateRow {
  readonly id: number
  readonly status: ChatStatus
  readonly assigned_to: string | null
  readonly favorite: boolean
  readonly unread_count: number
}

/** The statements of this repository, for schema `s`. */
const sqlOf = (s: string) =>
  ({
    state: `SELECT id, status, assigned_to, favorite, unread_count FROM ${s}.chats WHERE organization_id = $1 AND uuid = $2`,
    update: `UPDATE ${s}.chats SET status = $1, assigned_to = $2, favorite = $3, unread_count = $4, updated_at = $5 WHERE id = $6`,
    idByUuid: `SELECT id FROM ${s}.chats WHERE organization_id = $1 AND uuid = $2`,
    idByContact: `SELECT id FROM ${s}.chats WHERE organization_id = $1 AND contact_uuid = $2`,
    duplicate: `SELECT ${MESSAGE_COLUMNS} FROM ${s}.messages
      WHERE organization_id = $1 AND direction = $2 AND provider_message_id = $3 LIMIT 1`,
    // The contact with that phone and its chat (NULLs without one): two index probes.
    contactAndChatByPhone: `SELECT ct.uuid, c.id AS chat_id, c.uuid AS chat_uuid, c.status AS chat_status
      FROM ${s}.contacts AS ct LEFT JOIN ${s}.chats AS c ON c.organization_id = ct.organization_id AND c.contact_uuid = ct.uuid
      WHERE ct.organization_id = $1 AND ct.phone = $2`,
    contactById: `SELECT uuid FROM ${s}.contacts WHERE organization_id = $1 AND uuid = $2`,
    insertContact: `INSERT INTO ${s}.contacts (uuid, organization_id, phone, phone_valid, first_name, last_name, created_at, updated_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    chatOfContact: `SELECT id, uuid, status FROM ${s}.chats WHERE organization_id = $1 AND contact_uuid = $2`,
    // search_text is filled from the contact by the trigger chats_before_insert.
    insertChat: `INSERT INTO ${s}.chats (uuid, organization_id, contact_uuid, status, created_at, updated_at)
      VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
    // Every SET expression reads the row as it was: the message becomes the last one unless
    // the chat has a newer one (-infinity = none, below every instant).
    touchChat: `UPDATE ${s}.chats SET
        unread_count = unread_count + $1,
        status = CASE WHEN status = ANY($2::text[]) THEN $3 ELSE status END,
        last_message_uuid = CASE WHEN $4::timestamptz >= last_message_at THEN $5 ELSE last_message_uuid END,
        last_message_at = GREATEST(last_message_at, $4::timestamptz),
        updated_at = $6
      WHERE id = $7`,
    message: `SELECT ${MESSAGE_COLUMNS} FROM ${s}.messages WHERE organization_id = $1 AND uuid = $2`,
    messageForUpdate: `SELECT ${MESSAGE_COLUMNS} FROM ${s}.messages WHERE organization_id = $1 AND uuid = $2 FOR UPDATE`,
    messagesPage: `SELECT ${MESSAGE_COLUMNS} FROM ${s}.messages WHERE chat_uuid = $1
      ORDER BY created_at DESC, uuid DESC LIMIT $2 OFFSET $3`,
    messagesCount: `SELECT COUNT(*) AS count FROM ${s}.messages WHERE chat_uuid = $1`,
    chatsCount: `SELECT COALESCE((SELECT count FROM ${s}.chat_counts WHERE organization_id = $1), 0) AS count`,
    // The newest inbound message with a channel in the contact's chat: one range of
    // messages_by_chat, newest first, read until the first match.
    lastInboundChannel: `SELECT channel_uuid FROM ${s}.messages
      WHERE chat_uuid = (SELECT uuid FROM ${s}.chats WHERE organization_id = $1 AND contact_uuid = $2)
        AND direction = 'inbound' AND channel_uuid IS NOT NULL
      ORDER BY created_at DESC, uuid DESC LIMIT 1`,
    // touchChat, and the customer service window in the same statement: the contact's
    // instant on the channel ($8, $9, $10) moves forward only; the chat row follows the
    // latest instant over every channel.
    touchChatAndWindow: `WITH win AS (
        INSERT INTO ${s}.customer_service_windows (contact_uuid, channel_uuid, last_inbound_at) VALUES ($8, $9, $10)
        ON CONFLICT (contact_uuid, channel_uuid)
        DO UPDATE SET last_inbound_at = GREATEST(${s}.customer_service_windows.last_inbound_at, EXCLUDED.last_inbound_at)
      )
      UPDATE ${s}.chats SET
        unread_count = unread_count + $1,
        status = CASE WHEN status = ANY($2::text[]) THEN $3 ELSE status END,
        last_message_uuid = CASE WHEN $4::timestamptz >= last_message_at THEN $5 ELSE last_message_uuid END,
        last_message_at = GREATEST(last_message_at, $4::timestamptz),
        updated_at = $6,
        last_inbound_channel_uuid = CASE WHEN last_inbound_at IS NULL OR $10::timestamptz >= last_inbound_at
          THEN $9 ELSE last_inbound_channel_uuid END,
        last_inbound_at = GREATEST(last_inbound_at, $10::timestamptz)
      WHERE id = $7`,
    lastInboundAt: `SELECT w.last_inbound_at FROM ${s}.customer_service_windows AS w
      JOIN ${s}.contacts AS ct ON ct.uuid = w.contact_uuid
      WHERE ct.organization_id = $1 AND w.contact_uuid = $2 AND w.channel_uuid = $3`
  }) as const

/** The chat whose id `statement` selects with `(organizationId, key)`. */
const chatWhere = async (sql: Sql, s: string, statement: string, organizationId: OrganizationId, key: string) => {
  const row = await sql.row<{ id: number }>(statement, [organizationId, key])
  return Option.fromNullable(row === undefined ? undefined : (await chatsByIds(sql, s, [row.id]))[0])
}

/** The body of `appendMessage`, inside its transaction: checks, then writes. */
const appendMessage = async (
  sql: Sql,
  s: string,
  organizationId: OrganizationId,
  request: ChatAppendRequest
): Promise<ChatAppendOutcome> => {
  const { message, now } = request
  if (request.dedupe && message.provider_message_id !== null) {
    const found = await sql.row<MessageRow>(sqlOf(s).duplicate, [organizationId, message.direction, message.provider_message_id])
    if (found !== undefined) {
      const chat = await chatWhere(sql, s, sqlOf(s).idByUuid, organizationId, found.chat_uuid)
      if (Option.isSome(chat)) return { _tag: "Duplicate", chat: chat.value, message: decodeMessage(found) }
    }
  }
  const written = await writeAppendedMessage(sql, s, organizationId, request)
  if (written === undefined) return { _tag: "ContactNotFound" }
  const { chat, contact, message: stored } = written
  if (message.direction !== "inbound") {
    const record = (await chatsByIds(sql, s, [chat.id]))[0]!
    return { _tag: "Appended", chat: record, message: stored, contactCreated: contact.created, chatCreated: chat.created }
  }
  // The chat record and the endpoints subscribed to its events in one statement.
  const { chat: record, subscribers } = await chatWithSubscribers(sql, s, chat.id, ["message.received", "chat.updated"])
  await insertWebhookEvents(sql, s, organizationId, "message.received", now, subscribers[0]!, [stored])
  if (!chat.created && record.status !== chat.status) {
    await insertWebhookEvents(sql, s, organizationId, "chat.updated", now, subscribers[1]!, [record])
  }
  return { _tag: "Appended", chat: record, message: stored, contactCreated: contact.created, chatCreated: chat.created }
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
 * transaction (which holds the organization's lock): resolves the contact (`undefined`,
 * nothing written, when there is no such contact), takes its chat (inserted as
 * `request.newChat` when missing), inserts the message (through the send queue with
 * `request.outbox`), moves the chat's unread count, status, last message and `updated_at`,
 * and with `request.inboundAt` the customer service window (in the same statement).
 * Writes no webhook event and builds no chat record: the caller does what it needs of
 * those (`appendMessage` here, a broadcast's recipients in broadcasts.ts).
 */
export const writeAppendedMessage = async (
  sql: Sql,
  s: string,
  organizationId: OrganizationId,
  request: ChatAppendRequest
): Promise<AppendedMessage | undefined> => {
  const SQL = sqlOf(s)
  const { message, now } = request
  const contact = await resolveContact(sql, s, organizationId, request)
  if (contact === undefined) return undefined
  const chat =
    contact.chat === undefined
      ? await chatOfContact(sql, s, organizationId, contact.uuid, request.newChat, now)
      : contact.chat === null
        ? await insertChat(sql, s, organizationId, contact.uuid, request.newChat, now)
        : { ...contact.chat, created: false }
  const given: Message = { ...message, chat_uuid: chat.uuid as Message["chat_uuid"], contact_uuid: contact.uuid as Message["contact_uuid"] }
  const stored =
    request.outbox === undefined ? given : await insertOutboxMessage(sql, s, organizationId, given, request.outbox, now)
  if (request.outbox === undefined) {
    await sql.run(insertMessageSql(s), messageValues(stored, stored.chat_uuid, stored.contact_uuid, organizationId))
  }
  const touch = [request.unreadIncrement, request.reopen.from, request.reopen.to, message.created_at, message.uuid, now, chat.id]
  if (request.inboundAt !== undefined && message.direction === "inbound" && message.channel_uuid !== null) {
    await sql.run(SQL.touchChatAndWindow, [...touch, contact.uuid, message.channel_uuid, request.inboundAt])
  } else {
    await sql.run(SQL.touchChat, touch)
  }
  return { chat, contact, message: stored }
}

/** The chat of a contact of the organization (its status before this write), inserted as `newChat` when missing. */
const chatOfContact = async (
  sql: Sql,
  s: string,
  organizationId: OrganizationId,
  contactId: string,
  newChat: { readonly uuid: string; readonly status: ChatStatus },
  now: string
): Promise<{ readonly id: number; readonly uuid: string; readonly status: ChatStatus; readonly created: boolean }> => {
  const found = await sql.row<ChatOfContact>(sqlOf(s).chatOfContact, [organizationId, contactId])
  if (found !== undefined) return { ...found, created: false }
  return insertChat(sql, s, organizationId, contactId, newChat, now)
}

/** A contact's chat as {@link chatOfContact} reads it. */
interface ChatOfContact {
  readonly id: number
  readonly uuid: string
  readonly status: ChatStatus
}

/** Inserts the contact's chat as `newChat`. */
const insertChat = async (
  sql: Sql,
  s: string,
  organizationId: OrganizationId,
  contactId: string,
  newChat: { readonly uuid: string; readonly status: ChatStatus },
  now: string
) => {
  const inserted = await sql.row<{ id: number }>(sqlOf(s).insertChat, [newChat.uuid, organizationId, contactId, newChat.status, now, now])
  return { id: inserted!.id, uuid: newChat.uuid, status: newChat.status, created: true }
}

/**
 * The contact of a request: found by uuid or phone, or created by phone (never refused).
 * Found by phone, its chat is read in the same statement (`chat`: the chat, `null` when it
 * has none); created, it has none (`null`); found by uuid, `chat` is not read (`undefined`).
 */
const resolveContact = async (
  sql: Sql,
  s: string,
  organizationId: OrganizationId,
  request: ChatAppendRequest
): Promise<{ readonly uuid: string; readonly created: boolean; readonly chat?: ChatOfContact | null } | undefined> => {
  const SQL = sqlOf(s)
  const reference = request.contact
  if (reference._tag === "ById") {
    const row = await sql.row<{ uuid: string }>(SQL.contactById, [organizationId, reference.uuid])
    return row === undefined ? undefined : { uuid: row.uuid, created: false }
  }
  const row = await sql.row<{ uuid: string; chat_id: number | null; chat_uuid: string; chat_status: ChatStatus }>(
    SQL.contactAndChatByPhone,
    [organizationId, reference.phone]
  )
  if (row !== undefined) {
    const chat = row.chat_id === null ? null : { id: row.chat_id, uuid: row.chat_uuid, status: row.chat_status }
    return { uuid: row.uuid, created: false, chat }
  }
  const { uuid, first_name, last_name, phone_valid } = reference.create
  await sql.run(SQL.insertContact, [
    uuid,
    organizationId,
    reference.phone,
    phone_valid !== false,
    first_name,
    last_name,
    request.now,
    request.now
  ])
  return { uuid: uuid as string, created: true, chat: null }
}

/** Whether any filter of the chat list is set (`undefined` fields are unset). */
const hasFilters = (filters: ChatFilters): boolean => Object.values(filters).some((value) => value !== undefined)


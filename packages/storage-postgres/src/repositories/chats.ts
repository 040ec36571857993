import { Option } from "effect"
import type {
  ChatAppendOutcome,
  ChatAppendRequest,
  ChatEnsureOutcome,
  ChatFilters,
  ChatRepository,
  ChatStatus,
  ChatUpdateOutcome,
  MessageStatusOutcome,
  OrganizationId
} from "@switchboard/core"
import { listedMessageType } from "@switchboard/core"
import { attempt, isUniqueViolation, pageBounds, type RepositoryFactory, type Sql } from "../internal/sql.js"
import { chatListPlannerOf } from "@switchboard/storage-sql"
import { recordWebhookEvent } from "./chatHooks.js"
import { chatsOfList, oneStatement } from "./chatList.js"
import {
  chatsByIds,
  chatWithSubscribers,
  decodeMessage,
  MESSAGE_COLUMNS,
  messagePageSql,
  type MessageRow
} from "./chatRows.js"
import {
  type AppendedMessage,
  appendInboundAlone,
  type ChatAndSubscribers,
  chatOfContact,
  INBOUND_EVENT_TYPES,
  type KnownContact,
  type KnownContactRow,
  knownContact,
  writeAppendedMessage,
  writeInboundUnlessStored
} from "./chatAppend.js"
import { importChats } from "./chatsImport.js"
import { insertWebhookEvents } from "./webhookEvents.js"
import { applyPending, applyStatus } from "./messageStatus.js"
import { foldReaction, messageByProviderId } from "./reactions.js"
import { updateStatusByProviderId } from "./providerStatus.js"

/**
 * `Storage.chats` on PostgreSQL: tables `chats` (with the `pg_trgm` index of its search
 * text), `chat_links`, `chat_counts` and `messages`, the provider's status reports waiting
 * for their message in `pending_message_statuses`, and the customer service windows in
 * `customer_service_windows` (schema/chats.ts). `appendMessage` (contact, chat, message,
 * the chat's counters and, with `inboundAt`, the window; with `outbox`, the message placed
 * in the send queue and possibly claimed; with `media`, the media record and its fetch job,
 * in the message's statement or transaction, `chatAppend.ts`), `ensure`, `update`, `importChats`,
 * `updateMessageStatus` (with the pending reports of the provider id it records; it ends
 * the send queue's dispatch state of a message leaving `queued`/`sending`,
 * `messageStatus.ts`) are each one transaction that first locks the organization's row,
 * so core's check-then-write rules apply atomically across processes; reads of several
 * statements share one snapshot. `updateMessageStatusByProviderId` locks only the
 * message's row when the message exists, the organization's row otherwise
 * (`providerStatus.ts`); `appendMessage` of an inbound message by phone locks only the
 * sender's chat row when the sender has a contact and a chat (`appendToLockedChat`), so
 * different senders' messages are stored in parallel. A message whose uuid is stored
 * already (a held uuid, whose other writer committed first) fails its insert on
 * `messages_pkey`, rolling its transaction back; the stored message is then answered as
 * `Duplicate` (no look-up on the common path). Their webhook events (`message.received`,
 * `message.status_updated`, `chat.updated`) are written inside those transactions. The
 * list's query plans are in `chatList.ts`. A broadcast's recipients are appended with the
 * same effect, a batch at a time (broadcastWrite.ts).
 *
 * @category repositories
 */
export const chatRepository: RepositoryFactory<ChatRepository> = (db) => {
  const s = db.schema
  const SQL = sqlOf(s)
  const planner = chatListPlannerOf(db.dialect)
  const locked = <A>(organizationId: OrganizationId, fn: (sql: Sql) => Promise<A>) =>
    db.transaction(fn, { lockOrganization: organizationId })
  /** `appendMessage`'s paths (below); a message whose uuid is stored fails its insert with `messages_pkey`'s violation. */
  const appendOnce = async (organizationId: OrganizationId, request: ChatAppendRequest): Promise<ChatAppendOutcome> => {
    const phone = senderPhone(request)
    if (phone === undefined) return locked(organizationId, (sql) => appendMessage(sql, s, organizationId, request))
    // The common case first: one autocommit statement (appendInboundAlone).
    // A reply or a reaction reads another message in the append's step: the transaction's path.
    if (request.dedupe && request.message.provider_message_id !== null && request.replyTo === undefined && request.reaction === undefined) {
      const alone = await appendInboundAlone(db.sql, s, organizationId, request, phone)
      if (alone === "Stored") {
        const duplicate = await storedDuplicate(db.sql, s, organizationId, request)
        if (duplicate !== undefined) return duplicate
      } else if (alone !== undefined) {
        return { _tag: "Appended", chat: alone.chat, message: alone.message, contactCreated: false, chatCreated: false }
      }
    }
    // A sender with a chat: only the chat's row is locked. Otherwise (a new sender, or
    // a contact without a chat) the organization's lock, under which the chat is
    // locked again when it exists by then, else created.
    const appended = await db.transaction((sql) => appendToLockedChat(sql, s, organizationId, request, phone))
    return (
      appended ??
      locked(
        organizationId,
        async (sql) =>
          (await appendToLockedChat(sql, s, organizationId, request, phone)) ??
          appendMessage(sql, s, organizationId, request)
      )
    )
  }
  return {
    appendMessage: (organizationId, request) =>
      attempt("chats.appendMessage", () =>
        appendOnce(organizationId, request).catch(async (error: unknown) => {
          // The message's uuid is stored already (a held uuid, an Idempotency-Key's, the other
          // writer committed first): the transaction rolled back, nothing of this one written.
          if (!isUniqueViolation(error, "messages_pkey")) throw error
          const row = await db.sql.row<MessageRow>(SQL.message, [organizationId, request.message.uuid])
          const duplicate = row === undefined ? undefined : await duplicateOf(db.sql, s, organizationId, row)
          if (duplicate === undefined) throw error
          return duplicate
        })
      ),
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
      attempt("chats.listAfter", () => {
        const plan = planner.list(organizationId, filters, sort, { after, offset: 0, limit })
        // One statement is one snapshot: no transaction around it.
        return oneStatement(plan) ? chatsOfList(db.sql, s, plan) : db.snapshot((sql) => chatsOfList(sql, s, plan))
      }),
    listPage: (organizationId, filters, sort, page) =>
      attempt("chats.listPage", () =>
        db.snapshot(async (sql) => {
          const [limit, offset] = pageBounds(page)
          const plan = planner.list(organizationId, filters, sort, { after: null, offset, limit })
          // Unfiltered, the total is the organization's counter, not a COUNT(*).
          const count = hasFilters(filters)
            ? planner.count(organizationId, filters)
            : { sql: SQL.chatsCount, params: [organizationId] }
          const items = await chatsOfList(sql, s, plan)
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
          if (final.row.status !== row.status && listedMessageType(message.type)) {
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
    latestInboundMessage: (organizationId, chatId) =>
      attempt("chats.latestInboundMessage", async () =>
        Option.map(Option.fromNullable(await db.sql.row<MessageRow>(SQL.latestInboundMessage, [chatId, organizationId])), decodeMessage)
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
    // The contact with that phone ($2) and its chat, the chat's row locked (no row when
    // either is missing): one sender's messages are appended one at a time.
    lockChatByPhone: `SELECT ct.uuid AS found_contact_uuid, c.id AS found_chat_id, c.uuid AS found_chat_uuid,
        c.status AS found_chat_status
      FROM ${s}.contacts AS ct JOIN ${s}.chats AS c ON c.organization_id = ct.organization_id AND c.contact_uuid = ct.uuid
      WHERE ct.organization_id = $1 AND ct.phone = $2 FOR NO KEY UPDATE OF c`,
    duplicate: `SELECT ${MESSAGE_COLUMNS} FROM ${s}.messages
      WHERE organization_id = $1 AND direction = $2 AND provider_message_id = $3 LIMIT 1`,
    // duplicate and contactAndChatByPhone ($4 the phone) in one statement: always one row,
    // its message columns NULL without a duplicate, its found_* columns without a contact.
    duplicateAndContact: `SELECT d.*, ct.uuid AS found_contact_uuid, c.id AS found_chat_id, c.uuid AS found_chat_uuid,
        c.status AS found_chat_status
      FROM (SELECT 1) AS one
      LEFT JOIN LATERAL (SELECT ${MESSAGE_COLUMNS} FROM ${s}.messages
        WHERE organization_id = $1 AND direction = $2 AND provider_message_id = $3 LIMIT 1) AS d ON true
      LEFT JOIN ${s}.contacts AS ct ON ct.organization_id = $1 AND ct.phone = $4
      LEFT JOIN ${s}.chats AS c ON c.organization_id = ct.organization_id AND c.contact_uuid = ct.uuid`,
    contactById: `SELECT uuid FROM ${s}.contacts WHERE organization_id = $1 AND uuid = $2`,
    message: `SELECT ${MESSAGE_COLUMNS} FROM ${s}.messages WHERE organization_id = $1 AND uuid = $2`,
    messageForUpdate: `SELECT ${MESSAGE_COLUMNS} FROM ${s}.messages WHERE organization_id = $1 AND uuid = $2 FOR UPDATE`,
    messagesPage: `SELECT ${MESSAGE_COLUMNS} FROM ${s}.messages WHERE chat_uuid = $1 AND type <> 'reaction'
      ORDER BY created_at DESC, uuid DESC LIMIT $2 OFFSET $3`,
    messagesCount: `SELECT COUNT(*) AS count FROM ${s}.messages WHERE chat_uuid = $1 AND type <> 'reaction'`,
    chatsCount: `SELECT COALESCE((SELECT count FROM ${s}.chat_counts WHERE organization_id = $1), 0) AS count`,
    // The newest inbound message with a channel in the contact's chat: one range of
    // messages_by_chat, newest first, read until the first match.
    lastInboundChannel: `SELECT channel_uuid FROM ${s}.messages
      WHERE chat_uuid = (SELECT uuid FROM ${s}.chats WHERE organization_id = $1 AND contact_uuid = $2)
        AND direction = 'inbound' AND channel_uuid IS NOT NULL
      ORDER BY created_at DESC, uuid DESC LIMIT 1`,
    // The newest inbound message of a chat but reactions (a read receipt's): one range of
    // messages_by_chat, newest first, read until the first match.
    latestInboundMessage: `SELECT ${MESSAGE_COLUMNS} FROM ${s}.messages
      WHERE chat_uuid = $1 AND organization_id = $2 AND direction = 'inbound' AND type <> 'reaction'
      ORDER BY created_at DESC, uuid DESC LIMIT 1`,
    lastInboundAt: `SELECT w.last_inbound_at FROM ${s}.customer_service_windows AS w
      JOIN ${s}.contacts AS ct ON ct.uuid = w.contact_uuid
      WHERE ct.organization_id = $1 AND w.contact_uuid = $2 AND w.channel_uuid = $3`
  }) as const

/** The chat whose id `statement` selects with `(organizationId, key)`. */
const chatWhere = async (sql: Sql, s: string, statement: string, organizationId: OrganizationId, key: string) => {
  const row = await sql.row<{ id: number }>(statement, [organizationId, key])
  return Option.fromNullable(row === undefined ? undefined : (await chatsByIds(sql, s, [row.id]))[0])
}

/**
 * The phone of the sender of an inbound message appended by phone (not through the send
 * queue), which `appendMessage` appends under its chat's lock ({@link appendToLockedChat});
 * `undefined` for every other append (under the organization's lock).
 */
const senderPhone = (request: ChatAppendRequest): string | undefined =>
  request.message.direction === "inbound" && request.outbox === undefined && request.contact._tag === "ByPhone"
    ? request.contact.phone
    : undefined

/**
 * `appendMessage` of an inbound message from `phone`, inside a transaction that need not
 * hold the organization's lock: the sender's contact and chat read and the chat's row
 * locked (`FOR NO KEY UPDATE`, as every write of the chat row takes it), then, in a later
 * statement (whose snapshot sees what the lock's previous holder committed), the
 * duplicate check and the writes (`writeInboundUnlessStored`). Every append of one sender's messages, and so every
 * redelivery of one provider id (a provider message has one sender), passes this lock,
 * so the check-then-insert is atomic. `undefined`, nothing written, when the organization
 * has no contact with that phone or the contact no chat: creating those takes the
 * organization's lock (plan limits, `appendMessage`).
 */
const appendToLockedChat = async (
  sql: Sql,
  s: string,
  organizationId: OrganizationId,
  request: ChatAppendRequest,
  phone: string
): Promise<ChatAppendOutcome | undefined> => {
  const known = knownContact(await sql.row<KnownContactRow>(sqlOf(s).lockChatByPhone, [organizationId, phone]))
  if (known === null || known.chat === null) return undefined
  request = await withReplyTo(sql, s, organizationId, request)
  const { message } = request
  if (!request.dedupe || message.provider_message_id === null) {
    return appended(sql, s, organizationId, request, (await writeAppendedMessage(sql, s, organizationId, request, known))!)
  }
  // The duplicate check, the writes and the record in one statement; the stored message read only when there is one.
  const written = await writeInboundUnlessStored(sql, s, organizationId, request, known.uuid, known.chat)
  if (written !== undefined) return appended(sql, s, organizationId, request, written.written, written.record)
  // Deleted in between (its contact deleted): the message is stored after all.
  return (
    (await storedDuplicate(sql, s, organizationId, request)) ??
    appended(sql, s, organizationId, request, (await writeAppendedMessage(sql, s, organizationId, request, known))!)
  )
}

/** The `Duplicate` outcome of the stored message with the direction and provider id of `request`'s; `undefined` when there is none (or its chat is gone). */
const storedDuplicate = async (
  sql: Sql,
  s: string,
  organizationId: OrganizationId,
  request: ChatAppendRequest
): Promise<ChatAppendOutcome | undefined> => {
  const { message } = request
  const row = await sql.row<MessageRow>(sqlOf(s).duplicate, [organizationId, message.direction, message.provider_message_id])
  return row === undefined ? undefined : duplicateOf(sql, s, organizationId, row)
}

/** The body of `appendMessage`, inside its transaction holding the organization's lock: checks, then writes. */
const appendMessage = async (
  sql: Sql,
  s: string,
  organizationId: OrganizationId,
  request: ChatAppendRequest
): Promise<ChatAppendOutcome> => {
  const { message } = request
  let known: KnownContact | undefined
  if (request.dedupe && message.provider_message_id !== null) {
    const byPhone = request.contact._tag === "ByPhone" ? request.contact.phone : null
    // With a contact by phone, the contact and its chat are read in the same statement.
    const row = await sql.row<MessageRow & KnownContactRow>(
      byPhone === null ? sqlOf(s).duplicate : sqlOf(s).duplicateAndContact,
      byPhone === null
        ? [organizationId, message.direction, message.provider_message_id]
        : [organizationId, message.direction, message.provider_message_id, byPhone]
    )
    if (byPhone !== null) known = knownContact(row!)
    const duplicate = row === undefined || row.uuid === null ? undefined : await duplicateOf(sql, s, organizationId, row)
    if (duplicate !== undefined) return duplicate
  }
  const resolved = await withReplyTo(sql, s, organizationId, request)
  const written = await writeAppendedMessage(sql, s, organizationId, resolved, known)
  if (written === undefined) return { _tag: "ContactNotFound" }
  return appended(sql, s, organizationId, resolved, written)
}

/**
 * `request` with its message's `reply_to` resolved from `request.replyTo` (the
 * organization's message with that provider id, outbound first, then inbound; `null` when
 * none), inside the append's transaction; as given without `replyTo`.
 */
const withReplyTo = async (sql: Sql, s: string, organizationId: OrganizationId, request: ChatAppendRequest): Promise<ChatAppendRequest> => {
  if (request.replyTo === undefined) return request
  const target = await messageByProviderId(sql, s, organizationId, request.replyTo)
  return { ...request, message: { ...request.message, reply_to: target?.uuid ?? null } }
}

/** The `Duplicate` outcome of the stored message `row` (with its chat's record); `undefined` when that chat is gone. */
const duplicateOf = async (
  sql: Sql,
  s: string,
  organizationId: OrganizationId,
  row: MessageRow
): Promise<ChatAppendOutcome | undefined> => {
  const chat = await chatWhere(sql, s, sqlOf(s).idByUuid, organizationId, row.chat_uuid)
  return Option.isSome(chat) ? { _tag: "Duplicate", chat: chat.value, message: decodeMessage(row) } : undefined
}

/**
 * The `Appended` outcome of what `writeAppendedMessage` wrote: the chat's record and, for
 * an inbound message, its `message.received` event (and `chat.updated` when the message
 * reopened the chat) for the endpoints subscribed, read in the same statement as the record
 * (or given as `recorded`, read by the statement that wrote).
 */
const appended = async (
  sql: Sql,
  s: string,
  organizationId: OrganizationId,
  request: ChatAppendRequest,
  written: AppendedMessage,
  recorded?: ChatAndSubscribers
): Promise<ChatAppendOutcome> => {
  const { chat, contact, message: stored } = written
  if (request.message.direction !== "inbound") {
    const record = (await chatsByIds(sql, s, [chat.id]))[0]!
    return { _tag: "Appended", chat: record, message: stored, contactCreated: contact.created, chatCreated: chat.created }
  }
  const { chat: record, subscribers } = recorded ?? (await chatWithSubscribers(sql, s, chat.id, INBOUND_EVENT_TYPES))
  if (request.reaction !== undefined) await foldReaction(sql, s, organizationId, "contact", request.reaction, request.now)
  else await insertWebhookEvents(sql, s, organizationId, "message.received", request.now, subscribers[0]!, [stored])
  if (!chat.created && record.status !== chat.status) {
    await insertWebhookEvents(sql, s, organizationId, "chat.updated", request.now, subscribers[1]!, [record])
  }
  return { _tag: "Appended", chat: record, message: stored, contactCreated: contact.created, chatCreated: chat.created }
}

/** Whether any filter of the chat list is set (`undefined` fields are unset). */
const hasFilters = (filters: ChatFilters): boolean => Object.values(filters).some((value) => value !== undefined)


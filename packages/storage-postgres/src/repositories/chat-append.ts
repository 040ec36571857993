import type { ChatAppendRequest, ChatStatus, Message, OrganizationId, WebhookEventType } from "@switchboard/core"
import type { Sql } from "../internal/sql.js"
import { insertOutboxMessage } from "./chat-hooks.js"
import {
  type ChatJoinRow,
  chatAndSubscribersOf,
  insertMessageSql,
  insertMessageUnlessStoredSql,
  messageValues,
  updatedChatRecordSql
} from "./chat-rows.js"

// The writes of `chats.appendMessage` (chats.ts) after its duplicate check: the contact, its
// chat, the message, the chat's counters and the customer service window, inside the
// caller's transaction holding the organization's lock, or the chat's when the contact and
// its chat exist and are known (chats.ts `appendToLockedChat`; broadcast-write.ts makes the same
// writes for a batch of a broadcast's recipients).

/**
 * The chat row's update for an appended message, its parameters numbered from `$n+1`:
 * `+1` unread increment, `+2` the statuses that reopen, `+3` the status they reopen to,
 * `+4` the message's `created_at`, `+5` its uuid, `+6` now, `+7` the chat's row id; with
 * `window`, `+9` the channel and `+10` the window's instant (the chat follows the latest
 * instant over every channel). Every SET expression reads the row as it was: the message
 * becomes the last one unless the chat has a newer one (-infinity = none, below every
 * instant). `also` extends the WHERE clause.
 */
const touchChatSql = (s: string, n: number, window: boolean, also = ""): string => {
  const p = (k: number) => `$${n + k}`
  const inbound = window
    ? `,
        last_inbound_channel_uuid = CASE WHEN last_inbound_at IS NULL OR ${p(10)}::timestamptz >= last_inbound_at
          THEN ${p(9)} ELSE last_inbound_channel_uuid END,
        last_inbound_at = GREATEST(last_inbound_at, ${p(10)}::timestamptz)`
    : ""
  return `UPDATE ${s}.chats SET
        unread_count = unread_count + ${p(1)},
        status = CASE WHEN status = ANY(${p(2)}::text[]) THEN ${p(3)} ELSE status END,
        last_message_uuid = CASE WHEN ${p(4)}::timestamptz >= last_message_at THEN ${p(5)} ELSE last_message_uuid END,
        last_message_at = GREATEST(last_message_at, ${p(4)}::timestamptz),
        updated_at = ${p(6)}${inbound}
      WHERE id = ${p(7)}${also}`
}

/**
 * The customer service window's upsert, its parameters numbered from `$n+1`: the contact
 * (`+1`), the channel (`+2`), the instant (`+3`, moving forward only); written once per
 * row of `from` when given (a `WITH` clause's name), else once.
 */
const windowSql = (s: string, n: number, from: string | null): string => {
  const values = `$${n + 1}::text, $${n + 2}::text, $${n + 3}::timestamptz`
  return `INSERT INTO ${s}.customer_service_windows (contact_uuid, channel_uuid, last_inbound_at)
        ${from === null ? `VALUES (${values})` : `SELECT ${values} FROM ${from}`}
        ON CONFLICT (contact_uuid, channel_uuid)
        DO UPDATE SET last_inbound_at = GREATEST(${s}.customer_service_windows.last_inbound_at, EXCLUDED.last_inbound_at)`
}

/** The statements of these writes, for schema `s`. */
const sqlOf = (s: string) =>
  ({
    contactById: `SELECT uuid FROM ${s}.contacts WHERE organization_id = $1 AND uuid = $2`,
    // The contact with that phone and its chat (NULLs without one): two index probes.
    contactAndChatByPhone: `SELECT ct.uuid AS found_contact_uuid, c.id AS found_chat_id, c.uuid AS found_chat_uuid,
        c.status AS found_chat_status
      FROM ${s}.contacts AS ct LEFT JOIN ${s}.chats AS c ON c.organization_id = ct.organization_id AND c.contact_uuid = ct.uuid
      WHERE ct.organization_id = $1 AND ct.phone = $2`,
    insertContact: `INSERT INTO ${s}.contacts (uuid, organization_id, phone, phone_valid, first_name, last_name, created_at, updated_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    chatOfContact: `SELECT id, uuid, status FROM ${s}.chats WHERE organization_id = $1 AND contact_uuid = $2`,
    // search_text is filled from the contact by the trigger chats_before_insert.
    insertChat: `INSERT INTO ${s}.chats (uuid, organization_id, contact_uuid, status, created_at, updated_at)
      VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
    touchChat: touchChatSql(s, 0, false),
    // touchChat, and the customer service window in the same statement.
    touchChatAndWindow: `WITH win AS (${windowSql(s, 7, null)}) ${touchChatSql(s, 0, true)}`,
    // The message ($1…$19) unless its provider id is stored already, and only then, in the
    // same statement, the window (with `window`: $27…$29), the chat ($20…$26) and the chat's
    // record with the endpoints subscribed to the two event types that follow.
    insertUnlessStored: (window: boolean) => `WITH inserted AS (${insertMessageUnlessStoredSql(s)}),
      ${window ? `windowed AS (${windowSql(s, 26, "inserted")}),` : ""}
      touched AS (${touchChatSql(s, 19, window, " AND EXISTS (SELECT 1 FROM inserted)")} RETURNING *)
      SELECT EXISTS (SELECT 1 FROM inserted) AS stored, r.*
      FROM (SELECT 1) AS one LEFT JOIN LATERAL (${updatedChatRecordSql(s, "touched", "inserted", window ? 30 : 27, 2)}) AS r ON true`
  }) as const

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
 * transaction (which holds the organization's lock, or the lock of the chat of `known`
 * with `known` a contact with a chat): resolves the contact (`undefined`,
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
  request: ChatAppendRequest,
  known?: KnownContact
): Promise<AppendedMessage | undefined> => {
  const SQL = sqlOf(s)
  const { message, now } = request
  const contact = await resolveContact(sql, s, organizationId, request, known)
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
  const window = windowValues(request, contact.uuid)
  const touch = touchValues(request, chat.id)
  await sql.run(window === undefined ? SQL.touchChat : SQL.touchChatAndWindow, window === undefined ? touch : [...touch, ...window])
  return { chat, contact, message: stored }
}

/**
 * The writes of `chats.appendMessage` for an inbound message (not through the send queue)
 * of a contact with a chat, unless the organization has a message of that direction and
 * provider id already: the message, then the chat and the window as
 * {@link writeAppendedMessage} writes them, and the chat's record afterwards with the
 * endpoints subscribed to `message.received` and `chat.updated`, in ONE statement. Inside
 * the caller's transaction holding the chat's lock (every insert of that provider id takes
 * it before this statement's snapshot). `undefined`, nothing written, when such a message
 * is stored.
 */
export const writeInboundUnlessStored = async (
  sql: Sql,
  s: string,
  organizationId: OrganizationId,
  request: ChatAppendRequest,
  contact: string,
  chat: ChatOfContact
): Promise<{ readonly written: AppendedMessage; readonly record: ChatAndSubscribers } | undefined> => {
  const stored: Message = { ...request.message, chat_uuid: chat.uuid as Message["chat_uuid"], contact_uuid: contact as Message["contact_uuid"] }
  const window = windowValues(request, contact)
  const row = await sql.row<{ stored: boolean } & ChatJoinRow & Record<string, unknown>>(sqlOf(s).insertUnlessStored(window !== undefined), [
    ...messageValues(stored, stored.chat_uuid, stored.contact_uuid, organizationId),
    ...touchValues(request, chat.id),
    ...(window ?? []),
    ...INBOUND_EVENT_TYPES
  ])
  if (!row!.stored) return undefined
  return {
    written: { chat: { ...chat, created: false }, contact: { uuid: contact, created: false }, message: stored },
    record: chatAndSubscribersOf(row!, INBOUND_EVENT_TYPES.length)
  }
}

/** The events an appended inbound message may write, in the order of a record's `subscribers`. */
export const INBOUND_EVENT_TYPES: ReadonlyArray<WebhookEventType> = ["message.received", "chat.updated"]

/** A chat's record and, per event type asked, the endpoints subscribed to it. */
export type ChatAndSubscribers = ReturnType<typeof chatAndSubscribersOf>

/** The parameters of the chat's update (`touchChatSql`) for the message of `request` in chat row `chatId`. */
const touchValues = (request: ChatAppendRequest, chatId: number) => [
  request.unreadIncrement,
  request.reopen.from,
  request.reopen.to,
  request.message.created_at,
  request.message.uuid,
  request.now,
  chatId
]

/** The parameters of the window's upsert (`windowSql`) for `request`, `undefined` when it writes none (not inbound, no channel or no `inboundAt`). */
const windowValues = (request: ChatAppendRequest, contact: string) => {
  const { message, inboundAt } = request
  return inboundAt !== undefined && message.direction === "inbound" && message.channel_uuid !== null
    ? [contact, message.channel_uuid, inboundAt]
    : undefined
}

/** The chat of a contact of the organization (its status before this write), inserted as `newChat` when missing. */
export const chatOfContact = async (
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
  request: ChatAppendRequest,
  known: KnownContact | undefined
): Promise<{ readonly uuid: string; readonly created: boolean; readonly chat?: ChatOfContact | null } | undefined> => {
  const SQL = sqlOf(s)
  const reference = request.contact
  if (reference._tag === "ById") {
    const row = await sql.row<{ uuid: string }>(SQL.contactById, [organizationId, reference.uuid])
    return row === undefined ? undefined : { uuid: row.uuid, created: false }
  }
  const found =
    known !== undefined
      ? known
      : knownContact(await sql.row<KnownContactRow>(SQL.contactAndChatByPhone, [organizationId, reference.phone]))
  if (found !== null) return { ...found, created: false }
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

/** The contact with a phone and its chat as read by `contactAndChatByPhone` (`found_*` NULL without them). */
export interface KnownContactRow {
  readonly found_contact_uuid: string | null
  readonly found_chat_id: number | null
  readonly found_chat_uuid: string | null
  readonly found_chat_status: ChatStatus | null
}

/** A contact read by phone in an earlier statement of the transaction and its chat (`null`: none); `null`: no such contact. */
export type KnownContact = { readonly uuid: string; readonly chat: ChatOfContact | null } | null

/** The {@link KnownContact} of a row (no row or a NULL contact: none). */
export const knownContact = (row: KnownContactRow | undefined): KnownContact =>
  row === undefined || row.found_contact_uuid === null
    ? null
    : {
        uuid: row.found_contact_uuid,
        chat:
          row.found_chat_id === null
            ? null
            : { id: row.found_chat_id, uuid: row.found_chat_uuid!, status: row.found_chat_status! }
      }


import { type ChatAppendRequest, type ChatStatus, listedMessageType, type Message, type OrganizationId, type WebhookEventType } from "@switchboard/core"
import { MESSAGE_VALUE_COUNT, messageInChat } from "@switchboard/storage-sql"
import type { Sql } from "../internal/sql.js"
import { insertOutboxMessage } from "./chatHooks.js"
import {
  type ChatRecordRow,
  chatAndSubscribersOf,
  insertMessageSql,
  insertMessageUnlessStoredSql,
  LAST_MESSAGE_COLUMNS,
  MESSAGE_COLUMNS,
  messageValues,
  messageValuesSql,
  updatedChatRecordSql
} from "./chatRows.js"
import { inboundMediaValues, insertInboundMedia, insertInboundMediaSql, MEDIA_CONTACT_INDEX } from "./media.js"
import { subscribesSql } from "./webhookEvents.js"

// The writes of `chats.appendMessage` (chats.ts) after its duplicate check: the contact, its
// chat, the message (with its media record and fetch job, media.ts), the chat's counters and
// the customer service window, inside the caller's transaction holding the organization's
// lock, or the chat's when the contact and its chat exist and are known (chats.ts
// `appendToLockedChat`; broadcastWrite.ts makes the same writes for a batch of a
// broadcast's recipients).

/**
 * The chat row's update for an appended message. `p(k)` names its inputs (a parameter or an
 * expression): `1` unread increment, `2` the statuses that reopen, `3` the status they
 * reopen to, `4` the message's `created_at`, `5` its uuid, `6` now, `7` the chat's row id;
 * with `window`, `9` the channel and `10` the window's instant (the chat follows the latest
 * instant over every channel). Every SET expression reads the row as it was: the message
 * becomes the last one unless the chat has a newer one (-infinity = none, below every
 * instant); a reaction row binds NULL for `4` and `6`, so it moves neither the last
 * message nor `updated_at`. `also` extends the WHERE clause.
 */
const touchChatSql = (s: string, p: (k: number) => string, window: boolean, also = ""): string => {
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
        updated_at = COALESCE(${p(6)}::timestamptz, updated_at)${inbound}
      WHERE id = ${p(7)}${also}`
}

/** Parameter `k` of a statement whose parameters of one part are numbered from `$n+1`. */
const from = (n: number) => (k: number) => `$${n + k}`

/**
 * The customer service window's upsert: the contact, the channel and the instant (moving
 * forward only), each a parameter or an expression; written once per row of `rows` when
 * given (a `WITH` clause's name), else once.
 */
const windowSql = (s: string, [contact, channel, instant]: readonly [string, string, string], rows: string | null): string => {
  const values = `${contact}::text, ${channel}::text, ${instant}::timestamptz`
  return `INSERT INTO ${s}.customer_service_windows (contact_uuid, channel_uuid, last_inbound_at)
        ${rows === null ? `VALUES (${values})` : `SELECT ${values} FROM ${rows}`}
        ON CONFLICT (contact_uuid, channel_uuid)
        DO UPDATE SET last_inbound_at = GREATEST(${s}.customer_service_windows.last_inbound_at, EXCLUDED.last_inbound_at)`
}

/** How many parameters a message's values bind ({@link messageValues}): `M` below. */
const M = MESSAGE_VALUE_COUNT

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
    touchChat: touchChatSql(s, from(0), false),
    // touchChat, and the customer service window in the same statement.
    touchChatAndWindow: `WITH win AS (${windowSql(s, ["$8", "$9", "$10"], null)}) ${touchChatSql(s, from(0), true)}`,
    // The message ($1…$M) unless its provider id is stored already, and only then, in the
    // same statement, the window (with `window`: $M+8…$M+10), the chat ($M+1…$M+7), the
    // chat's record with the endpoints subscribed to the two event types that follow, and
    // with `media` the media record and its fetch job (its values after the event types).
    insertUnlessStored: (window: boolean, media: boolean) => `WITH inserted AS (${insertMessageUnlessStoredSql(s)}),
      ${window ? `windowed AS (${windowSql(s, [`$${M + 8}`, `$${M + 9}`, `$${M + 10}`], "inserted")}),` : ""}
      ${media ? `media_inserted AS (${insertInboundMediaSql(s, from(window ? M + 13 : M + 10))}),` : ""}
      touched AS (${touchChatSql(s, from(M), window, " AND EXISTS (SELECT 1 FROM inserted)")} RETURNING *)
      SELECT EXISTS (SELECT 1 FROM inserted) AS stored, r.*
      FROM (SELECT 1) AS one LEFT JOIN LATERAL (${updatedChatRecordSql(s, "touched", "inserted", window ? M + 11 : M + 8, 2)}) AS r ON true`,
    inboundAlone: inboundAloneSql(s)
  }) as const

/**
 * {@link appendInboundAlone}'s statement (with `window`, the customer service window
 * too): ONE statement, run on its own (autocommit), that appends an inbound message of a
 * sender with a chat. It locks the chat's row (`FOR NO KEY UPDATE`) and writes only when
 * the row version the lock returns is the one the statement's snapshot holds (`fresh`):
 * every append of a message to a chat updates the chat's row in its transaction, so a
 * version newer than the snapshot means another append committed after the snapshot was
 * taken, and the snapshot's duplicate check could miss its message (the caller runs the
 * statement again). It writes nothing either when an enabled endpoint subscribes to
 * `message.received` or `chat.updated` (`subscribed`: the events go with the transaction
 * of `appendToLockedChat`). Then, as `insertUnlessStored`: the message unless its provider
 * id is stored, and only then the window, the media (with `media`), the chat and the
 * chat's record.
 */
const inboundAloneSql = (s: string) => (window: boolean, media: boolean) => {
  // The message's values but its chat and contact ($1…$M-2, the organization last), then the
  // phone ($M-1), the chat's update ($M…$M+5; with `window` $M+6, $M+7), the two event
  // types; with `media`, the media's values but its contact (from the chat's row).
  const value = (k: number) => (k === 1 ? "f.uuid" : k === 2 ? "f.contact_uuid" : `$${k === 0 ? 1 : k - 1}`)
  const organization = `$${M - 2}`
  const touch: Record<number, string> = {
    1: `$${M}`, 2: `$${M + 1}`, 3: `$${M + 2}`, 4: `$${M + 3}`, 5: `$${M + 4}`, 6: `$${M + 5}`,
    7: "(SELECT id FROM fresh)", 9: `$${M + 6}`, 10: `$${M + 7}`
  }
  const mediaFrom = window ? M + 8 : M + 6
  const mediaValue = (k: number) =>
    k === MEDIA_CONTACT_INDEX ? "(SELECT contact_uuid FROM fresh)" : `$${mediaFrom + (k < MEDIA_CONTACT_INDEX ? k + 1 : k)}`
  return `WITH locked AS (
        SELECT c.id, c.uuid, c.contact_uuid, c.xmin AS version
        FROM ${s}.contacts AS ct JOIN ${s}.chats AS c ON c.organization_id = ct.organization_id AND c.contact_uuid = ct.uuid
        WHERE ct.organization_id = ${organization} AND ct.phone = $${M - 1} FOR NO KEY UPDATE OF c),
      fresh AS (SELECT l.* FROM locked AS l WHERE (SELECT c.xmin FROM ${s}.chats AS c WHERE c.id = l.id) = l.version),
      subscribed AS (SELECT EXISTS (SELECT 1 FROM ${s}.webhook_endpoints AS we
        WHERE ${subscribesSql("we", organization, `ANY($${mediaFrom}::text[])`)}) AS present),
      inserted AS (INSERT INTO ${s}.messages (${MESSAGE_COLUMNS}, organization_id) SELECT ${messageValuesSql(value)} FROM fresh AS f
        WHERE NOT (SELECT present FROM subscribed)
          AND NOT EXISTS (SELECT 1 FROM ${s}.messages WHERE organization_id = ${organization} AND direction = $2 AND provider_message_id = $9)
        RETURNING ${LAST_MESSAGE_COLUMNS}),
      ${window ? `windowed AS (${windowSql(s, ["(SELECT contact_uuid FROM fresh)", `$${M + 6}`, `$${M + 7}`], "inserted")}),` : ""}
      ${media ? `media_inserted AS (${insertInboundMediaSql(s, mediaValue)}),` : ""}
      touched AS (${touchChatSql(s, (k) => touch[k]!, window, " AND EXISTS (SELECT 1 FROM inserted)")} RETURNING *)
      SELECT EXISTS (SELECT 1 FROM locked) AS found, EXISTS (SELECT 1 FROM fresh) AS fresh,
        (SELECT present FROM subscribed) AS subscribed, EXISTS (SELECT 1 FROM inserted) AS stored, r.*
      FROM (SELECT 1) AS one LEFT JOIN LATERAL (${updatedChatRecordSql(s, "touched", "inserted", 0, 0)}) AS r ON true`
}

/**
 * What the statement of {@link appendInboundAlone} found and did: `found` the sender's
 * contact with a chat, `fresh` its row not changed since the snapshot, `subscribed` an
 * endpoint subscribed to the events of an inbound message, `stored` the message inserted
 * (and the chat's record in the rest of the row).
 */
type InboundAloneRow = { readonly found: boolean; readonly fresh: boolean; readonly subscribed: boolean; readonly stored: boolean } & ChatRecordRow &
  Record<string, unknown>

/**
 * An inbound message from `phone` (deduplicated by its provider id, not through the send
 * queue) appended by ONE autocommit statement on `sql` (the pool), no `BEGIN`/`COMMIT`
 * (`inboundAloneSql`): answers the `Appended` outcome, `"Stored"` when a message with
 * that provider id is stored already (nothing written), or `undefined`, nothing written,
 * when this path cannot decide it: no contact with that phone or no chat of it, an
 * endpoint subscribed to its events, or the chat changed under each of
 * {@link ALONE_ATTEMPTS} snapshots (the caller then takes `appendToLockedChat`'s
 * transaction).
 */
export const appendInboundAlone = async (
  sql: Sql,
  s: string,
  organizationId: OrganizationId,
  request: ChatAppendRequest,
  phone: string
): Promise<{ readonly chat: ChatAndSubscribers["chat"]; readonly message: Message } | "Stored" | undefined> => {
  const { message } = request
  const window = windowValues(request, "")
  const values = messageValues(message, "", "", organizationId).filter((_, k) => k !== 1 && k !== 2)
  const touch = touchValues(request, 0).slice(0, 6)
  const media = request.media === undefined ? [] : inboundMediaValues(organizationId, request.media, message.uuid, "")
  const parameters = [
    ...values,
    phone,
    ...touch,
    ...(window === undefined ? [] : window.slice(1)),
    INBOUND_EVENT_TYPES,
    ...media.filter((_, k) => k !== MEDIA_CONTACT_INDEX)
  ]
  const statement = sqlOf(s).inboundAlone(window !== undefined, request.media !== undefined)
  for (let attempt = 1; attempt <= ALONE_ATTEMPTS; attempt++) {
    const row = (await sql.row<InboundAloneRow>(statement, parameters))!
    if (!row.found || row.subscribed) return undefined
    if (!row.fresh) continue
    if (!row.stored) return "Stored"
    const { chat } = chatAndSubscribersOf(row, 0)
    return { chat, message: messageInChat(message, chat.uuid, chat.contact.uuid) }
  }
  return undefined
}

/** How many snapshots {@link appendInboundAlone} tries before leaving the message to the transaction. */
export const ALONE_ATTEMPTS = 3

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
 * `request.outbox`) and with `request.media` its media record and fetch job, moves the
 * chat's unread count, status, last message and `updated_at`, and with
 * `request.inboundAt` the customer service window (in the same statement).
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
  const given = messageInChat(message, chat.uuid, contact.uuid)
  const stored =
    request.outbox === undefined ? given : await insertOutboxMessage(sql, s, organizationId, given, request.outbox, now)
  if (request.outbox === undefined) {
    await sql.run(insertMessageSql(s), messageValues(stored, stored.chat_uuid, stored.contact_uuid, organizationId))
  }
  if (request.media !== undefined) await insertInboundMedia(sql, s, organizationId, request.media, stored.uuid, contact.uuid)
  const window = windowValues(request, contact.uuid)
  const touch = touchValues(request, chat.id)
  await sql.run(window === undefined ? SQL.touchChat : SQL.touchChatAndWindow, window === undefined ? touch : [...touch, ...window])
  return { chat, contact, message: stored }
}

/**
 * The writes of `chats.appendMessage` for an inbound message (not through the send queue)
 * of a contact with a chat, unless the organization has a message of that direction and
 * provider id already: the message, then the chat, the window and the media as
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
  const stored = messageInChat(request.message, chat.uuid, contact)
  const window = windowValues(request, contact)
  const media = request.media === undefined ? [] : inboundMediaValues(organizationId, request.media, stored.uuid, contact)
  const statement = sqlOf(s).insertUnlessStored(window !== undefined, request.media !== undefined)
  const row = await sql.row<{ stored: boolean } & ChatRecordRow & Record<string, unknown>>(statement, [
    ...messageValues(stored, stored.chat_uuid, stored.contact_uuid, organizationId),
    ...touchValues(request, chat.id),
    ...(window ?? []),
    ...INBOUND_EVENT_TYPES,
    ...media
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
const touchValues = (request: ChatAppendRequest, chatId: number) => {
  const listed = listedMessageType(request.message.type)
  return [
    request.unreadIncrement,
    request.reopen.from,
    request.reopen.to,
    listed ? request.message.created_at : null,
    request.message.uuid,
    listed ? request.now : null,
    chatId
  ]
}

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


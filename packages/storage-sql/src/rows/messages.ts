import type {
  ChatId,
  ContactId,
  Message,
  MessageDirection,
  MessageId,
  MessageStatus,
  MessageType,
  NewMessage,
  ProviderStatusUpdate,
  TransportKind
} from "@switchboard/core"
import type { SqlValues } from "../SqlDialect.js"
import { jsonOrNull, type SqlJson } from "./values.js"

// Rows of `messages` and their decoding into core's records; the parameters of their
// insert. The casts to branded ids are safe: every id was written from a branded value.

/**
 * A row of `messages` (every column but `organization_id` and the send queue's own).
 *
 * @category rows
 */
export interface MessageRow {
  readonly uuid: string
  readonly chat_uuid: string
  readonly contact_uuid: string
  readonly direction: string
  readonly type: string
  readonly text: string | null
  readonly template: SqlJson
  readonly media: SqlJson
  readonly content: SqlJson
  readonly status: string
  readonly provider_message_id: string | null
  readonly failure: SqlJson
  readonly channel_uuid: string | null
  readonly created_at: string
  readonly updated_at: string
  readonly attempts: number
  readonly next_attempt_at: string | null
  readonly broadcast_uuid: string | null
  readonly transport: string | null
  readonly reply_to: string | null
  readonly reactions: SqlJson
}

/**
 * The columns of a {@link MessageRow}, in `SELECT` order (the send queue's own dispatch
 * columns are read by the send queue only).
 *
 * @category statements
 */
export const MESSAGE_COLUMNS =
  "uuid, chat_uuid, contact_uuid, direction, type, text, template, media, content, status, provider_message_id, " +
  "failure, channel_uuid, created_at, updated_at, attempts, next_attempt_at, broadcast_uuid, transport, reply_to, reactions"

/**
 * The types of {@link MESSAGE_COLUMNS} and `organization_id`, in that order: the casts of
 * {@link messageValues}'s parameters (`dialect.cast`).
 *
 * @category statements
 */
export const MESSAGE_VALUE_TYPES = [
  "text", "text", "text", "text", "text", "text", "json", "json", "json", "text", "text",
  "json", "text", "timestamptz", "timestamptz", "integer", "timestamptz", "text", "text", "text", "json", "text"
] as const

/**
 * How many parameters {@link messageValues} binds: {@link MESSAGE_COLUMNS} and
 * `organization_id` (the last). Statements that number parameters after a message's count
 * from it.
 *
 * @category statements
 */
export const MESSAGE_VALUE_COUNT = MESSAGE_VALUE_TYPES.length

/**
 * `message` as appended to a chat: its fields with the chat's and the contact's uuids, the
 * record `chats.appendMessage` answers and announces. Every field is named in this one
 * object literal on purpose: `{ ...message, chat_uuid, contact_uuid }` (a spread followed by
 * keys the spread did not have) gave each record a hidden class of its own on Node 20's
 * V8, ~2 KB per message kept past young-generation collections, which a broadcast's start
 * paid for each of its recipients (docs/benchmarks.md "Broadcasts").
 *
 * @category rows
 */
export const messageInChat = (message: NewMessage, chatId: string, contactId: string): Message => ({
  uuid: message.uuid,
  chat_uuid: chatId as ChatId,
  contact_uuid: contactId as ContactId,
  direction: message.direction,
  type: message.type,
  text: message.text,
  template: message.template,
  media: message.media,
  content: message.content,
  status: message.status,
  provider_message_id: message.provider_message_id,
  failure: message.failure,
  channel_uuid: message.channel_uuid,
  transport: message.transport,
  attempts: message.attempts,
  next_attempt_at: message.next_attempt_at,
  broadcast_uuid: message.broadcast_uuid,
  reply_to: message.reply_to,
  reactions: message.reactions,
  created_at: message.created_at,
  updated_at: message.updated_at
})

/**
 * The parameters of an insert of {@link MESSAGE_COLUMNS} and `organization_id` for a
 * message of a chat and contact (JSON columns as text).
 *
 * @category parameters
 */
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
  message.transport,
  // A caller written before these fields (a plain-JS script) passes none: no reply, no reactions.
  message.reply_to ?? null,
  JSON.stringify(message.reactions ?? []),
  organizationId
]

/**
 * The message record of a row, for one dialect's values.
 *
 * @category decoders
 */
export const messageDecoderOf =
  ({ readJson }: SqlValues) =>
  (row: MessageRow): Message => ({
    uuid: row.uuid as MessageId,
    chat_uuid: row.chat_uuid as ChatId,
    contact_uuid: row.contact_uuid as ContactId,
    direction: row.direction as MessageDirection,
    type: row.type as MessageType,
    text: row.text,
    template: readJson(row.template) as Message["template"],
    media: readJson(row.media) as Message["media"],
    content: readJson(row.content) as Message["content"],
    status: row.status as MessageStatus,
    provider_message_id: row.provider_message_id,
    failure: readJson(row.failure) as Message["failure"],
    channel_uuid: row.channel_uuid,
    attempts: row.attempts,
    next_attempt_at: row.next_attempt_at,
    broadcast_uuid: row.broadcast_uuid,
    transport: row.transport as TransportKind | null,
    reply_to: row.reply_to,
    reactions: (readJson(row.reactions) ?? []) as Message["reactions"],
    created_at: row.created_at,
    updated_at: row.updated_at
  })

/**
 * The messages of an import entry whose identity (`key`, the engine's rule) is not in
 * `known` (which it extends), in order.
 *
 * @category parameters
 */
export const newMessages = (
  messages: ReadonlyArray<NewMessage>,
  known: Set<string>,
  key: (message: NewMessage) => string
): Array<NewMessage> =>
  messages.filter((message) => {
    const identity = key(message)
    if (known.has(identity)) return false
    known.add(identity)
    return true
  })

/**
 * The parameters of the insert of a provider's status report for a message not stored yet
 * (`pending_statuses`): organization, provider message id, status, the statuses it may
 * follow (JSON text), the failure (JSON text or `null`), when it arrived, until when it
 * waits.
 *
 * @category parameters
 */
export const pendingStatusValues = (
  organizationId: string,
  providerMessageId: string,
  update: ProviderStatusUpdate
): Array<string | null> => [
  organizationId,
  providerMessageId,
  update.status,
  JSON.stringify(update.from),
  jsonOrNull(update.failure),
  update.now,
  update.pendingUntil
]

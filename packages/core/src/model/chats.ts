import { Schema } from "effect"
import { ContactId } from "./contacts.js"
import { GroupId } from "./groups.js"
import { LabelId } from "./labels.js"
import {
  type InboundMessageType,
  type Message,
  type MessageContentFields,
  MessageDirection,
  MessageId,
  type MessageMediaContent,
  MessageStatus,
  type MessageTemplateContent,
  MessageType,
  type TransportKind
} from "./messages.js"

/**
 * Identifier of a chat.
 *
 * @category models
 */
export const ChatId = Schema.UUID.pipe(Schema.brand("ChatId"))
/** @category models */
export type ChatId = typeof ChatId.Type

/**
 * Status of a chat (docs/chats.md "Status transitions"). A chat starts `open`; the transition table is in
 * docs/chats.md: any status may move to any other through `Chats.setStatus`;
 * an inbound message on a `resolved` or `closed` chat sets it to `open`.
 *
 * @category models
 */
export const ChatStatus = Schema.Literal("open", "pending", "resolved", "closed")
/** @category models */
export type ChatStatus = typeof ChatStatus.Type

/** Every {@link ChatStatus}, in lifecycle order. @category models */
export const CHAT_STATUSES: ReadonlyArray<ChatStatus> = ChatStatus.literals

/**
 * The contact of a chat as embedded in the chat record (docs/chats.md "Records").
 *
 * @category models
 */
export const ChatContact = Schema.Struct({
  uuid: ContactId,
  first_name: Schema.NullOr(Schema.String),
  last_name: Schema.NullOr(Schema.String),
  phone: Schema.String
})
/** @category models */
export type ChatContact = typeof ChatContact.Type

/**
 * The newest message of a chat as embedded in the chat record (docs/chats.md "Records").
 *
 * @category models
 */
export const ChatLastMessage = Schema.Struct({
  uuid: MessageId,
  direction: MessageDirection,
  type: MessageType,
  text: Schema.NullOr(Schema.String),
  status: MessageStatus,
  created_at: Schema.String
})
/** @category models */
export type ChatLastMessage = typeof ChatLastMessage.Type

/**
 * A chat record (docs/chats.md "Records"): the conversation with one contact (one chat per
 * contact). `groups` and `labels` are the contact's, sorted by name. `unread` is
 * `unread_count > 0`. `last_message_at` is the `created_at` of the newest message and
 * `last_message` that message, both `null` for a chat without messages. Timestamps are ISO
 * 8601 UTC strings; `updated_at` changes whenever the record does (a message, a status,
 * an assignment, …).
 * `last_inbound_channel_uuid` is the channel the contact last wrote to (by the instant of
 * its customer service window) and `window_expires_at` the end of that channel's window
 * (24 hours after the contact's last inbound message through it), both `null` when the
 * contact never wrote through a channel (docs/messaging.md "The customer service window").
 *
 * @category models
 */
export const Chat = Schema.Struct({
  uuid: ChatId,
  contact: ChatContact,
  status: ChatStatus,
  assigned_to: Schema.NullOr(Schema.String),
  groups: Schema.Array(Schema.Struct({ uuid: GroupId, name: Schema.String })),
  labels: Schema.Array(Schema.Struct({ uuid: LabelId, name: Schema.String, color: Schema.String })),
  favorite: Schema.Boolean,
  unread: Schema.Boolean,
  unread_count: Schema.Int,
  last_message_at: Schema.NullOr(Schema.String),
  last_message: Schema.NullOr(ChatLastMessage),
  last_inbound_channel_uuid: Schema.NullOr(Schema.String),
  window_expires_at: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
})
/** @category models */
export type Chat = typeof Chat.Type

/**
 * The keys `GET /chats` sorts by (docs/chats.md "`GET /chats`"); default `last_message_at`.
 *
 * @category models
 */
export const ChatSortBy = Schema.Literal("created_at", "updated_at", "last_message_at")
/** @category models */
export type ChatSortBy = typeof ChatSortBy.Type

/**
 * Sort direction of `GET /chats` (docs/chats.md "`GET /chats`"); default `desc`.
 *
 * @category models
 */
export const ChatSortOrder = Schema.Literal("asc", "desc")
/** @category models */
export type ChatSortOrder = typeof ChatSortOrder.Type

/**
 * The parameters of the chat list as a client gives them (docs/chats.md "`GET /chats`"),
 * checked by
 * `Chats.list`; every bad one is an `InvalidInput` issue naming it.
 * - `search`: case-insensitive substring of first name, last name, full name, email, or
 *   (when it is made of digits and phone punctuation) of the phone's digits; ≤ 255
 *   characters; blank means no filter.
 * - `status`: one {@link ChatStatus}; `assigned_to`: a user id or `unassigned`.
 * - `group_uuid`, `tag_uuid`: comma-separated uuids (or an array), 1–100, match any.
 * - `favorite`, `unread`: booleans.
 * - `date_from`, `date_to`: ISO 8601 date (`2026-03-01`) or date-time (offset optional,
 *   UTC when absent), inclusive bounds of `last_message_at`; a bare `date_to` includes
 *   that whole UTC day.
 * - `sort_by`, `sort_order`: default `last_message_at`, `desc`.
 * - `pagination: true` → offset mode with `page` (≥ 1, default 1) and `per_page` (1–100,
 *   default 20); otherwise cursor mode with `limit` (1–100, default 20) and `cursor`.
 *
 * @category models
 */
export interface ChatListParams {
  readonly search?: string | undefined
  readonly status?: string | undefined
  readonly assigned_to?: string | undefined
  readonly group_uuid?: string | ReadonlyArray<string> | undefined
  readonly tag_uuid?: string | ReadonlyArray<string> | undefined
  readonly favorite?: boolean | undefined
  readonly unread?: boolean | undefined
  readonly date_from?: string | undefined
  readonly date_to?: string | undefined
  readonly sort_by?: string | undefined
  readonly sort_order?: string | undefined
  readonly pagination?: boolean | undefined
  readonly page?: number | undefined
  readonly per_page?: number | undefined
  readonly cursor?: string | undefined
  readonly limit?: number | undefined
}

/**
 * The `pagination` object of the chat list in offset mode (docs/chats.md "`GET /chats`").
 *
 * @category models
 */
export interface ChatOffsetPagination {
  readonly mode: "offset"
  readonly page: number
  readonly per_page: number
  readonly total: number
  readonly total_pages: number
}

/**
 * The `pagination` object of the chat list in cursor mode (docs/chats.md "`GET /chats`"):
 * `next_cursor` is opaque and `null` on the last page.
 *
 * @category models
 */
export interface ChatCursorPagination {
  readonly mode: "cursor"
  readonly limit: number
  readonly next_cursor: string | null
  readonly has_more: boolean
}

/**
 * One page of the chat list: the `data` of `GET /chats`.
 *
 * @category models
 */
export interface ChatList {
  readonly chats: ReadonlyArray<Chat>
  readonly pagination: ChatOffsetPagination | ChatCursorPagination
}

/**
 * The parameters of a chat's messages (`GET /chats/{uuid}/messages`), checked by
 * `Chats.listMessages`: `limit` 1–100 (default 20) and `cursor`, the `next_cursor` of the
 * previous page of the same chat's messages.
 *
 * @category models
 */
export interface MessageListParams {
  readonly limit?: number | undefined
  readonly cursor?: string | undefined
}

/**
 * One page of a chat's messages, newest first: the `data` of `GET /chats/{uuid}/messages`.
 *
 * @category models
 */
export interface MessageList {
  readonly messages: ReadonlyArray<Message>
  readonly pagination: ChatCursorPagination
}

/**
 * An inbound message as a provider webhook reports it, input of `Chats.receiveInbound`
 * (docs/chats.md "Message types"):
 * - `phone`: the sender's phone (normalised to E.164);
 * - `type`: `text`, `image`, `audio`, `video`, `document`, `sticker`, `location`,
 *   `contacts`, `interactive`, `button`, `reaction` or `unsupported`;
 * - `text`: required for `text` (1–4096 characters); for the other types the text a
 *   person reads (a caption, a button's title, an emoji), optional, cut to 4096;
 * - `media`: required for the media types `{type (the message's type), id (the provider's
 *   media id, 1–255), mime_type?, caption?, filename?}`, refused for the others;
 * - `content`: the type's other fields as a JSON object (location, contacts, the reply,
 *   the provider's timestamp…), optional;
 * - `provider_message_id`: the provider's id, used to drop a redelivered webhook;
 * - `first_name`, `last_name`: the sender's names, used only when the contact is new;
 * - `channel_uuid`: the channel (business number) the message came in through.
 *
 * @category models
 */
export interface InboundMessageInput {
  readonly phone: string
  readonly type: InboundMessageType
  readonly text?: string | null | undefined
  readonly media?: MessageMediaContent | null | undefined
  readonly content?: MessageContentFields | null | undefined
  readonly provider_message_id?: string | undefined
  readonly first_name?: string | null | undefined
  readonly last_name?: string | null | undefined
  readonly channel_uuid?: string | null | undefined
  /**
   * For a media message through a channel (docs/media.md "Inbound"): the SHA-256 the
   * provider declared (base64 or hex, or `null`), and `too_large` when the provider refused
   * the file (Meta's 131052: then `media.id` may be absent). With it, the message's media
   * gets a media record, `pending` with a fetch job, or `failed` `too_large`.
   */
  readonly media_fetch?: { readonly declared_sha256: string | null; readonly too_large: boolean } | undefined
}

/**
 * An outbound message to append, input of `Chats.appendOutbound`: `text`
 * (1–4096 characters), a `template` send object, `media`, or an `interactive` message
 * (`text` its body, `content.interactive` its object, docs/messaging.md "Interactive
 * messages"), or a business `reaction` (`content.reaction`, written by `Messaging.react`);
 * `provider_message_id` when the provider already answered; `uuid` when the caller chose the message's uuid (a send
 * under an Idempotency-Key, docs/messaging.md "Idempotency-Key"), else a fresh one.
 *
 * @category models
 */
export interface OutboundMessageInput {
  /** The message's uuid, chosen by the caller; absent: a fresh one. */
  readonly uuid?: MessageId | undefined
  readonly type: "text" | "template" | "media" | "interactive" | "reaction"
  readonly text?: string | undefined
  readonly template?: MessageTemplateContent | undefined
  readonly media?: MessageMediaContent | undefined
  /** An `interactive` message's `{interactive}` (its object, as the send read it); a `reaction`'s `{reaction}`. */
  readonly content?: MessageContentFields | undefined
  readonly provider_message_id?: string | undefined
  /** The channel the message goes out through, `null` or absent when none. */
  readonly channel_uuid?: string | null | undefined
  /** The transport the message is handed to (`MessageTransportService.kind`), `null` or absent when none. */
  readonly transport?: TransportKind | null | undefined
}

/**
 * Result of `Chats.receiveInbound`: the chat after the message, the message,
 * whether the contact and the chat were created, and whether the message was a duplicate
 * (same `provider_message_id` already received: nothing changed, the stored message is
 * returned).
 *
 * @category models
 */
export interface InboundReceipt {
  readonly chat: Chat
  readonly message: Message
  readonly contact_created: boolean
  readonly chat_created: boolean
  readonly duplicate: boolean
}

/**
 * Result of `Chats.appendOutbound`: the chat after the message, the message
 * (status `queued`) and whether the chat was created. `duplicate`: a message with the
 * caller's `uuid` was stored already (a send under an Idempotency-Key whose claim was
 * taken over, the other attempt writing first: docs/messaging.md "Idempotency-Key"); then
 * `message` is that message and `chat` its chat, as stored, and nothing was written.
 *
 * @category models
 */
export interface OutboundAppend {
  readonly chat: Chat
  readonly message: Message
  readonly chat_created: boolean
  readonly duplicate: boolean
}

/**
 * Input of `Chats.update` (`PUT /chats/{uuid}`, docs/chats.md "Inbox routes"): any of
 * `status`, `assigned_to` (a user id, or `null` to unassign) and `favorite`; absent fields
 * are kept.
 *
 * @category models
 */
export interface ChatUpdateInput {
  readonly status?: ChatStatus
  readonly assigned_to?: string | null
  readonly favorite?: boolean
}

/**
 * The text `search` is matched against (docs/chats.md "`GET /chats`"): first name,
 * last name, full name (`first last`), email and the phone's digits, one per line (a term
 * never holds a line break, so no match spans two fields). SQLite keeps the same text in
 * `chats.search_text` (migration 4, `SEARCH_TEXT_SQL`).
 *
 * @category storage
 */
export const chatSearchText = (contact: {
  readonly first_name: string | null
  readonly last_name: string | null
  readonly email: string | null
  readonly phone: string
}): string => {
  const first = contact.first_name ?? ""
  const last = contact.last_name ?? ""
  return [first, last, `${first} ${last}`.trim(), contact.email ?? "", contact.phone.replace(/\D/g, "")].join("\n")
}

/**
 * Whether a {@link chatSearchText} matches a normalised (lowercase) search term:
 * case-insensitive substring, with JavaScript's Unicode lowercasing.
 *
 * @category storage
 */
export const chatSearchMatches = (text: string, term: string): boolean => text.toLowerCase().includes(term)

import type { Chat, ChatId, InboundReceipt } from "./chats.js"
import type { ContactId } from "./contacts.js"
import type { InteractiveContent } from "./interactive.js"
import type { Message, MessageFailure, MessageId, OutboundMediaContent, MessageStatus, TransportKind } from "./messages.js"
import type { TemplateSendRequest } from "./templates.js"

/**
 * The contact fields a send may carry (`POST /send/template`, docs/messaging.md "Endpoints"):
 * they update the contact like a partial `PUT /contacts/{uuid}` — fields left out are
 * kept, `null` (or `""`) clears `last_name` or `email`; `first_name` cannot be cleared.
 *
 * @category models
 */
export interface SendContactFields {
  readonly first_name?: string | undefined
  readonly last_name?: string | null | undefined
  readonly email?: string | null | undefined
}

/**
 * The channel a send goes out through (docs/messaging.md "Channels"): `channel_uuid`, one
 * of the organization's channels (`RecordNotFound` otherwise). Without it: the channel
 * the contact last wrote to, else the organization's default (its first channel), else
 * no channel (the deployment's transport).
 *
 * @category models
 */
export interface SendChannelField {
  readonly channel_uuid?: string | undefined
}

/**
 * When a send leaves (docs/messaging.md "Scheduled sends"): `send_at`, an RFC 3339
 * date-time with an offset, at most {@link MAX_SEND_AT_AHEAD_MS} ahead (else a 400 naming
 * it); absent or not in the future: now. A later one stores the message `scheduled` until
 * then, whatever the customer service window at the request.
 *
 * @category models
 */
export interface SendAtField {
  readonly send_at?: string | undefined
}

/**
 * How far ahead a send's `send_at` may lie: 30 days, in milliseconds.
 *
 * @category models
 */
export const MAX_SEND_AT_AHEAD_MS = 30 * 86_400_000

/**
 * Input of `Messaging.sendTemplate` (`POST /send/template`, docs/messaging.md): the recipient's
 * `phone` (any format libphonenumber-js reads; stored in E.164), the `template` object
 * `{name, language: {code}, components}` built from `GET /templates/{uuid}/payload` with
 * every slot filled, and optional contact fields.
 *
 * @category models
 */
export interface SendTemplateInput extends SendContactFields, SendChannelField, SendAtField {
  readonly phone: string
  readonly template: TemplateSendRequest
}

/**
 * Input of `Messaging.sendText` (`POST /send`, docs/messaging.md): `message`
 * is 1–4096 characters, not blank, sent as written (not trimmed).
 *
 * @category models
 */
export interface SendTextInput extends SendChannelField, SendAtField {
  readonly phone: string
  readonly message: string
}

/**
 * Input of `Messaging.sendMedia` (`POST /send/media`, docs/messaging.md):
 * `media.type` image, video, audio or document; `media.url` an http(s) URL of at most
 * 2048 characters; `caption` (≤ 1024) and `filename` (≤ 255) optional.
 *
 * @category models
 */
export interface SendMediaInput extends SendChannelField, SendAtField {
  readonly phone: string
  readonly media: OutboundMediaContent
}

/**
 * Input of `Messaging.sendInteractive` (`POST /send/interactive`, docs/messaging.md
 * "Interactive messages"): `interactive` is Meta's own object, a `button`, `list` or
 * `cta_url` message ({@link InteractiveContent}); a media header may name a stored file by
 * `media_uuid`.
 *
 * @category models
 */
export interface SendInteractiveInput extends SendChannelField, SendAtField {
  readonly phone: string
  readonly interactive: InteractiveContent
}

/**
 * Options of a send (`Messaging.sendTemplate`, `sendText`, `sendMedia`, `sendInteractive`): `messageUuid`, the
 * uuid the created message gets — the one an Idempotency-Key's claim holds
 * (docs/messaging.md "Idempotency-Key"). When a message of the organization already has
 * it (the first attempt of the request created it, then its process died), the send,
 * once its input is validated, writes and sends nothing: it answers that message as it
 * now stands (possibly still `queued` or `sending`). Absent: a fresh uuid.
 *
 * @category models
 */
export interface SendOptions {
  readonly messageUuid?: MessageId | undefined
}

/**
 * The result of a send, the `data` of the three send routes (docs/messaging.md "Endpoints"):
 * `message_id` is the message record's uuid, `status` the status its first attempt left
 * it in — `sent` (with Meta's `provider_message_id`) when accepted, `failed` (with
 * `failure`) when refused for good, `scheduled` when it has a `send_at` ahead (it leaves
 * then: `next_attempt_at`), `queued` when the send queue will try it (at
 * `next_attempt_at`: a throttle, a transient failure, or no room to send it at once), or
 * `sending` when the attempt's outcome is unknown (settled by Meta's status notification,
 * else retried at `next_attempt_at`; docs/messaging.md "The send queue"). `transport` is
 * the transport the message was handed to, as stored on the message at its creation:
 * `recording` (no channel: nothing left the server, though `status` is `sent`), `whatsapp`
 * or `custom` (docs/messaging.md "Transports").
 *
 * @category models
 */
export interface SendResult {
  readonly message_id: MessageId
  readonly chat_uuid: ChatId
  readonly contact_uuid: ContactId
  readonly status: MessageStatus
  readonly provider_message_id: string | null
  readonly next_attempt_at: string | null
  readonly failure: MessageFailure | null
  readonly transport: TransportKind
}

/**
 * Result of `Messaging.receive`: the inbound receipt of `Chats.receiveInbound`, and the
 * automatic reply sent because the message matched a basic reply's trigger (issue 4
 * "Auto-reply"), or `null` when none was sent.
 *
 * @category models
 */
export interface ReceiveResult extends InboundReceipt {
  readonly auto_reply: SendResult | null
}

/**
 * Input of `Messaging.react` (`POST /messages/{uuid}/reaction`, docs/messaging.md
 * "Reactions"): `emoji`, one emoji (`validReactionEmoji`), or `""` to take the business's
 * reaction back.
 *
 * @category models
 */
export interface ReactInput {
  readonly emoji?: unknown
}

/**
 * The result of `Messaging.react` (`POST /messages/{uuid}/reaction`): `message` is the
 * message reacted to, as stored after the attempt (its `reactions` show the business's
 * reaction once the provider accepted it), `reaction` the send result of the reaction row
 * the send queue carries (`sent`, `queued`, `sending` or `failed` as for any send).
 *
 * @category models
 */
export interface ReactResult {
  readonly message: Message
  readonly reaction: SendResult
}

/**
 * Input of `Messaging.markChatRead` (`POST /chats/{uuid}/read`, docs/chats.md "Read
 * receipts"): `typing` (default `false`) also shows the contact a typing indicator.
 *
 * @category models
 */
export interface MarkChatReadInput {
  readonly typing?: boolean | undefined
}

/**
 * Why a read receipt was not sent (docs/chats.md "Read receipts"):
 * - `no_inbound_message`: the chat has no inbound message (reactions do not count);
 * - `already_read`: its latest inbound message is already `read` (the provider was told);
 * - `no_provider_id`: that message has no provider id (imported, or received without one);
 * - `no_channel`: it came in through no channel;
 * - `channel_removed`: its channel was removed since;
 * - `transport_unsupported`: the transport sends no read receipts for it (the recording
 *   transport, a custom transport without `markRead`).
 *
 * @category models
 */
export type ReadReceiptSkipReason =
  | "no_inbound_message"
  | "already_read"
  | "no_provider_id"
  | "no_channel"
  | "channel_removed"
  | "transport_unsupported"

/**
 * What became of the read receipt of `POST /chats/{uuid}/read` (docs/chats.md "Read
 * receipts"):
 * - `status`: `sent` (the provider accepted it), `skipped` (nothing to send, see `reason`)
 *   or `failed` (the provider refused, or could not be reached twice: see `failure`);
 * - `message_uuid`: the latest inbound message it is about, `null` when the chat has none;
 * - `reason`: why it was `skipped`, else `null`;
 * - `failure`: `{code, title}` when `failed` (Meta's error code, `network_error`, or the
 *   channel's token problem), else `null`.
 *
 * @category models
 */
export interface ReadReceipt {
  readonly status: "sent" | "skipped" | "failed"
  readonly message_uuid: MessageId | null
  readonly reason: ReadReceiptSkipReason | null
  readonly failure: MessageFailure | null
}

/**
 * The answer of `Messaging.markChatRead`: the chat as it now is (`unread_count` 0,
 * `unread` false) and its {@link ReadReceipt}.
 *
 * @category models
 */
export type ChatReadResult = Chat & { readonly read_receipt: ReadReceipt }

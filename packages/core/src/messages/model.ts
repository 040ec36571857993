import { Schema } from "effect"
import { ContactId } from "../contacts/model.js"

/**
 * Identifier of a message; over HTTP, a send's `message_id` (docs/messaging.md "Endpoints").
 *
 * @category models
 */
export const MessageId = Schema.UUID.pipe(Schema.brand("MessageId"))
/** @category models */
export type MessageId = typeof MessageId.Type

/**
 * Who wrote a message: the contact (`inbound`) or the organization (`outbound`), docs/chats.md
 * "Records".
 *
 * @category models
 */
export const MessageDirection = Schema.Literal("inbound", "outbound")
/** @category models */
export type MessageDirection = typeof MessageDirection.Type

/**
 * What a message carries: `text`, a `template` (the send object of
 * `POST /send/template`) or `media` (docs/messaging.md "Endpoints").
 *
 * @category models
 */
export const MessageType = Schema.Literal("text", "template", "media")
/** @category models */
export type MessageType = typeof MessageType.Type

/**
 * Delivery status of a message (docs/chats.md "Message statuses"). An outbound message starts `queued`;
 * an inbound one is recorded `delivered` (it reached us). Status only moves forward, see
 * {@link MESSAGE_STATUS_PREDECESSORS}.
 *
 * @category models
 */
export const MessageStatus = Schema.Literal("queued", "sent", "delivered", "read", "failed")
/** @category models */
export type MessageStatus = typeof MessageStatus.Type

/**
 * The statuses a message may move to each status from (docs/chats.md "Message statuses"):
 * `queued → sent → delivered → read`, skipping steps allowed (a provider may report `read`
 * first); `failed` only from `queued` or `sent`. Nothing leaves `read` or `failed`. An
 * update from any other status is ignored, so provider callbacks arriving out of order
 * never move a message back.
 *
 * @category models
 */
export const MESSAGE_STATUS_PREDECESSORS: { readonly [S in MessageStatus]: ReadonlyArray<MessageStatus> } = {
  queued: [],
  sent: ["queued"],
  delivered: ["queued", "sent"],
  read: ["queued", "sent", "delivered"],
  failed: ["queued", "sent"]
}

/**
 * The template of a `template` message: the send object `{name, language: {code},
 * components}` of `POST /send/template` (docs/messaging.md), stored as given.
 *
 * @category models
 */
export const MessageTemplateContent = Schema.Struct({
  name: Schema.String,
  language: Schema.Struct({ code: Schema.String }),
  components: Schema.Array(Schema.Unknown)
})
/** @category models */
export type MessageTemplateContent = typeof MessageTemplateContent.Type

/**
 * The media of a `media` message (docs/messaging.md): `type` image, video,
 * audio or document; `url` an http(s) URL; `caption` and `filename` optional.
 *
 * @category models
 */
export const MessageMediaContent = Schema.Struct({
  type: Schema.Literal("image", "video", "audio", "document"),
  url: Schema.String,
  caption: Schema.optional(Schema.String),
  filename: Schema.optional(Schema.String)
})
/** @category models */
export type MessageMediaContent = typeof MessageMediaContent.Type

/**
 * What a message says, by `type`; the fields of the other types are `null` in the record.
 *
 * @category models
 */
export type MessageContent =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "template"; readonly template: MessageTemplateContent }
  | { readonly type: "media"; readonly media: MessageMediaContent }

/**
 * A message record (docs/messaging.md "Message records"): one entry of a chat. `text` is the text of a
 * `text` message or the caption of a `media` one, else `null`; `template` and `media` are
 * set for their type only. `provider_message_id` is the messaging provider's id once known
 * (it deduplicates inbound messages). Timestamps are ISO 8601 UTC strings.
 *
 * @category models
 */
export const Message = Schema.Struct({
  uuid: MessageId,
  // The brand of chats/model.ts's ChatId (same key, so the types are one); not imported
  // from there because chats/model.ts builds its schemas from this module's.
  chat_uuid: Schema.UUID.pipe(Schema.brand("ChatId")),
  contact_uuid: ContactId,
  direction: MessageDirection,
  type: MessageType,
  text: Schema.NullOr(Schema.String),
  template: Schema.NullOr(MessageTemplateContent),
  media: Schema.NullOr(MessageMediaContent),
  status: MessageStatus,
  provider_message_id: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
})
/** @category models */
export type Message = typeof Message.Type

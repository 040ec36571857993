import { Schema } from "effect"
import { ContactId } from "./contacts.js"
import { MediaFailure, MediaStatus, MediaType } from "./media.js"

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
 * What a message carries (docs/chats.md "Message types"). Outbound messages are `text`, a
 * `template` (the send object of `POST /send/template`), `media` or `interactive` (reply
 * buttons, a list, a call-to-action URL: `content.interactive`). Inbound messages are
 * `text`, or one of WhatsApp's other message types: `image`, `audio`, `video`, `document`,
 * `sticker` (with `media`), `location`, `contacts`, `interactive` (a button or list reply),
 * `button` (a quick-reply button), `reaction` (with `content`), and `unsupported` for any
 * type not listed (its original type kept in `content`).
 *
 * @category models
 */
export const MessageType = Schema.Literal(
  "text",
  "template",
  "media",
  "image",
  "audio",
  "video",
  "document",
  "sticker",
  "location",
  "contacts",
  "interactive",
  "button",
  "reaction",
  "unsupported"
)
/** @category models */
export type MessageType = typeof MessageType.Type

/** Every {@link MessageType}, in declaration order. @category models */
export const MESSAGE_TYPES: ReadonlyArray<MessageType> = MessageType.literals

/**
 * The types an inbound message may have: every {@link MessageType} but the outbound-only
 * `template` and `media`.
 *
 * @category models
 */
export type InboundMessageType = Exclude<MessageType, "template" | "media">

/** Every {@link InboundMessageType}, in declaration order. @category models */
export const INBOUND_MESSAGE_TYPES: ReadonlyArray<InboundMessageType> = MESSAGE_TYPES.filter(
  (type): type is InboundMessageType => type !== "template" && type !== "media"
)

/**
 * Delivery status of a message (docs/chats.md "Message statuses", docs/messaging.md "The
 * send queue"). An outbound message is `scheduled` (a send with `send_at` ahead: it waits
 * for that time outside its lane, docs/messaging.md "Scheduled sends"), `queued` (waiting
 * in the send queue: new, retrying, throttled, or its channel paused) or `sending` (claimed
 * by a dispatcher: a request to the provider may be in flight), then `sent` → `delivered` →
 * `read`, or `failed`; an inbound one is recorded `delivered` (it reached us). Provider
 * reports only move a status forward ({@link MESSAGE_STATUS_PREDECESSORS}); the send queue
 * alone moves `scheduled` → `queued` ⇄ `sending`.
 *
 * @category models
 */
export const MessageStatus = Schema.Literal("scheduled", "queued", "sending", "sent", "delivered", "read", "failed")
/** @category models */
export type MessageStatus = typeof MessageStatus.Type

/**
 * The statuses a provider report may move a message to each status from (docs/chats.md
 * "Message statuses"): `queued`/`sending` → `sent` → `delivered` → `read`, skipping steps
 * allowed (a provider may report `read` first); `failed` only from `queued`, `sending` or
 * `sent`. Nothing leaves `read` or `failed`, and nothing reported moves a message to or
 * from `scheduled`, or to `queued` or `sending` (the send queue's own moves, `OutboxRepository`). An update from
 * any other status is ignored, so provider callbacks arriving out of order never move a
 * message back.
 *
 * @category models
 */
export const MESSAGE_STATUS_PREDECESSORS: { readonly [S in MessageStatus]: ReadonlyArray<MessageStatus> } = {
  scheduled: [],
  queued: [],
  sending: [],
  sent: ["queued", "sending"],
  delivered: ["queued", "sending", "sent"],
  read: ["queued", "sending", "sent", "delivered"],
  failed: ["queued", "sending", "sent"]
}

/**
 * How long a status the provider reported for a provider message id no message has yet is
 * kept, waiting for the send to record that id (the provider can be faster than our
 * write): 10 minutes, in milliseconds (docs/whatsapp-webhooks.md "Statuses").
 *
 * @category models
 */
export const PENDING_STATUS_TTL_MS = 600_000

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
 * The media of a message record (docs/chats.md "Records"): `type` image, video, audio,
 * document or sticker; an outbound `media` message has the http(s) `url` it was sent
 * with, an inbound media message the provider's media `id` and `mime_type` (no URL);
 * `caption` and `filename` when given. `media_uuid` names the media record Switchboard
 * keeps of the file (docs/media.md): an inbound file's, with its `status` and `failure`
 * kept in step with the record's, or the stored file an outbound message was sent with.
 *
 * @category models
 */
export const MessageMediaContent = Schema.Struct({
  type: MediaType,
  id: Schema.optional(Schema.String),
  url: Schema.optional(Schema.String),
  mime_type: Schema.optional(Schema.String),
  caption: Schema.optional(Schema.String),
  filename: Schema.optional(Schema.String),
  media_uuid: Schema.optional(Schema.String),
  status: Schema.optional(MediaStatus),
  failure: Schema.optional(Schema.NullOr(MediaFailure))
})
/** @category models */
export type MessageMediaContent = typeof MessageMediaContent.Type

/**
 * The media of an outbound `media` message, as a send gives it (`POST /send/media`):
 * `type` image, video, audio or document, an http(s) `url` or the `media_uuid` of a stored
 * file (docs/media.md "Sending a stored file"; its `mime_type` then), `caption` and
 * `filename` optional. A {@link MessageMediaContent}.
 *
 * @category models
 */
export type OutboundMediaContent = {
  readonly type: "image" | "video" | "audio" | "document"
  readonly caption?: string
  readonly filename?: string
} & (
  | { readonly url: string; readonly media_uuid?: undefined; readonly mime_type?: undefined }
  | { readonly media_uuid: string; readonly mime_type?: string; readonly url?: undefined }
)

/**
 * The fields of an inbound message that `text`, `template` and `media` do not hold
 * (docs/chats.md "Records"): a free-form JSON object stored as given — for example a
 * location `{latitude, longitude, name?, address?}`, a reaction `{message_id, emoji}`,
 * the provider's own timestamp — or `null`.
 *
 * @category models
 */
export const MessageContentFields = Schema.Record({ key: Schema.String, value: Schema.Unknown })
/** @category models */
export type MessageContentFields = typeof MessageContentFields.Type

/**
 * Why the provider refused a message (docs/messaging.md "Failure reasons"): `code` is the
 * provider's error code (as a string), or `network_error` when the provider could not be
 * reached or gave no code; `title` is its reason.
 *
 * @category models
 */
export const MessageFailure = Schema.Struct({ code: Schema.String, title: Schema.String })
/** @category models */
export type MessageFailure = typeof MessageFailure.Type

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
 * Which transport a message was handed to (docs/messaging.md "Transports"), as the
 * message record and a send's answer say it (`transport`):
 * - `recording`: the recording transport, used when a send has no channel: the message is
 *   stored and marked `sent`, nothing leaves the server;
 * - `whatsapp`: the WhatsApp Cloud API, through the channel's number;
 * - `custom`: a transport of the host's own (one that does not say its kind).
 * A transport says its kind with `MessageTransportService.kind`.
 *
 * @category models
 */
export const TransportKind = Schema.Literal("recording", "whatsapp", "custom").annotations({
  description:
    "The transport the message was handed to: `recording` (no channel: stored and marked sent, nothing left the server), " +
    "`whatsapp` (the WhatsApp Cloud API, through the channel) or `custom` (the host's own transport)"
})
/** @category models */
export type TransportKind = typeof TransportKind.Type

/**
 * Who reacted to a message: the organization (`business`, through `POST
 * /messages/{uuid}/reaction`) or the customer (`contact`).
 *
 * @category models
 */
export const MessageReactionParty = Schema.Literal("business", "contact")
/** @category models */
export type MessageReactionParty = typeof MessageReactionParty.Type

/**
 * One reaction on a message (docs/messaging.md "Reactions"): the `emoji`, who reacted
 * (`by`) and when (`at`, an ISO 8601 UTC instant). A party has at most one reaction on a
 * message: a later one replaces it, an empty emoji removes it.
 *
 * @category models
 */
export const MessageReaction = Schema.Struct({
  emoji: Schema.String,
  by: MessageReactionParty,
  at: Schema.String
})
/** @category models */
export type MessageReaction = typeof MessageReaction.Type

/**
 * A message record (docs/chats.md "Records"): one entry of a chat. `text` is the text of a
 * `text` message or the caption of a media one, else `null`; `template` and `media` are
 * set for their types only; `content` holds the other inbound types' fields and an
 * outbound `interactive` message's object (`{interactive}`), else `null`.
 * `provider_message_id` is the messaging provider's id once known (it deduplicates inbound
 * messages). `failure` is the provider's refusal of a `failed` message, else `null`.
 * `channel_uuid` is the channel (business number) the message went through, `null` when
 * none. `transport` is the {@link TransportKind} an outbound message was handed to, set at
 * its creation (`null` for inbound and imported messages). `attempts` counts the send queue's attempts that count toward its retry schedule
 * (docs/messaging.md "The send queue"; 0 for inbound and imported messages),
 * `next_attempt_at` is when the queue tries a `queued` or `sending` message next (else
 * `null`), `broadcast_uuid` the broadcast a message belongs to (else `null`). `reply_to`
 * is the uuid of the organization's message an inbound message replies to (a button or
 * list reply, a quoted reply: WhatsApp's `context.id`), resolved when it was received,
 * `null` when it replies to none or to a message the organization does not have.
 * `reactions` are the reactions on the message ({@link MessageReaction}, at most one per
 * party; `[]` when none). Timestamps are ISO 8601 UTC strings.
 *
 * @category models
 */
export const Message = Schema.Struct({
  uuid: MessageId,
  // The brand of model/chats.ts's ChatId (same key, so the types are one); not imported
  // from there because model/chats.ts builds its schemas from this module's.
  chat_uuid: Schema.UUID.pipe(Schema.brand("ChatId")),
  contact_uuid: ContactId,
  direction: MessageDirection,
  type: MessageType,
  text: Schema.NullOr(Schema.String),
  template: Schema.NullOr(MessageTemplateContent),
  media: Schema.NullOr(MessageMediaContent),
  content: Schema.NullOr(MessageContentFields),
  status: MessageStatus,
  provider_message_id: Schema.NullOr(Schema.String),
  failure: Schema.NullOr(MessageFailure),
  channel_uuid: Schema.NullOr(Schema.UUID),
  transport: Schema.NullOr(TransportKind),
  attempts: Schema.Int,
  next_attempt_at: Schema.NullOr(Schema.String),
  broadcast_uuid: Schema.NullOr(Schema.UUID),
  reply_to: Schema.NullOr(Schema.UUID),
  reactions: Schema.Array(MessageReaction),
  created_at: Schema.String,
  updated_at: Schema.String
})
/** @category models */
export type Message = typeof Message.Type

/**
 * Whether messages of this type are listed as messages of their own: every type but
 * `reaction`. A reaction row (inbound, or an outbound reaction of the send queue) is kept,
 * but no message list or total counts it, it is never a chat's `last_message`, never moves
 * the chat in the list, never counts as unread and no change of its status is announced
 * (`message.status_updated`): its emoji shows in its target's `reactions`, announced by
 * `message.reactions_updated` (docs/messaging.md "Reactions").
 *
 * @category models
 */
export const listedMessageType = (type: MessageType): boolean => type !== "reaction"

/**
 * Whether `emoji` may be sent as a reaction (docs/messaging.md "Reactions"): one emoji, a
 * single grapheme matching Unicode's `RGI_Emoji` property of strings (`/^\p{RGI_Emoji}$/v`:
 * a flag, a skin tone or a ZWJ sequence counts as one), or `""`, which removes the
 * reaction. Meta refuses anything else (131009).
 *
 * @category models
 */
export const validReactionEmoji = (emoji: string): boolean => emoji === "" || REACTION_EMOJI.test(emoji)

/**
 * The business's reaction an outbound `reaction` row carries (`content.reaction`, written
 * by `Messaging.react`): the provider id of the message reacted to (`message_id`), the
 * `emoji` (`""` removes) and the uuid of that message (`target_uuid`); `undefined` for any
 * other message. The stores fold it into its target when the row is recorded sent.
 *
 * @category models
 */
export const outboundReactionOf = (
  message: Pick<Message, "type" | "direction" | "content">
): { readonly message_id: string; readonly emoji: string; readonly target_uuid: string } | undefined => {
  if (message.type !== "reaction" || message.direction !== "outbound") return undefined
  const reaction: unknown = message.content?.reaction
  if (typeof reaction !== "object" || reaction === null) return undefined
  const { message_id, emoji, target_uuid } = reaction as Record<string, unknown>
  return typeof message_id === "string" && typeof emoji === "string" && typeof target_uuid === "string"
    ? { message_id, emoji, target_uuid }
    : undefined
}

/** One RGI emoji, the whole string (the `v` flag, ES2024, built at run time for an ES2022 target). */
const REACTION_EMOJI = new RegExp("^\\p{RGI_Emoji}$", "v")

/**
 * A message's `reactions` after `party` reacted with `emoji` at `at`: the party's earlier
 * reaction is replaced, or removed when `emoji` is `""` (docs/messaging.md "Reactions");
 * the very array given when nothing changes: the party's stored reaction is newer than
 * `at` (a reaction delivered out of order), or a removal finds none.
 * Pure: every store applies it alike.
 *
 * @category models
 */
export const withReaction = (
  reactions: ReadonlyArray<MessageReaction>,
  party: MessageReactionParty,
  emoji: string,
  at: string
): ReadonlyArray<MessageReaction> => {
  const earlier = reactions.find((reaction) => reaction.by === party)
  if ((earlier !== undefined && earlier.at > at) || (earlier === undefined && emoji === "")) return reactions
  const others = reactions.filter((reaction) => reaction.by !== party)
  return emoji === "" ? others : [...others, { emoji, by: party, at }]
}

/**
 * The `failure` of a waiting message whose channel was deleted (`ChannelRepository.delete`).
 *
 * @category storage
 */
export const CHANNEL_REMOVED_FAILURE: MessageFailure = {
  code: "channel_removed",
  title: "The channel was removed before the message was sent"
}

/** The `failure` of a recipient whose broadcast was cancelled before it was sent. @category storage */
export const BROADCAST_CANCELLED_FAILURE: MessageFailure = {
  code: "cancelled",
  title: "The broadcast was cancelled before this message was sent"
}

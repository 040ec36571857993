import { randomUUID } from "node:crypto"
import type { Readable } from "node:stream"
import { Context, Effect, Layer, Schema } from "effect"
import { FailureKind } from "../model/failureClasses.js"
import type { InteractiveContent, InteractiveMediaReference } from "../model/interactive.js"
import type { TransportKind } from "../model/messages.js"

/**
 * The channel (an organization's own WhatsApp number, docs/channels.md) a message goes
 * out through: its uuid, Meta's `phone_number_id` and the decrypted access token. The
 * token is a secret: a transport uses it for the request and never logs or returns it.
 *
 * @category messaging
 */
export interface OutboundChannel {
  readonly uuid: string
  readonly phone_number_id: string
  readonly access_token: string
}

/** What every {@link OutboundMessage} carries besides its content. */
interface OutboundEnvelope {
  readonly message_id: string
  readonly to: string
  readonly channel: OutboundChannel | null
}

/**
 * What a transport is asked to deliver: one outbound message to an E.164 phone.
 * - `text`: `{type: "text", text}` (≤ 4096 characters);
 * - `template`: `{type: "template", template: {name, language: {code}, components}}`, the
 *   send object of `POST /send/template` (docs/messaging.md);
 * - `media`: `{type: "media", media: {type: image|video|audio|document, url or id, caption?, filename?}}`
 *   (`id`: the provider's media id of an uploaded file, docs/media.md "Sending a stored file");
 * - `interactive`: `{type: "interactive", interactive}`, Meta's interactive object (reply
 *   buttons, a list, a call-to-action URL: docs/messaging.md "Interactive messages"), a
 *   media header by `link` or by the provider's media `id` of the uploaded stored file.
 *   Handed only to a transport that lists it in `messageTypes`.
 * - `reaction`: `{type: "reaction", reaction: {message_id, emoji}}`, the business's reaction
 *   to the message the provider knows as `message_id` (its `wamid`); `emoji` one emoji, or
 *   `""` to remove the reaction (docs/messaging.md "Reactions"). Handed only to a
 *   transport that lists it in `messageTypes`.
 * `message_id` is the message record's uuid, for correlation (the WhatsApp Cloud API
 * transport sends it as `biz_opaque_callback_data`, echoed in Meta's status notifications). `channel` is the
 * organization's channel to send through (docs/messaging.md "Channels"), or `null` when
 * the organization has none: then the transport's own configuration applies.
 *
 * @category messaging
 */
export type OutboundMessage = OutboundEnvelope &
  (
    | { readonly type: "text"; readonly text: string }
    | {
        readonly type: "template"
        readonly template: {
          readonly name: string
          readonly language: { readonly code: string }
          readonly components: ReadonlyArray<unknown>
        }
      }
    | {
        readonly type: "media"
        readonly media: {
          readonly type: "image" | "video" | "audio" | "document"
          readonly caption?: string | undefined
          readonly filename?: string | undefined
        } & ({ readonly url: string; readonly id?: undefined } | { readonly id: string; readonly url?: undefined })
      }
    | { readonly type: "interactive"; readonly interactive: InteractiveContent<InteractiveMediaReference> }
    | { readonly type: "reaction"; readonly reaction: { readonly message_id: string; readonly emoji: string } }
  )

/**
 * The {@link OutboundMessage} types a transport is handed only when it lists them in
 * `MessageTransportService.messageTypes` (types added after `text`, `template` and
 * `media`, which every transport sends): a transport written before them fails such a
 * message for good (`message_type_unsupported`) instead of being handed a shape it does
 * not know.
 *
 * @category messaging
 */
export type ExtendedMessageType = "interactive" | "reaction"

/**
 * What the provider said: its message id and the status to record (`sent` when accepted).
 *
 * @category messaging
 */
export interface TransportReceipt {
  readonly provider_message_id: string | null
  readonly status: "sent"
}

/**
 * The provider refused or could not be reached. The message is kept and marked `failed`
 * with this reason (docs/messaging.md "Failure reasons"):
 * - `reason`: the provider's message or the network error (never a credential);
 * - `provider_code`: the provider's error code when it gave one (Meta's Graph code, `"131047"`);
 * - `http_status`: the HTTP status of the provider's answer, `null` when none came (the default);
 * - `network_error`: the socket error's code when no answer came (`ECONNREFUSED`,
 *   `UND_ERR_SOCKET`, `TimeoutError` for a timeout), else `null` (the default);
 * - `kind`: the class of the failure when the transport knows it better than the codes
 *   (optional; it wins).
 * {@link classifyFailure} reads them into a class (docs/messaging.md "Classes of failure").
 * A custom transport may keep constructing `TransportFailed({reason, provider_code})`: with
 * nothing else to go by, such a failure is `permanent`.
 *
 * @category errors
 */
export class TransportFailed extends Schema.TaggedError<TransportFailed>()("TransportFailed", {
  reason: Schema.String,
  provider_code: Schema.NullOr(Schema.String),
  http_status: Schema.optionalWith(Schema.NullOr(Schema.Number), { default: () => null }),
  network_error: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  kind: Schema.optional(FailureKind)
}) {
  override get message(): string {
    return `The message could not be delivered: ${this.reason}`
  }
}

/**
 * A file to upload to the provider ({@link MessageTransportService.uploadMedia}): its bytes
 * as a stream (the transport reads it to its end, or destroys it), `size` in bytes,
 * `mimeType` (sent as the upload's `type`) and `filename` when known.
 *
 * @category messaging
 */
export interface MediaUpload {
  readonly stream: Readable
  readonly size: number
  readonly mimeType: string
  readonly filename: string | null
}

/**
 * The options of {@link MessageTransportService.markRead}: `typing` shows the contact a
 * typing indicator (Meta's `typing_indicator: {type: "text"}`) until the business answers
 * or for at most about 25 seconds.
 *
 * @category messaging
 */
export interface ReadReceiptOptions {
  readonly typing: boolean
}

/**
 * What a transport's `kind` is asked about a message: the channel it goes through (its
 * `uuid`), or `null` when it has none. Every {@link OutboundMessage} is one.
 *
 * @category messaging
 */
export interface TransportRoute {
  readonly channel: Pick<OutboundChannel, "uuid"> | null
}

/**
 * A transport's `send`: one message handed to the provider, the receipt or
 * `TransportFailed`. It may carry `promise`, the same send as a promise that resolves with
 * the receipt or rejects with `TransportFailed` (any other rejection is a defect, as a
 * `send` that dies). The send queue's dispatcher calls `promise`, on a live clock, inside
 * one timer of its own instead of running the send in a fiber of its own beside a timer:
 * on the path of every message that fiber was CPU time (docs/extending.md "A transport of
 * your own"). A promise cannot be interrupted, so a request made is never abandoned; the
 * timer only stops the wait. It lives on the function it mirrors, so a wrapper that
 * replaces `send` (`{ ...transport, send }`) drops it with it. Made with {@link sendWithPromise}.
 *
 * @category messaging
 */
export interface SendFunction {
  (message: OutboundMessage): Effect.Effect<TransportReceipt, TransportFailed>
  readonly promise?: (message: OutboundMessage) => Promise<TransportReceipt>
}

/**
 * A {@link SendFunction} of `send` carrying `promise` (the same send as a promise).
 *
 * @category messaging
 */
export const sendWithPromise = (
  send: (message: OutboundMessage) => Effect.Effect<TransportReceipt, TransportFailed>,
  promise: (message: OutboundMessage) => Promise<TransportReceipt>
): SendFunction => Object.assign((message: OutboundMessage) => send(message), { promise })

/**
 * Hands outbound messages to a messaging provider (docs/messaging.md "Transports").
 *
 * @category messaging
 */
export interface MessageTransportService {
  /**
   * Hands one message to the provider. The function may carry `promise` ({@link SendFunction}):
   * the same send as a promise, which the send queue's dispatcher prefers.
   */
  readonly send: SendFunction
  /**
   * Uploads a file for messages to name by the provider's media id (docs/media.md
   * "Sending a stored file"), through `channel` (or the transport's own number when
   * `null`): the provider's `provider_media_id`, or `TransportFailed` read into the classes
   * of failure as a send's is. Absent: the transport cannot send stored files.
   */
  readonly uploadMedia?: (channel: OutboundChannel | null, upload: MediaUpload) => Effect.Effect<{ readonly provider_media_id: string }, TransportFailed>
  /**
   * Tells the provider, through `channel`, that the business read the inbound message it
   * knows as `providerMessageId` (Meta's wamid), and with `options.typing` shows the
   * contact a typing indicator (docs/chats.md "Read receipts"). It never enters the send
   * queue: `Messaging.markChatRead` calls it inline, not paced, and a failure never pauses
   * the channel; `TransportFailed` is read into the classes of failure as a send's is.
   * Absent: the transport sends no read receipts (`read_receipt.status` is `skipped`).
   */
  readonly markRead?: (channel: OutboundChannel, providerMessageId: string, options: ReadReceiptOptions) => Effect.Effect<void, TransportFailed>
  /**
   * `true` when the transport accepts a message without a channel with no network call
   * (the recording transport): such messages skip the send queue's lanes and pacing and
   * always go inline (docs/messaging.md "The send queue"). Absent: `false`.
   */
  readonly immediate?: boolean
  /**
   * Which transport a message is handed to, stored on the message at its creation and
   * answered as a send's `transport` (docs/messaging.md "Transports"): one
   * {@link TransportKind} for every message, or a function of the message's route (its
   * channel) for a transport that routes — `WhatsAppCloudTransport.withChannels` answers
   * `whatsapp` for a message with a channel and its fallback's kind for one without. It
   * must answer without I/O (it runs inside the send's write). Absent: `custom` (a
   * transport of the host's own). Read it with {@link transportKindOf}.
   */
  readonly kind?: TransportKind | ((route: TransportRoute) => TransportKind)
  /**
   * The {@link ExtendedMessageType}s the transport sends (`["interactive"]`), or a function
   * of the message's route for a transport that routes; it must answer without I/O. A
   * message of a type not listed fails for good, unattempted, with `failure.code`
   * `message_type_unsupported` (docs/messaging.md "Failure reasons"). Absent: none (`text`,
   * `template` and `media` only). Read it with {@link sendsType}.
   */
  readonly messageTypes?: ReadonlyArray<ExtendedMessageType> | ((route: TransportRoute) => ReadonlyArray<ExtendedMessageType>)
}

/**
 * Whether `transport` sends messages of `type` on `route`: always for `text`, `template`
 * and `media` (and the types no send creates); an {@link ExtendedMessageType} only when
 * its `messageTypes` lists it.
 *
 * @category messaging
 */
export const sendsType = (transport: MessageTransportService, type: string, route: TransportRoute): boolean => {
  if (!(EXTENDED_MESSAGE_TYPES as ReadonlyArray<string>).includes(type)) return true
  const listed = transport.messageTypes
  const types = listed === undefined ? [] : typeof listed === "function" ? listed(route) : listed
  return (types as ReadonlyArray<string>).includes(type)
}

/** Every {@link ExtendedMessageType}. */
const EXTENDED_MESSAGE_TYPES: ReadonlyArray<ExtendedMessageType> = ["interactive", "reaction"]

/**
 * The {@link TransportKind} `transport` hands a message on `route` to: its `kind`, asked
 * about the route when it is a function; `custom` when it has none.
 *
 * @category messaging
 */
export const transportKindOf = (transport: MessageTransportService, route: TransportRoute): TransportKind =>
  transport.kind === undefined ? "custom" : typeof transport.kind === "function" ? transport.kind(route) : transport.kind

/**
 * Tag of the {@link MessageTransportService}. `MessageTransport.recording` is the default:
 * it accepts every message (no network) so the store records it as `sent`.
 * `MessageTransport.whatsAppCloud(options)` sends through the WhatsApp Cloud API.
 *
 * @category messaging
 */
export class MessageTransport extends Context.Tag("@switchboard/core/MessageTransport")<
  MessageTransport,
  MessageTransportService
>() {
  /** Accepts every message without a network call; no provider id. */
  static readonly recording: Layer.Layer<MessageTransport> = Layer.suspend(() => Layer.succeed(MessageTransport, recordingTransport))
}

const RECORDED_RECEIPT: TransportReceipt = { provider_message_id: null, status: "sent" }

/**
 * The recording transport's service: accepts every message without a network call and
 * answers no provider id, so the store records the message as `sent`; an upload is not
 * read (its stream is destroyed) and answers a made-up `recorded-<uuid>` media id; a
 * read receipt is a no-op (`Messaging.markChatRead` does not call it: its `read_receipt`
 * is `skipped`). Its kind is `recording`; it takes every {@link ExtendedMessageType}.
 *
 * @category messaging
 */
export const recordingTransport: MessageTransportService = {
  send: sendWithPromise(
    () => Effect.succeed(RECORDED_RECEIPT),
    () => Promise.resolve(RECORDED_RECEIPT)
  ),
  uploadMedia: (_channel, upload) =>
    Effect.sync(() => {
      upload.stream.destroy()
      return { provider_media_id: `recorded-${randomUUID()}` }
    }),
  markRead: () => Effect.void,
  immediate: true,
  kind: "recording",
  messageTypes: EXTENDED_MESSAGE_TYPES
}

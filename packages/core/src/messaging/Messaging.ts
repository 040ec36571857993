import { Clock, Context, Effect, Layer, Option } from "effect"
import { BasicReplies } from "../basic-replies/BasicReplies.js"
import { Channels } from "../channels/Channels.js"
import { Chats } from "../chats/Chats.js"
import { MAX_MESSAGE_TEXT_LENGTH } from "../chats/messageContent.js"
import { nowIso } from "../internal/time.js"
import type { IssueCollector } from "../internal/validation.js"
import { type InteractiveContent, interactiveStoredMedia } from "../model/interactive.js"
import type { SecretKeyMismatch, SecretKeyMissing } from "../model/channelErrors.js"
import type { ChatId, InboundMessageInput, InboundReceipt } from "../model/chats.js"
import { InvalidInput, type PlanLimitExceeded, RecordNotFound } from "../model/commonErrors.js"
import { type Message, type MessageId, type OutboundMediaContent, outboundReactionOf, validReactionEmoji } from "../model/messages.js"
import { MediaNotReady, MediaUnavailable } from "../model/mediaErrors.js"
import type {
  ChatReadResult,
  MarkChatReadInput,
  ReactInput,
  ReactResult,
  ReadReceipt,
  ReceiveResult,
  SendInteractiveInput,
  SendMediaInput,
  SendOptions,
  SendResult,
  SendTemplateInput,
  SendTextInput
} from "../model/messaging.js"
import {
  MessageNotCancellable,
  MessageNotReactable,
  MessageNotRetryable,
  type OutsideCustomerServiceWindow
} from "../model/messagingErrors.js"
import type { OrganizationId } from "../model/organizations.js"
import type { TemplateNotApproved, TemplateNotFound, TemplateParametersMismatch, TemplateUnsupported } from "../model/templateErrors.js"
import { SecureRandom } from "../random/SecureRandom.js"
import type { StorageError } from "../storage/errors.js"
import type { OutboxMoveOutcome } from "../storage/OutboxRepository.js"
import { Storage } from "../storage/Storage.js"
import { Templates } from "../templates/Templates.js"
import { MessageTransport } from "./MessageTransport.js"
import { readInteractive } from "./readInteractive.js"
import { markChatRead as markRead } from "./readReceipts.js"
import { readMedia, readMessageText, readTemplateShape } from "./readSend.js"
import { CANCELLED_FAILURE, isFreeForm, OUTSIDE_WINDOW_FAILURE, SendQueueSettings } from "./SendQueue.js"
import {
  chooseChannel,
  deliver,
  readSendInput,
  type RecipientInput,
  refineChannel,
  requireOpenWindow,
  type SendContent,
  sendResultOf,
  type SendServices,
  upsertContact,
  usesStoredMedia,
  windowEnd
} from "./sendSteps.js"

/**
 * Sends of an organization (`POST /send/template`, `POST /send`, `POST /send/media`,
 * `POST /send/interactive`; docs/messaging.md) and the auto-reply to
 * inbound messages.
 *
 * Every send runs the same steps, in this order:
 * 1. read the input — the phone (E.164; one libphonenumber-js calls invalid only when a
 *    contact has exactly that phone, docs/contacts.md "Unverified phones"), `send_at`
 *    (RFC 3339, at most 30 days ahead) and every other field; every problem is one issue
 *    of `InvalidInput`, nothing written;
 * 2. (templates) resolve the template of the WhatsApp Business Account of the channel the
 *    message will go through (step 5's channel, resolved first), else one with no account:
 *    else `TemplateNotFound` / `TemplateUnsupported` / `TemplateNotApproved` /
 *    `TemplateParametersMismatch`, nothing written;
 * 3. (`text`, `media` and `interactive` through a channel) the contact, looked up by phone, must be within
 *    its customer service window on the channel the message will go through (step 4's
 *    channel, resolved first): else `OutsideCustomerServiceWindow`, nothing written
 *    (docs/messaging.md "The customer service window"); not for a scheduled send (a
 *    `send_at` ahead), whose window is checked when it leaves;
 * 4. upsert the contact by phone, atomically with the plan check: a new contact that would
 *    pass `contacts_limit` → `PlanLimitExceeded`, nothing written; the fields given update
 *    the contact like a partial PUT;
 * 5. append an outbound message to the contact's chat (created `open` when missing; the
 *    chat's status never changes) and to the send queue in one atomic step, claimed at once
 *    when it can go now (docs/messaging.md "The send queue"); it records the channel it goes
 *    through: `channel_uuid` when given (one of the organization's channels, else
 *    `RecordNotFound` with nothing written), else the channel the contact last wrote to,
 *    else the organization's default channel, else none (docs/messaging.md "Channels");
 *    a free-form message's `expires_at` is the earlier of now + the TTL and its window's end;
 *    a scheduled send is stored `scheduled` until its `send_at` (docs/messaging.md
 *    "Scheduled sends"), expiring at `send_at` + the TTL, and step 6 does not run;
 * 6. when claimed, make its first attempt through the {@link MessageTransport}
 *    (`attemptClaimedMessage`) and record the outcome: `sent` with the provider's id,
 *    `failed` for good (the send still succeeds with `status: "failed"`), `queued` again for
 *    a retry, or `sending` when the outcome is unknown; else it stays `queued` for the
 *    dispatcher. The result says which, with `next_attempt_at`.
 * Steps 5–6 run uninterruptibly: a client that goes away never abandons an attempt.
 *
 * With `options.messageUuid` ({@link SendOptions}: an Idempotency-Key's claim chose it) the
 * message gets that uuid; after step 1, a message of the organization that already has it
 * is answered as it now stands, and steps 2–6 do not run: no second message, no second
 * request to the provider, no contact upsert.
 *
 * @category services
 */
export interface MessagingService {
  /** Sends a template message (`POST /send/template`, docs/messaging.md); `options`: {@link SendOptions}. */
  readonly sendTemplate: (
    organizationId: OrganizationId,
    input: SendTemplateInput,
    options?: SendOptions
  ) => Effect.Effect<
    SendResult,
    | InvalidInput
    | TemplateNotFound
    | TemplateNotApproved
    | TemplateUnsupported
    | TemplateParametersMismatch
    | PlanLimitExceeded
    | RecordNotFound
    | SecretKeyMissing
    | SecretKeyMismatch
    | StorageError
  >
  /** Sends a text message (`POST /send`): `message` 1–4096 characters; `options`: {@link SendOptions}. */
  readonly sendText: (
    organizationId: OrganizationId,
    input: SendTextInput,
    options?: SendOptions
  ) => Effect.Effect<SendResult, SendError>
  /** Sends a media message (`POST /send/media`); `options`: {@link SendOptions}. */
  readonly sendMedia: (
    organizationId: OrganizationId,
    input: SendMediaInput,
    options?: SendOptions
  ) => Effect.Effect<SendResult, SendError>
  /**
   * Sends an interactive message (`POST /send/interactive`, docs/messaging.md "Interactive
   * messages"): reply buttons, a list or a call-to-action URL, Meta's own object, read by
   * `readInteractive` in step 1 (every limit an issue naming its path, nothing written). It
   * is free-form: step 3's customer service window applies as for text. A media header by
   * `media_uuid` names a stored file of the organization (resolved as `sendMedia` does: its
   * type must be the header's) and is uploaded when the message leaves, never in the
   * request. The message is stored with `type: "interactive"`, `text` its body and
   * `content.interactive` its object; `options`: {@link SendOptions}.
   */
  readonly sendInteractive: (
    organizationId: OrganizationId,
    input: SendInteractiveInput,
    options?: SendOptions
  ) => Effect.Effect<SendResult, SendError>
  /**
   * Receives an inbound message (`Chats.receiveInbound`: contact and chat created as
   * needed, never refused over `contacts_limit`), then answers it automatically when its
   * text, trimmed, equals a basic reply's trigger ignoring case (`BasicReplies.matchInbound`):
   * the reply's `response` is queued as a text message (step 5 above; never attempted in
   * the request: the dispatcher sends it, except through the recording transport, which
   * always answers inline; it answers the contact, so its window is open), through the
   * channel the message came in by (`channel_uuid`). A duplicate
   * delivery (same `provider_message_id`) and a message of another type are never
   * answered. `auto_reply` is the reply's send result, or `null` (also when the reply's
   * channel cannot be opened: a warning is logged, the message is kept).
   */
  readonly receive: (
    organizationId: OrganizationId,
    input: InboundMessageInput
  ) => Effect.Effect<ReceiveResult, InvalidInput | StorageError>
  /**
   * `POST /messages/{uuid}/retry` (docs/messaging.md "Retry and cancel"): a `failed`
   * outbound message of the send queue goes back to `queued`, due now, with its attempts
   * reset and a new expiry (now + the TTL; for a free-form message through a channel, no
   * later than its window's end); the message afterwards. Another status →
   * `MessageNotRetryable`, as is a message that failed `outside_customer_service_window`
   * while the contact's window on its channel is still closed; no such outbound message of the organization (or one not sent
   * through the queue, such as an imported one) → `RecordNotFound`.
   */
  readonly retryMessage: (
    organizationId: OrganizationId,
    id: MessageId
  ) => Effect.Effect<Message, RecordNotFound | MessageNotRetryable | StorageError>
  /**
   * `POST /messages/{uuid}/cancel`: a `queued` or `scheduled` message becomes `failed` with
   * code `cancelled` (a scheduled one then never leaves); the message afterwards. Another status → `MessageNotCancellable`; not
   * found as for `retryMessage` → `RecordNotFound`.
   */
  readonly cancelMessage: (
    organizationId: OrganizationId,
    id: MessageId
  ) => Effect.Effect<Message, RecordNotFound | MessageNotCancellable | StorageError>
  /**
   * `POST /messages/{uuid}/reaction` (docs/messaging.md "Reactions"): the business reacts
   * to the organization's message `id` with `input.emoji` (one emoji, `validReactionEmoji`;
   * `""` takes its reaction back). In this order, each refusal writing nothing:
   * `emoji` not such a string → `InvalidInput` naming `emoji`; no such message of the
   * organization → `RecordNotFound`; `MessageNotReactable` when the message is itself a
   * reaction (`not_a_message`), has no provider id (`no_provider_id`), was created more
   * than 30 days ago (`too_old`), or there is no channel to send through (`no_channel`:
   * the message's channel, else the channel a send to its contact would choose); the
   * contact's customer service window on that channel closed → `OutsideCustomerServiceWindow`.
   * Then an outbound row of type `reaction` (`content.reaction {message_id, emoji,
   * target_uuid}`, never listed) goes through the send queue as a text send does (steps 5–6:
   * paced, retried; `options.messageUuid` as for sends: a row with that uuid already there is
   * answered as it stands). When the provider accepts it, the store writes the reaction into
   * the target's `reactions` (`by: "business"`, replacing the earlier one) with
   * `message.reactions_updated`. The answer is the target as stored afterwards and the
   * reaction row's send result ({@link ReactResult}).
   */
  readonly react: (
    organizationId: OrganizationId,
    id: MessageId,
    input: ReactInput,
    options?: SendOptions
  ) => Effect.Effect<ReactResult, ReactError>
  /**
   * `POST /chats/{uuid}/read` (docs/chats.md "Read receipts"): the chat's `unread_count`
   * becomes 0 (always committed), then the provider is told, inline and never through the
   * send queue, that the business read the chat's latest inbound message (by `created_at`;
   * `input.typing`: with a typing indicator); that message moves `delivered → read`. A
   * message already `read` is not sent again. The answer is the chat with its
   * `read_receipt` ({@link ReadReceipt}: `sent`, `skipped` with its reason, or `failed`
   * with its failure). `typing` not a boolean → `InvalidInput`, nothing written; no such
   * chat → `RecordNotFound`.
   */
  readonly markChatRead: (
    organizationId: OrganizationId,
    chatId: ChatId,
    input?: MarkChatReadInput
  ) => Effect.Effect<ChatReadResult, InvalidInput | RecordNotFound | StorageError>
}

/**
 * What the text, media and interactive sends fail with: a bad input (nothing written), a closed
 * customer service window (`OutsideCustomerServiceWindow`, nothing written), the plan's
 * `contacts_limit`, an unknown `channel_uuid` (`RecordNotFound`), a channel whose token
 * cannot be opened (`SecretKeyMissing`, `SecretKeyMismatch`), or the store.
 *
 * @category services
 */
export type SendError =
  | InvalidInput
  | MediaNotReady
  | MediaUnavailable
  | OutsideCustomerServiceWindow
  | PlanLimitExceeded
  | RecordNotFound
  | SecretKeyMissing
  | SecretKeyMismatch
  | StorageError

/**
 * What `Messaging.react` fails with: a bad emoji (`InvalidInput`), an unknown message
 * (`RecordNotFound`), a message that cannot carry a reaction (`MessageNotReactable`), a
 * closed customer service window, a channel whose token cannot be opened, or the store;
 * nothing written for any of them.
 *
 * @category services
 */
export type ReactError =
  | InvalidInput
  | RecordNotFound
  | MessageNotReactable
  | OutsideCustomerServiceWindow
  | SecretKeyMissing
  | SecretKeyMismatch
  | StorageError

/**
 * Tag of the {@link MessagingService}. `Messaging.layer` needs `Storage`, `SecureRandom`,
 * `MessageTransport`, `Templates`, `Chats`, `BasicReplies` and `Channels`; `Core.layer` provides them
 * all with the recording transport, `Core.layerWithTransport(transport)` with another.
 *
 * @category services
 * @example
 * import { Effect } from "effect"
 * import { Messaging, type OrganizationId } from "@switchboard/core"
 *
 * const greet = (organizationId: OrganizationId) =>
 *   Effect.flatMap(Messaging, (messaging) =>
 *     messaging.sendText(organizationId, { phone: "+14155550100", message: "Hello!" })
 *   )
 */
export class Messaging extends Context.Tag("@switchboard/core/Messaging")<Messaging, MessagingService>() {
  static readonly layer: Layer.Layer<
    Messaging,
    never,
    Storage | SecureRandom | MessageTransport | Templates | Chats | BasicReplies | Channels
  > = Layer.effect(
    Messaging,
    Effect.suspend(() => make)
  )
}

const make = Effect.gen(function* () {
  const services: SendServices = {
    storage: yield* Storage,
    random: yield* SecureRandom,
    transport: yield* MessageTransport,
    chats: yield* Chats,
    channels: yield* Channels
  }
  const templates = yield* Templates
  const replies = yield* BasicReplies
  const { storage } = services

  const sendTemplate = Effect.fn("Messaging.sendTemplate")(function* (
    organizationId: OrganizationId,
    input: SendTemplateInput,
    options?: SendOptions
  ) {
    let shape: ReturnType<typeof readTemplateShape> = null
    const unresolved: TemplateSendContent = { type: "template", template: { name: "", language: { code: "" }, components: [] }, text: "" }
    return yield* send(
      services,
      organizationId,
      input ?? {},
      options,
      (collector) => {
        shape = readTemplateShape(collector, input?.template)
        return Effect.succeed(unresolved)
      },
      // Step 2 once the channel is known (its account's template), and only for a
      // well-formed input, so one 400 lists every shape problem first.
      (_, wabaId) =>
        shape === null
          ? Effect.dieMessage("sendTemplate: a template send without its template object passed step 1")
          : Effect.map(
            templates.resolveForSend(organizationId, shape, wabaId),
            (resolved): TemplateSendContent => ({ type: "template", template: resolved.send, text: templatePreview(resolved.text) })
          )
    ).pipe(
      // Templates are always allowed: a window refusal here is a bug.
      Effect.catchTag("OutsideCustomerServiceWindow", (error) => Effect.die(error))
    )
  })

  const sendText = Effect.fn("Messaging.sendText")(function* (
    organizationId: OrganizationId,
    input: SendTextInput,
    options?: SendOptions
  ) {
    return yield* send(services, organizationId, { phone: input?.phone, channel_uuid: input?.channel_uuid, send_at: input?.send_at }, options, (collector) =>
      Effect.succeed({ type: "text", text: readMessageText(collector, input?.message) } as const)
    )
  })

  const sendMedia = Effect.fn("Messaging.sendMedia")(function* (
    organizationId: OrganizationId,
    input: SendMediaInput,
    options?: SendOptions
  ) {
    return yield* send(services, organizationId, { phone: input?.phone, channel_uuid: input?.channel_uuid, send_at: input?.send_at }, options, (collector) => {
      const media = readMedia(collector, input?.media)
      return media.media_uuid === undefined || collector.issues.length > 0
        ? Effect.succeed({ type: "media", media } as const)
        : Effect.map(
          storedMediaOf(services, organizationId, collector, media, (input?.media as { readonly type?: unknown } | undefined)?.type),
          (stored) => ({ type: "media", media: stored } as const)
        )
    })
  })

  const sendInteractive = Effect.fn("Messaging.sendInteractive")(function* (
    organizationId: OrganizationId,
    input: SendInteractiveInput,
    options?: SendOptions
  ) {
    return yield* send(services, organizationId, { phone: input?.phone, channel_uuid: input?.channel_uuid, send_at: input?.send_at }, options, (collector) => {
      const interactive = readInteractive(collector, input?.interactive)
      const stored = interactive === null ? undefined : interactiveStoredMedia(interactive)
      const content = (read: InteractiveContent) => ({ type: "interactive", interactive: read } as const)
      if (interactive === null) return Effect.succeed(content(UNREAD_INTERACTIVE))
      if (stored === undefined || collector.issues.length > 0) return Effect.succeed(content(interactive))
      const field = `interactive.header.${stored.type}.media_uuid`
      return Effect.map(storedMediaRecord(services, organizationId, stored.media_uuid, field), (record) => {
        if (record.type !== stored.type) {
          collector.add("invalid_format", field, `${field} must name a stored ${stored.type} (it names a ${record.type})`)
        }
        return content(interactive)
      })
    })
  })

  const receive = Effect.fnUntraced(function* (organizationId: OrganizationId, input: InboundMessageInput) {
    const receipt = yield* services.chats.receiveInbound(organizationId, input)
    const { message } = receipt
    if (receipt.duplicate || message.type !== "text" || message.text === null) return { ...receipt, auto_reply: null }
    const reply = yield* replies.matchInbound(organizationId, message.text)
    if (Option.isNone(reply)) return { ...receipt, auto_reply: null }
    const auto_reply = yield* autoReply(services, organizationId, receipt, reply.value.response)
    const result: ReceiveResult = { ...receipt, auto_reply }
    return result
  })

  const retryMessage = Effect.fn("Messaging.retryMessage")(function* (organizationId: OrganizationId, id: MessageId) {
    return yield* retry(services, organizationId, id)
  })

  const cancelMessage = Effect.fn("Messaging.cancelMessage")(function* (organizationId: OrganizationId, id: MessageId) {
    const outcome = yield* storage.outbox.cancel(organizationId, id, CANCELLED_FAILURE, yield* nowIso)
    return yield* moved(id, outcome, (message) => new MessageNotCancellable({ message_uuid: message.uuid, status: message.status }))
  })

  const markChatRead: MessagingService["markChatRead"] = (organizationId, chatId, input) => markRead(services, organizationId, chatId, input)

  const react = Effect.fn("Messaging.react")(function* (
    organizationId: OrganizationId,
    id: MessageId,
    input: ReactInput,
    options?: SendOptions
  ) {
    return yield* reactTo(services, organizationId, id, input, options)
  })

  const service: MessagingService = {
    sendTemplate,
    sendText,
    sendMedia,
    sendInteractive,
    receive,
    retryMessage,
    cancelMessage,
    markChatRead,
    react
  }
  return service
})

/** The content of a template send. */
type TemplateSendContent = Extract<SendContent, { readonly type: "template" }>

/**
 * The steps of a send around `readContent` (which adds step 1's content issues) and
 * `settleContent` (step 2 for templates, given the account of the channel the message
 * will go through): the recipient, the channel, the window, the contact, the placement
 * and the inline attempt; with `options.messageUuid`, an existing message with that uuid
 * is answered instead of steps 2–6 (and instead of step 6 when another attempt of the
 * send stores it meanwhile: `deliver`).
 */
const send = <C extends SendContent, E, R, E2 = never, R2 = never>(
  services: SendServices,
  organizationId: OrganizationId,
  input: RecipientInput,
  options: SendOptions | undefined,
  readContent: (collector: IssueCollector) => Effect.Effect<C, E, R>,
  settleContent?: (content: C, wabaId: string | null) => Effect.Effect<C, E2, R2>
) =>
  Effect.gen(function* () {
    const { storage } = services
    const { recipient, requestedChannel, sendAt, content: read } = yield* readSendInput(services, organizationId, input, readContent)
    const messageUuid = options?.messageUuid
    if (messageUuid !== undefined) {
      // A takeover of an Idempotency-Key whose first attempt created the message: answer it.
      const created = yield* storage.chats.findMessage(organizationId, messageUuid)
      if (Option.isSome(created)) return sendResultOf(created.value.chat_uuid, created.value)
    }
    const chosen = yield* chooseChannel(services, organizationId, requestedChannel)
    // The channel, the content and the window are settled before anything is written.
    const existing = Option.map(yield* storage.contacts.findByPhone(organizationId, recipient.phone), (contact) => contact.uuid)
    const settled = Option.isNone(existing) ? chosen : yield* refineChannel(services, organizationId, existing.value, chosen)
    const { channel } = settled
    const content = settleContent === undefined ? read : yield* settleContent(read, settled.wabaId)
    // A scheduled send is not held to the window now (the customer may write before then):
    // the window is checked when it leaves.
    const windowEnd = channel === null || !isFreeForm(content.type) || sendAt !== null
      ? null
      : yield* requireOpenWindow(services, organizationId, existing, channel.uuid)
    const contactId = yield* upsertContact(services, organizationId, recipient)
    // A stored file is uploaded to the provider first: its own step, never in the request.
    const inline = sendAt === null && !usesStoredMedia(content)
    const delivery = { organizationId, contactId, phone: recipient.phone, content, channel, windowEnd, inline, messageUuid, sendAt }
    return yield* deliver(services, delivery)
  })

/** The oldest message a reaction may go to, in ms before now (the provider refuses older ones). */
const MAX_REACTION_TARGET_AGE_MS = 30 * 24 * 60 * 60 * 1000

/**
 * `react`: the checks in the order `MessagingService.react` lists them, nothing written
 * until they pass, then the reaction row through steps 5–6 of a send; the target re-read
 * after the attempt.
 */
const reactTo = (
  services: SendServices,
  organizationId: OrganizationId,
  id: MessageId,
  input: ReactInput,
  options: SendOptions | undefined
) =>
  Effect.gen(function* () {
    const { storage } = services
    const emoji = input?.emoji
    if (typeof emoji !== "string" || !validReactionEmoji(emoji)) {
      return yield* new InvalidInput({
        issues: [{ field: "emoji", code: "invalid_format", message: "emoji must be one emoji, or \"\" to remove the reaction" }]
      })
    }
    const found = yield* storage.chats.findMessage(organizationId, id)
    if (Option.isNone(found)) return yield* new RecordNotFound({ missing: [{ resource: "message", uuid: id }] })
    const target = found.value
    const messageUuid = options?.messageUuid
    if (messageUuid !== undefined) {
      // A takeover of an Idempotency-Key whose first attempt created the reaction row: answer it.
      const created = yield* storage.chats.findMessage(organizationId, messageUuid)
      if (Option.isSome(created)) {
        const result: ReactResult = { message: target, reaction: sendResultOf(created.value.chat_uuid, created.value) }
        return result
      }
    }
    const refuse = (reason: MessageNotReactable["reason"]) => new MessageNotReactable({ message_uuid: target.uuid, reason })
    if (outboundReactionOf(target) !== undefined || target.type === "reaction") return yield* refuse("not_a_message")
    if (target.provider_message_id === null) return yield* refuse("no_provider_id")
    if (Date.parse(target.created_at) < (yield* Clock.currentTimeMillis) - MAX_REACTION_TARGET_AGE_MS) return yield* refuse("too_old")
    const contact = yield* storage.contacts.findById(organizationId, target.contact_uuid)
    if (Option.isNone(contact)) return yield* new RecordNotFound({ missing: [{ resource: "message", uuid: id }] })
    const { channel } = yield* reactionChannel(services, organizationId, target)
    if (channel === null) return yield* refuse("no_channel")
    const end = yield* requireOpenWindow(services, organizationId, Option.some(contact.value.uuid), channel.uuid)
    const reaction = { message_id: target.provider_message_id, emoji, target_uuid: target.uuid }
    const delivery = {
      organizationId,
      contactId: contact.value.uuid,
      phone: contact.value.phone,
      content: { type: "reaction", reaction } as const,
      channel,
      windowEnd: end,
      inline: true,
      messageUuid
    }
    const sent = yield* deliver(services, delivery)
    const after = yield* storage.chats.findMessage(organizationId, target.uuid)
    const result: ReactResult = { message: Option.getOrElse(after, () => target), reaction: sent }
    return result
  })

/**
 * The channel a reaction to `target` goes through: the target's own channel, else (none,
 * or removed since) the one a send to its contact would choose (`chooseChannel`, then
 * `refineChannel`); `channel: null` when the organization has none.
 */
const reactionChannel = (services: SendServices, organizationId: OrganizationId, target: Message) =>
  Effect.gen(function* () {
    const fallback = Effect.flatMap(chooseChannel(services, organizationId, null), (chosen) =>
      refineChannel(services, organizationId, target.contact_uuid, chosen))
    if (target.channel_uuid === null) return yield* fallback
    return yield* chooseChannel(services, organizationId, target.channel_uuid).pipe(
      Effect.catchTag("RecordNotFound", () => fallback)
    )
  })

/**
 * The automatic reply `response` to an inbound message, queued (never attempted in the
 * request) through the channel the message came in by (removed meanwhile: the send's
 * default), bounded by the contact's window; `null` when the contact was deleted
 * meanwhile or the channel's token cannot be opened (a warning is logged).
 */
const autoReply = (services: SendServices, organizationId: OrganizationId, receipt: InboundReceipt, response: string) =>
  Effect.gen(function* () {
    const { message, chat } = receipt
    // The channel the message came in by; removed meanwhile → the send's default.
    const chosen = yield* chooseChannel(services, organizationId, message.channel_uuid).pipe(
      Effect.catchTag("RecordNotFound", () => chooseChannel(services, organizationId, null))
    )
    const { channel } = yield* refineChannel(services, organizationId, chat.contact.uuid, chosen)
    // It answers the contact, so its window is open; the window's end still bounds its expiry.
    const end = channel === null ? null : yield* windowEnd(services, organizationId, chat.contact.uuid, channel.uuid)
    const content: SendContent = { type: "text", text: response }
    const delivery = { organizationId, contactId: chat.contact.uuid, phone: chat.contact.phone, content, channel, windowEnd: end, inline: false }
    return yield* deliver(services, delivery)
  }).pipe(
    // The contact was deleted between the inbound message and its answer: nobody to answer.
    Effect.catchTag("RecordNotFound", () => Effect.succeed(null)),
    // The channel's token cannot be opened: the message is kept, the reply not sent.
    Effect.catchTags({
      SecretKeyMissing: (error) => logUnansweredReply(organizationId, receipt.message.uuid, error.message),
      SecretKeyMismatch: (error) => logUnansweredReply(organizationId, receipt.message.uuid, error.message)
    }),
    // A stored reply always makes a valid text message: a refusal is a bug.
    Effect.catchTag("InvalidInput", (error) => Effect.die(error))
  )

/**
 * `retryMessage`: the message back to `queued`, due now, expiring at now + the TTL or at
 * its window's end when earlier ({@link retryWindowEnd}); `MessageNotRetryable` or
 * `RecordNotFound` as the outbox answers.
 */
const retry = (services: SendServices, organizationId: OrganizationId, id: MessageId) =>
  Effect.gen(function* () {
    const settings = yield* SendQueueSettings
    const nowMs = yield* Clock.currentTimeMillis
    const end = yield* retryWindowEnd(services, organizationId, id, nowMs)
    const outcome = yield* services.storage.outbox.retry(
      organizationId,
      id,
      new Date(nowMs).toISOString(),
      new Date(Math.min(nowMs + settings.ttlMs, end ?? Infinity)).toISOString()
    )
    return yield* moved(id, outcome, (message) => new MessageNotRetryable({ message_uuid: message.uuid, status: message.status }))
  })

/**
 * The window's end (ms since the epoch) bounding a retried free-form message's expiry
 * through a channel, else `null`; a message that failed `outside_customer_service_window`
 * while its window is still closed → `MessageNotRetryable`, nothing written.
 */
const retryWindowEnd = (services: SendServices, organizationId: OrganizationId, id: MessageId, nowMs: number) =>
  Effect.gen(function* () {
    const found = yield* services.storage.chats.findMessage(organizationId, id)
    if (Option.isNone(found)) return null
    const message = found.value
    if (message.direction !== "outbound" || message.channel_uuid === null || !isFreeForm(message.type)) return null
    const end = yield* windowEnd(services, organizationId, message.contact_uuid, message.channel_uuid)
    const open = end !== null && end > nowMs
    if (!open && message.status === "failed" && message.failure?.code === OUTSIDE_WINDOW_FAILURE.code) {
      return yield* new MessageNotRetryable({ message_uuid: message.uuid, status: message.status, window_closed: true })
    }
    return end
  })

/** The outcome of a retry or cancel as the message, or its error. */
const moved = <E>(id: string, outcome: OutboxMoveOutcome, refused: (message: Message) => E) => {
  switch (outcome._tag) {
    case "Done":
      return Effect.succeed(outcome.message)
    case "Refused":
      return Effect.fail(refused(outcome.message))
    case "NotFound":
      return Effect.fail(new RecordNotFound({ missing: [{ resource: "message", uuid: id }] }))
  }
}

/**
 * The stored text of a template message: its rendered text, cut to 4096 characters (a
 * message's longest text) with an ellipsis when longer; it is a preview, the provider
 * renders the message from the template object.
 */
export const templatePreview = (text: string): string =>
  text.length <= MAX_MESSAGE_TEXT_LENGTH ? text : `${text.slice(0, MAX_MESSAGE_TEXT_LENGTH - 1)}…`

/** The automatic reply to a message could not be sent through its channel (never the token). */
const logUnansweredReply = (organizationId: OrganizationId, messageId: string, reason: string) =>
  Effect.as(
    Effect.logWarning("Automatic reply not sent: the channel's token cannot be opened").pipe(
      Effect.annotateLogs({ organization_id: organizationId, message_id: messageId, reason })
    ),
    null
  )


/**
 * The media of a send by `media_uuid` (docs/media.md "Sending a stored file"): the
 * organization's stored file (another organization's or an unknown uuid → `RecordNotFound`
 * naming `media.media_uuid`; not stored yet → `MediaNotReady`; failed or deleted →
 * `MediaUnavailable`), its type (a `media.type` given must be it; a sticker cannot be sent
 * this way: an issue), its MIME type, and its file name for a document when none is given.
 */
const storedMediaOf = (
  services: SendServices,
  organizationId: OrganizationId,
  collector: IssueCollector,
  media: OutboundMediaContent & { readonly media_uuid: string },
  givenType: unknown
) =>
  Effect.gen(function* () {
    const record = yield* storedMediaRecord(services, organizationId, media.media_uuid, "media.media_uuid")
    if (record.type === "sticker") {
      collector.add("invalid_format", "media.media_uuid", "a stored sticker cannot be sent as a media message")
    } else if (givenType !== undefined && givenType !== null && givenType !== record.type) {
      collector.add("invalid_format", "media.type", `media.type must be the stored file's type, ${record.type}`)
    }
    const type = record.type === "sticker" ? "image" : record.type
    const stored: OutboundMediaContent = {
      type,
      media_uuid: record.uuid,
      mime_type: record.mime_type,
      ...(media.caption === undefined ? {} : { caption: media.caption }),
      ...(media.filename !== undefined ? { filename: media.filename } : type === "document" && record.filename !== null ? { filename: record.filename } : {})
    }
    return stored
  })

/**
 * The organization's stored file `uuid` a send names at `field`: another organization's
 * or an unknown uuid → `RecordNotFound` naming `field`; not stored yet → `MediaNotReady`;
 * failed or deleted → `MediaUnavailable`.
 */
const storedMediaRecord = (services: SendServices, organizationId: OrganizationId, uuid: string, field: string) =>
  Effect.gen(function* () {
    const found = yield* services.storage.media.get(organizationId, uuid)
    if (Option.isNone(found)) return yield* new RecordNotFound({ missing: [{ resource: "media", uuid, field }] })
    const record = found.value
    if (record.status === "pending") return yield* new MediaNotReady({ uuid: record.uuid })
    if (record.status !== "stored") return yield* new MediaUnavailable({ uuid: record.uuid, status: record.status === "failed" ? "failed" : "deleted" })
    return record
  })

/** The content of an interactive send whose object could not be read: never stored (step 1 refuses it). */
const UNREAD_INTERACTIVE: InteractiveContent = { type: "button", body: { text: "" }, action: { buttons: [] } }

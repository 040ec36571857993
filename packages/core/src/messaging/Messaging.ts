import { Clock, Context, Effect, Layer, Option } from "effect"
import { BasicReplies } from "../basic-replies/BasicReplies.js"
import { MAX_MESSAGE_TEXT_LENGTH } from "../chats/messageContent.js"
import { Chats } from "../chats/Chats.js"
import type { ChatId, InboundMessageInput, OutboundMessageInput } from "../model/chats.js"
import type { ContactId } from "../model/contacts.js"
import {
  contactsLimitExceeded,
  InvalidInput,
  type PlanLimitExceeded,
  RecordNotFound
} from "../model/commonErrors.js"
import { nowIso } from "../internal/time.js"
import { IssueCollector } from "../internal/validation.js"
import type { Message, MessageId, OutboundMediaContent } from "../model/messages.js"
import type { OrganizationId } from "../model/organizations.js"
import { SecureRandom } from "../random/SecureRandom.js"
import { Settings } from "../common/Settings.js"
import type { StorageError } from "../storage/errors.js"
import { Storage } from "../storage/Storage.js"
import type { TemplateNotApproved, TemplateNotFound, TemplateParametersMismatch } from "../model/templateErrors.js"
import type { TemplateSendObject } from "../model/templates.js"
import { Templates } from "../templates/Templates.js"
import { MessageTransport, type OutboundChannel } from "./MessageTransport.js"
import {
  attemptClaimedMessage,
  bypassesQueue,
  CANCELLED_FAILURE,
  isFreeForm,
  OUTSIDE_WINDOW_FAILURE,
  recordSendOutcome,
  SendQueueSettings,
  windowEndMs
} from "./SendQueue.js"
import type { ClaimedMessage, OutboxMoveOutcome, OutboxPlacement } from "../storage/OutboxRepository.js"
import { MessageNotCancellable, MessageNotRetryable, OutsideCustomerServiceWindow } from "../model/messagingErrors.js"
import { Channels } from "../channels/Channels.js"
import type { SecretKeyMismatch, SecretKeyMissing } from "../model/channelErrors.js"
import type { ChannelId } from "../model/channels.js"
import type { ReceiveResult, SendMediaInput, SendOptions, SendResult, SendTemplateInput, SendTextInput } from "../model/messaging.js"
import { readMedia, readMessageText, readRecipient, readTemplateShape, type SendRecipient } from "./readSend.js"

/**
 * Sends of an organization (`POST /send/template`, `POST /send`, `POST /send/media`;
 * docs/messaging.md) and the auto-reply to
 * inbound messages.
 *
 * Every send runs the same steps, in this order:
 * 1. read the input — the phone (E.164; one libphonenumber-js calls invalid only when a
 *    contact has exactly that phone, docs/contacts.md "Unverified phones") and every other
 *    field; every problem is one issue of `InvalidInput`, nothing written;
 * 2. (templates) resolve the template, else `TemplateNotFound` / `TemplateNotApproved` /
 *    `TemplateParametersMismatch`, nothing written;
 * 3. (`text` and `media` through a channel) the contact, looked up by phone, must be within
 *    its customer service window on the channel the message will go through (step 4's
 *    channel, resolved first): else `OutsideCustomerServiceWindow`, nothing written
 *    (docs/messaging.md "The customer service window");
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
 * 6. when claimed, make its first attempt through the {@link MessageTransport}
 *    (`attemptClaimedMessage`) and record the outcome: `sent` with the provider's id,
 *    `failed` for good (the send still succeeds with `status: "failed"`), `queued` again for
 *    a retry, or `sending` when the outcome is unknown; else it stays `queued` for the
 *    dispatcher. The result says which, with `next_attempt_at`.
 * Steps 5–6 run uninterruptibly: a client that goes away never abandons an attempt.
 *
 * With `options.messageUuid` ({@link SendOptions}: an Idempotency-Key's claim chose it) the
 * message gets that uuid; after step 1 (and step 2), a message of the organization that
 * already has it is answered as it now stands, and steps 3–6 do not run: no second
 * message, no second request to the provider, no contact upsert.
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
   * `POST /messages/{uuid}/cancel`: a `queued` message becomes `failed` with code
   * `cancelled`; the message afterwards. Another status → `MessageNotCancellable`; not
   * found as for `retryMessage` → `RecordNotFound`.
   */
  readonly cancelMessage: (
    organizationId: OrganizationId,
    id: MessageId
  ) => Effect.Effect<Message, RecordNotFound | MessageNotCancellable | StorageError>
}

/**
 * What the text and media sends fail with: a bad input (nothing written), a closed
 * customer service window (`OutsideCustomerServiceWindow`, nothing written), the plan's
 * `contacts_limit`, an unknown `channel_uuid` (`RecordNotFound`), a channel whose token
 * cannot be opened (`SecretKeyMissing`, `SecretKeyMismatch`), or the store.
 *
 * @category services
 */
export type SendError =
  | InvalidInput
  | OutsideCustomerServiceWindow
  | PlanLimitExceeded
  | RecordNotFound
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

/** What a send carries, in the shapes of both the message record and the transport. */
type SendContent =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "template"; readonly template: TemplateSendObject; readonly text: string }
  | { readonly type: "media"; readonly media: OutboundMediaContent }

const make = Effect.gen(function* () {
  const storage = yield* Storage
  const random = yield* SecureRandom
  const transport = yield* MessageTransport
  const templates = yield* Templates
  const chats = yield* Chats
  const replies = yield* BasicReplies
  const channels = yield* Channels

  /** A channel of the organization, as the transport takes it; `RecordNotFound` when it has none with this uuid. */
  const openChannel = (organizationId: OrganizationId, id: string) =>
    Effect.map(
      channels.getWithToken(organizationId, id as ChannelId),
      ({ access_token, channel }): OutboundChannel => ({ uuid: channel.uuid, phone_number_id: channel.phone_number_id, access_token })
    )

  /**
   * The channel of a send, before anything is written: the requested one, else the
   * organization's default (its first channel), else `null`. `refine` then prefers the
   * channel the contact last wrote to, once the contact is known.
   */
  const chooseChannel = Effect.fn("Messaging.chooseChannel")(function* (organizationId: OrganizationId, requested: string | null) {
    if (requested !== null) {
      const channel = yield* openChannel(organizationId, requested).pipe(
        Effect.catchTag("RecordNotFound", () =>
          Effect.fail(new RecordNotFound({ missing: [{ resource: "channel", uuid: requested, field: "channel_uuid" }] }))
        )
      )
      return { channel, requested: true }
    }
    const [first] = yield* storage.channels.list(organizationId)
    return { channel: first === undefined ? null : yield* openChannel(organizationId, first.uuid), requested: false }
  })

  /** The contact's last inbound channel when it is not the chosen one and still exists, else the chosen one. */
  const refineChannel = (
    organizationId: OrganizationId,
    contactId: ContactId,
    chosen: { readonly channel: OutboundChannel | null; readonly requested: boolean }
  ) =>
    Effect.gen(function* () {
      if (chosen.requested || chosen.channel === null) return chosen.channel
      const last = yield* storage.chats.lastInboundChannel(organizationId, contactId)
      if (Option.isNone(last) || last.value === chosen.channel.uuid) return chosen.channel
      // Removed since the contact wrote: the default stands.
      return yield* openChannel(organizationId, last.value).pipe(Effect.catchTag("RecordNotFound", () => Effect.succeed(chosen.channel)))
    })

  /** The end of the contact's customer service window on the channel, in ms since the epoch; `null` when it never wrote there. */
  const windowEnd = (organizationId: OrganizationId, contactId: ContactId, channelId: string) =>
    Effect.map(storage.chats.lastInboundAt(organizationId, contactId, channelId), windowEndMs)

  /**
   * Step 3: the end of the customer service window (ms since the epoch) of the contact
   * (`None`: it does not exist, so it never wrote) on the channel, or
   * `OutsideCustomerServiceWindow` when it is not open now.
   */
  const requireOpenWindow = Effect.fn("Messaging.requireOpenWindow")(function* (
    organizationId: OrganizationId,
    contact: Option.Option<ContactId>,
    channelId: string
  ) {
    const end = Option.isNone(contact) ? null : yield* windowEnd(organizationId, contact.value, channelId)
    if (end === null || end <= (yield* Clock.currentTimeMillis)) {
      return yield* new OutsideCustomerServiceWindow({
        channel_uuid: channelId,
        window_expires_at: end === null ? null : new Date(end).toISOString()
      })
    }
    return end
  })

  /** Whether a contact of the organization has exactly this phone (an unverified one may be answered). */
  const isStoredPhone = (organizationId: OrganizationId, phone: string) =>
    Effect.map(storage.contacts.findByPhone(organizationId, phone), Option.isSome)

  /** Step 4: the contact's uuid after the upsert, or `PlanLimitExceeded` with nothing written. */
  const upsertContact = Effect.fn("Messaging.upsertContact")(function* (
    organizationId: OrganizationId,
    recipient: SendRecipient
  ) {
    const organization = yield* storage.organizations.findById(organizationId)
    // An organization that does not exist may create nothing (as in Contacts.importBulk).
    const contactsLimit = Option.match(organization, { onNone: () => 0, onSome: (org) => org.plan.contacts_limit })
    const outcome = yield* storage.contacts.importBulk(organizationId, {
      rows: [{ phone: recipient.phone, phone_valid: recipient.phone_valid, details: recipient.details, groups: [] }],
      ids: yield* random.uuids(1),
      contactsLimit,
      now: yield* nowIso
    })
    switch (outcome._tag) {
      case "Imported": {
        const [contact] = outcome.result.contacts
        if (contact === undefined) return yield* Effect.dieMessage("importBulk answered no contact for one row")
        return contact.uuid
      }
      case "LimitExceeded":
        return yield* contactsLimitExceeded(outcome)
      case "GroupsNotFound":
        return yield* Effect.dieMessage("importBulk answered GroupsNotFound for a row without groups")
    }
  })

  /**
   * Steps 5–6: append the message in the send queue — claimed at once when it can go now
   * (`inline`), else `queued` for the dispatcher — then, when claimed, make its first
   * attempt here and record the outcome (docs/messaging.md "The send queue"). It expires
   * at now + the TTL, or at `windowEnd` (ms since the epoch: the end of a free-form
   * message's customer service window) when that is earlier. The message gets
   * `messageUuid` when given, else a fresh uuid.
   */
  const deliver = (
    organizationId: OrganizationId,
    contactId: ContactId,
    phone: string,
    content: SendContent,
    channel: OutboundChannel | null,
    windowEnd: number | null,
    inline: boolean,
    messageUuid?: MessageId
  ) =>
    Effect.gen(function* () {
      const settings = yield* SendQueueSettings
      const nowMs = yield* Clock.currentTimeMillis
      const bypass = bypassesQueue(transport, channel?.uuid ?? null)
      const lease = yield* random.uuid()
      const placement: OutboxPlacement = {
        to: phone,
        class: "single",
        expires_at: new Date(Math.min(nowMs + settings.ttlMs, windowEnd ?? Infinity)).toISOString(),
        claim: inline || bypass ? { lease, leaseUntil: nowMs + settings.leaseMs, settleMs: settings.settleMs, bypass } : null
      }
      const record = { ...recordOf(content), channel_uuid: channel?.uuid ?? null, uuid: messageUuid }
      const { chat, message } = yield* chats.appendOutbound(organizationId, contactId, record, placement)
      if (message.status !== "sending") return sendResultOf(chat.uuid, message)
      const claimed: ClaimedMessage = {
        organization_id: organizationId,
        message,
        lease,
        to: phone,
        class: "single",
        expires_at: placement.expires_at,
        pair_rate_waits: 0,
        // Its pacing slot (when it has a channel) was reserved at its creation.
        not_before: Date.parse(message.created_at),
        reclaimed: false
      }
      const outcome = yield* attemptClaimedMessage({ transport, channels, lastInboundAt: storage.chats.lastInboundAt }, claimed, channel)
      const recorded = yield* recordSendOutcome(claimed, outcome).pipe(Effect.provideService(Storage, storage))
      // Not recorded: the contact (and so the message) was deleted meanwhile, or another process took it over.
      return sendResultOf(chat.uuid, Option.getOrElse(recorded, () => message))
    }).pipe(Effect.uninterruptible)

  /**
   * Steps 1 and 3–6 around `readContent` (which adds step 1's content issues); with
   * `options.messageUuid`, an existing message with that uuid answered instead of 3–6.
   */
  const send = <C extends SendContent, E, R>(
    organizationId: OrganizationId,
    input: Parameters<typeof readRecipient>[1] & { readonly channel_uuid?: unknown },
    options: SendOptions | undefined,
    readContent: (collector: IssueCollector) => Effect.Effect<C, E, R>
  ) =>
    Effect.gen(function* () {
      const { defaultCountry } = yield* Settings
      const collector = new IssueCollector()
      const recipient = yield* readRecipient(collector, input, defaultCountry, (phone) => isStoredPhone(organizationId, phone))
      const requestedChannel = collector.optionalUuid("channel_uuid", input.channel_uuid)
      const content = yield* readContent(collector)
      if (collector.issues.length > 0) return yield* new InvalidInput({ issues: collector.issues })
      const messageUuid = options?.messageUuid
      if (messageUuid !== undefined) {
        // A takeover of an Idempotency-Key whose first attempt created the message: answer it.
        const created = yield* storage.chats.findMessage(organizationId, messageUuid)
        if (Option.isSome(created)) return sendResultOf(created.value.chat_uuid, created.value)
      }
      const chosen = yield* chooseChannel(organizationId, requestedChannel)
      // The channel and the window are settled before anything is written.
      const existing = Option.map(yield* storage.contacts.findByPhone(organizationId, recipient.phone), (contact) => contact.uuid)
      const channel = Option.isNone(existing) ? chosen.channel : yield* refineChannel(organizationId, existing.value, chosen)
      const windowEnd = channel === null || !isFreeForm(content.type) ? null : yield* requireOpenWindow(organizationId, existing, channel.uuid)
      const contactId = yield* upsertContact(organizationId, recipient)
      return yield* deliver(organizationId, contactId, recipient.phone, content, channel, windowEnd, true, messageUuid)
    })

  const sendTemplate = Effect.fn("Messaging.sendTemplate")(function* (
    organizationId: OrganizationId,
    input: SendTemplateInput,
    options?: SendOptions
  ) {
    return yield* send(organizationId, input ?? {}, options, (collector) =>
      Effect.gen(function* () {
        const shape = readTemplateShape(collector, input?.template)
        const content: SendContent = { type: "template", template: { name: "", language: { code: "" }, components: [] }, text: "" }
        // Step 2 only for a well-formed input, so one 400 lists every shape problem first.
        if (shape === null || collector.issues.length > 0) return content
        const resolved = yield* templates.resolveForSend(organizationId, shape)
        return { type: "template", template: resolved.send, text: templatePreview(resolved.text) } as const
      })
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
    return yield* send(organizationId, { phone: input?.phone, channel_uuid: input?.channel_uuid }, options, (collector) =>
      Effect.succeed({ type: "text", text: readMessageText(collector, input?.message) } as const)
    )
  })

  const sendMedia = Effect.fn("Messaging.sendMedia")(function* (
    organizationId: OrganizationId,
    input: SendMediaInput,
    options?: SendOptions
  ) {
    return yield* send(organizationId, { phone: input?.phone, channel_uuid: input?.channel_uuid }, options, (collector) =>
      Effect.succeed({ type: "media", media: readMedia(collector, input?.media) } as const)
    )
  })

  const receive = Effect.fnUntraced(function* (organizationId: OrganizationId, input: InboundMessageInput) {
    const receipt = yield* chats.receiveInbound(organizationId, input)
    const { message, chat } = receipt
    if (receipt.duplicate || message.type !== "text" || message.text === null) return { ...receipt, auto_reply: null }
    const reply = yield* replies.matchInbound(organizationId, message.text)
    if (Option.isNone(reply)) return { ...receipt, auto_reply: null }
    const auto_reply = yield* Effect.gen(function* () {
      // The channel the message came in by; removed meanwhile → the send's default.
      const chosen = yield* chooseChannel(organizationId, message.channel_uuid).pipe(
        Effect.catchTag("RecordNotFound", () => chooseChannel(organizationId, null))
      )
      const channel = yield* refineChannel(organizationId, chat.contact.uuid, chosen)
      // It answers the contact, so its window is open; the window's end still bounds its expiry.
      const end = channel === null ? null : yield* windowEnd(organizationId, chat.contact.uuid, channel.uuid)
      const content: SendContent = { type: "text", text: reply.value.response }
      return yield* deliver(organizationId, chat.contact.uuid, chat.contact.phone, content, channel, end, false)
    }).pipe(
      // The contact was deleted between the inbound message and its answer: nobody to answer.
      Effect.catchTag("RecordNotFound", () => Effect.succeed(null)),
      // The channel's token cannot be opened: the message is kept, the reply not sent.
      Effect.catchTags({
        SecretKeyMissing: (error) => logUnansweredReply(organizationId, message.uuid, error.message),
        SecretKeyMismatch: (error) => logUnansweredReply(organizationId, message.uuid, error.message)
      }),
      // A stored reply always makes a valid text message: a refusal is a bug.
      Effect.catchTag("InvalidInput", (error) => Effect.die(error))
    )
    const result: ReceiveResult = { ...receipt, auto_reply }
    return result
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

  const retryMessage = Effect.fn("Messaging.retryMessage")(function* (organizationId: OrganizationId, id: MessageId) {
    const settings = yield* SendQueueSettings
    const nowMs = yield* Clock.currentTimeMillis
    const end = yield* retryWindowEnd(organizationId, id, nowMs)
    const outcome = yield* storage.outbox.retry(
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
  const retryWindowEnd = (organizationId: OrganizationId, id: MessageId, nowMs: number) =>
    Effect.gen(function* () {
      const found = yield* storage.chats.findMessage(organizationId, id)
      if (Option.isNone(found)) return null
      const message = found.value
      if (message.direction !== "outbound" || message.channel_uuid === null || !isFreeForm(message.type)) return null
      const end = yield* windowEnd(organizationId, message.contact_uuid, message.channel_uuid)
      const open = end !== null && end > nowMs
      if (!open && message.status === "failed" && message.failure?.code === OUTSIDE_WINDOW_FAILURE.code) {
        return yield* new MessageNotRetryable({ message_uuid: message.uuid, status: message.status, window_closed: true })
      }
      return end
    })

  const cancelMessage = Effect.fn("Messaging.cancelMessage")(function* (organizationId: OrganizationId, id: MessageId) {
    const outcome = yield* storage.outbox.cancel(organizationId, id, CANCELLED_FAILURE, yield* nowIso)
    return yield* moved(id, outcome, (message) => new MessageNotCancellable({ message_uuid: message.uuid, status: message.status }))
  })

  const service: MessagingService = { sendTemplate, sendText, sendMedia, receive, retryMessage, cancelMessage }
  return service
})

/** The message record of a send (`Chats.appendOutbound` input). */
const recordOf = (content: SendContent): OutboundMessageInput => {
  switch (content.type) {
    case "text":
      return { type: "text", text: content.text }
    case "template":
      return { type: "template", template: content.template, text: content.text }
    case "media":
      return { type: "media", media: content.media }
  }
}

/** A send's answer from the message as stored (docs/messaging.md "Endpoints"). */
const sendResultOf = (chatId: ChatId, message: Message): SendResult => ({
  message_id: message.uuid,
  chat_uuid: chatId,
  contact_uuid: message.contact_uuid,
  status: message.status,
  provider_message_id: message.provider_message_id,
  next_attempt_at: message.next_attempt_at,
  failure: message.failure
})

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


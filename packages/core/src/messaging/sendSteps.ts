import { BlobStore } from "../storage/BlobStore.js"
import { Clock, Effect, Option } from "effect"
import type { ChannelsService } from "../channels/Channels.js"
import type { ChatsService } from "../chats/ChatsService.js"
import { Settings } from "../common/Settings.js"
import { nowIso, readSendAt } from "../internal/time.js"
import { IssueCollector } from "../internal/validation.js"
import type { ChatId, OutboundMessageInput } from "../model/chats.js"
import type { ChannelId } from "../model/channels.js"
import { contactsLimitExceeded, InvalidInput, RecordNotFound } from "../model/commonErrors.js"
import type { ContactId } from "../model/contacts.js"
import { type InteractiveContent, interactiveStoredMedia } from "../model/interactive.js"
import type { Message, MessageId, OutboundMediaContent } from "../model/messages.js"
import { OutsideCustomerServiceWindow } from "../model/messagingErrors.js"
import { MAX_SEND_AT_AHEAD_MS, type SendResult } from "../model/messaging.js"
import type { OrganizationId } from "../model/organizations.js"
import type { TemplateSendObject } from "../model/templates.js"
import type { SecureRandomService } from "../random/SecureRandom.js"
import type { ClaimedMessage, OutboxPlacement } from "../storage/OutboxRepository.js"
import { Storage, type StorageService } from "../storage/Storage.js"
import { type MessageTransportService, type OutboundChannel, transportKindOf } from "./MessageTransport.js"
import { readRecipient, type SendRecipient } from "./readSend.js"
import { attemptClaimedMessage, bypassesQueue, recordSendOutcome, SendQueueSettings, windowEndMs } from "./SendQueue.js"

// The steps of a send (docs/messaging.md), in the order `Messaging` runs them: the
// recipient (step 1), the channel, the customer service window (step 3), the contact
// (step 4), the placement in the send queue (step 5) and the inline first attempt (step 6).

/** The services every step of a send uses, resolved once by `Messaging.layer`. */
export interface SendServices {
  readonly storage: StorageService
  readonly random: SecureRandomService
  readonly transport: MessageTransportService
  readonly chats: ChatsService
  readonly channels: ChannelsService
}

/** What a send carries, in the shapes of both the message record and the transport. */
export type SendContent =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "template"; readonly template: TemplateSendObject; readonly text: string }
  | { readonly type: "media"; readonly media: OutboundMediaContent }
  | { readonly type: "interactive"; readonly interactive: InteractiveContent }
  | { readonly type: "reaction"; readonly reaction: { readonly message_id: string; readonly emoji: string; readonly target_uuid: string } }

/** The fields every send reads beside its content: the phone, the contact's details, `channel_uuid`, `send_at`. */
export type RecipientInput = Parameters<typeof readRecipient>[1] & { readonly channel_uuid?: unknown; readonly send_at?: unknown }

/**
 * A channel chosen before anything is written, its WhatsApp Business Account (`wabaId`,
 * `null` with no channel: the account whose templates a template send uses), and whether
 * the send named it.
 */
export interface ChosenChannel {
  readonly channel: OutboundChannel | null
  readonly wabaId: string | null
  readonly requested: boolean
}

/**
 * Step 1: the recipient (`phone` in E.164, or an unverified phone a contact already has:
 * docs/contacts.md "Unverified phones"), the requested `channel_uuid`, `sendAt` (epoch ms:
 * the `send_at` of a scheduled send, `null` when absent or not in the future; more than
 * `MAX_SEND_AT_AHEAD_MS` ahead is an issue naming `send_at`) and the content `readContent`
 * reads; every problem is one issue of `InvalidInput`, nothing written.
 */
export const readSendInput = <C, E, R>(
  services: SendServices,
  organizationId: OrganizationId,
  input: RecipientInput,
  readContent: (collector: IssueCollector) => Effect.Effect<C, E, R>
) =>
  Effect.gen(function* () {
    const { defaultCountry } = yield* Settings
    const collector = new IssueCollector()
    const recipient = yield* readRecipient(collector, input, defaultCountry, (phone) =>
      Effect.map(services.storage.contacts.findByPhone(organizationId, phone), Option.isSome)
    )
    const requestedChannel = collector.optionalUuid("channel_uuid", input.channel_uuid)
    const sendAt = yield* readScheduledAt(collector, input.send_at)
    const content = yield* readContent(collector)
    if (collector.issues.length > 0) return yield* new InvalidInput({ issues: collector.issues })
    return { recipient, requestedChannel, sendAt, content }
  })

/**
 * A send's `send_at` as epoch ms when it lies ahead of now (by Effect's `Clock`), else
 * `null` (absent, or now or past: the send leaves now); an issue naming `send_at` when it
 * is not an RFC 3339 date-time with an offset or lies more than `MAX_SEND_AT_AHEAD_MS` ahead.
 */
const readScheduledAt = (collector: IssueCollector, value: unknown) =>
  Effect.map(Clock.currentTimeMillis, (nowMs) => {
    const sendAt = readSendAt(collector, value)
    if (sendAt === null || sendAt <= nowMs) return null
    if (sendAt - nowMs > MAX_SEND_AT_AHEAD_MS) {
      collector.add("out_of_range", "send_at", "send_at must be at most 30 days ahead")
      return null
    }
    return sendAt
  })

/**
 * A channel of the organization, as the transport takes it, with its account;
 * `RecordNotFound` when it has none with this uuid.
 */
const openChannel = (services: SendServices, organizationId: OrganizationId, id: string, requested: boolean) =>
  Effect.map(
    services.channels.getWithToken(organizationId, id as ChannelId),
    ({ access_token, channel }): ChosenChannel => ({
      channel: { uuid: channel.uuid, phone_number_id: channel.phone_number_id, access_token },
      wabaId: channel.waba_id,
      requested
    })
  )

/**
 * The channel of a send, before anything is written: the requested one (an unknown uuid
 * → `RecordNotFound` naming `channel_uuid`), else the organization's default (its first
 * channel), else `null`. {@link refineChannel} then prefers the channel the contact last
 * wrote to, once the contact is known.
 */
export const chooseChannel = Effect.fn("Messaging.chooseChannel")(function* (
  services: SendServices,
  organizationId: OrganizationId,
  requested: string | null
) {
  if (requested !== null) {
    return yield* openChannel(services, organizationId, requested, true).pipe(
      Effect.catchTag("RecordNotFound", () =>
        Effect.fail(new RecordNotFound({ missing: [{ resource: "channel", uuid: requested, field: "channel_uuid" }] }))
      )
    )
  }
  const [first] = yield* services.storage.channels.list(organizationId)
  if (first === undefined) {
    const none: ChosenChannel = { channel: null, wabaId: null, requested: false }
    return none
  }
  return yield* openChannel(services, organizationId, first.uuid, false)
})

/**
 * The contact's last inbound channel when it is not the chosen one and still exists, else
 * the chosen one (with its account).
 */
export const refineChannel = (
  services: SendServices,
  organizationId: OrganizationId,
  contactId: ContactId,
  chosen: ChosenChannel
) =>
  Effect.gen(function* () {
    if (chosen.requested || chosen.channel === null) return chosen
    const last = yield* services.storage.chats.lastInboundChannel(organizationId, contactId)
    if (Option.isNone(last) || last.value === chosen.channel.uuid) return chosen
    // Removed since the contact wrote: the default stands.
    return yield* openChannel(services, organizationId, last.value, false).pipe(
      Effect.catchTag("RecordNotFound", () => Effect.succeed(chosen))
    )
  })

/** The end of the contact's customer service window on the channel, in ms since the epoch; `null` when it never wrote there. */
export const windowEnd = (services: SendServices, organizationId: OrganizationId, contactId: ContactId, channelId: string) =>
  Effect.map(services.storage.chats.lastInboundAt(organizationId, contactId, channelId), windowEndMs)

/**
 * Step 3: the end of the customer service window (ms since the epoch) of the contact
 * (`None`: it does not exist, so it never wrote) on the channel, or
 * `OutsideCustomerServiceWindow` when it is not open now (docs/messaging.md "The customer
 * service window").
 */
export const requireOpenWindow = Effect.fn("Messaging.requireOpenWindow")(function* (
  services: SendServices,
  organizationId: OrganizationId,
  contact: Option.Option<ContactId>,
  channelId: string
) {
  const end = Option.isNone(contact) ? null : yield* windowEnd(services, organizationId, contact.value, channelId)
  if (end === null || end <= (yield* Clock.currentTimeMillis)) {
    return yield* new OutsideCustomerServiceWindow({
      channel_uuid: channelId,
      window_expires_at: end === null ? null : new Date(end).toISOString()
    })
  }
  return end
})

/** Step 4: the contact's uuid after the upsert by phone, or `PlanLimitExceeded` (`contacts_limit`) with nothing written. */
export const upsertContact = Effect.fn("Messaging.upsertContact")(function* (
  services: SendServices,
  organizationId: OrganizationId,
  recipient: SendRecipient
) {
  const { storage } = services
  const organization = yield* storage.organizations.findById(organizationId)
  // An organization that does not exist may create nothing (as in Contacts.importBulk).
  const contactsLimit = Option.match(organization, { onNone: () => 0, onSome: (org) => org.plan.contacts_limit })
  const outcome = yield* storage.contacts.importBulk(organizationId, {
    rows: [{ phone: recipient.phone, phone_valid: recipient.phone_valid, details: recipient.details, groups: [] }],
    ids: yield* services.random.uuids(1),
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
 * A message to place in the send queue: its contact and phone, content, channel, the end
 * of its customer service window (ms since the epoch, `null` when none bounds it), whether
 * it may be attempted in the request (`inline`), the uuid an Idempotency-Key chose, and
 * `sendAt` (ms since the epoch: a scheduled send's time, ahead of now; absent or `null`: now).
 */
export interface Delivery {
  readonly organizationId: OrganizationId
  readonly contactId: ContactId
  readonly phone: string
  readonly content: SendContent
  readonly channel: OutboundChannel | null
  readonly windowEnd: number | null
  readonly inline: boolean
  readonly messageUuid?: MessageId | undefined
  readonly sendAt?: number | null | undefined
}

/**
 * Steps 5–6: {@link placeMessage}, then, when it was claimed, {@link attemptInline}; the
 * send's result either way. A message another attempt of the send stored first under the
 * same `messageUuid` (an Idempotency-Key taken over) is answered as stored, never
 * attempted here: that attempt owns it. Uninterruptible: a client that goes away never
 * abandons an attempt.
 */
export const deliver = (services: SendServices, delivery: Delivery) =>
  Effect.gen(function* () {
    const placed = yield* placeMessage(services, delivery)
    if (placed.duplicate || placed.message.status !== "sending") return sendResultOf(placed.chatId, placed.message)
    return yield* attemptInline(services, delivery, placed)
  }).pipe(Effect.uninterruptible)

/**
 * A message appended to its chat and the send queue, with the placement and lease it was
 * stored under; `duplicate`: the message another attempt stored first with that uuid, as
 * stored (neither that placement nor that lease is its).
 */
interface Placed {
  readonly chatId: ChatId
  readonly message: Message
  readonly placement: OutboxPlacement
  readonly lease: string
  readonly duplicate: boolean
}

/**
 * Step 5: append the message to the contact's chat and to the send queue in one atomic
 * step (docs/messaging.md "The send queue"), claimed at once (`sending`, under a fresh
 * lease) when it may go now — `inline`, or always through the recording transport — else
 * `queued` for the dispatcher. It expires at now + the TTL, or at the window's end when
 * that is earlier; it gets `messageUuid` when given, else a fresh uuid, and the kind of
 * transport it is handed to (`transportKindOf`). A scheduled send (`sendAt`) is stored
 * `scheduled` until then (`OutboxPlacement.notBefore`), never claimed here, and expires at
 * `sendAt` + the TTL (its window is checked when it leaves).
 */
const placeMessage = (services: SendServices, delivery: Delivery) =>
  Effect.gen(function* () {
    const settings = yield* SendQueueSettings
    const nowMs = yield* Clock.currentTimeMillis
    const { channel } = delivery
    const bypass = bypassesQueue(services.transport, channel?.uuid ?? null)
    const lease = yield* services.random.uuid()
    const sendAt = delivery.sendAt ?? null
    const placement: OutboxPlacement = sendAt !== null && sendAt > nowMs
      ? {
        to: delivery.phone,
        class: "single",
        expires_at: new Date(sendAt + settings.ttlMs).toISOString(),
        claim: null,
        notBefore: new Date(sendAt).toISOString()
      }
      : {
        to: delivery.phone,
        class: "single",
        expires_at: new Date(Math.min(nowMs + settings.ttlMs, delivery.windowEnd ?? Infinity)).toISOString(),
        claim: delivery.inline || bypass ? { lease, leaseUntil: nowMs + settings.leaseMs, settleMs: settings.settleMs, bypass } : null
      }
    const record = {
      ...recordOf(delivery.content),
      channel_uuid: channel?.uuid ?? null,
      transport: transportKindOf(services.transport, { channel }),
      uuid: delivery.messageUuid
    }
    const { chat, message, duplicate } = yield* services.chats.appendOutbound(delivery.organizationId, delivery.contactId, record, placement)
    const placed: Placed = { chatId: chat.uuid, message, placement, lease, duplicate }
    return placed
  })

/**
 * Step 6: the first attempt of a claimed message through the transport
 * (`attemptClaimedMessage`), its outcome recorded: `sent` with the provider's id, `failed`
 * for good, `queued` again for a retry, or `sending` when the outcome is unknown.
 */
const attemptInline = (services: SendServices, delivery: Delivery, placed: Placed) =>
  Effect.gen(function* () {
    const { storage } = services
    const claimed: ClaimedMessage = {
      organization_id: delivery.organizationId,
      message: placed.message,
      lease: placed.lease,
      to: delivery.phone,
      class: "single",
      expires_at: placed.placement.expires_at,
      pair_rate_waits: 0,
      // Its pacing slot (when it has a channel) was reserved at its creation.
      not_before: Date.parse(placed.message.created_at),
      reclaimed: false,
      scheduled_at: null
    }
    const blobs = yield* Effect.serviceOption(BlobStore)
    const attempt = {
      transport: services.transport,
      channels: services.channels,
      lastInboundAt: storage.chats.lastInboundAt,
      media: { repository: storage.media, blobs: Option.getOrUndefined(blobs) }
    }
    const outcome = yield* attemptClaimedMessage(attempt, claimed, delivery.channel)
    const recorded = yield* recordSendOutcome(claimed, outcome).pipe(Effect.provideService(Storage, storage))
    // Not recorded: the contact (and so the message) was deleted meanwhile, or another process took it over.
    return sendResultOf(placed.chatId, Option.getOrElse(recorded, () => placed.message))
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
    case "interactive":
      return { type: "interactive", text: content.interactive.body.text, content: { interactive: content.interactive } }
    case "reaction":
      return { type: "reaction", content: { reaction: content.reaction } }
  }
}

/**
 * Whether a send's content names a file Switchboard stores (a media send by `media_uuid`,
 * an interactive message whose header does): it is uploaded to the provider first, its own
 * step, so such a send never goes in the request (docs/media.md "Sending a stored file").
 */
export const usesStoredMedia = (content: SendContent): boolean =>
  content.type === "media" ? content.media.media_uuid !== undefined : content.type === "interactive" && interactiveStoredMedia(content.interactive) !== undefined

/**
 * A send's answer from the message as stored (docs/messaging.md "Endpoints"). Every message
 * a send creates stores its `transport`; a message without one (none is answered by a send)
 * reads as the stores' migrations fill older rows: `whatsapp` with a channel, else `recording`.
 */
export const sendResultOf = (chatId: ChatId, message: Message): SendResult => ({
  message_id: message.uuid,
  chat_uuid: chatId,
  contact_uuid: message.contact_uuid,
  status: message.status,
  provider_message_id: message.provider_message_id,
  next_attempt_at: message.next_attempt_at,
  failure: message.failure,
  transport: message.transport ?? (message.channel_uuid === null ? "recording" : "whatsapp")
})

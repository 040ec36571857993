import { reactToOutboundFailure } from "./failureReactions.js"
import { Effect, Option } from "effect"
import type { CountryCode } from "libphonenumber-js"
import type { ContactId } from "../model/contacts.js"
import { InvalidInput, RecordNotFound } from "../model/commonErrors.js"
import { nowIso } from "../internal/time.js"
import { isRecord, IssueCollector, UNVERIFIED_PHONE, UUID_PATTERN } from "../internal/validation.js"
import {
  MESSAGE_STATUS_PREDECESSORS,
  MessageStatus,
  PENDING_STATUS_TTL_MS,
  type Message,
  type MessageFailure,
  type MessageId,
  type MessageMediaContent,
  TransportKind
} from "../model/messages.js"
import { INBOUND_MEDIA_ID_LIFETIME_MS, mediaFailure } from "../model/media.js"
import type { NewInboundMedia } from "../storage/MediaRepository.js"
import type { OrganizationId } from "../model/organizations.js"
import type { SecureRandomService } from "../random/SecureRandom.js"
import { Settings } from "../common/Settings.js"
import type { ChatAppendOutcome, ChatAppendRequest, ProviderStatusOutcome } from "../storage/ChatRepository.js"
import type { OutboxPlacement } from "../storage/OutboxRepository.js"
import type { StorageService } from "../storage/Storage.js"
import type { ChatsService } from "./ChatsService.js"
import { providerMessageId, readContent, readInboundContent } from "./messageContent.js"
import { inboundWindowInstant } from "../model/window.js"
import type {
  ChatId,
  ChatStatus,
  InboundMessageInput,
  InboundReceipt,
  OutboundAppend,
  OutboundMessageInput
} from "../model/chats.js"
import { MAX_NAME_LENGTH } from "../model/names.js"

// The message side of the Chats service: inbound and outbound messages, message statuses,
// opening a chat. Each rule is decided here and handed to the store as one atomic request.

/** Statuses an inbound message reopens (docs/chats.md "Status transitions"). */
const REOPENED_BY_INBOUND: ReadonlyArray<ChatStatus> = ["resolved", "closed"]

const invalid = (collector: IssueCollector) => new InvalidInput({ issues: collector.issues })

/**
 * The sender's phone of an inbound message: E.164 when libphonenumber-js validates it,
 * else, when it is `+` and 1–20 digits (a WhatsApp id), as given and unverified
 * (docs/contacts.md "Unverified phones"): a customer's message is never dropped for its
 * number. Anything else is an issue.
 */
const inboundPhone = (
  collector: IssueCollector,
  value: unknown,
  defaultCountry: CountryCode | undefined
): { readonly phone: string; readonly valid: boolean } => {
  const read = collector.phoneCandidate("phone", value, defaultCountry)
  if (!read.valid && read.phone !== "" && !UNVERIFIED_PHONE.test(read.phone)) collector.invalidPhone("phone", read.phone)
  return read
}

/** Whether a stored status report moved an outbound message to `failed`: core then reacts to its failure. */
const changedToFailed = (
  outcome: ProviderStatusOutcome,
  reported: MessageStatus
): outcome is Extract<ProviderStatusOutcome, { readonly _tag: "Updated" }> =>
  outcome._tag === "Updated" && outcome.changed && reported === "failed"

/** Whether a report no message has yet names our send (its uuid as callback data): it settles that send. */
const settlesSend = (outcome: ProviderStatusOutcome, callbackData: string | undefined): callbackData is string =>
  outcome._tag === "Pending" && callbackData !== undefined && UUID_PATTERN.test(callbackData)

/** `receiveInbound`, `appendOutbound`, `updateMessageStatus` and `ensure` of the Chats service. */
export const makeMessageOperations = (
  storage: StorageService,
  random: SecureRandomService
): Pick<ChatsService, "receiveInbound" | "appendOutbound" | "updateMessageStatus" | "applyProviderStatus" | "ensure"> => {
  /** Appends per `request` built from three fresh ids and the current time. */
  const append = (organizationId: OrganizationId, build: (ids: ReadonlyArray<string>, now: string) => ChatAppendRequest) =>
    Effect.flatMap(Effect.zip(random.uuids(3), nowIso), ([ids, now]) =>
      storage.chats.appendMessage(organizationId, build(ids, now))
    )

  const receiveInbound = Effect.fnUntraced(function* (
    organizationId: OrganizationId,
    input: InboundMessageInput
  ) {
    const { defaultCountry } = yield* Settings
    const collector = new IssueCollector()
    const phone = inboundPhone(collector, input.phone, defaultCountry)
    const content = readInboundContent(collector, input, input.media_fetch?.too_large === true)
    const providerId = providerMessageId(collector, input.provider_message_id)
    const first_name = collector.optionalText("first_name", input.first_name)
    const last_name = collector.optionalText("last_name", input.last_name)
    const channelId = collector.optionalUuid("channel_uuid", input.channel_uuid)
    if (collector.issues.length > 0) return yield* invalid(collector)
    // A reaction is not something to read or answer: it neither counts as unread nor reopens.
    const isReaction = content.type === "reaction"
    // A media message through a channel gets its media record (docs/media.md "Inbound").
    const mediaUuid = content.media !== null && channelId !== null && input.media_fetch !== undefined ? yield* random.uuid() : null
    const outcome: ChatAppendOutcome = yield* append(organizationId, ([contactId, chatId, messageId], now) => {
      const media = mediaUuid === null ? undefined : inboundMediaRecord(mediaUuid, content.media!, input.media_fetch!, channelId!, now)
      return {
        contact: { _tag: "ByPhone", phone: phone.phone, create: { uuid: contactId as ContactId, first_name, last_name, phone_valid: phone.valid } },
        newChat: { uuid: chatId as ChatId, status: "open" },
        message: newMessage(
          messageId!,
          "inbound",
          media === undefined ? content : { ...content, media: { ...content.media!, media_uuid: media.uuid, status: media.status, failure: media.failure } },
          "delivered",
          providerId,
          now,
          channelId
        ),
        unreadIncrement: isReaction ? 0 : 1,
        reopen: { from: isReaction ? [] : REOPENED_BY_INBOUND, to: "open" },
        dedupe: true,
        now,
        // Through a channel, the message opens (or extends) the customer service window there.
        ...(channelId === null ? {} : { inboundAt: inboundWindowInstant(content.content, Date.parse(now)) }),
        ...(media === undefined ? {} : { media }),
        ...replyAndReaction(content, now)
      }
    })
    switch (outcome._tag) {
      case "Appended":
        return receipt(outcome, false)
      case "Duplicate":
        return { chat: outcome.chat, message: outcome.message, contact_created: false, chat_created: false, duplicate: true }
      case "ContactNotFound":
        // A contact found by phone is created when missing: a store answering this is broken.
        return yield* Effect.dieMessage("appendMessage answered ContactNotFound for a contact by phone")
    }
  })

  const appendOutbound = Effect.fn("Chats.appendOutbound")(function* (
    organizationId: OrganizationId,
    contactId: ContactId,
    input: OutboundMessageInput,
    outbox?: OutboxPlacement
  ) {
    const collector = new IssueCollector()
    const content = readContent(collector, input, ["text", "template", "media", "interactive", "reaction"])
    const providerId = providerMessageId(collector, input.provider_message_id)
    const channelId = collector.optionalUuid("channel_uuid", input.channel_uuid)
    const transport = readTransport(collector, input.transport)
    if (collector.issues.length > 0) return yield* invalid(collector)
    const outcome = yield* append(organizationId, ([, chatId, messageId], now) => ({
      contact: { _tag: "ById", uuid: contactId },
      newChat: { uuid: chatId as ChatId, status: "open" },
      message: newMessage(input.uuid ?? messageId!, "outbound", content, "queued", providerId, now, channelId, transport),
      unreadIncrement: 0,
      reopen: { from: [], to: "open" },
      dedupe: false,
      now,
      ...(outbox === undefined ? {} : { outbox })
    }))
    switch (outcome._tag) {
      case "Appended": {
        const result: OutboundAppend = { chat: outcome.chat, message: outcome.message, chat_created: outcome.chatCreated, duplicate: false }
        return result
      }
      case "Duplicate": {
        // Without dedupe, only a message with `input.uuid`: another attempt of the same send wrote it first.
        const result: OutboundAppend = { chat: outcome.chat, message: outcome.message, chat_created: false, duplicate: true }
        return result
      }
      case "ContactNotFound":
        return yield* new RecordNotFound({ missing: [{ resource: "contact", uuid: contactId }] })
    }
  })

  const updateMessageStatus = Effect.fn("Chats.updateMessageStatus")(function* (
    organizationId: OrganizationId,
    id: MessageId,
    status: MessageStatus,
    providerMessageIdInput?: string,
    failureInput?: MessageFailure
  ) {
    const collector = new IssueCollector()
    readStatus(collector, status)
    const providerId = providerMessageId(collector, providerMessageIdInput)
    const failure = failureInput === undefined ? undefined : readFailure(collector, status, failureInput)
    if (collector.issues.length > 0) return yield* invalid(collector)
    const outcome = yield* storage.chats.updateMessageStatus(organizationId, id, {
      status,
      from: MESSAGE_STATUS_PREDECESSORS[status],
      ...(failure === undefined ? {} : { failure }),
      ...(providerId === null ? {} : { provider_message_id: providerId }),
      now: yield* nowIso
    })
    if (outcome._tag === "NotFound") return yield* new RecordNotFound({ missing: [{ resource: "message", uuid: id }] })
    return outcome.message
  })

  // Plain Effects, no generator, on the common path: every status notification of Meta's
  // webhook runs it (docs/benchmarks.md).
  const applyProviderStatus: ChatsService["applyProviderStatus"] = (
    organizationId,
    providerMessageIdInput,
    status,
    failureInput,
    callbackData
  ) => {
    const collector = new IssueCollector()
    const statusIssue = readStatus(collector, status)
    const providerId = collector.requiredText("provider_message_id", providerMessageIdInput, MAX_NAME_LENGTH)
    const failure = failureInput === undefined ? undefined : readFailure(collector, status, failureInput)
    if (collector.issues.length > 0 || statusIssue) return Effect.fail(invalid(collector))
    const reported = status as Exclude<MessageStatus, "scheduled" | "queued" | "sending">
    return Effect.flatMap(nowIso, (now) =>
      Effect.flatMap(
        storage.chats.updateMessageStatusByProviderId(organizationId, providerId, {
          status: reported,
          from: MESSAGE_STATUS_PREDECESSORS[reported],
          ...(failure === undefined ? {} : { failure }),
          now,
          pendingUntil: new Date(Date.parse(now) + PENDING_STATUS_TTL_MS).toISOString()
        }),
        (outcome) =>
          (failure !== undefined && changedToFailed(outcome, reported)) || settlesSend(outcome, callbackData)
            ? afterProviderStatus(organizationId, providerId, reported, failure, callbackData, now, outcome)
            : Effect.succeed(outcome)
      )
    )
  }

  /**
   * What a stored status report may still do: a `failed` that changed an outbound message
   * reacts to the failure; a report no message has yet, with our send's uuid as its
   * callback data, settles that send's unknown outcome.
   */
  const afterProviderStatus = Effect.fnUntraced(function* (
    organizationId: OrganizationId,
    providerId: string,
    reported: Exclude<MessageStatus, "scheduled" | "queued" | "sending">,
    failure: MessageFailure | undefined,
    callbackData: string | undefined,
    now: string,
    outcome: ProviderStatusOutcome
  ) {
    if (failure !== undefined && changedToFailed(outcome, reported)) {
      yield* reactToOutboundFailure(storage, organizationId, outcome.message, failure, now)
    }
    if (!settlesSend(outcome, callbackData)) return outcome
    // No message has Meta's id yet: the one our send named settles an unknown outcome.
    const settled = yield* storage.outbox.settle(organizationId, callbackData.toLowerCase() as MessageId, {
      provider_message_id: providerId,
      status: reported,
      ...(failure === undefined ? {} : { failure }),
      now
    })
    if (Option.isSome(settled) && settled.value.changed && reported === "failed" && failure !== undefined) {
      yield* reactToOutboundFailure(storage, organizationId, settled.value.message, failure, now)
    }
    return Option.match(settled, {
      onNone: (): ProviderStatusOutcome => outcome,
      onSome: ({ message, changed }): ProviderStatusOutcome => ({ _tag: "Updated", message, changed })
    })
  })

  const ensure = Effect.fn("Chats.ensure")(function* (organizationId: OrganizationId, contactId: ContactId) {
    const uuid = (yield* random.uuid()) as ChatId
    const outcome = yield* storage.chats.ensure(organizationId, contactId, { uuid, status: "open" }, yield* nowIso)
    if (outcome._tag === "ContactNotFound") {
      return yield* new RecordNotFound({ missing: [{ resource: "contact", uuid: contactId }] })
    }
    return { chat: outcome.chat, created: outcome.created }
  })

  return { receiveInbound, appendOutbound, updateMessageStatus, applyProviderStatus, ensure }
}

/**
 * The media record of an inbound media message (docs/media.md "Inbound"): `pending` with a
 * fetch job due now, its provider id lapsing 7 days after receipt; `failed` `too_large`
 * without a job when the provider refused the file (131052) or gave no id.
 */
const inboundMediaRecord = (
  uuid: string,
  media: MessageMediaContent,
  fetch: NonNullable<InboundMessageInput["media_fetch"]>,
  channelUuid: string,
  now: string
): NewInboundMedia => {
  const failed = fetch.too_large || media.id === undefined
  return {
    uuid,
    type: media.type,
    mime_type: media.mime_type ?? "application/octet-stream",
    size: null,
    sha256: null,
    filename: media.filename ?? null,
    status: failed ? "failed" : "pending",
    failure: failed ? mediaFailure("too_large") : null,
    source: "inbound",
    blob_key: null,
    created_at: now,
    stored_at: null,
    fetch: failed
      ? null
      : {
        channel_uuid: channelUuid,
        provider_media_id: media.id!,
        declared_sha256: fetch.declared_sha256,
        expires_at: new Date(Date.parse(now) + INBOUND_MEDIA_ID_LIFETIME_MS).toISOString(),
        next_fetch_at: now
      }
  }
}

/**
 * What the store resolves of an inbound message (`ChatAppendRequest`): the provider id it
 * replies to (`content.context.id`), and for a reaction the reaction to fold into its
 * target (`content.reaction.{message_id, emoji}`; no emoji removes, as Meta sends a
 * removal; at the provider's timestamp when given, else now).
 */
const replyAndReaction = (
  content: ReturnType<typeof readContent>,
  now: string
): Pick<ChatAppendRequest, "replyTo" | "reaction"> => {
  const fields = content.content ?? {}
  const context = fields.context
  const replyTo = isRecord(context) && typeof context.id === "string" && context.id !== "" ? context.id : undefined
  const reaction = content.type === "reaction" && isRecord(fields.reaction) ? fields.reaction : undefined
  const target = typeof reaction?.message_id === "string" && reaction.message_id !== "" ? reaction.message_id : undefined
  const emoji = typeof reaction?.emoji === "string" ? reaction.emoji : ""
  return {
    ...(replyTo === undefined ? {} : { replyTo }),
    ...(target === undefined ? {} : { reaction: { message_id: target, emoji, at: reactionInstant(fields, now) } })
  }
}

/** When a contact reacted: the provider's `timestamp` (seconds) when valid and not after `now`, else `now`. */
const reactionInstant = (fields: Readonly<Record<string, unknown>>, now: string): string => {
  const seconds = typeof fields.timestamp === "string" ? Number(fields.timestamp) : Number.NaN
  const at = Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : Number.NaN
  return Number.isFinite(at) && at <= Date.parse(now) ? new Date(at).toISOString() : now
}

/** A new message record of `content`, created now. */
const newMessage = (
  uuid: string,
  direction: Message["direction"],
  content: ReturnType<typeof readContent>,
  status: MessageStatus,
  provider_message_id: string | null,
  now: string,
  channel_uuid: string | null = null,
  transport: TransportKind | null = null
): ChatAppendRequest["message"] => ({
  uuid: uuid as MessageId,
  direction,
  ...content,
  status,
  provider_message_id,
  failure: null,
  channel_uuid,
  transport,
  attempts: 0,
  next_attempt_at: null,
  broadcast_uuid: null,
  reply_to: null,
  reactions: [],
  created_at: now,
  updated_at: now
})

/** An outbound message's `transport`: a {@link TransportKind}, or `null` when absent; else an issue. */
const readTransport = (collector: IssueCollector, value: unknown): TransportKind | null => {
  if (value === undefined || value === null) return null
  if ((TransportKind.literals as ReadonlyArray<unknown>).includes(value)) return value as TransportKind
  collector.add("invalid_format", "transport", `transport must be one of ${TransportKind.literals.join(", ")}`)
  return null
}

/** Adds an issue unless `status` is a {@link MessageStatus}; whether it added one. */
const readStatus = (collector: IssueCollector, status: unknown): boolean => {
  if ((REPORTED_STATUSES as ReadonlyArray<unknown>).includes(status)) return false
  collector.add("invalid_format", "status", `status must be one of ${REPORTED_STATUSES.join(", ")}`)
  return true
}

/**
 * The statuses a status update may set: every {@link MessageStatus} but the send queue's
 * own `scheduled`, `queued` and `sending`.
 */
const REPORTED_STATUSES: ReadonlyArray<MessageStatus> = ["sent", "delivered", "read", "failed"]

/** Longest `failure.title` kept; a longer provider reason is cut (never refused). */
export const MAX_FAILURE_TITLE_LENGTH = 1024

/** A failure to record with `status`: only with `failed`; `code` 1–255, `title` cut to 1024. */
const readFailure = (collector: IssueCollector, status: MessageStatus, value: MessageFailure): MessageFailure | undefined => {
  if (status !== "failed") {
    collector.add("invalid_format", "failure", "failure is only recorded with the status failed")
    return undefined
  }
  const code = collector.requiredText("failure.code", value?.code, MAX_NAME_LENGTH)
  const title = typeof value?.title === "string" ? value.title.trim().slice(0, MAX_FAILURE_TITLE_LENGTH) : ""
  if (title === "") collector.add("required", "failure.title", "failure.title is required")
  return { code, title }
}

const receipt = (outcome: Extract<ChatAppendOutcome, { _tag: "Appended" }>, duplicate: boolean): InboundReceipt => ({
  chat: outcome.chat,
  message: outcome.message,
  contact_created: outcome.contactCreated,
  chat_created: outcome.chatCreated,
  duplicate
})

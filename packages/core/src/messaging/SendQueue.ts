import { reactToOutboundFailure } from "../chats/failureReactions.js"
import { Cache, Cause, Clock, Context, Duration, Effect, Either, Exit, FiberId, Layer, Option, Random } from "effect"
import { Channels, type ChannelsService } from "../channels/Channels.js"
import type { ChannelId, ChannelWithToken } from "../model/channels.js"
import { CUSTOMER_SERVICE_WINDOW_MS } from "../model/window.js"
import type { ContactId } from "../model/contacts.js"
import {
  DRAIN_MARGIN_MS,
  type LeasedQueue,
  type LeasedQueueOptions,
  runLeasedQueue
} from "../dispatch/LeasedQueue.js"
import { CHANNEL_REMOVED_FAILURE, type Message, type MessageFailure, type MessageId } from "../model/messages.js"
import { type InteractiveContent, interactiveForProvider, interactiveStoredMedia } from "../model/interactive.js"
import type { OrganizationId } from "../model/organizations.js"
import { SecureRandom } from "../random/SecureRandom.js"
import type { StorageError } from "../storage/errors.js"
import { BlobStore, type BlobStoreService } from "../storage/BlobStore.js"
import type { MediaRepository } from "../storage/MediaRepository.js"
import type { TemplateRepository } from "../storage/TemplateRepository.js"
import type { ClaimedMessage, OutboxOutcome, SentOutcome } from "../storage/OutboxRepository.js"
import { Storage, type StorageService } from "../storage/Storage.js"
import { classifyFailure } from "../model/failureClasses.js"
import {
  MessageTransport,
  type MessageTransportService,
  type OutboundChannel,
  type OutboundMessage,
  sendsType,
  TransportFailed,
  type TransportReceipt
} from "./MessageTransport.js"
import { MAX_NAME_LENGTH } from "../model/names.js"
import { isRecord } from "../internal/validation.js"
import { callWithin, hostClock, isLiveClock, promiseWithin } from "../internal/time.js"
import { FIRST_SECOND_LATENESS_MS, handOverWait, type HandOverWindow, handOverWindowOf, inFirstSecond, recordHandOver } from "./handOverWindow.js"

/**
 * The send queue's timings (docs/messaging.md "The send queue"), all in ms:
 * - `retryDelaysMs`: the waits before the 2nd, 3rd, … attempt after a transient failure
 *   or an unknown outcome (plus up to 10% jitter); once spent, the message is `failed`
 *   with its last error (default 5 s, 30 s, 2 min, 10 min, 30 min:
 *   `SWITCHBOARD_SEND_RETRY_DELAYS_MS`);
 * - `timeoutMs`: the longest one attempt may take before its outcome is unknown (default
 *   10 s, `SWITCHBOARD_SEND_TIMEOUT_MS`);
 * - `settleMs`: how long an unknown outcome waits for a status notification naming the
 *   message before it is retried (default 2 min, `SWITCHBOARD_SEND_SETTLE_MS`);
 * - `ttlMs`: how long after its creation a message may still be handed to Meta before it
 *   fails `expired` (default 4 h, `SWITCHBOARD_SEND_TTL_MS`);
 * - `leaseMs`: how long a claim holds a message for its dispatcher (default 60 s,
 *   `SWITCHBOARD_SEND_LEASE_MS`): a message whose process died is taken over once it ends,
 *   so it must exceed `timeoutMs` plus the wait for a pacing slot.
 *
 * @category messaging
 */
export interface SendQueueSettingsValue {
  readonly retryDelaysMs: ReadonlyArray<number>
  readonly timeoutMs: number
  readonly settleMs: number
  readonly ttlMs: number
  readonly leaseMs: number
}

/**
 * The default {@link SendQueueSettingsValue}.
 *
 * @category messaging
 */
export const DEFAULT_SEND_QUEUE_SETTINGS: SendQueueSettingsValue = {
  retryDelaysMs: [5_000, 30_000, 120_000, 600_000, 1_800_000],
  timeoutMs: 10_000,
  settleMs: 120_000,
  ttlMs: 4 * 3_600_000,
  leaseMs: 60_000
}

/**
 * The send queue's timings ({@link SendQueueSettingsValue}); defaults when not provided.
 *
 * @category messaging
 */
export class SendQueueSettings extends Context.Reference<SendQueueSettings>()("@switchboard/core/SendQueueSettings", {
  defaultValue: (): SendQueueSettingsValue => DEFAULT_SEND_QUEUE_SETTINGS
}) {
  /** A Layer providing these settings (fields left out keep their defaults). */
  static readonly layer = (settings: Partial<SendQueueSettingsValue>): Layer.Layer<SendQueueSettings> =>
    Layer.succeed(SendQueueSettings, { ...DEFAULT_SEND_QUEUE_SETTINGS, ...definedFields(settings) })
}

/** The fields of `settings` that are not `undefined`. */
const definedFields = (settings: Partial<SendQueueSettingsValue>): Partial<SendQueueSettingsValue> =>
  Object.fromEntries(Object.entries(settings).filter(([, value]) => value !== undefined))

/**
 * How far ahead of now a claim reserves a channel's pacing slots, in ms: a claimed message
 * waits in its dispatcher until its slot (`ClaimedMessage.not_before`). The slots reserved
 * ahead are what a channel sends from while the next claim runs: with 500 ms, two servers
 * on PostgreSQL (claims of 30–200 ms, records queued up to a second) let channels run dry,
 * and a dry channel's next slots start where the claim is expected to return, so a claim
 * slower than expected handed its first messages back late; the lowest channel's share of
 * its rate read 87–91%, and 91–94% with 800 ms (docs/benchmarks.md "Dispatch on
 * PostgreSQL: slots further ahead").
 *
 * @category messaging
 */
export const PACING_HORIZON_MS = 800

/**
 * How late after its pacing slot a message may still be handed to Meta, in ms, checked in
 * the request's own fiber just before the transport is called. A channel's slots are
 * 1 / (0.95 × `throughput_mps`) s apart, so hand-overs at most 25 ms late put at most
 * ⌈1 025 / slot⌉ messages in any sliding second (49 at 50 messages/s) and leave about
 * 27 ms for what lies between the hand-over and Meta. A later message (a busy event loop, a
 * slow store) goes back to the queue for a new slot instead (no attempt counted). 10 ms
 * was tried: it left more room, but a send's first attempt in the request (its slot
 * reserved as the message was written) then missed it on a loaded machine and answered
 * `queued` (docs/benchmarks.md "Outbound dispatch").
 *
 * @category messaging
 */
export const PACING_LATENESS_MS = 25

/**
 * How long before its pacing slot the dispatcher starts a claimed message's attempt, in ms
 * (`LeasedQueue.startAt`): until then the message waits as plain data, not in a fiber of
 * its own. A claim holds up to {@link PACING_HORIZON_MS} of slots ahead (hundreds of
 * messages on a busy server); each started at once kept its fiber alive through the
 * garbage collector's scavenges, which then copied them all, paused the process long enough
 * to make messages late for their slots, and cost CPU (docs/benchmarks.md "Outbound
 * dispatch"). The lead leaves time for what an attempt does before its slot (the window
 * and the channel, read from the store on a cache miss). A message sent by a stored file
 * starts at once (its upload comes before its slot).
 *
 * @category messaging
 */
export const SEND_START_LEAD_MS = 50

/**
 * The least time between two claims of the send queue's dispatcher, in ms: a busy queue
 * claims the due messages of every channel in one step about ten times a second (each claim
 * reserves pacing slots up to {@link PACING_HORIZON_MS} ahead), instead of once per message.
 *
 * @category messaging
 */
export const SEND_CLAIM_INTERVAL_MS = 100

/**
 * The most messages one dispatcher holds at once (waiting for their slot, in flight, or
 * waiting for their outcome's record): 20 channels at 50 messages/s hold up to 760 waiting
 * for slots within {@link PACING_HORIZON_MS}, and on PostgreSQL records may queue up to a
 * second; with 512, two thirds of the claims there asked for fewer than
 * {@link SEND_CLAIM_LIMIT} (docs/benchmarks.md "Dispatch on PostgreSQL: slots further
 * ahead"). A message held costs a timer and its claimed row.
 *
 * @category messaging
 */
export const SEND_DISPATCH_CONCURRENCY = 1024

/**
 * The most messages one claim of the send queue takes. A claim's write grows with what it
 * takes (on PostgreSQL ~0.1 ms a message, every index of `messages` updated), and its
 * pacing slots start where it is expected to return: a claim of a whole horizon (500
 * messages for 20 channels of 50/s) took 0.3–0.9 s on a loaded machine, returned after its
 * first slots and handed those back. Claims come every {@link SEND_CLAIM_INTERVAL_MS}, so
 * 128 a claim still allows 1 280 messages a second per dispatcher.
 *
 * @category messaging
 */
export const SEND_CLAIM_LIMIT = 128

/**
 * How long a message waits after a pair-rate refusal (Meta's 131056: too many messages to
 * one recipient), in ms: 6 s × 4^`waits` (`waits`, the refusals in a row before this one),
 * at most 5 minutes.
 *
 * @category messaging
 */
export const pairRateWaitMs = (waits: number): number => Math.min(300_000, 6_000 * 4 ** waits)

/** The failure of a message not handed to Meta before its `expires_at`. */
export const EXPIRED_FAILURE: MessageFailure = {
  code: "expired",
  title: "The message was not handed to Meta before it expired"
}

/**
 * The failure of a free-form message (`text`, `media` or `interactive`) through a channel whose customer
 * service window closed before it was handed to Meta (docs/messaging.md "The customer
 * service window").
 */
export const OUTSIDE_WINDOW_FAILURE: MessageFailure = {
  code: "outside_customer_service_window",
  title: "The customer service window closed before the message was sent: only a template message can be sent"
}

/**
/**
 * Whether a message type is free-form (`text`, `media`, `interactive` or an outbound
 * `reaction`): only those need the contact's customer service window open on their channel
 * (docs/messaging.md "The customer service window"); templates are always allowed.
 *
 * @category messaging
 */
export const isFreeForm = (type: Message["type"]): boolean =>
  type === "text" || type === "media" || type === "interactive" || type === "reaction"

/**
 * The end of the contact's customer service window on a channel, in ms since the epoch,
 * from `ChatRepository.lastInboundAt`: `null` when the contact never wrote through it.
 *
 * @category messaging
 */
export const windowEndMs = (lastInboundAt: Option.Option<string>): number | null =>
  Option.match(lastInboundAt, { onNone: () => null, onSome: (at) => Date.parse(at) + CUSTOMER_SERVICE_WINDOW_MS })

/** The failure of a queued message cancelled by `POST /messages/{uuid}/cancel`. */
export const CANCELLED_FAILURE: MessageFailure = { code: "cancelled", title: "The message was cancelled before it was sent" }

/**
 * The `failure` recorded for a transport failure (docs/messaging.md "Failure reasons"):
 * `code` is the provider's error code, else the network error's code, else
 * `network_error`; `title` is the reason. Cut to the lengths a message record holds.
 *
 * @category messaging
 */
export const failureOfTransport = (error: TransportFailed): MessageFailure => {
  const code = (error.provider_code ?? "").trim().slice(0, MAX_NAME_LENGTH)
  const title = error.reason.trim() === "" ? "The provider gave no reason" : error.reason
  return { code: code === "" ? "network_error" : code, title }
}

/** A provider id the message record can hold (trimmed, 1–255 characters), else `null`. */
const usableProviderId = (id: string | null): string | null => {
  const trimmed = id?.trim() ?? ""
  return trimmed === "" || trimmed.length > MAX_NAME_LENGTH ? null : trimmed
}

/**
 * What the transport is asked to deliver for a stored outbound message: its content (an
 * outbound `reaction` row's from `content.reaction {message_id, emoji}`), the recipient
 * `to` and the channel.
 *
 * @category messaging
 */
export const outboundOfRecord = (
  message: Message,
  to: string,
  channel: OutboundChannel | null,
  providerMediaId?: string
): OutboundMessage => {
  const envelope = { message_id: message.uuid, to, channel }
  if (message.type === "template" && message.template !== null) return { ...envelope, type: "template", template: message.template }
  const interactive = interactiveOf(message)
  if (interactive !== undefined) return { ...envelope, type: "interactive", interactive: interactiveForProvider(interactive, providerMediaId) }
  const reaction = message.type === "reaction" && message.direction === "outbound" ? message.content?.reaction : undefined
  if (isRecord(reaction) && typeof reaction.message_id === "string" && typeof reaction.emoji === "string") {
    return { ...envelope, type: "reaction", reaction: { message_id: reaction.message_id, emoji: reaction.emoji } }
  }
  if (message.type === "media" && message.media !== null && (message.media.url !== undefined || providerMediaId !== undefined)) {
    const { type, url, caption, filename } = message.media
    return {
      ...envelope,
      type: "media",
      media: {
        type: type === "sticker" ? "image" : type,
        ...(providerMediaId === undefined ? { url: url! } : { id: providerMediaId }),
        ...(caption === undefined ? {} : { caption }),
        ...(filename === undefined ? {} : { filename })
      }
    }
  }
  return { ...envelope, type: "text", text: message.text ?? "" }
}

/** The interactive object an `interactive` message record keeps (`content.interactive`), else `undefined`. */
const interactiveOf = (message: Message): InteractiveContent | undefined => {
  const interactive = message.type === "interactive" ? message.content?.interactive : undefined
  return typeof interactive === "object" && interactive !== null ? (interactive as InteractiveContent) : undefined
}

/**
 * The stored file a message is sent with (docs/media.md "Sending a stored file"): a media
 * message's `media.media_uuid`, an interactive message's header's; else `undefined`.
 */
const storedMediaUuidOf = (message: Message): string | undefined => {
  if (message.type === "media") return message.media?.media_uuid
  const interactive = interactiveOf(message)
  return interactive === undefined ? undefined : interactiveStoredMedia(interactive)?.media_uuid
}

/**
 * The failure of a message of a type its transport does not send
 * (`MessageTransportService.messageTypes`): permanent, no attempt made.
 */
const unsupportedTypeFailure = (type: Message["type"]): MessageFailure => ({
  code: "message_type_unsupported",
  title: `The message transport cannot send ${type} messages`
})

/**
 * Whether a message may skip lanes and pacing and always go inline: it has no channel and
 * the transport accepts such messages without a network call (the recording transport).
 *
 * @category messaging
 */
export const bypassesQueue = (transport: MessageTransportService, channelUuid: string | null): boolean =>
  channelUuid === null && transport.immediate === true

/**
 * The services one attempt needs: the transport, the channels (with their tokens), and
 * `lastInboundAt`, the read of a contact's customer service window on a channel
 * (`ChatRepository.lastInboundAt`).
 *
 * @category messaging
 */
export interface AttemptServices {
  readonly transport: MessageTransportService
  readonly channels: ChannelsService
  /**
   * For messages sent by `media_uuid` (docs/media.md "Sending a stored file"): the media
   * repository and the blob store the file is read from; absent, such a message fails.
   */
  readonly media?: { readonly repository: MediaRepository; readonly blobs: BlobStoreService | undefined }
  readonly lastInboundAt: (
    organizationId: OrganizationId,
    contactId: ContactId,
    channelId: string
  ) => Effect.Effect<Option.Option<string>, StorageError>
  /**
   * The template a template message was scheduled with, looked up again when it leaves
   * (`TemplateRepository.findByIdentity`); only messages that were scheduled pay this read.
   * Absent: not checked again.
   */
  readonly findTemplate?: TemplateRepository["findByIdentity"]
}

/**
 * One attempt of a claimed message, answered as the {@link OutboxOutcome} to record
 * (docs/messaging.md "Classes of failure"): a free-form message (`text`, `media`) through a
 * channel whose contact's customer service window there is closed now (read at the claim,
 * so a window extended while it waited counts) fails `outside_customer_service_window`
 * without an attempt — or `expired` when its `expires_at` came before the window closed;
 * an expired message fails `expired` without an attempt; otherwise it waits for its
 * pacing slot, opens its channel (a removed channel: `failed` `channel_removed`; one opened by
 * the dispatcher is read again at the slot, and a paused one hands the message back to the
 * queue unattempted), goes back
 * to the queue unattempted when it is more than {@link PACING_LATENESS_MS} past its slot,
 * waits while its channel's hand-over window holds it back (handOverWindow.ts: no sooner
 * than `HAND_OVER_GAP_MS` after a hand-over of the channel a slot span before it),
 * hands it to the transport within `timeoutMs`, and
 * classifies what happened: accepted → `Sent`; `throttle` → `Requeued` (no attempt
 * counted, the channel cools down); `pair_rate` → `Requeued` after {@link pairRateWaitMs}
 * (none counted); `transient` → `Requeued` after the next retry delay, or `Failed` once
 * they are spent; `unknown` → `Unknown`, due again after `settleMs` (or `Failed` once the
 * retries are spent); `permanent` → `Failed`; `account` → `Paused` (a message without a
 * channel: `Failed`). `opened`: the message's channel with its token when the caller has
 * opened it already (a send in the request), so it is not read again. Never fails.
 *
 * @category messaging
 */
export const attemptClaimedMessage = (
  services: AttemptServices,
  claimed: ClaimedMessage,
  opened?: OutboundChannel | null
): Effect.Effect<OutboxOutcome, never, never> =>
  Effect.flatMap(SendQueueSettings, (settings) => Effect.clockWith((clock) => attemptWith(services, settings, clock, claimed, opened)))

/**
 * {@link attemptClaimedMessage} with its settings and clock given. Written as plain steps,
 * each an Effect only where it waits for something (a store read, the slot, the
 * transport): the dispatcher runs it once per message, and every step of Effect's runtime is
 * CPU time and garbage on that path (docs/benchmarks.md "Outbound dispatch").
 */
const attemptWith = (
  services: AttemptServices,
  settings: SendQueueSettingsValue,
  clock: Clock.Clock,
  claimed: ClaimedMessage,
  opened: OutboundChannel | null | undefined
): Effect.Effect<OutboxOutcome> => {
  const { message } = claimed
  const startedAt = clock.unsafeCurrentTimeMillis()
  // After the window: expiry, the spent schedule of a reclaimed message, then the channel.
  const afterWindow = (): Effect.Effect<OutboxOutcome> => {
    const ended = endedBeforeAttempt(claimed, settings, startedAt)
    if (ended !== null) return Effect.succeed(ended)
    // A send in the request has opened its channel already; the dispatcher opens it here,
    // before waiting for the slot: a store's round trip between the slot and the hand-over
    // would count as lateness (on a networked store, enough to miss the slot).
    if (opened !== undefined) return withChannel(opened)
    return Effect.flatMap(openChannel(services.channels, claimed, startedAt), (channel) =>
      Either.isLeft(channel) ? Effect.succeed(channel.left) : withChannel(channel.right))
  }
  const withChannel = (channel: OutboundChannel | null): Effect.Effect<OutboxOutcome> => {
    // A type the transport does not send (a custom transport written before it): failed for good.
    if (!sendsType(services.transport, message.type, { channel })) {
      return Effect.succeed({ _tag: "Failed", failure: unsupportedTypeFailure(message.type), attempts: 0 })
    }
    // A scheduled template message: its template's approval is checked again as it leaves.
    if (claimed.scheduled_at !== null && message.type === "template") {
      return Effect.flatMap(templateRefused(services, claimed), (refused) =>
        Option.isSome(refused) ? Effect.succeed(refused.value) : withMedia(channel))
    }
    return withMedia(channel)
  }
  // A stored file goes out by the provider's media id: uploaded through the channel first
  // when it has none there yet (its own step, not paced: docs/media.md).
  const withMedia = (channel: OutboundChannel | null): Effect.Effect<OutboxOutcome> => {
    const mediaUuid = storedMediaUuidOf(message)
    if (mediaUuid === undefined) return atSlot(channel, undefined)
    return Effect.flatMap(storedMediaId(services, claimed, mediaUuid, channel), (uploaded) => {
      if (uploaded._tag === "Outcome") return Effect.succeed(uploaded.outcome)
      if (uploaded._tag === "Refused") return failureOutcome(claimed, uploaded.error)
      return atSlot(channel, uploaded.id)
    })
  }
  // At the slot, a channel the dispatcher opened is read again (kept, that is a plain map's
  // answer): a pause this dispatcher recorded meanwhile (or one older than the channel's
  // 1 s in its cache) hands the message back instead of sending it into a paused account.
  const atSlot = (channel: OutboundChannel | null, providerMediaId: string | undefined): Effect.Effect<OutboxOutcome> => {
    const untilSlot = claimed.not_before - clock.unsafeCurrentTimeMillis()
    const handedOver = channel === null || opened !== undefined
      ? handOver(channel, providerMediaId)
      : Effect.flatMap(openChannel(services.channels, claimed, claimed.not_before), (again) =>
        Either.isLeft(again) ? Effect.succeed(again.left) : handOver(again.right, providerMediaId))
    return untilSlot > 0 ? Effect.zipRight(clock.sleep(Duration.millis(untilSlot)), handedOver) : handedOver
  }
  // The request runs in a fiber of its own (a daemon: an interruption of the attempt's fiber
  // does not reach it), interrupted by its timeout only: a client that goes away, or a
  // shutdown, never abandons a request to Meta, while the timeout still can. Its first step
  // checks the pacing slot, as close to the request as the transport allows: a busy event
  // loop delays a fiber's start, and that delay counts as lateness too.
  const handOver = (channel: OutboundChannel | null, providerMediaId: string | undefined): Effect.Effect<OutboxOutcome> => {
    const paced = channel !== null
    const outbound = outboundOfRecord(message, claimed.to, channel, providerMediaId)
    const sendPromise = services.transport.send.promise
    const window = handOverWindowOf(services.transport)
    // Past its slot: handed back. Else, while the channel's hand-over window holds it back
    // (docs/channels.md "Throughput"): waits, then looks again.
    const heldBack = (): Effect.Effect<OutboxOutcome> | undefined => {
      if (!paced) return undefined
      const now = clock.unsafeCurrentTimeMillis()
      if (pastItsSlot(claimed, clock) || (opened === undefined && lateInFirstSecond(window, channel.uuid, claimed, now))) return Effect.succeed(handedBack(claimed, now))
      const wait = handOverWait(window, channel.uuid, claimed.not_before, now)
      return wait > 0 ? Effect.zipRight(clock.sleep(Duration.millis(wait)), handOver(channel, providerMediaId)) : undefined
    }
    if (sendPromise !== undefined && isLiveClock(clock)) {
      // The transport's promise inside one timer of this fiber: no fiber of its own.
      return Effect.suspend((): Effect.Effect<OutboxOutcome> => {
        const held = heldBack()
        if (held !== undefined) return held
        if (paced) recordHandOver(window, channel.uuid, claimed.not_before, clock.unsafeCurrentTimeMillis())
        return Effect.matchEffect(promiseWithin(() => sendPromise(outbound), settings.timeoutMs, transportRejection, () => noAnswerWithin(settings.timeoutMs)), {
          onFailure: (error) => refusedAttempt(claimed, error),
          onSuccess: (receipt) => Effect.succeed(sentOutcome(receipt))
        })
      })
    }
    const request = Effect.suspend((): Effect.Effect<TransportReceipt | typeof TOO_LATE, TransportFailed> => {
      if (!paced) return services.transport.send(outbound)
      if (pastItsSlot(claimed, clock)) return Effect.succeed(TOO_LATE)
      recordHandOver(window, channel.uuid, claimed.not_before, clock.unsafeCurrentTimeMillis())
      return services.transport.send(outbound)
    })
    return Effect.suspend(() => heldBack() ?? Effect.flatMap(awaitWithin(request, settings.timeoutMs, clock), (answered): Effect.Effect<OutboxOutcome> => {
      if (Option.isNone(answered)) return failureOutcome(claimed, noAnswerWithin(settings.timeoutMs))
      const sent = answered.value
      if (Exit.isSuccess(sent)) {
        // Too late for its pacing slot: a new one, no attempt made.
        if (isTooLate(sent.value)) return Effect.succeed(handedBack(claimed, clock.unsafeCurrentTimeMillis()))
        return Effect.succeed(sentOutcome(sent.value))
      }
      const failed = Cause.failureOrCause(sent.cause)
      // A defect of the transport (a bug) or an interruption: an attempt of unknown outcome.
      if (Either.isRight(failed)) return Effect.failCause(failed.right)
      return failureOutcome(claimed, failed.left)
    }))
  }
  if (message.channel_uuid === null || !isFreeForm(message.type)) return afterWindow()
  return Effect.flatMap(windowClosed(services, claimed, startedAt), (closed) =>
    Option.isSome(closed) ? Effect.succeed(closed.value) : afterWindow())
}

/**
 * The outcome that ends a claimed message at `now` (epoch ms) before any attempt: `expired`
 * past its `expires_at`; a reclaimed message whose retries are spent (its attempt of
 * unknown outcome counts toward the schedule) fails with its last failure; else `null`.
 */
const endedBeforeAttempt = (claimed: ClaimedMessage, settings: SendQueueSettingsValue, now: number): OutboxOutcome | null => {
  if (Date.parse(claimed.expires_at) <= now) return { _tag: "Failed", failure: EXPIRED_FAILURE, attempts: 0 }
  const { message } = claimed
  if (claimed.reclaimed && message.attempts >= settings.retryDelaysMs.length + 1) {
    return { _tag: "Failed", failure: message.failure ?? UNKNOWN_OUTCOME_FAILURE, attempts: 0 }
  }
  return null
}

/** Whether it is now more than {@link PACING_LATENESS_MS} past the claimed message's pacing slot (too late to hand over). */
const pastItsSlot = (claimed: ClaimedMessage, clock: Clock.Clock): boolean =>
  clock.unsafeCurrentTimeMillis() - claimed.not_before > PACING_LATENESS_MS

/**
 * Whether a message the dispatcher claimed is more than {@link FIRST_SECOND_LATENESS_MS} past
 * its slot at `now` (epoch ms) in its channel's (`channelUuid`) first second of hand-overs in
 * this process.
 */
const lateInFirstSecond = (window: HandOverWindow, channelUuid: string, claimed: ClaimedMessage, now: number): boolean =>
  now - claimed.not_before > FIRST_SECOND_LATENESS_MS && inFirstSecond(window, channelUuid, now)

/** The failure of a send that got no answer within `timeoutMs` (ms): an unknown outcome. */
const noAnswerWithin = (timeoutMs: number): TransportFailed =>
  new TransportFailed({ reason: `No answer within ${timeoutMs} ms`, provider_code: null, network_error: "TimeoutError" })

/** The outcome of a send the provider accepted: one attempt. */
const sentOutcome = (receipt: TransportReceipt): SentOutcome => ({
  _tag: "Sent",
  provider_message_id: usableProviderId(receipt.provider_message_id),
  attempts: 1
})

/** A rejection of a transport's `send.promise` that is not `TransportFailed`: a defect of the transport, as a `send` that dies. */
class TransportDefect {
  constructor(readonly cause: unknown) {}
}

/** A rejection of `send.promise`: `TransportFailed` as it is, anything else a {@link TransportDefect}. */
const transportRejection = (cause: unknown): TransportFailed | TransportDefect =>
  cause instanceof TransportFailed ? cause : new TransportDefect(cause)

/** The outcome of a send whose promise rejected with `error`: by its class of failure, or a defect of the transport. */
const refusedAttempt = (claimed: ClaimedMessage, error: TransportFailed | TransportDefect): Effect.Effect<OutboxOutcome> =>
  error instanceof TransportFailed ? failureOutcome(claimed, error) : Effect.die(error.cause)

/** What the hand-over answers instead of a receipt when it came too late for the message's pacing slot. */
const TOO_LATE = { tooLate: true } as const

const isTooLate = (answer: TransportReceipt | typeof TOO_LATE): answer is typeof TOO_LATE => answer === TOO_LATE

/**
 * The outcome of an attempt the transport refused with `error` (a send, or the upload
 * before it), by its class of failure (docs/messaging.md "Failure classes").
 */
const failureOutcome = (claimed: ClaimedMessage, error: TransportFailed): Effect.Effect<OutboxOutcome> =>
  Effect.gen(function*() {
    const settings = yield* SendQueueSettings
    const { message } = claimed
    const endedAt = yield* Clock.currentTimeMillis
    const failure = failureOfTransport(error)
    const at = (ms: number) => new Date(ms).toISOString()
    switch (classifyFailure(error)) {
      case "throttle":
        return { _tag: "Requeued", next_attempt_at: at(endedAt + 1_000), failure, attempts: 0, throttled: true, pairRate: false } as const
      case "pair_rate":
        return {
          _tag: "Requeued",
          next_attempt_at: at(endedAt + pairRateWaitMs(claimed.pair_rate_waits)),
          failure,
          attempts: 0,
          throttled: false,
          pairRate: true
        } as const
      case "transient": {
        const delay = settings.retryDelaysMs[message.attempts]
        if (delay === undefined) return { _tag: "Failed", failure, attempts: 1 } as const
        const jitter = (yield* Random.next) * 0.1
        return {
          _tag: "Requeued",
          next_attempt_at: at(endedAt + Math.round(delay * (1 + jitter))),
          failure,
          attempts: 1,
          throttled: false,
          pairRate: false
        } as const
      }
      case "unknown":
        return { _tag: "Unknown", next_attempt_at: at(endedAt + settings.settleMs), attempts: 1 } as const
      case "permanent":
        return { _tag: "Failed", failure, attempts: 1 } as const
      case "account":
        return message.channel_uuid === null
          ? ({ _tag: "Failed", failure, attempts: 1 } as const)
          : ({ _tag: "Paused", reason: failure } as const)
    }
  })

/** The failure of a message sent by `media_uuid` whose file is no longer stored. */
const STORED_MEDIA_UNAVAILABLE: MessageFailure = { code: "media_unavailable", title: "The stored file was deleted or is not available" }

/** The failure of a message sent by `media_uuid` through a transport that cannot upload files. */
const MEDIA_UPLOAD_UNSUPPORTED: MessageFailure = { code: "media_upload_unsupported", title: "The message transport cannot upload stored files" }

/** How long the provider's id of an upload is used, in ms: 29 days (Meta keeps uploads 30). */
export const UPLOADED_MEDIA_ID_LIFETIME_MS = 29 * 24 * 3_600_000

/**
 * The provider's media id of a stored file for a message through `channel`: the one kept
 * from an earlier upload through that channel (29 days), else a new upload of the file from
 * the blob store (`MessageTransportService.uploadMedia`), kept. `Outcome` ends the attempt
 * (the file gone, no way to upload, a store that did not answer); `Refused` is the
 * transport's refusal of the upload, classed like a send's.
 */
const storedMediaId = (
  services: AttemptServices,
  claimed: ClaimedMessage,
  mediaUuid: string,
  channel: OutboundChannel | null
): Effect.Effect<
  | { readonly _tag: "Id"; readonly id: string }
  | { readonly _tag: "Outcome"; readonly outcome: OutboxOutcome }
  | { readonly _tag: "Refused"; readonly error: TransportFailed }
> =>
  Effect.gen(function*() {
    const media = services.media
    const upload = services.transport.uploadMedia
    const failed = (failure: MessageFailure) => ({ _tag: "Outcome", outcome: { _tag: "Failed", failure, attempts: 0 } } as const)
    if (media === undefined || media.blobs === undefined || upload === undefined) return failed(MEDIA_UPLOAD_UNSUPPORTED)
    const now = yield* Clock.currentTimeMillis
    const channelKey = channel?.uuid ?? "none"
    const known = yield* media.repository.uploadFor(mediaUuid, channelKey, new Date(now).toISOString())
    if (Option.isSome(known)) return { _tag: "Id", id: known.value } as const
    const found = yield* media.repository.get(claimed.organization_id, mediaUuid)
    if (Option.isNone(found) || found.value.status !== "stored" || found.value.blob_key === null) return failed(STORED_MEDIA_UNAVAILABLE)
    const record = found.value
    const content = yield* Effect.either(media.blobs.get(record.blob_key!))
    if (Either.isLeft(content)) {
      return content.left._tag === "BlobNotFound"
        ? failed(STORED_MEDIA_UNAVAILABLE)
        : { _tag: "Outcome", outcome: yield* retryLater(claimed, { code: "storage_error", title: "The stored file could not be read" }) } as const
    }
    const sent = yield* Effect.either(upload(channel, {
      stream: content.right.stream,
      size: content.right.size,
      mimeType: record.mime_type,
      filename: record.filename
    }))
    if (Either.isLeft(sent)) {
      content.right.stream.destroy()
      return { _tag: "Refused", error: sent.left } as const
    }
    const expiresAt = new Date(now + UPLOADED_MEDIA_ID_LIFETIME_MS).toISOString()
    yield* media.repository.rememberUpload(mediaUuid, channelKey, sent.right.provider_media_id, expiresAt)
    return { _tag: "Id", id: sent.right.provider_media_id } as const
  }).pipe(
    Effect.catchTag("StorageError", () =>
      Effect.map(retryLater(claimed, { code: "storage_error", title: "The stored file's record could not be read" }), (outcome) => ({ _tag: "Outcome", outcome } as const)))
  )

/**
 * Runs `effect` in a daemon fiber (no interruption of the caller reaches it) and waits for
 * its exit for at most `timeoutMs` (ms, by Effect's `Clock`): `Some(exit)`, or `None` once
 * the time has passed, the fiber then interrupted in the background. On the live clock the
 * time limit is a plain timer (one fiber per attempt); on another clock (`TestClock`) a
 * sleeping fiber of that clock. Each fiber is CPU time on the path of every message:
 * `Effect.timeoutFail` over a forked-and-joined fiber cost ~160 µs above a bare attempt, a
 * request fiber with a sleeping one ~130, and the timer saves one of the two
 * (docs/benchmarks.md "Outbound dispatch").
 */
const awaitWithin = <A, E>(
  effect: Effect.Effect<A, E>,
  timeoutMs: number,
  clock: Clock.Clock
): Effect.Effect<Option.Option<Exit.Exit<A, E>>> =>
  Effect.flatMap(Effect.forkDaemon(effect), (fiber) =>
    isLiveClock(clock)
        ? Effect.async<Option.Option<Exit.Exit<A, E>>>((resume) => {
          // Whichever comes first answers: the request's exit (the timer cleared) or the
          // timer (the request interrupted, its exit, which follows, ignored).
          let settled = false
          const timer = setTimeout(() => {
            settled = true
            fiber.unsafeInterruptAsFork(FiberId.none)
            resume(Effect.succeed(Option.none()))
          }, timeoutMs)
          fiber.addObserver((exit) => {
            if (settled) return
            settled = true
            clearTimeout(timer)
            resume(Effect.succeed(Option.some(exit)))
          })
        })
        : Effect.flatMap(Effect.forkDaemon(Effect.sleep(Duration.millis(timeoutMs))), (timer) =>
          Effect.async<Option.Option<Exit.Exit<A, E>>>((resume) => {
            let settled = false
            fiber.addObserver((exit) => {
              if (settled) return
              settled = true
              timer.unsafeInterruptAsFork(fiber.id())
              resume(Effect.succeed(Option.some(exit)))
            })
            timer.addObserver(() => {
              if (settled) return
              settled = true
              fiber.unsafeInterruptAsFork(timer.id())
              resume(Effect.succeed(Option.none()))
            })
          })))


/** The failure of a message whose every attempt had an unknown outcome. */
const UNKNOWN_OUTCOME_FAILURE: MessageFailure = {
  code: "network_error",
  title: "No attempt got an answer from the provider"
}

/**
 * The outcome that ends the attempt of a free-form message through a channel whose
 * customer service window is closed at `now` (ms since the epoch): `failed`
 * `outside_customer_service_window`, or `expired` when the message's `expires_at` came
 * strictly before the window's end; no attempt counted. `None` otherwise (open, or not
 * held to the window). A store that cannot answer requeues it as a transient failure.
 */
const windowClosed = (
  services: AttemptServices,
  claimed: ClaimedMessage,
  now: number
): Effect.Effect<Option.Option<OutboxOutcome>> => {
  const { message } = claimed
  if (message.channel_uuid === null || !isFreeForm(message.type)) return Effect.succeed(Option.none())
  return services.lastInboundAt(claimed.organization_id, message.contact_uuid, message.channel_uuid).pipe(
    Effect.map((lastInboundAt): Option.Option<OutboxOutcome> => {
      const end = windowEndMs(lastInboundAt)
      if (end !== null && end > now) return Option.none()
      const expiresAt = Date.parse(claimed.expires_at)
      const expiredFirst = expiresAt <= now && expiresAt < (end ?? Number.POSITIVE_INFINITY)
      return Option.some({ _tag: "Failed", failure: expiredFirst ? EXPIRED_FAILURE : OUTSIDE_WINDOW_FAILURE, attempts: 0 })
    }),
    Effect.catchAll(() =>
      Effect.map(retryLater(claimed, { code: "storage_error", title: "The customer service window could not be read" }), Option.some))
  )
}

/** The failure of a scheduled template message whose template is gone when it leaves. */
export const TEMPLATE_NOT_FOUND_FAILURE: MessageFailure = {
  code: "template_not_found",
  title: "The message's template no longer exists"
}

/** The failure of a scheduled template message whose template is not approved when it leaves. */
export const templateNotApprovedFailure = (status: string): MessageFailure => ({
  code: "template_not_approved",
  title: `The message's template is ${status}, not APPROVED, when it was to leave`
})

/**
 * Whether a scheduled template message must not leave: its template (by name and language,
 * of its channel's WhatsApp Business Account, as the send resolved it) is gone → `failed`
 * `template_not_found`, or not `APPROVED` → `failed` `template_not_approved`; no attempt
 * counted. `None` when it may go or nothing checks it; a read that fails retries it later.
 */
const templateRefused = (services: AttemptServices, claimed: ClaimedMessage): Effect.Effect<Option.Option<OutboxOutcome>> => {
  const { message } = claimed
  const find = services.findTemplate
  if (find === undefined || message.template === null) return Effect.succeed(Option.none())
  const template = message.template
  return Effect.gen(function*() {
    const wabaId = message.channel_uuid === null
      ? null
      : (yield* services.channels.get(claimed.organization_id, message.channel_uuid as ChannelId)).waba_id
    const found = yield* find(claimed.organization_id, template.name, template.language.code, wabaId)
    if (Option.isNone(found)) return Option.some<OutboxOutcome>({ _tag: "Failed", failure: TEMPLATE_NOT_FOUND_FAILURE, attempts: 0 })
    if (found.value.status !== "APPROVED") {
      return Option.some<OutboxOutcome>({ _tag: "Failed", failure: templateNotApprovedFailure(found.value.status), attempts: 0 })
    }
    return Option.none<OutboxOutcome>()
  }).pipe(
    Effect.catchAll(() =>
      Effect.map(retryLater(claimed, { code: "storage_error", title: "The message's template could not be read" }), Option.some))
  )
}

/**
 * A failure before the transport that counts as a transient attempt: `Requeued` after the
 * next retry delay, or `Failed` once they are spent.
 */
const retryLater = (claimed: ClaimedMessage, failure: MessageFailure): Effect.Effect<OutboxOutcome> =>
  Effect.gen(function*() {
    const settings = yield* SendQueueSettings
    const now = yield* Clock.currentTimeMillis
    const delay = settings.retryDelaysMs[claimed.message.attempts]
    return delay === undefined
      ? { _tag: "Failed", failure, attempts: 1 }
      : {
        _tag: "Requeued",
        next_attempt_at: new Date(now + delay).toISOString(),
        failure,
        attempts: 1,
        throttled: false,
        pairRate: false
      }
  })

/**
 * The claimed message's channel with its token, or the outcome that ends the attempt: a
 * removed channel fails the message `channel_removed`; a paused one hands it back to the
 * queue unattempted (it waits there until the channel is resumed: the claims skip paused
 * channels); a token that cannot be opened (no or another secret key) requeues it as a
 * transient failure.
 */
const openChannel = (
  channels: ChannelsService,
  claimed: ClaimedMessage,
  now: number
): Effect.Effect<Either.Either<OutboundChannel | null, OutboxOutcome>> => {
  const id = claimed.message.channel_uuid
  if (id === null) return Effect.succeed(Either.right(null))
  return channels.getWithToken(claimed.organization_id, id as ChannelId).pipe(
    Effect.map((opened) => channelOrHandedBack(opened, claimed, now)),
    Effect.catchTag("RecordNotFound", () =>
      Effect.succeed(Either.left<OutboxOutcome>({ _tag: "Failed", failure: CHANNEL_REMOVED_FAILURE, attempts: 0 }))),
    Effect.catchAll((error) =>
      Effect.map(retryLater(claimed, { code: "channel_unavailable", title: error.message }), (outcome) => Either.left(outcome))
    )
  )
}

/** The channel `opened` to send through, or the claimed message handed back at `now` (epoch ms) when the channel is paused. */
const channelOrHandedBack = (
  { access_token, channel }: ChannelWithToken,
  claimed: ClaimedMessage,
  now: number
): Either.Either<OutboundChannel, OutboxOutcome> =>
  channel.status === "paused"
    ? Either.left(handedBack(claimed, now))
    : Either.right({ uuid: channel.uuid, phone_number_id: channel.phone_number_id, access_token })

/** A claimed message given back to the queue at `now` (epoch ms) unattempted: no attempt counted, its failure kept. */
const handedBack = (claimed: ClaimedMessage, now: number): OutboxOutcome => ({
  _tag: "Requeued",
  next_attempt_at: new Date(now).toISOString(),
  failure: claimed.message.failure,
  attempts: 0,
  throttled: false,
  pairRate: false
})

/**
 * Records `outcome` for a claimed message under its lease (`OutboxRepository.record`),
 * then what its failure changes beyond it (`reactToOutboundFailure`: an opt-out, a
 * stopped broadcast), logging what did not go out: the message as stored afterwards, or `None` when the lease
 * had been taken over.
 *
 * @category messaging
 */
export const recordSendOutcome = (
  claimed: ClaimedMessage,
  outcome: OutboxOutcome
): Effect.Effect<Option.Option<Message>, StorageError, Storage> =>
  Effect.flatMap(Storage, (storage) => Effect.clockWith((clock) => recordWith(storage, clock, claimed, outcome)))

/**
 * {@link recordSendOutcome} with its store and clock given: a `Sent` outcome recorded takes
 * two steps of Effect's runtime (the dispatcher records one per message); the others
 * react to their failure and log.
 */
const recordWith = (
  storage: StorageService,
  clock: Clock.Clock,
  claimed: ClaimedMessage,
  outcome: OutboxOutcome
): Effect.Effect<Option.Option<Message>, StorageError> => {
  const now = new Date(clock.unsafeCurrentTimeMillis()).toISOString()
  return Effect.flatMap(storage.outbox.record(claimed.message.uuid, claimed.lease, outcome, now), (recorded) =>
    outcome._tag === "Sent" && Option.isSome(recorded) ? Effect.succeed(recorded) : afterRecord(storage, claimed, outcome, recorded, now))
}

/** What follows a record other than a `Sent` one recorded: the failure's reactions, and the log line. */
const afterRecord = (
  storage: StorageService,
  claimed: ClaimedMessage,
  outcome: OutboxOutcome,
  recorded: Option.Option<Message>,
  now: string
): Effect.Effect<Option.Option<Message>, StorageError> =>
  Effect.gen(function*() {
    const failure = outcome._tag === "Failed" ? outcome.failure : outcome._tag === "Paused" ? outcome.reason : null
    if (Option.isSome(recorded) && failure !== null) {
      yield* reactToOutboundFailure(storage, claimed.organization_id, recorded.value, failure, now)
    }
    const annotations = { organization_id: claimed.organization_id, message_id: claimed.message.uuid }
    if (Option.isNone(recorded)) {
      yield* Effect.logWarning("send outcome not recorded: the message's lease was taken over").pipe(
        Effect.annotateLogs({ ...annotations, outcome: outcome._tag })
      )
    } else if (isLateForSlot(outcome)) {
      // Not a failure: handed back for a new pacing slot, nothing sent (PACING_LATENESS_MS);
      // late_ms: how long after its slot it was found late.
      yield* Effect.logDebug("Message late for its pacing slot; queued for a new one").pipe(
        Effect.annotateLogs({ ...annotations, late_ms: Date.parse(outcome.next_attempt_at) - claimed.not_before })
      )
    } else if (outcome._tag !== "Sent") {
      yield* Effect.logWarning(SEND_OUTCOME_LOG_LINES[outcome._tag]).pipe(
        Effect.annotateLogs({
          ...annotations,
          ...("failure" in outcome && outcome.failure !== null ? { code: outcome.failure.code, reason: outcome.failure.title } : {}),
          ...(outcome._tag === "Paused" ? { code: outcome.reason.code, reason: outcome.reason.title } : {})
        })
      )
    }
    return recorded
  })

/** Whether `outcome` hands a message back unattempted for a new pacing slot ({@link PACING_LATENESS_MS}). */
const isLateForSlot = (outcome: OutboxOutcome): outcome is Extract<OutboxOutcome, { _tag: "Requeued" }> =>
  outcome._tag === "Requeued" && outcome.attempts === 0 && !outcome.throttled && !outcome.pairRate

const SEND_OUTCOME_LOG_LINES: { readonly [T in Exclude<OutboxOutcome["_tag"], "Sent">]: string } = {
  Failed: "Message failed",
  Requeued: "Message send failed; it will be retried",
  Unknown: "Message send outcome unknown; waiting for Meta's status notification",
  Paused: "Channel paused: Meta refused a send for a reason of the account"
}

/** The longest a claim is expected to take, in ms: the cap of the estimate the send queue's claims start their slots after. */
const MAX_CLAIM_LATENCY_MS = 400

/**
 * What a store's first claim is expected to take, in ms, before any claim was timed: a
 * process's first claim runs cold (code not yet compiled, statements prepared, every
 * channel opened for the first time, the first connections to Meta made). Reserved from
 * `now`, its first messages were handed over up to 25 ms late, each with the ones after
 * it, and Meta received a channel's first three within 2 ms: 51 in the sliding second that
 * followed (docs/benchmarks.md "The first second of a dispatch"). On a live clock only: a
 * `TestClock` stands still while code runs, so no claim takes time there.
 */
const FIRST_CLAIM_LATENCY_MS = 100

/**
 * How long the claims of each store have taken lately (ms, a moving average of the last
 * few): a claim reserves its pacing slots from `now` + this, so its first messages are not
 * late by the claim's own duration.
 */
const claimLatencies = new WeakMap<object, number>()

/**
 * How long the dispatcher keeps a channel it opened (with its token), in ms. The messages
 * of one claim go out through a few channels within half a second: each opened once,
 * instead of once a message (on a networked store, a look-up each that queued for the
 * pool's connections while the messages' pacing slots passed). A token replaced, or a
 * channel paused or removed, reaches the dispatcher at most this much later; a removed
 * channel's waiting messages are failed by its removal (docs/messaging.md "The send queue").
 */
export const DISPATCH_CHANNEL_TTL_MS = 1_000

/**
 * The channels of one dispatcher (one `ChannelsService`): `channels`, whose `getWithToken`
 * is kept {@link DISPATCH_CHANNEL_TTL_MS}; `kept`, the channel kept now, without a look-up
 * (`undefined` when none is); and `forget`, which drops one channel kept.
 */
interface DispatchChannels {
  readonly channels: ChannelsService
  readonly kept: (organizationId: OrganizationId, id: string) => ChannelWithToken | undefined
  readonly forget: (organizationId: OrganizationId, id: string) => Effect.Effect<void>
}

/** The {@link DispatchChannels} of each `ChannelsService`. */
const dispatchChannelsOf = new WeakMap<ChannelsService, DispatchChannels>()

/**
 * `channels` with `getWithToken` kept {@link DISPATCH_CHANNEL_TTL_MS} per organization and
 * channel (by `clock`): an Effect `Cache` (one look-up for concurrent misses), and in front of
 * it a plain map of the channels it answered, so that a hit — almost every message — is one
 * `Effect.succeed`, not the cache's own steps. A channel this dispatcher saw paused is
 * forgotten at once (`forget`), so that its messages claimed before the pause read it again
 * and go back to the queue.
 */
const dispatchChannels = (channels: ChannelsService, clock: Clock.Clock): Effect.Effect<DispatchChannels> =>
  Effect.suspend(() => {
    const known = dispatchChannelsOf.get(channels)
    if (known !== undefined) return Effect.succeed(known)
    return Effect.map(
      Cache.make({
        capacity: 1_000,
        timeToLive: Duration.millis(DISPATCH_CHANNEL_TTL_MS),
        lookup: (key: string) => {
          const [organizationId, id] = key.split(" ") as [OrganizationId, ChannelId]
          return channels.getWithToken(organizationId, id)
        }
      }),
      (cache) => {
        const answered = new Map<string, { readonly value: ChannelWithToken; readonly until: number }>()
        const kept = (organizationId: OrganizationId, id: string): ChannelWithToken | undefined => {
          const hit = answered.get(`${organizationId} ${id}`)
          return hit !== undefined && hit.until > clock.unsafeCurrentTimeMillis() ? hit.value : undefined
        }
        const getWithToken: ChannelsService["getWithToken"] = (organizationId, id) => {
          const hit = kept(organizationId, id)
          if (hit !== undefined) return Effect.succeed(hit)
          const key = `${organizationId} ${id}`
          return Effect.tap(cache.get(key), (value) => {
            if (answered.size >= 1_000) answered.clear()
            answered.set(key, { value, until: clock.unsafeCurrentTimeMillis() + DISPATCH_CHANNEL_TTL_MS })
          })
        }
        const dispatch: DispatchChannels = {
          channels: { ...channels, getWithToken },
          kept,
          forget: (organizationId, id) =>
            Effect.suspend(() => {
              const key = `${organizationId} ${id}`
              answered.delete(key)
              return cache.invalidate(key)
            })
        }
        dispatchChannelsOf.set(channels, dispatch)
        return dispatch
      }
    )
  })

/** When a requeued or unknown message is due again (epoch ms); `null` for a settled one. */
const dueAgainAt = (outcome: OutboxOutcome): number | null =>
  outcome._tag === "Requeued" || outcome._tag === "Unknown" ? Date.parse(outcome.next_attempt_at) : null

/** When the dispatcher starts a claimed message's attempt: {@link SEND_START_LEAD_MS} before its slot, or at once for a stored file. */
const startAt = (claimed: ClaimedMessage): number | null =>
  storedMediaUuidOf(claimed.message) === undefined ? claimed.not_before - SEND_START_LEAD_MS : null

/**
 * The send queue as a {@link LeasedQueue}: `claim` is `OutboxRepository.claim` (pacing
 * slots reserved up to {@link PACING_HORIZON_MS} ahead, starting when the claim is expected
 * to have returned: `now` + a moving average of how long the store's claims took, at most
 * 400 ms; at most {@link SEND_CLAIM_LIMIT} messages), `run` one attempt
 * ({@link attemptClaimedMessage}), `record` {@link recordSendOutcome}; a requeued or
 * unknown message is due again at its `next_attempt_at`.
 *
 * @category messaging
 */
export const sendQueue: LeasedQueue<
  ClaimedMessage,
  OutboxOutcome,
  StorageError,
  Storage | SecureRandom | MessageTransport | Channels
> = {
  name: "send queue",
  claim: (now, leaseUntil, limit) => Effect.flatMap(sendQueueServices, (queue) => queue.claim(now, leaseUntil, limit)),
  run: (claimed) => Effect.flatMap(sendQueueServices, (queue) => queue.run(claimed)),
  record: (claimed, outcome) => Effect.flatMap(sendQueueServices, (queue) => queue.record(claimed, outcome)),
  dueAgainAt,
  nextDueAt: (now) => Effect.flatMap(sendQueueServices, (queue) => queue.nextDueAt(now)),
  startAt,
  span: {
    name: "SendQueue.attempt",
    attributes: (claimed) => ({
      "switchboard.organization_id": claimed.organization_id,
      "switchboard.message_id": claimed.message.uuid,
      "switchboard.send_class": claimed.class
    })
  }
}

/**
 * {@link sendQueue} with its services read once (the dispatcher's loop reads them when it
 * starts, not once per message: docs/benchmarks.md "Outbound dispatch"). Its methods need
 * nothing more.
 */
const sendQueueServices: Effect.Effect<
  & Required<Pick<LeasedQueue<ClaimedMessage, OutboxOutcome, StorageError>, "claim" | "run" | "record" | "nextDueAt">>
  & Pick<LeasedQueue<ClaimedMessage, OutboxOutcome, StorageError>, "startPlain">,
  never,
  Storage | SecureRandom | MessageTransport | Channels
> = Effect.gen(function*() {
  const storage = yield* Storage
  const random = yield* SecureRandom
  const settings = yield* SendQueueSettings
  const clock = yield* Effect.clock
  const blobs = yield* Effect.serviceOption(BlobStore)
  const dispatch = yield* dispatchChannels(yield* Channels, clock)
  const services: AttemptServices = {
    transport: yield* MessageTransport,
    channels: dispatch.channels,
    lastInboundAt: storage.chats.lastInboundAt,
    findTemplate: storage.templates.findByIdentity,
    media: { repository: storage.media, blobs: Option.getOrUndefined(blobs) }
  }
  const run = (claimed: ClaimedMessage) => attemptWith(services, settings, clock, claimed, undefined)
  const sendPromise = services.transport.send.promise
  // The lean record of a sent message where the store has it (no read of the message back).
  const recordPromise = storage.outbox.recordSent ?? storage.outbox.record.promise
  return {
    startPlain: sendPromise === undefined || recordPromise === undefined || !isLiveClock(clock)
      ? undefined
      : plainStarter({ services, settings, clock, dispatch, storage, send: sendPromise, record: recordPromise, run }),
    claim: (now, leaseUntil, limit) =>
      Effect.suspend(() => {
        // Slots are reserved from when the claim is expected to have returned, not from when
        // it was asked for: a claim that takes 30 ms on a networked store would otherwise hand
        // its first messages 30 ms late, past PACING_LATENESS_MS, and back to the queue.
        const latency = claimLatencies.get(storage) ?? (isLiveClock(clock) ? FIRST_CLAIM_LATENCY_MS : 0)
        return Effect.flatMap(random.uuid(), (lease) => {
          const started = clock.unsafeCurrentTimeMillis()
          return Effect.tap(
            storage.outbox.claim({
              now: now + latency,
              lease,
              leaseUntil,
              settleMs: settings.settleMs,
              limit: Math.min(limit, SEND_CLAIM_LIMIT),
              horizonMs: PACING_HORIZON_MS
            }),
            () => {
              const took = clock.unsafeCurrentTimeMillis() - started
              claimLatencies.set(storage, Math.min(MAX_CLAIM_LATENCY_MS, Math.round(latency * 0.7 + took * 0.3)))
            }
          )
        })
      }),
    run,
    record: (claimed, outcome) => {
      const recorded = Effect.map(recordWith(storage, clock, claimed, outcome), Option.isSome)
      const channelId = claimed.message.channel_uuid
      // A pause this dispatcher recorded reaches its own later attempts at once (DISPATCH_CHANNEL_TTL_MS for others).
      return outcome._tag === "Paused" && channelId !== null
        ? Effect.tap(recorded, () => dispatch.forget(claimed.organization_id, channelId))
        : recorded
    },
    nextDueAt: () => storage.outbox.nextDueAt()
  }
})

/**
 * The send queue's `LeasedQueue.startPlain` (docs/benchmarks.md "A message without a
 * fiber"): the common message — a template through a channel this dispatcher keeps open
 * and active, not scheduled, not by a stored file, nothing that ends it before an attempt —
 * waits for its pacing slot on a timer, is handed over by the transport's promise form
 * within `timeoutMs` ({@link callWithin}) and, once sent, recorded by the store's promise
 * form: the same steps as {@link attemptWith} and {@link recordSendOutcome}, without a
 * fiber or a step of Effect's runtime. Anything else goes on in a fiber, through the same
 * code as a fiber's job: a message the plain path does not take; a channel no longer kept
 * at the slot (its attempt from the start); a paused channel or a late slot (handed back);
 * a failed send (classed by {@link failureOutcome}); a record the lease refused (logged).
 */
const plainStarter = (given: {
  readonly services: AttemptServices
  readonly settings: SendQueueSettingsValue
  readonly clock: Clock.Clock
  readonly dispatch: DispatchChannels
  readonly storage: StorageService
  readonly send: (message: OutboundMessage) => Promise<TransportReceipt>
  /** `outbox.recordSent`, else `outbox.record.promise`: only whether the lease held is read. */
  readonly record: (id: MessageId, lease: string, outcome: SentOutcome, now: string) => Promise<Option.Option<unknown>>
  readonly run: (claimed: ClaimedMessage) => Effect.Effect<OutboxOutcome>
}): NonNullable<LeasedQueue<ClaimedMessage, OutboxOutcome, StorageError>["startPlain"]> => {
  const { services, settings, clock, dispatch, storage } = given
  const window = handOverWindowOf(services.transport)
  return (claimed, host) => {
    const { message } = claimed
    const channelId = message.channel_uuid
    if (
      channelId === null || message.type !== "template" || claimed.scheduled_at !== null ||
      storedMediaUuidOf(message) !== undefined
    ) return false
    const now = clock.unsafeCurrentTimeMillis()
    if (endedBeforeAttempt(claimed, settings, now) !== null) return false
    const opened = dispatch.kept(claimed.organization_id, channelId)
    if (opened === undefined || opened.channel.status === "paused") return false
    const recordSent = (outcome: SentOutcome): void => {
      if (host.abandoned()) return host.abandon()
      const at = new Date(clock.unsafeCurrentTimeMillis()).toISOString()
      given.record(message.uuid, claimed.lease, outcome, at).then(
        (recorded) =>
          Option.isSome(recorded)
            ? host.recorded(outcome, true)
            : host.endWith(Effect.as(afterRecord(storage, claimed, outcome, Option.none(), at), { _tag: "Lost", outcome } as const)),
        (error: StorageError) => host.endWith(Effect.fail(error))
      )
    }
    const atSlot = (): void => {
      if (host.abandoned()) return host.abandon()
      // Read again at the slot, as a fiber's attempt does: a pause recorded meanwhile hands it back.
      const again = dispatch.kept(claimed.organization_id, channelId)
      if (again === undefined) return host.continueWith(claimed, given.run(claimed))
      const channel = channelOrHandedBack(again, claimed, claimed.not_before)
      if (Either.isLeft(channel)) return host.continueWith(claimed, Effect.succeed(channel.left))
      const now = clock.unsafeCurrentTimeMillis()
      if (pastItsSlot(claimed, clock) || lateInFirstSecond(window, channelId, claimed, now)) return host.continueWith(claimed, Effect.succeed(handedBack(claimed, now)))
      // Held back by the channel's hand-over window (docs/channels.md "Throughput"): at the slot again later.
      const wait = handOverWait(window, channelId, claimed.not_before, now)
      if (wait > 0) return later(wait)
      recordHandOver(window, channelId, claimed.not_before, now)
      const outbound = outboundOfRecord(message, claimed.to, channel.right)
      callWithin(
        () => given.send(outbound),
        settings.timeoutMs,
        (receipt) => recordSent(sentOutcome(receipt)),
        (cause) => host.continueWith(claimed, refusedAttempt(claimed, transportRejection(cause))),
        () => host.continueWith(claimed, failureOutcome(claimed, noAnswerWithin(settings.timeoutMs)))
      )
    }
    const later = (ms: number): void => {
      const timer = setTimeout(atSlot, ms)
      // As the host clock's sleeps: a host's process may end while a message waits for its slot.
      if (clock === hostClock) timer.unref()
    }
    const untilSlot = claimed.not_before - now
    if (untilSlot <= 0) atSlot()
    else later(untilSlot)
    return true
  }
}

/**
 * Options of {@link runSendDispatcher}: `concurrency`, the most messages held at once
 * (default {@link SEND_DISPATCH_CONCURRENCY}); `pollIntervalMs`, the longest sleep when
 * nothing is known to be due (default 1 000 ms); `wake` and `status` as in
 * `LeasedQueueOptions`.
 *
 * @category messaging
 */
export interface SendDispatcherOptions {
  readonly concurrency?: number
  readonly pollIntervalMs?: number
  readonly wake?: LeasedQueueOptions["wake"]
  readonly status?: LeasedQueueOptions["status"]
}

/**
 * The send queue's dispatcher (docs/messaging.md "The send queue"): {@link sendQueue} run
 * by `runLeasedQueue`, with the leases of `SendQueueSettings.leaseMs`. Runs until
 * interrupted and never fails; interrupting it claims nothing more and waits for the
 * attempts in flight to be recorded, for at most `SendQueueSettings.timeoutMs` +
 * `DRAIN_MARGIN_MS` (2 s); an attempt still running then is interrupted unrecorded, and
 * its message is due again once its lease and the settle time have passed.
 *
 * @category messaging
 */
export const runSendDispatcher = (
  options: SendDispatcherOptions = {}
): Effect.Effect<never, never, Storage | SecureRandom | MessageTransport | Channels> =>
  Effect.flatMap(Effect.zip(SendQueueSettings, sendQueueServices), ([settings, services]) =>
    runLeasedQueue({ ...sendQueue, ...services }, {
      leaseMs: settings.leaseMs,
      concurrency: options.concurrency ?? SEND_DISPATCH_CONCURRENCY,
      claimIntervalMs: SEND_CLAIM_INTERVAL_MS,
      pollIntervalMs: options.pollIntervalMs ?? 1_000,
      drainMs: settings.timeoutMs + DRAIN_MARGIN_MS,
      ...(options.wake === undefined ? {} : { wake: options.wake }),
      ...(options.status === undefined ? {} : { status: options.status })
    }))

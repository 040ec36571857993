import { describe, expect, it } from "@effect/vitest"
import { Cause, Clock, Effect, Fiber, Option, TestClock } from "effect"
import {
  attemptClaimedMessage,
  type AttemptServices,
  type ChannelId,
  type ChannelsService,
  type ClaimedMessage,
  DEFAULT_SEND_QUEUE_SETTINGS,
  HAND_OVER_GAP_MS,
  type Message,
  type MessageId,
  type MessageTransportService,
  isFreeForm,
  type OutboundMessage,
  type OrganizationId,
  outboundOfRecord,
  PACING_LATENESS_MS,
  pairRateWaitMs,
  RecordNotFound,
  SendQueueSettings,
  sendWithPromise,
  StorageError,
  TransportFailed,
  type TransportReceipt
} from "@switchboard/core"
import { FIRST_SECOND_LATENESS_MS, handOverWindowOf, recordHandOver } from "../src/messaging/handOverWindow.js"

// One attempt of the send queue (docs/messaging.md "Classes of failure"): what each answer
// of the transport becomes, with no store and no server.

const NOW = Date.parse("2026-11-26T12:00:00.000Z")
const CHANNEL_ID = "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6c" as ChannelId

const message = (overrides: Partial<Message> = {}): Message => ({
  uuid: "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6a" as MessageId,
  chat_uuid: "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6b" as Message["chat_uuid"],
  contact_uuid: "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6d" as Message["contact_uuid"],
  direction: "outbound",
  type: "text",
  text: "Hello",
  template: null,
  media: null,
  content: null,
  status: "sending",
  provider_message_id: null,
  failure: null,
  channel_uuid: null,
  transport: "custom",
  attempts: 0,
  next_attempt_at: null,
  broadcast_uuid: null,
  reply_to: null,
  reactions: [],
  created_at: new Date(NOW).toISOString(),
  updated_at: new Date(NOW).toISOString(),
  ...overrides
})

const claimed = (overrides: Partial<ClaimedMessage> = {}, messageOverrides: Partial<Message> = {}): ClaimedMessage => ({
  organization_id: "org-1" as OrganizationId,
  message: message(messageOverrides),
  lease: "lease-1",
  to: "+14155550100",
  class: "single",
  expires_at: new Date(NOW + 3_600_000).toISOString(),
  pair_rate_waits: 0,
  not_before: NOW,
  reclaimed: false,
  scheduled_at: null,
  ...overrides
})

/** A transport answering `answer` and counting its calls. */
const transportOf = (answer: () => Effect.Effect<{ provider_message_id: string | null; status: "sent" }, TransportFailed>) => {
  const calls: Array<unknown> = []
  const transport: MessageTransportService = {
    send: (outbound) => Effect.suspend(() => {
      calls.push(outbound)
      return answer()
    })
  }
  return { transport, calls }
}

/** A hand-over of `channel` through `transport` recorded 5 s before `now`: the channel is past its first second in this process. */
const pastFirstSecond = (transport: MessageTransportService, now: number, channel: string = CHANNEL_ID) =>
  recordHandOver(handOverWindowOf(transport), channel, now - 5_000, now - 5_000)

const refusing = (fields: ConstructorParameters<typeof TransportFailed>[0]) => transportOf(() => Effect.fail(new TransportFailed(fields)))

/** Channels that know one channel (or none: `RecordNotFound`). */
const channelsWith = (known: boolean): ChannelsService =>
  ({
    getWithToken: (organizationId: OrganizationId, id: ChannelId) =>
      known
        ? Effect.succeed({
          organization_id: organizationId,
          access_token: "token",
          channel: { uuid: id, phone_number_id: "106540352242922" }
        })
        : Effect.fail(new RecordNotFound({ missing: [{ resource: "channel", uuid: id }] }))
  }) as unknown as ChannelsService

/** A customer service window read answering `lastInboundAt` (ISO) for every contact and channel, or none. */
const windowOpenedAt = (lastInboundAt: string | null): AttemptServices["lastInboundAt"] => () =>
  Effect.succeed(Option.fromNullable(lastInboundAt))

/** The contact wrote a minute before NOW: its window is open. */
const openWindow = windowOpenedAt(new Date(NOW - 60_000).toISOString())

/** Runs one attempt at NOW on the test clock. */
const attempt = (
  transport: MessageTransportService,
  job: ClaimedMessage,
  channels: ChannelsService = channelsWith(true),
  lastInboundAt: AttemptServices["lastInboundAt"] = openWindow
) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(NOW)
    return yield* attemptClaimedMessage({ transport, channels, lastInboundAt }, job)
  })

const at = (ms: number) => new Date(ms).toISOString()

describe("attemptClaimedMessage: the classes of failure", () => {
  it.effect("accepted → Sent with Meta's id, one attempt", () =>
    Effect.gen(function*() {
      const { transport, calls } = transportOf(() => Effect.succeed({ provider_message_id: " wamid.1 ", status: "sent" }))
      expect(yield* attempt(transport, claimed())).toEqual({ _tag: "Sent", provider_message_id: "wamid.1", attempts: 1 })
      expect(calls).toEqual([{ message_id: message().uuid, to: "+14155550100", channel: null, type: "text", text: "Hello" }])
    }))

  it.effect("throttle (130429) → Requeued a second later, throttled, no attempt counted", () =>
    Effect.gen(function*() {
      const { transport } = refusing({ reason: "Rate limit hit", provider_code: "130429", http_status: 400 })
      expect(yield* attempt(transport, claimed())).toEqual({
        _tag: "Requeued",
        next_attempt_at: at(NOW + 1_000),
        failure: { code: "130429", title: "Rate limit hit" },
        attempts: 0,
        throttled: true,
        pairRate: false
      })
    }))

  it.effect("pair rate (131056) → Requeued after 6 s × 4^waits (at most 5 min), no attempt counted", () =>
    Effect.gen(function*() {
      const { transport } = refusing({ reason: "Pair rate limit", provider_code: "131056", http_status: 400 })
      const first = yield* attempt(transport, claimed())
      expect(first).toMatchObject({ _tag: "Requeued", next_attempt_at: at(NOW + 6_000), attempts: 0, pairRate: true, throttled: false })
      const third = yield* attempt(transport, claimed({ pair_rate_waits: 2 }))
      expect(third).toMatchObject({ next_attempt_at: at(NOW + 96_000) })
      expect([pairRateWaitMs(0), pairRateWaitMs(1), pairRateWaitMs(3), pairRateWaitMs(9)]).toEqual([6_000, 24_000, 300_000, 300_000])
    }))

  it.effect("transient (HTTP 503) → Requeued after the next retry delay plus at most 10% jitter; one attempt", () =>
    Effect.gen(function*() {
      const { transport } = refusing({ reason: "Service unavailable", provider_code: null, http_status: 503 })
      const outcome = yield* attempt(transport, claimed({}, { attempts: 1 }))
      if (outcome._tag !== "Requeued") return expect.fail(outcome._tag)
      const delay = Date.parse(outcome.next_attempt_at) - NOW
      expect(delay).toBeGreaterThanOrEqual(DEFAULT_SEND_QUEUE_SETTINGS.retryDelaysMs[1]!)
      expect(delay).toBeLessThanOrEqual(DEFAULT_SEND_QUEUE_SETTINGS.retryDelaysMs[1]! * 1.1)
      expect([outcome.attempts, outcome.failure, outcome.throttled]).toEqual([1, { code: "network_error", title: "Service unavailable" }, false])
    }))

  it.effect("transient once the retry delays are spent → Failed with the last error", () =>
    Effect.gen(function*() {
      const { transport } = refusing({ reason: "connect ECONNREFUSED", provider_code: null, network_error: "ECONNREFUSED" })
      const spent = DEFAULT_SEND_QUEUE_SETTINGS.retryDelaysMs.length
      expect(yield* attempt(transport, claimed({}, { attempts: spent }))).toEqual({
        _tag: "Failed",
        failure: { code: "network_error", title: "connect ECONNREFUSED" },
        attempts: 1
      })
    }))

  it.effect("unknown (the connection lost after writing) → Unknown, due again after the settle time; one attempt", () =>
    Effect.gen(function*() {
      const { transport } = refusing({ reason: "other side closed", provider_code: null, network_error: "UND_ERR_SOCKET" })
      expect(yield* attempt(transport, claimed())).toEqual({
        _tag: "Unknown",
        next_attempt_at: at(NOW + DEFAULT_SEND_QUEUE_SETTINGS.settleMs),
        attempts: 1
      })
    }))

  it.effect("permanent (131026) → Failed at once with Meta's code", () =>
    Effect.gen(function*() {
      const { transport } = refusing({ reason: "Message undeliverable", provider_code: "131026", http_status: 400 })
      expect(yield* attempt(transport, claimed())).toEqual({
        _tag: "Failed",
        failure: { code: "131026", title: "Message undeliverable" },
        attempts: 1
      })
    }))

  it.effect("account (190) → Paused through a channel; Failed without one (nothing to pause)", () =>
    Effect.gen(function*() {
      const { transport } = refusing({ reason: "Invalid OAuth access token", provider_code: "190", http_status: 401 })
      expect(yield* attempt(transport, claimed({}, { channel_uuid: CHANNEL_ID }))).toEqual({
        _tag: "Paused",
        reason: { code: "190", title: "Invalid OAuth access token" }
      })
      expect(yield* attempt(transport, claimed())).toMatchObject({ _tag: "Failed", failure: { code: "190" } })
    }))
})

describe("attemptClaimedMessage: before the transport", () => {
  it.effect("an expired message fails `expired` without an attempt", () =>
    Effect.gen(function*() {
      const { transport, calls } = transportOf(() => Effect.succeed({ provider_message_id: "wamid.1", status: "sent" }))
      expect(yield* attempt(transport, claimed({ expires_at: at(NOW) }))).toEqual({
        _tag: "Failed",
        failure: { code: "expired", title: "The message was not handed to Meta before it expired" },
        attempts: 0
      })
      expect(calls).toHaveLength(0)
    }))

  it.effect("a reclaimed message whose attempts are spent fails without another attempt", () =>
    Effect.gen(function*() {
      const { transport, calls } = transportOf(() => Effect.succeed({ provider_message_id: "wamid.1", status: "sent" }))
      const spent = DEFAULT_SEND_QUEUE_SETTINGS.retryDelaysMs.length + 1
      expect(yield* attempt(transport, claimed({ reclaimed: true }, { attempts: spent }))).toMatchObject({ _tag: "Failed", attempts: 0 })
      expect(calls).toHaveLength(0)
    }))

  it.effect("a removed channel fails the message channel_removed", () =>
    Effect.gen(function*() {
      const { transport, calls } = transportOf(() => Effect.succeed({ provider_message_id: "wamid.1", status: "sent" }))
      expect(yield* attempt(transport, claimed({}, { channel_uuid: CHANNEL_ID }), channelsWith(false))).toMatchObject({
        _tag: "Failed",
        failure: { code: "channel_removed" }
      })
      expect(calls).toHaveLength(0)
    }))

  it.effect("a channel paused by the time the message's turn comes hands it back unattempted (its failure kept)", () =>
    Effect.gen(function*() {
      const { transport, calls } = transportOf(() => Effect.succeed({ provider_message_id: "wamid.1", status: "sent" }))
      const paused = {
        getWithToken: (organizationId: OrganizationId, id: ChannelId) =>
          Effect.succeed({ organization_id: organizationId, access_token: "token", channel: { uuid: id, phone_number_id: "106540352242922", status: "paused" } })
      } as unknown as ChannelsService
      const failure = { code: "131048", title: "Spam rate limit hit" }
      expect(yield* attempt(transport, claimed({}, { channel_uuid: CHANNEL_ID, failure }), paused)).toEqual({
        _tag: "Requeued",
        next_attempt_at: at(NOW),
        failure,
        attempts: 0,
        throttled: false,
        pairRate: false
      })
      expect(calls).toHaveLength(0)
    }))

  it.effect("a channel active when the attempt opened it but paused by its slot: read again there, the message handed back unattempted", () =>
    Effect.gen(function*() {
      const { transport, calls } = transportOf(() => Effect.succeed({ provider_message_id: "wamid.1", status: "sent" }))
      let reads = 0
      const pausedBySlot = {
        getWithToken: (organizationId: OrganizationId, id: ChannelId) =>
          Effect.sync(() => ({
            organization_id: organizationId,
            access_token: "token",
            channel: { uuid: id, phone_number_id: "106540352242922", status: reads++ === 0 ? "active" : "paused" }
          }))
      } as unknown as ChannelsService
      yield* TestClock.setTime(NOW)
      const fiber = yield* Effect.fork(attemptClaimedMessage(
        { transport, channels: pausedBySlot, lastInboundAt: openWindow },
        claimed({ not_before: NOW + 40 }, { channel_uuid: CHANNEL_ID, type: "template", template: { name: "t", language: { code: "en" }, components: [] } })
      ))
      yield* TestClock.adjust(40)
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "Requeued", attempts: 0, throttled: false, pairRate: false })
      expect(reads).toBe(2)
      expect(calls).toHaveLength(0)
    }))

  it.effect("a channel the caller opened already is used as given (not read again)", () =>
    Effect.gen(function*() {
      const { transport, calls } = transportOf(() => Effect.succeed({ provider_message_id: "wamid.1", status: "sent" }))
      const opened = { uuid: CHANNEL_ID, phone_number_id: "106540352242922", access_token: "opened-token" }
      yield* TestClock.setTime(NOW)
      const outcome = yield* attemptClaimedMessage(
        { transport, channels: channelsWith(false), lastInboundAt: openWindow },
        claimed({}, { channel_uuid: CHANNEL_ID, type: "template", template: { name: "t", language: { code: "en" }, components: [] } }),
        opened
      )
      expect(outcome._tag).toBe("Sent")
      expect(calls).toEqual([expect.objectContaining({ channel: opened })])
    }))

  it.effect("waits for its pacing slot (not_before) before the transport is called", () =>
    Effect.gen(function*() {
      const { transport, calls } = transportOf(() => Effect.succeed({ provider_message_id: "wamid.1", status: "sent" }))
      yield* TestClock.setTime(NOW)
      const fiber = yield* Effect.fork(attemptClaimedMessage({ transport, channels: channelsWith(true), lastInboundAt: openWindow }, claimed({ not_before: NOW + 40 })))
      yield* TestClock.adjust(39)
      expect(calls).toHaveLength(0)
      yield* TestClock.adjust(1)
      expect((yield* Fiber.join(fiber))._tag).toBe("Sent")
      expect(calls).toHaveLength(1)
    }))

  // The hand-over window (docs/channels.md "Throughput"): a message on time a second's
  // worth of slots after one of its channel that went late waits until HAND_OVER_GAP_MS after it.
  it.effect("a message is held back until HAND_OVER_GAP_MS after its channel's hand-over a slot span before it (a late one)", () =>
    Effect.gen(function*() {
      const times: Array<number> = []
      const { transport } = transportOf(() => Effect.as(Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => times.push(now))), { provider_message_id: "wamid.1", status: "sent" as const }))
      const services = { transport, channels: channelsWith(true), lastInboundAt: openWindow }
      yield* TestClock.setTime(NOW)
      pastFirstSecond(transport, NOW)
      pastFirstSecond(transport, NOW, "channel-2")
      // 20 ms late for its slot: handed over at NOW.
      expect((yield* attemptClaimedMessage(services, claimed({ not_before: NOW - 20 }, { channel_uuid: CHANNEL_ID })))._tag).toBe("Sent")
      // A slot 1 053 ms later (50 slots of 50 messages/s): on time it would go 1 033 ms after the first.
      const fiber = yield* Effect.fork(attemptClaimedMessage(services, claimed({ not_before: NOW - 20 + 1_053 }, { channel_uuid: CHANNEL_ID })))
      yield* TestClock.adjust(HAND_OVER_GAP_MS - 1)
      expect(times).toEqual([NOW])
      yield* TestClock.adjust(1)
      expect((yield* Fiber.join(fiber))._tag).toBe("Sent")
      expect(times).toEqual([NOW, NOW + HAND_OVER_GAP_MS])
      // Another channel's message is not held back by it.
      const other = yield* attemptClaimedMessage(services, claimed({ not_before: NOW + HAND_OVER_GAP_MS }, { channel_uuid: "channel-2" as ChannelId }))
      expect(other._tag).toBe("Sent")
      expect(times).toEqual([NOW, NOW + HAND_OVER_GAP_MS, NOW + HAND_OVER_GAP_MS])
    }))

  it.effect("in its channel's first second in the process, the dispatcher hands back a message more than FIRST_SECOND_LATENESS_MS late; a send in the request keeps PACING_LATENESS_MS", () =>
    Effect.gen(function*() {
      const { transport, calls } = transportOf(() => Effect.succeed({ provider_message_id: "wamid.1", status: "sent" }))
      const late = claimed({ not_before: NOW - FIRST_SECOND_LATENESS_MS - 1 }, { channel_uuid: CHANNEL_ID })
      expect(yield* attempt(transport, late)).toMatchObject({ _tag: "Requeued", attempts: 0 })
      expect(calls).toHaveLength(0)
      expect((yield* attempt(transport, claimed({ not_before: NOW - FIRST_SECOND_LATENESS_MS }, { channel_uuid: CHANNEL_ID })))._tag).toBe("Sent")
      // The request's own send (its channel opened by the caller) is not held to it.
      const opened = { uuid: CHANNEL_ID, phone_number_id: "106540352242922", access_token: "opened-token" }
      const other = transportOf(() => Effect.succeed({ provider_message_id: "wamid.2", status: "sent" }))
      const inRequest = yield* attemptClaimedMessage({ transport: other.transport, channels: channelsWith(true), lastInboundAt: openWindow }, claimed({ not_before: NOW - PACING_LATENESS_MS }, { channel_uuid: CHANNEL_ID }), opened)
      expect(inRequest._tag).toBe("Sent")
      // A second after the channel's first hand-over, PACING_LATENESS_MS applies.
      yield* TestClock.setTime(NOW + 1_000)
      expect((yield* attemptClaimedMessage({ transport, channels: channelsWith(true), lastInboundAt: openWindow }, claimed({ not_before: NOW + 1_000 - PACING_LATENESS_MS }, { channel_uuid: CHANNEL_ID })))._tag).toBe("Sent")
      expect(calls).toHaveLength(2)
    }))

  it.effect("a message more than PACING_LATENESS_MS past its pacing slot goes back for a new one, unattempted; one without a channel is never late", () =>
    Effect.gen(function*() {
      const { transport, calls } = transportOf(() => Effect.succeed({ provider_message_id: "wamid.1", status: "sent" }))
      pastFirstSecond(transport, NOW)
      expect(yield* attempt(transport, claimed({ not_before: NOW - PACING_LATENESS_MS - 1 }, { channel_uuid: CHANNEL_ID }))).toEqual({
        _tag: "Requeued",
        next_attempt_at: at(NOW),
        failure: null,
        attempts: 0,
        throttled: false,
        pairRate: false
      })
      expect(calls).toHaveLength(0)
      expect((yield* attempt(transport, claimed({ not_before: NOW - PACING_LATENESS_MS }, { channel_uuid: CHANNEL_ID })))._tag).toBe("Sent")
      expect((yield* attempt(transport, claimed({ not_before: NOW - 1_000 })))._tag).toBe("Sent")
      expect(calls).toHaveLength(2)
    }))

  it.effect("an attempt with no answer within the timeout is Unknown", () =>
    Effect.gen(function*() {
      const { transport } = transportOf(() => Effect.never)
      yield* TestClock.setTime(NOW)
      const fiber = yield* Effect.fork(
        attemptClaimedMessage({ transport, channels: channelsWith(true), lastInboundAt: openWindow }, claimed()).pipe(
          Effect.provideService(SendQueueSettings, { ...DEFAULT_SEND_QUEUE_SETTINGS, timeoutMs: 1_000, settleMs: 5_000 })
        )
      )
      yield* TestClock.adjust(1_000)
      expect(yield* Fiber.join(fiber)).toEqual({ _tag: "Unknown", next_attempt_at: at(NOW + 6_000), attempts: 1 })
    }))

  // On the live clock the time limit is a plain timer instead of a sleeping fiber (SendQueue.ts
  // awaitWithin): the same outcome, and the request it gave up on is interrupted.
  it.live("on the live clock too: no answer within the timeout is Unknown, and the request is interrupted", () =>
    Effect.gen(function*() {
      let interrupted = false
      const { transport } = transportOf(() => Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => { interrupted = true }))))
      const startedAt = Date.now()
      const outcome = yield* attemptClaimedMessage({ transport, channels: channelsWith(true), lastInboundAt: openWindow }, claimed({ not_before: 0, expires_at: new Date(Date.now() + 3_600_000).toISOString() })).pipe(
        Effect.provideService(SendQueueSettings, { ...DEFAULT_SEND_QUEUE_SETTINGS, timeoutMs: 50, settleMs: 5_000 })
      )
      expect(outcome).toMatchObject({ _tag: "Unknown", attempts: 1 })
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(45)
      yield* Effect.sleep(20)
      expect(interrupted).toBe(true)
    }))

  it.live("on the live clock, an answer within the timeout is Sent", () =>
    Effect.gen(function*() {
      const { transport, calls } = transportOf(() => Effect.as(Effect.sleep(5), { provider_message_id: "wamid.1", status: "sent" as const }))
      const outcome = yield* attemptClaimedMessage({ transport, channels: channelsWith(true), lastInboundAt: openWindow }, claimed({ not_before: 0, expires_at: new Date(Date.now() + 3_600_000).toISOString() })).pipe(
        Effect.provideService(SendQueueSettings, { ...DEFAULT_SEND_QUEUE_SETTINGS, timeoutMs: 1_000 })
      )
      expect(outcome).toEqual({ _tag: "Sent", provider_message_id: "wamid.1", attempts: 1 })
      expect(calls).toHaveLength(1)
    }))
})

// A transport whose `send` carries `promise` (sendWithPromise): on the live clock the attempt
// awaits the promise inside one timer, no fiber of the request's own (docs/extending.md
// "A transport of your own"); the outcomes are those of `send`.
describe("attemptClaimedMessage: a send with a promise, on the live clock", () => {
  /** A transport whose `send.promise` answers `answer` (counted); its Effect `send` is counted apart. */
  const promiseTransport = (answer: () => Promise<TransportReceipt>) => {
    const promiseCalls: Array<OutboundMessage> = []
    const effectCalls: Array<OutboundMessage> = []
    const transport: MessageTransportService = {
      send: sendWithPromise(
        (outbound) => Effect.sync(() => { effectCalls.push(outbound) }).pipe(Effect.zipRight(Effect.never)),
        (outbound) => {
          promiseCalls.push(outbound)
          return answer()
        }
      )
    }
    return { transport, promiseCalls, effectCalls }
  }
  const live = (overrides: Partial<ClaimedMessage> = {}, messageOverrides: Partial<Message> = {}) =>
    claimed({ not_before: Date.now(), expires_at: new Date(Date.now() + 3_600_000).toISOString(), ...overrides }, messageOverrides)
  const attemptLive = (transport: MessageTransportService, claim: ClaimedMessage, timeoutMs = 1_000) =>
    attemptClaimedMessage({ transport, channels: channelsWith(true), lastInboundAt: windowOpenedAt(new Date(Date.now() - 60_000).toISOString()) }, claim).pipe(
      Effect.provideService(SendQueueSettings, { ...DEFAULT_SEND_QUEUE_SETTINGS, timeoutMs, settleMs: 5_000 })
    )

  it.live("an accepted promise is Sent; the Effect send is never called", () =>
    Effect.gen(function*() {
      const { transport, promiseCalls, effectCalls } = promiseTransport(() => Promise.resolve({ provider_message_id: "wamid.p", status: "sent" }))
      expect(yield* attemptLive(transport, live())).toEqual({ _tag: "Sent", provider_message_id: "wamid.p", attempts: 1 })
      expect([promiseCalls.length, effectCalls.length]).toEqual([1, 0])
    }))

  it.live("a rejection with TransportFailed is classified as send's failure is (throttle: Requeued, permanent: Failed)", () =>
    Effect.gen(function*() {
      const throttled = promiseTransport(() => Promise.reject(new TransportFailed({ reason: "Too many", provider_code: "130429", http_status: 429 })))
      expect(yield* attemptLive(throttled.transport, live())).toMatchObject({ _tag: "Requeued", throttled: true, attempts: 0 })
      const refused = promiseTransport(() => Promise.reject(new TransportFailed({ reason: "Bad number", provider_code: "131026", http_status: 400 })))
      expect(yield* attemptLive(refused.transport, live())).toMatchObject({ _tag: "Failed", attempts: 1 })
    }))

  it.live("a message is held back until HAND_OVER_GAP_MS after its channel's hand-over a slot span before it (a late one)", () =>
    Effect.gen(function*() {
      const times: Array<number> = []
      const { transport } = promiseTransport(() => {
        times.push(Date.now())
        return Promise.resolve({ provider_message_id: "wamid.p", status: "sent" })
      })
      const slot = Date.now() - 20
      pastFirstSecond(transport, Date.now())
      expect((yield* attemptLive(transport, live({ not_before: slot }, { channel_uuid: CHANNEL_ID })))._tag).toBe("Sent")
      // The gap runs from the hand-over as recorded, which the live clock can read a ms or
      // more before the transport's own `Date.now()` does.
      const recordedAt = handOverWindowOf(transport).get(CHANNEL_ID)?.recent.find((each) => each.slot === slot)?.at
      expect(recordedAt).toBeLessThanOrEqual(times[0]!)
      expect((yield* attemptLive(transport, live({ not_before: slot + 1_053 }, { channel_uuid: CHANNEL_ID })))._tag).toBe("Sent")
      expect(times).toHaveLength(2)
      expect(times[1]! - recordedAt!).toBeGreaterThanOrEqual(HAND_OVER_GAP_MS)
    }))

  it.live("no answer within the timeout is Unknown", () =>
    Effect.gen(function*() {
      const { transport } = promiseTransport(() => new Promise(() => undefined))
      const startedAt = Date.now()
      expect(yield* attemptLive(transport, live(), 50)).toMatchObject({ _tag: "Unknown", attempts: 1 })
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(45)
    }))

  it.live("any other rejection is a defect of the transport, as a send that dies: an outcome unknown, nothing made up", () =>
    Effect.gen(function*() {
      const { transport } = promiseTransport(() => Promise.reject(new TypeError("a bug in the transport")))
      const exit = yield* Effect.exit(attemptLive(transport, live()))
      expect(exit._tag === "Failure" && Cause.isDie(exit.cause)).toBe(true)
    }))

  it.live("a message past PACING_LATENESS_MS goes back for a new slot with no call; a wrapper that replaces send drops the promise", () =>
    Effect.gen(function*() {
      const { transport, promiseCalls, effectCalls } = promiseTransport(() => Promise.resolve({ provider_message_id: "wamid.p", status: "sent" }))
      const late = yield* attemptLive(transport, live({ not_before: Date.now() - PACING_LATENESS_MS - 50 }, { channel_uuid: CHANNEL_ID }))
      expect(late).toMatchObject({ _tag: "Requeued", attempts: 0, failure: null })
      expect([promiseCalls.length, effectCalls.length]).toEqual([0, 0])
      const wrapped: MessageTransportService = { ...transport, send: (outbound) => Effect.succeed({ provider_message_id: `wrapped-${outbound.message_id}`, status: "sent" as const }) }
      expect(wrapped.send.promise).toBeUndefined()
      expect(yield* attemptLive(wrapped, live())).toMatchObject({ _tag: "Sent", provider_message_id: expect.stringMatching(/^wrapped-/) })
      expect(promiseCalls).toHaveLength(0)
    }))
})

describe("attemptClaimedMessage: the customer service window", () => {
  const throughChannel = (type: Message["type"], overrides: Partial<ClaimedMessage> = {}) =>
    claimed(overrides, {
      channel_uuid: CHANNEL_ID,
      type,
      ...(type === "template" ? { template: { name: "welcome", language: { code: "en" }, components: [] } } : {}),
      ...(type === "media" ? { text: null, media: { type: "image", url: "https://example.com/a.png" } } : {})
    })
  const sent = () => transportOf(() => Effect.succeed({ provider_message_id: "wamid.1", status: "sent" }))
  const closedAt = (ms: number) => windowOpenedAt(new Date(ms - 24 * 3_600_000).toISOString())

  for (const type of ["text", "media"] as const) {
    it.effect(`a ${type} message whose window has closed fails outside_customer_service_window, no attempt`, () =>
      Effect.gen(function*() {
        const { transport, calls } = sent()
        expect(yield* attempt(transport, throughChannel(type), channelsWith(true), closedAt(NOW))).toEqual({
          _tag: "Failed",
          failure: { code: "outside_customer_service_window", title: expect.any(String) },
          attempts: 0
        })
        expect(calls).toHaveLength(0)
      }))
  }

  it.effect("a contact that never wrote through the channel: outside_customer_service_window", () =>
    Effect.gen(function*() {
      const { transport, calls } = sent()
      expect(yield* attempt(transport, throughChannel("text"), channelsWith(true), windowOpenedAt(null))).toMatchObject({
        _tag: "Failed",
        failure: { code: "outside_customer_service_window" }
      })
      expect(calls).toHaveLength(0)
    }))

  it.effect("a window still open by a millisecond (re-read at claim) lets the message go", () =>
    Effect.gen(function*() {
      const { transport, calls } = sent()
      expect((yield* attempt(transport, throughChannel("text"), channelsWith(true), closedAt(NOW + 1)))._tag).toBe("Sent")
      expect(calls).toHaveLength(1)
    }))

  it.effect("templates and messages without a channel are never held to the window", () =>
    Effect.gen(function*() {
      const { transport, calls } = sent()
      expect((yield* attempt(transport, throughChannel("template"), channelsWith(true), windowOpenedAt(null)))._tag).toBe("Sent")
      expect((yield* attempt(transport, claimed(), channelsWith(true), windowOpenedAt(null)))._tag).toBe("Sent")
      expect(calls).toHaveLength(2)
    }))

  it.effect("an expired message of a contact that never wrote fails expired", () =>
    Effect.gen(function*() {
      const { transport } = sent()
      const job = throughChannel("text", { expires_at: new Date(NOW).toISOString() })
      expect(yield* attempt(transport, job, channelsWith(true), windowOpenedAt(null))).toMatchObject({
        _tag: "Failed",
        failure: { code: "expired" }
      })
    }))

  it.effect("a message whose expiry was its window's end fails outside_customer_service_window; one that expired earlier fails expired", () =>
    Effect.gen(function*() {
      const { transport, calls } = sent()
      const closed = closedAt(NOW - 10_000)
      const bounded = throughChannel("text", { expires_at: new Date(NOW - 10_000).toISOString() })
      expect(yield* attempt(transport, bounded, channelsWith(true), closed)).toMatchObject({
        _tag: "Failed",
        failure: { code: "outside_customer_service_window" }
      })
      const earlier = throughChannel("text", { expires_at: new Date(NOW - 20_000).toISOString() })
      expect(yield* attempt(transport, earlier, channelsWith(true), closed)).toMatchObject({ _tag: "Failed", failure: { code: "expired" } })
      expect(calls).toHaveLength(0)
    }))

  it.effect("a store that cannot read the window requeues the message as a transient failure", () =>
    Effect.gen(function*() {
      const { transport, calls } = sent()
      const failing: AttemptServices["lastInboundAt"] = () => Effect.fail(new StorageError({ operation: "chats.lastInboundAt", cause: "down" }))
      expect(yield* attempt(transport, throughChannel("text"), channelsWith(true), failing)).toMatchObject({
        _tag: "Requeued",
        failure: { code: "storage_error" },
        attempts: 1
      })
      expect(calls).toHaveLength(0)
    }))
})

describe("outboundOfRecord: an outbound reaction row", () => {
  it("is handed to the transport as Meta's reaction {message_id, emoji} from content.reaction; the window applies to it", () => {
    const row = message({ type: "reaction", text: "👍", content: { reaction: { message_id: "wamid.target", emoji: "👍", target_uuid: "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6e" } } })
    expect(outboundOfRecord(row, "+14155550100", null)).toEqual({
      message_id: row.uuid,
      to: "+14155550100",
      channel: null,
      type: "reaction",
      reaction: { message_id: "wamid.target", emoji: "👍" }
    })
    expect(outboundOfRecord({ ...row, content: { reaction: { message_id: "wamid.target", emoji: "" } } }, "+14155550100", null)).toMatchObject({
      type: "reaction",
      reaction: { message_id: "wamid.target", emoji: "" }
    })
    expect(isFreeForm("reaction")).toBe(true)
  })
})

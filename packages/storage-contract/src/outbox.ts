import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import {
  CHANNEL_REMOVED_FAILURE,
  type Channel,
  type ClaimedMessage,
  MESSAGE_STATUS_PREDECESSORS,
  type Message,
  type MessageId,
  type OrganizationId,
  Storage,
  type StorageService,
  nextCooldownMs,
  pacingIntervalMs
} from "@switchboard/core"
import { append, inboundRequest, outboundRequest } from "./chat-support.js"
import type { StorageContractOptions } from "./options.js"
import * as fixtures from "./fixtures.js"
import {
  LEASE_MS,
  SETTLE_MS,
  T0,
  accountFailure,
  addOutboxEndpoint,
  at,
  channelOf,
  claimAt,
  claimOnly,
  enqueue,
  expectClaim,
  failure,
  idsOf,
  messageOf,
  pauseChannel,
  placement,
  recipient,
  recordAt,
  recorded,
  requeued,
  sent,
  writtenEvents
} from "./outbox-support.js"
import { insertChannel, insertOrganization, runner, sharedRunner } from "./support.js"
import { addEndpoint } from "./webhook-support.js"

/** `next_attempt_at` of a message claimed at `ms`: its lease end plus the settle time. */
const settledAfterClaim = (ms: number) => at(ms + LEASE_MS + SETTLE_MS)

/** A queued outbound message written without `outbox`: never in the send queue. */
const plainMessage = (organizationId: OrganizationId, n: number) =>
  Effect.gen(function* () {
    const to = yield* recipient(organizationId, n)
    return (yield* append(organizationId, outboundRequest(to.id, { now: at(0) }))).message
  })

/**
 * The case of a `Sent` outcome and the pending provider reports of its id, through `record`
 * (a form that records a `Sent` of `providerId` at `ms` and answers the status afterwards):
 * a report that came first moves the message on; with no id, `sent` and no id recorded.
 */
const pendingReportsApplied = (
  record: (ms: number, claimed: Pick<ClaimedMessage, "message" | "lease">, providerId: string | null) => Effect.Effect<Message["status"], unknown, Storage>
) =>
  Effect.gen(function* () {
    const { chats } = yield* Storage
    const org = yield* insertOrganization()
    const reported = yield* enqueue(org.id, yield* recipient(org.id, 1), { claim: "lease-1" })
    const pending = yield* chats.updateMessageStatusByProviderId(org.id, "wamid.1", {
      status: "delivered",
      from: MESSAGE_STATUS_PREDECESSORS.delivered,
      now: at(1),
      pendingUntil: at(60_000)
    })
    expect(pending).toEqual({ _tag: "Pending" })
    expect(yield* record(2, { message: reported, lease: "lease-1" }, "wamid.1")).toBe("delivered")
    expect(yield* messageOf(org.id, reported.uuid)).toMatchObject({ status: "delivered", provider_message_id: "wamid.1", updated_at: at(2) })
    const anonymous = yield* enqueue(org.id, yield* recipient(org.id, 2), { claim: "lease-2" })
    expect(yield* record(2, { message: anonymous, lease: "lease-2" }, null)).toBe("sent")
    expect(yield* messageOf(org.id, anonymous.uuid)).toMatchObject({ status: "sent", provider_message_id: null })
  })

/**
 * Contract of `Storage.outbox` and the send queue's parts of `Storage.chats` and
 * `Storage.channels` (docs/messaging.md "The send queue"): creating a message in the queue
 * (claimed at once or `queued`), claims (due heads only, leases, order, lanes, pacing,
 * round-robin across channels, paused channels, expired messages), recording outcomes
 * (each outcome's writes, the lease guard, cool-downs, pair-rate waits), events, settling
 * from a status notification, retry, cancel, `nextDueAt`, `channelQueue`,
 * `resumeChannel`, a channel's delete, and a status update ending the dispatch state.
 * With `options.makeSharedLayers`, also two stores over one underlying store.
 */
export const outboxContract = (options: StorageContractOptions): void => {
  const run = runner(options)

  describe("outbox: creating a message in the send queue", () => {
    it.effect("claim null: stored queued, due at once, attempts 0, with its broadcast_uuid; a claim then takes it", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const to = yield* recipient(org.id, 1)
          const broadcast = fixtures.uuid()
          const message = yield* enqueue(org.id, to, { at: 5, class: "broadcast", broadcastUuid: broadcast })
          expect(message).toMatchObject({ status: "queued", attempts: 0, next_attempt_at: at(5), broadcast_uuid: broadcast, failure: null })
          expect(yield* messageOf(org.id, message.uuid)).toEqual(message)
          const claimed = yield* claimOnly(5, message, { lease: "lease-1" })
          expect(claimed).toEqual({
            organization_id: org.id,
            message: { ...message, status: "sending", next_attempt_at: settledAfterClaim(5), updated_at: at(5) },
            lease: "lease-1",
            to: to.phone,
            class: "broadcast",
            expires_at: fixtures.instant(10_000),
            pair_rate_waits: 0,
            not_before: T0 + 5,
            reclaimed: false,
            scheduled_at: null
          })
          expect(yield* messageOf(org.id, message.uuid)).toEqual(claimed.message)
        })
      ))

    it.effect("claimed when free: sending under the lease, next_attempt_at = leaseUntil + settleMs; the same lease records it", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id, { throughput_mps: 1 })
          for (const [n, on] of [[1, undefined], [2, channel]] as const) {
            const to = yield* recipient(org.id, n)
            const message = yield* enqueue(org.id, to, { channel: on, claim: `lease-${n}` })
            expect(message).toMatchObject({ status: "sending", attempts: 0, next_attempt_at: settledAfterClaim(0), updated_at: at(0) })
            expect(yield* messageOf(org.id, message.uuid)).toEqual(message)
            expect(yield* claimAt(0)).toEqual([])
            expect((yield* recorded(1, { message, lease: `lease-${n}` }, sent("wamid." + n))).status).toBe("sent")
          }
        })
      ))

    it.effect("queued when its lane has a waiting message (queued or sending); another class or recipient is another lane", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const [a, b] = [yield* recipient(org.id, 1), yield* recipient(org.id, 2)]
          yield* enqueue(org.id, a)
          const behindQueued = yield* enqueue(org.id, a, { claim: "lease-1" })
          expect(behindQueued).toMatchObject({ status: "queued", next_attempt_at: at(0) })
          const otherClass = yield* enqueue(org.id, a, { class: "broadcast", claim: "lease-2" })
          expect(otherClass.status).toBe("sending")
          const behindSending = yield* enqueue(org.id, a, { class: "broadcast", at: 1, claim: "lease-3" })
          expect(behindSending).toMatchObject({ status: "queued", next_attempt_at: at(1) })
          expect((yield* enqueue(org.id, b, { claim: "lease-4" })).status).toBe("sending")
        })
      ))

    it.effect("queued when the channel's pacing slot is taken: due at the slot; a later creation at the slot is claimed", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id, { throughput_mps: 2 })
          const interval = pacingIntervalMs(2)
          const first = yield* enqueue(org.id, yield* recipient(org.id, 1), { channel, claim: "lease-1" })
          expect(first.status).toBe("sending")
          const second = yield* enqueue(org.id, yield* recipient(org.id, 2), { channel, at: 100, claim: "lease-2" })
          expect(second).toMatchObject({ status: "queued", next_attempt_at: new Date(T0 + interval).toISOString() })
          // No slot was reserved for the queued one: a creation once the next slot came is claimed, taking it.
          const later = Math.ceil(interval)
          const third = yield* enqueue(org.id, yield* recipient(org.id, 3), { channel, at: later, claim: "lease-3" })
          expect(third.status).toBe("sending")
          expect(yield* claimAt(later, { horizonMs: 0 })).toEqual([])
          const claimed = yield* claimAt(2 * later, { horizonMs: 0 })
          expect(claimed.map((c) => [c.message.uuid, c.not_before])).toEqual([[second.uuid, T0 + 2 * later]])
        })
      ))

    it.effect("a message whose uuid the organization has is Duplicate with the stored message: no contact, chat, placement, pacing slot or event written", () =>
      run(
        Effect.gen(function* () {
          const { chats, contacts } = yield* Storage
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id, { throughput_mps: 1 })
          const interval = Math.ceil(pacingIntervalMs(1))
          const to = yield* recipient(org.id, 1)
          yield* addEndpoint(org.id, { events: ["message.received", "message.status_updated", "chat.updated", "contact.created"] })
          // The first writer of a held uuid (an Idempotency-Key's), claimed at once.
          const first = yield* enqueue(org.id, to, { channel, claim: "lease-1" })
          const chat = (yield* chats.findById(org.id, first.chat_uuid)).pipe(Option.getOrThrow)
          yield* writtenEvents()
          // The second writer of that uuid, once the pacing slot is free again: another text, claimed at once too.
          const request = outboundRequest(to.id, { now: at(interval), channelUuid: channel.uuid, text: "the second writer" })
          const again = { ...request, message: { ...request.message, uuid: first.uuid }, outbox: placement(to, { at: interval, claim: "lease-2" }) }
          expect(yield* chats.appendMessage(org.id, again)).toEqual({ _tag: "Duplicate", chat, message: first })
          // By phone, a phone without a contact: neither is created.
          const byPhone = inboundRequest(fixtures.phone(2), { now: at(interval) })
          expect(yield* chats.appendMessage(org.id, { ...byPhone, message: { ...byPhone.message, uuid: first.uuid } })).toEqual({
            _tag: "Duplicate",
            chat,
            message: first
          })
          expect(yield* contacts.findByPhone(org.id, fixtures.phone(2))).toEqual(Option.none())
          expect(yield* chats.findMessage(org.id, first.uuid)).toEqual(Option.some(first))
          expect(yield* chats.findById(org.id, chat.uuid)).toEqual(Option.some(chat))
          expect(Option.map(yield* chats.listMessages(org.id, chat.uuid, { page: 1, per_page: 10 }), (page) => page.total)).toEqual(Option.some(1))
          expect(yield* writtenEvents()).toEqual([])
          // The channel's slot at `interval` was not taken: a message of another lane gets it.
          expect((yield* enqueue(org.id, yield* recipient(org.id, 3), { channel, at: interval, claim: "lease-3" })).status).toBe("sending")
        })
      ))

    it.effect("queued when the channel is paused, even when its lane is free and a slot is open", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id)
          yield* pauseChannel(org.id, channel)
          const message = yield* enqueue(org.id, yield* recipient(org.id, 1), { channel, at: 10_000, claim: "lease-1" })
          expect(message).toMatchObject({ status: "queued", next_attempt_at: at(10_000) })
        })
      ))

    it.effect("bypass always claims — lane busy, slot taken, channel paused — and reserves no slot", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id, { throughput_mps: 1 })
          const to = yield* recipient(org.id, 1)
          yield* enqueue(org.id, to, { channel, claim: "lease-1" })
          const busy = yield* enqueue(org.id, to, { channel, claim: { bypass: "bypass-1" } })
          expect(busy).toMatchObject({ status: "sending", next_attempt_at: settledAfterClaim(0) })
          expect((yield* recorded(0, { message: busy, lease: "bypass-1" }, sent())).status).toBe("sent")

          const fresh = yield* insertChannel(org.id, { throughput_mps: 1 })
          expect((yield* enqueue(org.id, yield* recipient(org.id, 2), { channel: fresh, claim: { bypass: "bypass-2" } })).status).toBe("sending")
          expect((yield* enqueue(org.id, yield* recipient(org.id, 3), { channel: fresh, claim: "lease-3" })).status).toBe("sending")

          yield* pauseChannel(org.id, fresh, 1)
          expect((yield* enqueue(org.id, yield* recipient(org.id, 4), { channel: fresh, at: 2, claim: { bypass: "bypass-4" } })).status).toBe("sending")
        })
      ))

    it.effect("messages written without outbox are never claimed, settled, retried or cancelled, whatever their status", () =>
      run(
        Effect.gen(function* () {
          const { outbox } = yield* Storage
          const org = yield* insertOrganization()
          const message = yield* plainMessage(org.id, 1)
          expect(yield* claimAt(1_000_000)).toEqual([])
          expect(yield* outbox.nextDueAt()).toBeNull()
          const settlement = { provider_message_id: "wamid.1", status: "delivered", now: at(1) } as const
          expect(yield* outbox.settle(org.id, message.uuid, settlement)).toEqual(Option.none())
          expect(yield* outbox.cancel(org.id, message.uuid, failure, at(1))).toEqual({ _tag: "NotFound" })
          const { chats } = yield* Storage
          yield* chats.updateMessageStatus(org.id, message.uuid, { status: "failed", from: MESSAGE_STATUS_PREDECESSORS.failed, failure, now: at(2) })
          expect(yield* outbox.retry(org.id, message.uuid, at(3), fixtures.instant(100))).toEqual({ _tag: "NotFound" })
          expect(yield* recordAt(3, { message, lease: "any" }, sent())).toEqual(Option.none())
          expect((yield* messageOf(org.id, message.uuid)).status).toBe("failed")
        })
      ))
  })

  describe("outbox: scheduled messages", () => {
    it.effect("stored scheduled at notBefore, in no lane: not claimed before it, nor holding up its lane", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const to = yield* recipient(org.id, 1)
          const scheduled = yield* enqueue(org.id, to, { sendAt: 10_000, claim: "ignored" })
          expect(scheduled).toMatchObject({ status: "scheduled", next_attempt_at: at(10_000), attempts: 0 })
          expect(yield* messageOf(org.id, scheduled.uuid)).toEqual(scheduled)
          expect(yield* claimAt(9_999)).toEqual([])
          expect((yield* messageOf(org.id, scheduled.uuid)).status).toBe("scheduled")
          // Its lane is free: a message after it is claimed at once.
          const after = yield* enqueue(org.id, to, { at: 1, claim: "lease-1" })
          expect(after.status).toBe("sending")
        })
      ))

    it.effect("claimed once due, with scheduled_at, behind its lane's queued messages (a fresh sequence)", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const to = yield* recipient(org.id, 1)
          const scheduled = yield* enqueue(org.id, to, { sendAt: 1_000 })
          const queued = yield* enqueue(org.id, to, { at: 500 })
          const queuedLater = yield* enqueue(org.id, to, { at: 600 })
          // The lane's queued message goes first, though the scheduled one was created before it.
          const first = yield* claimOnly(1_000, queued)
          expect(first.scheduled_at).toBeNull()
          expect((yield* messageOf(org.id, scheduled.uuid)).status).toBe("queued")
          yield* recorded(1_001, first, sent("wamid.1"))
          const second = yield* claimOnly(1_002, queuedLater)
          yield* recorded(1_003, second, sent("wamid.2"))
          const third = yield* claimOnly(1_004, { ...scheduled, status: "queued" })
          expect(third).toMatchObject({ scheduled_at: at(1_000), reclaimed: false, message: { status: "sending" } })
          expect(third.message.next_attempt_at).toBe(settledAfterClaim(1_004))
        })
      ))

    it.effect("a due scheduled message of an empty lane is claimed by the claim that promotes it", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id, { throughput_mps: 10 })
          const scheduled = yield* enqueue(org.id, yield* recipient(org.id, 1), { channel, sendAt: 2_000 })
          const claimed = yield* claimOnly(2_500, { ...scheduled, status: "queued" })
          expect(claimed.scheduled_at).toBe(at(2_000))
          expect(claimed.message.status).toBe("sending")
        })
      ))

    it.effect("nextDueAt includes a scheduled message; cancel fails it; the queue figures count it as queued", () =>
      run(
        Effect.gen(function* () {
          const { outbox } = yield* Storage
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id)
          const scheduled = yield* enqueue(org.id, yield* recipient(org.id, 1), { channel, at: 100, sendAt: 7_000 })
          expect(yield* outbox.nextDueAt()).toBe(T0 + 7_000)
          expect(yield* outbox.channelQueue(org.id, channel.uuid)).toEqual({ queued: 1, sending: 0, oldest_queued_at: at(100) })
          expect(yield* outbox.summary()).toContainEqual({ channel_id: channel.uuid, channel_status: "active", queued: 1, sending: 0 })
          const cancelled = yield* outbox.cancel(org.id, scheduled.uuid, failure, at(200))
          expect(cancelled).toMatchObject({ _tag: "Done", message: { status: "failed", failure, next_attempt_at: null } })
          expect(yield* outbox.nextDueAt()).toBeNull()
          expect(yield* claimAt(8_000)).toEqual([])
          expect((yield* messageOf(org.id, scheduled.uuid)).status).toBe("failed")
        })
      ))

    it.effect("a deleted channel fails its scheduled messages channel_removed", () =>
      run(
        Effect.gen(function* () {
          const { channels } = yield* Storage
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id)
          const scheduled = yield* enqueue(org.id, yield* recipient(org.id, 1), { channel, sendAt: 7_000 })
          yield* channels.delete(org.id, channel.uuid)
          expect(yield* messageOf(org.id, scheduled.uuid)).toMatchObject({ status: "failed", failure: CHANNEL_REMOVED_FAILURE })
          expect(yield* claimAt(8_000)).toEqual([])
        })
      ))
  })

  describe("outbox: claim", () => {
    it.effect("claims only due messages: next_attempt_at <= now", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const message = yield* enqueue(org.id, yield* recipient(org.id, 1), { claim: "lease-1" })
          yield* recorded(1, { message, lease: "lease-1" }, requeued(5_000))
          expect(yield* claimAt(4_999)).toEqual([])
          yield* claimOnly(5_000, message)
        })
      ))

    it.effect("a leased message is never claimed twice; once its lease and settle time are over it is reclaimed (reclaimed: true)", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const message = yield* enqueue(org.id, yield* recipient(org.id, 1))
          const first = yield* claimOnly(0, message, { lease: "first" })
          expect(first.reclaimed).toBe(false)
          expect(yield* claimAt(0)).toEqual([])
          expect(yield* claimAt(LEASE_MS)).toEqual([])
          expect(yield* claimAt(LEASE_MS + SETTLE_MS - 1)).toEqual([])
          const again = yield* claimOnly(LEASE_MS + SETTLE_MS, message, { lease: "second" })
          expect(again).toMatchObject({ reclaimed: true, lease: "second", message: { status: "sending", next_attempt_at: settledAfterClaim(LEASE_MS + SETTLE_MS) } })
          expect(yield* recordAt(LEASE_MS + SETTLE_MS, first, sent())).toEqual(Option.none())
          expect((yield* recorded(LEASE_MS + SETTLE_MS, again, sent())).status).toBe("sent")
        })
      ))

    it.effect("order: single before broadcast, then next_attempt_at, then creation", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const recipients = []
          for (let n = 1; n <= 5; n++) recipients.push(yield* recipient(org.id, n))
          const broadcast = yield* enqueue(org.id, recipients[0]!, { class: "broadcast", at: 0 })
          const late = yield* enqueue(org.id, recipients[1]!, { at: 30 })
          const early = yield* enqueue(org.id, recipients[2]!, { at: 10 })
          const tieFirst = yield* enqueue(org.id, recipients[3]!, { at: 20 })
          const tieSecond = yield* enqueue(org.id, recipients[4]!, { at: 20 })
          const order: Array<MessageId> = []
          for (let turn = 0; turn < 5; turn++) order.push(...idsOf(yield* claimAt(100, { limit: 1 })))
          expect(order).toEqual([early.uuid, tieFirst.uuid, tieSecond.uuid, late.uuid, broadcast.uuid])
        })
      ))

    it.effect("a lane goes one message at a time in creation order (even created in the same millisecond); other lanes never wait", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const [a, b] = [yield* recipient(org.id, 1), yield* recipient(org.id, 2)]
          const lane: Array<Message> = []
          for (let i = 0; i < 3; i++) lane.push(yield* enqueue(org.id, a))
          const other = yield* enqueue(org.id, b)
          const broadcast = yield* enqueue(org.id, a, { class: "broadcast" })
          let claimed = yield* expectClaim(0, [lane[0]!, other, broadcast])
          expect(yield* claimAt(1)).toEqual([])
          for (const [i, next] of [[1, lane[1]!], [2, lane[2]!]] as const) {
            const head = claimed.find((c) => c.message.uuid === lane[i - 1]!.uuid)!
            yield* recorded(i * 10, head, sent())
            claimed = yield* expectClaim(i * 10, [next])
          }
        })
      ))

    it.effect("a lane's head that is not due holds the lane, even when a later message of the lane is due", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const to = yield* recipient(org.id, 1)
          const head = yield* enqueue(org.id, to, { claim: "lease-1" })
          const behind = yield* enqueue(org.id, to)
          yield* recorded(1, { message: head, lease: "lease-1" }, requeued(10_000))
          expect(yield* claimAt(5_000)).toEqual([])
          const claimed = yield* claimOnly(10_000, head)
          yield* recorded(10_000, claimed, sent())
          yield* claimOnly(10_000, behind)
        })
      ))

    it.effect("pacing: not_before slots spaced by pacingIntervalMs, none beyond now + horizonMs; messages without a channel unpaced", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id, { throughput_mps: 10 })
          const interval = pacingIntervalMs(10)
          const queued: Array<Message> = []
          for (let n = 1; n <= 5; n++) queued.push(yield* enqueue(org.id, yield* recipient(org.id, n), { channel }))
          const unpaced: Array<Message> = []
          for (let n = 6; n <= 8; n++) unpaced.push(yield* enqueue(org.id, yield* recipient(org.id, n)))
          const claimed = yield* claimAt(0, { horizonMs: 250 })
          const paced = claimed.filter((c) => c.message.channel_uuid === channel.uuid).sort((a, b) => a.not_before - b.not_before)
          expect(paced.map((c) => c.message.uuid)).toEqual(queued.slice(0, 3).map((m) => m.uuid))
          const slots = paced.map((c) => c.not_before)
          expect(slots[0]).toBe(T0)
          expect(slots[1]).toBeCloseTo(T0 + interval, 3)
          expect(slots[2]).toBeCloseTo(T0 + interval + interval, 3)
          expect(claimed.filter((c) => c.message.channel_uuid === null).map((c) => c.not_before)).toEqual([T0, T0, T0])
        })
      ))

    it.effect("pacing: the channel's slots are shared by claims and by creations claimed at once", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id, { throughput_mps: 10 })
          const interval = pacingIntervalMs(10)
          const created = yield* enqueue(org.id, yield* recipient(org.id, 1), { channel, claim: "lease-1" })
          expect(created.status).toBe("sending")
          const queued: Array<Message> = []
          for (let n = 2; n <= 6; n++) queued.push(yield* enqueue(org.id, yield* recipient(org.id, n), { channel }))
          const first = [...(yield* claimAt(0, { horizonMs: 250 }))].sort((a, b) => a.not_before - b.not_before)
          expect(first.map((c) => c.message.uuid)).toEqual([queued[0]!.uuid, queued[1]!.uuid])
          expect(first[0]!.not_before).toBeCloseTo(T0 + interval, 3)
          expect(first[1]!.not_before).toBeCloseTo(T0 + 2 * interval, 3)
          // The next slot is 3 × interval (≈ 316 ms): beyond a horizon of 250 ms at 0, within it at 100.
          expect(yield* claimAt(0, { horizonMs: 250 })).toEqual([])
          const second = yield* claimAt(100, { horizonMs: 250, limit: 1 })
          expect(second.map((c) => c.message.uuid)).toEqual([queued[2]!.uuid])
          expect(second[0]!.not_before).toBeCloseTo(T0 + 3 * interval, 3)
          const late = yield* enqueue(org.id, yield* recipient(org.id, 7), { channel, at: 100, claim: "lease-7" })
          expect(late).toMatchObject({ status: "queued", next_attempt_at: new Date(T0 + 4 * interval).toISOString() })
        })
      ))

    it.effect("round-robin: two busy channels share a claim of 4 two each; messages without a channel are one more channel", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const one = yield* insertChannel(org.id, { throughput_mps: 1000 })
          const two = yield* insertChannel(org.id, { throughput_mps: 1000 })
          for (let n = 1; n <= 6; n++) {
            yield* enqueue(org.id, yield* recipient(org.id, n), { channel: one })
            yield* enqueue(org.id, yield* recipient(org.id, 100 + n), { channel: two })
          }
          const count = (claimed: ReadonlyArray<{ readonly message: Message }>, channel: string | null) =>
            claimed.filter((c) => c.message.channel_uuid === channel).length
          const claimed = yield* claimAt(0, { limit: 4 })
          expect([count(claimed, one.uuid), count(claimed, two.uuid)]).toEqual([2, 2])
          for (let n = 1; n <= 6; n++) yield* enqueue(org.id, yield* recipient(org.id, 200 + n))
          const mixed = yield* claimAt(0, { limit: 6 })
          expect([count(mixed, one.uuid), count(mixed, two.uuid), count(mixed, null)]).toEqual([2, 2, 2])
        })
      ))

    it.effect("a paused channel's messages are never claimed; an active channel's still are", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const paused = yield* insertChannel(org.id)
          const active = yield* insertChannel(org.id)
          const held = yield* pauseChannel(org.id, paused)
          const waiting = yield* enqueue(org.id, yield* recipient(org.id, 1), { channel: paused })
          const other = yield* enqueue(org.id, yield* recipient(org.id, 2), { channel: active })
          yield* expectClaim(1_000_000, [other])
          expect(yield* claimAt(1_000_001)).toEqual([])
          expect([(yield* messageOf(org.id, held.uuid)).status, (yield* messageOf(org.id, waiting.uuid)).status]).toEqual(["queued", "queued"])
        })
      ))

    it.effect("an expired message (expires_at <= now) is claimed with not_before = now, without a pacing slot", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id, { throughput_mps: 1 })
          yield* enqueue(org.id, yield* recipient(org.id, 1), { channel, claim: "lease-1" })
          const fresh = yield* enqueue(org.id, yield* recipient(org.id, 2), { channel })
          const expired = yield* enqueue(org.id, yield* recipient(org.id, 3), { channel, expiresAt: at(10) })
          // The next slot is ≈ 1 053 ms away, beyond the horizon: only the expired message goes.
          const claimed = yield* claimOnly(10, expired, { horizonMs: 0 })
          expect(claimed.not_before).toBe(T0 + 10)
          expect(claimed.expires_at).toBe(at(10))
          // The expired message took no slot: the next one is still the first after the creation's.
          const slot = yield* claimOnly(Math.ceil(pacingIntervalMs(1)), fresh, { horizonMs: 0 })
          expect(slot.not_before).toBe(T0 + Math.ceil(pacingIntervalMs(1)))
        })
      ))
  })

  describe("outbox: record", () => {
    it.effect("Sent: status sent, provider id, failure cleared, attempts added, next_attempt_at null, updated_at now; the lane is free", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const to = yield* recipient(org.id, 1)
          const message = yield* enqueue(org.id, to, { claim: "lease-1" })
          const next = yield* enqueue(org.id, to)
          yield* recorded(1, { message, lease: "lease-1" }, requeued(2, { attempts: 1, failure }))
          const claimed = yield* claimOnly(2, message)
          const written = yield* recorded(3, claimed, sent("wamid.1", 2))
          const expected: Message = { ...message, status: "sent", provider_message_id: "wamid.1", failure: null, attempts: 3, next_attempt_at: null, updated_at: at(3) }
          expect(written).toEqual(expected)
          expect(yield* messageOf(org.id, message.uuid)).toEqual(expected)
          expect(yield* recordAt(4, claimed, sent("wamid.2"))).toEqual(Option.none())
          yield* claimOnly(4, next)
          expect(yield* claimAt(5)).toEqual([])
        })
      ))

    it.effect("its promise form, where the store has one, writes and answers as the Effect: the message afterwards, then None for a lease no longer held", () =>
      run(
        Effect.gen(function* () {
          const { outbox } = yield* Storage
          // Every store of this repository has one (the send queue's dispatcher records through it).
          const recordPromise = outbox.record.promise!
          expect(recordPromise).toBeDefined()
          const org = yield* insertOrganization()
          const to = yield* recipient(org.id, 1)
          const message = yield* enqueue(org.id, to, { claim: "lease-1" })
          const written = yield* Effect.promise(() => recordPromise(message.uuid, "lease-1", sent("wamid.p"), at(1)))
          const expected: Message = { ...message, status: "sent", provider_message_id: "wamid.p", failure: null, attempts: 1, next_attempt_at: null, updated_at: at(1) }
          expect(written).toEqual(Option.some(expected))
          expect(yield* messageOf(org.id, message.uuid)).toEqual(expected)
          expect(yield* Effect.promise(() => recordPromise(message.uuid, "lease-1", sent("wamid.q"), at(2)))).toEqual(Option.none())
        })
      ))

    it.effect("Sent with a provider id applies the pending provider reports for it; with none it records no id", () =>
      run(pendingReportsApplied((ms, claimed, providerId) => Effect.map(recorded(ms, claimed, sent(providerId)), (message) => message.status))))

    it.effect("Failed: status failed with the failure, attempts added, next_attempt_at null; never claimed again", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const message = yield* enqueue(org.id, yield* recipient(org.id, 1), { claim: "lease-1" })
          const written = yield* recorded(5, { message, lease: "lease-1" }, { _tag: "Failed", failure, attempts: 1 })
          expect(written).toEqual({ ...message, status: "failed", failure, attempts: 1, next_attempt_at: null, updated_at: at(5) })
          expect(yield* messageOf(org.id, message.uuid)).toEqual(written)
          expect(yield* claimAt(1_000_000)).toEqual([])
        })
      ))

    it.effect("Requeued: queued, due at next_attempt_at, failure recorded, attempts added; pair-rate waits counted, reset by any other outcome", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const message = yield* enqueue(org.id, yield* recipient(org.id, 1), { claim: "lease-1" })
          const written = yield* recorded(5, { message, lease: "lease-1" }, requeued(100, { attempts: 1, failure, pairRate: true }))
          expect(written).toEqual({ ...message, status: "queued", failure, attempts: 1, next_attempt_at: at(100), updated_at: at(5) })
          expect(yield* claimAt(99)).toEqual([])
          let claimed = yield* claimOnly(100, message)
          expect(claimed.pair_rate_waits).toBe(1)
          yield* recorded(101, claimed, requeued(200, { pairRate: true }))
          claimed = yield* claimOnly(200, message)
          expect(claimed).toMatchObject({ pair_rate_waits: 2, message: { attempts: 1, failure: null } })
          yield* recorded(201, claimed, requeued(300))
          claimed = yield* claimOnly(300, message)
          expect(claimed.pair_rate_waits).toBe(0)
          yield* recorded(301, claimed, requeued(400, { pairRate: true }))
          claimed = yield* claimOnly(400, message)
          yield* recorded(401, claimed, { _tag: "Unknown", next_attempt_at: at(500), attempts: 0 })
          expect((yield* claimOnly(500, message)).pair_rate_waits).toBe(0)
        })
      ))

    it.effect("Requeued throttled: the channel cools down 1 s, 2 s, 4 s … at most 60 s; a Sent resets the cool-down", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id, { throughput_mps: 1000 })
          const message = yield* enqueue(org.id, yield* recipient(org.id, 1), { channel })
          const throttled = (ms: number) => requeued(ms, { throttled: true })
          // Each throttle is recorded when its slot came; the next slot is that time + the cool-down.
          let now = 0
          let claimed = yield* claimOnly(now, message, { horizonMs: 120_000 })
          expect(claimed.not_before).toBe(T0)
          const gaps: Array<number> = []
          for (let i = 0; i < 8; i++) {
            yield* recorded(now, claimed, throttled(now))
            claimed = yield* claimOnly(now, message, { horizonMs: 120_000 })
            gaps.push(claimed.not_before - (T0 + now))
            now = claimed.not_before - T0
          }
          expect(gaps).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000])
          expect(nextCooldownMs(60_000)).toBe(60_000)
          yield* recorded(now, claimed, sent())
          const next = yield* enqueue(org.id, yield* recipient(org.id, 2), { channel, at: now + 2 })
          claimed = yield* claimOnly(now + 2, next, { horizonMs: 120_000 })
          expect(claimed.not_before).toBe(T0 + now + 2)
          yield* recorded(now + 2, claimed, throttled(now + 2))
          expect((yield* claimOnly(now + 2, next, { horizonMs: 120_000 })).not_before).toBe(T0 + now + 2 + 1_000)
        })
      ))

    it.effect("Unknown: stays sending, attempts added, the lease ends (the same token cannot record again), due again at next_attempt_at", () =>
      run(
        Effect.gen(function* () {
          const { outbox } = yield* Storage
          const org = yield* insertOrganization()
          const message = yield* enqueue(org.id, yield* recipient(org.id, 1), { claim: "lease-1" })
          const unknown = { _tag: "Unknown", next_attempt_at: at(5_000), attempts: 1 } as const
          const written = yield* recorded(1_000, { message, lease: "lease-1" }, unknown)
          expect(written).toEqual({ ...message, status: "sending", attempts: 1, next_attempt_at: at(5_000), updated_at: at(1_000) })
          expect(yield* recordAt(1_001, { message, lease: "lease-1" }, sent())).toEqual(Option.none())
          expect(yield* recordAt(1_001, { message, lease: "lease-1" }, unknown)).toEqual(Option.none())
          expect(yield* messageOf(org.id, message.uuid)).toEqual(written)
          expect(yield* outbox.nextDueAt()).toBe(T0 + 5_000)
          expect(yield* claimAt(4_999)).toEqual([])
          const again = yield* claimOnly(5_000, message, { lease: "lease-2" })
          expect(again.reclaimed).toBe(true)
          expect((yield* recorded(5_001, again, sent())).attempts).toBe(2)
        })
      ))

    it.effect("Paused: the message queued and due now; the channel paused with the reason and paused_at = now; already paused stays as it was", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id)
          const first = yield* enqueue(org.id, yield* recipient(org.id, 1), { channel, claim: { bypass: "lease-1" } })
          const second = yield* enqueue(org.id, yield* recipient(org.id, 2), { channel, claim: { bypass: "lease-2" } })
          const written = yield* recorded(7, { message: first, lease: "lease-1" }, { _tag: "Paused", reason: accountFailure })
          expect(written).toEqual({ ...first, status: "queued", next_attempt_at: at(7), updated_at: at(7) })
          const paused: Channel = { ...channel, status: "paused", paused_reason: accountFailure, paused_at: at(7), updated_at: at(7) }
          expect(yield* channelOf(org.id, channel)).toEqual(paused)
          yield* recorded(9, { message: second, lease: "lease-2" }, { _tag: "Paused", reason: failure })
          expect(yield* channelOf(org.id, channel)).toEqual(paused)
          expect(yield* recordAt(10, { message: first, lease: "lease-1" }, sent())).toEqual(Option.none())
        })
      ))

    it.effect("a lease that does not hold the message → None, nothing written (another token, a queued message, an unknown id)", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id)
          const message = yield* enqueue(org.id, yield* recipient(org.id, 1), { channel, claim: "lease-1" })
          const queued = yield* enqueue(org.id, yield* recipient(org.id, 2))
          const outcomes = [
            sent("wamid.1"),
            { _tag: "Failed", failure, attempts: 1 },
            requeued(10, { attempts: 1, throttled: true }),
            { _tag: "Unknown", next_attempt_at: at(10), attempts: 1 },
            { _tag: "Paused", reason: accountFailure }
          ] as const
          for (const outcome of outcomes) {
            expect(yield* recordAt(5, { message, lease: "lease-2" }, outcome)).toEqual(Option.none())
            expect(yield* recordAt(5, { message: queued, lease: "lease-1" }, outcome)).toEqual(Option.none())
            expect(yield* recordAt(5, { message: { ...message, uuid: fixtures.uuid() as MessageId }, lease: "lease-1" }, outcome)).toEqual(Option.none())
          }
          expect(yield* messageOf(org.id, message.uuid)).toEqual(message)
          expect(yield* messageOf(org.id, queued.uuid)).toEqual(queued)
          expect(yield* channelOf(org.id, channel)).toEqual(channel)
          // No cool-down was written either: the channel's next slot is still the one after the creation's.
          const next = yield* enqueue(org.id, yield* recipient(org.id, 3), { channel })
          expect((yield* claimAt(100)).find((c) => c.message.uuid === next.uuid)?.not_before).toBe(T0 + 100)
        })
      ))
  })

  // The lean record of a sent message (docs/extending.md "A store of your own"): the same
  // write as `record`'s, answering only the status. Checked where the store has it.
  describe("outbox: recordSent", () => {
    const recordSentAt = (ms: number, claimed: Pick<ClaimedMessage, "message" | "lease">, providerId: string | null) =>
      Effect.flatMap(Storage, ({ outbox }) =>
        Effect.promise(() => outbox.recordSent!(claimed.message.uuid, claimed.lease, { _tag: "Sent", provider_message_id: providerId, attempts: 1 }, at(ms))))

    it.effect(`the store ${options.recordSent === true ? "has" : "has no"} recordSent, as its options say`, () =>
      run(Effect.map(Storage, ({ outbox }) => expect(outbox.recordSent !== undefined).toBe(options.recordSent === true))))

    if (options.recordSent !== true) return

    it.effect("writes what record writes and answers sent; None once the lease no longer holds (another Sent, or after Unknown)", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const whole = yield* enqueue(org.id, yield* recipient(org.id, 1), { claim: "lease-1" })
          const lean = yield* enqueue(org.id, yield* recipient(org.id, 2), { claim: "lease-2" })
          const byRecord = yield* recorded(3, { message: whole, lease: "lease-1" }, sent("wamid.1"))
          expect(yield* recordSentAt(3, { message: lean, lease: "lease-2" }, "wamid.2")).toEqual(Option.some("sent"))
          const stored = yield* messageOf(org.id, lean.uuid)
          expect(stored).toEqual({ ...lean, status: "sent", provider_message_id: "wamid.2", failure: null, attempts: 1, next_attempt_at: null, updated_at: at(3) })
          // Field for field what `record` wrote for its twin, but for who and what it is.
          const moved = (message: Message) => [message.status, message.failure, message.attempts, message.next_attempt_at, message.updated_at]
          expect(moved(stored)).toEqual(moved(byRecord))
          expect(yield* recordSentAt(4, { message: lean, lease: "lease-2" }, "wamid.3")).toEqual(Option.none())
          expect(yield* messageOf(org.id, lean.uuid)).toEqual(stored)
          const unknown = yield* enqueue(org.id, yield* recipient(org.id, 3), { claim: "lease-3" })
          yield* recorded(5, { message: unknown, lease: "lease-3" }, { _tag: "Unknown", next_attempt_at: at(9), attempts: 1 })
          expect(yield* recordSentAt(6, { message: unknown, lease: "lease-3" }, "wamid.4")).toEqual(Option.none())
          expect((yield* messageOf(org.id, unknown.uuid)).status).toBe("sending")
          // Nothing left to claim: the one still sending is due only after its next_attempt_at.
          expect(yield* claimAt(8)).toEqual([])
        })
      ))

    it.effect("applies the pending provider reports for its id and answers the status they moved it to; with no id, sent", () =>
      run(pendingReportsApplied((ms, claimed, providerId) =>
        Effect.map(recordSentAt(ms, claimed, providerId), (status) => Option.getOrThrowWith(status, () => new Error("expected the outcome recorded"))))))

    it.effect("writes message.status_updated with the message as stored, where an endpoint is subscribed", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const quiet = yield* enqueue(org.id, yield* recipient(org.id, 1), { claim: "lease-1" })
          expect(yield* recordSentAt(1, { message: quiet, lease: "lease-1" }, "wamid.1")).toEqual(Option.some("sent"))
          yield* addOutboxEndpoint(org.id)
          const announced = yield* enqueue(org.id, yield* recipient(org.id, 2), { claim: "lease-2" })
          expect(yield* recordSentAt(2, { message: announced, lease: "lease-2" }, "wamid.2")).toEqual(Option.some("sent"))
          expect(yield* writtenEvents()).toEqual([{ type: "message.status_updated", data: yield* messageOf(org.id, announced.uuid) }])
        })
      ))

    it.effect("resets the channel's cool-down, as a Sent record does", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id, { throughput_mps: 1000 })
          const first = yield* enqueue(org.id, yield* recipient(org.id, 1), { channel })
          let claimed = yield* claimOnly(0, first, { horizonMs: 120_000 })
          yield* recorded(0, claimed, requeued(0, { throttled: true }))
          claimed = yield* claimOnly(0, first, { horizonMs: 120_000 })
          expect(claimed.not_before).toBe(T0 + 1_000)
          expect(yield* recordSentAt(1_000, claimed, "wamid.1")).toEqual(Option.some("sent"))
          const next = yield* enqueue(org.id, yield* recipient(org.id, 2), { channel, at: 1_002 })
          claimed = yield* claimOnly(1_002, next, { horizonMs: 120_000 })
          expect(claimed.not_before).toBe(T0 + 1_002)
          // Cooled down 1 s again, not the 2 s of a second throttle in a row.
          yield* recorded(1_002, claimed, requeued(1_002, { throttled: true }))
          expect((yield* claimOnly(1_002, next, { horizonMs: 120_000 })).not_before).toBe(T0 + 1_002 + 1_000)
        })
      ))
  })

  describe("outbox: events", () => {
    it.effect("message.status_updated on Sent, Failed and a Requeued that counts an attempt; none on a claim, a throttle, a pair-rate wait, Unknown", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id)
          yield* addOutboxEndpoint(org.id)
          const messages: Array<Message> = []
          for (let n = 1; n <= 3; n++) messages.push(yield* enqueue(org.id, yield* recipient(org.id, n), { channel, claim: { bypass: `lease-${n}` } }))
          const queued = yield* enqueue(org.id, yield* recipient(org.id, 4))
          yield* claimOnly(0, queued)
          expect(yield* writtenEvents()).toEqual([])
          const [a, b, c] = messages as [Message, Message, Message]
          yield* recorded(1, { message: a, lease: "lease-1" }, requeued(2, { throttled: true }))
          yield* recorded(1, { message: b, lease: "lease-2" }, requeued(2, { pairRate: true }))
          yield* recorded(1, { message: c, lease: "lease-3" }, { _tag: "Unknown", next_attempt_at: at(2), attempts: 1 })
          expect(yield* writtenEvents()).toEqual([])
          const again = yield* claimAt(2_000, { horizonMs: 60_000 })
          const lease = (message: Message) => again.find((claimed) => claimed.message.uuid === message.uuid)!
          const afterSent = yield* recorded(2_001, lease(a), sent("wamid.1"))
          const afterFailed = yield* recorded(2_001, lease(b), { _tag: "Failed", failure, attempts: 1 })
          const afterRequeued = yield* recorded(2_001, lease(c), requeued(3_000, { attempts: 1, failure }))
          expect(yield* writtenEvents()).toEqual(
            [afterSent, afterFailed, afterRequeued]
              .map((message) => ({ type: "message.status_updated", data: message }))
              .sort((x, y) => (x.data.uuid < y.data.uuid ? -1 : 1))
          )
        })
      ))

    it.effect("channel.paused with the channel when Paused pauses it (no message event); channel.resumed on resume", () =>
      run(
        Effect.gen(function* () {
          const { outbox } = yield* Storage
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id)
          yield* addOutboxEndpoint(org.id)
          yield* pauseChannel(org.id, channel, 5)
          const paused = yield* channelOf(org.id, channel)
          expect(yield* writtenEvents()).toEqual([{ type: "channel.paused", data: paused }])
          yield* pauseChannel(org.id, channel, 6, 9_998)
          expect(yield* writtenEvents()).toEqual([])
          const resumed = yield* outbox.resumeChannel(org.id, channel.uuid, at(9))
          expect(yield* writtenEvents()).toEqual([{ type: "channel.resumed", data: Option.getOrThrow(resumed).channel }])
          yield* outbox.resumeChannel(org.id, channel.uuid, at(10))
          expect(yield* writtenEvents()).toEqual([])
        })
      ))

    it.effect("cancel and a channel's delete write message.status_updated for each failed message; retry writes none", () =>
      run(
        Effect.gen(function* () {
          const { outbox, channels } = yield* Storage
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id)
          yield* addOutboxEndpoint(org.id)
          const cancelled = yield* enqueue(org.id, yield* recipient(org.id, 1))
          const outcome = yield* outbox.cancel(org.id, cancelled.uuid, { code: "cancelled", title: "Cancelled" }, at(1))
          expect(yield* writtenEvents()).toEqual([{ type: "message.status_updated", data: outcome._tag === "Done" && outcome.message }])
          yield* outbox.retry(org.id, cancelled.uuid, at(2), fixtures.instant(100))
          expect(yield* writtenEvents()).toEqual([])
          const queued = yield* enqueue(org.id, yield* recipient(org.id, 2), { channel })
          const sending = yield* enqueue(org.id, yield* recipient(org.id, 3), { channel, claim: "lease-3" })
          yield* channels.delete(org.id, channel.uuid)
          const events = yield* writtenEvents()
          expect(events.map((event) => [event.type, event.data.uuid])).toEqual(
            [queued.uuid, sending.uuid].sort().map((uuid) => ["message.status_updated", uuid])
          )
          for (const event of events) expect(event.data).toEqual(yield* messageOf(org.id, event.data.uuid as MessageId))
        })
      ))
  })

  describe("outbox: settle", () => {
    it.effect("records the provider id when the message has none, moves its status from queued or sending and ends its dispatch state", () =>
      run(
        Effect.gen(function* () {
          const { outbox } = yield* Storage
          const org = yield* insertOrganization()
          yield* addOutboxEndpoint(org.id)
          const sending = yield* enqueue(org.id, yield* recipient(org.id, 1), { claim: "lease-1" })
          const settled = yield* outbox.settle(org.id, sending.uuid, { provider_message_id: "wamid.1", status: "delivered", now: at(5) })
          const delivered: Message = { ...sending, status: "delivered", provider_message_id: "wamid.1", next_attempt_at: null, updated_at: at(5) }
          expect(settled).toEqual(Option.some({ message: delivered, changed: true }))
          expect(yield* messageOf(org.id, sending.uuid)).toEqual(delivered)
          expect(yield* writtenEvents()).toEqual([{ type: "message.status_updated", data: delivered }])
          expect(yield* recordAt(6, { message: sending, lease: "lease-1" }, sent())).toEqual(Option.none())
          expect(yield* claimAt(1_000_000)).toEqual([])

          const queued = yield* enqueue(org.id, yield* recipient(org.id, 2))
          const failedSettlement = { provider_message_id: "wamid.2", status: "failed", failure, now: at(7) } as const
          expect(yield* outbox.settle(org.id, queued.uuid, failedSettlement)).toEqual(
            Option.some({ message: { ...queued, status: "failed", failure, provider_message_id: "wamid.2", next_attempt_at: null, updated_at: at(7) }, changed: true })
          )
          expect(yield* claimAt(1_000_000)).toEqual([])
        })
      ))

    it.effect("keeps another provider id; never moves a status back; changed false when nothing changed", () =>
      run(
        Effect.gen(function* () {
          const { outbox } = yield* Storage
          const org = yield* insertOrganization()
          const message = yield* enqueue(org.id, yield* recipient(org.id, 1), { claim: "lease-1" })
          const read = Option.getOrThrow(yield* outbox.settle(org.id, message.uuid, { provider_message_id: "wamid.1", status: "read", now: at(5) })).message
          yield* addOutboxEndpoint(org.id)
          const back = yield* outbox.settle(org.id, message.uuid, { provider_message_id: "wamid.other", status: "delivered", now: at(6) })
          expect(back).toEqual(Option.some({ message: read, changed: false }))
          expect(yield* messageOf(org.id, message.uuid)).toEqual(read)
          expect(yield* writtenEvents()).toEqual([])
        })
      ))

    it.effect("writing the provider id applies the pending reports for it", () =>
      run(
        Effect.gen(function* () {
          const { chats, outbox } = yield* Storage
          const org = yield* insertOrganization()
          const message = yield* enqueue(org.id, yield* recipient(org.id, 1), { claim: "lease-1" })
          yield* chats.updateMessageStatusByProviderId(org.id, "wamid.1", {
            status: "read",
            from: MESSAGE_STATUS_PREDECESSORS.read,
            now: at(1),
            pendingUntil: at(60_000)
          })
          const settled = yield* outbox.settle(org.id, message.uuid, { provider_message_id: "wamid.1", status: "sent", now: at(2) })
          expect(Option.map(settled, ({ message }) => [message.status, message.provider_message_id, message.updated_at])).toEqual(
            Option.some(["read", "wamid.1", at(2)])
          )
        })
      ))

    it.effect("None for another organization's message or an unknown uuid; the message stays", () =>
      run(
        Effect.gen(function* () {
          const { outbox } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const message = yield* enqueue(org.id, yield* recipient(org.id, 1))
          const settlement = { provider_message_id: "wamid.1", status: "sent", now: at(5) } as const
          expect(yield* outbox.settle(other.id, message.uuid, settlement)).toEqual(Option.none())
          expect(yield* outbox.settle(org.id, fixtures.uuid() as MessageId, settlement)).toEqual(Option.none())
          expect(yield* messageOf(org.id, message.uuid)).toEqual(message)
        })
      ))
  })

  describe("outbox: retry and cancel", () => {
    it.effect("retry: a failed message becomes queued, due now, attempts 0, failure null, with the new expires_at; other statuses Refused", () =>
      run(
        Effect.gen(function* () {
          const { outbox } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const message = yield* enqueue(org.id, yield* recipient(org.id, 1), { claim: "lease-1" })
          expect(yield* outbox.retry(org.id, message.uuid, at(1), fixtures.instant(100))).toEqual({ _tag: "Refused", message })
          const failed = yield* recorded(2, { message, lease: "lease-1" }, { _tag: "Failed", failure, attempts: 3 })
          expect(yield* outbox.retry(other.id, message.uuid, at(3), fixtures.instant(100))).toEqual({ _tag: "NotFound" })
          expect(yield* outbox.retry(org.id, fixtures.uuid() as MessageId, at(3), fixtures.instant(100))).toEqual({ _tag: "NotFound" })
          const retried: Message = { ...failed, status: "queued", attempts: 0, failure: null, next_attempt_at: at(3), updated_at: at(3) }
          expect(yield* outbox.retry(org.id, message.uuid, at(3), fixtures.instant(100))).toEqual({ _tag: "Done", message: retried })
          expect(yield* messageOf(org.id, message.uuid)).toEqual(retried)
          expect(yield* claimAt(2)).toEqual([])
          expect((yield* claimOnly(3, message)).expires_at).toBe(fixtures.instant(100))
        })
      ))

    it.effect("cancel: a queued message becomes failed with the failure; sending and sent ones are Refused; NotFound for another organization", () =>
      run(
        Effect.gen(function* () {
          const { outbox } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const cancelled = { code: "cancelled", title: "Cancelled by the API" }
          const queued = yield* enqueue(org.id, yield* recipient(org.id, 1))
          expect(yield* outbox.cancel(other.id, queued.uuid, cancelled, at(1))).toEqual({ _tag: "NotFound" })
          const done: Message = { ...queued, status: "failed", failure: cancelled, next_attempt_at: null, updated_at: at(1) }
          expect(yield* outbox.cancel(org.id, queued.uuid, cancelled, at(1))).toEqual({ _tag: "Done", message: done })
          expect(yield* messageOf(org.id, queued.uuid)).toEqual(done)
          expect(yield* claimAt(1_000_000)).toEqual([])
          const sending = yield* enqueue(org.id, yield* recipient(org.id, 2), { claim: "lease-2" })
          expect(yield* outbox.cancel(org.id, sending.uuid, cancelled, at(2))).toEqual({ _tag: "Refused", message: sending })
          const isSent = yield* recorded(3, { message: sending, lease: "lease-2" }, sent())
          expect(yield* outbox.cancel(org.id, sending.uuid, cancelled, at(4))).toEqual({ _tag: "Refused", message: isSent })
        })
      ))
  })

  describe("outbox: nextDueAt, channelQueue, resumeChannel", () => {
    it.effect("nextDueAt: the earliest due time of a waiting head (a sending one's lease end when later); paused channels and non-heads ignored; null when none", () =>
      run(
        Effect.gen(function* () {
          const { outbox } = yield* Storage
          const org = yield* insertOrganization()
          expect(yield* outbox.nextDueAt()).toBeNull()
          const to = yield* recipient(org.id, 1)
          const head = yield* enqueue(org.id, to, { claim: "lease-1" })
          yield* enqueue(org.id, to, { at: 5 })
          yield* recorded(1, { message: head, lease: "lease-1" }, requeued(9_000))
          expect(yield* outbox.nextDueAt()).toBe(T0 + 9_000)
          const paused = yield* insertChannel(org.id)
          yield* pauseChannel(org.id, paused, 2)
          yield* enqueue(org.id, yield* recipient(org.id, 2), { channel: paused, at: 3 })
          expect(yield* outbox.nextDueAt()).toBe(T0 + 9_000)
          const claimed = yield* claimOnly(9_000, head)
          expect(yield* outbox.nextDueAt()).toBe(T0 + 9_000 + LEASE_MS + SETTLE_MS)
          yield* recorded(9_001, claimed, { _tag: "Unknown", next_attempt_at: at(8_000), attempts: 0 })
          expect(yield* outbox.nextDueAt()).toBe(T0 + 9_001)
          // A sending message is due only once its lease ended (lease_until <= now), whatever its next_attempt_at.
          expect(yield* claimAt(9_000)).toEqual([])
          yield* enqueue(org.id, yield* recipient(org.id, 3), { at: 7 })
          expect(yield* outbox.nextDueAt()).toBe(T0 + 7)
        })
      ))

    it.effect("nextDueAt: a sending head whose lease ends after its next_attempt_at does not hide another head of its range due before that end", () =>
      run(
        Effect.gen(function* () {
          const { outbox } = yield* Storage
          const org = yield* insertOrganization()
          const head = yield* enqueue(org.id, yield* recipient(org.id, 1), { claim: "lease-1" })
          yield* recorded(9_001, { message: head, lease: "lease-1" }, { _tag: "Unknown", next_attempt_at: at(8_000), attempts: 0 })
          expect(yield* outbox.nextDueAt()).toBe(T0 + 9_001)
          // First by next_attempt_at is the sending head (8 000), due at its lease's end (9 001); this one is due sooner.
          yield* enqueue(org.id, yield* recipient(org.id, 2), { at: 8_500 })
          expect(yield* outbox.nextDueAt()).toBe(T0 + 8_500)
        })
      ))

    it.effect("channelQueue: the channel's queued and sending messages and its oldest queued created_at; only that channel's, the organization's", () =>
      run(
        Effect.gen(function* () {
          const { outbox } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const channel = yield* insertChannel(org.id, { throughput_mps: 1 })
          const elsewhere = yield* insertChannel(org.id)
          expect(yield* outbox.channelQueue(org.id, channel.uuid)).toEqual({ queued: 0, sending: 0, oldest_queued_at: null })
          const claimed = yield* enqueue(org.id, yield* recipient(org.id, 1), { channel, claim: "lease-1" })
          yield* enqueue(org.id, yield* recipient(org.id, 2), { channel, at: 20 })
          yield* enqueue(org.id, yield* recipient(org.id, 3), { channel, at: 10 })
          const done = yield* enqueue(org.id, yield* recipient(org.id, 4), { channel, at: 5, claim: { bypass: "lease-4" } })
          yield* recorded(6, { message: done, lease: "lease-4" }, sent())
          yield* enqueue(org.id, yield* recipient(org.id, 5), { channel: elsewhere })
          yield* enqueue(org.id, yield* recipient(org.id, 6))
          expect(claimed.status).toBe("sending")
          expect(yield* outbox.channelQueue(org.id, channel.uuid)).toEqual({ queued: 2, sending: 1, oldest_queued_at: at(10) })
          expect(yield* outbox.channelQueue(other.id, channel.uuid)).toEqual({ queued: 0, sending: 0, oldest_queued_at: null })
        })
      ))

    it.effect("resumeChannel: active again, pause fields null, updated_at now, its queued messages due now; already active → changed false, nothing written", () =>
      run(
        Effect.gen(function* () {
          const { outbox } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const channel = yield* insertChannel(org.id)
          const held = yield* pauseChannel(org.id, channel, 1)
          const later = yield* enqueue(org.id, yield* recipient(org.id, 1), { channel, at: 2 })
          expect(yield* outbox.resumeChannel(other.id, channel.uuid, at(50))).toEqual(Option.none())
          expect(yield* outbox.resumeChannel(org.id, fixtures.uuid() as Channel["uuid"], at(50))).toEqual(Option.none())
          expect(yield* claimAt(1_000_000)).toEqual([])
          const resumed: Channel = { ...channel, status: "active", paused_reason: null, paused_at: null, updated_at: at(50) }
          expect(yield* outbox.resumeChannel(org.id, channel.uuid, at(50))).toEqual(Option.some({ channel: resumed, changed: true }))
          expect(yield* channelOf(org.id, channel)).toEqual(resumed)
          expect([(yield* messageOf(org.id, held.uuid)).next_attempt_at, (yield* messageOf(org.id, later.uuid)).next_attempt_at]).toEqual([at(50), at(50)])
          expect(yield* outbox.resumeChannel(org.id, channel.uuid, at(60))).toEqual(Option.some({ channel: resumed, changed: false }))
          expect(yield* channelOf(org.id, channel)).toEqual(resumed)
          yield* expectClaim(50, [held, later])
        })
      ))
  })

  describe("outbox: channels.delete and status updates", () => {
    it.effect("channels.delete fails the channel's waiting messages with channel_removed; sent ones and other channels' stay", () =>
      run(
        Effect.gen(function* () {
          const { channels } = yield* Storage
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id)
          const kept = yield* insertChannel(org.id)
          const queued = yield* enqueue(org.id, yield* recipient(org.id, 1), { channel })
          const sending = yield* enqueue(org.id, yield* recipient(org.id, 2), { channel, claim: "lease-2" })
          const done = yield* enqueue(org.id, yield* recipient(org.id, 3), { channel, claim: { bypass: "lease-3" } })
          const isSent = yield* recorded(1, { message: done, lease: "lease-3" }, sent())
          const elsewhere = yield* enqueue(org.id, yield* recipient(org.id, 4), { channel: kept })
          expect(yield* channels.delete(org.id, channel.uuid)).toBe(true)
          for (const message of [queued, sending]) {
            expect(yield* messageOf(org.id, message.uuid)).toMatchObject({ status: "failed", failure: CHANNEL_REMOVED_FAILURE, next_attempt_at: null })
          }
          expect(yield* messageOf(org.id, done.uuid)).toEqual(isSent)
          expect(yield* messageOf(org.id, elsewhere.uuid)).toEqual(elsewhere)
          expect(yield* recordAt(2, { message: sending, lease: "lease-2" }, sent())).toEqual(Option.none())
          yield* expectClaim(1_000_000, [elsewhere])
        })
      ))

    it.effect("updateMessageStatus(ByProviderId) to sent or failed ends the dispatch state: next_attempt_at null, the lease gone, the lane free", () =>
      run(
        Effect.gen(function* () {
          const { chats, outbox } = yield* Storage
          const org = yield* insertOrganization()
          const to = yield* recipient(org.id, 1)
          const message = yield* enqueue(org.id, to, { claim: "lease-1" })
          const next = yield* enqueue(org.id, to)
          expect(yield* claimAt(0)).toEqual([])
          const outcome = yield* chats.updateMessageStatus(org.id, message.uuid, {
            status: "sent",
            from: MESSAGE_STATUS_PREDECESSORS.sent,
            provider_message_id: "wamid.1",
            now: at(1)
          })
          const expected: Message = { ...message, status: "sent", provider_message_id: "wamid.1", next_attempt_at: null, updated_at: at(1) }
          expect(outcome).toEqual({ _tag: "Updated", message: expected, changed: true })
          expect(yield* recordAt(2, { message, lease: "lease-1" }, sent())).toEqual(Option.none())
          expect(yield* outbox.nextDueAt()).toBe(T0)
          const claimed = yield* claimOnly(2, next)
          // Only the provider id (no status move): the message stays sending, its dispatch state kept.
          const idOnly = yield* chats.updateMessageStatus(org.id, next.uuid, { status: "sent", from: [], provider_message_id: "wamid.2", now: at(3) })
          expect(idOnly._tag === "Updated" && [idOnly.message.status, idOnly.message.next_attempt_at]).toEqual(["sending", settledAfterClaim(2)])
          // By provider id: the same rule.
          yield* chats.updateMessageStatusByProviderId(org.id, "wamid.2", {
            status: "failed",
            from: MESSAGE_STATUS_PREDECESSORS.failed,
            failure,
            now: at(4),
            pendingUntil: at(60_000)
          })
          expect(yield* messageOf(org.id, next.uuid)).toMatchObject({ status: "failed", failure, next_attempt_at: null })
          expect(yield* recordAt(5, claimed, sent())).toEqual(Option.none())
          expect(yield* outbox.nextDueAt()).toBeNull()
        })
      ))
  })

  const runShared = sharedRunner(options)
  if (runShared !== undefined) {
    describe("outbox: two stores on one store", () => {
      it.effect("claims running together on both get every due message exactly once", () =>
        runShared((first, second) =>
          Effect.gen(function* () {
            const org = yield* insertOrganization()
            const created: Array<MessageId> = []
            for (let n = 1; n <= 200; n++) created.push((yield* enqueue(org.id, yield* recipient(org.id, n))).uuid)
            const claim = (store: StorageService, i: number) =>
              store.outbox.claim({ now: T0 + 1, lease: `lease-${i}`, leaseUntil: T0 + 1 + LEASE_MS, settleMs: SETTLE_MS, limit: 7, horizonMs: 1_000 })
            const claims = yield* Effect.all(
              Array.from({ length: 40 }, (_, i) => claim(i % 2 === 0 ? first : second, i)),
              { concurrency: "unbounded" }
            )
            const claimed = claims.flatMap(idsOf)
            expect(claimed.length).toBe(200)
            expect([...new Set(claimed)].sort()).toEqual([...created].sort())
          })
        ))

      it.effect("a message created claimed on one store makes its lane busy and takes its slot for the other", () =>
        runShared((first, second) =>
          Effect.gen(function* () {
            const org = yield* insertOrganization()
            const channel = yield* insertChannel(org.id, { throughput_mps: 1 })
            const to = yield* recipient(org.id, 1)
            const created = yield* enqueue(org.id, to, { channel, claim: "lease-1" })
            expect(created.status).toBe("sending")
            const behind = yield* enqueue(org.id, to, { channel, at: 1 })
            const elsewhere = yield* enqueue(org.id, yield* recipient(org.id, 2), { channel, at: 1 })
            const claimOn = (store: StorageService, ms: number) =>
              store.outbox.claim({ now: T0 + ms, lease: "lease-2", leaseUntil: T0 + ms + LEASE_MS, settleMs: SETTLE_MS, limit: 10, horizonMs: 0 })
            expect(yield* claimOn(second, 1)).toEqual([])
            const slot = Math.ceil(pacingIntervalMs(1))
            expect(idsOf(yield* claimOn(second, slot))).toEqual([elsewhere.uuid])
            expect(Option.isSome(yield* first.outbox.record(created.uuid, "lease-1", sent(), at(slot)))).toBe(true)
            expect(idsOf(yield* claimOn(second, 2 * slot))).toEqual([behind.uuid])
          })
        ))
    })
  }
}

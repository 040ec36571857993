import { describe, expect, it } from "@effect/vitest"
import { afterAll } from "vitest"
import Sqlite from "better-sqlite3"
import { Effect, Option } from "effect"
import {
  CHANNEL_REMOVED_FAILURE,
  type Channel,
  type ChannelId,
  type ChatId,
  type ClaimedMessage,
  type ContactId,
  type Message,
  type MessageId,
  type OrganizationId,
  type OutboxClaimRequest,
  type OutboxPlacement,
  pacingIntervalMs,
  type SendClass,
  Storage,
  type StorageService
} from "@switchboard/core"
import { fixtures } from "@switchboard/storage-contract"
import { SqliteStorage } from "@switchboard/storage-sqlite"
import { applyPending, migrations } from "../src/migrations.js"
import { dueSql, SQL } from "../src/repositories/outbox.js"
import { countExecutions, fixtureProcesses, tempFiles } from "./helpers.js"

// The send queue on SQLite (repositories/outbox.ts): the rules of core's OutboxRepository,
// each checked on the adapter, and migration 15 on a database at version 14.

const files = tempFiles()
afterAll(files.cleanup)

/** Epoch ms of the tests' clock origin, and the ISO time `ms` after it. */
const T0 = Date.UTC(2026, 1, 1)
const at = (ms: number): string => new Date(T0 + ms).toISOString()
const LEASE_MS = 60_000
const SETTLE_MS = 120_000
const HOUR = 3_600_000

/** A store on a private in-memory database, an organization and an endpoint subscribed to every event. */
interface World {
  readonly db: Sqlite.Database
  readonly storage: StorageService
  readonly org: OrganizationId
}

const inWorld = <A, E>(body: (world: World) => Effect.Effect<A, E>) =>
  Effect.gen(function* () {
    const db = new Sqlite(":memory:")
    const storage = yield* Effect.provide(Storage, SqliteStorage.layerFromClient(db))
    const organization = fixtures.organization()
    yield* storage.organizations.insert(organization)
    const endpoint = { uuid: fixtures.uuid() as never, url: "https://example.com/hooks", events: null, description: null, enabled: true, created_at: at(0), updated_at: at(0) }
    yield* storage.webhooks.insertEndpoint(organization.id, { endpoint, secret_sealed: "sealed" }, 10)
    return yield* body({ db, storage, org: organization.id }).pipe(Effect.ensuring(Effect.sync(() => db.close())))
  })

/** Inserts an active channel of `throughputMps`; returns its uuid. */
const addChannel = (world: World, throughputMps = 1000) =>
  Effect.gen(function* () {
    const channel: Channel = {
      uuid: fixtures.uuid() as ChannelId,
      provider: "whatsapp_cloud",
      phone_number_id: String(Math.floor(Math.random() * 1e12)),
      display_phone_number: "+31612345678",
      waba_id: "waba",
      access_token_set: true,
      access_token_last4: "wxyz",
      throughput_mps: throughputMps,
      status: "active",
      paused_reason: null,
      paused_at: null,
      created_at: at(0),
      updated_at: at(0)
    }
    yield* world.storage.channels.insert(world.org, { access_token_sealed: "sealed", channel }, 100)
    return channel.uuid
  })

interface SendOptions {
  readonly to?: string
  readonly channel?: ChannelId | null
  readonly class?: SendClass
  /** The placement's claim: `null` (never here), `"try"` (default) or `"bypass"`. */
  readonly claim?: null | "try" | "bypass"
  readonly at?: number
  readonly expiresAt?: number
  readonly lease?: string
}

/** Appends an outbound text in the send queue (contact by phone, created when missing); returns the message as stored. */
const send = (world: World, options: SendOptions = {}) =>
  Effect.gen(function* () {
    const now = at(options.at ?? 0)
    const to = options.to ?? fixtures.phone(1)
    const claimMode = options.claim === undefined ? "try" : options.claim
    const placement: OutboxPlacement = {
      to,
      class: options.class ?? "single",
      expires_at: at(options.expiresAt ?? 4 * HOUR),
      claim:
        claimMode === null
          ? null
          : { lease: options.lease ?? "inline", leaseUntil: T0 + (options.at ?? 0) + LEASE_MS, settleMs: SETTLE_MS, bypass: claimMode === "bypass" }
    }
    const outcome = yield* world.storage.chats.appendMessage(world.org, {
      contact: { _tag: "ByPhone", phone: to, create: { uuid: fixtures.uuid() as ContactId, first_name: null, last_name: null } },
      newChat: { uuid: fixtures.uuid() as ChatId, status: "open" },
      message: {
        uuid: fixtures.uuid() as MessageId,
        direction: "outbound",
        type: "text",
        text: "hello",
        template: null,
        media: null,
        content: null,
        status: "queued",
        provider_message_id: null,
        failure: null,
        channel_uuid: options.channel ?? null,
        transport: (options.channel ?? null) === null ? "recording" : "whatsapp",
        attempts: 0,
        next_attempt_at: null,
        broadcast_uuid: null,
        reply_to: null,
        reactions: [],
        created_at: now,
        updated_at: now
      },
      unreadIncrement: 0,
      reopen: { from: [], to: "open" },
      dedupe: false,
      now,
      outbox: placement
    })
    if (outcome._tag !== "Appended") return expect.fail(`expected Appended, got ${outcome._tag}`)
    return outcome.message
  })

const claimRequest = (now: number, overrides: Partial<OutboxClaimRequest> = {}): OutboxClaimRequest => ({
  now: T0 + now,
  lease: `lease-${now}`,
  leaseUntil: T0 + now + LEASE_MS,
  settleMs: SETTLE_MS,
  limit: 50,
  horizonMs: 1_000,
  ...overrides
})

const claim = (world: World, now: number, overrides: Partial<OutboxClaimRequest> = {}) =>
  world.storage.outbox.claim(claimRequest(now, overrides))

const uuidsOf = (claimed: ReadonlyArray<ClaimedMessage>) => claimed.map((item) => item.message.uuid)

const findMessage = (world: World, id: MessageId) =>
  Effect.map(world.storage.chats.findMessage(world.org, id), Option.getOrThrow)

/** The events written so far: `[type, uuid of the record, status of the record]`. */
const eventsOf = (world: World) =>
  (world.db.prepare("SELECT type, data FROM webhook_events ORDER BY rowid").all() as Array<{ type: string; data: string }>).map(
    (row) => {
      const data = JSON.parse(row.data) as { uuid: string; status: string }
      return [row.type, data.uuid, data.status]
    }
  )

/** The channel's pacing state, as stored. */
const pacingOf = (world: World, channel: ChannelId) =>
  world.db.prepare("SELECT pacing_tat, cooldown_ms FROM channels WHERE uuid = ?").get(channel) as { pacing_tat: number; cooldown_ms: number }

describe("appendMessage with outbox (create-claimed)", () => {
  it.effect("claims at once a message that may go now: sending under the lease, due after the settle time, a pacing slot reserved", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const channel = yield* addChannel(world, 10)
        const message = yield* send(world, { channel, at: 0 })
        expect([message.status, message.next_attempt_at, message.attempts]).toEqual(["sending", at(LEASE_MS + SETTLE_MS), 0])
        expect(yield* findMessage(world, message.uuid)).toEqual(message)
        expect(pacingOf(world, channel).pacing_tat).toBeCloseTo(T0 + pacingIntervalMs(10))
        // Recorded by the inline attempt's lease.
        const sent = yield* world.storage.outbox.record(message.uuid, "inline", { _tag: "Sent", provider_message_id: "wamid.1", attempts: 1 }, at(1))
        expect(Option.map(sent, (m) => [m.status, m.provider_message_id, m.attempts, m.next_attempt_at])).toEqual(
          Option.some(["sent", "wamid.1", 1, null])
        )
      })
    ))

  it.effect("leaves queued a message behind a waiting one in its lane, or without a pacing slot now, due at the channel's next slot", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const channel = yield* addChannel(world, 10)
        const first = yield* send(world, { channel, to: fixtures.phone(1) })
        const behind = yield* send(world, { channel, to: fixtures.phone(1), at: 500 })
        expect([first.status, behind.status, behind.next_attempt_at]).toEqual(["sending", "queued", at(500)])
        // Another recipient at the same instant: the slot at now is taken.
        const other = yield* send(world, { channel, to: fixtures.phone(2) })
        expect(other.status).toBe("queued")
        expect(other.next_attempt_at).toBe(at(Math.floor(pacingIntervalMs(10))))
        // The same recipient through another class is another lane.
        const broadcast = yield* send(world, { channel, to: fixtures.phone(1), class: "broadcast", at: 200 })
        expect(broadcast.status).toBe("sending")
      })
    ))

  it.effect("claim null is never claimed here (due now); bypass always is, lanes and pacing ignored", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const channel = yield* addChannel(world, 1)
        const queued = yield* send(world, { channel, claim: null })
        expect([queued.status, queued.next_attempt_at]).toEqual(["queued", at(0)])
        const bypassed = yield* send(world, { channel, claim: "bypass" })
        const again = yield* send(world, { channel, claim: "bypass" })
        expect([bypassed.status, again.status]).toEqual(["sending", "sending"])
        expect(pacingOf(world, channel).pacing_tat).toBe(0)
        const none = yield* send(world, { channel: null, to: fixtures.phone(3) })
        expect(none.status).toBe("sending")
      })
    ))

  it.effect("a paused channel's new message stays queued", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const channel = yield* addChannel(world)
        world.db.prepare("UPDATE channels SET status = 'paused' WHERE uuid = ?").run(channel)
        const message = yield* send(world, { channel })
        expect(message.status).toBe("queued")
      })
    ))

  it.effect("a message appended without outbox is never in the queue: never claimed, retried, cancelled or settled", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const outcome = yield* world.storage.chats.appendMessage(world.org, {
          contact: { _tag: "ByPhone", phone: fixtures.phone(1), create: { uuid: fixtures.uuid() as ContactId, first_name: null, last_name: null } },
          newChat: { uuid: fixtures.uuid() as ChatId, status: "open" },
          message: { uuid: fixtures.uuid() as MessageId, direction: "outbound", type: "text", text: "x", template: null, media: null, content: null, status: "queued", provider_message_id: null, failure: null, channel_uuid: null, transport: "recording", attempts: 0, next_attempt_at: null, broadcast_uuid: null, reply_to: null, reactions: [], created_at: at(0), updated_at: at(0) },
          unreadIncrement: 0,
          reopen: { from: [], to: "open" },
          dedupe: false,
          now: at(0)
        })
        if (outcome._tag !== "Appended") return expect.fail(outcome._tag)
        const id = outcome.message.uuid
        expect(yield* claim(world, 10_000)).toEqual([])
        expect((yield* world.storage.outbox.cancel(world.org, id, { code: "cancelled", title: "x" }, at(1)))._tag).toBe("NotFound")
        expect((yield* world.storage.outbox.retry(world.org, id, at(1), at(HOUR)))._tag).toBe("NotFound")
        expect(yield* world.storage.outbox.settle(world.org, id, { provider_message_id: "w", status: "sent", now: at(1) })).toEqual(Option.none())
        expect(yield* world.storage.outbox.nextDueAt()).toBeNull()
      })
    ))
})

describe("claim", () => {
  it.effect("takes only due heads: one message per lane, in creation order, each once", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const a1 = yield* send(world, { to: fixtures.phone(1), claim: null })
        const a2 = yield* send(world, { to: fixtures.phone(1), claim: null })
        const b1 = yield* send(world, { to: fixtures.phone(2), claim: null })
        const later = yield* send(world, { to: fixtures.phone(3), claim: null, at: 5_000 })
        const first = yield* claim(world, 1_000)
        expect(uuidsOf(first).sort()).toEqual([a1.uuid, b1.uuid].sort())
        expect(first.every((item) => item.message.status === "sending" && item.lease === "lease-1000" && !item.reclaimed)).toBe(true)
        expect(first[0]!.message.next_attempt_at).toBe(at(1_000 + LEASE_MS + SETTLE_MS))
        expect(first[0]!.message.updated_at).toBe(at(1_000))
        // Nothing more is due while the heads are leased.
        expect(yield* claim(world, 2_000)).toEqual([])
        yield* world.storage.outbox.record(a1.uuid, "lease-1000", { _tag: "Sent", provider_message_id: null, attempts: 1 }, at(3_000))
        expect(uuidsOf(yield* claim(world, 3_000))).toEqual([a2.uuid])
        expect(uuidsOf(yield* claim(world, 5_000))).toEqual([later.uuid])
      })
    ))

  it.effect("moves a lane's head to its next message whichever way the head leaves, and back to a retried older message", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const { outbox, chats } = world.storage
        const lane = yield* Effect.all([1, 2, 3, 4].map((n) => send(world, { claim: null, at: n })))
        const [m1, m2, m3, m4] = lane.map((message) => message.uuid) as [MessageId, MessageId, MessageId, MessageId]
        const heads = () => world.db.prepare("SELECT uuid FROM messages WHERE head = 1").pluck().all()
        expect(heads()).toEqual([m1])
        // A failed outcome.
        yield* claim(world, 10, { lease: "a" })
        yield* outbox.record(m1, "a", { _tag: "Failed", failure: { code: "1", title: "x" }, attempts: 1 }, at(11))
        expect(heads()).toEqual([m2])
        // A provider report on the head.
        yield* chats.updateMessageStatus(world.org, m2, { status: "sent", from: ["queued", "sending"], provider_message_id: "w2", now: at(12) })
        expect(heads()).toEqual([m3])
        // A cancel.
        yield* outbox.cancel(world.org, m3, { code: "cancelled", title: "x" }, at(13))
        expect(heads()).toEqual([m4])
        // A retried older message is the head again: the lane's lowest sequence.
        yield* outbox.retry(world.org, m1, at(14), at(HOUR))
        expect(heads()).toEqual([m1])
        expect(uuidsOf(yield* claim(world, 14))).toEqual([m1])
        // A deleted contact takes its lane along.
        world.db.prepare("DELETE FROM contacts").run()
        expect(heads()).toEqual([])
        expect(yield* outbox.nextDueAt()).toBeNull()
      })
    ))

  it.effect("orders a channel's heads single before broadcast, then by next_attempt_at, then by sequence", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const broadcast = yield* send(world, { to: fixtures.phone(1), class: "broadcast", claim: null, at: 0 })
        const late = yield* send(world, { to: fixtures.phone(2), claim: null, at: 300 })
        const early = yield* send(world, { to: fixtures.phone(3), claim: null, at: 100 })
        const sameTime = yield* send(world, { to: fixtures.phone(4), claim: null, at: 300 })
        const claimed = yield* claim(world, 1_000, { limit: 10 })
        expect(uuidsOf(claimed)).toEqual([early.uuid, late.uuid, sameTime.uuid, broadcast.uuid])
      })
    ))

  it.effect("paces a channel: slots 1/(0.95 × throughput_mps) apart up to the horizon, pacing_tat kept across claims", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const channel = yield* addChannel(world, 1)
        const interval = pacingIntervalMs(1)
        for (let n = 1; n <= 5; n++) yield* send(world, { channel, to: fixtures.phone(n), claim: null })
        const first = yield* claim(world, 0, { horizonMs: 2_500 })
        expect(first.length).toBe(3)
        first.forEach((item, index) => expect(item.not_before - T0).toBeCloseTo(index * interval, 2))
        expect(pacingOf(world, channel).pacing_tat).toBeCloseTo(T0 + 3 * interval)
        // Beyond the horizon: nothing.
        expect(yield* claim(world, 0, { horizonMs: 2_500 })).toEqual([])
        const second = yield* claim(world, 1_000, { horizonMs: 2_500 })
        expect(second.length).toBe(1)
        expect(second[0]!.not_before - T0).toBeCloseTo(3 * interval, 2)
      })
    ))

  it.effect("takes channels in turns, so a busy channel never fills the claim; messages without a channel are one more, unpaced", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const busy = yield* addChannel(world)
        const quiet = yield* addChannel(world)
        for (let n = 1; n <= 10; n++) yield* send(world, { channel: busy, to: fixtures.phone(n), claim: null })
        const q = yield* send(world, { channel: quiet, to: fixtures.phone(1), claim: null, at: 10 })
        const none = yield* send(world, { channel: null, to: fixtures.phone(1), claim: null, at: 20 })
        const claimed = yield* claim(world, 1_000, { limit: 3 })
        expect(uuidsOf(claimed)).toContain(q.uuid)
        expect(uuidsOf(claimed)).toContain(none.uuid)
        expect(claimed.find((item) => item.message.uuid === none.uuid)!.not_before).toBe(T0 + 1_000)
      })
    ))

  it.effect("never takes a paused channel's messages; takes an expired head without a pacing slot", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const paused = yield* addChannel(world)
        const slow = yield* addChannel(world, 1)
        yield* send(world, { channel: paused, claim: null })
        world.db.prepare("UPDATE channels SET status = 'paused' WHERE uuid = ?").run(paused)
        const expired = yield* send(world, { channel: slow, to: fixtures.phone(2), claim: null, expiresAt: 500 })
        const fresh = yield* send(world, { channel: slow, to: fixtures.phone(3), claim: null, at: 1 })
        const claimed = yield* claim(world, 1_000, { horizonMs: 0 })
        expect(claimed.map((item) => [item.message.uuid, item.not_before - T0])).toEqual([
          [expired.uuid, 1_000],
          [fresh.uuid, 1_000]
        ])
      })
    ))

  it.effect("takes back a sending message whose lease ended (reclaimed), never one still leased", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const message = yield* send(world)
        expect(yield* claim(world, LEASE_MS - 1)).toEqual([])
        // Due again at leaseUntil + settle.
        expect(yield* claim(world, LEASE_MS + SETTLE_MS - 1)).toEqual([])
        const again = yield* claim(world, LEASE_MS + SETTLE_MS)
        expect(again.map((item) => [item.message.uuid, item.reclaimed, item.lease])).toEqual([[message.uuid, true, `lease-${LEASE_MS + SETTLE_MS}`]])
        // The old lease no longer records.
        expect(yield* world.storage.outbox.record(message.uuid, "inline", { _tag: "Sent", provider_message_id: null, attempts: 1 }, at(1))).toEqual(Option.none())
      })
    ))

  it.effect("writes no event", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        yield* send(world)
        yield* send(world, { to: fixtures.phone(2), claim: null })
        yield* claim(world, 1_000)
        expect(eventsOf(world)).toEqual([])
      })
    ))
})

describe("record", () => {
  it.effect("writes only while the lease holds: the token, status sending, not ended by Unknown", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const message = yield* send(world)
        const { outbox } = world.storage
        expect(yield* outbox.record(message.uuid, "other", { _tag: "Failed", failure: { code: "1", title: "x" }, attempts: 1 }, at(1))).toEqual(Option.none())
        const unknown = yield* outbox.record(message.uuid, "inline", { _tag: "Unknown", next_attempt_at: at(200_000), attempts: 1 }, at(10_000))
        expect(Option.map(unknown, (m) => [m.status, m.attempts, m.next_attempt_at])).toEqual(Option.some(["sending", 1, at(200_000)]))
        expect(yield* outbox.record(message.uuid, "inline", { _tag: "Sent", provider_message_id: null, attempts: 1 }, at(11_000))).toEqual(Option.none())
        // Due again at next_attempt_at (its lease ended at 10 s).
        expect(yield* claim(world, 199_999)).toEqual([])
        expect(uuidsOf(yield* claim(world, 200_000))).toEqual([message.uuid])
        expect(yield* findMessage(world, message.uuid)).toMatchObject({ status: "sending", attempts: 1 })
      })
    ))

  it.effect("Sent: the provider id with its pending reports applied, attempts added, the channel's cool-down ended, one event", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const channel = yield* addChannel(world)
        world.db.prepare("UPDATE channels SET cooldown_ms = 4000 WHERE uuid = ?").run(channel)
        const message = yield* send(world, { channel })
        yield* world.storage.chats.updateMessageStatusByProviderId(world.org, "wamid.9", {
          status: "delivered",
          from: ["queued", "sending", "sent"],
          now: at(1),
          pendingUntil: at(HOUR)
        })
        const sent = yield* world.storage.outbox.record(message.uuid, "inline", { _tag: "Sent", provider_message_id: "wamid.9", attempts: 3 }, at(2))
        expect(Option.map(sent, (m) => [m.status, m.provider_message_id, m.attempts, m.failure, m.next_attempt_at, m.updated_at])).toEqual(
          Option.some(["delivered", "wamid.9", 3, null, null, at(2)])
        )
        expect(pacingOf(world, channel).cooldown_ms).toBe(0)
        expect(eventsOf(world)).toEqual([["message.status_updated", message.uuid, "delivered"]])
      })
    ))

  // Outcomes recorded within RECORD_GROUP_WINDOW_MS share one transaction (repositories/outbox.ts);
  // when that transaction fails, each is recorded again alone, so one bad outcome fails alone.
  it.effect("outcomes recorded together: one that cannot be written fails alone, the others are recorded, nothing of it written", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const messages = [yield* send(world, { to: fixtures.phone(1) }), yield* send(world, { to: fixtures.phone(2) }), yield* send(world, { to: fixtures.phone(3) })]
        // attempts −5 breaks the CHECK (attempts >= 0) of messages: that write throws inside the group's transaction.
        const attempts = [1, -5, 1]
        const results = yield* Effect.all(
          messages.map((message, index) =>
            Effect.either(world.storage.outbox.record(message.uuid, "inline", { _tag: "Sent", provider_message_id: `wamid.${index}`, attempts: attempts[index]! }, at(2)))
          ),
          { concurrency: "unbounded" }
        )
        expect(results.map((result) => result._tag)).toEqual(["Right", "Left", "Right"])
        expect(results[1]).toMatchObject({ left: { _tag: "StorageError", operation: "outbox.record" } })
        expect((yield* findMessage(world, messages[0]!.uuid)).status).toBe("sent")
        expect(yield* findMessage(world, messages[1]!.uuid)).toMatchObject({ status: "sending", provider_message_id: null, attempts: 0 })
        expect((yield* findMessage(world, messages[2]!.uuid)).status).toBe("sent")
        expect(eventsOf(world).map(([, uuid, status]) => [uuid, status])).toEqual([
          [messages[0]!.uuid, "sent"],
          [messages[2]!.uuid, "sent"]
        ])
      })
    ))

  it.effect("Failed: failed with the failure, one event", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const message = yield* send(world)
        const failure = { code: "131026", title: "Undeliverable" }
        const failed = yield* world.storage.outbox.record(message.uuid, "inline", { _tag: "Failed", failure, attempts: 1 }, at(2))
        expect(Option.map(failed, (m) => [m.status, m.failure, m.attempts, m.next_attempt_at])).toEqual(Option.some(["failed", failure, 1, null]))
        expect(eventsOf(world)).toEqual([["message.status_updated", message.uuid, "failed"]])
      })
    ))

  it.effect("Requeued: queued again at next_attempt_at; a throttle cools the channel down; pair-rate waits count; an event only for a counted attempt", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const channel = yield* addChannel(world)
        const message = yield* send(world, { channel })
        const { outbox } = world.storage
        const throttled = yield* outbox.record(message.uuid, "inline", { _tag: "Requeued", next_attempt_at: at(1_000), failure: null, attempts: 0, throttled: true, pairRate: false }, at(100))
        expect(Option.map(throttled, (m) => [m.status, m.next_attempt_at, m.attempts])).toEqual(Option.some(["queued", at(1_000), 0]))
        expect(pacingOf(world, channel)).toEqual({ cooldown_ms: 1_000, pacing_tat: T0 + 1_100 })
        expect(eventsOf(world)).toEqual([])
        const [again] = yield* claim(world, 1_100)
        expect(again!.not_before).toBe(T0 + 1_100)
        yield* outbox.record(message.uuid, again!.lease, { _tag: "Requeued", next_attempt_at: at(2_000), failure: null, attempts: 0, throttled: true, pairRate: false }, at(1_200))
        expect(pacingOf(world, channel).cooldown_ms).toBe(2_000)
        const [third] = yield* claim(world, 3_300)
        expect(third!.pair_rate_waits).toBe(0)
        yield* outbox.record(message.uuid, third!.lease, { _tag: "Requeued", next_attempt_at: at(9_000), failure: null, attempts: 0, throttled: false, pairRate: true }, at(3_400))
        const [fourth] = yield* claim(world, 9_000)
        expect(fourth!.pair_rate_waits).toBe(1)
        const failure = { code: "131000", title: "Something went wrong" }
        const counted = yield* outbox.record(message.uuid, fourth!.lease, { _tag: "Requeued", next_attempt_at: at(20_000), failure, attempts: 1, throttled: false, pairRate: false }, at(9_100))
        expect(Option.map(counted, (m) => [m.status, m.failure, m.attempts])).toEqual(Option.some(["queued", failure, 1]))
        expect(eventsOf(world)).toEqual([["message.status_updated", message.uuid, "queued"]])
        const [fifth] = yield* claim(world, 20_000)
        expect(fifth!.pair_rate_waits).toBe(0)
      })
    ))

  it.effect("Paused: the message queued and due now, the channel paused once with its reason (event channel.paused)", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const channel = yield* addChannel(world)
        const first = yield* send(world, { channel, to: fixtures.phone(1) })
        const second = yield* send(world, { channel, to: fixtures.phone(2), claim: "bypass" })
        const reason = { code: "131031", title: "Account locked" }
        const paused = yield* world.storage.outbox.record(first.uuid, "inline", { _tag: "Paused", reason }, at(100))
        expect(Option.map(paused, (m) => [m.status, m.next_attempt_at, m.attempts])).toEqual(Option.some(["queued", at(100), 0]))
        yield* world.storage.outbox.record(second.uuid, "inline", { _tag: "Paused", reason: { code: "0", title: "other" } }, at(200))
        const stored = Option.getOrThrow(yield* world.storage.channels.findById(world.org, channel)).channel
        expect([stored.status, stored.paused_reason, stored.paused_at, stored.updated_at]).toEqual(["paused", reason, at(100), at(100)])
        expect(eventsOf(world)).toEqual([["channel.paused", channel, "paused"]])
        expect(yield* claim(world, 1_000)).toEqual([])
        expect(yield* world.storage.outbox.nextDueAt()).toBeNull()
      })
    ))
})

describe("channels.findByPhoneNumberId's exact cache (repositories/channelCache.ts)", () => {
  const phoneNumberIdOf = (world: World, channel: ChannelId) =>
    Effect.map(world.storage.channels.findById(world.org, channel), (found) => Option.getOrThrow(found).channel.phone_number_id)
  const statusOf = (storage: StorageService, phoneNumberId: string) =>
    Effect.map(storage.channels.findByPhoneNumberId(phoneNumberId), Option.map((found) => found.channel.status))

  it.effect("a second look-up runs no statement; this connection's own pause, resume, update and delete are seen at once", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const executions = countExecutions(world.db, (sql) => sql.includes("WHERE phone_number_id = ?"))
        const channel = yield* addChannel(world)
        const phoneNumberId = yield* phoneNumberIdOf(world, channel)
        executions.reset()
        expect(yield* statusOf(world.storage, phoneNumberId)).toEqual(Option.some("active"))
        expect(yield* statusOf(world.storage, phoneNumberId)).toEqual(Option.some("active"))
        expect(executions.count()).toBe(1)
        const message = yield* send(world, { channel })
        yield* world.storage.outbox.record(message.uuid, "inline", { _tag: "Paused", reason: { code: "131031", title: "Account locked" } }, at(100))
        expect(yield* statusOf(world.storage, phoneNumberId)).toEqual(Option.some("paused"))
        yield* world.storage.outbox.resumeChannel(world.org, channel, at(200))
        expect(yield* statusOf(world.storage, phoneNumberId)).toEqual(Option.some("active"))
        yield* world.storage.channels.update(world.org, channel, { throughput_mps: 7, updated_at: at(300) })
        const updated = yield* world.storage.channels.findByPhoneNumberId(phoneNumberId)
        expect(Option.map(updated, (found) => found.channel.throughput_mps)).toEqual(Option.some(7))
        yield* world.storage.channels.delete(world.org, channel)
        expect(yield* world.storage.channels.findByPhoneNumberId(phoneNumberId)).toEqual(Option.none())
      })
    ))

  it.effect("another connection's commit is seen by the next look-up (PRAGMA data_version)", () =>
    Effect.gen(function* () {
      const filename = files.file()
      const first = new Sqlite(filename)
      const second = new Sqlite(filename)
      const one = yield* Effect.provide(Storage, SqliteStorage.layerFromClient(first))
      const other = yield* Effect.provide(Storage, SqliteStorage.layerFromClient(second))
      const world: World = { db: first, storage: one, org: fixtures.organization().id }
      yield* one.organizations.insert({ ...fixtures.organization(), id: world.org })
      const channel = yield* addChannel(world)
      const phoneNumberId = yield* phoneNumberIdOf(world, channel)
      expect(yield* statusOf(one, phoneNumberId)).toEqual(Option.some("active"))
      yield* other.channels.update(world.org, channel, { throughput_mps: 9, updated_at: at(100) })
      const seen = yield* one.channels.findByPhoneNumberId(phoneNumberId)
      expect(Option.map(seen, (found) => found.channel.throughput_mps)).toEqual(Option.some(9))
      yield* other.channels.delete(world.org, channel)
      expect(yield* one.channels.findByPhoneNumberId(phoneNumberId)).toEqual(Option.none())
      first.close()
      second.close()
    }))
})

describe("settle, retry, cancel", () => {
  it.effect("settle records the provider id only when the message has none, moves the status forward, ends the lease", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const message = yield* send(world)
        const settled = yield* world.storage.outbox.settle(world.org, message.uuid, { provider_message_id: "wamid.1", status: "sent", now: at(5) })
        expect(Option.map(settled, ({ message, changed }) => [message.status, message.provider_message_id, message.next_attempt_at, changed])).toEqual(
          Option.some(["sent", "wamid.1", null, true])
        )
        expect(eventsOf(world)).toEqual([["message.status_updated", message.uuid, "sent"]])
        // The lease no longer records; a second settlement keeps the first id.
        expect(yield* world.storage.outbox.record(message.uuid, "inline", { _tag: "Sent", provider_message_id: "x", attempts: 1 }, at(6))).toEqual(Option.none())
        const again = yield* world.storage.outbox.settle(world.org, message.uuid, { provider_message_id: "wamid.2", status: "read", now: at(7) })
        expect(Option.map(again, ({ message, changed }) => [message.status, message.provider_message_id, changed])).toEqual(Option.some(["read", "wamid.1", true]))
        const stale = yield* world.storage.outbox.settle(world.org, message.uuid, { provider_message_id: "wamid.1", status: "delivered", now: at(8) })
        expect(Option.map(stale, ({ changed }) => changed)).toEqual(Option.some(false))
        expect(yield* world.storage.outbox.settle(fixtures.organization().id, message.uuid, { provider_message_id: "w", status: "sent", now: at(9) })).toEqual(Option.none())
      })
    ))

  it.effect("retry: a failed message queued again, due now, attempts 0, a new expiry; anything else refused", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const message = yield* send(world)
        const refused = yield* world.storage.outbox.retry(world.org, message.uuid, at(1), at(HOUR))
        expect(refused).toMatchObject({ _tag: "Refused", message: { status: "sending" } })
        yield* world.storage.outbox.record(message.uuid, "inline", { _tag: "Failed", failure: { code: "1", title: "x" }, attempts: 5 }, at(2))
        const retried = yield* world.storage.outbox.retry(world.org, message.uuid, at(3), at(10 * HOUR))
        expect(retried).toMatchObject({ _tag: "Done", message: { status: "queued", attempts: 0, failure: null, next_attempt_at: at(3), updated_at: at(3) } })
        const [claimed] = yield* claim(world, 3)
        expect([claimed!.message.uuid, claimed!.expires_at]).toEqual([message.uuid, at(10 * HOUR)])
        expect(eventsOf(world)).toEqual([["message.status_updated", message.uuid, "failed"]])
        expect((yield* world.storage.outbox.retry(world.org, fixtures.uuid() as MessageId, at(3), at(HOUR)))._tag).toBe("NotFound")
      })
    ))

  it.effect("cancel: a queued message failed with the failure (event); anything else refused", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const sending = yield* send(world)
        const queued = yield* send(world, { claim: null })
        const failure = { code: "cancelled", title: "Cancelled" }
        expect(yield* world.storage.outbox.cancel(world.org, sending.uuid, failure, at(1))).toMatchObject({ _tag: "Refused", message: { status: "sending" } })
        const done = yield* world.storage.outbox.cancel(world.org, queued.uuid, failure, at(1))
        expect(done).toMatchObject({ _tag: "Done", message: { status: "failed", failure, next_attempt_at: null } })
        expect(eventsOf(world)).toEqual([["message.status_updated", queued.uuid, "failed"]])
      })
    ))
})

describe("channel state and figures", () => {
  it.effect("nextDueAt: the earliest due head of an active channel or of none; null when nothing waits", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const channel = yield* addChannel(world)
        expect(yield* world.storage.outbox.nextDueAt()).toBeNull()
        const sending = yield* send(world, { channel, to: fixtures.phone(1) })
        expect(yield* world.storage.outbox.nextDueAt()).toBe(T0 + LEASE_MS + SETTLE_MS)
        // Behind the sending head: not a head.
        yield* send(world, { channel, to: fixtures.phone(1), claim: null, at: 10 })
        expect(yield* world.storage.outbox.nextDueAt()).toBe(T0 + LEASE_MS + SETTLE_MS)
        yield* send(world, { channel: null, to: fixtures.phone(2), claim: null, at: 30_000 })
        expect(yield* world.storage.outbox.nextDueAt()).toBe(T0 + 30_000)
        yield* world.storage.outbox.record(sending.uuid, "inline", { _tag: "Failed", failure: { code: "1", title: "x" }, attempts: 1 }, at(20))
        expect(yield* world.storage.outbox.nextDueAt()).toBe(T0 + 10)
      })
    ))

  it.effect("channelQueue counts the channel's queued and sending messages and the oldest queued", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const channel = yield* addChannel(world)
        expect(yield* world.storage.outbox.channelQueue(world.org, channel)).toEqual({ queued: 0, sending: 0, oldest_queued_at: null })
        yield* send(world, { channel, to: fixtures.phone(1) })
        yield* send(world, { channel, to: fixtures.phone(1), claim: null, at: 5 })
        yield* send(world, { channel, to: fixtures.phone(2), claim: null, at: 7 })
        yield* send(world, { channel: null, to: fixtures.phone(3), claim: null })
        expect(yield* world.storage.outbox.channelQueue(world.org, channel)).toEqual({ queued: 2, sending: 1, oldest_queued_at: at(5) })
        expect(yield* world.storage.outbox.channelQueue(fixtures.organization().id, channel)).toEqual({ queued: 0, sending: 0, oldest_queued_at: null })
      })
    ))

  it.effect("resumeChannel: active again, its queued messages due now, event channel.resumed; an active channel is left as it is", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const channel = yield* addChannel(world)
        const message = yield* send(world, { channel })
        yield* world.storage.outbox.record(message.uuid, "inline", { _tag: "Paused", reason: { code: "190", title: "Token" } }, at(10))
        world.db.prepare("UPDATE messages SET next_attempt_at = ? WHERE uuid = ?").run(at(HOUR), message.uuid)
        const resumed = yield* world.storage.outbox.resumeChannel(world.org, channel, at(50))
        expect(Option.map(resumed, ({ channel, changed }) => [channel.status, channel.paused_reason, channel.paused_at, channel.updated_at, changed])).toEqual(
          Option.some(["active", null, null, at(50), true])
        )
        expect((yield* findMessage(world, message.uuid)).next_attempt_at).toBe(at(50))
        expect(eventsOf(world)).toEqual([["channel.paused", channel, "paused"], ["channel.resumed", channel, "active"]])
        const again = yield* world.storage.outbox.resumeChannel(world.org, channel, at(60))
        expect(Option.map(again, ({ channel, changed }) => [channel.updated_at, changed])).toEqual(Option.some([at(50), false]))
        expect(yield* world.storage.outbox.resumeChannel(world.org, fixtures.uuid() as ChannelId, at(60))).toEqual(Option.none())
      })
    ))

  it.effect("channels.delete fails the channel's waiting messages with channel_removed, one event each, and leaves the others", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const channel = yield* addChannel(world)
        const sending = yield* send(world, { channel, to: fixtures.phone(1) })
        const queued = yield* send(world, { channel, to: fixtures.phone(2), claim: null })
        const elsewhere = yield* send(world, { channel: null, to: fixtures.phone(3), claim: null })
        expect(yield* world.storage.channels.delete(world.org, channel)).toBe(true)
        for (const id of [sending.uuid, queued.uuid]) {
          expect(yield* findMessage(world, id)).toMatchObject({ status: "failed", failure: CHANNEL_REMOVED_FAILURE, next_attempt_at: null })
        }
        expect((yield* findMessage(world, elsewhere.uuid)).status).toBe("queued")
        expect(eventsOf(world).map(([type, id]) => [type, id]).sort()).toEqual(
          [["message.status_updated", sending.uuid], ["message.status_updated", queued.uuid]].sort()
        )
        expect(yield* world.storage.outbox.record(sending.uuid, "inline", { _tag: "Sent", provider_message_id: null, attempts: 1 }, at(1))).toEqual(Option.none())
      })
    ))

  it.effect("updateMessageStatus to sent, delivered, read or failed ends the dispatch state: the lease no longer records", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const message = yield* send(world)
        const outcome = yield* world.storage.chats.updateMessageStatus(world.org, message.uuid, {
          status: "sent",
          from: ["queued", "sending"],
          provider_message_id: "wamid.5",
          now: at(3)
        })
        expect(outcome).toMatchObject({ _tag: "Updated", message: { status: "sent", next_attempt_at: null } })
        const row = world.db.prepare("SELECT lease, lease_until, next_attempt_at, pair_rate_waits FROM messages WHERE uuid = ?").get(message.uuid)
        expect(row).toEqual({ lease: null, lease_until: null, next_attempt_at: null, pair_rate_waits: 0 })
        expect(yield* world.storage.outbox.record(message.uuid, "inline", { _tag: "Sent", provider_message_id: null, attempts: 1 }, at(4))).toEqual(Option.none())
        expect(yield* world.storage.outbox.nextDueAt()).toBeNull()
      })
    ))

  it.effect("message records carry attempts, next_attempt_at and broadcast_uuid in chat pages", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const message = yield* send(world, { claim: null })
        const page = yield* world.storage.chats.listMessagesAfter(world.org, message.chat_uuid, null, 10)
        expect(Option.map(page, (items) => items.map((m: Message) => [m.attempts, m.next_attempt_at, m.broadcast_uuid]))).toEqual(Option.some([[0, at(0), null]]))
      })
    ))
})

/** The query plan of `sql`, its `detail` lines joined. */
const planOf = (db: Sqlite.Database, sql: string, ...params: Array<unknown>): string =>
  (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>).map((row) => row.detail).join("\n")

describe("the send queue's statements use their indexes", () => {
  it.effect("the waiting channels, the due heads of a channel (with or without one), a lane's probe, the channel figures", () =>
    Effect.gen(function* () {
      const db = new Sqlite(":memory:")
      yield* Effect.provide(Storage, SqliteStorage.layerFromClient(db))
      expect(planOf(db, SQL.channelsWaiting)).toMatch(/SEARCH m USING (COVERING )?INDEX messages_send_queue_(due|expiry) \(channel_uuid>\?\)/)
      expect(planOf(db, SQL.channelsWaiting)).not.toMatch(/SCAN messages/)
      for (const channel of ["c", null]) {
        const plan = planOf(db, dueSql(8), channel, "single", "", 0, "t", 0)
        expect(plan).toMatch(/SEARCH m USING INDEX messages_send_queue_due \(channel_uuid=\? AND send_class=\? AND \(next_attempt_at,sequence\)>\(\?,\?\) AND next_attempt_at<\?\)/)
        expect(plan).not.toMatch(/TEMP B-TREE/)
      }
      expect(planOf(db, SQL.expiredDue, "c", "t", "t", 0)).toMatch(/SEARCH m USING INDEX messages_send_queue_expiry \(channel_uuid=\? AND expires_at<\?\)/)
      expect(planOf(db, SQL.laneWaits, "o", "c", "+1", "single")).toMatch(/USING (COVERING )?INDEX messages_send_queue_lanes \(organization_id=\? AND channel_uuid=\? AND recipient=\? AND send_class=\?\)/)
      for (const plan of [planOf(db, SQL.channelQueue, "c", "o", "c", "o"), planOf(db, SQL.failChannel, "f", "t", "c", "o"), planOf(db, SQL.failChannelBatch, "f", "t", "c", "o")]) {
        expect(plan).toMatch(/SEARCH messages USING INDEX messages_send_queue_(due|lanes) \((organization_id=\? AND )?channel_uuid=\?/)
        expect(plan).not.toMatch(/SCAN messages/)
      }
      // The scheduled messages of a channel (migration 22): one range of their own index.
      for (const plan of [planOf(db, SQL.channelQueue, "c", "o", "c", "o"), planOf(db, SQL.failChannelScheduled, "f", "t", "c", "o"), planOf(db, SQL.failChannelScheduledBatch, "f", "t", "c", "o")]) {
        expect(plan).toMatch(/SEARCH messages USING (COVERING )?INDEX messages_send_queue_scheduled_by_channel \(channel_uuid=\? AND organization_id=\?\)/)
      }
      for (const sql of [SQL.scheduledDue, SQL.anyScheduledDue]) {
        expect(planOf(db, sql, "t")).toMatch(/SEARCH messages USING (COVERING )?INDEX messages_send_queue_scheduled \(next_attempt_at<\?\)/)
      }
      expect(planOf(db, SQL.nextScheduled)).toMatch(/messages_send_queue_scheduled/)
      db.close()
    }))

  it.effect("the summary reads the waiting messages once, from messages_send_queue_lanes, never the whole table or once per channel", () =>
    Effect.gen(function* () {
      const db = new Sqlite(":memory:")
      yield* Effect.provide(Storage, SqliteStorage.layerFromClient(db))
      const plan = planOf(db, SQL.summary)
      expect(plan).toMatch(/SCAN messages USING INDEX messages_send_queue_lanes/)
      expect(plan.match(/messages_send_queue_lanes/g), plan).toHaveLength(1)
      expect(plan).not.toMatch(/CORRELATED|^SCAN messages$/m)
      db.close()
    }))
})

describe("migration 15", () => {
  it.effect("rebuilds messages on a version-14 file keeping every row and index; old messages are not in the queue; channels stay active", () =>
    Effect.gen(function* () {
      const filename = files.file()
      const db = new Sqlite(filename)
      db.pragma("foreign_keys = ON")
      applyPending(db, migrations.filter((m) => m.version < 15), "t1")
      db.prepare("INSERT INTO organizations VALUES ('org', 'Org', NULL, NULL, 1, 'active', 't', 't')").run()
      db.prepare("INSERT INTO contacts (uuid, organization_id, phone, created_at, updated_at) VALUES ('c1', 'org', '+14155550100', 't', 't')").run()
      db.prepare("INSERT INTO chats (uuid, organization_id, contact_uuid, status, created_at, updated_at) VALUES ('chat1', 'org', 'c1', 'open', 't', 't')").run()
      const channel = fixtures.uuid()
      db.prepare(
        "INSERT INTO channels (uuid, organization_id, provider, phone_number_id, display_phone_number, waba_id, access_token_sealed, access_token_last4, throughput_mps, created_at, updated_at) VALUES (?, 'org', 'whatsapp_cloud', '100', '+31612345678', '1', 'sealed', 'abcd', 20, 't', 't')"
      ).run(channel)
      const insert = db.prepare(
        `INSERT INTO messages (uuid, organization_id, chat_uuid, contact_uuid, direction, type, text, content, status,
          provider_message_id, failure, channel_uuid, created_at, updated_at) VALUES (?, 'org', 'chat1', 'c1', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
      )
      const rows = [
        ["m1", "inbound", "text", "hi", null, "delivered", "wamid.1", null, channel, "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z"],
        ["m2", "outbound", "text", "queued before", null, "queued", null, null, channel, "2026-01-02T00:00:00.000Z", "2026-01-02T00:00:00.000Z"],
        ["m3", "outbound", "text", "no", null, "failed", null, '{"code":"131026","title":"x"}', null, "2026-01-03T00:00:00.000Z", "2026-01-03T00:00:01.000Z"],
        ["m4", "inbound", "location", null, '{"latitude":1,"longitude":2}', "delivered", null, null, null, "2026-01-04T00:00:00.000Z", "2026-01-04T00:00:00.000Z"]
      ] as const
      for (const row of rows) insert.run(...row)
      expect(() => insert.run("m5", "outbound", "text", "x", null, "sending", null, null, null, "t", "t")).toThrow(/CHECK/)
      const before = db.prepare("SELECT * FROM messages ORDER BY uuid").all()
      const indexesBefore = db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'messages' ORDER BY name").all()
      const channelBefore = db.prepare("SELECT * FROM channels").get() as object
      // Migration 15 alone: later ones add indexes of their own (the adapter applies them below).
      applyPending(db, migrations.filter((m) => m.version <= 15), "t2")
      expect(db.prepare("SELECT * FROM messages ORDER BY uuid").all()).toEqual(
        before.map((row) => ({
          ...(row as object),
          attempts: 0,
          next_attempt_at: null,
          broadcast_uuid: null,
          recipient: null,
          send_class: null,
          expires_at: null,
          sequence: null,
          pair_rate_waits: 0,
          lease: null,
          lease_until: null,
          head: 0
        }))
      )
      const indexesAfter = db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'messages' ORDER BY name").all()
      expect(indexesAfter.filter((index) => !(index as { name: string }).name.startsWith("messages_send_queue"))).toEqual(indexesBefore)
      const names = (indexes: Array<unknown>) => indexes.map((index) => (index as { name: string }).name)
      expect(names(indexesAfter)).toEqual([...names(indexesBefore), "messages_send_queue_due", "messages_send_queue_expiry", "messages_send_queue_lanes"].sort())
      expect(db.prepare("SELECT * FROM channels").get()).toEqual({
        ...channelBefore,
        status: "active",
        paused_reason: null,
        paused_at: null,
        pacing_tat: 0,
        cooldown_ms: 0
      })
      expect(db.prepare("PRAGMA foreign_key_check").all()).toEqual([])
      expect(db.prepare("PRAGMA integrity_check").pluck().get()).toBe("ok")
      // The rebuilt table accepts `sending`; a deleted contact still takes its messages along.
      insert.run("m5", "outbound", "text", "x", null, "sending", null, null, null, "t", "t")
      db.close()
      // Through the adapter: old rows read as records (0, null, null) and nothing is claimed.
      const read = yield* Effect.gen(function* () {
        const { chats, outbox, channels } = yield* Storage
        return {
          m2: yield* chats.findMessage("org" as never, "m2" as never),
          claimed: yield* outbox.claim(claimRequest(0, { now: Date.UTC(2027, 0, 1) })),
          next: yield* outbox.nextDueAt(),
          channel: yield* channels.list("org" as never)
        }
      }).pipe(Effect.provide(SqliteStorage.layer({ filename })))
      expect(read.m2).toMatchObject({ value: { status: "queued", attempts: 0, next_attempt_at: null, broadcast_uuid: null, channel_uuid: channel } })
      expect(read.claimed).toEqual([])
      expect(read.next).toBeNull()
      expect(read.channel.map((c) => [c.status, c.paused_reason, c.paused_at, c.throughput_mps])).toEqual([["active", null, null, 20]])
      const after = new Sqlite(filename)
      after.pragma("foreign_keys = ON")
      after.prepare("DELETE FROM contacts WHERE uuid = 'c1'").run()
      expect(after.prepare("SELECT COUNT(*) FROM messages").pluck().get()).toBe(0)
      after.close()
    }))
})

describe("two processes claiming from one file together", () => {
  const { available, startChild } = fixtureProcesses("claim-outbox.ts")

  it.skipIf(!available)(
    "every one of 60 messages (3 channels of 10 messages per second, and none) is claimed once, each channel's slots never shared",
    async () => {
      const filename = files.file()
      const channels = await Effect.runPromise(
        Effect.gen(function* () {
          const storage = yield* Storage
          const organization = fixtures.organization()
          yield* storage.organizations.insert(organization)
          const world: World = { db: undefined as never, storage, org: organization.id }
          const channels = [yield* addChannel(world, 10), yield* addChannel(world, 10), yield* addChannel(world, 10)]
          for (let n = 0; n < 60; n++) {
            yield* send(world, { channel: n % 4 === 3 ? null : channels[n % 4]!, to: fixtures.phone(n), claim: null, at: n, expiresAt: 48 * HOUR })
          }
          return channels
        }).pipe(Effect.provide(SqliteStorage.layer({ filename })))
      )
      const children = [startChild(filename), startChild(filename)]
      await Promise.all(children.map((child) => child.ready))
      for (const child of children) child.go()
      const results = await Promise.all(children.map((child) => child.exited))
      const claimed = results.map((result) => {
        expect(result.code, result.output).toBe(0)
        const line = result.output.split("\n").find((text) => text.startsWith("claimed "))
        return JSON.parse(line!.slice("claimed ".length)) as Array<[string, string | null, number]>
      })
      const all = claimed.flat()
      expect(all).toHaveLength(60)
      expect(new Set(all.map(([uuid]) => uuid)).size).toBe(60)
      // Pacing is exact across the processes: each channel's 15 slots, one interval apart.
      for (const channel of channels) {
        const slots = all.filter(([, of]) => of === channel).map(([, , notBefore]) => notBefore).sort((a, b) => a - b)
        expect(slots).toHaveLength(15)
        slots.slice(1).forEach((slot, index) => expect(slot - slots[index]!).toBeCloseTo(pacingIntervalMs(10), 3))
      }
    },
    60_000
  )
})

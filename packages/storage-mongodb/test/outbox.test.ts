import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import {
  CHANNEL_REMOVED_FAILURE,
  type Channel,
  type ChannelId,
  type ChatId,
  type ClaimedMessage,
  type ContactId,
  type MessageId,
  type OrganizationId,
  type OutboxClaimRequest,
  type OutboxPlacement,
  pacingIntervalMs,
  type SendClass,
  Storage,
  type StorageService,
  type WebhookEndpointId
} from "@switchboard/core"
import { fixtures } from "@switchboard/storage-contract"
import { MongoStorage } from "@switchboard/storage-mongodb"
import { collectionsOf, INDEXES } from "../src/internal/schema.js"
import { type FakeDb, makeFakeDb } from "./support/fakeMongo.js"

// The send queue's storage on the driver stand-in (support/fakeMongo.ts): the rules of
// core's OutboxRepository as the MongoDB repositories keep them without transactions, and
// two storages on one database claiming together, as two processes would.

const { instant, phone } = fixtures

/** The tests' clock: epoch ms of `instant(0)`, and ISO 8601 times `ms` after it. */
const T0 = Date.parse(instant(0))
const at = (ms: number): string => new Date(T0 + ms).toISOString()

const HOUR = 3_600_000

const withStorage = <A, E>(fake: FakeDb, body: Effect.Effect<A, E, Storage>) =>
  body.pipe(Effect.provide(Layer.effect(Storage, MongoStorage.fromDb(fake.db))))

const storageOn = (fake: FakeDb) => MongoStorage.fromDb(fake.db, { reconcileUsage: false })

const insertOrganization = Effect.gen(function* () {
  const { organizations } = yield* Storage
  const organization = fixtures.organization()
  yield* organizations.insert(organization)
  return organization
})

/** Connects a channel of `throughputMps` to the organization. */
const insertChannel = (organizationId: OrganizationId, throughputMps = 10) =>
  Effect.gen(function* () {
    const { channels } = yield* Storage
    const channel: Channel = {
      uuid: fixtures.uuid() as ChannelId,
      provider: "whatsapp_cloud",
      phone_number_id: fixtures.uuid(),
      display_phone_number: "+31612345678",
      waba_id: "waba",
      access_token_set: true,
      access_token_last4: "abcd",
      throughput_mps: throughputMps,
      status: "active",
      paused_reason: null,
      paused_at: null,
      created_at: instant(0),
      updated_at: instant(0)
    }
    const outcome = yield* channels.insert(organizationId, { channel, access_token_sealed: "sealed" }, 20)
    expect(outcome._tag).toBe("Inserted")
    return channel
  })

/** Subscribes an endpoint of the organization to every event type, so writes record events. */
const subscribe = (organizationId: OrganizationId) =>
  Effect.flatMap(Storage, ({ webhooks }) =>
    webhooks.insertEndpoint(
      organizationId,
      {
        endpoint: {
          uuid: fixtures.uuid() as WebhookEndpointId,
          url: "https://example.com/hooks",
          events: null,
          description: null,
          enabled: true,
          created_at: instant(0),
          updated_at: instant(0)
        },
        secret_sealed: "sealed"
      },
      10
    )
  )

interface SendOptions {
  readonly to?: string
  readonly channel?: ChannelId | null
  readonly class?: SendClass
  readonly claim?: OutboxPlacement["claim"]
  readonly now?: number
  readonly expiresAt?: number
}

/** Appends an outbound message to `to` (contact created when missing) in the send queue; returns the message. */
const send = (organizationId: OrganizationId, options: SendOptions = {}) =>
  Effect.gen(function* () {
    const { chats } = yield* Storage
    const to = options.to ?? phone(1)
    const now = at(options.now ?? 0)
    const outcome = yield* chats.appendMessage(organizationId, {
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
      outbox: { to, class: options.class ?? "single", expires_at: at(options.expiresAt ?? HOUR), claim: options.claim ?? null }
    })
    if (outcome._tag !== "Appended") return expect.fail(`expected Appended, got ${outcome._tag}`)
    return outcome.message
  })

/** A claim at `now` (ms after T0) under `lease`, leased 30 s, settle 5 s. */
const claimRequest = (now: number, overrides: Partial<OutboxClaimRequest> = {}): OutboxClaimRequest => ({
  now: T0 + now,
  lease: "lease-1",
  leaseUntil: T0 + now + 30_000,
  settleMs: 5_000,
  limit: 100,
  horizonMs: 1_000,
  ...overrides
})

const claim = (now: number, overrides: Partial<OutboxClaimRequest> = {}) =>
  Effect.flatMap(Storage, ({ outbox }) => outbox.claim(claimRequest(now, overrides)))

const documentOf = (fake: FakeDb, collection: string, id: string) => fake.documents(collection).find((d) => d._id === id)!

const eventsOf = (fake: FakeDb, collection: string, id: string): Array<{ type: string; data: unknown }> =>
  ((documentOf(fake, collection, id).pending_events ?? []) as Array<{ type: string; data: string }>).map((e) => ({
    type: e.type,
    data: JSON.parse(e.data)
  }))

describe("outbox: schema", () => {
  it.effect("indexes the waiting messages by lane and in claim order, partial on outbox messages with a next attempt", () =>
    Effect.gen(function* () {
      const fake = makeFakeDb()
      yield* withStorage(fake, Effect.void)
      const waiting = { to: { $exists: true }, next_attempt_at: { $type: "string" } }
      expect(fake.indexes("messages").filter((i) => i.name?.startsWith("messages_waiting"))).toEqual([
        { name: "messages_waiting_by_lane", key: { organization_id: 1, channel_uuid: 1, to: 1, class: 1, sequence: 1 }, partialFilterExpression: waiting },
        { name: "messages_waiting_due", key: { channel_uuid: 1, class: -1, next_attempt_at: 1, sequence: 1 }, partialFilterExpression: waiting }
      ])
      expect(fake.indexes("messages").filter((i) => i.name === "messages_scheduled_due")).toEqual([
        { name: "messages_scheduled_due", key: { next_attempt_at: 1, sequence: 1 }, partialFilterExpression: { status: { $eq: "scheduled" } } }
      ])
      expect(INDEXES.channels.map((i) => i.name)).toContain("channels_pending_events")
    }))

  it.effect("documents written before the send queue read as active channels and messages with 0 attempts, no next attempt, no broadcast", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { channels, chats } = yield* Storage
        const org = yield* insertOrganization
        const channel = yield* insertChannel(org.id)
        const message = yield* send(org.id, { channel: channel.uuid })
        for (const key of ["status", "paused_reason", "paused_at"]) delete documentOf(fake, "channels", channel.uuid)[key]
        for (const key of ["attempts", "next_attempt_at", "broadcast_uuid"]) delete documentOf(fake, "messages", message.uuid)[key]
        const read = Option.getOrThrow(yield* channels.findById(org.id, channel.uuid)).channel
        expect([read.status, read.paused_reason, read.paused_at]).toEqual(["active", null, null])
        const stored = Option.getOrThrow(yield* chats.findMessage(org.id, message.uuid))
        expect([stored.attempts, stored.next_attempt_at, stored.broadcast_uuid]).toEqual([0, null, null])
      })
    )
  })

  it.effect("every message takes the next number of one counter document, so creation order holds within a millisecond", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const org = yield* insertOrganization
        const first = yield* send(org.id)
        const second = yield* send(org.id)
        expect([documentOf(fake, "messages", first.uuid).sequence, documentOf(fake, "messages", second.uuid).sequence]).toEqual([1, 2])
        expect(fake.documents("counters")).toEqual([{ _id: "message_sequence", value: 2 }])
      })
    )
  })
})

describe("outbox: creating messages in the send queue", () => {
  const lease = { lease: "inline", leaseUntil: T0 + 30_000, settleMs: 5_000, bypass: false }

  it.effect("the first message of an empty lane through an active channel is claimed at once and reserves the slot at now; the next waits for the channel's next slot", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const org = yield* insertOrganization
        const channel = yield* insertChannel(org.id, 10)
        const interval = pacingIntervalMs(10)
        const first = yield* send(org.id, { channel: channel.uuid, claim: lease })
        expect([first.status, first.next_attempt_at]).toEqual(["sending", at(35_000)])
        expect(documentOf(fake, "messages", first.uuid)).toMatchObject({ lease: "inline", lease_until: T0 + 30_000, pair_rate_waits: 0, to: phone(1), class: "single" })
        expect(documentOf(fake, "channels", channel.uuid).pacing_tat).toBe(T0 + interval)
        // Same lane: waits behind the first. Another lane: the slot at now is taken.
        const sameLane = yield* send(org.id, { channel: channel.uuid, claim: lease })
        const otherLane = yield* send(org.id, { channel: channel.uuid, to: phone(2), claim: lease })
        expect([sameLane.status, sameLane.next_attempt_at]).toEqual(["queued", at(interval)])
        expect([otherLane.status, otherLane.next_attempt_at]).toEqual(["queued", at(interval)])
        expect(documentOf(fake, "channels", channel.uuid).pacing_tat).toBe(T0 + interval)
        // The recording transport's bypass: claimed whatever the lane and pacing.
        const bypassed = yield* send(org.id, { channel: channel.uuid, claim: { ...lease, bypass: true } })
        expect(bypassed.status).toBe("sending")
        // No claim (auto-replies, broadcasts): queued, due now.
        const later = yield* send(org.id, { channel: channel.uuid, to: phone(3), now: 10_000 })
        expect([later.status, later.next_attempt_at]).toEqual(["queued", at(10_000)])
      })
    )
  })

  it.effect("a message without a channel is claimed at once when its lane is empty, never paced", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const org = yield* insertOrganization
        expect((yield* send(org.id, { claim: lease })).status).toBe("sending")
        expect((yield* send(org.id, { to: phone(2), claim: lease })).status).toBe("sending")
        const behind = yield* send(org.id, { claim: lease })
        expect([behind.status, behind.next_attempt_at]).toEqual(["queued", at(0)])
      })
    )
  })

  it.effect("a paused channel's new message is queued, not claimed", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const org = yield* insertOrganization
        const channel = yield* insertChannel(org.id)
        documentOf(fake, "channels", channel.uuid).status = "paused"
        expect((yield* send(org.id, { channel: channel.uuid, claim: lease })).status).toBe("queued")
      })
    )
  })
})

describe("outbox: claims", () => {
  it.effect("only lane heads are claimed: single before broadcast, one paced slot each within the horizon, an expired head without a slot", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const org = yield* insertOrganization
        const channel = yield* insertChannel(org.id, 10)
        const interval = pacingIntervalMs(10)
        const broadcast = yield* send(org.id, { channel: channel.uuid, to: phone(1), class: "broadcast" })
        const head = yield* send(org.id, { channel: channel.uuid, to: phone(2) })
        const behind = yield* send(org.id, { channel: channel.uuid, to: phone(2) })
        const expired = yield* send(org.id, { channel: channel.uuid, to: phone(3), expiresAt: 500 })
        // Horizon 50 ms: one slot (at now); the expired head takes none.
        const first = yield* claim(1_000, { horizonMs: 50 })
        expect(first.map((c) => [c.message.uuid, c.not_before, c.reclaimed])).toEqual([
          [head.uuid, T0 + 1_000, false],
          [expired.uuid, T0 + 1_000, false]
        ])
        expect(first[0]!.message).toMatchObject({ status: "sending", next_attempt_at: at(36_000), updated_at: at(1_000) })
        expect(first[0]).toMatchObject({ organization_id: org.id, lease: "lease-1", to: phone(2), class: "single", pair_rate_waits: 0 })
        expect(documentOf(fake, "channels", channel.uuid).pacing_tat).toBe(T0 + 1_000 + interval)
        // The next slot: the broadcast; the message behind the claimed head stays.
        const second = yield* claim(1_000, { horizonMs: 1_000, lease: "lease-2" })
        expect(second.map((c) => [c.message.uuid, c.not_before])).toEqual([[broadcast.uuid, T0 + 1_000 + interval]])
        expect(documentOf(fake, "messages", behind.uuid).status).toBe("queued")
      })
    )
  })

  it.effect("channels take turns: a limit splits between channels, messages without a channel as one more channel", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const org = yield* insertOrganization
        const busy = yield* insertChannel(org.id, 1_000)
        const quiet = yield* insertChannel(org.id, 1_000)
        for (let n = 0; n < 4; n++) yield* send(org.id, { channel: busy.uuid, to: phone(10 + n) })
        const fromQuiet = yield* send(org.id, { channel: quiet.uuid, to: phone(20), now: 5 })
        const unpaced = yield* send(org.id, { to: phone(30), now: 6 })
        const claimed = yield* claim(1_000, { limit: 4 })
        expect(claimed).toHaveLength(4)
        expect(claimed.filter((c) => c.message.channel_uuid === busy.uuid)).toHaveLength(2)
        expect(claimed.map((c) => c.message.uuid)).toContain(fromQuiet.uuid)
        expect(claimed.map((c) => c.message.uuid)).toContain(unpaced.uuid)
      })
    )
  })

  it.effect("a paused channel's messages are never claimed and not due; a sending message whose lease ended is reclaimed", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { outbox } = yield* Storage
        const org = yield* insertOrganization
        const channel = yield* insertChannel(org.id)
        const message = yield* send(org.id, { channel: channel.uuid })
        documentOf(fake, "channels", channel.uuid).status = "paused"
        expect(yield* claim(1_000)).toEqual([])
        expect(yield* outbox.nextDueAt()).toBeNull()
        documentOf(fake, "channels", channel.uuid).status = "active"
        expect(yield* outbox.nextDueAt()).toBe(T0)
        expect((yield* claim(1_000)).map((c) => c.message.uuid)).toEqual([message.uuid])
        // Its lease runs to 31 000, its next attempt at 36 000.
        expect(yield* claim(20_000)).toEqual([])
        expect(yield* outbox.nextDueAt()).toBe(T0 + 36_000)
        const again = yield* claim(40_000, { lease: "lease-2" })
        expect(again.map((c) => [c.message.uuid, c.reclaimed, c.lease])).toEqual([[message.uuid, true, "lease-2"]])
      })
    )
  })

  it.effect("two storages on one database claiming together: each message goes to one, and their slots never exceed the channel's rate", () =>
    Effect.gen(function* () {
      const fake = makeFakeDb()
      const first = yield* storageOn(fake)
      const second = yield* storageOn(fake)
      const org = fixtures.organization()
      yield* first.organizations.insert(org)
      const channel = yield* insertChannel(org.id, 10).pipe(Effect.provideService(Storage, first))
      for (let n = 0; n < 30; n++) yield* send(org.id, { channel: channel.uuid, to: phone(100 + n) }).pipe(Effect.provideService(Storage, n % 2 === 0 ? first : second))
      const claimFrom = (storage: StorageService, lease: string) => storage.outbox.claim(claimRequest(1_000, { lease, limit: 4, horizonMs: 1_000 }))
      // Started together (each runs up to its first driver call before the next starts), so their reads and writes interleave.
      const results = yield* Effect.promise(() =>
        Promise.all([claimFrom(first, "a"), claimFrom(second, "b"), claimFrom(first, "c"), claimFrom(second, "d")].map((claim) => Effect.runPromise(claim)))
      )
      expect(results.filter((result) => result.length > 0).length).toBeGreaterThan(1)
      const claimed = results.flat()
      const ids = claimed.map((c) => c.message.uuid)
      expect(new Set(ids).size).toBe(ids.length)
      // Slots from T0 + 1000 within a 1000 ms horizon: at most floor(1000 / interval) + 1 messages.
      const interval = pacingIntervalMs(10)
      expect(claimed.length).toBeGreaterThan(0)
      expect(claimed.length).toBeLessThanOrEqual(Math.floor(1_000 / interval) + 1)
      const slots = claimed.map((c) => c.not_before).sort((a, b) => a - b)
      for (let i = 1; i < slots.length; i++) expect(slots[i]! - slots[i - 1]!).toBeGreaterThanOrEqual(interval - 1e-6)
      // Every claimed message's stored lease is the claim that returned it.
      for (const [index, lease] of ["a", "b", "c", "d"].entries()) {
        for (const c of results[index]!) expect(documentOf(fake, "messages", c.message.uuid).lease).toBe(lease)
      }
    }))
})

describe("outbox: claims racing another process", () => {
  it.effect("a planned message another process took gives its slot to the channel's next head, an expired one's place only to another expired head; the claim runs again for the rest", () =>
    Effect.gen(function* () {
      const fake = makeFakeDb()
      const first = yield* storageOn(fake)
      // The second process: its first pacing reservation lets the first process claim first.
      let race: (() => Promise<unknown>) | undefined
      const channelsOf = fake.db.collection("channels")
      const racing = Object.create(channelsOf, {
        updateOne: {
          value: async (...args: Array<unknown>) => {
            const before = race
            race = undefined
            if (before !== undefined) await before()
            return (channelsOf.updateOne as (...a: Array<unknown>) => Promise<unknown>)(...args)
          }
        }
      })
      const db = { collection: (name: string) => (name === "channels" ? racing : fake.db.collection(name)) } as typeof fake.db
      const second = yield* MongoStorage.fromDb(db, { reconcileUsage: false })
      const org = fixtures.organization()
      yield* first.organizations.insert(org)
      const channel = yield* insertChannel(org.id, 10).pipe(Effect.provideService(Storage, first))
      const expired = yield* send(org.id, { channel: channel.uuid, to: phone(1), expiresAt: 500 }).pipe(Effect.provideService(Storage, first))
      const heads = []
      for (let n = 2; n <= 5; n++) heads.push(yield* send(org.id, { channel: channel.uuid, to: phone(n) }).pipe(Effect.provideService(Storage, first)))
      let firstClaim: ReadonlyArray<ClaimedMessage> = []
      race = async () => {
        firstClaim = await Effect.runPromise(first.outbox.claim(claimRequest(1_000, { lease: "first", limit: 2 })))
      }
      const secondClaim = yield* second.outbox.claim(claimRequest(1_000, { lease: "second", limit: 2 }))
      const interval = pacingIntervalMs(10)
      expect(firstClaim.map((c) => [c.message.uuid, c.not_before])).toEqual([
        [expired.uuid, T0 + 1_000],
        [heads[0]!.uuid, T0 + 1_000]
      ])
      // The second planned the same two: the expired one finds no other expired head; the
      // other's slot, reserved after the first's, goes to the next head; having lost one,
      // the claim runs again for the rest of its limit.
      expect(secondClaim.map((c) => [c.message.uuid, c.not_before, c.lease])).toEqual([
        [heads[1]!.uuid, T0 + 1_000 + interval, "second"],
        [heads[2]!.uuid, T0 + 1_000 + 2 * interval, "second"]
      ])
      expect(documentOf(fake, "channels", channel.uuid).pacing_tat).toBe(T0 + 1_000 + 3 * interval)
    }))
})

describe("outbox: recording outcomes", () => {
  /** An organization subscribed to every event, a channel, and one claimed message of it. */
  const claimedMessage = (fake: FakeDb) =>
    Effect.gen(function* () {
      const org = yield* insertOrganization
      yield* subscribe(org.id)
      const channel = yield* insertChannel(org.id, 10)
      const message = yield* send(org.id, { channel: channel.uuid, claim: { lease: "held", leaseUntil: T0 + 30_000, settleMs: 5_000, bypass: false } })
      expect(message.status).toBe("sending")
      const events = () => eventsOf(fake, "messages", message.uuid).map((e) => e.type)
      return { org, channel, message, events }
    })

  it.effect("Sent: status sent, provider id, attempts counted, lease and next attempt cleared, channel cool-down reset, one event; the lease cannot record twice", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { outbox } = yield* Storage
        const { channel, message, events } = yield* claimedMessage(fake)
        documentOf(fake, "channels", channel.uuid).cooldown_ms = 4_000
        expect(yield* outbox.record(message.uuid, "other", { _tag: "Sent", provider_message_id: "wamid.1", attempts: 1 }, at(1_000))).toEqual(Option.none())
        const sent = Option.getOrThrow(yield* outbox.record(message.uuid, "held", { _tag: "Sent", provider_message_id: "wamid.1", attempts: 1 }, at(1_000)))
        expect(sent).toMatchObject({ status: "sent", provider_message_id: "wamid.1", attempts: 1, next_attempt_at: null, failure: null, updated_at: at(1_000) })
        expect(documentOf(fake, "messages", message.uuid)).toMatchObject({ lease: null, lease_until: null, pair_rate_waits: 0 })
        expect(documentOf(fake, "channels", channel.uuid).cooldown_ms).toBe(0)
        expect(events()).toEqual(["message.status_updated"])
        expect(eventsOf(fake, "messages", message.uuid)[0]!.data).toEqual(sent)
        expect(yield* outbox.record(message.uuid, "held", { _tag: "Failed", failure: { code: "x", title: "y" }, attempts: 1 }, at(2_000))).toEqual(Option.none())
      })
    )
  })

  it.effect("Sent applies the provider's reports that arrived before the id was known", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { chats, outbox } = yield* Storage
        const { org, message } = yield* claimedMessage(fake)
        const pending = yield* chats.updateMessageStatusByProviderId(org.id, "wamid.early", {
          status: "delivered",
          from: ["queued", "sending", "sent"],
          now: at(500),
          pendingUntil: at(HOUR)
        })
        expect(pending._tag).toBe("Pending")
        const sent = Option.getOrThrow(yield* outbox.record(message.uuid, "held", { _tag: "Sent", provider_message_id: "wamid.early", attempts: 1 }, at(1_000)))
        expect(sent.status).toBe("delivered")
      })
    )
  })

  it.effect("Requeued: queued again at its time, attempts counted (with an event only when > 0); a throttle cools the channel down, doubling; pair-rate waits count up and reset", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { outbox } = yield* Storage
        const { channel, message, events } = yield* claimedMessage(fake)
        const requeue = (lease: string, now: number, options: { attempts: number; throttled: boolean; pairRate: boolean }) =>
          outbox.record(message.uuid, lease, { _tag: "Requeued", next_attempt_at: at(now + 2_000), failure: null, ...options }, at(now))
        const first = Option.getOrThrow(yield* requeue("held", 1_000, { attempts: 0, throttled: true, pairRate: true }))
        expect(first).toMatchObject({ status: "queued", next_attempt_at: at(3_000), attempts: 0 })
        expect(events()).toEqual([])
        expect(documentOf(fake, "messages", message.uuid)).toMatchObject({ lease: null, lease_until: null, pair_rate_waits: 1 })
        expect(documentOf(fake, "channels", channel.uuid)).toMatchObject({ cooldown_ms: 1_000, pacing_tat: T0 + 2_000 })
        const [again] = yield* claim(3_000, { lease: "second" })
        expect(again!.pair_rate_waits).toBe(1)
        Option.getOrThrow(yield* requeue("second", 3_500, { attempts: 1, throttled: true, pairRate: false }))
        expect(events()).toEqual(["message.status_updated"])
        expect(documentOf(fake, "messages", message.uuid)).toMatchObject({ attempts: 1, pair_rate_waits: 0 })
        expect(documentOf(fake, "channels", channel.uuid)).toMatchObject({ cooldown_ms: 2_000, pacing_tat: T0 + 5_500 })
      })
    )
  })

  it.effect("Unknown: stays sending, the lease ends at now and its token cannot record again; claimed again when due, as reclaimed", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { outbox } = yield* Storage
        const { message, events } = yield* claimedMessage(fake)
        const unknown = Option.getOrThrow(yield* outbox.record(message.uuid, "held", { _tag: "Unknown", next_attempt_at: at(9_000), attempts: 1 }, at(1_000)))
        expect(unknown).toMatchObject({ status: "sending", next_attempt_at: at(9_000), attempts: 1 })
        expect(documentOf(fake, "messages", message.uuid)).toMatchObject({ lease: null, lease_until: T0 + 1_000 })
        expect(events()).toEqual([])
        expect(yield* outbox.record(message.uuid, "held", { _tag: "Sent", provider_message_id: null, attempts: 0 }, at(2_000))).toEqual(Option.none())
        expect(yield* outbox.nextDueAt()).toBe(T0 + 9_000)
        expect(yield* claim(8_000)).toEqual([])
        expect((yield* claim(9_000)).map((c) => c.reclaimed)).toEqual([true])
      })
    )
  })

  it.effect("Paused: the message is queued due now, the channel paused once with its event; resumeChannel makes it active and its messages due", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { channels, outbox } = yield* Storage
        const { org, channel, message, events } = yield* claimedMessage(fake)
        const other = yield* send(org.id, { channel: channel.uuid, to: phone(2), now: 100 })
        const reason = { code: "131031", title: "Account locked" }
        const paused = Option.getOrThrow(yield* outbox.record(message.uuid, "held", { _tag: "Paused", reason }, at(1_000)))
        expect(paused).toMatchObject({ status: "queued", next_attempt_at: at(1_000), updated_at: at(1_000) })
        expect(events()).toEqual([])
        const stored = Option.getOrThrow(yield* channels.findById(org.id, channel.uuid)).channel
        expect(stored).toMatchObject({ status: "paused", paused_reason: reason, paused_at: at(1_000) })
        expect(eventsOf(fake, "channels", channel.uuid)).toEqual([{ type: "channel.paused", data: stored }])
        expect(yield* claim(2_000)).toEqual([])
        expect(yield* outbox.nextDueAt()).toBeNull()
        expect(yield* outbox.channelQueue(org.id, channel.uuid)).toEqual({ queued: 2, sending: 0, oldest_queued_at: at(0) })
        const resumed = Option.getOrThrow(yield* outbox.resumeChannel(org.id, channel.uuid, at(5_000)))
        expect(resumed.changed).toBe(true)
        expect(resumed.channel).toMatchObject({ status: "active", paused_reason: null, paused_at: null, updated_at: at(5_000) })
        expect(eventsOf(fake, "channels", channel.uuid).map((e) => e.type)).toEqual(["channel.paused", "channel.resumed"])
        expect(documentOf(fake, "messages", other.uuid).next_attempt_at).toBe(at(5_000))
        expect(Option.getOrThrow(yield* outbox.resumeChannel(org.id, channel.uuid, at(6_000))).changed).toBe(false)
        expect(yield* outbox.resumeChannel(org.id, fixtures.uuid() as ChannelId, at(6_000))).toEqual(Option.none())
        expect(yield* claim(5_000)).toHaveLength(2)
      })
    )
  })
})

describe("outbox: settle, retry, cancel, figures", () => {
  it.effect("settle records a provider id only when the message has none and moves the status forward, clearing the lease; other messages answer None", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { chats, outbox } = yield* Storage
        const org = yield* insertOrganization
        const message = yield* send(org.id, { claim: { lease: "held", leaseUntil: T0 + 30_000, settleMs: 5_000, bypass: true } })
        const settled = Option.getOrThrow(yield* outbox.settle(org.id, message.uuid, { provider_message_id: "wamid.9", status: "delivered", now: at(1_000) }))
        expect(settled.changed).toBe(true)
        expect(settled.message).toMatchObject({ status: "delivered", provider_message_id: "wamid.9", next_attempt_at: null })
        expect(documentOf(fake, "messages", message.uuid)).toMatchObject({ lease: null, lease_until: null })
        const again = Option.getOrThrow(yield* outbox.settle(org.id, message.uuid, { provider_message_id: "wamid.other", status: "read", now: at(2_000) }))
        expect(again.message).toMatchObject({ status: "read", provider_message_id: "wamid.9" })
        const inbound = yield* chats.appendMessage(org.id, {
          contact: { _tag: "ByPhone", phone: phone(5), create: { uuid: fixtures.uuid() as ContactId, first_name: null, last_name: null } },
          newChat: { uuid: fixtures.uuid() as ChatId, status: "open" },
          message: { ...message, uuid: fixtures.uuid() as MessageId, status: "queued", next_attempt_at: null },
          unreadIncrement: 0,
          reopen: { from: [], to: "open" },
          dedupe: false,
          now: at(0)
        })
        if (inbound._tag !== "Appended") return expect.fail(inbound._tag)
        expect(yield* outbox.settle(org.id, inbound.message.uuid, { provider_message_id: "wamid.x", status: "sent", now: at(1_000) })).toEqual(Option.none())
      })
    )
  })

  it.effect("retry makes a failed message queued and due with a new expiry; cancel fails a queued one with its event; other statuses are refused", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { outbox } = yield* Storage
        const org = yield* insertOrganization
        yield* subscribe(org.id)
        const message = yield* send(org.id)
        const failure = { code: "cancelled", title: "Cancelled" }
        const cancelled = yield* outbox.cancel(org.id, message.uuid, failure, at(1_000))
        expect(cancelled).toMatchObject({ _tag: "Done", message: { status: "failed", failure, next_attempt_at: null, updated_at: at(1_000) } })
        expect(eventsOf(fake, "messages", message.uuid).map((e) => e.type)).toEqual(["message.status_updated"])
        expect((yield* outbox.cancel(org.id, message.uuid, failure, at(1_500)))._tag).toBe("Refused")
        const retried = yield* outbox.retry(org.id, message.uuid, at(2_000), at(2 * HOUR))
        expect(retried).toMatchObject({ _tag: "Done", message: { status: "queued", next_attempt_at: at(2_000), attempts: 0, failure: null } })
        expect(documentOf(fake, "messages", message.uuid).expires_at).toBe(at(2 * HOUR))
        expect(eventsOf(fake, "messages", message.uuid)).toHaveLength(1)
        expect((yield* outbox.retry(org.id, message.uuid, at(3_000), at(2 * HOUR)))._tag).toBe("Refused")
        expect(yield* outbox.retry(org.id, fixtures.uuid() as MessageId, at(3_000), at(2 * HOUR))).toEqual({ _tag: "NotFound" })
        expect(yield* outbox.cancel(fixtures.organization().id, message.uuid, failure, at(3_000))).toEqual({ _tag: "NotFound" })
      })
    )
  })

  it.effect("channelQueue counts the channel's queued and sending messages and the oldest queued one; nextDueAt reads lane heads only", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { outbox } = yield* Storage
        const org = yield* insertOrganization
        const channel = yield* insertChannel(org.id)
        expect(yield* outbox.channelQueue(org.id, channel.uuid)).toEqual({ queued: 0, sending: 0, oldest_queued_at: null })
        expect(yield* outbox.nextDueAt()).toBeNull()
        yield* send(org.id, { channel: channel.uuid, now: 2_000 })
        yield* send(org.id, { channel: channel.uuid, now: 1_000, to: phone(2) })
        yield* claim(2_000, { limit: 1 })
        expect(yield* outbox.channelQueue(org.id, channel.uuid)).toEqual({ queued: 1, sending: 1, oldest_queued_at: at(2_000) })
        // Behind the claimed head of lane 2: a message due earlier that is no head.
        yield* send(org.id, { channel: channel.uuid, now: 0, to: phone(2) })
        expect(yield* outbox.nextDueAt()).toBe(T0 + 2_000)
      })
    )
  })

  it.effect("deleting a channel fails its waiting messages with CHANNEL_REMOVED_FAILURE, each with its event; updateMessageStatus ends the dispatch state", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { channels, chats, outbox } = yield* Storage
        const org = yield* insertOrganization
        yield* subscribe(org.id)
        const channel = yield* insertChannel(org.id)
        const queued = yield* send(org.id, { channel: channel.uuid })
        const sending = yield* send(org.id, { channel: channel.uuid, to: phone(2), claim: { lease: "l", leaseUntil: T0 + 30_000, settleMs: 5_000, bypass: true } })
        const delivered = yield* send(org.id, { channel: channel.uuid, to: phone(3), claim: { lease: "m", leaseUntil: T0 + 30_000, settleMs: 5_000, bypass: true } })
        const outcome = yield* chats.updateMessageStatus(org.id, delivered.uuid, { status: "delivered", from: ["queued", "sending", "sent"], now: at(500) })
        expect(outcome).toMatchObject({ _tag: "Updated", message: { status: "delivered", next_attempt_at: null } })
        expect(documentOf(fake, "messages", delivered.uuid)).toMatchObject({ lease: null, lease_until: null, pair_rate_waits: 0 })
        expect(yield* channels.delete(org.id, channel.uuid)).toBe(true)
        for (const message of [queued, sending]) {
          const stored = Option.getOrThrow(yield* chats.findMessage(org.id, message.uuid))
          expect(stored).toMatchObject({ status: "failed", failure: CHANNEL_REMOVED_FAILURE, next_attempt_at: null })
          expect(eventsOf(fake, "messages", message.uuid)).toEqual([{ type: "message.status_updated", data: stored }])
        }
        expect(Option.getOrThrow(yield* chats.findMessage(org.id, delivered.uuid)).status).toBe("delivered")
        expect(yield* outbox.nextDueAt()).toBeNull()
        expect(collectionsOf(fake.db).messages).toBeDefined()
      })
    )
  })
})

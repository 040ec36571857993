import { describe, expect, it } from "@effect/vitest"
import { Clock, Duration, Effect, Fiber, Layer, Option, TestClock } from "effect"
import type { Channel, ChannelId } from "@switchboard/core"
import { shareOneHiddenClass } from "../../../vitest.hidden-class.js"
import {
  BROADCAST_START_BATCH,
  BROADCAST_START_LEASE_MS,
  Broadcasts,
  type BroadcastId,
  Contacts,
  Core,
  ContactGroups,
  DispatchWake,
  MemoryStorage,
  type OrganizationId,
  Organizations,
  MAX_BROADCAST_AUDIENCE,
  reactToOutboundFailure,
  recipientLifetimeMs,
  runBroadcastStarter,
  SendQueueSettings,
  startDueBroadcasts,
  Storage,
  type StorageService,
  StorageError,
  Templates
} from "@switchboard/core"

// The Broadcasts service and its starter on the memory store, with no server (docs/broadcasts.md):
// creation's checks, placeholders per recipient, batches of at most 500, a start that
// resumes after a crash without writing anyone twice, scheduling on the clock, opt-outs.

const START = Date.parse("2026-11-27T09:00:00.000Z")

const saleTemplate = (category: "MARKETING" | "UTILITY" = "MARKETING") => ({
  name: "spring_sale",
  language: "en_US",
  category,
  status: "APPROVED",
  components: [{ type: "BODY", text: "Hi {{1}}, sale on.", example: { body_text: [["Ada"]] } }]
})

const sale = (text: string) => ({
  name: "spring_sale",
  language: { code: "en_US" },
  components: [{ type: "body", parameters: [{ type: "text", text }] }]
})

/** The store and Core's services over it; `wrap` may change the store the services see. */
const layerOf = (wrap: (storage: StorageService) => StorageService = (storage) => storage) => {
  const base = MemoryStorage.make()
  const storage = Layer.succeed(Storage, wrap(base))
  return { base, layer: Layer.provideMerge(Core.layer, storage) }
}

/** An organization with spring_sale and a group of `n` contacts named C0…; its id and the group's uuid. */
const tenant = (n: number, category: "MARKETING" | "UTILITY" = "MARKETING") =>
  Effect.gen(function* () {
    yield* TestClock.setTime(START)
    const organization = yield* (yield* Organizations).create({ name: "Acme" })
    yield* (yield* Templates).create(organization.id, saleTemplate(category))
    const group = yield* (yield* ContactGroups).create(organization.id, "All")
    const rows = Array.from({ length: n }, (_, i) => ({ first_name: `C${i}`, phone: `+1415555${String(i).padStart(4, "0")}`, group: [group.uuid] }))
    for (let i = 0; i < rows.length; i += 1000) yield* (yield* Contacts).importBulk(organization.id, rows.slice(i, i + 1000))
    return { organizationId: organization.id as OrganizationId, groupUuid: group.uuid }
  })

const countsOf = (organizationId: OrganizationId, id: BroadcastId) =>
  Effect.map(Effect.flatMap(Broadcasts, (b) => b.get(organizationId, id)), (broadcast) => broadcast.counts)

describe("Broadcasts.create", () => {
  it.effect("checks the input, the template, the audience's uuids and size before writing anything", () => {
    const { layer } = layerOf()
    return Effect.gen(function* () {
      const { organizationId, groupUuid } = yield* tenant(2)
      const broadcasts = yield* Broadcasts
      const tagOf = (input: unknown) => Effect.flip(broadcasts.create(organizationId, input as never)).pipe(Effect.map((error) => error._tag))
      expect(yield* tagOf({ name: "", template: sale("x"), audience: { group_uuids: [groupUuid] } })).toBe("InvalidInput")
      expect(yield* tagOf({ name: "A", template: sale("{{contact.street}}"), audience: { group_uuids: [groupUuid] } })).toBe("InvalidInput")
      expect(yield* tagOf({ name: "A", template: { ...sale("x"), name: "nope" }, audience: { group_uuids: [groupUuid] } })).toBe("TemplateNotFound")
      expect(yield* tagOf({ name: "A", template: sale("x"), audience: { label_uuids: ["0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6a"] } })).toBe("RecordNotFound")
      const empty = yield* (yield* ContactGroups).create(organizationId, "Empty")
      expect(yield* tagOf({ name: "A", template: sale("x"), audience: { group_uuids: [empty.uuid] } })).toBe("EmptyAudience")
      const placeholderIssue = yield* Effect.flip(
        broadcasts.create(organizationId, { name: "A", template: sale("Hi {{contact.city|x}}"), audience: { group_uuids: [groupUuid] } })
      )
      expect(placeholderIssue).toMatchObject({ issues: [{ code: "invalid_placeholder", field: "template.components[0].parameters[0].text" }] })
      expect((yield* broadcasts.list(organizationId, {})).broadcasts).toEqual([])
    }).pipe(Effect.provide(layer))
  })

  it.effect("answers sending, or scheduled for a future send_at, with the organization's default channel (none here)", () => {
    const { layer } = layerOf()
    return Effect.gen(function* () {
      const { organizationId, groupUuid } = yield* tenant(1)
      const broadcasts = yield* Broadcasts
      const now = yield* broadcasts.create(organizationId, { name: "Now", template: sale("x"), audience: { group_uuids: [groupUuid] } })
      expect(now).toMatchObject({ status: "sending", started_at: new Date(START).toISOString(), channel_uuid: null })
      const later = yield* broadcasts.create(organizationId, {
        name: "Later",
        template: sale("x"),
        audience: { group_uuids: [groupUuid] },
        send_at: new Date(START + 60_000).toISOString()
      })
      expect(later).toMatchObject({ status: "scheduled", started_at: null, send_at: new Date(START + 60_000).toISOString() })
    }).pipe(Effect.provide(layer))
  })
})

describe("Broadcasts.create: the audience's size", () => {
  it.effect("up to 100 000 contacts is taken; one more is AudienceTooLarge, nothing written", () => {
    let size = MAX_BROADCAST_AUDIENCE
    const { layer } = layerOf((storage) => ({
      ...storage,
      broadcasts: { ...storage.broadcasts, countAudience: () => Effect.succeed(size) }
    }))
    return Effect.gen(function* () {
      const { organizationId, groupUuid } = yield* tenant(1)
      const broadcasts = yield* Broadcasts
      const input = { name: "Huge", template: sale("x"), audience: { group_uuids: [groupUuid] } }
      expect((yield* broadcasts.create(organizationId, input)).status).toBe("sending")
      size = MAX_BROADCAST_AUDIENCE + 1
      expect(yield* Effect.flip(broadcasts.create(organizationId, input))).toMatchObject({
        _tag: "AudienceTooLarge",
        size: MAX_BROADCAST_AUDIENCE + 1,
        limit: MAX_BROADCAST_AUDIENCE
      })
      expect((yield* broadcasts.list(organizationId, {})).broadcasts).toHaveLength(1)
    }).pipe(Effect.provide(layer))
  })
})

describe("the starter", () => {
  it.effect("a scheduled broadcast whose audience is empty when it starts ends completed with total 0", () => {
    const { layer } = layerOf()
    return Effect.gen(function* () {
      const { organizationId, groupUuid } = yield* tenant(1)
      const broadcast = yield* (yield* Broadcasts).create(organizationId, {
        name: "Gone",
        template: sale("x"),
        audience: { group_uuids: [groupUuid] },
        send_at: new Date(START + 5_000).toISOString()
      })
      const storage = yield* Storage
      const [only] = (yield* storage.contacts.list(organizationId, { page: 1, per_page: 10 })).items
      yield* storage.contacts.delete(organizationId, only!.uuid)
      yield* TestClock.adjust(5_000)
      expect(yield* startDueBroadcasts).toBe(1)
      expect(yield* (yield* Broadcasts).get(organizationId, broadcast.uuid)).toMatchObject({
        status: "completed",
        completed_at: new Date(START + 5_000).toISOString(),
        counts: { total: 0 }
      })
    }).pipe(Effect.provide(layer))
  })

  it.effect("a template no longer approved when a scheduled broadcast starts stops it with template_not_approved", () => {
    const { layer } = layerOf()
    return Effect.gen(function* () {
      const { organizationId, groupUuid } = yield* tenant(2)
      const broadcast = yield* (yield* Broadcasts).create(organizationId, {
        name: "Paused",
        template: sale("x"),
        audience: { group_uuids: [groupUuid] },
        send_at: new Date(START + 5_000).toISOString()
      })
      yield* (yield* Templates).applyProviderStatus(organizationId, { name: "spring_sale", language: "en_US", status: "PAUSED", reason: null })
      yield* TestClock.adjust(5_000)
      yield* startDueBroadcasts
      expect(yield* (yield* Broadcasts).get(organizationId, broadcast.uuid)).toMatchObject({
        status: "stopped",
        stopped_reason: { code: "template_not_approved" },
        counts: { total: 0 }
      })
    }).pipe(Effect.provide(layer))
  })

  it.effect("a recipient whose filled parameter is longer than a send allows fails alone with invalid_parameter", () => {
    const { layer } = layerOf()
    return Effect.gen(function* () {
      const { organizationId } = yield* tenant(0)
      const contacts = yield* Contacts
      const imported = yield* contacts.importBulk(organizationId, [
        { first_name: "A".repeat(255), phone: "+14155550001" },
        { first_name: "Ada", phone: "+14155550002" }
      ])
      // Five long first names: 1 275 characters, over a text parameter's 1 024.
      const text = Array.from({ length: 5 }, () => "{{contact.first_name}}").join("")
      const broadcast = yield* (yield* Broadcasts).create(organizationId, {
        name: "Long",
        template: sale(text),
        audience: { contact_uuids: imported.contacts.map((contact) => contact.uuid) }
      })
      yield* startDueBroadcasts
      const recipients = (yield* (yield* Broadcasts).recipients(organizationId, broadcast.uuid, {})).recipients
      expect(recipients.map((r) => [r.phone, r.status, r.failure?.code ?? null]).sort()).toEqual([
        ["+14155550001", "failed", "invalid_parameter"],
        ["+14155550002", "queued", null]
      ])
    }).pipe(Effect.provide(layer))
  })

  it.effect("recipients expire at started_at + max(TTL, 2 × total ÷ throughput_mps)", () => {
    const { layer } = layerOf()
    return Effect.gen(function* () {
      expect(recipientLifetimeMs(14_400_000, 100_000, 50)).toBe(14_400_000)
      expect(recipientLifetimeMs(1_000, 3, 1)).toBe(6_000)
      expect(recipientLifetimeMs(1_000, 3, null)).toBe(1_000)
      const { organizationId, groupUuid } = yield* tenant(3)
      const storage = yield* Storage
      const channel: Channel = {
        uuid: "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b70" as ChannelId,
        provider: "whatsapp_cloud",
        phone_number_id: "106540352249999",
        display_phone_number: "+31612345678",
        waba_id: "102290129340398",
        access_token_set: true,
        access_token_last4: "wxyz",
        throughput_mps: 1,
        status: "active",
        paused_reason: null,
        paused_at: null,
        created_at: new Date(START).toISOString(),
        updated_at: new Date(START).toISOString()
      }
      yield* storage.channels.insert(organizationId, { channel, access_token_sealed: "v1.sealed" }, 20)
      yield* (yield* Broadcasts).create(organizationId, { name: "Slow", template: sale("x"), audience: { group_uuids: [groupUuid] } })
      yield* startDueBroadcasts.pipe(Effect.provideService(SendQueueSettings, { ...SendQueueSettings.defaultValue(), ttlMs: 1_000 }))
      const claimed = yield* storage.outbox.claim({ now: START, lease: "l", leaseUntil: START + 60_000, settleMs: 0, limit: 10, horizonMs: 10_000 })
      expect(claimed.length).toBeGreaterThan(0)
      expect(claimed.every((each) => each.expires_at === new Date(START + 6_000).toISOString())).toBe(true)
    }).pipe(Effect.provide(layer))
  })

  it.effect("writes 1 200 recipients in batches of BROADCAST_START_BATCH (at most 500), each contact once, placeholders filled", () => {
    const batches: Array<number> = []
    const { layer } = layerOf((storage) => ({
      ...storage,
      broadcasts: {
        ...storage.broadcasts,
        writeRecipients: (organizationId, id, lease, batch) => {
          batches.push(batch.recipients.length)
          return storage.broadcasts.writeRecipients(organizationId, id, lease, batch)
        }
      }
    }))
    return Effect.gen(function* () {
      const { organizationId, groupUuid } = yield* tenant(1_200)
      const broadcast = yield* (yield* Broadcasts).create(organizationId, {
        name: "Big",
        template: sale("{{contact.first_name}}"),
        audience: { group_uuids: [groupUuid] }
      })
      expect(yield* startDueBroadcasts).toBe(1)
      // Full batches, then the rest (an empty last batch marks the end when 1 200 divides evenly).
      const full = Math.floor(1_200 / BROADCAST_START_BATCH)
      expect(batches).toEqual([...Array.from({ length: full }, () => BROADCAST_START_BATCH), 1_200 - full * BROADCAST_START_BATCH])
      expect(Math.max(...batches)).toBeLessThanOrEqual(500)
      expect(yield* countsOf(organizationId, broadcast.uuid)).toMatchObject({ total: 1_200, queued: 1_200 })
      const [first] = (yield* (yield* Broadcasts).recipients(organizationId, broadcast.uuid, { limit: 1 })).recipients
      const storage = yield* Storage
      const message = Option.getOrThrow(yield* storage.chats.findMessage(organizationId, first!.message_uuid))
      const contact = Option.getOrThrow(yield* storage.contacts.findById(organizationId, first!.contact_uuid))
      expect(message.template?.components).toEqual([{ type: "body", parameters: [{ type: "text", text: contact.first_name }] }])
      expect(message.text).toBe(`Hi ${contact.first_name}, sale on.`)
      expect(yield* startDueBroadcasts).toBe(0)
    }).pipe(Effect.provide(layer))
  })

  it.effect("the recipients' messages of a start share one hidden class (no per-recipient spread adding keys)", () => {
    const messages: Array<object> = []
    const { layer } = layerOf((storage) => ({
      ...storage,
      broadcasts: {
        ...storage.broadcasts,
        writeRecipients: (organizationId, id, lease, batch) => {
          for (const recipient of batch.recipients) messages.push(recipient.message)
          return storage.broadcasts.writeRecipients(organizationId, id, lease, batch)
        }
      }
    }))
    return Effect.gen(function* () {
      const { organizationId, groupUuid } = yield* tenant(300)
      yield* (yield* Broadcasts).create(organizationId, { name: "Shape", template: sale("{{contact.first_name}}"), audience: { group_uuids: [groupUuid] } })
      yield* startDueBroadcasts
      expect(messages).toHaveLength(300)
      expect(shareOneHiddenClass(messages)).toBe(true)
    }).pipe(Effect.provide(layer))
  })

  it.effect("a start that dies after its first batch resumes once its lease ends, writing nobody twice", () => {
    let failSecondBatch = true
    let calls = 0
    const { layer } = layerOf((storage) => ({
      ...storage,
      broadcasts: {
        ...storage.broadcasts,
        writeRecipients: (organizationId, id, lease, batch) => {
          calls++
          if (calls === 2 && failSecondBatch) return Effect.fail(new StorageError({ operation: "writeRecipients", cause: "disk gone" }))
          return storage.broadcasts.writeRecipients(organizationId, id, lease, batch)
        }
      }
    }))
    return Effect.gen(function* () {
      const size = BROADCAST_START_BATCH * 3 + 50
      const { organizationId, groupUuid } = yield* tenant(size)
      const broadcast = yield* (yield* Broadcasts).create(organizationId, { name: "Crash", template: sale("x"), audience: { group_uuids: [groupUuid] } })
      yield* startDueBroadcasts
      expect((yield* countsOf(organizationId, broadcast.uuid)).total).toBe(BROADCAST_START_BATCH)
      failSecondBatch = false
      // Its lease still holds: nobody resumes it yet.
      expect(yield* startDueBroadcasts).toBe(0)
      yield* TestClock.adjust(BROADCAST_START_LEASE_MS)
      expect(yield* startDueBroadcasts).toBe(1)
      expect(yield* countsOf(organizationId, broadcast.uuid)).toMatchObject({ total: size, queued: size })
      const recipients = (yield* (yield* Broadcasts).recipients(organizationId, broadcast.uuid, { limit: 100 })).recipients
      expect(new Set(recipients.map((r) => r.contact_uuid)).size).toBe(recipients.length)
    }).pipe(Effect.provide(layer))
  })

  it.effect("a scheduled broadcast starts once the clock reaches its send_at", () => {
    const { layer } = layerOf()
    return Effect.gen(function* () {
      const { organizationId, groupUuid } = yield* tenant(3)
      const broadcast = yield* (yield* Broadcasts).create(organizationId, {
        name: "Later",
        template: sale("x"),
        audience: { group_uuids: [groupUuid] },
        send_at: new Date(START + 10_000).toISOString()
      })
      yield* TestClock.adjust(9_999)
      expect(yield* startDueBroadcasts).toBe(0)
      yield* TestClock.adjust(1)
      expect(yield* startDueBroadcasts).toBe(1)
      const started = yield* (yield* Broadcasts).get(organizationId, broadcast.uuid)
      expect(started).toMatchObject({ status: "sending", started_at: new Date(START + 10_000).toISOString(), counts: { total: 3 } })
    }).pipe(Effect.provide(layer))
  })

  it.effect("a MARKETING broadcast skips an opted-out contact as failed opted_out; a UTILITY one reaches it", () => {
    const { layer } = layerOf()
    return Effect.gen(function* () {
      const { organizationId, groupUuid } = yield* tenant(2)
      const storage = yield* Storage
      const [optedOut] = (yield* storage.contacts.list(organizationId, { page: 1, per_page: 10 })).items
      yield* storage.contacts.markMarketingOptOut(organizationId, optedOut!.uuid, new Date(START).toISOString())
      const marketing = yield* (yield* Broadcasts).create(organizationId, { name: "M", template: sale("x"), audience: { group_uuids: [groupUuid] } })
      yield* startDueBroadcasts
      const failed = (yield* (yield* Broadcasts).recipients(organizationId, marketing.uuid, { status: "failed" })).recipients
      expect(failed.map((r) => [r.contact_uuid, r.failure?.code])).toEqual([[optedOut!.uuid, "opted_out"]])
      yield* (yield* Templates).create(organizationId, { ...saleTemplate("UTILITY"), name: "notice" })
      const utility = yield* (yield* Broadcasts).create(organizationId, {
        name: "U",
        template: { ...sale("x"), name: "notice" },
        audience: { group_uuids: [groupUuid] }
      })
      yield* startDueBroadcasts
      expect(yield* countsOf(organizationId, utility.uuid)).toMatchObject({ total: 2, queued: 2, failed: 0 })
    }).pipe(Effect.provide(layer))
  })
})

describe("the starter's loop (runBroadcastStarter)", () => {
  /** The store and Core's services with the process's wake, `wrap` counting or changing the store's broadcasts. */
  const loopLayerOf = (wrap?: (storage: StorageService) => StorageService) => {
    const { layer } = layerOf(wrap)
    return Layer.provideMerge(layer, Layer.merge(DispatchWake.layer, SendQueueSettings.layer({})))
  }

  it.effect("sleeps until the next due start: a scheduled broadcast starts at its send_at, not at the next poll", () =>
    Effect.gen(function* () {
      const { organizationId, groupUuid } = yield* tenant(3)
      const broadcast = yield* (yield* Broadcasts).create(organizationId, {
        name: "On time",
        template: sale("x"),
        audience: { group_uuids: [groupUuid] },
        send_at: new Date(START + 5_000).toISOString()
      })
      const loop = yield* Effect.fork(runBroadcastStarter({ pollIntervalMs: 60_000 }))
      yield* TestClock.adjust(4_999)
      expect((yield* (yield* Broadcasts).get(organizationId, broadcast.uuid)).status).toBe("scheduled")
      yield* TestClock.adjust(1)
      expect(yield* (yield* Broadcasts).get(organizationId, broadcast.uuid)).toMatchObject({
        status: "sending",
        started_at: new Date(START + 5_000).toISOString(),
        counts: { total: 3 }
      })
      yield* Fiber.interrupt(loop)
    }).pipe(Effect.provide(loopLayerOf())))

  it.effect("a timer that fires a millisecond early by the clock sleeps the rest: the start is still at its send_at", () =>
    Effect.gen(function* () {
      const { organizationId, groupUuid } = yield* tenant(3)
      const broadcast = yield* (yield* Broadcasts).create(organizationId, {
        name: "Early timer",
        template: sale("x"),
        audience: { group_uuids: [groupUuid] },
        send_at: new Date(START + 5_000).toISOString()
      })
      // As Node's timers may: every sleep of 2 ms or more ends 1 ms early.
      const test = yield* TestClock.testClock()
      const early: Clock.Clock = {
        [Clock.ClockTypeId]: Clock.ClockTypeId,
        unsafeCurrentTimeMillis: () => test.unsafeCurrentTimeMillis(),
        currentTimeMillis: test.currentTimeMillis,
        unsafeCurrentTimeNanos: () => test.unsafeCurrentTimeNanos(),
        currentTimeNanos: test.currentTimeNanos,
        sleep: (duration) => {
          const ms = Duration.toMillis(duration)
          return test.sleep(Duration.millis(ms >= 2 ? ms - 1 : ms))
        }
      }
      const loop = yield* Effect.fork(runBroadcastStarter({ pollIntervalMs: 60_000 }).pipe(Effect.withClock(early)))
      yield* TestClock.adjust(5_000)
      // A pass at 4 999 ms would find nothing, and the next one wait for 200 ms after it.
      expect(yield* (yield* Broadcasts).get(organizationId, broadcast.uuid)).toMatchObject({
        status: "sending",
        started_at: new Date(START + 5_000).toISOString()
      })
      yield* Fiber.interrupt(loop)
    }).pipe(Effect.provide(loopLayerOf())))

  it.effect("a start due already passes every 200 ms, no busier; a failed read of the next due start falls back to the poll interval", () => {
    const calls = { claimStart: 0 }
    let answer: Effect.Effect<number | null, StorageError> = Effect.succeed(0)
    const layer = loopLayerOf((storage) => ({
      ...storage,
      broadcasts: {
        ...storage.broadcasts,
        claimStart: (request) => {
          calls.claimStart++
          return storage.broadcasts.claimStart(request)
        },
        nextStartDueAt: () => answer
      }
    }))
    return Effect.gen(function* () {
      yield* TestClock.setTime(START)
      const loop = yield* Effect.fork(runBroadcastStarter({ pollIntervalMs: 1_000 }))
      for (let step = 0; step < 10; step++) yield* TestClock.adjust(100)
      // Due at 0 (the past) every time: a pass at 0, 200, …, 1 000 ms.
      expect(calls.claimStart).toBe(6)
      answer = Effect.fail(new StorageError({ operation: "broadcasts.nextStartDueAt", cause: "disk gone" }))
      yield* TestClock.adjust(200)
      calls.claimStart = 0
      for (let step = 0; step < 30; step++) yield* TestClock.adjust(100)
      // The pass at 1 200 ms read nothing: the next ones at 2 200, 3 200 and 4 200 ms.
      expect(calls.claimStart).toBe(3)
      yield* Fiber.interrupt(loop)
    }).pipe(Effect.provide(layer))
  })
})

describe("reactToOutboundFailure", () => {
  it.effect("131050 marks the contact opted out; 132016 on a recipient stops its broadcast; other codes change neither", () => {
    const { layer } = layerOf()
    return Effect.gen(function* () {
      const { organizationId, groupUuid } = yield* tenant(2)
      const storage = yield* Storage
      const broadcast = yield* (yield* Broadcasts).create(organizationId, { name: "B", template: sale("x"), audience: { group_uuids: [groupUuid] } })
      yield* startDueBroadcasts
      const [first] = (yield* (yield* Broadcasts).recipients(organizationId, broadcast.uuid, {})).recipients
      const message = Option.getOrThrow(yield* storage.chats.findMessage(organizationId, first!.message_uuid))
      const now = new Date(START).toISOString()
      yield* reactToOutboundFailure(storage, organizationId, message, { code: "131026", title: "Undeliverable" }, now)
      expect(Option.getOrThrow(yield* storage.contacts.findById(organizationId, message.contact_uuid)).marketing_opt_out_at).toBeNull()
      expect((yield* (yield* Broadcasts).get(organizationId, broadcast.uuid)).status).toBe("sending")
      yield* reactToOutboundFailure(storage, organizationId, message, { code: "131050", title: "Stopped marketing" }, now)
      expect(Option.getOrThrow(yield* storage.contacts.findById(organizationId, message.contact_uuid)).marketing_opt_out_at).toBe(now)
      yield* reactToOutboundFailure(storage, organizationId, message, { code: "132016", title: "Template disabled" }, now)
      const stopped = yield* (yield* Broadcasts).get(organizationId, broadcast.uuid)
      expect(stopped).toMatchObject({ status: "stopped", stopped_reason: { code: "132016" }, counts: { queued: 0, failed: 2 } })
    }).pipe(Effect.provide(layer))
  })
})

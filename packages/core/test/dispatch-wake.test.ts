import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option, TestClock } from "effect"
import {
  type Broadcast,
  Contacts,
  Core,
  DispatchWake,
  type DispatchWakeService,
  ignoringSendOutcomes,
  makeDispatchWake,
  MemoryStorage,
  type MessageId,
  Organizations,
  runBroadcastStarter,
  SendQueueSettings,
  Storage,
  type StorageService,
  wakeOnEnqueue
} from "@switchboard/core"

// The in-process wake of the leased-dispatch loop (docs/webhooks.md "Delivery and the
// dispatcher"): the storage of `wakeOnEnqueue` wakes the loop after each write that may
// enqueue a webhook delivery, and only then.

const layer = Core.layer.pipe(
  Layer.provideMerge(wakeOnEnqueue.pipe(Layer.provide(MemoryStorage.layer), Layer.provideMerge(DispatchWake.layer)))
)

describe("wakeOnEnqueue", () => {
  it.effect("a contact import wakes the subscribers; reads and other writes do not; an unsubscribed listener hears nothing", () =>
    Effect.gen(function*() {
      const wake = yield* DispatchWake
      let wakes = 0
      const unsubscribe = wake.subscribe(() => wakes++)
      const organization = yield* (yield* Organizations).create({ name: "Acme", plan: {} })
      expect(wakes).toBe(0)
      yield* (yield* Contacts).importBulk(organization.id, [{ first_name: "Ada", phone: "+14155550100" }])
      expect(wakes).toBe(1)
      const storage = yield* Storage
      yield* storage.webhooks.listEndpoints(organization.id)
      expect(wakes).toBe(1)
      unsubscribe()
      yield* (yield* Contacts).importBulk(organization.id, [{ first_name: "Grace", phone: "+14155550101" }])
      expect(wakes).toBe(1)
    }).pipe(Effect.provide(layer)))
})

describe("the wakes after a send's outcome", () => {
  /** How many wakes a plain subscriber of `wake` and one that ignores send outcomes heard (live counts). */
  const listening = (wake: DispatchWakeService) => {
    const heard = { all: 0, notOutcomes: 0 }
    const unsubscribeAll = wake.subscribe(() => heard.all++)
    const unsubscribe = ignoringSendOutcomes(wake).subscribe(() => heard.notOutcomes++)
    return { heard, unsubscribe: () => (unsubscribe(), unsubscribeAll()) }
  }

  it("reach every subscriber but those subscribed with { sendOutcomes: false } (ignoringSendOutcomes); every other wake reaches all", () => {
    const wake = makeDispatchWake()
    const { heard, unsubscribe } = listening(wake)
    wake.unsafeWakeAfterSendOutcome?.()
    expect(heard).toEqual({ all: 1, notOutcomes: 0 })
    wake.unsafeWake?.()
    Effect.runSync(wake.wake)
    expect(heard).toEqual({ all: 3, notOutcomes: 2 })
    unsubscribe()
    wake.unsafeWake?.()
    wake.unsafeWakeAfterSendOutcome?.()
    expect(heard).toEqual({ all: 3, notOutcomes: 2 })
  })

  it.effect("wakeOnEnqueue: a send's recorded outcome, in both forms, wakes with unsafeWakeAfterSendOutcome, not unsafeWake", () =>
    Effect.gen(function*() {
      const { heard } = listening(yield* DispatchWake)
      const storage = yield* Storage
      const outcome = { _tag: "Sent", provider_message_id: "wamid.1", attempts: 1 } as const
      // No such message: nothing recorded (None), and the write still ends, so it still wakes.
      yield* storage.outbox.record("no-such-message" as MessageId, "lease", outcome, new Date(0).toISOString())
      expect(heard).toEqual({ all: 1, notOutcomes: 0 })
      yield* Effect.promise(() => storage.outbox.record.promise!("no-such-message" as MessageId, "lease", outcome, new Date(0).toISOString()))
      expect(heard).toEqual({ all: 2, notOutcomes: 0 })
      yield* (yield* Contacts).importBulk((yield* (yield* Organizations).create({ name: "Acme", plan: {} })).id, [{ first_name: "Ada", phone: "+14155550100" }])
      expect(heard).toEqual({ all: 3, notOutcomes: 1 })
    }).pipe(Effect.provide(layer)))

  it.effect("wakeOnEnqueue: a store's lean record of a sent message (outbox.recordSent) wakes with unsafeWakeAfterSendOutcome too", () =>
    Effect.gen(function*() {
      const { heard } = listening(yield* DispatchWake)
      const storage = yield* Storage
      yield* Effect.promise(() => storage.outbox.recordSent!("no-such-message" as MessageId, "lease", { _tag: "Sent", provider_message_id: "wamid.1", attempts: 1 }, new Date(0).toISOString()))
      expect(heard).toEqual({ all: 1, notOutcomes: 0 })
    }).pipe(Effect.provide(wakeOnEnqueue.pipe(
      Layer.provide(Layer.sync(Storage, () => {
        const base = MemoryStorage.make()
        return { ...base, outbox: { ...base.outbox, recordSent: () => Promise.resolve(Option.none()) } }
      })),
      Layer.provideMerge(DispatchWake.layer)
    ))))
})

describe("wakeOnEnqueue: the broadcasts' completion check", () => {
  /** The memory store under wakeOnEnqueue, its completeFinished answering `completed` and counting its calls. */
  const countingLayer = (completed: ReadonlyArray<Broadcast>) => {
    const calls = { completeFinished: 0 }
    const base = MemoryStorage.make()
    const storage: StorageService = {
      ...base,
      broadcasts: {
        ...base.broadcasts,
        completeFinished: (now) => {
          calls.completeFinished++
          return Effect.as(base.broadcasts.completeFinished(now), completed)
        }
      }
    }
    const layer = Core.layer.pipe(
      Layer.provideMerge(wakeOnEnqueue.pipe(Layer.provide(Layer.succeed(Storage, storage)), Layer.provideMerge(DispatchWake.layer))),
      Layer.provideMerge(SendQueueSettings.layer({}))
    )
    return { calls, layer }
  }

  it.effect("wakes only when it completed a broadcast", () => {
    const none = countingLayer([])
    const one = countingLayer([{ uuid: "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6a" } as unknown as Broadcast])
    const wakesOf = Effect.gen(function*() {
      let wakes = 0
      ;(yield* DispatchWake).subscribe(() => wakes++)
      yield* (yield* Storage).broadcasts.completeFinished("2026-11-27T09:00:00.000Z")
      return wakes
    })
    return Effect.gen(function*() {
      expect(yield* Effect.provide(wakesOf, none.layer)).toBe(0)
      expect(yield* Effect.provide(wakesOf, one.layer)).toBe(1)
    })
  })

  it.effect("the broadcasts' loop, with nothing due, passes once per poll interval (its own pass does not wake it)", () => {
    const { calls, layer } = countingLayer([])
    return Effect.gen(function*() {
      const loop = yield* Effect.fork(runBroadcastStarter({ pollIntervalMs: 1_000 }))
      for (let step = 0; step < 30; step++) yield* TestClock.adjust(100)
      yield* Fiber.interrupt(loop)
      // A pass at 0, 1 000, 2 000 and 3 000 ms; woken by its own pass it would pass every 200 ms (16).
      expect(calls.completeFinished).toBeGreaterThanOrEqual(3)
      expect(calls.completeFinished).toBeLessThanOrEqual(4)
    }).pipe(Effect.provide(layer))
  })

  it.effect("the broadcasts' loop, idle for ten passes, passes every 5 s; a wake brings the poll interval back", () => {
    const { calls, layer } = countingLayer([])
    return Effect.gen(function*() {
      const passesIn = (ms: number) =>
        Effect.gen(function*() {
          const before = calls.completeFinished
          for (let step = 0; step < ms / 100; step++) yield* TestClock.adjust(100)
          return calls.completeFinished - before
        })
      const loop = yield* Effect.fork(runBroadcastStarter({ pollIntervalMs: 1_000 }))
      // Passes at 0, 1 000, …, 9 000 ms, then every 5 s.
      expect(yield* passesIn(9_500)).toBe(10)
      expect(yield* passesIn(15_000)).toBe(3)
      yield* (yield* DispatchWake).wake
      expect(yield* passesIn(3_000)).toBeGreaterThanOrEqual(3)
      yield* Fiber.interrupt(loop)
    }).pipe(Effect.provide(layer))
  })
})

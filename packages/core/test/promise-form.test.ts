import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import {
  DispatchWake,
  type Message,
  type MessageId,
  NO_METRICS,
  makeDispatchWake,
  MemoryStorage,
  meteredStorage,
  MetricsRecorder,
  Storage,
  tappedWithPromise,
  wakeOnEnqueue,
  withPromise
} from "@switchboard/core"

// Promise forms (docs/extending.md "A store of your own"): a function answering an Effect may
// carry the same call as a promise; the wrappers of a store keep it, and run what they add
// in both forms.

describe("withPromise and tappedWithPromise", () => {
  it("the promise form is kept by tappedWithPromise, which runs `after` once in each form, with the arguments", async () => {
    const seen: Array<string> = []
    const double = withPromise((n: number) => Effect.succeed(n * 2), (n: number) => Promise.resolve(n * 2))
    const tapped = tappedWithPromise(double, (value, n) => void seen.push(`${n}→${value}`))
    expect(await Effect.runPromise(tapped(1))).toBe(2)
    expect(await tapped.promise!(2)).toBe(4)
    expect(seen).toEqual(["1→2", "2→4"])
  })

  it("a function without a promise form stays without one; a rejection skips `after`", async () => {
    const seen: Array<number> = []
    const plain = (n: number) => Effect.succeed(n)
    expect(tappedWithPromise(plain, (value) => void seen.push(value)).promise).toBeUndefined()
    const refusing = withPromise((n: number) => Effect.fail(`no ${n}`), (n: number) => Promise.reject(new Error(`no ${n}`)))
    await expect(tappedWithPromise(refusing, (value) => void seen.push(value)).promise!(3)).rejects.toThrow("no 3")
    expect(seen).toEqual([])
  })
})

describe("the store's wrappers keep outbox.record's promise form", () => {
  /** The memory store with `outbox.record` answering `Some(message)` in both forms (no lease needed). */
  const recordingStore = Layer.effect(
    Storage,
    Effect.map(Storage, (storage) => {
      const message = { status: "sent" } as Message
      return {
        ...storage,
        outbox: {
          ...storage.outbox,
          record: withPromise(() => Effect.succeed(Option.some(message)), () => Promise.resolve(Option.some(message)))
        }
      }
    })
  ).pipe(Layer.provide(MemoryStorage.layer))

  it("wakeOnEnqueue wakes the loops and meteredStorage counts the outcome, in the promise form as in the Effect", async () => {
    const wake = makeDispatchWake()
    let wakes = 0
    wake.subscribe(() => void wakes++)
    const counted: Array<string> = []
    const recorder = MetricsRecorder.layer({ ...NO_METRICS, messageStatus: (direction, status) => void counted.push(`${direction} ${status}`) })
    const storage = await Effect.runPromise(Effect.provide(
      Storage,
      wakeOnEnqueue.pipe(
        Layer.provide(meteredStorage.pipe(Layer.provide(recordingStore), Layer.provide(recorder))),
        Layer.provide(Layer.succeed(DispatchWake, wake))
      )
    ))
    const record = storage.outbox.record
    const sent = { _tag: "Sent", provider_message_id: null, attempts: 1 } as const
    expect(record.promise).toBeDefined()
    expect(Option.isSome(await record.promise!("m-1" as MessageId, "lease", sent, new Date().toISOString()))).toBe(true)
    expect([wakes, counted]).toEqual([1, ["outbound sent"]])
    expect(Option.isSome(await Effect.runPromise(record("m-2" as MessageId, "lease", sent, new Date().toISOString())))).toBe(true)
    expect([wakes, counted]).toEqual([2, ["outbound sent", "outbound sent"]])
  })
})

describe("the store's wrappers keep outbox.recordSent, and add nothing where the store has none", () => {
  /** The memory store with `outbox.recordSent`, answering `Some(status)` for every id but "lost". */
  const leanStore = (status: Message["status"]) =>
    Layer.effect(
      Storage,
      Effect.map(Storage, (storage) => ({
        ...storage,
        outbox: {
          ...storage.outbox,
          recordSent: (id: MessageId) => Promise.resolve(id === "lost" ? Option.none() : Option.some(status))
        }
      }))
    ).pipe(Layer.provide(MemoryStorage.layer))
  const wrapped = (store: Layer.Layer<Storage>) => {
    const wake = makeDispatchWake()
    const seen = { wakes: 0, counted: [] as Array<string> }
    wake.subscribe(() => void seen.wakes++)
    const recorder = MetricsRecorder.layer({ ...NO_METRICS, messageStatus: (direction, status) => void seen.counted.push(`${direction} ${status}`) })
    const storage = Effect.runSync(Effect.provide(
      Storage,
      wakeOnEnqueue.pipe(
        Layer.provide(meteredStorage.pipe(Layer.provide(store), Layer.provide(recorder))),
        Layer.provide(Layer.succeed(DispatchWake, wake))
      )
    ))
    return { storage, seen }
  }
  const sent = { _tag: "Sent", provider_message_id: "wamid.1", attempts: 1 } as const

  it("wakeOnEnqueue wakes the loops and meteredStorage counts sent, then the status a pending report moved it to", async () => {
    const { storage, seen } = wrapped(leanStore("delivered"))
    expect(await storage.outbox.recordSent!("m-1" as MessageId, "lease", sent, new Date().toISOString())).toEqual(Option.some("delivered"))
    expect(seen).toEqual({ wakes: 1, counted: ["outbound sent", "outbound delivered"] })
    // A lease no longer held: nothing counted.
    expect(await storage.outbox.recordSent!("lost" as MessageId, "lease", sent, new Date().toISOString())).toEqual(Option.none())
    expect(seen.counted).toEqual(["outbound sent", "outbound delivered"])
  })

  it("a store without recordSent stays without one through both wrappers", () => {
    const { storage } = wrapped(MemoryStorage.layer)
    expect(storage.outbox.recordSent).toBeUndefined()
    expect("recordSent" in storage.outbox).toBe(false)
  })
})

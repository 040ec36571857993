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

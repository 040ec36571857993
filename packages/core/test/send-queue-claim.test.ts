import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import { Core, MemoryStorage, sendQueue, Storage, type OutboxClaimRequest } from "@switchboard/core"

// A claim reserves its pacing slots from when it is expected to have returned (docs/messaging.md
// "The send queue"): the `now` it passes the store is the dispatcher's `now` plus a moving
// average of how long that store's claims took (0.3 of the last one, 0.7 of the average so
// far), at most 400 ms; on a live clock, a store's first claim, before any was timed, is
// expected to take 100 ms (it runs cold). Without it, a slow store's claim handed its first messages back
// to the queue as late for their slots, and a server's first claim handed its first
// messages over late, together.
describe("sendQueue.claim: slots start after the claim's expected duration", () => {
  it.effect("the store sees now + the moving average of its claims' durations, capped at 400 ms", () => {
    const seen: Array<number> = []
    const memory = MemoryStorage.make()
    let durationMs = 40
    const storage = {
      ...memory,
      outbox: {
        ...memory.outbox,
        claim: (request: OutboxClaimRequest) =>
          Effect.zipRight(
            Effect.sync(() => seen.push(request.now)).pipe(Effect.zipRight(TestClock.adjust(durationMs))),
            memory.outbox.claim(request)
          )
      }
    }
    const claim = (now: number) => sendQueue.claim(now, now + 60_000, 10)
    return Effect.gen(function* () {
      yield* claim(1_000)
      yield* claim(2_000)
      yield* claim(3_000)
      durationMs = 5_000
      for (let index = 0; index < 12; index++) yield* claim(10_000)
      expect(seen.slice(0, 3)).toEqual([1_000, 2_000 + 12, 3_000 + 20])
      expect(seen.at(-1)).toBe(10_000 + 400)
    }).pipe(Effect.provide(Core.layer.pipe(Layer.provideMerge(Layer.succeed(Storage, storage)))))
  })

  it.live("on a live clock, a store's first claim is expected to take 100 ms: its slots start 100 ms after the claim's now", () => {
    const seen: Array<number> = []
    const memory = MemoryStorage.make()
    const storage = {
      ...memory,
      outbox: { ...memory.outbox, claim: (request: OutboxClaimRequest) => Effect.zipRight(Effect.sync(() => seen.push(request.now)), memory.outbox.claim(request)) }
    }
    return Effect.gen(function* () {
      yield* sendQueue.claim(1_000, 61_000, 10)
      yield* sendQueue.claim(2_000, 62_000, 10)
      expect(seen[0]).toBe(1_000 + 100)
      // The second: 0.7 of the first estimate and 0.3 of the first claim's own duration (a few ms here).
      expect(seen[1]! - 2_000).toBeGreaterThanOrEqual(70)
      expect(seen[1]! - 2_000).toBeLessThan(100)
    }).pipe(Effect.provide(Core.layer.pipe(Layer.provideMerge(Layer.succeed(Storage, storage)))))
  })
})

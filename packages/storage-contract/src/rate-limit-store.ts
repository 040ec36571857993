import { describe, expect, it } from "@effect/vitest"
import { randomUUID } from "node:crypto"
import { Effect, type Layer } from "effect"
import { RateLimitStore, type RateLimitIncrement } from "@switchboard/core"

/**
 * Options of {@link runRateLimitStoreContract}.
 *
 * @category contract
 */
export interface RateLimitStoreContractOptions {
  /** Shown in test names, for example `"redis"`. */
  readonly name: string
  /**
   * Returns a Layer of a store. Called once per test; a scoped Layer is released after
   * it. The store may hold other data (a shared Redis): every test uses fresh random keys.
   */
  readonly makeLayer: () => Layer.Layer<RateLimitStore, unknown>
  /** Concurrent increments of the atomicity test; default 200. */
  readonly concurrency?: number
}

/**
 * Registers the contract every rate-limit store must pass (a rate-limit
 * increment is one atomic store operation: docs/extending.md "Writing a rate-limit store") with vitest: counting from 1 per key and
 * window, keys and windows kept apart, and N concurrent increments of one counter
 * answering 1..N, each exactly once (`incrementPromise` too, mixed with `increment`, when
 * the store has it).
 *
 * @category contract
 * @example
 * import { MemoryRateLimitStore } from "@switchboard/core"
 * import { runRateLimitStoreContract } from "@switchboard/storage-contract"
 *
 * runRateLimitStoreContract({ name: "memory", makeLayer: () => MemoryRateLimitStore.layer })
 */
export const runRateLimitStoreContract = (options: RateLimitStoreContractOptions): void => {
  const run = <A, E>(body: Effect.Effect<A, E, RateLimitStore>) => body.pipe(Effect.provide(options.makeLayer()))
  const increment = (request: RateLimitIncrement) => Effect.flatMap(RateLimitStore, (store) => store.increment(request))

  describe(`rate-limit store contract: ${options.name}`, () => {
    it.effect("counts from 1, adding 1 per increment of the same key and window", () =>
      run(
        Effect.gen(function* () {
          const request = incrementOf(freshKey(), 0)
          expect(yield* increment(request)).toBe(1)
          expect(yield* increment(request)).toBe(2)
          expect(yield* increment({ ...request, now: request.now + 1000 })).toBe(3)
        })
      ))

    it.effect("keeps every key and every window a counter of its own", () =>
      run(
        Effect.gen(function* () {
          const key = freshKey()
          yield* increment(incrementOf(key, 0))
          yield* increment(incrementOf(key, 0))
          expect(yield* increment(incrementOf(`${key}:other`, 0))).toBe(1)
          expect(yield* increment(incrementOf(key, 0))).toBe(3)
          expect(yield* increment(incrementOf(key, 1))).toBe(1)
          expect(yield* increment(incrementOf(key, 1))).toBe(2)
        })
      ))

    it.effect("answers N concurrent increments of one counter with 1..N, each exactly once", () =>
      run(
        Effect.gen(function* () {
          const total = options.concurrency ?? 200
          const request = incrementOf(freshKey(), 0)
          const counts = yield* Effect.all(
            Array.from({ length: total }, () => increment(request)),
            { concurrency: "unbounded" }
          )
          expect([...counts].sort((a, b) => a - b)).toEqual(Array.from({ length: total }, (_, index) => index + 1))
        })
      ))

    it.effect("counts incrementPromise (when the store has one) on the same counters as increment: N mixed concurrent calls answer 1..N", (context) =>
      run(
        Effect.gen(function* () {
          const store = yield* RateLimitStore
          // A store without one (memory, SQLite) has nothing to check here: skipped, not passed.
          if (store.incrementPromise === undefined) return context.skip()
          const promised = store.incrementPromise
          const total = options.concurrency ?? 200
          const request = incrementOf(freshKey(), 0)
          expect(yield* Effect.promise(() => promised(request))).toBe(1)
          const counts = yield* Effect.all(
            Array.from({ length: total - 1 }, (_, index) =>
              index % 2 === 0 ? Effect.promise(() => promised(request)) : store.increment(request)
            ),
            { concurrency: "unbounded" }
          )
          expect([...counts].sort((a, b) => a - b)).toEqual(Array.from({ length: total - 1 }, (_, index) => index + 2))
          expect(yield* Effect.promise(() => promised({ ...request, key: `${request.key}:other` }))).toBe(1)
        })
      ))
  })
}

/** Length of the contract's windows, in ms. */
const WINDOW_MS = 60_000

/** A fixed instant the contract's windows start from (ms since the epoch). */
const BASE = Date.UTC(2026, 0, 1)

/** The increment of `key` in the `window`-th window after {@link BASE}, at its start. */
const incrementOf = (key: string, window: number): RateLimitIncrement => {
  const windowStart = BASE + window * WINDOW_MS
  return { key, windowStart, expiresAt: windowStart + WINDOW_MS, now: windowStart }
}

/** A key no other test, run or process has used. */
const freshKey = (): string => `contract:${randomUUID()}`

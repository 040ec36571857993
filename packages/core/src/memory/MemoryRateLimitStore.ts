import { Effect, Layer } from "effect"
import { RateLimitStore, type RateLimitIncrement, type RateLimitStoreService } from "../storage/RateLimitStore.js"

/**
 * The in-memory {@link RateLimitStoreService}, plus `size()`: how many counters it holds
 * right now (for tests and diagnostics).
 *
 * @category storage
 */
export interface MemoryRateLimitStoreService extends RateLimitStoreService {
  readonly size: () => number
}

/**
 * Builds an in-memory rate-limit store: one `Map` inside this process, so limits are per
 * instance (docs/rate-limits.md: `DEVELOPER_API_RATE_LIMIT_REDIS_DISABLED=1`). Each
 * increment is synchronous, hence atomic. No timer is started: counters of ended windows
 * are dropped by the increments themselves, in one sweep whenever the clock passes the
 * earliest end of a held window (with aligned windows, about once per window length), so
 * memory holds only the counters of current windows, however many organizations or
 * client addresses come and go.
 *
 * @category constructors
 */
export const make = (): MemoryRateLimitStoreService => {
  const counters = new Map<string, { count: number; readonly expiresAt: number }>()
  let nextSweepAt = Number.POSITIVE_INFINITY

  const sweep = (now: number): void => {
    nextSweepAt = Number.POSITIVE_INFINITY
    for (const [name, counter] of counters) {
      if (counter.expiresAt <= now) counters.delete(name)
      else if (counter.expiresAt < nextSweepAt) nextSweepAt = counter.expiresAt
    }
  }

  const increment = (request: RateLimitIncrement): number => {
    if (request.now >= nextSweepAt) sweep(request.now)
    const name = `${request.key}\u0000${request.windowStart}`
    const counter = counters.get(name)
    if (counter !== undefined) return ++counter.count
    counters.set(name, { count: 1, expiresAt: request.expiresAt })
    if (request.expiresAt < nextSweepAt) nextSweepAt = request.expiresAt
    return 1
  }

  return {
    increment: (request) => Effect.sync(() => increment(request)),
    synchronous: true,
    size: () => counters.size
  }
}

/**
 * A Layer providing a fresh in-memory {@link RateLimitStore} each time it is built (see
 * {@link make}).
 *
 * @category layers
 * @example
 * import { Layer } from "effect"
 * import { MemoryRateLimitStore, RateLimiter } from "@switchboard/core"
 *
 * const RateLimiterLive = RateLimiter.layer({ send: { max: 100 } }).pipe(
 *   Layer.provide(MemoryRateLimitStore.layer)
 * )
 */
export const layer: Layer.Layer<RateLimitStore> = Layer.sync(RateLimitStore, make)

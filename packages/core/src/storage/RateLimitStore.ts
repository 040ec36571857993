import { Context, type Effect } from "effect"
import type { StorageError } from "./errors.js"

/**
 * One request to count, as the limiter hands it to the store:
 * - `key`: the counter's name, such as `general:org:<organization id>` or
 *   `general:ip:<address>` (the store adds its own prefix, if any);
 * - `windowStart`: first millisecond of the fixed window (ms since the epoch, a multiple of
 *   the window's length): the same `key` in another window is another counter;
 * - `expiresAt`: end of the window (ms since the epoch); the store may forget the counter
 *   from then on, and must forget it eventually;
 * - `now`: the limiter's current time (Effect `Clock`, ms since the epoch), for stores that
 *   compute a time to live or prune by time.
 *
 * @category storage
 */
export interface RateLimitIncrement {
  readonly key: string
  readonly windowStart: number
  readonly expiresAt: number
  readonly now: number
}

/**
 * Where rate-limit counters live (docs/rate-limits.md). One operation, which must
 * be atomic across every process sharing the store: add 1 to the counter of
 * `key` + `windowStart` (creating it at 1) and return the new count. N concurrent calls on
 * one counter return 1..N, each exactly once. Fails only with {@link StorageError}
 * (operation `"rateLimits.increment"`).
 *
 * Implementations: `MemoryRateLimitStore` (here), `SqliteRateLimitStore`
 * (`@switchboard/storage-sqlite`), `RedisRateLimitStore` (`@switchboard/rate-limit-redis`).
 * `runRateLimitStoreContract` of `@switchboard/storage-contract` checks one.
 *
 * @category storage
 */
export interface RateLimitStoreService {
  readonly increment: (request: RateLimitIncrement) => Effect.Effect<number, StorageError>
  /**
   * `true` when `increment` answers without waiting on I/O: it runs to completion on the
   * calling thread (the memory store), or at the latest at the end of the current turn of
   * the event loop, still on this thread (the SQLite store, which commits the increments
   * of one turn together). The limiter then calls it without
   * its `storeTimeoutMs` timer: a timer cannot interrupt a synchronous call anyway, and
   * racing one costs about 100 µs per request. Leave it unset (the default) for any store
   * that waits on a network or a callback, so a store that does not answer can never hang
   * a request.
   */
  readonly synchronous?: boolean
  /**
   * The same increment as a plain promise, for a store that waits on a network (the
   * PostgreSQL and Redis stores have one): it must count exactly as `increment` does (one
   * counter, 1..N for N calls of either), resolve with the new count, and may reject with
   * anything (the limiter reports it as a `StorageError` of operation
   * `"rateLimits.increment"`). When present, the limiter calls it instead of `increment` and
   * bounds it by `storeTimeoutMs` with one plain timer: racing `increment` against Effect's
   * timer forks two fibers, ~100 µs of CPU a request (docs/benchmarks.md "PostgreSQL
   * `GET /verify`: the rate-limit store's time limit"). Under a `TestClock` the limiter uses
   * `increment`.
   */
  readonly incrementPromise?: (request: RateLimitIncrement) => Promise<number>
}

/**
 * Tag of the {@link RateLimitStoreService}.
 *
 * @category storage
 */
export class RateLimitStore extends Context.Tag("@switchboard/core/RateLimitStore")<
  RateLimitStore,
  RateLimitStoreService
>() {}

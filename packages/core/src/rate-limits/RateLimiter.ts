import { Clock, Context, Duration, Effect, Either, Layer, Option } from "effect"
import type { InvalidInput } from "../model/commonErrors.js"
import { StorageError } from "../storage/errors.js"
import { RateLimited, RateLimitUnavailable } from "../model/rateLimitErrors.js"
import {
  decideRateLimit,
  resolveRateLimitOptions,
  rateLimitWindowAt,
  type RateLimitBucket,
  type RateLimitDecision,
  type RateLimitOptions,
  type RateLimitSettings,
  type RateLimitSubject
} from "../model/rateLimits.js"
import { type RateLimitIncrement, RateLimitStore } from "../storage/RateLimitStore.js"
import { isLiveClock, promiseWithin } from "../internal/time.js"

/**
 * The rate buckets of the domain (docs/rate-limits.md): fixed windows aligned to `floor(now / windowMs)` on Effect's `Clock`, one
 * counter per bucket and subject, kept in a {@link RateLimitStore}; never more than `max`
 * requests accepted per window across every instance sharing the store, while it answers.
 *
 * @category services
 */
export interface RateLimiterService {
  /** The options in force, defaults applied. */
  readonly settings: RateLimitSettings
  /**
   * Counts one request of `subject` in `bucket` (one atomic store increment, bounded by
   * `storeTimeoutMs`) and decides. Succeeds with the decision when the request is within
   * the limit; fails with `RateLimited` when it is over. When the store fails or times
   * out: `fail-open` succeeds with `None` (not counted; a warning is logged, at most once
   * per 10 s with the number of failures since the last one), `fail-closed` fails with
   * `RateLimitUnavailable`.
   */
  readonly consume: (
    bucket: RateLimitBucket,
    subject: RateLimitSubject
  ) => Effect.Effect<Option.Option<RateLimitDecision>, RateLimited | RateLimitUnavailable>
}

/**
 * Tag of the {@link RateLimiterService}. `RateLimiter.layer(options)` needs a
 * {@link RateLimitStore} and fails with `InvalidInput` for invalid options (see
 * `resolveRateLimitOptions`).
 *
 * @category services
 * @example
 * import { Effect, Layer } from "effect"
 * import { MemoryRateLimitStore, RateLimiter } from "@switchboard/core"
 *
 * const program = Effect.flatMap(RateLimiter, (limiter) =>
 *   limiter.consume("send", { kind: "organization", id: "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6a" })
 * )
 * Effect.runPromise(
 *   program.pipe(Effect.provide(RateLimiter.layer({ send: { max: 100, windowMs: 60_000 } })),
 *     Effect.provide(MemoryRateLimitStore.layer))
 * )
 */
export class RateLimiter extends Context.Tag("@switchboard/core/RateLimiter")<RateLimiter, RateLimiterService>() {
  /** Builds the service on the {@link RateLimitStore} in context; `InvalidInput` for bad options. */
  static readonly make = (
    options: RateLimitOptions = {}
  ): Effect.Effect<RateLimiterService, InvalidInput, RateLimitStore> => makeLimiter(options)

  /** A Layer of {@link RateLimiter.make}. */
  static readonly layer = (options: RateLimitOptions = {}): Layer.Layer<RateLimiter, InvalidInput, RateLimitStore> =>
    Layer.effect(RateLimiter, makeLimiter(options))
}

/** Shortest interval between two fail-open warnings, in ms. */
const WARNING_INTERVAL_MS = 10_000

const makeLimiter = (
  options: RateLimitOptions = {}
): Effect.Effect<RateLimiterService, InvalidInput, RateLimitStore> =>
  Effect.gen(function* () {
    const settings = yield* Either.match(resolveRateLimitOptions(options), {
      onLeft: Effect.fail,
      onRight: Effect.succeed
    })
    const store = yield* RateLimitStore
    const timeout = Duration.millis(settings.storeTimeoutMs)
    const warnings = makeWarningThrottle()
    const timedOut = () =>
      new StorageError({
        operation: "rateLimits.increment",
        cause: new Error(`the rate-limit store did not answer within ${settings.storeTimeoutMs} ms`)
      })

    // A plain function returning one Effect, no generator and no span: it runs on every
    // request (docs/benchmarks.md: a traced `Effect.fn` costs ~15–20 µs per call).
    const consume: RateLimiterService["consume"] = (bucket, subject) =>
      Effect.clockWith((clock) => {
        const now = clock.unsafeCurrentTimeMillis()
        const limit = settings[bucket]
        const window = rateLimitWindowAt(now, limit.windowMs)
        const request: RateLimitIncrement = {
          key: keyOf(bucket, subject),
          windowStart: window.start,
          expiresAt: window.end,
          now
        }
        const counted =
          store.synchronous === true
            ? store.increment(request)
            : store.incrementPromise !== undefined && isLiveClock(clock)
              ? promiseWithin(() => store.incrementPromise!(request), settings.storeTimeoutMs, incrementFailed, timedOut)
              : Effect.timeoutFail(store.increment(request), { duration: timeout, onTimeout: timedOut })
        return Effect.matchEffect(counted, {
          onFailure: (error): Effect.Effect<Option.Option<RateLimitDecision>, RateLimitUnavailable> =>
            settings.onStoreError === "fail-closed"
              ? Effect.fail(new RateLimitUnavailable({ cause: error }))
              : Effect.as(warnings.storeFailed(bucket, error), Option.none()),
          onSuccess: (count): Effect.Effect<Option.Option<RateLimitDecision>, RateLimited> => {
            const decision = decideRateLimit(bucket, limit, count, now, window.end)
            if (decision.allowed) return Effect.succeed(Option.some(decision))
            return Effect.fail(
              new RateLimited({
                bucket,
                scope: subject.kind,
                limit: limit.max,
                window_ms: limit.windowMs,
                reset_seconds: decision.resetSeconds,
                retry_after_seconds: decision.retryAfterSeconds
              })
            )
          }
        })
      })

    const service: RateLimiterService = { settings, consume }
    return service
  })

/**
 * The store key of a subject's bucket: `<bucket>:org:<organization id>` or
 * `<bucket>:ip:<address>`, so buckets and subject kinds never share a counter.
 */
/** A rejection of a store's `incrementPromise`, as the `StorageError` `increment` fails with. */
const incrementFailed = (cause: unknown): StorageError =>
  cause instanceof StorageError ? cause : new StorageError({ operation: "rateLimits.increment", cause })

const keyOf = (bucket: RateLimitBucket, subject: RateLimitSubject): string =>
  `${bucket}:${subject.kind === "organization" ? "org" : "ip"}:${subject.id}`

/**
 * Logs store failures under `fail-open` without flooding the log while a store is down:
 * one warning, then at most one per {@link WARNING_INTERVAL_MS} carrying how many
 * failures were not logged in between.
 */
const makeWarningThrottle = () => {
  let lastWarningAt = Number.NEGATIVE_INFINITY
  let unlogged = 0
  return {
    storeFailed: (bucket: RateLimitBucket, error: StorageError) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        if (now - lastWarningAt < WARNING_INTERVAL_MS) {
          unlogged++
          return Effect.void
        }
        lastWarningAt = now
        const skipped = unlogged
        unlogged = 0
        return Effect.logWarning("Rate-limit store failed; request allowed without counting (onStoreError: fail-open)").pipe(
          Effect.annotateLogs({
            bucket,
            operation: error.operation,
            cause: describeCause(error.cause),
            failures_not_logged: skipped
          })
        )
      })
  }
}

const describeCause = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

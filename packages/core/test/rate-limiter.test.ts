import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Exit, Fiber, HashMap, Layer, Logger, Option, TestClock } from "effect"
import {
  DEFAULT_RATE_LIMITS,
  MemoryRateLimitStore,
  RateLimiter,
  RateLimitStore,
  resolveRateLimitOptions,
  StorageError,
  type RateLimitOptions,
  type RateLimitSubject
} from "@switchboard/core"

const acme: RateLimitSubject = { kind: "organization", id: "0190f6b4-7b7e-7c4e-8a5d-000000000001" }
const globex: RateLimitSubject = { kind: "organization", id: "0190f6b4-7b7e-7c4e-8a5d-000000000002" }

/** A limiter on a fresh memory store. */
const memoryLimiter = (options: RateLimitOptions) =>
  RateLimiter.layer(options).pipe(Layer.provide(MemoryRateLimitStore.layer))

/** A limiter whose store always fails (or never answers, with `hang`). */
const brokenLimiter = (options: RateLimitOptions, hang = false) =>
  RateLimiter.layer(options).pipe(
    Layer.provide(
      Layer.succeed(RateLimitStore, {
        increment: () =>
          hang ? Effect.never : Effect.fail(new StorageError({ operation: "rateLimits.increment", cause: new Error("down") }))
      })
    )
  )

/** Consumes `count` requests and returns the decisions (failing on the first refusal). */
const consumeMany = (count: number, subject = acme, bucket: "general" | "send" = "general") =>
  Effect.flatMap(RateLimiter, (limiter) =>
    Effect.forEach(Array.from({ length: count }), () => Effect.map(limiter.consume(bucket, subject), Option.getOrThrow))
  )

const refusal = (subject = acme, bucket: "general" | "send" = "general") =>
  Effect.flatMap(RateLimiter, (limiter) => Effect.flip(limiter.consume(bucket, subject)))

/** Collects the log lines written while `effect` runs. */
const captureLogs = () => {
  const lines: Array<{ level: string; message: unknown; annotations: Record<string, unknown> }> = []
  const logger = Logger.make(({ logLevel, message, annotations }) => {
    lines.push({ level: logLevel.label, message, annotations: Object.fromEntries(HashMap.toEntries(annotations)) })
  })
  return { lines, layer: Logger.replace(Logger.defaultLogger, logger) }
}

describe("RateLimiter (docs/rate-limits.md)", () => {
  it.effect("accepts max requests per window, counting remaining down, then refuses with RateLimited", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(Date.UTC(2026, 0, 1, 10, 0, 0))
      const decisions = yield* consumeMany(3)
      expect(decisions.map((d) => [d.allowed, d.limit, d.remaining])).toEqual([
        [true, 3, 2],
        [true, 3, 1],
        [true, 3, 0]
      ])
      expect(decisions[0]).toMatchObject({ bucket: "general", resetSeconds: 60, retryAfterSeconds: 0 })
      const refused = yield* refusal()
      expect(refused._tag).toBe("RateLimited")
      if (refused._tag !== "RateLimited") return
      expect(refused).toMatchObject({ bucket: "general", scope: "organization", limit: 3, window_ms: 60_000 })
      expect(refused.retry_after_seconds).toBe(60)
      expect(refused.decision).toEqual({
        bucket: "general",
        allowed: false,
        limit: 3,
        remaining: 0,
        resetSeconds: 60,
        retryAfterSeconds: 60
      })
      expect(refused.message).toMatch(/^Too many requests for the organization/)
      // A refused request keeps being refused: refusals are counted but never reset anything.
      expect((yield* refusal())._tag).toBe("RateLimited")
    }).pipe(Effect.provide(memoryLimiter({ general: { max: 3, windowMs: 60_000 } }))))

  it.effect("aligns windows to floor(now / window): reset counts whole seconds to the boundary, rounded up", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(Date.UTC(2026, 0, 1, 10, 0, 58, 500))
      const [first] = yield* consumeMany(2)
      expect(first?.resetSeconds).toBe(2)
      const refused = yield* refusal()
      expect(refused._tag === "RateLimited" && refused.retry_after_seconds).toBe(2)
      // One millisecond before the boundary the window is still full ...
      yield* TestClock.setTime(Date.UTC(2026, 0, 1, 10, 0, 59, 999))
      const late = yield* refusal()
      expect(late._tag === "RateLimited" && late.retry_after_seconds).toBe(1)
      // ... and at the boundary a new window accepts again, with a full minute to go.
      yield* TestClock.setTime(Date.UTC(2026, 0, 1, 10, 1, 0))
      const [fresh] = yield* consumeMany(1)
      expect(fresh).toMatchObject({ remaining: 1, resetSeconds: 60 })
    }).pipe(Effect.provide(memoryLimiter({ general: { max: 2, windowMs: 60_000 } }))))

  it.effect("keeps buckets, organizations and subject kinds apart: a send never counts in general", () =>
    Effect.gen(function* () {
      yield* consumeMany(2, acme, "send")
      expect((yield* refusal(acme, "send"))._tag).toBe("RateLimited")
      const general = yield* consumeMany(3, acme, "general")
      expect(general.map((d) => d.remaining)).toEqual([2, 1, 0])
      expect((yield* consumeMany(2, globex, "send")).map((d) => d.remaining)).toEqual([1, 0])
      const client: RateLimitSubject = { kind: "client", id: acme.id }
      expect((yield* consumeMany(1, client))[0]?.remaining).toBe(2)
      const refused = yield* refusal(acme, "send")
      expect(refused._tag === "RateLimited" && refused.message).toMatch(/send requests/)
    }).pipe(Effect.provide(memoryLimiter({ general: { max: 3 }, send: { max: 2 } }))))

  it.effect("says 'this client' when the subject is a client address", () =>
    Effect.gen(function* () {
      const client: RateLimitSubject = { kind: "client", id: "203.0.113.7" }
      yield* consumeMany(1, client)
      const refused = yield* refusal(client)
      expect(refused._tag === "RateLimited" && [refused.scope, refused.message]).toEqual([
        "client",
        expect.stringMatching(/^Too many requests for this client/)
      ])
    }).pipe(Effect.provide(memoryLimiter({ general: { max: 1 } }))))

  it.effect("defaults to docs/rate-limits.md: general 5000 and send 500 per hour, fail-open, 1000 ms store timeout", () =>
    Effect.gen(function* () {
      const limiter = yield* RateLimiter
      expect(limiter.settings).toEqual({
        general: { max: 5000, windowMs: 3_600_000 },
        send: { max: 500, windowMs: 3_600_000 },
        onStoreError: "fail-open",
        storeTimeoutMs: 1000
      })
      expect(limiter.settings).toEqual(DEFAULT_RATE_LIMITS)
      const [decision] = yield* consumeMany(1, acme, "send")
      expect(decision).toMatchObject({ limit: 500, remaining: 499, resetSeconds: 3600 })
    }).pipe(Effect.provide(memoryLimiter({}))))

  it("keeps the defaults of fields left out or undefined, and rejects every bad field at once", () => {
    const resolved = resolveRateLimitOptions({ general: { max: 10, windowMs: undefined }, send: { windowMs: 1000 } })
    expect(Either.getOrThrow(resolved)).toMatchObject({
      general: { max: 10, windowMs: 3_600_000 },
      send: { max: 500, windowMs: 1000 }
    })
    const invalid = resolveRateLimitOptions({
      general: { max: 0, windowMs: 1.5 },
      send: { max: -1 },
      storeTimeoutMs: 0,
      onStoreError: "ignore" as never
    })
    expect(Either.isLeft(invalid) && invalid.left.issues.map((issue) => issue.field)).toEqual([
      "general.max",
      "general.windowMs",
      "send.max",
      "storeTimeoutMs",
      "onStoreError"
    ])
  })

  it.effect("fails to build with InvalidInput for invalid options", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(Layer.build(memoryLimiter({ send: { max: 0 } })))
      expect(error._tag).toBe("InvalidInput")
    }).pipe(Effect.scoped))
})

describe("RateLimiter when the store fails (onStoreError)", () => {
  it.effect("fail-open lets requests through uncounted and logs one warning per 10 s with the failures in between", () => {
    const logs = captureLogs()
    return Effect.gen(function* () {
      const limiter = yield* RateLimiter
      for (let i = 0; i < 3; i++) expect(yield* limiter.consume("general", acme)).toEqual(Option.none())
      const warnings = () => logs.lines.filter((line) => line.level === "WARN")
      expect(warnings()).toHaveLength(1)
      expect(warnings()[0]?.annotations).toMatchObject({ bucket: "general", cause: "down", failures_not_logged: 0 })
      yield* TestClock.adjust("10 seconds")
      yield* limiter.consume("send", acme)
      expect(warnings()).toHaveLength(2)
      expect(warnings()[1]?.annotations).toMatchObject({ bucket: "send", failures_not_logged: 2 })
    }).pipe(Effect.provide(brokenLimiter({ general: { max: 1 } })), Effect.provide(logs.layer))
  })

  it.effect("fail-closed refuses with RateLimitUnavailable carrying the store's failure", () =>
    Effect.gen(function* () {
      const error = yield* refusal()
      expect(error._tag).toBe("RateLimitUnavailable")
      expect(error._tag === "RateLimitUnavailable" && (error.cause as StorageError).operation).toBe("rateLimits.increment")
    }).pipe(Effect.provide(brokenLimiter({ onStoreError: "fail-closed" }))))

  it.effect("bounds a store that never answers by storeTimeoutMs (fail-open: allowed uncounted)", () =>
    Effect.gen(function* () {
      const limiter = yield* RateLimiter
      const fiber = yield* Effect.fork(limiter.consume("general", acme))
      yield* TestClock.adjust("249 millis")
      expect(Option.isNone(yield* Fiber.poll(fiber))).toBe(true)
      yield* TestClock.adjust("1 millis")
      expect(yield* Fiber.join(fiber)).toEqual(Option.none())
    }).pipe(Effect.provide(brokenLimiter({ storeTimeoutMs: 250 }, true))))

  it.effect("bounds a store that never answers by storeTimeoutMs (fail-closed: 503)", () =>
    Effect.gen(function* () {
      const limiter = yield* RateLimiter
      const fiber = yield* Effect.fork(Effect.flip(limiter.consume("send", acme)))
      yield* TestClock.adjust("250 millis")
      const error = yield* Fiber.join(fiber)
      expect(error._tag).toBe("RateLimitUnavailable")
      expect(String((error as { cause: StorageError }).cause.cause)).toMatch(/did not answer within 250 ms/)
    }).pipe(Effect.provide(brokenLimiter({ storeTimeoutMs: 250, onStoreError: "fail-closed" }, true))))

  it.effect("calls a store marked synchronous without the storeTimeoutMs timer; the memory store is one", () =>
    Effect.gen(function* () {
      const limiter = yield* RateLimiter
      const fiber = yield* Effect.fork(limiter.consume("general", acme))
      yield* TestClock.adjust("250 millis")
      expect(Option.isNone(yield* Fiber.poll(fiber))).toBe(true)
      yield* TestClock.adjust("50 millis")
      expect(Option.map(yield* Fiber.join(fiber), (decision) => decision.remaining)).toEqual(Option.some(4999))
      const memory = yield* Effect.provide(RateLimitStore, MemoryRateLimitStore.layer)
      expect(memory.synchronous).toBe(true)
    }).pipe(
      Effect.provide(
        RateLimiter.layer({ storeTimeoutMs: 250 }).pipe(
          Layer.provide(
            Layer.succeed(RateLimitStore, {
              // Slower than the timeout; marked synchronous, so the limiter waits for it.
              increment: () => Effect.as(Effect.sleep("300 millis"), 1),
              synchronous: true
            })
          )
        )
      )
    ))

  describe("a store with incrementPromise, on the live clock: one plain timer, no fibers", () => {
    /** A limiter on a store counting its calls; `answer` is its incrementPromise's promise. */
    const promisedLimiter = (options: RateLimitOptions, answer: () => Promise<number>) => {
      const calls = { increment: 0, incrementPromise: 0 }
      const layer = RateLimiter.layer(options).pipe(
        Layer.provide(
          Layer.succeed(RateLimitStore, {
            increment: () => Effect.sync(() => ++calls.increment),
            incrementPromise: () => {
              calls.incrementPromise++
              return answer()
            }
          })
        )
      )
      return { calls, layer }
    }

    it.live("counts through incrementPromise, not increment", () => {
      let count = 0
      const { calls, layer } = promisedLimiter({}, async () => ++count)
      return Effect.gen(function* () {
        const decisions = yield* consumeMany(3)
        expect(decisions.map((decision) => decision.remaining)).toEqual([4999, 4998, 4997])
        expect(calls).toEqual({ increment: 0, incrementPromise: 3 })
      }).pipe(Effect.provide(layer))
    })

    it.live("bounds a promise that never settles by storeTimeoutMs of real time (fail-closed: the timeout as the cause)", () => {
      const { layer } = promisedLimiter({ storeTimeoutMs: 30, onStoreError: "fail-closed" }, () => new Promise<number>(() => {}))
      return Effect.gen(function* () {
        const started = Date.now()
        const error = yield* refusal()
        expect(Date.now() - started).toBeGreaterThanOrEqual(25)
        expect(error._tag).toBe("RateLimitUnavailable")
        expect(String((error as { cause: StorageError }).cause.cause)).toMatch(/did not answer within 30 ms/)
      }).pipe(Effect.provide(layer))
    })

    it.live("reports a rejection as the StorageError of rateLimits.increment (fail-open: allowed uncounted)", () => {
      const { layer } = promisedLimiter({}, () => Promise.reject(new Error("connection reset")))
      return Effect.gen(function* () {
        const limiter = yield* RateLimiter
        expect(yield* limiter.consume("general", acme)).toEqual(Option.none())
        const closed = promisedLimiter({ onStoreError: "fail-closed" }, () => Promise.reject(new Error("connection reset")))
        const error = yield* Effect.provide(refusal(), closed.layer)
        const cause = (error as { cause: StorageError }).cause
        expect(cause).toBeInstanceOf(StorageError)
        expect(cause.operation).toBe("rateLimits.increment")
        expect(String(cause.cause)).toMatch(/connection reset/)
      }).pipe(Effect.provide(layer))
    })

    it.live("a wait interrupted before its timer ends interrupted", () => {
      const { layer } = promisedLimiter({ storeTimeoutMs: 1_000 }, () => new Promise<number>(() => {}))
      return Effect.gen(function* () {
        const limiter = yield* RateLimiter
        const fiber = yield* Effect.fork(limiter.consume("general", acme))
        yield* Effect.sleep("5 millis")
        yield* Fiber.interrupt(fiber)
        expect(Exit.isInterrupted(yield* Fiber.await(fiber))).toBe(true)
      }).pipe(Effect.provide(layer))
    })

    it.effect("uses increment and Effect's timer under a TestClock", () => {
      const { calls, layer } = promisedLimiter({}, async () => 1)
      return Effect.gen(function* () {
        yield* consumeMany(2)
        expect(calls).toEqual({ increment: 2, incrementPromise: 0 })
      }).pipe(Effect.provide(layer))
    })
  })
})

import { Clock, Duration, Effect } from "effect"
import type { IssueCollector } from "./validation.js"

/** The current time from Effect's `Clock`, as an ISO 8601 UTC string. */
export const nowIso: Effect.Effect<string> = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())

/**
 * `send_at` (a broadcast's or a send's): an RFC 3339 / ISO 8601 date-time with an offset, as
 * epoch ms; `null` when absent (`undefined` or `null`); else an issue naming `send_at` and `null`.
 */
export const readSendAt = (collector: IssueCollector, value: unknown): number | null => {
  if (value === undefined || value === null) return null
  const iso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/i
  const ms = typeof value === "string" && iso.test(value) ? Date.parse(value) : Number.NaN
  if (!Number.isFinite(ms)) {
    collector.add("invalid_format", "send_at", "send_at must be an ISO 8601 date-time with an offset, e.g. 2026-12-01T09:00:00Z")
    return null
  }
  return ms
}

/** The class of Effect's live clock (`Clock.make()`), told apart from a test clock by it. */
const LIVE_CLOCK_CLASS = Clock.make().constructor

/**
 * Effect's live clock with its sleeps on timers that do not keep the process alive
 * (`unref`): the clock of the loops a host runs beside its own server (the dispatchers of
 * `@switchboard/http-adapter`), so that a host's process can end while they sleep. Its
 * time is the wall clock's; {@link isLiveClock} counts it as live.
 *
 * @category time
 */
export const hostClock: Clock.Clock = (() => {
  const base = Clock.make()
  return {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: () => base.unsafeCurrentTimeMillis(),
    currentTimeMillis: base.currentTimeMillis,
    unsafeCurrentTimeNanos: () => base.unsafeCurrentTimeNanos(),
    currentTimeNanos: base.currentTimeNanos,
    sleep: (duration) =>
      Effect.async<void>((resume) => {
        const timer = setTimeout(() => resume(Effect.void), Duration.toMillis(duration))
        timer.unref()
        return Effect.sync(() => clearTimeout(timer))
      })
  }
})()

/**
 * Whether `clock` runs on real time: Effect's live clock or {@link hostClock}, whose
 * sleeps are `setTimeout` of real milliseconds (and not a `TestClock`, whose time moves
 * only when a test moves it). Where it is, a time limit can be one plain timer instead of a
 * sleeping fiber ({@link promiseWithin}, the send queue's wait for Meta's answer).
 *
 * @category time
 */
export const isLiveClock = (clock: Clock.Clock): boolean => clock === hostClock || clock.constructor === LIVE_CLOCK_CLASS

/**
 * Runs `run` and waits for its promise for at most `timeoutMs` (ms, a plain `setTimeout`),
 * then calls exactly one of: `onValue(value)`; `onRejected(cause)` when it rejects (or
 * throws); `onTimeout()` when the time passes first, the promise's late answer then
 * ignored. Answers a function that stops the wait (the timer cleared, nothing called).
 * The plain form of {@link promiseWithin}, for code outside a fiber (the send queue's
 * message without a fiber: docs/benchmarks.md "A message without a fiber").
 */
export const callWithin = <A>(
  run: () => Promise<A>,
  timeoutMs: number,
  onValue: (value: A) => void,
  onRejected: (cause: unknown) => void,
  onTimeout: () => void
): (() => void) => {
  let settled = false
  const stop = (): boolean => {
    if (settled) return false
    settled = true
    clearTimeout(timer)
    return true
  }
  const timer = setTimeout(() => stop() && onTimeout(), timeoutMs)
  let answer: Promise<A>
  try {
    answer = run()
  } catch (cause) {
    if (stop()) onRejected(cause)
    return stop
  }
  answer.then(
    (value) => stop() && onValue(value),
    (cause) => stop() && onRejected(cause)
  )
  return stop
}

/**
 * Runs `run` and waits for its promise for at most `timeoutMs` (ms, a plain `setTimeout`):
 * its value; `onRejected(cause)` when it rejects (or throws); `onTimeout()` when the time
 * passes first, the promise's late answer then ignored. No fiber is forked: one timer per
 * call, where `Effect.timeoutFail` races two fibers (~100 µs of CPU a call,
 * docs/benchmarks.md "PostgreSQL `GET /verify`: the rate-limit store's time limit"). An
 * interruption clears the timer and ignores the answer. Only for the live clock
 * ({@link isLiveClock}): the timer does not follow a `TestClock`.
 */
export const promiseWithin = <A, E>(
  run: () => Promise<A>,
  timeoutMs: number,
  onRejected: (cause: unknown) => E,
  onTimeout: () => E
): Effect.Effect<A, E> =>
  Effect.async<A, E>((resume) => {
    const stop = callWithin(
      run,
      timeoutMs,
      (value) => resume(Effect.succeed(value)),
      (cause) => resume(Effect.fail(onRejected(cause))),
      () => resume(Effect.fail(onTimeout()))
    )
    return Effect.sync(stop)
  })

import { Cause, Duration, Effect, Exit, Fiber } from "effect"
import type { StorageHealth } from "@switchboard/core"

/**
 * One check of a {@link HealthReport}: `ok`, and when it failed a short plain `detail`
 * saying why (for example `"no answer within 1000 ms"`), never a secret, a connection
 * string or a driver's message (docs/http-adapter.md "Health").
 *
 * @category health
 */
export interface HealthCheck {
  readonly ok: boolean
  readonly detail?: string
}

/**
 * The storage check of a {@link HealthReport}: a {@link HealthCheck} with `duration_ms`,
 * how long the store took to answer `Storage.health()` (or had been waiting when the check
 * gave up), in whole milliseconds; absent when the store was not asked (not open yet,
 * failed to open, stopped).
 *
 * @category health
 */
export interface StorageHealthCheck extends HealthCheck {
  readonly duration_ms?: number
}

/**
 * What `health()` answers (docs/http-adapter.md "Health"): `status` is `"ok"` when every
 * check passed, else `"degraded"`; `checks` holds the three checks:
 * - `storage`: the store answered `Storage.health()` within 1 000 ms;
 * - `migrations`: the store's schema is the version this code expects (failed, with
 *   detail `"unknown: storage did not answer"`, when the storage check failed);
 * - `dispatchers`: each dispatch loop this handler runs ended a pass within the last 30 s
 *   (or three poll intervals, when that is longer); loops switched off are not checked.
 *
 * @category health
 * @example
 * const report = await handler.health()
 * // { status: "ok", checks: { storage: { ok: true, duration_ms: 1 }, migrations: { ok: true }, dispatchers: { ok: true } } }
 * if (report.status !== "ok") console.warn(report.checks)
 */
export interface HealthReport {
  readonly status: "ok" | "degraded"
  readonly checks: {
    readonly storage: StorageHealthCheck
    readonly migrations: HealthCheck
    readonly dispatchers: HealthCheck
  }
}

/** The longest `health()` waits for the store, in milliseconds. @internal */
export const STORAGE_HEALTH_TIMEOUT_MS = 1_000

/** How long a running dispatch loop may go without ending a pass, at least, in milliseconds. @internal */
export const DISPATCH_PASS_MAX_AGE_MS = 30_000

/**
 * Where a handler (or a dispatcher process) stands: its store still opening, open since
 * `at` (epoch ms), failed to open, or stopped (`dispose()` called).
 *
 * @internal
 */
export type HealthPhase =
  | { readonly _tag: "starting" }
  | { readonly _tag: "ready"; readonly at: number }
  | { readonly _tag: "failed" }
  | { readonly _tag: "stopped" }

/**
 * A dispatch loop the handler runs: its name (as in `dispatch`) and how long it may go
 * without ending a pass, in milliseconds.
 *
 * @internal
 */
export interface HealthLoop {
  readonly name: "webhooks" | "messages" | "templates"
  readonly maxPassAgeMs: number
}

/**
 * What {@link makeHealthCheck} reads: `askStorage` starts one `Storage.health()` call in
 * the handler's runtime (its fiber); `phase`; the `loops` it runs and when each last ended
 * a pass (`lastPassesEndedAt`, as the dispatchers record it); `now` (epoch ms, default
 * `Date.now`); `storageTimeoutMs` (default {@link STORAGE_HEALTH_TIMEOUT_MS}). Tests pass
 * their own `now` and pass times: the seam for a stopped loop.
 *
 * @internal
 */
export interface HealthSources {
  readonly askStorage: () => Fiber.RuntimeFiber<StorageHealth, unknown>
  readonly phase: () => HealthPhase
  readonly loops: ReadonlyArray<HealthLoop>
  readonly lastPassesEndedAt: () => { readonly webhooks: Date | null; readonly messages: Date | null; readonly templates?: Date | null }
  readonly now?: () => number
  readonly storageTimeoutMs?: number
}

/**
 * The `health()` of {@link HealthSources}, which never rejects and answers within about
 * `storageTimeoutMs`, and `close()`, which interrupts a store call still waiting.
 *
 * At most one `Storage.health()` call is in flight: a `health()` made while one is
 * waiting shares it and gives up when that call is `storageTimeoutMs` old, so a store that
 * hangs is not sent one more query per probe.
 *
 * @internal
 */
export const makeHealthCheck = (
  sources: HealthSources
): { readonly health: () => Promise<HealthReport>; readonly close: () => void } => {
  const now = sources.now ?? Date.now
  const timeoutMs = sources.storageTimeoutMs ?? STORAGE_HEALTH_TIMEOUT_MS
  let inFlight: { readonly fiber: Fiber.RuntimeFiber<StorageHealth, unknown>; readonly startedAt: number } | undefined

  const storageCall = () => {
    if (inFlight !== undefined) return inFlight
    const call = { fiber: sources.askStorage(), startedAt: now() }
    inFlight = call
    call.fiber.addObserver(() => {
      if (inFlight === call) inFlight = undefined
    })
    return call
  }

  const askStorage: Effect.Effect<StorageChecks> = Effect.suspend(() => {
    const call = storageCall()
    const waitMs = Math.max(0, call.startedAt + timeoutMs - now())
    return Fiber.join(call.fiber).pipe(
      Effect.timeout(Duration.millis(waitMs)),
      Effect.exit,
      Effect.map((exit) => storageChecksOf(exit, Math.max(0, Math.round(now() - call.startedAt)), timeoutMs))
    )
  })

  const health = async (): Promise<HealthReport> => {
    try {
      const phase = sources.phase()
      const storage = phase._tag === "ready" ? await Effect.runPromise(askStorage) : notAsked(phase)
      const dispatchers = dispatchersCheck(sources, sources.phase(), now())
      const ok = storage.storage.ok && storage.migrations.ok && dispatchers.ok
      return { status: ok ? "ok" : "degraded", checks: { ...storage, dispatchers } }
    } catch {
      // Not expected (every failure above is a value); a health check must still answer.
      return {
        status: "degraded",
        checks: { storage: { ok: false, detail: "the check failed" }, migrations: UNKNOWN, dispatchers: { ok: false, detail: "the check failed" } }
      }
    }
  }

  const close = () => {
    const call = inFlight
    inFlight = undefined
    if (call !== undefined) Effect.runFork(Fiber.interrupt(call.fiber))
  }

  return { health, close }
}

type StorageChecks = Pick<HealthReport["checks"], "storage" | "migrations">

/** The migrations check when the store gave no answer. */
const UNKNOWN: HealthCheck = { ok: false, detail: "unknown: storage did not answer" }

/** The storage and migrations checks when the store is not asked (`phase` is not `ready`). */
const notAsked = (phase: HealthPhase): StorageChecks => ({
  storage: { ok: false, detail: phase._tag === "starting" ? "starting: the store is not open yet" : phase._tag === "failed" ? "the store could not be opened" : "stopped" },
  migrations: UNKNOWN
})

/**
 * The storage and migrations checks from how the store's call ended: its answer, a
 * timeout, a `StorageError` (named by its operation only: its cause may carry a
 * connection string) or anything else.
 */
const storageChecksOf = (
  exit: Exit.Exit<StorageHealth, unknown>,
  durationMs: number,
  timeoutMs: number
): StorageChecks => {
  if (Exit.isSuccess(exit)) {
    const answer = exit.value
    return {
      storage: { ok: true, duration_ms: durationMs },
      migrations: answer.migrations_current
        ? { ok: true }
        : { ok: false, detail: answer.detail ?? "the schema is not the version this code expects" }
    }
  }
  const failure = Cause.failureOption(exit.cause)
  const error = failure._tag === "Some" ? failure.value : undefined
  const detail = Cause.isTimeoutException(error)
    ? `no answer within ${timeoutMs} ms`
    : isStorageError(error)
      ? `the store failed (${error.operation})`
      : "the store's check failed"
  return { storage: { ok: false, detail, duration_ms: durationMs }, migrations: UNKNOWN }
}

const isStorageError = (error: unknown): error is { readonly operation: string } =>
  typeof error === "object" && error !== null && (error as { _tag?: unknown })._tag === "StorageError" &&
  typeof (error as { operation?: unknown }).operation === "string"

/**
 * The dispatchers check at `now`: each loop of `sources.loops` ended a pass within its
 * `maxPassAgeMs` (counted from the store's opening before its first pass).
 */
const dispatchersCheck = (sources: HealthSources, phase: HealthPhase, now: number): HealthCheck => {
  if (sources.loops.length === 0) return { ok: true }
  if (phase._tag === "starting") return { ok: false, detail: "starting: the loops start once the store is open" }
  if (phase._tag === "failed") return { ok: false, detail: "not running: the store could not be opened" }
  if (phase._tag === "stopped") return { ok: false, detail: "stopped" }
  const ended = sources.lastPassesEndedAt()
  const late: Array<string> = []
  for (const loop of sources.loops) {
    const endedAt = ended[loop.name]?.getTime() ?? null
    const ageMs = now - (endedAt ?? phase.at)
    if (ageMs <= loop.maxPassAgeMs) continue
    const seconds = Math.floor(ageMs / 1_000)
    late.push(
      endedAt === null
        ? `${loop.name} loop ended no pass in the ${seconds} s since the store opened`
        : `${loop.name} loop ended no pass for ${seconds} s`
    )
  }
  return late.length === 0 ? { ok: true } : { ok: false, detail: late.join("; ") }
}

/**
 * How long a loop polling every `pollIntervalMs` may go without ending a pass:
 * {@link DISPATCH_PASS_MAX_AGE_MS}, or three poll intervals when that is longer.
 *
 * @internal
 */
export const maxPassAgeOf = (pollIntervalMs: number | undefined): number =>
  Math.max(DISPATCH_PASS_MAX_AGE_MS, 3 * (pollIntervalMs ?? 0))

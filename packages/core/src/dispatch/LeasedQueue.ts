import { Cause, Clock, Context, Effect, Exit, FiberSet, Option, Ref } from "effect"
import { hostClock, isLiveClock } from "../internal/time.js"
import { describeCause } from "../internal/describeCause.js"
import type { DispatchWakeService } from "./DispatchWake.js"

/**
 * The seam of the leased-dispatch loop (docs/webhooks.md "Delivery and the dispatcher"):
 * a durable queue whose due work is claimed under a lease, run, and recorded by the lease
 * holder only. Webhook deliveries are its first instance.
 *
 * - `claim(now, leaseUntil, limit)`: up to `limit` jobs due at `now` (epoch milliseconds),
 *   each leased to this caller until `leaseUntil` (epoch milliseconds) atomically, so two
 *   callers never hold one job at once; the lease token travels inside the job;
 * - `run(job)`: does the work (an attempt) and answers its outcome; a failure leaves the
 *   job leased until its lease ends, then it is claimed again;
 * - `record(job, outcome)`: writes the outcome and the job's next state only while the
 *   job's lease still holds: `true`, else nothing is written and `false` (the lease ended
 *   and another caller took the job over);
 * - `dueAgainAt(outcome)` (optional): when the job is due again after a recorded outcome
 *   (epoch milliseconds), or `null` when it is settled; the loop wakes then;
 * - `renew(job, leaseUntil)` (optional): extends the job's lease to `leaseUntil` (epoch
 *   milliseconds) while it still holds: `true`, else `false` (another caller took the job
 *   over). With it, a run longer than a third of the lease keeps its lease: the loop
 *   renews every third of the lease while the job runs, and stops the run (nothing
 *   recorded, the job ends `LeaseEnded`) as soon as a renewal answers `false` or fails;
 * - `nextDueAt(now)` (optional): the earliest due time of the queue's waiting work
 *   (epoch milliseconds) or `null` when nothing waits, for a queue that can tell;
 * - `startAt(job)` (optional): when the loop starts a claimed job's run (epoch
 *   milliseconds), or `null` for at once: until then the job waits as plain data, without
 *   a fiber of its own (the send queue starts each message shortly before its pacing
 *   slot, so that the hundreds it holds ahead of their slots do not each keep a fiber
 *   alive through the garbage collector's scavenges: docs/benchmarks.md "Outbound dispatch");
 * - `startPlain(job, host)` (optional): begins a claimed job without a fiber, when the
 *   queue can tell it needs none (the send queue's common message, on a live clock:
 *   docs/benchmarks.md "A message without a fiber"): `true` when it took the job, which then
 *   ends through `host` ({@link PlainJobHost}); `false` runs it in a fiber as any other.
 *   Not called while {@link LeasedJobSpans} is on (a span needs the job's fiber);
 * - `name`: the queue's name in log lines;
 * - `span` (optional): the name and attributes of the root span each job runs in when
 *   {@link LeasedJobSpans} is on (tracing, docs/http-adapter.md "Tracing"); absent, the
 *   span is named `<name> job` with no attributes.
 *
 * @category dispatch
 */
export interface LeasedQueue<J, O, E = never, R = never> {
  readonly name: string
  readonly claim: (now: number, leaseUntil: number, limit: number) => Effect.Effect<ReadonlyArray<J>, E, R>
  readonly run: (job: J) => Effect.Effect<O, E, R>
  readonly record: (job: J, outcome: O) => Effect.Effect<boolean, E, R>
  readonly dueAgainAt?: (outcome: O) => number | null
  readonly renew?: (job: J, leaseUntil: number) => Effect.Effect<boolean, E, R>
  readonly nextDueAt?: (now: number) => Effect.Effect<number | null, E, R>
  readonly startAt?: (job: J) => number | null
  readonly startPlain?: (job: J, host: PlainJobHost<J, O, E, R>) => boolean
  readonly span?: {
    readonly name: string
    readonly attributes: (job: J) => Readonly<Record<string, string | number>>
  }
}

/**
 * How a job begun by `LeasedQueue.startPlain` ends, given by the loop that runs it. Each job
 * calls exactly one of `recorded`, `abandon`, `continueWith` and `endWith`, once:
 * - `recorded(outcome, held)`: its outcome was recorded (`held`) or not (`false`: the lease
 *   had ended: `Lost`);
 * - `abandoned()`: whether the loop's drain gave up on its jobs (a shutdown past
 *   `drainMs`): a job that has not yet recorded then calls `abandon()` (nothing recorded,
 *   handed out again when its lease ends, as a fiber's interrupted attempt);
 * - `continueWith(job, outcome)`: the rest of the job in a fiber of the loop, as a fiber's
 *   job goes on: `outcome` (interruptible by the drain), then `record`;
 * - `endWith(rest)`: the rest of the job in a fiber of the loop: `rest` answers its end
 *   (what follows a record the job made itself); a failure of either is logged and ends
 *   the job `Failed`, as a fiber's.
 *
 * @category dispatch
 */
export interface PlainJobHost<J, O, E = never, R = never> {
  readonly recorded: (outcome: O, held: boolean) => void
  readonly abandoned: () => boolean
  readonly abandon: () => void
  readonly continueWith: (job: J, outcome: Effect.Effect<O, E, R>) => void
  readonly endWith: (rest: Effect.Effect<LeasedJobEnd<O>, E, R>) => void
}

/**
 * Whether each claimed job of a {@link LeasedQueue} runs in a root span of its own
 * (`queue.span`), so that its storage and provider calls are that span's children
 * (docs/http-adapter.md "Tracing"). Default `false`: no span, nothing added to a job; a
 * handler with tracing on provides `true`.
 *
 * @category dispatch
 */
export class LeasedJobSpans extends Context.Reference<LeasedJobSpans>()("@switchboard/core/LeasedJobSpans", {
  defaultValue: (): boolean => false
}) {}

/**
 * What a dispatcher's shutdown drain allows beyond the timeout of one attempt, in ms: time
 * for a pacing slot's wait and for the record (docs/messaging.md "Stopping").
 *
 * @category dispatch
 */
export const DRAIN_MARGIN_MS = 2_000

/**
 * How one claimed job ended: its outcome `Recorded`; `Lost` (the lease had ended, nothing
 * was recorded); `LeaseEnded` (a renewal of its lease answered `false` or failed, so its
 * run was stopped and nothing was recorded: logged); or `Failed` (running or recording it
 * failed: logged, and the job is claimed again once its lease ends).
 *
 * @category dispatch
 */
export type LeasedJobEnd<O> =
  | { readonly _tag: "Recorded"; readonly outcome: O }
  | { readonly _tag: "Lost"; readonly outcome: O }
  | { readonly _tag: "LeaseEnded" }
  | { readonly _tag: "Failed" }

/**
 * After this many passes in a row that found nothing to do and were not woken, an idle loop
 * sleeps {@link IDLE_POLL_INTERVAL_MS} between passes instead of its poll interval
 * (docs/deployment.md "An idle server").
 *
 * @category dispatch
 */
export const IDLE_PASSES_BEFORE_BACKOFF = 10

/**
 * The poll interval of a loop idle for {@link IDLE_PASSES_BEFORE_BACKOFF} passes, in ms (a
 * loop whose own interval is longer keeps it). A wake of the process, a job's end and a
 * known due time end the sleep at once, as before; only work another process created and
 * did not announce here waits up to this long (far inside the health check's 30 s).
 *
 * @category dispatch
 */
export const IDLE_POLL_INTERVAL_MS = 5_000

/**
 * The idle back-off of a polling loop: `pollMs()` is `pollIntervalMs` until
 * {@link IDLE_PASSES_BEFORE_BACKOFF} idle passes in a row were noted (`idle()`), then
 * {@link IDLE_POLL_INTERVAL_MS} (or `pollIntervalMs` when longer), until `busy()` (a pass
 * that found work, or a wake) starts the count again. Shared by the leased loops and the
 * broadcasts' starter.
 *
 * @internal
 */
export const makeIdleBackoff = (pollIntervalMs: number) => {
  let idlePasses = 0
  return {
    idle: (): void => void idlePasses++,
    busy: (): void => void (idlePasses = 0),
    pollMs: (): number => (idlePasses >= IDLE_PASSES_BEFORE_BACKOFF ? Math.max(pollIntervalMs, IDLE_POLL_INTERVAL_MS) : pollIntervalMs)
  }
}

/**
 * Options of {@link runLeasedQueue}: `leaseMs`, how long a claim holds a job (ms, longer
 * than the longest run); `concurrency`, the most jobs in flight at once (≥ 1);
 * `pollIntervalMs`, the longest sleep when nothing is known to be due (ms; after
 * {@link IDLE_PASSES_BEFORE_BACKOFF} idle passes, {@link IDLE_POLL_INTERVAL_MS}); `wake`, the
 * in-process signal that ends a sleep at once; `status`, where the loop writes when it
 * last ended a pass; `claimIntervalMs`, the least time between two claims (ms, default 0):
 * a job's end or a wake that comes sooner waits for it, so a busy queue claims in batches
 * (one claim per interval instead of one per finished job); `drainMs`, how long an
 * interruption of the loop (a shutdown) waits for the jobs in flight to end their attempt
 * and record its outcome (ms, default: no limit) — the jobs still running then are
 * interrupted before they record anything, and their lease hands them out again once it ends.
 *
 * @category dispatch
 */
export interface LeasedQueueOptions {
  readonly leaseMs: number
  readonly concurrency: number
  readonly pollIntervalMs: number
  readonly claimIntervalMs?: number
  readonly drainMs?: number
  readonly wake?: DispatchWakeService
  readonly status?: LeasedLoopStatus
}

/**
 * When a loop last ended a pass (a claim and the forking of what it claimed), in epoch
 * milliseconds by Effect's `Clock`, or `null` before its first: what a health check
 * reads ("each enabled loop ended a pass within 30 s").
 *
 * @category dispatch
 */
export interface LeasedLoopStatus {
  readonly lastPassEndedAt: Ref.Ref<number | null>
}

/**
 * A new {@link LeasedLoopStatus} (no pass ended yet).
 *
 * @category dispatch
 */
export const makeLeasedLoopStatus: Effect.Effect<LeasedLoopStatus> = Effect.map(
  Ref.make<number | null>(null),
  (lastPassEndedAt) => ({ lastPassEndedAt })
)

/**
 * Runs one claimed job and records its outcome, uninterruptibly (an interruption waits
 * for the attempt and its record). Never fails: a failure is logged with the queue's name
 * and answered `Failed`; an outcome the lease no longer allowed to record is `Lost`. With
 * `leaseMs` (the lease the claim took, ms) and a queue that can `renew`, the lease is
 * renewed every third of it while the job runs (`LeaseEnded` when that fails).
 *
 * @category dispatch
 */
export const runLeasedJob = <J, O, E, R>(
  queue: LeasedQueue<J, O, E, R>,
  job: J,
  leaseMs?: number
): Effect.Effect<LeasedJobEnd<O>, never, R> =>
  Effect.uninterruptible(
    Effect.flatMap(LeasedJobSpans, (spans) => leasedJob(queue, job, false, leaseMs, spans))
  ) as Effect.Effect<LeasedJobEnd<O>, never, R>

/**
 * A job of the loop: {@link runLeasedJob}, except that its attempt (`run`) can be
 * interrupted — by the loop's drain only, once its time has passed: the job then ends
 * `Abandoned`, nothing recorded. Its record is never interrupted. `spans`: the loop's
 * {@link LeasedJobSpans}, read once for all its jobs.
 */
const runDrainableJob = <J, O, E, R>(
  queue: LeasedQueue<J, O, E, R>,
  job: J,
  leaseMs: number,
  spans: boolean
): Effect.Effect<DrainableJobEnd<O>, never, R> => Effect.uninterruptible(leasedJob(queue, job, true, leaseMs, spans))

/**
 * The rest of a job begun without a fiber (`PlainJobHost.continueWith`): `outcome`
 * (interruptible by the drain, as a job's run) and its record, as {@link runDrainableJob}.
 */
const continuedJob = <J, O, E, R>(
  queue: LeasedQueue<J, O, E, R>,
  job: J,
  outcome: Effect.Effect<O, E, R>
): Effect.Effect<DrainableJobEnd<O>, never, R> => Effect.uninterruptible(jobOf(queue, job, true, false, outcome))

/** How a job of the loop ended: as {@link LeasedJobEnd}, or interrupted by the drain before its record. */
type DrainableJobEnd<O> = LeasedJobEnd<O> | { readonly _tag: "Abandoned" }

const LEASE_ENDED_END: LeasedJobEnd<never> = { _tag: "LeaseEnded" }
const FAILED_END: LeasedJobEnd<never> = { _tag: "Failed" }
const ABANDONED_END: DrainableJobEnd<never> = { _tag: "Abandoned" }

/**
 * Runs and records one job, in a root span of its own when `spans` ({@link LeasedJobSpans})
 * is on; `interruptibleRun`: whether its `run` may be interrupted (answered `Abandoned`).
 * Written as a few combinators rather than a generator: the send queue runs one job per
 * message, and each step of the runtime is CPU time and garbage on that path
 * (docs/benchmarks.md "Outbound dispatch").
 */
const leasedJob = <J, O, E, R>(
  queue: LeasedQueue<J, O, E, R>,
  job: J,
  interruptibleRun: boolean,
  leaseMs: number | undefined,
  spans: boolean
): Effect.Effect<DrainableJobEnd<O>, never, R> =>
  // Built inside `suspend`, as `queue.run(job)` always was: inside the job's span and its error handling.
  jobOf(queue, job, interruptibleRun, spans, Effect.suspend(() => withRenewal(queue, job, leaseMs)))

/** A job whose run is `attempt`: its record, its span and its error handling, as {@link leasedJob}. */
const jobOf = <J, O, E, R>(
  queue: LeasedQueue<J, O, E, R>,
  job: J,
  interruptibleRun: boolean,
  spans: boolean,
  attempt: Effect.Effect<O | LeaseEndedMarker, E, R>
): Effect.Effect<DrainableJobEnd<O>, never, R> => {
  const body: Effect.Effect<LeasedJobEnd<O>, E, R> = Effect.flatMap(
    interruptibleRun ? Effect.interruptible(attempt) : attempt,
    (outcome): Effect.Effect<LeasedJobEnd<O>, E, R> =>
      outcome instanceof LeaseEndedMarker
        ? Effect.as(
          Effect.logWarning(`${queue.name}: a job's lease could not be renewed; its run was stopped and nothing recorded`),
          LEASE_ENDED_END
        )
        : Effect.map(queue.record(job, outcome), (recorded) =>
          recorded ? { _tag: "Recorded", outcome } as const : { _tag: "Lost", outcome } as const)
  )
  return endedOrLogged(queue.name, spans ? inJobSpan(queue, job, body) : body, interruptibleRun)
}

/**
 * `body`'s end, or, when it fails, `Failed` with the failure logged under the queue's
 * `name` (`Abandoned` when `interruptibleRun` and the drain interrupted it).
 */
const endedOrLogged = <O, E, R>(
  name: string,
  body: Effect.Effect<LeasedJobEnd<O>, E, R>,
  interruptibleRun: boolean
): Effect.Effect<DrainableJobEnd<O>, never, R> =>
  Effect.catchAllCause(body, (cause): Effect.Effect<DrainableJobEnd<O>> =>
    interruptibleRun && Cause.isInterruptedOnly(cause)
      ? Effect.succeed(ABANDONED_END)
      : Effect.logWarning(`${name}: a job could not be run or recorded`).pipe(
        Effect.annotateLogs({ error: describeCause(cause) }),
        Effect.as(FAILED_END)
      ))

/** What a run stopped for its lease answers instead of an outcome. */
class LeaseEndedMarker {
  readonly leaseEnded = true
}
const LEASE_ENDED = new LeaseEndedMarker()

/**
 * `queue.run(job)`, raced with the renewal of its lease every third of `leaseMs` when the
 * queue can `renew`: the first renewal that answers `false` or fails interrupts the run
 * (made interruptible for it alone: an interruption from outside still waits where the
 * caller is uninterruptible) and answers {@link LEASE_ENDED}. Without `renew` or
 * `leaseMs`, the run as it is.
 */
const withRenewal = <J, O, E, R>(
  queue: LeasedQueue<J, O, E, R>,
  job: J,
  leaseMs: number | undefined
): Effect.Effect<O | LeaseEndedMarker, E, R> => {
  const renew = queue.renew
  if (renew === undefined || leaseMs === undefined || leaseMs <= 0) return queue.run(job)
  const everyMs = Math.max(1, Math.floor(leaseMs / 3))
  const renewals = Effect.gen(function*() {
    while (true) {
      yield* Effect.sleep(everyMs)
      const now = yield* Clock.currentTimeMillis
      const held = yield* Effect.orElseSucceed(renew(job, now + leaseMs), () => false)
      if (!held) return LEASE_ENDED
    }
  })
  // Both sides interruptible, so that the race can stop the loser even where the caller is not.
  return Effect.raceFirst(Effect.interruptible(queue.run(job)), Effect.interruptible(renewals))
}

/** `body` in a new root span of `queue`'s job `job` (its end is the span's attribute `switchboard.job_end`). */
const inJobSpan = <J, O, E, R>(queue: LeasedQueue<J, O, E, R>, job: J, body: Effect.Effect<LeasedJobEnd<O>, E, R>) =>
  Effect.withSpan(
    Effect.tap(body, (end) => Effect.annotateCurrentSpan("switchboard.job_end", end._tag)),
    queue.span?.name ?? `${queue.name} job`,
    { root: true, kind: "consumer", attributes: queue.span?.attributes(job) ?? {} }
  )

/**
 * One pass of `queue` at `now` (epoch ms): claims up to `limit` due jobs leased for
 * `leaseMs`, runs them in parallel and records each ({@link runLeasedJob}); answers how
 * each ended, in claim order. Uninterruptible once the claim has answered. Fails only
 * with the claim's error.
 *
 * @category dispatch
 */
export const runLeasedPass = <J, O, E, R>(
  queue: LeasedQueue<J, O, E, R>,
  now: number,
  leaseMs: number,
  limit: number
): Effect.Effect<ReadonlyArray<LeasedJobEnd<O>>, E, R> =>
  Effect.uninterruptible(
    Effect.flatMap(queue.claim(now, now + leaseMs, limit), (jobs) =>
      Effect.forEach(jobs, (job) => runLeasedJob(queue, job, leaseMs), { concurrency: Math.max(1, jobs.length) }))
  )

/**
 * The continuous leased-dispatch loop of `queue`; runs until interrupted and never fails.
 * It keeps at most `concurrency` jobs in flight and claims again as each job ends (no
 * waiting for a whole round); when nothing more is due it sleeps until the earliest of
 * the poll interval, a wake of `options.wake`, the end of a job, and the next due time it
 * knows (`queue.nextDueAt`, or a recorded outcome's `dueAgainAt`); after
 * {@link IDLE_PASSES_BEFORE_BACKOFF} passes in a row that claimed nothing, with nothing in
 * flight and no wake, the poll interval becomes {@link IDLE_POLL_INTERVAL_MS} until a pass
 * claims something or a wake comes ({@link makeIdleBackoff}). Time is Effect's
 * `Clock` (so `TestClock` drives it). A failed claim is logged and retried after the poll
 * interval. Interrupting it (graceful shutdown) claims nothing more at once and waits for
 * the jobs in flight to end their attempt and record its outcome, for at most
 * `options.drainMs`; the attempts still running then are interrupted (logged: their jobs
 * are handed out again when their lease ends, as after a crash), while a record already
 * under way is waited for. Each pass writes its end time to `options.status`.
 *
 * @category dispatch
 * @example
 * import { Effect, Fiber } from "effect"
 * import { makeDispatchWake, runLeasedQueue, webhookDeliveryQueue } from "@switchboard/core"
 *
 * const wake = makeDispatchWake()
 * const program = Effect.gen(function*() {
 *   const loop = yield* Effect.fork(
 *     runLeasedQueue(webhookDeliveryQueue, { leaseMs: 60_000, concurrency: 10, pollIntervalMs: 1_000, wake })
 *   )
 *   // … on shutdown: waits for the deliveries in flight to be recorded.
 *   yield* Fiber.interrupt(loop)
 * })
 */
export const runLeasedQueue = <J, O, E, R>(
  queue: LeasedQueue<J, O, E, R>,
  options: LeasedQueueOptions
): Effect.Effect<never, never, R> =>
  Effect.scoped(
    Effect.gen(function*() {
      const concurrency = Math.max(1, Math.floor(options.concurrency))
      const mailbox = yield* makeWakeLatch
      const poke = mailbox.poke
      if (options.wake !== undefined) {
        const unsubscribe = options.wake.subscribe(poke)
        yield* Effect.addFinalizer(() => Effect.sync(unsubscribe))
      }
      // Added after the subscription, so closed first: the jobs in flight end before.
      // Jobs begun without a fiber (`queue.startPlain`): how many have not ended or moved
      // to a fiber, and whether the drain gave up on them.
      const plain: PlainJobsInFlight = { running: 0, gaveUp: false }
      const inFlight = yield* FiberSet.make<DrainableJobEnd<O>>()
      // Added after the set, so run before it closes (which interrupts what is left).
      yield* Effect.addFinalizer(() => drainJobs(queue.name, inFlight, plain, options.drainMs))
      const known = { dueAt: null as number | null, running: 0 }
      const noteDue = (dueAt: number | null | undefined) => {
        if (dueAt != null && (known.dueAt === null || dueAt < known.dueAt)) known.dueAt = dueAt
      }
      // Each job is forked into the set from plain code (the set's runtime, captured once) and
      // its end is counted by an observer of its fiber: no combinator per job for either.
      const spans = yield* LeasedJobSpans
      const fork = yield* FiberSet.runtime(inFlight)<R>()
      const jobEnded = (exit: Exit.Exit<DrainableJobEnd<O>>): void => {
        known.running--
        if (Exit.isSuccess(exit) && exit.value._tag === "Recorded") noteDue(queue.dueAgainAt?.(exit.value.outcome))
        poke()
      }
      // One host serves every job begun without a fiber.
      const plainEnded = (end: DrainableJobEnd<O>): void => {
        plain.running--
        jobEnded(Exit.succeed(end))
      }
      const inFiber = (job: Effect.Effect<DrainableJobEnd<O>, never, R>): void => {
        // Forked before the count drops, so that the drain never sees the job in neither.
        if (plain.gaveUp) return plainEnded(ABANDONED_END)
        fork(job).addObserver(jobEnded)
        plain.running--
      }
      const host: PlainJobHost<J, O, E, R> = {
        recorded: (outcome, held) => plainEnded(held ? { _tag: "Recorded", outcome } : { _tag: "Lost", outcome }),
        abandoned: () => plain.gaveUp,
        abandon: () => plainEnded(ABANDONED_END),
        continueWith: (job, outcome) => inFiber(continuedJob(queue, job, outcome)),
        endWith: (rest) => inFiber(Effect.uninterruptible(endedOrLogged(queue.name, rest, false)))
      }
      const startPlain = spans ? undefined : queue.startPlain
      const start = (job: J): void => {
        if (startPlain !== undefined) {
          plain.running++
          if (startPlain(job, host)) return
          plain.running--
        }
        fork(runDrainableJob(queue, job, options.leaseMs, spans)).addObserver(jobEnded)
      }
      // The claimed jobs whose run starts later (`queue.startAt`), soonest first, and the
      // one fiber that starts each at its time (woken when an earlier one arrives).
      const waiting: Array<{ readonly at: number; readonly job: J }> = []
      const starterMailbox = yield* makeWakeLatch
      // Added after the drain, so run before it: on a shutdown the waiting jobs start at once
      // (each then waits for its time in its own fiber) and are drained like the others.
      yield* Effect.addFinalizer(() => Effect.sync(() => waiting.splice(0).forEach(({ job }) => start(job))))
      const startDue = Effect.uninterruptible(Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        while (waiting.length > 0 && waiting[0]!.at <= now) start(waiting.shift()!.job)
        return waiting.length === 0 ? null : waiting[0]!.at - now
      }))
      // Forked after the finalizer above, so interrupted before it runs.
      yield* Effect.forkScoped(Effect.forever(Effect.flatMap(startDue, (untilNext) =>
        untilNext === null ? starterMailbox.take : starterMailbox.sleepUntilWoken(untilNext))))
      const startOrWait = (job: J, now: number) => {
        const at = queue.startAt?.(job) ?? null
        if (at === null || at <= now) start(job)
        else waiting.push({ at, job })
      }
      const backoff = makeIdleBackoff(options.pollIntervalMs)
      // One pass, uninterruptible so that what it claims is forked: whether every free slot filled.
      const pass = (now: number) =>
        Effect.uninterruptible(Effect.gen(function*() {
          const free = concurrency - known.running
          if (free <= 0) return true
          if (known.dueAt !== null && known.dueAt <= now) known.dueAt = null
          const jobs = yield* claimSurviving(queue, now, options.leaseMs, free)
          known.running += jobs.length
          const waitingBefore = waiting.length
          for (const job of jobs) startOrWait(job, now)
          if (waiting.length > waitingBefore) {
            waiting.sort((a, b) => a.at - b.at)
            starterMailbox.poke()
          }
          if (known.running === 0) backoff.idle()
          else backoff.busy()
          if (jobs.length === free) return true
          if (queue.nextDueAt !== undefined) noteDue(yield* nextDueSurviving(queue, now))
          return false
        }))
      const claimIntervalMs = Math.max(0, options.claimIntervalMs ?? 0)
      let lastPassAt = Number.NEGATIVE_INFINITY
      while (true) {
        const early = lastPassAt + claimIntervalMs - (yield* Clock.currentTimeMillis)
        if (early > 0) yield* Effect.sleep(early)
        const now = yield* Clock.currentTimeMillis
        lastPassAt = now
        const full = yield* pass(now)
        if (options.status !== undefined) yield* Ref.set(options.status.lastPassEndedAt, yield* Clock.currentTimeMillis)
        if (full) yield* mailbox.take
        else if (yield* mailbox.sleepUntilWoken(sleepUntilDueMs(now, backoff.pollMs(), known.dueAt))) backoff.busy()
      }
    })
  )

/** The loop's jobs begun without a fiber: how many have not ended nor moved to a fiber, and whether the drain gave up on them. */
interface PlainJobsInFlight {
  running: number
  gaveUp: boolean
}

/** How often the drain looks again at the jobs begun without a fiber, in ms (only while some run: never on a `TestClock`). */
const PLAIN_DRAIN_CHECK_MS = 5

/**
 * The loop's drain: waits for the jobs in `inFlight` and the `plain` ones to end, for at
 * most `drainMs` (none: no limit), and logs how many are still running then (the set's
 * closing interrupts them; the plain ones are told the drain gave up, and abandon their
 * attempt before recording it).
 */
const drainJobs = <A>(
  name: string,
  inFlight: FiberSet.FiberSet<A>,
  plain: PlainJobsInFlight,
  drainMs: number | undefined
): Effect.Effect<void> => {
  const allEnded: Effect.Effect<void> = Effect.flatMap(FiberSet.awaitEmpty(inFlight), () =>
    plain.running === 0 ? Effect.void : Effect.zipRight(Effect.sleep(PLAIN_DRAIN_CHECK_MS), allEnded))
  return drainMs === undefined
    ? allEnded
    // A finalizer runs uninterruptibly: the wait is made interruptible so that the timeout can end it.
    : Effect.flatMap(Effect.timeoutOption(Effect.interruptible(allEnded), Math.max(0, drainMs)), (ended) => {
      if (Option.isSome(ended)) return Effect.void
      plain.gaveUp = true
      return Effect.flatMap(FiberSet.size(inFlight), (left) =>
        Effect.logWarning(
          `${name}: ${left + plain.running} attempt(s) still running ${drainMs} ms after the shutdown began were interrupted; their work is handed out again when its lease ends`
        ))
    })
}

/** `queue.claim`, with a failure logged and answered as nothing claimed. */
const claimSurviving = <J, O, E, R>(queue: LeasedQueue<J, O, E, R>, now: number, leaseMs: number, limit: number) =>
  queue.claim(now, now + leaseMs, limit).pipe(
    Effect.catchAllCause((cause) =>
      Cause.isInterruptedOnly(cause)
        ? Effect.failCause(cause as Cause.Cause<never>)
        : Effect.logWarning(`${queue.name}: due work could not be claimed`).pipe(
          Effect.annotateLogs({ error: describeCause(cause) }),
          Effect.as([] as ReadonlyArray<J>)
        )
    )
  )

/** `queue.nextDueAt(now)`, with a failure answered `null` (the poll interval then bounds the sleep). */
const nextDueSurviving = <J, O, E, R>(queue: LeasedQueue<J, O, E, R>, now: number) =>
  queue.nextDueAt === undefined ? Effect.succeed(null) : Effect.orElseSucceed(queue.nextDueAt(now), () => null)

/**
 * How long a loop sleeps at `now` (epoch ms): until the known due time `dueAt` (epoch ms,
 * `null`: none known) when it comes before the poll interval ends, else `pollIntervalMs`;
 * 0 for a due time already past. Shared by the loops that know their next due time (the
 * broadcasts' starter).
 *
 * @internal
 */
export const sleepUntilDueMs = (now: number, pollIntervalMs: number, dueAt: number | null): number =>
  dueAt === null ? pollIntervalMs : Math.max(0, Math.min(pollIntervalMs, dueAt - now))

/**
 * The wake-ups of one loop, waited for by one fiber at a time: `poke()` wakes it (a poke
 * while it does not wait is kept, one, so that its next wait ends at once); `take` waits
 * for a poke; `sleepUntilWoken(ms)` sleeps `ms` on Effect's `Clock`, or less when a poke
 * comes (which it takes): `true` when a poke ended it, `false` when the time ran out.
 * Shared by the loops that a `DispatchWake` ends early (the broadcasts' starter).
 *
 * @internal
 */
export interface WakeLatch {
  readonly poke: () => void
  readonly take: Effect.Effect<void>
  readonly sleepUntilWoken: (ms: number) => Effect.Effect<boolean>
}

/**
 * A new {@link WakeLatch}, on the caller's `Clock`. On a live clock its sleep is one timer
 * beside the wait, with no fiber: each record of a sent message wakes the loops, a few
 * hundred times a second while a dispatcher sends, and a race of two fibers per wake was
 * CPU time on that path (docs/benchmarks.md "A message without a fiber"). On another clock
 * (`TestClock`) the sleep is that clock's, raced with the wait.
 *
 * @internal
 */
export const makeWakeLatch: Effect.Effect<WakeLatch> = Effect.map(Effect.clock, (clock) => {
  let kept = false
  let waiter: ((woken: boolean) => void) | undefined
  const poke = (): void => {
    const waiting = waiter
    if (waiting === undefined) kept = true
    else {
      waiter = undefined
      waiting(true)
    }
  }
  // Waits for a poke, or for `ms` on a plain timer (`null`: no limit).
  const wait = (ms: number | null): Effect.Effect<boolean> =>
    Effect.async<boolean>((resume) => {
      if (kept) {
        kept = false
        return resume(Effect.succeed(true))
      }
      let timer: ReturnType<typeof setTimeout> | undefined
      waiter = (woken) => {
        if (timer !== undefined) clearTimeout(timer)
        resume(Effect.succeed(woken))
      }
      if (ms !== null) {
        timer = setTimeout(() => {
          waiter = undefined
          resume(Effect.succeed(false))
        }, ms)
        // As the host clock's own sleeps: a host's process may end while its loops sleep.
        if (clock === hostClock) timer.unref()
      }
      return Effect.sync(() => {
        waiter = undefined
        if (timer !== undefined) clearTimeout(timer)
      })
    })
  const take = Effect.asVoid(wait(null))
  return {
    poke,
    take,
    sleepUntilWoken: isLiveClock(clock)
      ? (ms) => wait(Math.max(0, ms))
      : (ms) => Effect.raceFirst(Effect.as(take, true), Effect.as(Effect.sleep(ms), false))
  }
})

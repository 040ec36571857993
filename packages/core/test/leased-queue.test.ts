import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Option, Ref, TestClock } from "effect"
import { type LeasedQueue, LeasedJobSpans, makeDispatchWake, makeLeasedLoopStatus, makeWakeLatch, type PlainJobHost, runLeasedJob, runLeasedQueue } from "@switchboard/core"

// The leased-dispatch loop (docs/webhooks.md "Delivery and the dispatcher") against a fake
// queue on Effect's TestClock: the in-flight bound, refill as jobs end, the wake signal,
// the sleep until the next due time, the graceful stop, and a lost lease.

interface FakeJob {
  readonly id: string
  readonly lease: string
}

interface Row {
  dueAt: number
  lease: string | null
  leaseUntil: number
  done: boolean
  outcome: string | null
}

/** A queue kept in memory; `run` waits for the job's gate when `gated`, and answers `ran <id>`. */
const makeFakeQueue = (options: { readonly gated?: boolean; readonly nextDueAt?: boolean } = {}) => {
  const rows = new Map<string, Row>()
  const gates = new Map<string, Deferred.Deferred<void>>()
  const claims: Array<{ readonly at: number; readonly limit: number; readonly ids: ReadonlyArray<string> }> = []
  let running = 0
  let maxRunning = 0
  let leases = 0
  const add = (id: string, dueAt = 0) => rows.set(id, { dueAt, lease: null, leaseUntil: 0, done: false, outcome: null })
  const gate = (id: string) => {
    let deferred = gates.get(id)
    if (deferred === undefined) {
      deferred = Effect.runSync(Deferred.make<void>())
      gates.set(id, deferred)
    }
    return deferred
  }
  const queue: LeasedQueue<FakeJob, string> = {
    name: "fake queue",
    claim: (now, leaseUntil, limit) =>
      Effect.sync(() => {
        const due = [...rows.entries()]
          .filter(([, row]) => !row.done && row.dueAt <= now && (row.lease === null || row.leaseUntil <= now))
          .sort(([, a], [, b]) => a.dueAt - b.dueAt)
          .slice(0, limit)
        const jobs = due.map(([id, row]) => {
          row.lease = `lease-${++leases}`
          row.leaseUntil = leaseUntil
          return { id, lease: row.lease }
        })
        claims.push({ at: now, limit, ids: jobs.map((job) => job.id) })
        return jobs
      }),
    run: (job) =>
      Effect.gen(function*() {
        running++
        maxRunning = Math.max(maxRunning, running)
        if (options.gated === true) yield* Deferred.await(gate(job.id))
        running--
        return `ran ${job.id} under ${job.lease}`
      }),
    record: (job, outcome) =>
      Effect.sync(() => {
        const row = rows.get(job.id)
        if (row === undefined || row.done || row.lease !== job.lease) return false
        row.done = true
        row.lease = null
        row.outcome = outcome
        return true
      }),
    ...(options.nextDueAt === true
      ? {
        nextDueAt: (now: number) =>
          Effect.sync(() => {
            const waiting = [...rows.values()].filter((row) => !row.done && row.dueAt > now).map((row) => row.dueAt)
            return waiting.length === 0 ? null : Math.min(...waiting)
          })
      }
      : {})
  }
  return {
    queue,
    rows,
    claims,
    add,
    open: (id: string) => Deferred.succeed(gate(id), undefined),
    started: () => [...gates.keys()],
    get running() {
      return running
    },
    get maxRunning() {
      return maxRunning
    }
  }
}

/** Lets every ready fiber run (no time passes on the TestClock). */
const settle = Effect.forEach(Array.from({ length: 50 }), () => Effect.yieldNow(), { discard: true })

const HOUR = 3_600_000

describe("runLeasedQueue", () => {
  it.effect("keeps at most `concurrency` jobs in flight, and claims only as many as there are free slots", () =>
    Effect.gen(function*() {
      const fake = makeFakeQueue({ gated: true })
      for (let index = 0; index < 10; index++) fake.add(`job-${index}`)
      const fiber = yield* Effect.fork(runLeasedQueue(fake.queue, { leaseMs: 60_000, concurrency: 3, pollIntervalMs: 10 }))
      yield* settle
      yield* TestClock.adjust(1_000)
      yield* settle
      expect(fake.running).toBe(3)
      expect(fake.claims[0]).toMatchObject({ limit: 3, ids: ["job-0", "job-1", "job-2"] })
      // Full: no claim at all while every slot is taken, whatever the poll interval says.
      expect(fake.claims).toHaveLength(1)
      for (let index = 0; index < 10; index++) {
        yield* fake.open(`job-${index}`)
        yield* settle
      }
      expect(fake.maxRunning).toBe(3)
      expect([...fake.rows.values()].every((row) => row.done)).toBe(true)
      yield* Fiber.interrupt(fiber)
    }))

  it.effect("refills a slot as soon as one job ends, without waiting for the others or the poll interval", () =>
    Effect.gen(function*() {
      const fake = makeFakeQueue({ gated: true })
      for (let index = 0; index < 5; index++) fake.add(`job-${index}`)
      const fiber = yield* Effect.fork(runLeasedQueue(fake.queue, { leaseMs: 60_000, concurrency: 2, pollIntervalMs: HOUR }))
      yield* settle
      expect(fake.running).toBe(2)
      yield* fake.open("job-1")
      yield* settle
      // job-0 is still in flight; job-2 took job-1's slot at once (the clock never moved).
      expect(fake.rows.get("job-0")!.done).toBe(false)
      expect(fake.rows.get("job-1")!.done).toBe(true)
      expect(fake.claims.at(-1)).toMatchObject({ at: 0, limit: 1, ids: ["job-2"] })
      expect(fake.running).toBe(2)
      yield* fake.open("job-0")
      yield* fake.open("job-2")
      yield* fake.open("job-3")
      yield* fake.open("job-4")
      yield* Fiber.interrupt(fiber)
    }))

  it.effect("with claimIntervalMs, jobs that end and wakes that come sooner wait for it: one claim per interval", () =>
    Effect.gen(function*() {
      const fake = makeFakeQueue()
      const wake = makeDispatchWake()
      const fiber = yield* Effect.fork(
        runLeasedQueue(fake.queue, { leaseMs: 60_000, concurrency: 4, pollIntervalMs: HOUR, wake, claimIntervalMs: 100 })
      )
      yield* settle
      const first = fake.claims.length
      fake.add("soon")
      yield* wake.wake
      yield* settle
      yield* TestClock.adjust(99)
      yield* settle
      expect([fake.claims.length, fake.rows.get("soon")!.done]).toEqual([first, false])
      yield* TestClock.adjust(1)
      yield* settle
      expect(fake.rows.get("soon")!.done).toBe(true)
      expect(fake.claims.slice(first).map((claim) => claim.at)).toEqual([100])
      yield* Fiber.interrupt(fiber)
    }))

  it.effect("a wake claims new work at once; without one it waits for the poll interval", () =>
    Effect.gen(function*() {
      const fake = makeFakeQueue()
      const wake = makeDispatchWake()
      const fiber = yield* Effect.fork(
        runLeasedQueue(fake.queue, { leaseMs: 60_000, concurrency: 4, pollIntervalMs: HOUR, wake })
      )
      yield* settle
      fake.add("quiet")
      yield* settle
      yield* TestClock.adjust(HOUR - 1)
      yield* settle
      expect(fake.rows.get("quiet")!.done).toBe(false)
      fake.add("woken")
      yield* wake.wake
      yield* settle
      expect(fake.rows.get("woken")!.done).toBe(true)
      expect(fake.rows.get("quiet")!.done).toBe(true)
      yield* Fiber.interrupt(fiber)
    }))

  it.effect("after ten idle passes an unwoken loop polls every 5 s; a wake, or a pass that claims work, brings the poll interval back", () =>
    Effect.gen(function*() {
      const fake = makeFakeQueue()
      const wake = makeDispatchWake()
      const fiber = yield* Effect.fork(
        runLeasedQueue(fake.queue, { leaseMs: 60_000, concurrency: 4, pollIntervalMs: 1_000, wake })
      )
      const claimsIn = (ms: number) =>
        Effect.gen(function*() {
          const before = fake.claims.length
          for (let step = 0; step < ms / 100; step++) {
            yield* TestClock.adjust(100)
            yield* settle
          }
          return fake.claims.length - before
        })
      yield* settle
      // Passes at 0, 1 000, …, 9 000 ms: ten idle in a row; the next at 14 000.
      expect(yield* claimsIn(9_000)).toBe(9)
      expect(yield* claimsIn(4_900)).toBe(0)
      expect(yield* claimsIn(100)).toBe(1)
      expect(yield* claimsIn(10_000)).toBe(2)
      // Work another process created, not announced here: found by the 5 s poll.
      fake.add("elsewhere")
      expect(yield* claimsIn(4_900)).toBe(0)
      yield* claimsIn(100)
      expect(fake.rows.get("elsewhere")!.done).toBe(true)
      // That pass found work: the poll interval is 1 s again for ten idle passes.
      expect(yield* claimsIn(3_000)).toBe(3)
      expect(yield* claimsIn(10_000)).toBeLessThanOrEqual(9)
      // A wake claims at once and brings the poll interval back too.
      yield* claimsIn(10_000)
      yield* wake.wake
      yield* settle
      expect(yield* claimsIn(3_000)).toBe(3)
      yield* Fiber.interrupt(fiber)
    }))

  it.effect("sleeps until the next due time the queue tells when it comes before the poll interval", () =>
    Effect.gen(function*() {
      const fake = makeFakeQueue({ nextDueAt: true })
      fake.add("later", 5_000)
      const fiber = yield* Effect.fork(runLeasedQueue(fake.queue, { leaseMs: 60_000, concurrency: 4, pollIntervalMs: HOUR }))
      yield* settle
      yield* TestClock.adjust(4_999)
      yield* settle
      expect(fake.rows.get("later")!.done).toBe(false)
      yield* TestClock.adjust(1)
      yield* settle
      expect(fake.rows.get("later")!.done).toBe(true)
      // One claim at the start, none in between, the job claimed at 5 s.
      expect(fake.claims.filter((claim) => claim.at < 5_000).map((claim) => claim.at)).toEqual([0])
      expect(fake.claims.find((claim) => claim.ids.includes("later"))!.at).toBe(5_000)
      yield* Fiber.interrupt(fiber)
    }))

  it.effect("a recorded outcome's dueAgainAt wakes the loop then", () =>
    Effect.gen(function*() {
      const fake = makeFakeQueue()
      fake.add("first")
      const queue: LeasedQueue<FakeJob, string> = {
        ...fake.queue,
        dueAgainAt: () => 2_000
      }
      const fiber = yield* Effect.fork(runLeasedQueue(queue, { leaseMs: 60_000, concurrency: 4, pollIntervalMs: HOUR }))
      yield* settle
      fake.add("retry", 2_000)
      yield* TestClock.adjust(2_000)
      yield* settle
      expect(fake.rows.get("retry")!.done).toBe(true)
      expect(fake.claims.find((claim) => claim.ids.includes("retry"))!.at).toBe(2_000)
      expect(fake.claims.filter((claim) => claim.at > 0 && claim.at < 2_000)).toEqual([])
      yield* Fiber.interrupt(fiber)
    }))

  it.effect("interrupting the loop waits for the jobs in flight to record their outcome, and claims nothing more", () =>
    Effect.gen(function*() {
      const fake = makeFakeQueue({ gated: true })
      fake.add("in-flight")
      const status = yield* makeLeasedLoopStatus
      const fiber = yield* Effect.fork(
        runLeasedQueue(fake.queue, { leaseMs: 60_000, concurrency: 4, pollIntervalMs: 10, status })
      )
      yield* settle
      expect(yield* Ref.get(status.lastPassEndedAt)).toBe(0)
      const interrupting = yield* Effect.fork(Fiber.interrupt(fiber))
      yield* settle
      expect(interrupting.unsafePoll()).toBeNull()
      const claims = fake.claims.length
      fake.add("after-stop")
      yield* fake.open("in-flight")
      yield* Fiber.join(interrupting)
      expect(fake.rows.get("in-flight")).toMatchObject({ done: true, outcome: "ran in-flight under lease-1" })
      yield* TestClock.adjust(1_000)
      expect(fake.claims.length).toBe(claims)
      expect(fake.rows.get("after-stop")!.done).toBe(false)
    }))

  it.effect("with drainMs, the interruption waits for the jobs in flight that long at most: those ending sooner are recorded, the rest interrupted unrecorded under their lease", () =>
    Effect.gen(function*() {
      const fake = makeFakeQueue({ gated: true })
      fake.add("quick")
      fake.add("stuck")
      const fiber = yield* Effect.fork(runLeasedQueue(fake.queue, { leaseMs: 60_000, concurrency: 4, pollIntervalMs: 10, drainMs: 1_000 }))
      yield* settle
      expect(fake.started()).toEqual(["quick", "stuck"])
      const interrupting = yield* Effect.fork(Fiber.interrupt(fiber))
      yield* settle
      yield* fake.open("quick")
      yield* settle
      expect(fake.rows.get("quick")).toMatchObject({ done: true, outcome: "ran quick under lease-1" })
      yield* TestClock.adjust(999)
      expect(interrupting.unsafePoll()).toBeNull()
      yield* TestClock.adjust(1)
      yield* Fiber.join(interrupting)
      // Still leased: handed out again once the lease ends, as after a crash.
      expect(fake.rows.get("stuck")).toMatchObject({ done: false, outcome: null, lease: "lease-2", leaseUntil: 60_000 })
      // Opening its gate now records nothing: the attempt was interrupted.
      yield* fake.open("stuck")
      yield* settle
      expect(fake.rows.get("stuck")!.done).toBe(false)
    }))

  it.effect("with startAt, a claimed job's run starts at its time, not at the claim; the jobs still waiting start at once when the loop is interrupted, and are drained", () =>
    Effect.gen(function*() {
      const fake = makeFakeQueue()
      fake.add("now")
      fake.add("later")
      fake.add("much-later")
      const startAt: Record<string, number | null> = { now: null, later: 500, "much-later": 5_000 }
      const queue: LeasedQueue<FakeJob, string> = { ...fake.queue, startAt: (job) => startAt[job.id]! }
      const fiber = yield* Effect.fork(runLeasedQueue(queue, { leaseMs: 60_000, concurrency: 4, pollIntervalMs: 10_000 }))
      yield* settle
      // The first claim leased all three; only the job without a start time ran.
      expect(fake.claims[0]!.ids).toEqual(["now", "later", "much-later"])
      expect([...fake.rows].filter(([, row]) => row.done).map(([id]) => id)).toEqual(["now"])
      yield* TestClock.adjust(499)
      expect(fake.rows.get("later")!.done).toBe(false)
      yield* TestClock.adjust(1)
      expect(fake.rows.get("later")).toMatchObject({ done: true, outcome: "ran later under lease-2" })
      expect(fake.rows.get("much-later")!.done).toBe(false)
      // A shutdown before its time: it runs and is recorded before the loop ends.
      yield* Fiber.interrupt(fiber)
      expect(fake.rows.get("much-later")).toMatchObject({ done: true, outcome: "ran much-later under lease-3" })
    }))
})

describe("runLeasedJob", () => {
  it.effect("an outcome is not recorded when the lease was lost: the job ends Lost and the new holder's outcome stands", () =>
    Effect.gen(function*() {
      const fake = makeFakeQueue({ gated: true })
      fake.add("slow")
      const [first] = yield* fake.queue.claim(0, 60_000, 1)
      const firstRun = yield* Effect.fork(runLeasedJob(fake.queue, first!))
      yield* settle
      // The lease ends while the first holder still runs; another process claims the job.
      const [second] = yield* fake.queue.claim(60_000, 120_000, 1)
      expect(second).toEqual({ id: "slow", lease: "lease-2" })
      yield* fake.open("slow")
      expect(yield* runLeasedJob(fake.queue, second!)).toEqual({ _tag: "Recorded", outcome: "ran slow under lease-2" })
      expect(yield* Fiber.join(firstRun)).toEqual({ _tag: "Lost", outcome: "ran slow under lease-1" })
      expect(fake.rows.get("slow")!.outcome).toBe("ran slow under lease-2")
    }))

  it.effect("runs a job in a root span of the queue only when LeasedJobSpans is on (tracing); by default in none", () =>
    Effect.gen(function*() {
      const seen: Array<Option.Option<{ readonly name: string; readonly parent: boolean; readonly attributes: unknown }>> = []
      const queue: LeasedQueue<string, string> = {
        name: "probe queue",
        claim: () => Effect.succeed([]),
        run: (job) =>
          Effect.map(Effect.option(Effect.currentSpan), (span) => {
            seen.push(Option.map(span, (each) => ({ name: each.name, parent: Option.isSome(each.parent), attributes: Object.fromEntries(each.attributes) })))
            return job
          }),
        record: () => Effect.succeed(true),
        span: { name: "Probe.attempt", attributes: (job) => ({ "probe.job": job }) }
      }
      const inOuterSpan = (effect: Effect.Effect<unknown>) => Effect.withSpan(effect, "outer")
      yield* inOuterSpan(runLeasedJob(queue, "a"))
      yield* inOuterSpan(runLeasedJob(queue, "b")).pipe(Effect.provideService(LeasedJobSpans, true))
      expect(seen[0]).toEqual(Option.some({ name: "outer", parent: false, attributes: {} }))
      // Its own root span, not a child of the caller's, with the queue's attributes.
      expect(seen[1]).toEqual(Option.some({ name: "Probe.attempt", parent: false, attributes: { "probe.job": "b" } }))
    }))
})

describe("lease renewal (a queue with renew)", () => {
  /** A queue of one job whose run takes `runMs` of the test clock; `renewals` answer as `answers` say. */
  const renewingQueue = (runMs: number, answers: (call: number) => Effect.Effect<boolean, string>) => {
    const state = { renewals: [] as Array<{ at: number; leaseUntil: number }>, runInterrupted: false, recorded: [] as Array<string> }
    const queue: LeasedQueue<FakeJob, string, string> = {
      name: "renewing queue",
      claim: () => Effect.succeed([{ id: "a", lease: "lease-1" }]),
      run: (job) =>
        Effect.sleep(runMs).pipe(
          Effect.as(`ran ${job.id}`),
          Effect.onInterrupt(() => Effect.sync(() => void (state.runInterrupted = true)))
        ),
      renew: (_job, leaseUntil) =>
        Effect.flatMap(Effect.clockWith((clock) => clock.currentTimeMillis), (at) => {
          state.renewals.push({ at, leaseUntil })
          return answers(state.renewals.length)
        }),
      record: (_job, outcome) => Effect.sync(() => (state.recorded.push(outcome), true))
    }
    return { queue, state }
  }

  it.effect("renews every third of the lease while a long run runs, each time to now + the lease, then records", () =>
    Effect.gen(function*() {
      const { queue, state } = renewingQueue(950, () => Effect.succeed(true))
      const fiber = yield* Effect.fork(runLeasedJob(queue, { id: "a", lease: "lease-1" }, 300))
      yield* TestClock.adjust(950)
      expect(yield* Fiber.join(fiber)).toEqual({ _tag: "Recorded", outcome: "ran a" })
      expect(state.renewals).toEqual([100, 200, 300, 400, 500, 600, 700, 800, 900].map((at) => ({ at, leaseUntil: at + 300 })))
      expect(state.runInterrupted).toBe(false)
    }))

  it.effect("a renewal answering false stops the run at once: LeaseEnded, nothing recorded", () =>
    Effect.gen(function*() {
      const { queue, state } = renewingQueue(10_000, (call) => Effect.succeed(call < 3))
      const fiber = yield* Effect.fork(runLeasedJob(queue, { id: "a", lease: "lease-1" }, 3_000))
      yield* TestClock.adjust(3_000)
      expect(yield* Fiber.join(fiber)).toEqual({ _tag: "LeaseEnded" })
      expect(state.renewals.map((renewal) => renewal.at)).toEqual([1_000, 2_000, 3_000])
      expect(state.runInterrupted).toBe(true)
      expect(state.recorded).toEqual([])
    }))

  it.effect("a renewal that fails is a lease that may be gone: LeaseEnded too", () =>
    Effect.gen(function*() {
      const { queue, state } = renewingQueue(10_000, () => Effect.fail("store unreachable"))
      const fiber = yield* Effect.fork(runLeasedJob(queue, { id: "a", lease: "lease-1" }, 900))
      yield* TestClock.adjust(300)
      expect(yield* Fiber.join(fiber)).toEqual({ _tag: "LeaseEnded" })
      expect([state.runInterrupted, state.recorded]).toEqual([true, []])
    }))

  it.effect("a run shorter than a third of the lease is never renewed; without the lease's length nothing is renewed", () =>
    Effect.gen(function*() {
      const short = renewingQueue(50, () => Effect.succeed(true))
      const first = yield* Effect.fork(runLeasedJob(short.queue, { id: "a", lease: "lease-1" }, 300))
      yield* TestClock.adjust(50)
      expect((yield* Fiber.join(first))._tag).toBe("Recorded")
      const unknown = renewingQueue(1_000, () => Effect.succeed(false))
      const second = yield* Effect.fork(runLeasedJob(unknown.queue, { id: "a", lease: "lease-1" }))
      yield* TestClock.adjust(1_000)
      expect((yield* Fiber.join(second))._tag).toBe("Recorded")
      expect([short.state.renewals, unknown.state.renewals]).toEqual([[], []])
    }))

  it.effect("in the loop, a job outliving its lease keeps it by renewal and is recorded once", () =>
    Effect.gen(function*() {
      const { queue, state } = renewingQueue(2_000, () => Effect.succeed(true))
      let claimed = false
      const once: LeasedQueue<FakeJob, string, string> = {
        ...queue,
        claim: () => Effect.sync(() => (claimed ? [] : ((claimed = true), [{ id: "a", lease: "lease-1" }])))
      }
      const loop = yield* Effect.fork(runLeasedQueue(once, { leaseMs: 600, concurrency: 2, pollIntervalMs: 100 }))
      yield* TestClock.adjust(2_500)
      yield* Fiber.interrupt(loop)
      expect(state.recorded).toEqual(["ran a"])
      expect(state.renewals.length).toBeGreaterThanOrEqual(9)
    }))
})

describe("runLeasedQueue: jobs begun without a fiber (startPlain)", () => {
  /** The fake queue with a `startPlain` that takes the jobs `takes` accepts and keeps each with its host. */
  const plainQueue = (takes: (job: FakeJob) => boolean = () => true) => {
    const fake = makeFakeQueue()
    const taken: Array<{ readonly job: FakeJob; readonly host: PlainJobHost<FakeJob, string> }> = []
    const queue: LeasedQueue<FakeJob, string> = {
      ...fake.queue,
      startPlain: (job, host) => {
        if (!takes(job)) return false
        taken.push({ job, host })
        return true
      }
    }
    return { fake, queue, taken }
  }

  it.effect("a job startPlain takes ends through its host: run is never called, and its end frees the slot for the next claim", () =>
    Effect.gen(function*() {
      const { fake, queue, taken } = plainQueue()
      fake.add("first")
      fake.add("second")
      const fiber = yield* Effect.fork(runLeasedQueue(queue, { leaseMs: 60_000, concurrency: 1, pollIntervalMs: 10_000 }))
      yield* settle
      expect(taken.map(({ job }) => job.id)).toEqual(["first"])
      expect(fake.maxRunning).toBe(0)
      taken[0]!.host.recorded("sent plainly", true)
      yield* settle
      expect(taken.map(({ job }) => job.id)).toEqual(["first", "second"])
      taken[1]!.host.recorded("sent plainly", false)
      yield* Fiber.interrupt(fiber)
      expect(fake.maxRunning).toBe(0)
    }))

  it.effect("a job startPlain declines runs in a fiber as any other", () =>
    Effect.gen(function*() {
      const { fake, queue, taken } = plainQueue((job) => job.id !== "declined")
      fake.add("declined")
      const fiber = yield* Effect.fork(runLeasedQueue(queue, { leaseMs: 60_000, concurrency: 2, pollIntervalMs: 10_000 }))
      yield* settle
      expect(taken).toEqual([])
      expect(fake.rows.get("declined")).toMatchObject({ done: true, outcome: "ran declined under lease-1" })
      yield* Fiber.interrupt(fiber)
    }))

  it.effect("continueWith records its outcome as a fiber's job; endWith's failure is logged, ends the job and the loop goes on", () =>
    Effect.gen(function*() {
      const { fake, queue, taken } = plainQueue()
      fake.add("continued")
      fake.add("failing")
      fake.add("next")
      const fiber = yield* Effect.fork(runLeasedQueue(queue, { leaseMs: 60_000, concurrency: 2, pollIntervalMs: 10_000 }))
      yield* settle
      expect(taken.map(({ job }) => job.id)).toEqual(["continued", "failing"])
      taken[0]!.host.continueWith(taken[0]!.job, Effect.succeed("answered later"))
      yield* settle
      expect(fake.rows.get("continued")).toMatchObject({ done: true, outcome: "answered later" })
      taken[1]!.host.endWith(Effect.die(new Error("a record that failed")))
      yield* settle
      expect(fake.rows.get("failing")!.done).toBe(false)
      expect(taken.map(({ job }) => job.id)).toEqual(["continued", "failing", "next"])
      taken[2]!.host.recorded("sent plainly", true)
      yield* Fiber.interrupt(fiber)
    }))

  it.effect("the drain waits for plain jobs; past drainMs it gives up: abandoned() turns true, and the job abandons unrecorded", () =>
    Effect.gen(function*() {
      const { fake, queue, taken } = plainQueue()
      fake.add("quick")
      fake.add("stuck")
      const fiber = yield* Effect.fork(runLeasedQueue(queue, { leaseMs: 60_000, concurrency: 4, pollIntervalMs: 10, drainMs: 1_000 }))
      yield* settle
      const interrupting = yield* Effect.fork(Fiber.interrupt(fiber))
      yield* settle
      expect(interrupting.unsafePoll()).toBeNull()
      const [quick, stuck] = taken
      quick!.host.continueWith(quick!.job, Effect.succeed("ended in the drain"))
      yield* TestClock.adjust(10)
      expect(fake.rows.get("quick")).toMatchObject({ done: true, outcome: "ended in the drain" })
      expect(stuck!.host.abandoned()).toBe(false)
      yield* TestClock.adjust(989)
      expect(interrupting.unsafePoll()).toBeNull()
      yield* TestClock.adjust(10)
      yield* Fiber.join(interrupting)
      expect(stuck!.host.abandoned()).toBe(true)
      stuck!.host.abandon()
      expect(fake.rows.get("stuck")).toMatchObject({ done: false, outcome: null, lease: "lease-2" })
    }))

  it.effect("with LeasedJobSpans on (tracing), startPlain is never called: every job runs in its fiber and span", () =>
    Effect.gen(function*() {
      const { fake, queue, taken } = plainQueue()
      fake.add("traced")
      const fiber = yield* Effect.fork(runLeasedQueue(queue, { leaseMs: 60_000, concurrency: 1, pollIntervalMs: 10_000 }))
      yield* settle
      yield* Fiber.interrupt(fiber)
      expect(taken).toEqual([])
      expect(fake.rows.get("traced")).toMatchObject({ done: true, outcome: "ran traced under lease-1" })
    }).pipe(Effect.provideService(LeasedJobSpans, true)))
})

describe("makeWakeLatch", () => {
  it.live("on the live clock: a poke ends a sleep at once (true); a poke while none waits is kept, one; the time running out answers false", () =>
    Effect.gen(function*() {
      const latch = yield* makeWakeLatch
      const sleeping = yield* Effect.fork(latch.sleepUntilWoken(10_000))
      yield* Effect.sleep(5)
      latch.poke()
      expect(yield* Fiber.join(sleeping)).toBe(true)
      latch.poke()
      latch.poke()
      expect(yield* latch.sleepUntilWoken(10_000)).toBe(true)
      const startedAt = Date.now()
      expect(yield* latch.sleepUntilWoken(30)).toBe(false)
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(25)
      const taking = yield* Effect.fork(latch.take)
      yield* Effect.sleep(5)
      expect(taking.unsafePoll()).toBeNull()
      latch.poke()
      yield* Fiber.join(taking)
    }))

  it.effect("on the TestClock: the sleep is that clock's; an interrupted wait leaves no waiter behind", () =>
    Effect.gen(function*() {
      const latch = yield* makeWakeLatch
      const sleeping = yield* Effect.fork(latch.sleepUntilWoken(1_000))
      yield* settle
      yield* TestClock.adjust(999)
      expect(sleeping.unsafePoll()).toBeNull()
      yield* TestClock.adjust(1)
      expect(yield* Fiber.join(sleeping)).toBe(false)
      // The poke after it is kept for the next wait, not lost to the interrupted one.
      latch.poke()
      expect(yield* latch.sleepUntilWoken(1_000)).toBe(true)
    }))
})

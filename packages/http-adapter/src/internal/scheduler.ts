import { Scheduler } from "effect"

/**
 * Most microtask drains in a row before the scheduler lets the event loop run (timers,
 * sockets) with a `setTimeout`: Effect's own default (`MixedScheduler(2048)`).
 */
const MAX_MICROTASK_DRAINS = 2048

/**
 * The scheduler of the handler's runtime (docs/http-adapter.md "Scheduling"): one queue for
 * every fiber, drained in one microtask. A fiber that resumes after an asynchronous step
 * (a rate-limit increment waiting for its grouped commit, a body being read, a Redis
 * answer) is queued here and runs in the next drain, with every other fiber resumed in
 * the same turn.
 *
 * Effect's default scheduler (since 3.20) keeps a queue per fiber, in a `WeakMap`, and
 * drains each in its own microtask, so that each fiber keeps the `AsyncLocalStorage`
 * context it was resumed from: a `WeakMap` entry and a microtask per resumed fiber. With the
 * shared queue the standalone server spent 11–29% less CPU per `GET /verify` request
 * (docs/benchmarks.md). The handler's fibers read no `AsyncLocalStorage` (a request's
 * context is its `Exchange`, passed explicitly), so the handler trades that isolation for
 * one shared queue. Like the default, after
 * {@link MAX_MICROTASK_DRAINS} drains in a row it yields to the event loop with a
 * `setTimeout`, so fibers that keep yielding cannot starve I/O. Priorities are kept: tasks
 * run by priority (Effect's `PriorityBuckets`), in order within one.
 */
export const makeSharedScheduler = (): Scheduler.Scheduler => {
  let queue = new Scheduler.PriorityBuckets()
  let running = false
  const drain = (depth: number): void => {
    const buckets = queue.buckets
    queue = new Scheduler.PriorityBuckets()
    for (const [, tasks] of buckets) {
      for (let index = 0; index < tasks.length; index++) tasks[index]!()
    }
    if (queue.buckets.length === 0) running = false
    else scheduleDrain(depth)
  }
  const scheduleDrain = (depth: number): void => {
    if (depth >= MAX_MICROTASK_DRAINS) setTimeout(() => drain(0), 0)
    else queueMicrotask(() => drain(depth + 1))
  }
  return Scheduler.make((task, priority) => {
    queue.scheduleTask(task, priority)
    if (!running) {
      running = true
      scheduleDrain(0)
    }
  })
}

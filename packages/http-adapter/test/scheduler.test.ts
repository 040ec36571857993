import { describe, expect, it } from "vitest"
import { Effect, Fiber, FiberRef, Layer, ManagedRuntime, Scheduler } from "effect"
import { MemoryStorage } from "@switchboard/core"
import { defaultRoutes, defineRoute } from "@switchboard/http-adapter"
import { makeSharedScheduler } from "../src/internal/scheduler.js"
import { makeHandler, request } from "./helpers.js"

// The handler's scheduler (docs/http-adapter.md "Scheduling"): one queue for every fiber,
// drained in one microtask, yielding to the event loop after 2048 drains in a row.

const runtimeWith = () => ManagedRuntime.make(Layer.setScheduler(makeSharedScheduler()))

describe("the handler's shared scheduler", () => {
  it("resumes the fibers woken in one turn together, in one microtask", async () => {
    const runtime = runtimeWith()
    const order: Array<string> = []
    let resumeAll: Array<() => void> = []
    const waiting = (name: string) =>
      Effect.async<void>((resume) => {
        resumeAll.push(() => resume(Effect.void))
      }).pipe(Effect.tap(() => Effect.sync(() => order.push(name))))
    const fibers = ["a", "b", "c"].map((name) => runtime.runFork(waiting(name)))
    await new Promise((resolve) => setImmediate(resolve))
    expect(resumeAll).toHaveLength(3)
    const [a, b, c] = resumeAll
    resumeAll = []
    // A microtask queued between the wake-ups: with a queue per fiber (Effect's default
    // scheduler) it would run between the fibers; here the three run in the first drain.
    a!()
    queueMicrotask(() => order.push("other microtask"))
    b!()
    c!()
    // Nothing runs before the drain: waking a fiber only queues it.
    expect(order).toEqual([])
    await new Promise((resolve) => setImmediate(resolve))
    expect(order).toHaveLength(4)
    expect(order.slice(0, 3).sort()).toEqual(["a", "b", "c"])
    expect(order[3]).toBe("other microtask")
    await Promise.all(fibers.map((fiber) => runtime.runPromise(Fiber.join(fiber))))
    await runtime.dispose()
  })

  it("runs higher-priority tasks first", async () => {
    const scheduler = makeSharedScheduler()
    const order: Array<number> = []
    scheduler.scheduleTask(() => order.push(2), 2, undefined as never)
    scheduler.scheduleTask(() => order.push(0), 0, undefined as never)
    scheduler.scheduleTask(() => order.push(1), 1, undefined as never)
    scheduler.scheduleTask(() => order.push(0.5), 0, undefined as never)
    await new Promise((resolve) => setImmediate(resolve))
    expect(order).toEqual([0, 0.5, 1, 2])
  })

  it("lets timers and I/O run while fibers keep yielding (no starvation)", async () => {
    const runtime = runtimeWith()
    let yields = 0
    // Each yield ends a drain and queues the next: without the budget of drains in a row,
    // this loop would run in microtasks forever and the timer below would never fire.
    const fiber = runtime.runFork(Effect.forever(Effect.zipRight(Effect.sync(() => yields++), Effect.yieldNow())))
    const timerFired = await new Promise<boolean>((resolve) => setTimeout(() => resolve(true), 5))
    expect(timerFired).toBe(true)
    expect(yields).toBeGreaterThan(2048)
    await runtime.runPromise(Fiber.interrupt(fiber))
    await runtime.dispose()
  })

  it("is the scheduler the handler's request fibers run on", async () => {
    // A route reporting which scheduler its fiber has. Without the handler's own, a request
    // fiber inherits the runtime's: Effect's default, or the `SyncScheduler` the runtime was
    // built with (which hands its tasks to the default).
    const schedulerRoute = defineRoute({
      method: "GET",
      path: "/test/scheduler",
      tag: "Test",
      summary: "Which scheduler the request fiber runs on",
      authenticated: false,
      handle: () =>
        Effect.map(FiberRef.get(FiberRef.currentScheduler), (scheduler) => ({
          message: "scheduler",
          data: { default: scheduler === Scheduler.defaultScheduler, sync: scheduler instanceof Scheduler.SyncScheduler }
        }))
    })
    const handler = makeHandler(MemoryStorage.layer, { routes: [...defaultRoutes, schedulerRoute] })
    const response = await request(handler, { method: "GET", url: "/api/v1/api/test/scheduler" })
    await handler.dispose()
    expect(response.statusCode).toBe(200)
    expect(response.json().data).toEqual({ default: false, sync: false })
  })
})

import { afterEach, describe, expect, it } from "vitest"
import { Effect, Layer } from "effect"
import { MemoryStorage, Storage, StorageError, type StorageHealth, type StorageService } from "@switchboard/core"
import { createFetchHandler, createHandler, type HealthReport } from "@switchboard/http-adapter"
import { type HealthLoop, type HealthPhase, makeHealthCheck } from "../src/health.js"

/** A memory store whose `health()` is `health`. */
const storeAnswering = (health: StorageService["health"]): Layer.Layer<Storage> =>
  Layer.sync(Storage, () => ({ ...MemoryStorage.make(), health }))

const disposals: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const dispose of disposals.splice(0)) await dispose()
})

/** A handler with no logs, disposed after the test. */
const handlerOn = (storage: Layer.Layer<Storage>, options: Partial<Parameters<typeof createHandler>[0]> = {}) => {
  const handler = createHandler({ storage, logger: false, ...options })
  disposals.push(handler.dispose)
  return handler
}

/** `promise`, or "still waiting" when it has not settled within 5 s (a generous bound, not a timing). */
const within5s = <A>(promise: Promise<A>): Promise<A | "still waiting"> =>
  Promise.race([promise, new Promise<"still waiting">((resolve) => setTimeout(() => resolve("still waiting"), 5_000).unref())])

describe("health() of createHandler", () => {
  it("answers ok with the three checks once the store is open and the loops run", async () => {
    const handler = handlerOn(MemoryStorage.layer)
    await handler.ready
    const report = await handler.health()
    expect(report).toEqual({
      status: "ok",
      checks: { storage: { ok: true, duration_ms: expect.any(Number) }, migrations: { ok: true }, dispatchers: { ok: true } }
    })
  })

  it("fails the storage check, and leaves migrations unknown, when the store never answers", async () => {
    const handler = handlerOn(storeAnswering(() => Effect.never))
    await handler.ready
    const report = await within5s(handler.health())
    expect(report).toEqual({
      status: "degraded",
      checks: {
        storage: { ok: false, detail: "no answer within 1000 ms", duration_ms: expect.any(Number) },
        migrations: { ok: false, detail: "unknown: storage did not answer" },
        dispatchers: { ok: true }
      }
    })
  })

  it("shares the store's call between concurrent checks, so a hanging store gets one call", async () => {
    let calls = 0
    const handler = handlerOn(storeAnswering(() => Effect.suspend(() => {
      calls++
      return Effect.never
    })))
    await handler.ready
    const reports = await within5s(Promise.all([handler.health(), handler.health()]))
    const again = await within5s(handler.health())
    expect(reports).toEqual([expect.objectContaining({ status: "degraded" }), expect.objectContaining({ status: "degraded" })])
    expect((again as HealthReport).checks.storage).toMatchObject({ ok: false, detail: "no answer within 1000 ms" })
    expect(calls).toBe(1)
  })

  it("names a StorageError by its operation only, never its cause", async () => {
    const cause = new Error("connect ECONNREFUSED postgres://app:s3cret@db:5432/app")
    const handler = handlerOn(storeAnswering(() => Effect.fail(new StorageError({ operation: "health", cause }))))
    await handler.ready
    const report = await handler.health()
    expect(report.checks.storage).toEqual({ ok: false, detail: "the store failed (health)", duration_ms: expect.any(Number) })
    expect(JSON.stringify(report)).not.toContain("s3cret")
  })

  it("fails the migrations check with the store's detail when its schema is not current", async () => {
    const answer: StorageHealth = { migrations_current: false, detail: "schema version 31 is newer than this code's 30" }
    const handler = handlerOn(storeAnswering(() => Effect.succeed(answer)))
    await handler.ready
    expect(await handler.health()).toEqual({
      status: "degraded",
      checks: {
        storage: { ok: true, duration_ms: expect.any(Number) },
        migrations: { ok: false, detail: "schema version 31 is newer than this code's 30" },
        dispatchers: { ok: true }
      }
    })
  })

  it("reports the storage as starting before ready, and stopped after dispose, without asking it", async () => {
    let calls = 0
    const opening = Layer.effect(Storage, Effect.as(Effect.sleep("100 millis"), { ...MemoryStorage.make(), health: () => Effect.sync(() => {
      calls++
      return { migrations_current: true }
    }) }))
    const handler = createHandler({ storage: opening, logger: false })
    const early = await handler.health()
    expect(early.status).toBe("degraded")
    expect(early.checks.storage).toEqual({ ok: false, detail: "starting: the store is not open yet" })
    await handler.ready
    await handler.dispose()
    expect((await handler.health()).checks.storage).toEqual({ ok: false, detail: "stopped" })
    expect(calls).toBe(0)
  })

  it("checks no loop when the handler runs none", async () => {
    const handler = handlerOn(MemoryStorage.layer, { dispatch: { webhooks: false, messages: false } })
    await handler.ready
    expect((await handler.health()).checks.dispatchers).toEqual({ ok: true })
  })

  it("is on the Fetch handler too", async () => {
    const handler = createFetchHandler({ storage: storeAnswering(() => Effect.succeed({ migrations_current: false })), logger: false })
    disposals.push(handler.dispose)
    await handler.ready
    expect((await handler.health()).checks.migrations).toEqual({ ok: false, detail: "the schema is not the version this code expects" })
  })
})

describe("the dispatchers check", () => {
  const READY_AT = 1_000_000
  const loops: ReadonlyArray<HealthLoop> = [{ name: "webhooks", maxPassAgeMs: 30_000 }, { name: "messages", maxPassAgeMs: 30_000 }]

  /** The check at `now` with the loops' last passes `ended`, the store healthy. */
  const checkAt = (now: number, ended: { webhooks: Date | null; messages: Date | null }, phase: HealthPhase = { _tag: "ready", at: READY_AT }) =>
    makeHealthCheck({
      askStorage: () => Effect.runFork(Effect.succeed({ migrations_current: true })),
      phase: () => phase,
      loops,
      lastPassesEndedAt: () => ended,
      now: () => now
    }).health()

  it("passes while every loop ended a pass within 30 s", async () => {
    const ended = { webhooks: new Date(READY_AT + 100_000), messages: new Date(READY_AT + 80_000) }
    expect((await checkAt(READY_AT + 110_000, ended)).checks.dispatchers).toEqual({ ok: true })
  })

  it("fails naming a loop that stopped ending passes", async () => {
    const ended = { webhooks: new Date(READY_AT + 100_000), messages: new Date(READY_AT + 68_000) }
    const report = await checkAt(READY_AT + 110_000, ended)
    expect(report.status).toBe("degraded")
    expect(report.checks.dispatchers).toEqual({ ok: false, detail: "messages loop ended no pass for 42 s" })
  })

  it("fails a loop that ended no first pass within 30 s of ready, not before", async () => {
    const ended = { webhooks: new Date(READY_AT + 30_000), messages: null }
    expect((await checkAt(READY_AT + 29_000, ended)).checks.dispatchers).toEqual({ ok: true })
    expect((await checkAt(READY_AT + 31_000, ended)).checks.dispatchers).toEqual({
      ok: false,
      detail: "messages loop ended no pass in the 31 s since the store opened"
    })
  })
})

import { randomUUID } from "node:crypto"
import Pg from "pg"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { RateLimitStore } from "@switchboard/core"
import { runRateLimitStoreContract } from "@switchboard/storage-contract"
import { PostgresRateLimitStore } from "@switchboard/storage-postgres"
import { postgresUrl, recordingClient, skipWithoutPostgres, testSchemas } from "./support.js"

// The rate-limit store contract against the real server: one schema for the file (every
// test uses fresh keys), 200 concurrent increments of one counter answering 1..200. Then
// its pool: open before the first request, and kept open while idle.
const schemas = testSchemas()
const schema = schemas.fresh()

describe.skipIf(skipWithoutPostgres)("PostgreSQL server at POSTGRES_URL", () => {
  afterAll(schemas.drop)
  runRateLimitStoreContract({
    name: "postgres",
    makeLayer: () => PostgresRateLimitStore.layer({ connectionString: postgresUrl!, schema, poolSize: 20 })
  })

  it("answers the increments of one event-loop turn with one statement: each counter's requests 1..N, each once", async () => {
    const texts: Array<string> = []
    const pool = new Pg.Pool({ connectionString: postgresUrl!, max: 4, Client: recordingClient(texts) })
    const scope = Effect.runSync(Scope.make())
    try {
      const store = await Effect.runPromise(
        Layer.buildWithScope(PostgresRateLimitStore.layer({ pool, schema, pruneIntervalMs: 3_600_000 }), scope)
      ).then((context) => Context.get(context, RateLimitStore))
      const now = Date.now()
      const keys = [0, 1, 2].map((n) => `turn-${randomUUID()}-${n}`)
      // Warm the pruning (its statement once) before counting statements.
      await store.incrementPromise!({ key: keys[0]!, windowStart: now, expiresAt: now + 60_000, now })
      texts.length = 0
      const counts = await Promise.all(
        Array.from({ length: 30 }, (_, n) => store.incrementPromise!({ key: keys[n % 3]!, windowStart: now, expiresAt: now + 60_000, now }))
      )
      expect(texts.filter((text) => text.includes("rate_buckets"))).toHaveLength(1)
      expect(counts.filter((_, n) => n % 3 === 0)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
      expect(counts.filter((_, n) => n % 3 === 1)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
      expect(counts.filter((_, n) => n % 3 === 2)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      await pool.end()
    }
  })

  it("two stores adding to the same counters in opposite orders, turn after turn, never deadlock and count every increment once", async () => {
    const scope = Effect.runSync(Scope.make())
    try {
      const stores = await Promise.all(
        [0, 1].map(() =>
          Effect.runPromise(Layer.buildWithScope(PostgresRateLimitStore.layer({ connectionString: postgresUrl!, schema, poolSize: 4 }), scope)).then(
            (context) => Context.get(context, RateLimitStore)
          )
        )
      )
      const now = Date.now()
      const keys = Array.from({ length: 6 }, (_, n) => `order-${randomUUID()}-${n}`)
      const counted: Array<Array<number>> = keys.map(() => [])
      for (let turn = 0; turn < 120; turn++) {
        const asked = stores.flatMap((store, which) =>
          (which === 0 ? keys : [...keys].reverse()).map((key) =>
            store.incrementPromise!({ key, windowStart: now, expiresAt: now + 60_000, now }).then((count) => counted[keys.indexOf(key)]!.push(count))
          )
        )
        // Several turns' groups in flight at once, on both stores.
        if (turn % 4 === 3) await Promise.all(asked)
        else void Promise.all(asked)
        await new Promise((resolve) => setImmediate(resolve))
      }
      await new Promise((resolve) => setTimeout(resolve, 200))
      for (const counts of counted) expect([...counts].sort((a, b) => a - b)).toEqual(Array.from({ length: 240 }, (_, n) => n + 1))
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  })

  it("opens 2 connections at start and keeps them open while idle; those opened for a burst close after idleTimeoutMs", async () => {
    const applicationName = `switchboard_rate_${randomUUID().slice(0, 8)}`
    const admin = new Pg.Pool({ connectionString: postgresUrl!, max: 1 })
    const connections = async () =>
      Number((await admin.query("SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1", [applicationName])).rows[0].n)
    const scope = Effect.runSync(Scope.make())
    try {
      const store = await Effect.runPromise(
        Layer.buildWithScope(PostgresRateLimitStore.layer({ connectionString: postgresUrl!, schema, applicationName, idleTimeoutMs: 200 }), scope)
      ).then((context) => Context.get(context, RateLimitStore))
      // Before any request: already open.
      expect(await connections()).toBe(2)
      const now = Date.now()
      const burst = Array.from({ length: 6 }, (_, n) =>
        Effect.runPromise(store.increment({ key: `burst-${applicationName}-${n}`, windowStart: now, expiresAt: now + 60_000, now }))
      )
      expect(await Promise.all(burst)).toEqual([1, 1, 1, 1, 1, 1])
      // Idle well past idleTimeoutMs: the burst's extra connections close, the two stay.
      await new Promise((resolve) => setTimeout(resolve, 1_000))
      expect(await connections()).toBe(2)
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      await admin.end()
    }
  })
})

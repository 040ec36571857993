import { randomUUID } from "node:crypto"
import Pg from "pg"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { RateLimitStore } from "@switchboard/core"
import { runRateLimitStoreContract } from "@switchboard/storage-contract"
import { PostgresRateLimitStore } from "@switchboard/storage-postgres"
import { postgresUrl, skipWithoutPostgres, testSchemas } from "./support.js"

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

import { describe, expect, it } from "@effect/vitest"
import { createServer, connect, type Socket } from "node:net"
import { once } from "node:events"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"
import { afterAll } from "vitest"
import { PostgresStorage } from "@switchboard/storage-postgres"
import type Pg from "pg"
import { vi } from "vitest"
import { DEFAULT_CONNECT_TIMEOUT_MS, deadlinesOf, openPool, QUERY_DEADLINE_CHECK_MS, queryDeadlines } from "../src/internal/connection.js"
import { databaseOf, quoteIdentifier } from "../src/internal/sql.js"
import { LATEST_VERSION, migrations } from "../src/migrations.js"
import { summarySql } from "../src/repositories/outbox.js"
import { postgresUrl, skipWithoutPostgres, testSchemas } from "./support.js"

// What operators read of the store (docs/storage.md "Health and the send queue's
// summary"): `health()` on a schema at another version and on a server that stops
// answering, and the plan of `outbox.summary()`.

const schemas = testSchemas()
afterAll(schemas.drop)

/**
 * A TCP proxy in front of the server at POSTGRES_URL: `forward` (the default) pipes each
 * connection through; `silent` accepts connections and never answers (a server that
 * hangs); `cut()` ends every connection it piped; `close()` stops listening (a closed port).
 */
const startProxy = async () => {
  const target = new URL(postgresUrl!)
  const sockets = new Set<Socket>()
  let mode: "forward" | "silent" = "forward"
  const server = createServer((socket) => {
    sockets.add(socket)
    socket.on("error", () => {})
    if (mode === "silent") return
    const upstream = connect(Number(target.port || 5432), target.hostname)
    sockets.add(upstream)
    upstream.on("error", () => socket.destroy())
    socket.pipe(upstream).pipe(socket)
  })
  server.listen(0, "127.0.0.1")
  await once(server, "listening")
  const url = new URL(postgresUrl!)
  url.port = String((server.address() as AddressInfo).port)
  return {
    url: url.toString(),
    silence: () => {
      mode = "silent"
      for (const socket of sockets) socket.destroy()
    },
    close: async () => {
      for (const socket of sockets) socket.destroy()
      server.close()
      await once(server, "close")
    }
  }
}

describe("the pool's connect timeout", () => {
  it("a pool opened from a connection string gives up connecting after DEFAULT_CONNECT_TIMEOUT_MS, or connectTimeoutMs", async () => {
    const pools = [openPool({ connectionString: "postgres://127.0.0.1:9/x" }), openPool({ connectionString: "postgres://127.0.0.1:9/x", connectTimeoutMs: 250 })]
    expect(pools.map((pool) => pool.options.connectionTimeoutMillis)).toEqual([DEFAULT_CONNECT_TIMEOUT_MS, 250])
    await Promise.all(pools.map((pool) => pool.end()))
  })
})

describe("the client-side query timeout (queryDeadlines)", () => {
  /** A client whose query never answers until `end()`, which fails it as pg does ("Connection terminated"). */
  const hangingClient = () => {
    let fail: (error: Error) => void = () => {}
    const client = {
      ended: 0,
      end: async () => {
        client.ended += 1
        fail(new Error("Connection terminated"))
      }
    }
    const query = () => new Promise<never>((_, reject) => (fail = reject))
    return { client, asPoolClient: client as unknown as Pg.PoolClient, query }
  }

  it("fails a query still unanswered after the limit with a timeout error and closes its connection; one timer, stopped once idle", async () => {
    vi.useFakeTimers()
    try {
      const deadlines = queryDeadlines(1_500)
      const hanging = hangingClient()
      const answered = { end: async () => {} } as unknown as Pg.PoolClient
      const cut = deadlines.run(hanging.asPoolClient, hanging.query)
      const cutError = cut.then(
        () => undefined,
        (error: Error) => error
      )
      expect(await deadlines.run(answered, async () => "rows")).toBe("rows")
      expect(vi.getTimerCount()).toBe(1)
      await vi.advanceTimersByTimeAsync(QUERY_DEADLINE_CHECK_MS)
      expect(hanging.client.ended).toBe(0)
      await vi.advanceTimersByTimeAsync(QUERY_DEADLINE_CHECK_MS)
      const error = await cutError
      expect(error?.message).toBe("Query timed out after 1500 ms (client side)")
      expect(String((error?.cause as Error).message)).toBe("Connection terminated")
      expect(hanging.client.ended).toBe(1)
      // Nothing in flight: the next check stops the timer; a new query starts it again.
      await vi.advanceTimersByTimeAsync(QUERY_DEADLINE_CHECK_MS)
      expect(vi.getTimerCount()).toBe(0)
      expect(await deadlines.run(answered, async () => "again")).toBe("again")
      expect(vi.getTimerCount()).toBe(1)
    } finally {
      vi.useRealTimers()
    }
  })

  it("passes a query's own error through unchanged, and answers within the limit untouched", async () => {
    const deadlines = queryDeadlines(60_000)
    const client = { end: async () => {} } as unknown as Pg.PoolClient
    const failure = Object.assign(new Error("duplicate key value violates unique constraint"), { code: "23505" })
    await expect(deadlines.run(client, () => Promise.reject(failure))).rejects.toBe(failure)
  })

  it("is set on every pool this package opens, at statementTimeoutMs + 1 000 ms", async () => {
    const pools = [openPool({ connectionString: "postgres://127.0.0.1:9/x" }), openPool({ connectionString: "postgres://127.0.0.1:9/x", statementTimeoutMs: 500 })]
    expect(pools.map((pool) => deadlinesOf(pool)?.limitMs)).toEqual([31_000, 1_500])
    expect(pools.map((pool) => (pool.options as { query_timeout?: number }).query_timeout)).toEqual([undefined, undefined])
    await Promise.all(pools.map((pool) => pool.end()))
  })
})

describe.skipIf(skipWithoutPostgres)("the client-side query timeout on the PostgreSQL server at POSTGRES_URL", () => {
  it("cuts a statement the server lets run past the limit, on the pool and in a transaction; the pool serves the next query", async () => {
    // statement_timeout 300 ms on the server, lifted by each statement below: only the client-side limit (1 300 ms) is left.
    const pool = openPool({ connectionString: postgresUrl!, statementTimeoutMs: 300, poolSize: 2 })
    try {
      const db = databaseOf(pool, schemas.fresh())
      const started = performance.now()
      await expect(db.sql.run("SET statement_timeout = 0; SELECT pg_sleep(30)")).rejects.toThrow("Query timed out after 1300 ms (client side)")
      expect(performance.now() - started).toBeGreaterThanOrEqual(1_300)
      await expect(
        db.transaction(async (sql) => {
          await sql.run("SET LOCAL statement_timeout = 0")
          await sql.run("SELECT pg_sleep(30)")
        })
      ).rejects.toThrow("Query timed out after 1300 ms (client side)")
      expect(await db.sql.row("SELECT 1 AS one")).toEqual({ one: 1 })
      // Each cut client was dropped, not returned to the pool.
      expect(pool.totalCount).toBe(1)
    } finally {
      await pool.end()
    }
  })
})

describe.skipIf(skipWithoutPostgres)("health() on the PostgreSQL server at POSTGRES_URL", () => {
  it.effect("current at the code's version; not current, saying why, at a lower or a newer version", () =>
    Effect.gen(function* () {
      const schema = schemas.fresh()
      const storage = yield* PostgresStorage.make({ connectionString: postgresUrl!, schema, poolSize: 2 })
      const versions = (sql: string, version: number) =>
        Effect.promise(() => schemas.pool().query(`${sql.replace("$schema", quoteIdentifier(schema))}`, [version]))
      expect(yield* storage.health()).toEqual({ migrations_current: true })
      yield* versions("DELETE FROM $schema.schema_migrations WHERE version = $1", LATEST_VERSION)
      expect(yield* storage.health()).toEqual({
        migrations_current: false,
        // The version before the newest (versions may skip one while two branches are merged).
        detail: `schema version ${migrations[migrations.length - 2]!.version}, this code needs ${LATEST_VERSION}: migrations pending`
      })
      yield* versions("INSERT INTO $schema.schema_migrations (version, name) VALUES ($1, 'from the future')", LATEST_VERSION + 1)
      expect(yield* storage.health()).toEqual({
        migrations_current: false,
        detail: `schema version ${LATEST_VERSION + 1} is newer than this code's ${LATEST_VERSION}`
      })
    }).pipe(Effect.scoped))

  it.live("fails with StorageError, without hanging, when the server stops answering and when its port is closed", () =>
    Effect.gen(function* () {
      const proxy = yield* Effect.acquireRelease(Effect.promise(startProxy), (proxy) => Effect.promise(proxy.close))
      // The pool this package opens from a connection string, taken as the host's so the test sees its clients.
      const pool = openPool({ connectionString: proxy.url, poolSize: 2, connectTimeoutMs: 300 })
      yield* Effect.addFinalizer(() => Effect.promise(() => pool.end()))
      const storage = yield* PostgresStorage.make({ pool, schema: schemas.fresh() })
      expect(yield* storage.health()).toEqual({ migrations_current: true })
      // Connections accepted, never answered: once the pool has dropped its cut clients, only
      // the connect timeout ends the wait for a new one.
      proxy.silence()
      while (pool.totalCount > 0) yield* Effect.sleep("10 millis")
      const silent = yield* Effect.flip(storage.health())
      expect(silent).toMatchObject({ _tag: "StorageError", operation: "health" })
      yield* Effect.promise(proxy.close)
      const refused = yield* Effect.flip(storage.health())
      expect(refused).toMatchObject({ _tag: "StorageError", operation: "health" })
      expect(String(refused.cause)).toMatch(/ECONNREFUSED/)
    }).pipe(Effect.scoped))
})

describe.skipIf(skipWithoutPostgres)("the plan of outbox.summary()", () => {
  it("reads the waiting messages from messages_send_queue_lanes once: no scan of messages, no probe per channel", async () => {
    const schema = schemas.fresh()
    const s = quoteIdentifier(schema)
    const pool = schemas.pool()
    await Effect.runPromise(PostgresStorage.migrate(pool, schema))
    // 20 000 outbox messages (160 of them waiting, on 4 active channels) and 20 000 inbound ones, over
    // 100 channels (10 paused, none with waiting messages);
    // written with the foreign keys off (the test role is a superuser), then analysed.
    await pool.query(`BEGIN; SET LOCAL session_replication_role = replica;
      INSERT INTO ${s}.channels (uuid, organization_id, provider, phone_number_id, display_phone_number, waba_id,
          access_token_sealed, access_token_last4, created_at, updated_at, throughput_mps, status, pacing_tat, cooldown_ms)
        SELECT 'ch' || i, 'org' || (i % 10), 'whatsapp_cloud', 'p' || i, '+1', 'w', 'x', 'wxyz', now(), now(), 50,
          CASE WHEN i % 10 = 0 THEN 'paused' ELSE 'active' END, 0, 0 FROM generate_series(1, 100) AS i;
      INSERT INTO ${s}.messages (uuid, organization_id, chat_uuid, contact_uuid, direction, type, status, channel_uuid,
          created_at, updated_at, recipient, send_class, expires_at, sequence)
        SELECT 'out' || i, 'org' || (i % 10), 'chat', 'contact', 'outbound', 'text', CASE WHEN i % 500 < 4 THEN 'queued' ELSE 'sent' END,
          'ch' || (1 + i % 100), now(), now(), '+1' || i, 'single', now(), i FROM generate_series(1, 20000) AS i;
      INSERT INTO ${s}.messages (uuid, organization_id, chat_uuid, contact_uuid, direction, type, status, channel_uuid, created_at, updated_at)
        SELECT 'in' || i, 'org' || (i % 10), 'chat', 'contact', 'inbound', 'text', 'delivered', 'ch' || (1 + i % 100), now(), now()
        FROM generate_series(1, 20000) AS i;
      COMMIT; ANALYZE ${s}.messages; ANALYZE ${s}.channels`)
    const plan = (await pool.query<{ "QUERY PLAN": string }>(`EXPLAIN (COSTS OFF) ${summarySql(s)}`)).rows
      .map((row) => row["QUERY PLAN"])
      .join("\n")
    expect(plan).not.toMatch(/Seq Scan on messages/)
    expect(plan.match(/messages_send_queue_lanes/g), plan).toHaveLength(1)
    expect((await pool.query(summarySql(s))).rows).toHaveLength(4 + 10)
  })
})

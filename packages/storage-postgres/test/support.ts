import { randomUUID } from "node:crypto"
import Pg from "pg"
import { Effect, Layer } from "effect"
import type { Storage } from "@switchboard/core"
import { PostgresStorage } from "@switchboard/storage-postgres"

/**
 * The PostgreSQL server the tests run against: `POSTGRES_URL` (`.ci/run` sets it to the
 * local server, postgres://postgres@127.0.0.1:5432/postgres). Without it every PostgreSQL
 * test skips, and this says why once per file.
 */
export const postgresUrl: string | undefined = process.env.POSTGRES_URL === "" ? undefined : process.env.POSTGRES_URL

/** `true` when the PostgreSQL tests must skip (no `POSTGRES_URL`). */
export const skipWithoutPostgres = postgresUrl === undefined
if (skipWithoutPostgres) {
  console.warn("storage-postgres: POSTGRES_URL is not set; the tests against a PostgreSQL server are skipped")
}

/**
 * The test schemas of one test file: `fresh()` names a new schema (`switchboard_test_…`),
 * `drop()` drops every schema it named (run it in `afterAll`), `empty(name)` empties every
 * table of a migrated schema but `schema_migrations` (faster than migrating a schema per
 * test: DESIGN's "one migrated schema per test file, emptied between tests").
 */
export const testSchemas = () => {
  const names: Array<string> = []
  let admin: Pg.Pool | undefined
  const adminPool = () => (admin ??= new Pg.Pool({ connectionString: postgresUrl!, max: 2 }))
  return {
    fresh: (): string => {
      const name = `switchboard_test_${randomUUID().replace(/-/g, "").slice(0, 16)}`
      names.push(name)
      return name
    },
    empty: async (schema: string): Promise<void> => {
      const tables = await adminPool().query<{ name: string }>(
        "SELECT tablename AS name FROM pg_tables WHERE schemaname = $1 AND tablename <> 'schema_migrations'",
        [schema]
      )
      if (tables.rows.length === 0) return
      // DELETE with the foreign-key and other triggers off for this transaction (the test
      // role is a superuser): ~2 ms, where TRUNCATE of the 26 tables took ~185 ms a test.
      await adminPool().query(
        `BEGIN; SET LOCAL session_replication_role = replica; ${tables.rows
          .map(({ name }) => `DELETE FROM "${schema}"."${name}";`)
          .join(" ")} COMMIT;`
      )
    },
    drop: async (): Promise<void> => {
      if (postgresUrl === undefined) return
      const pool = adminPool()
      try {
        for (const name of names.splice(0)) await pool.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`)
      } finally {
        admin = undefined
        await pool.end()
      }
    },
    /** The admin pool (for checks a test makes behind the store's back). */
    pool: adminPool
  }
}

/**
 * Two stores (two pools of 8) on `schema`, emptied first, as two processes would have them;
 * released with the caller's scope. The race tests run their contenders through them.
 */
export const twoStores = (schemas: ReturnType<typeof testSchemas>, schema: string) =>
  Effect.gen(function* () {
    yield* Effect.promise(() => schemas.empty(schema))
    const first = yield* PostgresStorage.make({ connectionString: postgresUrl!, schema, poolSize: 8 })
    const second = yield* PostgresStorage.make({ connectionString: postgresUrl!, schema, poolSize: 8 })
    return [first, second] as const
  })

/**
 * A Layer of {@link PostgresStorage} on `schema` that first empties it (`empty`) when
 * `emptyFirst`: a fresh, empty store per test on the file's one migrated schema.
 */
export const storageLayer = (
  schemas: ReturnType<typeof testSchemas>,
  schema: string,
  emptyFirst: boolean
): Layer.Layer<Storage, unknown> =>
  Layer.unwrapEffect(
    Effect.promise(() => (emptyFirst ? schemas.empty(schema) : Promise.resolve())).pipe(
      Effect.as(PostgresStorage.layer({ connectionString: postgresUrl!, schema, poolSize: 4 }))
    )
  )

/**
 * Another connection that holds `org`'s row lock (`BEGIN`, `SELECT … FOR NO KEY UPDATE`),
 * as a transaction of the organization's plan limits would, until `letGo` (or the end of
 * the caller's scope) rolls it back.
 */
export const organizationLockHolder = (schemas: ReturnType<typeof testSchemas>, schema: string, org: string) =>
  Effect.gen(function* () {
    const holder = yield* Effect.acquireRelease(
      Effect.promise(() => schemas.pool().connect()),
      (client) =>
        Effect.promise(async () => {
          await client.query("ROLLBACK")
          client.release()
        })
    )
    yield* Effect.promise(async () => {
      await holder.query("BEGIN")
      await holder.query(`SELECT 1 FROM "${schema}".organizations WHERE id = $1 FOR NO KEY UPDATE`, [org])
    })
    return {
      letGo: Effect.promise(() => holder.query("ROLLBACK")),
      /** Commits the holder's transaction (what it wrote with `query` stays). */
      commit: Effect.promise(() => holder.query("COMMIT")),
      /** A statement on the holder's connection, inside its transaction. */
      query: <Row extends Pg.QueryResultRow>(text: string, values?: ReadonlyArray<unknown>) =>
        Effect.promise(async () => (await holder.query<Row>(text, values as Array<unknown>)).rows),
      /** How many sessions wait for a lock the holder's session holds. */
      blocking: Effect.promise(async () =>
        Number((await holder.query<{ count: string }>(
          "SELECT COUNT(*) AS count FROM pg_stat_activity WHERE pg_backend_pid() = ANY (pg_blocking_pids(pid))"
        )).rows[0]!.count))
    }
  })


/**
 * A pg `Client` class that appends the text of every statement it sends to `texts` (pass
 * it as a pool's `Client`): the round-trips tests count a store's statements with it.
 */
export const recordingClient = (texts: Array<string>): typeof Pg.Client =>
  class RecordingClient extends Pg.Client {
    override query(...args: Array<unknown>): never {
      const first = args[0] as string | { text?: string } | undefined
      texts.push(typeof first === "string" ? first : (first?.text ?? ""))
      return (super.query as (...a: Array<unknown>) => never)(...args)
    }
  }

import { describe, expect, it } from "@effect/vitest"
import Pg from "pg"
import { Cause, Effect, Exit, Option } from "effect"
import { afterAll } from "vitest"
import { PostgresStorage, SchemaNotCurrentError, SchemaTooNewError } from "@switchboard/storage-postgres"
import { parseTimestamp } from "../src/internal/connection.js"
import { LATEST_VERSION } from "../src/migrations.js"
import { postgresUrl, skipWithoutPostgres, testSchemas } from "./support.js"

const schemas = testSchemas()

/** The versions `schema_migrations` of `schema` records, oldest first. */
const versionsOf = async (schema: string) =>
  (await schemas.pool().query<{ version: number }>(`SELECT version FROM "${schema}".schema_migrations ORDER BY version`)).rows.map(
    (row) => row.version
  )

/** The `StorageError` cause a failed exit carries. */
const causeOf = (exit: Exit.Exit<unknown, { readonly cause?: unknown }>) =>
  Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause))?.cause : undefined

describe("parseTimestamp (type parser of timestamptz)", () => {
  it("reads the offset, whatever the session's time zone, into an ISO string in UTC with ms", () => {
    expect(parseTimestamp("2026-11-27 04:39:11.123+00")).toBe("2026-11-27T04:39:11.123Z")
    expect(parseTimestamp("2026-11-27 06:39:11.123456+02")).toBe("2026-11-27T04:39:11.123Z")
    expect(parseTimestamp("2026-11-26 23:09:11-05:30")).toBe("2026-11-27T04:39:11.000Z")
    expect(parseTimestamp("2026-11-27 04:39:11.1+00")).toBe("2026-11-27T04:39:11.100Z")
  })
})

describe("PostgresStorage.redactUrl", () => {
  it("removes the user, the password and a password= parameter", () => {
    expect(PostgresStorage.redactUrl("postgres://app:s3cret@db:5432/app?sslmode=require&password=x")).toBe(
      "postgres://db:5432/app?sslmode=require"
    )
    expect(PostgresStorage.redactUrl("connect ECONNREFUSED postgresql://u:p@h/d")).toBe("connect ECONNREFUSED postgresql://h/d")
  })
})

describe.skipIf(skipWithoutPostgres)("migrations on the PostgreSQL server at POSTGRES_URL", () => {
  afterAll(schemas.drop)

  it.effect("two migrators at once (two pools, as two processes) migrate once; a third start finds nothing to do", () =>
    Effect.gen(function* () {
      const schema = schemas.fresh()
      const pools = [new Pg.Pool({ connectionString: postgresUrl! }), new Pg.Pool({ connectionString: postgresUrl! })]
      yield* Effect.addFinalizer(() => Effect.promise(() => Promise.all(pools.map((pool) => pool.end()))))
      const versions = yield* Effect.all(
        pools.map((pool) => PostgresStorage.migrate(pool, schema)),
        { concurrency: "unbounded" }
      )
      expect(versions).toEqual([LATEST_VERSION, LATEST_VERSION])
      expect(yield* Effect.promise(() => versionsOf(schema))).toEqual(
        Array.from({ length: LATEST_VERSION }, (_, index) => index + 1)
      )
      expect(yield* PostgresStorage.migrate(pools[0]!, schema)).toBe(LATEST_VERSION)
      expect(yield* Effect.promise(() => versionsOf(schema))).toHaveLength(LATEST_VERSION)
    }).pipe(Effect.scoped)
  )

  it.effect("refuses to start on a schema newer than the code, changing nothing", () =>
    Effect.gen(function* () {
      const schema = schemas.fresh()
      const pool = new Pg.Pool({ connectionString: postgresUrl! })
      yield* Effect.addFinalizer(() => Effect.promise(() => pool.end()))
      yield* PostgresStorage.migrate(pool, schema)
      yield* Effect.promise(() =>
        pool.query(`INSERT INTO "${schema}".schema_migrations (version, name) VALUES ($1, 'from the future')`, [
          LATEST_VERSION + 1
        ])
      )
      const exit = yield* Effect.exit(Effect.scoped(PostgresStorage.make({ pool, schema })))
      const cause = causeOf(exit)
      expect(cause).toBeInstanceOf(SchemaTooNewError)
      expect(String((cause as Error).message)).toContain(`version ${LATEST_VERSION + 1}, newer than this Switchboard`)
      expect(yield* Effect.promise(() => versionsOf(schema))).toHaveLength(LATEST_VERSION + 1)
    }).pipe(Effect.scoped)
  )

  it.effect("migrate: false checks without migrating: an empty schema fails naming the way out, a migrated one opens", () =>
    Effect.gen(function* () {
      const schema = schemas.fresh()
      const pool = new Pg.Pool({ connectionString: postgresUrl! })
      yield* Effect.addFinalizer(() => Effect.promise(() => pool.end()))
      const exit = yield* Effect.exit(Effect.scoped(PostgresStorage.make({ pool, schema, migrate: false })))
      expect(causeOf(exit)).toBeInstanceOf(SchemaNotCurrentError)
      const created = yield* Effect.promise(() =>
        pool.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema])
      )
      expect(created.rowCount).toBe(0)
      yield* PostgresStorage.migrate(pool, schema)
      const storage = yield* Effect.scoped(PostgresStorage.make({ pool, schema, migrate: false }))
      expect(yield* storage.organizations.list()).toEqual([])
    }).pipe(Effect.scoped)
  )

  it.effect("a pool passed in stays the host's: never ended, its global type parsers untouched", () =>
    Effect.gen(function* () {
      const schema = schemas.fresh()
      const pool = new Pg.Pool({ connectionString: postgresUrl! })
      yield* Effect.addFinalizer(() => Effect.promise(() => pool.end()))
      yield* Effect.scoped(PostgresStorage.make({ pool, schema }))
      // Released: the host's pool still answers, with pg's own parsers (bigint as text).
      const count = yield* Effect.promise(() => pool.query("SELECT COUNT(*) AS count FROM pg_namespace"))
      expect(typeof count.rows[0].count).toBe("string")
      expect(pool.ended).toBe(false)
    }).pipe(Effect.scoped)
  )

  it.effect("a server that cannot be reached fails with StorageError (migrate), its URL's password nowhere in it", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(
        Effect.scoped(
          PostgresStorage.make({ connectionString: "postgres://admin:s3cret@127.0.0.1:9/switchboard", statementTimeoutMs: 1000 })
        )
      )
      expect(Exit.isFailure(exit)).toBe(true)
      if (Exit.isFailure(exit)) {
        const failure = Option.getOrThrow(Cause.failureOption(exit.cause))
        expect(failure.operation).toBe("migrate")
        expect(JSON.stringify(failure)).not.toContain("s3cret")
        expect(String(failure.cause)).not.toContain("s3cret")
      }
    })
  )
})

import type Pg from "pg"
import { Effect, Layer, Runtime, type Scope } from "effect"
import { RateLimitStore, type RateLimitIncrement, type RateLimitStoreService, type StorageError } from "@switchboard/core"
import { acquirePool, DEFAULT_POOL_SIZE, openConnections } from "./internal/connection.js"
import { attempt, databaseOf } from "./internal/sql.js"
import { checkCurrent, migrate } from "./migrations.js"
import { DEFAULT_SCHEMA, type PostgresStorageOptions } from "./PostgresStorage.js"

/**
 * Options of the PostgreSQL rate-limit store: those of `PostgresStorage` (a
 * `connectionString` or the host's `pool`, `schema`, `migrate`, pool settings) plus
 * `pruneIntervalMs`, at most one pruning of ended windows per interval per store, in
 * milliseconds (default 60 000).
 *
 * @category models
 */
export type PostgresRateLimitStoreOptions = PostgresStorageOptions & { readonly pruneIntervalMs?: number }

/** Default of `pruneIntervalMs`. */
const DEFAULT_PRUNE_INTERVAL_MS = 60_000

/**
 * Connections of the store's pool opened at start and kept open while idle (at most the
 * pool's size): every request increments a counter, so none should wait for a connection
 * to be made — on the first request, or after a quiet spell (pg closes idle connections
 * after 10 s).
 */
export const RATE_LIMIT_CONNECTIONS_KEPT_OPEN = 2

/**
 * Opens (or takes) the pool, migrates the schema like `PostgresStorage.make` (the counters
 * live in the `UNLOGGED` table `rate_buckets`) and returns the {@link RateLimitStoreService}
 * (docs/rate-limits.md "Stores"). Each increment is one statement, `INSERT … ON CONFLICT
 * DO UPDATE SET count = count + 1 RETURNING count`: PostgreSQL locks the window's row for
 * the update, so N concurrent increments of every process on the database get 1..N, each
 * once; `incrementPromise` runs the same statement as a plain promise (the limiter's path,
 * bounded by one timer). Rows of ended windows are deleted at most once per `pruneIntervalMs` (by the
 * requests' `now`); a failed pruning is logged, never failing a request. Fails with
 * `StorageError` (operation `"migrate"`, or `"rateLimits.open"` when the pool's first
 * connections cannot be opened), then each increment only with `StorageError`
 * (`"rateLimits.increment"`). The pool is open before the first request:
 * {@link RATE_LIMIT_CONNECTIONS_KEPT_OPEN} connections are opened at start, and a pool the
 * store opened itself keeps them open however long it is idle.
 *
 * @category constructors
 */
export const make = (
  options: PostgresRateLimitStoreOptions
): Effect.Effect<RateLimitStoreService, StorageError, Scope.Scope> =>
  Effect.gen(function* () {
    const keepOpen = Math.min(RATE_LIMIT_CONNECTIONS_KEPT_OPEN, options.poolSize ?? DEFAULT_POOL_SIZE)
    const pool = yield* acquirePool({ ...options, keepOpen })
    const schema = options.schema ?? DEFAULT_SCHEMA
    yield* options.migrate === false ? checkCurrent(pool, schema) : migrate(pool, schema)
    yield* openConnections(pool, keepOpen, "rateLimits.open")
    return fromPool(pool, schema, options.pruneIntervalMs ?? DEFAULT_PRUNE_INTERVAL_MS, yield* Effect.runtime<never>())
  })

/**
 * A Layer providing {@link RateLimitStore} on PostgreSQL (see {@link make}); releasing it
 * ends a pool it opened.
 *
 * @category layers
 * @example
 * import { Layer } from "effect"
 * import { RateLimiter } from "@switchboard/core"
 * import { PostgresRateLimitStore } from "@switchboard/storage-postgres"
 *
 * const RateLimiterLive = RateLimiter.layer().pipe(
 *   Layer.provide(PostgresRateLimitStore.layer({ connectionString: "postgres://postgres@127.0.0.1:5432/app" }))
 * )
 */
export const layer = (options: PostgresRateLimitStoreOptions): Layer.Layer<RateLimitStore, StorageError> =>
  Layer.scoped(RateLimitStore, make(options))

const fromPool = (
  pool: Pg.Pool,
  schemaName: string,
  pruneIntervalMs: number,
  runtime: Runtime.Runtime<never>
): RateLimitStoreService => {
  const { schema, sql } = databaseOf(pool, schemaName)
  const increment = `INSERT INTO ${schema}.rate_buckets AS bucket (key, window_start, count, expires_at)
    VALUES ($1, $2, 1, $3)
    ON CONFLICT (key, window_start) DO UPDATE SET count = bucket.count + 1
    RETURNING count`
  const prune = `DELETE FROM ${schema}.rate_buckets WHERE expires_at <= $1`
  let nextPruneAt = Number.NEGATIVE_INFINITY
  const pruneIfDue = (now: number): Effect.Effect<void> => {
    if (now < nextPruneAt) return Effect.void
    nextPruneAt = now + pruneIntervalMs
    return attempt("rateLimits.prune", () => sql.run(prune, [now])).pipe(
      Effect.asVoid,
      Effect.catchAll((error) => Effect.logWarning("Pruning rate-limit windows failed", error.cause))
    )
  }
  const count = async (request: RateLimitIncrement) =>
    (await sql.row<{ count: number }>(increment, [request.key, request.windowStart, request.expiresAt]))!.count
  return {
    increment: (request: RateLimitIncrement) => {
      const counted = attempt("rateLimits.increment", () => count(request))
      return request.now < nextPruneAt ? counted : Effect.tap(counted, () => pruneIfDue(request.now))
    },
    // The limiter's path on the live clock (one timer instead of two fibers a request). A
    // due pruning runs beside the count, in the store's runtime (its logger), and never
    // fails or delays the increment.
    incrementPromise: (request: RateLimitIncrement) => {
      if (request.now >= nextPruneAt) Runtime.runFork(runtime)(pruneIfDue(request.now))
      return count(request)
    },
    synchronous: false
  }
}

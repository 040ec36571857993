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
 * (docs/rate-limits.md "Stores"). The increments asked for in one event-loop turn are one
 * statement, `INSERT … SELECT … FROM unnest(…) ON CONFLICT DO UPDATE SET count = count +
 * added RETURNING count`, one row per counter added to by how many of the turn's requests
 * count in it (the rows locked in key order, so concurrent groups never deadlock):
 * PostgreSQL locks each window's row for the update, and the store answers a counter's
 * requests `count - added + 1` … `count`, so N concurrent increments of every process on
 * the database get 1..N, each once. `incrementPromise` is the same as a plain promise (the
 * limiter's path, bounded by one timer). Rows of ended windows are deleted at most once per `pruneIntervalMs` (by the
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
  // One statement for the increments of one event-loop turn: one row per counter, added
  // to by how many of the turn's requests count in it. The rows are locked in one order
  // (ORDER BY) in every statement of every process, so two groups never deadlock.
  const increments = `INSERT INTO ${schema}.rate_buckets AS bucket (key, window_start, count, expires_at)
    SELECT * FROM unnest($1::text[], $2::bigint[], $3::integer[], $4::bigint[]) AS added (key, window_start, count, expires_at)
    ORDER BY key, window_start
    ON CONFLICT (key, window_start) DO UPDATE SET count = bucket.count + EXCLUDED.count
    RETURNING key, window_start, count`
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
  const count = incrementsPerTurn(async (counters) => {
    const rows = await sql.rows<{ key: string; window_start: number; count: number }>(increments, [
      counters.map((counter) => counter.key),
      counters.map((counter) => counter.windowStart),
      counters.map((counter) => counter.added),
      counters.map((counter) => counter.expiresAt)
    ])
    // `bigint` columns come back as numbers (the pool's type parsers).
    return rows.map((row) => ({ key: row.key, windowStart: row.window_start, count: row.count }))
  })
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

/** One counter of a turn's group: its key and window, its expiry and how many of the group count in it. */
interface GroupedCounter {
  readonly key: string
  readonly windowStart: number
  readonly expiresAt: number
  added: number
}

/** A counter's name within one group: its window and its key. */
const counterName = ({ key, windowStart }: { readonly key: string; readonly windowStart: number }): string => `${windowStart}:${key}`

/**
 * The increments asked for during one turn of the event loop, answered together at its end
 * (`setImmediate`) by one call of `countAll`: it gets each counter once, with how many of
 * the turn's increments count in it (`added`), adds them in one atomic step and resolves
 * with each counter's new count. The increments of one counter are then answered
 * `count - added + 1` … `count`, in the order they were asked, so N increments of one
 * counter, of one group or many, get 1..N, each once. A rejection (or a counter missing
 * from the answer) rejects every increment of the group.
 */
const incrementsPerTurn = (
  countAll: (
    counters: ReadonlyArray<GroupedCounter>
  ) => Promise<ReadonlyArray<{ readonly key: string; readonly windowStart: number; readonly count: number }>>
): ((request: RateLimitIncrement) => Promise<number>) => {
  let waiting: Array<{ readonly request: RateLimitIncrement; readonly resolve: (count: number) => void; readonly reject: (cause: unknown) => void }> = []
  const answer = (): void => {
    const group = waiting
    waiting = []
    const counters = new Map<string, GroupedCounter>()
    for (const { request } of group) {
      const name = counterName(request)
      const counter = counters.get(name)
      if (counter === undefined) counters.set(name, { key: request.key, windowStart: request.windowStart, expiresAt: request.expiresAt, added: 1 })
      else counter.added++
    }
    countAll([...counters.values()]).then(
      (rows) => {
        const next = new Map<string, number>()
        for (const row of rows) {
          const name = counterName(row)
          next.set(name, row.count - counters.get(name)!.added + 1)
        }
        for (const { request, resolve, reject } of group) {
          const name = counterName(request)
          const count = next.get(name)
          if (count === undefined) reject(new Error(`the counter ${request.key} was not answered`))
          else {
            resolve(count)
            next.set(name, count + 1)
          }
        }
      },
      (cause) => {
        for (const { reject } of group) reject(cause)
      }
    )
  }
  return (request) =>
    new Promise<number>((resolve, reject) => {
      if (waiting.push({ request, resolve, reject }) === 1) setImmediate(answer)
    })
}

import type Sqlite from "better-sqlite3"
import { Config, type ConfigError, Effect, Exit, Layer, type Scope } from "effect"
import {
  endOfTurnQueue,
  RateLimitStore,
  type StorageError,
  type RateLimitIncrement,
  type RateLimitStoreService
} from "@switchboard/core"
import { DEFAULT_BUSY_TIMEOUT_MS, openDatabase } from "./internal/connection.js"
import { attempt, attemptNow, statementsOf, type Statements } from "./internal/sql.js"
import { migrate } from "./migrations.js"

/**
 * Options of the SQLite rate-limit store.
 *
 * - `filename`: the database file, usually the one `SqliteStorage` uses (created when
 *   missing; its directory must exist). Every process opening the same file shares the
 *   limits. `":memory:"` gives a private store.
 * - `busyTimeoutMs`: how long an increment waits for another connection's write lock, in
 *   milliseconds; default 5000. better-sqlite3 is synchronous, so this, not the limiter's
 *   `storeTimeoutMs`, bounds a wait for the lock.
 * - `pruneIntervalMs`: at most one pruning of ended windows per interval per store, in
 *   milliseconds; default 60 000.
 *
 * @category models
 */
export interface SqliteRateLimitStoreOptions {
  readonly filename: string
  readonly busyTimeoutMs?: number
  readonly pruneIntervalMs?: number
}

/**
 * Opens `options.filename` like `SqliteStorage.make` (WAL, busy timeout, migrations: the
 * counters live in table `rate_buckets`, migration 5) and returns the
 * {@link RateLimitStoreService}; the connection belongs to the `Scope`. Fails with
 * `StorageError` (operation `"open"` or `"migrate"`). See {@link fromDatabase} for how
 * counting works.
 *
 * @category constructors
 */
export const make = (
  options: SqliteRateLimitStoreOptions
): Effect.Effect<RateLimitStoreService, StorageError, Scope.Scope> =>
  Effect.acquireRelease(
    attempt("open", () => openDatabase(options.filename, options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS)),
    close
  ).pipe(
    Effect.tap((db) => migrate(db)),
    Effect.map((db) => fromDatabase(db, options))
  )

/**
 * A Layer providing {@link RateLimitStore} on the SQLite file `options.filename` (see
 * {@link make}); releasing it closes the connection.
 *
 * @category layers
 * @example
 * import { Layer } from "effect"
 * import { RateLimiter } from "@switchboard/core"
 * import { SqliteRateLimitStore } from "@switchboard/storage-sqlite"
 *
 * const RateLimiterLive = RateLimiter.layer().pipe(
 *   Layer.provide(SqliteRateLimitStore.layer({ filename: "switchboard.db" }))
 * )
 */
export const layer = (options: SqliteRateLimitStoreOptions): Layer.Layer<RateLimitStore, StorageError> =>
  Layer.scoped(RateLimitStore, make(options))

/**
 * {@link layer} with options read from Effect's `Config`. Also fails with `ConfigError`.
 *
 * @category layers
 * @example
 * import { Config } from "effect"
 * import { SqliteRateLimitStore } from "@switchboard/storage-sqlite"
 *
 * const StoreLive = SqliteRateLimitStore.layerConfig({ filename: Config.string("SQLITE_FILE") })
 */
export const layerConfig = (
  config: Config.Config.Wrap<SqliteRateLimitStoreOptions>
): Layer.Layer<RateLimitStore, StorageError | ConfigError.ConfigError> =>
  Layer.scoped(RateLimitStore, Effect.flatMap(Config.unwrap(config), make))

/**
 * A Layer providing {@link RateLimitStore} on the host's own better-sqlite3 `Database`,
 * which is never closed here. Building it applies the pending migrations of the Switchboard
 * schema (the same list as `SqliteStorage`, which includes `rate_buckets`). Fails with
 * `StorageError` (operation `"migrate"`).
 *
 * @category layers
 * @example
 * import Database from "better-sqlite3"
 * import { SqliteRateLimitStore } from "@switchboard/storage-sqlite"
 *
 * const StoreLive = SqliteRateLimitStore.layerFromClient(new Database("app.db"))
 */
export const layerFromClient = (
  db: Sqlite.Database,
  options: { readonly pruneIntervalMs?: number } = {}
): Layer.Layer<RateLimitStore, StorageError> =>
  Layer.effect(RateLimitStore, Effect.as(migrate(db), fromDatabase(db, options)))

/** Default of `pruneIntervalMs`. */
const DEFAULT_PRUNE_INTERVAL_MS = 60_000

/**
 * The store on a migrated `db`. Increments of one bucket window are counted by the
 * statement `INSERT … ON CONFLICT DO UPDATE SET count = count + n` then the `SELECT` of the
 * new count, both under SQLite's write lock, so concurrent requests of every process on the
 * file get distinct counts. Not one statement with `RETURNING count`: SQLite runs a
 * `RETURNING` statement through a temporary table, and with the default `temp_store`
 * (file) every such statement in a transaction allocated and released about 100 KiB
 * (two `brk` system calls): ~35 µs per increment against ~2 µs for the two statements
 * (docs/benchmarks.md).
 *
 * Grouped commit (docs/rate-limits.md "Stores"): the increments asked for during one turn
 * of the event loop are queued and run together at its end (`setImmediate`), in one
 * `BEGIN IMMEDIATE` transaction. A commit costs about eight system calls (locks and WAL
 * writes, ~20 µs on the development machine) whatever it holds, so under load a request
 * pays a fraction of one. Within the group, the `n` increments of one key and window (the
 * requests of one organization, usually) are one pair of statements: the window's count
 * goes from `c` to `c + n` and they get `c + 1` … `c + n`, in the order they were asked,
 * exactly the counts `n` separate increments would have had. The transaction is opened and
 * committed inside that one callback: no lock is held between turns, so a file shared with
 * `SqliteStorage` (or a host's own connection) is safe. When the transaction fails, every
 * increment of the group fails with `StorageError` ("rateLimits.increment") and none is
 * counted.
 *
 * Rows of ended windows are deleted through the `expires_at` index at most once per
 * `pruneIntervalMs` (by the requests' `now`); a failed pruning is logged and retried at
 * the next interval, never failing a request.
 */
const fromDatabase = (
  db: Sqlite.Database,
  options: { readonly pruneIntervalMs?: number }
): RateLimitStoreService => {
  const statements = statementsOf(db)
  const pruneIntervalMs = options.pruneIntervalMs ?? DEFAULT_PRUNE_INTERVAL_MS
  let nextPruneAt = Number.NEGATIVE_INFINITY

  const prune = (now: number): Effect.Effect<void> => {
    if (now < nextPruneAt) return Effect.void
    nextPruneAt = now + pruneIntervalMs
    return attempt("rateLimits.prune", () => void statements.prepare(SQL.prune).run(now)).pipe(
      Effect.catchAll((error) => Effect.logWarning("Pruning rate-limit windows failed", error.cause))
    )
  }

  // Made once: better-sqlite3 prepares its BEGIN/COMMIT statements per transaction function.
  const incrementAll = db.transaction((group: ReadonlyArray<RateLimitIncrement>): Array<number> =>
    countsOf(statements, group)
  )
  const incrementAtEndOfTurn = endOfTurnQueue((group: ReadonlyArray<RateLimitIncrement>) => {
    const counts = attemptNow("rateLimits.increment", () => incrementAll.immediate(group))
    if (Exit.isFailure(counts)) return group.map(() => Exit.failCause(counts.cause))
    return counts.value.map((count) => Exit.succeed(count))
  })

  return {
    increment: (request: RateLimitIncrement) => {
      const counted = incrementAtEndOfTurn(request)
      // Pruning is due at most once per interval: most increments skip the extra step.
      return request.now < nextPruneAt ? counted : Effect.tap(counted, () => prune(request.now))
    },
    // The increment answers by the end of this turn of the event loop, its SQL being
    // synchronous on this thread: the limiter's timer could not help; a lock wait is
    // bounded by `busyTimeoutMs` instead.
    synchronous: true
  }
}

/**
 * Counts every increment of `group`, inside the group's write transaction: the increments
 * of each key and window together, by {@link incrementBy}. Returns each increment's count,
 * in the order of `group`.
 */
const countsOf = (statements: Statements, group: ReadonlyArray<RateLimitIncrement>): Array<number> => {
  if (group.length === 1) return [incrementBy(statements, group[0]!, 1)]
  // Per key and window: how many increments, then the count the next one of them gets.
  const windows = new Map<string, { readonly request: RateLimitIncrement; increments: number; next: number }>()
  const windowOf = (request: RateLimitIncrement) => `${request.windowStart} ${request.key}`
  for (const request of group) {
    const window = windows.get(windowOf(request))
    if (window === undefined) windows.set(windowOf(request), { request, increments: 1, next: 0 })
    else window.increments += 1
  }
  for (const window of windows.values()) {
    window.next = incrementBy(statements, window.request, window.increments) - window.increments + 1
  }
  return group.map((request) => windows.get(windowOf(request))!.next++)
}

/** Adds `increments` to the count of `request`'s key and window; returns the new count. */
const incrementBy = (statements: Statements, request: RateLimitIncrement, increments: number): number => {
  statements.prepare(SQL.increment).run(request.key, request.windowStart, increments, request.expiresAt)
  return statements.prepare<{ count: number }>(SQL.count).get(request.key, request.windowStart)!.count
}

const SQL = {
  increment: `INSERT INTO rate_buckets (key, window_start, count, expires_at) VALUES (?, ?, ?, ?)
    ON CONFLICT (key, window_start) DO UPDATE SET count = count + excluded.count`,
  count: "SELECT count FROM rate_buckets WHERE key = ? AND window_start = ?",
  prune: "DELETE FROM rate_buckets WHERE expires_at <= ?"
} as const

/** Closes a connection this module opened; a failure to close is logged, not raised. */
const close = (db: Sqlite.Database): Effect.Effect<void> =>
  attempt("close", () => db.close()).pipe(
    Effect.catchAll((error) => Effect.logWarning("Closing the SQLite rate-limit store failed", error.cause))
  )

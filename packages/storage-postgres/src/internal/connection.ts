import Pg from "pg"
import { Effect, type Scope } from "effect"
import { StorageError } from "@switchboard/core"

/** Default `application_name` of the pools this package opens (seen in `pg_stat_activity`). */
export const DEFAULT_APPLICATION_NAME = "switchboard"

/** Default of `statementTimeoutMs`: the longest one statement may run, in milliseconds. */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 30_000

/**
 * Default of `connectTimeoutMs`: the longest a query waits for a connection, in
 * milliseconds — to open one (a server that does not answer) or for one of the pool's to be
 * free. Without it, pg waits forever.
 */
export const DEFAULT_CONNECT_TIMEOUT_MS = 5_000

/** Default of `poolSize`: most connections one pool opens. */
export const DEFAULT_POOL_SIZE = 10

/** PostgreSQL type OIDs whose text form this package parses itself. */
const INT8 = 20
const NUMERIC = 1700
const TIMESTAMP = 1114
const TIMESTAMPTZ = 1184

/**
 * Parses `timestamptz` text (`2026-11-27 04:39:11.123+00`, in whatever `TimeZone` the
 * session has) into an ISO 8601 string in UTC with milliseconds (`2026-11-27T04:39:11.123Z`),
 * the form every Switchboard record carries. The offset is read, so no session setting
 * changes the instant (PgBouncer in transaction mode may hand us any server session).
 */
export const parseTimestamp = (text: string): string => {
  // The common case, a UTC session ("YYYY-MM-DD HH:MM:SS[.f…]+00"), is rewritten as text:
  // no Date, no regex (every timestamp of every row read comes through here).
  if (UTC_TIMESTAMP.test(text)) {
    const fraction = text.length === 22 ? ".000" : text.slice(19, -3).padEnd(4, "0").slice(0, 4)
    return `${text.slice(0, 10)}T${text.slice(11, 19)}${fraction}Z`
  }
  // "YYYY-MM-DD HH:MM:SS[.ffffff]±HH[:MM[:SS]]" → a form Date.parse reads exactly.
  const match = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})(\.\d+)?([+-]\d{2})(?::?(\d{2}))?(?::?(\d{2}))?$/.exec(text)
  if (match === null) return new Date(text).toISOString()
  const [, date, time, fraction = "", hours, minutes = "00"] = match
  const milliseconds = fraction === "" ? ".000" : fraction.padEnd(4, "0").slice(0, 4)
  return new Date(`${date}T${time}${milliseconds}${hours}:${minutes}`).toISOString()
}

/** A `timestamptz` in ISO style at offset zero, with 0 to 6 digits of fraction. */
const UTC_TIMESTAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,6})?\+00$/

/**
 * The type parsers of one pool (passed as its `types`, never set globally with
 * `pg.types.setTypeParser`, so the host's other pools keep theirs): `bigint` (`COUNT(*)`)
 * and `numeric` as JavaScript numbers, `timestamptz` as ISO strings ({@link parseTimestamp});
 * everything else as `pg` parses it by default (`jsonb` as values, `boolean`, `integer`).
 */
export const typeParsers: Pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") => {
    if (format === undefined || format === "text") {
      if (oid === INT8 || oid === NUMERIC) return (text: string) => Number(text)
      if (oid === TIMESTAMPTZ) return parseTimestamp
      if (oid === TIMESTAMP) return (text: string) => parseTimestamp(`${text}+00`)
    }
    return Pg.types.getTypeParser(oid, format)
  }) as Pg.CustomTypesConfig["getTypeParser"]
}

/** Settings of a pool this package opens (see `PostgresStorageOptions`). */
export interface PoolSettings {
  readonly connectionString: string
  readonly applicationName?: string
  readonly statementTimeoutMs?: number
  readonly connectTimeoutMs?: number
  readonly poolSize?: number
  /** Connections kept open however long they are idle (pg's `min`; default 0). */
  readonly keepOpen?: number
  /** How long a connection above `keepOpen` may stay idle before it is closed, in ms (pg's default: 10 000). */
  readonly idleTimeoutMs?: number
}

/**
 * How often a {@link QueryDeadlines} looks for queries past their limit, in milliseconds:
 * a query fails between its limit and its limit plus this.
 */
export const QUERY_DEADLINE_CHECK_MS = 1_000

/**
 * The client-side query timeout of one pool (docs/storage.md "Connection settings"): a
 * query run through {@link QueryDeadlines.run} still unanswered `limitMs` after it was sent
 * has its connection closed (`client.end()`, which destroys the socket of a client with a
 * query in flight), so the query fails at once with an `Error` saying it timed out (the
 * caller's `StorageError` carries it) instead of waiting on a server or network that no
 * longer answers. The caller releases that client with the error, so the pool drops it.
 * One timer for the pool, checking every {@link QUERY_DEADLINE_CHECK_MS} and running only
 * while queries are in flight. It replaces `pg`'s `query_timeout`, a timer per query that
 * held the query, and through it its rows, through a server's first scavenges
 * (docs/benchmarks.md "PostgreSQL `GET /chats`: the start-up's mark-compacts").
 */
export interface QueryDeadlines {
  /** The limit of one query, in milliseconds. */
  readonly limitMs: number
  /** Runs `query` on `client` under the limit: its result, or its error (the timeout's when it was cut). */
  readonly run: <A>(client: Pg.PoolClient, query: () => Promise<A>) => Promise<A>
}

/** A {@link QueryDeadlines} with the limit `limitMs` (milliseconds). */
export const queryDeadlines = (limitMs: number): QueryDeadlines => {
  /** The queries in flight: each client's (one at a time) and when it was sent (`performance.now()`, ms). */
  const inFlight = new Map<Pg.PoolClient, number>()
  const timedOut = new WeakSet<Pg.PoolClient>()
  let timer: ReturnType<typeof setInterval> | undefined
  const check = (): void => {
    if (inFlight.size === 0) {
      clearInterval(timer)
      timer = undefined
      return
    }
    const now = performance.now()
    for (const [client, sentAt] of inFlight) {
      if (now - sentAt < limitMs) continue
      inFlight.delete(client)
      timedOut.add(client)
      // A pool's client is a `pg.Client`; its `end()` destroys the socket of a client with a query in flight.
      ;(client as unknown as Pg.Client).end().catch(() => undefined)
    }
  }
  return {
    limitMs,
    run: async (client, query) => {
      inFlight.set(client, performance.now())
      if (timer === undefined) {
        timer = setInterval(check, QUERY_DEADLINE_CHECK_MS)
        timer.unref()
      }
      try {
        return await query()
      } catch (error) {
        if (timedOut.has(client)) throw new Error(`Query timed out after ${limitMs} ms (client side)`, { cause: error })
        throw error
      } finally {
        inFlight.delete(client)
      }
    }
  }
}

/** The client-side query timeout of each pool {@link openPool} opened (a host's own pool has none). */
const deadlinesOfPools = new WeakMap<Pg.Pool, QueryDeadlines>()

/** The {@link QueryDeadlines} of `pool` when {@link openPool} opened it, else `undefined`. */
export const deadlinesOf = (pool: Pg.Pool): QueryDeadlines | undefined => deadlinesOfPools.get(pool)

/**
 * Opens a pool on `connectionString` with this package's per-pool settings:
 * `application_name`, `statement_timeout` (server side, as a startup parameter) and the
 * same limit plus one second enforced client side ({@link QueryDeadlines}: it holds behind
 * PgBouncer, where startup parameters may be ignored), `idle_in_transaction_session_timeout`,
 * the connect timeout (`connectionTimeoutMillis`, {@link DEFAULT_CONNECT_TIMEOUT_MS}: opening a connection and
 * waiting for a free one both fail after it) and the {@link typeParsers}. Connections
 * open lazily: a wrong URL fails on the first query.
 */
export const openPool = (settings: PoolSettings): Pg.Pool => {
  const statementTimeout = settings.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS
  const pool = new Pg.Pool({
    connectionString: settings.connectionString,
    application_name: settings.applicationName ?? DEFAULT_APPLICATION_NAME,
    statement_timeout: statementTimeout,
    idle_in_transaction_session_timeout: statementTimeout * 2,
    connectionTimeoutMillis: settings.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    max: settings.poolSize ?? DEFAULT_POOL_SIZE,
    min: settings.keepOpen ?? 0,
    ...(settings.idleTimeoutMs === undefined ? {} : { idleTimeoutMillis: settings.idleTimeoutMs }),
    types: typeParsers
  })
  // An idle client that loses its connection (a server restart) emits `error` on the pool;
  // unhandled, it would end the process. The pool drops the client and opens a new one on
  // the next query, whose own failure reaches the caller as a StorageError.
  pool.on("error", () => {})
  deadlinesOfPools.set(pool, queryDeadlines(statementTimeout + 1_000))
  return pool
}

/**
 * The pool a store runs on: the host's `options.pool` as it is (never ended here), else a
 * pool opened with {@link openPool} on `options.connectionString` and ended when `Scope`
 * closes (a failure to end is logged, not raised).
 */
export const acquirePool = (options: {
  readonly pool?: Pg.Pool | undefined
  readonly connectionString?: string | undefined
  readonly applicationName?: string | undefined
  readonly statementTimeoutMs?: number | undefined
  readonly connectTimeoutMs?: number | undefined
  readonly poolSize?: number | undefined
  readonly keepOpen?: number | undefined
  readonly idleTimeoutMs?: number | undefined
}): Effect.Effect<Pg.Pool, never, Scope.Scope> =>
  options.pool !== undefined
    ? Effect.succeed(options.pool)
    : Effect.acquireRelease(
        Effect.sync(() =>
          openPool({
            connectionString: options.connectionString!,
            applicationName: options.applicationName,
            statementTimeoutMs: options.statementTimeoutMs,
            connectTimeoutMs: options.connectTimeoutMs,
            poolSize: options.poolSize,
            keepOpen: options.keepOpen,
            idleTimeoutMs: options.idleTimeoutMs
          })
        ),
        (pool) =>
          Effect.tryPromise(() => pool.end()).pipe(
            Effect.catchAll((cause) => Effect.logWarning("Closing the PostgreSQL pool failed", cause))
          )
      )

/**
 * Opens `count` connections of `pool` at once and returns them to it idle: a pool opened
 * before its first request, so that request does not wait for a connection to be made.
 * Fails with `StorageError` (operation `operation`) when a connection cannot be opened.
 */
export const openConnections = (pool: Pg.Pool, count: number, operation: string): Effect.Effect<void, StorageError> =>
  Effect.tryPromise({
    try: async () => {
      const clients = await Promise.allSettled(Array.from({ length: count }, () => pool.connect()))
      for (const client of clients) if (client.status === "fulfilled") client.value.release()
      const failed = clients.find((client) => client.status === "rejected")
      if (failed !== undefined) throw failed.reason
    },
    catch: (cause) => new StorageError({ operation, cause })
  })


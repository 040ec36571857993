import type Pg from "pg"
import { Effect } from "effect"
import { endOfTurnQueue, type PageRequest, StorageError } from "@switchboard/core"
import type { SqlDialect } from "@switchboard/storage-sql"
import { postgresDialect } from "../dialect.js"
import { deadlinesOf, type QueryDeadlines, typeParsers } from "./connection.js"

/**
 * Runs one asynchronous driver call and turns whatever it rejects with into a
 * `StorageError` carrying `operation` (the repository method, for example
 * `"organizations.insert"`) and the driver's error as `cause` (docs/errors.md "Server").
 * Every call into `pg` goes through here, once.
 */
export const attempt = <A>(operation: string, run: () => Promise<A>): Effect.Effect<A, StorageError> =>
  Effect.tryPromise({ try: run, catch: (cause) => new StorageError({ operation, cause }) })

/**
 * Whether `error` is PostgreSQL's unique_violation (SQLSTATE 23505), of the constraint
 * `constraint` when given (for example `messages_pkey`).
 */
export const isUniqueViolation = (error: unknown, constraint?: string): boolean => {
  const { code, constraint: violated } = (error ?? {}) as { readonly code?: unknown; readonly constraint?: unknown }
  return code === "23505" && (constraint === undefined || violated === constraint)
}

/**
 * The calls of one event-loop turn answered by one query (`endOfTurnQueue` of
 * @switchboard/core): at the turn's end, after every one of them was asked, `query` gets
 * them in the order they were asked and resolves one answer per call, in that order. One
 * round trip for the group; nothing is cached, so no answer is older than its call. A
 * rejection fails every call of the group with a `StorageError` carrying `operation`.
 */
export const oneQueryPerTurn = <Request, A>(
  operation: string,
  query: (requests: ReadonlyArray<Request>) => Promise<ReadonlyArray<A>>
): ((request: Request) => Effect.Effect<A, StorageError>) =>
  endOfTurnQueue((requests: ReadonlyArray<Request>) => {
    const answers = query(requests)
    // Each call gets a rejection through its own wait below; none is left unhandled.
    answers.catch(() => undefined)
    const wait = attempt(operation, () => answers)
    return requests.map((_, index) => Effect.map(wait, (all) => all[index]!))
  })

/**
 * What a repository queries through: the pool (each statement its own transaction) or the
 * client of one transaction. Values are bound as `$1, $2, …` parameters, never spliced
 * into the text.
 */
export interface Sql {
  /** Every row of the statement. */
  readonly rows: <Row = Record<string, unknown>>(text: string, values?: ReadonlyArray<unknown>) => Promise<Array<Row>>
  /** The first row of the statement, `undefined` when it returned none. */
  readonly row: <Row = Record<string, unknown>>(text: string, values?: ReadonlyArray<unknown>) => Promise<Row | undefined>
  /** Runs the statement and answers how many rows it inserted, updated or deleted. */
  readonly run: (text: string, values?: ReadonlyArray<unknown>) => Promise<number>
}

/**
 * One store: the pool, the schema every statement names (already quoted, for example
 * `"switchboard"`: write `${db.schema}.contacts`, never rely on `search_path`), and the
 * transaction helpers.
 */
export interface Database {
  readonly pool: Pg.Pool
  /** The schema's name as a quoted identifier, ready to splice into SQL text. */
  readonly schema: string
  /** The dialect of this store's statements (`@switchboard/storage-sql`): its tables named in {@link schema}. */
  readonly dialect: SqlDialect
  /** Statements outside any explicit transaction (each one atomic on its own). */
  readonly sql: Sql
  /**
   * Runs `fn` in one `READ COMMITTED` transaction on one client: commits when it resolves,
   * rolls back and rejects when it rejects. When `lockOrganization` is given, the
   * organization's row is locked first (`SELECT … FOR NO KEY UPDATE`), so check-then-write
   * steps of one organization (a plan limit and its insert) run one at a time across every
   * process, and every transaction takes its locks in the same order (the organization
   * first). A serialization failure or deadlock (40001, 40P01) reruns `fn` from the
   * start, at most {@link TRANSACTION_ATTEMPTS} times: `fn` must have no effect outside the
   * database.
   */
  readonly transaction: <A>(fn: (sql: Sql) => Promise<A>, options?: TransactionOptions) => Promise<A>
  /**
   * Runs the reads of `fn` in one `REPEATABLE READ READ ONLY` transaction: several
   * statements (a page and its total) see one snapshot.
   */
  readonly snapshot: <A>(fn: (sql: Sql) => Promise<A>) => Promise<A>
}

/** Options of {@link Database.transaction}. */
export interface TransactionOptions {
  /** Locks this organization's row first (see {@link Database.transaction}). */
  readonly lockOrganization?: string
}

/** How many times a transaction runs before a serialization failure or deadlock is raised. */
export const TRANSACTION_ATTEMPTS = 5

/** SQLSTATEs after which a transaction is rerun: serialization_failure and deadlock_detected. */
const RETRYABLE = new Set(["40001", "40P01"])

/** One statement's text and parameters, as `pg` takes them, with this package's type parsers. */
type QueryConfig = { readonly text: string; readonly values: Array<unknown> | undefined; readonly types: Pg.CustomTypesConfig }

/** The {@link Sql} over `query`, one statement's result. */
const sqlOver = (query: (config: QueryConfig) => Promise<Pg.QueryResult>): Sql => {
  // The type parsers go with every query, so a pool the host passed in (with its own
  // parsers, or pg's global ones) still answers numbers and ISO strings here.
  const run = (text: string, values?: ReadonlyArray<unknown>) =>
    query({ text, values: values as Array<unknown> | undefined, types: typeParsers })
  return {
    rows: async <Row>(text: string, values?: ReadonlyArray<unknown>) => (await run(text, values)).rows as Array<Row>,
    row: async <Row>(text: string, values?: ReadonlyArray<unknown>) => (await run(text, values)).rows[0] as Row | undefined,
    run: async (text: string, values?: ReadonlyArray<unknown>) => (await run(text, values)).rowCount ?? 0
  }
}

/**
 * One statement on `client`, through `pg`'s callback form. Its promise form (a promise of
 * its own, chained to a `.catch` that rewrites the stack) kept each result alive through
 * the scavenges of a server's first thousand requests or so: the rows died in V8's old
 * generation, and a mark-compact met a request every second or so (docs/benchmarks.md
 * "PostgreSQL `GET /chats`: the start-up's mark-compacts").
 */
const sendStatement = (client: Pg.PoolClient, config: QueryConfig): Promise<Pg.QueryResult> =>
  new Promise((resolve, reject) => client.query(config, (error, result) => (error ? reject(error) : resolve(result))))

/** One statement on `client` (of a transaction), under the pool's client-side timeout when it has one. */
const queryOnClient =
  (client: Pg.PoolClient, deadlines: QueryDeadlines | undefined) =>
  (config: QueryConfig): Promise<Pg.QueryResult> =>
    deadlines === undefined ? sendStatement(client, config) : deadlines.run(client, () => sendStatement(client, config))

/**
 * One statement on a client of `pool`, taken for it and released after, as `pool.query`
 * does (a client whose statement failed is released with the error, so the pool drops it),
 * under the pool's client-side timeout when it has one.
 */
const queryOnPool = (pool: Pg.Pool, deadlines: QueryDeadlines | undefined) => {
  if (deadlines === undefined) return (config: QueryConfig): Promise<Pg.QueryResult> => pool.query(config)
  return async (config: QueryConfig): Promise<Pg.QueryResult> => {
    const client = await pool.connect()
    let failed = true
    try {
      const result = await deadlines.run(client, () => sendStatement(client, config))
      failed = false
      return result
    } finally {
      client.release(failed)
    }
  }
}

/** The {@link Sql} of `pool`: each statement on a client of its own, under the pool's client-side timeout. */
export const sqlOf = (pool: Pg.Pool): Sql => sqlOver(queryOnPool(pool, deadlinesOf(pool)))

/**
 * Quotes `name` as a PostgreSQL identifier (`"name"`, inner quotes doubled). Schema names
 * come from configuration, never from a request.
 */
export const quoteIdentifier = (name: string): string => `"${name.replace(/"/g, '""')}"`

/** The {@link Database} over `pool` and `schemaName` (unquoted). */
export const databaseOf = (pool: Pg.Pool, schemaName: string): Database => {
  const schema = quoteIdentifier(schemaName)
  const deadlines = deadlinesOf(pool)
  const lockOrganization = `SELECT 1 FROM ${schema}.organizations WHERE id = $1 FOR NO KEY UPDATE`
  const inTransaction = async <A>(begin: string, fn: (sql: Sql) => Promise<A>, organization?: string): Promise<A> => {
    for (let attemptNumber = 1; ; attemptNumber++) {
      const client = await pool.connect()
      const sql = sqlOver(queryOnClient(client, deadlines))
      let broken = false
      try {
        await sql.run(begin)
        if (organization !== undefined) await sql.run(lockOrganization, [organization])
        const result = await fn(sql)
        await sql.run("COMMIT")
        return result
      } catch (error) {
        try {
          await sql.run("ROLLBACK")
        } catch {
          broken = true
        }
        const code = (error as { code?: unknown }).code
        if (typeof code === "string" && RETRYABLE.has(code) && attemptNumber < TRANSACTION_ATTEMPTS) {
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * attemptNumber))
          continue
        }
        throw error
      } finally {
        // A client whose rollback failed is in an unknown state: the pool discards it.
        client.release(broken)
      }
    }
  }
  return {
    pool,
    schema,
    dialect: postgresDialect(schema),
    sql: sqlOf(pool),
    transaction: (fn, options) => inTransaction("BEGIN", fn, options?.lockOrganization),
    snapshot: (fn) => inTransaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", fn)
  }
}

/**
 * Builds one repository of the Storage service from the {@link Database}. Adding a domain
 * means adding one factory in `src/repositories/`, its tables in `src/schema/`, and one
 * line in `PostgresStorage.ts`.
 */
export type RepositoryFactory<R> = (db: Database) => R

/** The `LIMIT` and `OFFSET` parameters of a page request. */
export const pageBounds = (page: PageRequest): [number, number] => [page.per_page, (page.page - 1) * page.per_page]

/**
 * `build` memoized by schema name: the statements of a repository on a schema, built the
 * first time that schema asks for them and kept for the process's life (a process serves
 * few schemas).
 */
export const perSchema = <A>(build: (schema: string) => A): ((schema: string) => A) => {
  const built = new Map<string, A>()
  return (schema) => {
    let value = built.get(schema)
    if (value === undefined) {
      value = build(schema)
      built.set(schema, value)
    }
    return value
  }
}

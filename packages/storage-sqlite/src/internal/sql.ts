import type Sqlite from "better-sqlite3"
import { Effect, Exit } from "effect"
import { StorageError } from "@switchboard/core"

/**
 * Runs one synchronous driver call and turns whatever it throws into a `StorageError`
 * carrying `operation` (the repository method, for example `"organizations.insert"`) and
 * the driver's error as `cause` (docs/errors.md "Server"). Every call into better-sqlite3 goes
 * through here (or {@link attemptNow}), once.
 */
export const attempt = <A>(operation: string, run: () => A): Effect.Effect<A, StorageError> =>
  Effect.try({ try: run, catch: (cause) => new StorageError({ operation, cause }) })

/**
 * {@link attempt}, run now: the driver call is made before this returns, its outcome an
 * `Exit` (itself an Effect a fiber can resume with). For answers computed at a chosen
 * moment, such as the end of an event-loop turn (`endOfTurnQueue` of @switchboard/core).
 */
export const attemptNow = <A>(operation: string, run: () => A): Exit.Exit<A, StorageError> => {
  try {
    return Exit.succeed(run())
  } catch (cause) {
    return Exit.fail(new StorageError({ operation, cause }))
  }
}

/**
 * The prepared statements of one Database: each SQL text is prepared on first use and the
 * same statement is reused afterwards. Preparing can throw, so call it inside
 * {@link attempt}.
 */
export interface Statements {
  /** The statement for `sql`, typed as returning rows of `Row`. */
  readonly prepare: <Row = unknown>(sql: string) => Sqlite.Statement<Array<unknown>, Row>
}

/**
 * Builds one repository of the Storage service from the Database and its statement cache.
 * Adding a domain means adding one factory in `src/repositories/` and one line in
 * `SqliteStorage.ts`.
 */
export type RepositoryFactory<R> = (db: Sqlite.Database, statements: Statements) => R

const caches = new WeakMap<Sqlite.Database, Map<string, Sqlite.Statement<Array<unknown>, unknown>>>()

/**
 * The {@link Statements} cache of `db`, shared by every repository and every Layer built on
 * that Database (the cache lives as long as the Database object).
 */
export const statementsOf = (db: Sqlite.Database): Statements => {
  let cache = caches.get(db)
  if (cache === undefined) {
    cache = new Map()
    caches.set(db, cache)
  }
  const statements = cache
  return {
    prepare: <Row>(sql: string) => {
      let statement = statements.get(sql)
      if (statement === undefined) {
        statement = db.prepare<Array<unknown>, unknown>(sql)
        statements.set(sql, statement)
      }
      return statement as Sqlite.Statement<Array<unknown>, Row>
    }
  }
}

/**
 * Runs `fn` inside one `BEGIN IMMEDIATE` transaction (better-sqlite3's
 * `db.transaction(…).immediate`, one per connection): the write lock is taken up front, so a check and the
 * write that depends on it (a plan limit, docs/storage.md "What each guarantees") cannot interleave with another
 * connection or process. Commits when `fn` returns, rolls back and rethrows when it throws;
 * nested calls become savepoints. `fn` must be synchronous (better-sqlite3 rejects a
 * transaction function that returns a promise); since it is, no other fiber can run on the
 * connection meanwhile. Throws like any driver call: run it inside {@link attempt}.
 *
 * @example
 * attempt("contacts.insertWithinLimit", () =>
 *   transaction(db, () => {
 *     const { count } = statements.prepare<{ count: number }>(COUNT).get(orgId)!
 *     if (limit !== null && count >= limit) return "limit_reached" as const
 *     statements.prepare(INSERT).run(row)
 *     return "inserted" as const
 *   }))
 */
export const transaction = <A>(db: Sqlite.Database, fn: () => A): A => runnerOf(db).immediate(fn) as A

/**
 * The answers to a group of writes asked for together (`endOfTurnQueue` of @switchboard/core), one per
 * request and in its order, each `writeOne(request)`'s result as an `Exit`: all in one
 * {@link transaction} (one write lock, one commit for the group: docs/benchmarks.md); when
 * that transaction fails (any request's write threw), every request is written again in a
 * transaction of its own, so a failure is answered to its own caller only and the others
 * are stored. `writeOne` runs inside a transaction and must be synchronous. A group of one
 * is one transaction.
 */
export const transactionPerGroup =
  <Request, A>(db: Sqlite.Database, operation: string, writeOne: (request: Request) => A) =>
  (requests: ReadonlyArray<Request>): ReadonlyArray<Exit.Exit<A, StorageError>> => {
    const alone = (request: Request) => attemptNow(operation, () => transaction(db, () => writeOne(request)))
    if (requests.length === 1) return [alone(requests[0]!)]
    const together = attemptNow(operation, () => transaction(db, () => requests.map(writeOne)))
    return Exit.isSuccess(together) ? together.value.map((written) => Exit.succeed(written)) : requests.map(alone)
  }

/**
 * Runs the reads of `fn` inside one deferred transaction (`BEGIN`), so that several
 * statements (a page and its total, a record and its links) see one snapshot of the file
 * even while other connections write; takes no write lock. Inside {@link transaction} it
 * becomes a savepoint. Throws like any driver call: run it inside {@link attempt}.
 */
export const snapshot = <A>(db: Sqlite.Database, fn: () => A): A => runnerOf(db).deferred(fn) as A

/**
 * One better-sqlite3 transaction function per connection, running the function it is
 * given: `db.transaction(fn)` builds four wrappers and defines twenty properties on them
 * on every call, a cost paid by every write of every request; this is built once.
 */
const runnerOf = (db: Sqlite.Database): Sqlite.Transaction<(fn: () => unknown) => unknown> => {
  let runner = runners.get(db)
  if (runner === undefined) {
    runner = db.transaction((fn: () => unknown) => fn())
    runners.set(db, runner)
  }
  return runner
}

const runners = new WeakMap<Sqlite.Database, Sqlite.Transaction<(fn: () => unknown) => unknown>>()

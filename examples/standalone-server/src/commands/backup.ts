import { closeSync, existsSync, openSync, rmSync, statSync } from "node:fs"
import { dirname, resolve } from "node:path"
import Sqlite from "better-sqlite3"
import type { Command } from "commander"
import { Config, Effect, Either } from "effect"
import { baseDirectoryConfig, databaseConfig, type DatabaseLocation, loadConfig } from "../config.js"
import { describeError } from "../failures.js"
import { SECRET_KEY_VARIABLE, secretKeyFileOf } from "../secretKey.js"

/**
 * What `backup --to FILE` prints on stdout (2-space indented JSON, like every command):
 * the copy's absolute path, its size in bytes, the database it was copied from, the
 * schema version it holds (the newest entry of its `schema_migrations`, `null` when it
 * has none) and when the copy began (ISO 8601 UTC; the copy holds what was committed then).
 *
 * @category cli
 */
export interface BackupResult {
  readonly backup: string
  readonly bytes: number
  readonly database: string
  readonly schema_version: number | null
  readonly started_at: string
}

/**
 * Registers `backup --to FILE` (docs/standalone-server.md "`backup`: a copy of the SQLite
 * database"): copies the SQLite database of `DATABASE_URL` into the new file `FILE` with
 * `VACUUM INTO`, a consistent snapshot taken in one read transaction while the server
 * keeps writing (it never waits for writers to pause, and writers never wait for it).
 * Needs no secret key; opens the database read-only, so it never migrates or changes it.
 * Prints {@link BackupResult}. Refuses, exiting 1 with `error: …` on stderr and nothing
 * written: a `FILE` that exists or whose directory does not, a `DATABASE_URL` that is not
 * SQLite (`memory:`; PostgreSQL and MongoDB are backed up with `pg_dump` and `mongodump`),
 * and a SQLite file that does not exist. A relative `FILE` is resolved like a relative
 * `DATABASE_URL`: against the directory the command was run from (npm's `INIT_CWD`).
 *
 * @category cli
 */
export const registerBackupCommand = (program: Command): void => {
  program
    .command("backup")
    .description("copy the SQLite database into a new FILE, consistent while the server keeps writing; prints {backup, bytes, …}")
    .requiredOption("--to <file>", "the new file to write (it must not exist; its directory must)")
    .action(async (options: { readonly to: string }) => {
      const setup = await Effect.runPromise(Effect.either(loadConfig(Config.all([databaseConfig, baseDirectoryConfig]))))
      const outcome = Either.flatMap(Either.mapLeft(setup, (error) => error.message), ([location, baseDirectory]) =>
        backup(location, resolve(baseDirectory, options.to))
      )
      if (Either.isLeft(outcome)) {
        process.exitCode = 1
        process.stderr.write(`error: ${outcome.left}\n`)
        return
      }
      process.stdout.write(`${JSON.stringify(outcome.right, null, 2)}\n`)
    })
}

/**
 * The work of `backup --to FILE` once `DATABASE_URL` is parsed: copies the database of
 * `location` into the new file `target` (an absolute path) and answers what the command
 * prints, or the one-line reason it refused or failed (nothing kept: a copy that failed
 * half-way is removed). Gives `report` the `Database:` line and the secret-key note (for
 * stderr).
 *
 * @category cli
 */
export const backup = (
  location: DatabaseLocation,
  target: string,
  report: (line: string) => void = (line) => process.stderr.write(line)
): Either.Either<BackupResult, string> => {
  const source = sqliteFileOf(location)
  if (Either.isLeft(source)) return Either.left(source.left)
  const refusal = refuseTarget(target) ?? refuseSource(source.right)
  if (refusal !== undefined) return Either.left(refusal)
  report(`Database: sqlite:${source.right}\n`)
  try {
    // Created empty and exclusively first (SQLite writes into an empty file): a file that
    // appears meanwhile is refused here, and the one removed after a failure is ours.
    closeSync(openSync(target, "wx"))
  } catch (error) {
    return Either.left(`cannot create ${target}: ${describeError(error)}`)
  }
  try {
    const result = copy(source.right, target)
    report(
      `note: channel access tokens and webhook secrets in the copy stay encrypted under the secret key ` +
        `(${SECRET_KEY_VARIABLE}, else ${secretKeyFileOf(source.right)}): keep a copy of the key apart from the backups ` +
        `(a restored copy needs it; a key stored with every backup is exposed with them)\n`
    )
    return Either.right(result)
  } catch (error) {
    rmSync(target, { force: true })
    return Either.left(`the copy failed, nothing was kept: ${describeError(error)}`)
  }
}

/** The SQLite file of `DATABASE_URL`, or why another store cannot be backed up here. */
const sqliteFileOf = (location: DatabaseLocation): Either.Either<string, string> => {
  switch (location._tag) {
    case "Sqlite":
      return Either.right(location.filename)
    case "Memory":
      return Either.left("DATABASE_URL is memory:, which lives only inside a server process: there is no database to back up")
    case "Postgres":
      return Either.left(`backup copies SQLite databases only; back up PostgreSQL with pg_dump (for example pg_dump --schema=${location.schema} -Fc)`)
    case "MongoDb":
      return Either.left("backup copies SQLite databases only; back up MongoDB with mongodump")
  }
}

/** Why `target` cannot receive the copy, if it cannot: it exists, or its directory does not. */
const refuseTarget = (target: string): string | undefined => {
  if (existsSync(target)) return `${target} already exists: backup never overwrites a file, choose a new name`
  const directory = dirname(target)
  if (!existsSync(directory) || !statSync(directory).isDirectory()) return `the directory ${directory} does not exist: create it first`
  return undefined
}

/** Why `filename` cannot be copied, if it cannot: it does not exist. */
const refuseSource = (filename: string): string | undefined =>
  existsSync(filename) ? undefined : `the database ${filename} (DATABASE_URL) does not exist: there is nothing to back up`

/**
 * `VACUUM INTO ?` on a read-only connection into the empty file `target`: its name is a
 * bound parameter (never spliced into SQL), and an absolute path (never read as a `file:`
 * URI). Waits up to 5 s for a lock a checkpoint may briefly hold.
 */
const copy = (source: string, target: string): BackupResult => {
  const db = new Sqlite(source, { readonly: true, fileMustExist: true, timeout: 5_000 })
  try {
    const started_at = new Date().toISOString()
    db.prepare("VACUUM INTO ?").run(target)
    return { backup: target, bytes: statSync(target).size, database: source, schema_version: schemaVersionOf(target), started_at }
  } finally {
    db.close()
  }
}

/** The newest version in the copy's `schema_migrations`; `null` without that table. */
const schemaVersionOf = (filename: string): number | null => {
  const db = new Sqlite(filename, { readonly: true, fileMustExist: true })
  try {
    const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get()
    return table === undefined ? null : (db.prepare<[], number | null>("SELECT MAX(version) FROM schema_migrations").pluck().get() ?? null)
  } finally {
    db.close()
  }
}

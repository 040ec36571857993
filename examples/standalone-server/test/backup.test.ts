import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import Sqlite from "better-sqlite3"
import { Either } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backup } from "../src/commands/backup.js"
import type { DatabaseLocation } from "../src/config.js"
import {
  assertBuilt,
  killServers,
  removeTemporaryDirectories,
  runCli,
  startServer,
  temporaryDatabaseUrl,
  temporaryDirectory
} from "./helpers.js"

// `backup --to FILE` (docs/standalone-server.md "`backup`"): a consistent copy of the SQLite
// database taken while the server keeps writing, and its refusals. One server for the file.

/** A Dutch mobile number, distinct for each `n`. */
const phone = (n: number): string => `+3163${String(n).padStart(7, "0")}`

/** The phones of the contacts stored in the SQLite file `filename`, read without writing. */
const storedPhones = (filename: string): Set<string> => {
  const db = new Sqlite(filename, { readonly: true, fileMustExist: true })
  try {
    return new Set(db.prepare<[], string>("SELECT phone FROM contacts").pluck().all())
  } finally {
    db.close()
  }
}

beforeAll(assertBuilt)
afterAll(() => {
  killServers()
  removeTemporaryDirectories()
})

describe("backup --to FILE", () => {
  it("copies the database while the server keeps writing: the copy passes integrity_check and holds every contact answered before", async () => {
    const env = { DATABASE_URL: temporaryDatabaseUrl() }
    const server = await startServer(env)
    const { api_key: apiKey } = JSON.parse(server.output().stdout) as { readonly api_key: string }
    const create = async (rows: ReadonlyArray<{ readonly phone: string; readonly first_name: string }>) => {
      const response = await fetch(`${server.baseUrl}/contacts/bulk`, {
        method: "POST",
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ contacts: rows })
      })
      expect(response.status, await response.clone().text()).toBe(200)
    }
    // A database worth copying, then one contact per request, in a loop, until told to stop.
    await create(Array.from({ length: 1000 }, (_, n) => ({ phone: phone(n), first_name: `Bulk ${n}` })))
    const answered: Array<string> = []
    let writing = true
    const writer = (async () => {
      for (let n = 100_000; writing; n++) {
        await create([{ phone: phone(n), first_name: `Loop ${n}` }])
        answered.push(phone(n))
      }
    })()
    while (answered.length < 20) await new Promise((resolve) => setTimeout(resolve, 10))

    const target = join(temporaryDirectory(), "copy.db")
    const answeredBefore = [...answered]
    const result = await runCli(["backup", "--to", target], env)
    const answeredDuring = answered.length - answeredBefore.length
    writing = false
    await writer

    expect(result.code, result.stderr).toBe(0)
    const printed = JSON.parse(result.stdout) as Record<string, unknown>
    expect(printed).toMatchObject({ backup: target, database: env.DATABASE_URL.slice("sqlite:".length) })
    expect(printed.bytes).toBe(readFileSync(target).length)
    expect(printed.schema_version).toEqual(expect.any(Number))
    expect(result.stderr).toContain("keep a copy of the key apart from the backups")
    // The server kept writing while the CLI ran (the case under test happened).
    expect(answeredDuring).toBeGreaterThan(0)

    const copy = new Sqlite(target, { readonly: true, fileMustExist: true })
    try {
      expect(copy.pragma("integrity_check", { simple: true })).toBe("ok")
    } finally {
      copy.close()
    }
    const copied = storedPhones(target)
    for (const expected of [phone(0), phone(999), ...answeredBefore]) expect(copied.has(expected), expected).toBe(true)
    expect(copied.size).toBeLessThanOrEqual(storedPhones(env.DATABASE_URL.slice("sqlite:".length)).size)
  })

  it("refuses another store from the CLI: exit code 1, the reason on stderr, nothing on stdout, no credentials", async () => {
    const target = join(temporaryDirectory(), "copy.db")
    const result = await runCli(["backup", "--to", target], { DATABASE_URL: "postgres://admin:s3cret@127.0.0.1:9/app" })
    expect(result).toMatchObject({ code: 1, stdout: "" })
    expect(result.stderr).toMatch(/^error: backup copies SQLite databases only; back up PostgreSQL with pg_dump/)
    expect(result.stderr).not.toContain("s3cret")
    expect(existsSync(target)).toBe(false)
  })
})

describe("backup (the command's work, in process)", () => {
  const lines: Array<string> = []
  const report = (line: string) => void lines.push(line)
  const sqlite = (filename: string): Extract<DatabaseLocation, { readonly _tag: "Sqlite" }> => ({ _tag: "Sqlite", filename })

  it("neither migrates nor needs the secret key: a file that is not a Switchboard database is copied as it is", () => {
    const directory = temporaryDirectory()
    const source = join(directory, "plain.db")
    const db = new Sqlite(source)
    db.exec("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('kept')")
    db.close()
    const target = join(temporaryDirectory(), "it's \"odd\".db")
    const outcome = backup(sqlite(source), target, report)
    expect(outcome).toEqual(Either.right(expect.objectContaining({ backup: target, database: source, schema_version: null })))
    expect(lines.join("")).toContain(`Database: sqlite:${source}\n`)
    for (const filename of [source, target]) {
      const read = new Sqlite(filename, { readonly: true })
      expect(read.prepare("SELECT name FROM sqlite_master").pluck().all()).toEqual(["notes"])
      read.close()
    }
    expect(readdirSync(directory)).toEqual(["plain.db"])
  })

  it("refuses, nothing written: an existing FILE, a missing directory, a missing database, memory:, PostgreSQL, MongoDB", () => {
    const directory = temporaryDirectory()
    const existing = join(directory, "existing.db")
    writeFileSync(existing, "already here")
    lines.length = 0
    const source = sqlite(join(directory, "plain.db"))
    const plain = new Sqlite(source.filename)
    plain.exec("CREATE TABLE t (x)")
    plain.close()
    const cases: ReadonlyArray<readonly [DatabaseLocation, string, RegExp]> = [
      [source, existing, /already exists: backup never overwrites/],
      [source, join(directory, "nowhere", "copy.db"), /the directory .*nowhere does not exist/],
      [sqlite(join(directory, "missing.db")), join(directory, "a.db"), /missing\.db \(DATABASE_URL\) does not exist/],
      [{ _tag: "Memory" }, join(directory, "b.db"), /memory:, which lives only inside a server process/],
      [{ _tag: "Postgres", url: "postgres://127.0.0.1:9/app", schema: "switchboard" }, join(directory, "c.db"), /pg_dump --schema=switchboard/],
      [{ _tag: "MongoDb", url: "mongodb://127.0.0.1:9/app" }, join(directory, "d.db"), /mongodump/]
    ]
    for (const [location, target, message] of cases) {
      const outcome = backup(location, target, report)
      expect(Either.isLeft(outcome) && outcome.left, target).toMatch(message)
    }
    expect(readFileSync(existing, "utf8")).toBe("already here")
    expect(readdirSync(directory).sort()).toEqual(["existing.db", "plain.db"])
    expect(lines).toEqual([])
  })

  it("a copy that fails removes its partial file: a source that is not a SQLite database", () => {
    const directory = temporaryDirectory()
    const source = join(directory, "junk.db")
    writeFileSync(source, "not a database, ".repeat(100))
    const target = join(directory, "copy.db")
    const outcome = backup(sqlite(source), target, report)
    expect(Either.isLeft(outcome) && outcome.left).toMatch(/^the copy failed, nothing was kept: file is not a database/)
    expect(existsSync(target)).toBe(false)
  })
})

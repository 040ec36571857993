import Sqlite from "better-sqlite3"
import { spawn } from "node:child_process"
import { once } from "node:events"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { applyPending, migrations } from "../src/migrations.js"

/**
 * Fresh database paths, each in its own temporary directory; `cleanup` removes every
 * directory handed out (call it from `afterAll`).
 */
export const tempFiles = () => {
  const dirs: Array<string> = []
  return {
    file: (name = "switchboard.db"): string => {
      const dir = mkdtempSync(join(tmpdir(), "switchboard-sqlite-"))
      dirs.push(dir)
      return join(dir, name)
    },
    cleanup: (): void => {
      for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
    }
  }
}

/** The EXPLAIN QUERY PLAN details of `sql` with `params` on a fresh, fully migrated in-memory schema. */
export const planOnFreshSchema = (sql: string, params: ReadonlyArray<unknown>): Array<string> => {
  const db = new Sqlite(":memory:")
  applyPending(db, migrations, "2026-01-01T00:00:00.000Z")
  try {
    return db
      .prepare<Array<unknown>, { detail: string }>(`EXPLAIN QUERY PLAN ${sql}`)
      .all(...params)
      .map((row) => row.detail)
  } finally {
    db.close()
  }
}

/**
 * Counts how many times the statements `db` prepares from now on, whose SQL `matches`, are
 * executed (`run`, `get`, `all`): how many statements an operation costs. `reset()` starts
 * the count over.
 */
export const countExecutions = (db: Sqlite.Database, matches: (sql: string) => boolean) => {
  let executions = 0
  const prepare = db.prepare.bind(db) as (sql: string) => Sqlite.Statement
  db.prepare = ((sql: string) => {
    const statement = prepare(sql)
    if (matches(sql)) {
      for (const method of ["run", "get", "all"] as const) {
        const execute = statement[method].bind(statement) as (...parameters: Array<unknown>) => unknown
        ;(statement as unknown as Record<string, unknown>)[method] = (...parameters: Array<unknown>) => {
          executions += 1
          return execute(...parameters)
        }
      }
    }
    return statement
  }) as typeof db.prepare
  return {
    count: (): number => executions,
    reset: (): void => {
      executions = 0
    }
  }
}

/**
 * Counts the write transactions (`BEGIN IMMEDIATE`) the store on `db` runs from now on:
 * wraps `db.transaction` before the store is built (`SqliteStorage.layerFromClient(db)`), so
 * each transaction function it makes counts its `.immediate` calls. `reset()` starts over.
 */
export const countWriteTransactions = (db: Sqlite.Database) => {
  let transactions = 0
  const make = db.transaction.bind(db) as (fn: (...args: Array<unknown>) => unknown) => Sqlite.Transaction<(...args: Array<unknown>) => unknown>
  db.transaction = ((fn: (...args: Array<unknown>) => unknown) => {
    const made = make(fn)
    // Its properties are read-only: a new function with the same ones, `immediate` counting.
    return Object.assign((...args: Array<unknown>) => made(...args), {
      default: made.default,
      deferred: made.deferred,
      exclusive: made.exclusive,
      immediate: (...args: Array<unknown>) => {
        transactions += 1
        return made.immediate(...args)
      }
    })
  }) as typeof db.transaction
  return {
    count: (): number => transactions,
    reset: (): void => {
      transactions = 0
    }
  }
}

/**
 * Child processes running the fixture script `fixture` (a path under `test/fixtures/`)
 * through vite-node, each on the SQLite file it is given (`SWITCHBOARD_SQLITE_FILE`), for the
 * tests of several processes on one file. `available` is false (and a reason printed) when
 * vite-node is not installed. `startChild(filename)` answers `ready` (the child printed
 * `ready`, or exited first), `go()` (the signal it waits for on stdin) and `exited` (its
 * exit code and everything it printed).
 */
export const fixtureProcesses = (fixture: string) => {
  const root = fileURLToPath(new URL("../../../", import.meta.url))
  const viteNode = `${root}node_modules/vite-node/vite-node.mjs`
  const config = fileURLToPath(new URL("../vitest.config.ts", import.meta.url))
  const script = fileURLToPath(new URL(`./fixtures/${fixture}`, import.meta.url))
  const available = existsSync(viteNode)
  if (!available) console.warn(`skipped: vite-node is not installed at ${viteNode}`)
  const startChild = (filename: string) => {
    const child = spawn(process.execPath, [viteNode, "--config", config, script], {
      cwd: root,
      env: { ...process.env, SWITCHBOARD_SQLITE_FILE: filename },
      stdio: ["pipe", "pipe", "pipe"]
    })
    let output = ""
    const ready = new Promise<void>((resolve) => {
      child.stdout.on("data", (chunk: Buffer) => {
        output += chunk.toString()
        if (output.includes("ready\n")) resolve()
      })
      child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
    })
    const exited = once(child, "exit").then(([code]) => ({ code: code as number | null, output }))
    return { ready: Promise.race([ready, exited]), go: () => child.stdin.end("go\n"), exited }
  }
  return { available, startChild }
}

import type Sqlite from "better-sqlite3"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

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

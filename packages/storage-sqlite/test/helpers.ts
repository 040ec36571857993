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

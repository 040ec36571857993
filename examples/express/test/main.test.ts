import { spawn, type ChildProcess } from "node:child_process"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"

const main = fileURLToPath(new URL("../dist/main.js", import.meta.url))
const directory = mkdtempSync(join(tmpdir(), "switchboard-express-"))
afterAll(() => rmSync(directory, { recursive: true, force: true }))

/** Starts the built example; resolves with its origin and the credentials line once it listens. */
const start = (sqliteFile: string) =>
  new Promise<{ child: ChildProcess; origin: string; stdout: () => string }>((resolve, reject) => {
    const child = spawn(process.execPath, [main], {
      env: { ...process.env, PORT: "0", HOST: "127.0.0.1", SQLITE_FILE: sqliteFile },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout!.on("data", (chunk: Buffer) => {
      stdout += chunk.toString()
    })
    child.stderr!.on("data", (chunk: Buffer) => {
      stderr += chunk.toString()
      const listening = /Express app on (http:\/\/127\.0\.0\.1:\d+)/.exec(stderr)
      if (listening !== null) resolve({ child, origin: listening[1]!, stdout: () => stdout })
    })
    child.once("exit", (code) => reject(new Error(`the example exited (${code}) before listening: ${stderr}`)))
  })

const stop = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    child.once("exit", (code) => resolve(code))
    child.kill("SIGTERM")
  })

describe("src/main.ts (built): the example app on SQLite", () => {
  it.skipIf(!existsSync(main))("prints the demo key once, serves its routes and the API, and stops cleanly on SIGTERM", async () => {
    const sqliteFile = join(directory, "nested", "example.db")
    const first = await start(sqliteFile)
    try {
      await expect(fetch(`${first.origin}/health`).then((response) => response.json())).resolves.toEqual({ status: "ok" })
      const credentials = JSON.parse(first.stdout().trim()) as { org_id: string; api_key: string }
      const verified = await fetch(`${first.origin}/api/v1/api/verify`, {
        headers: { authorization: `Bearer ${credentials.api_key}` }
      })
      expect(verified.status).toBe(200)
      expect(((await verified.json()) as { data: { organization: { id: string } } }).data.organization.id).toBe(credentials.org_id)
    } finally {
      expect(await stop(first.child)).toBe(0)
    }
    expect(existsSync(sqliteFile)).toBe(true)

    // Second start on the same file: the organization exists, nothing is printed.
    const second = await start(sqliteFile)
    expect(await stop(second.child)).toBe(0)
    expect(second.stdout()).toBe("")
  }, 60_000)
})

if (!existsSync(main)) console.warn(`examples/express: ${main} is missing (run npm run build); the main.ts test is skipped`)

import { appendFileSync } from "node:fs"
import { addEqualityTesters } from "@effect/vitest"
import { afterAll, beforeEach } from "vitest"
import { runAfterFile } from "./vitest.after-file.js"

addEqualityTesters()

// Registered first, so it runs after the test file's own afterAll hooks (after hooks run
// newest first): closes what shared helpers opened for this file (vitest.after-file.ts).
afterAll(runAfterFile)

// A trace of the run, for CI's watchdog (.ci/run): with SWITCHBOARD_TEST_TRACE naming a
// file, each test file appends a line when it starts (before its module is imported, so a
// file stuck while loading is named), one per test as it starts, and one when it ends. A
// run that never ends then says which files and tests were still running.
const trace = process.env.SWITCHBOARD_TEST_TRACE
if (trace !== undefined && trace !== "") {
  // Vitest's worker state names the file being run; it is internal, so read defensively.
  const file = (globalThis as { __vitest_worker__?: { filepath?: string } }).__vitest_worker__?.filepath ?? "unknown file"
  const write = (event: string, detail = "") => {
    try {
      appendFileSync(trace, `${JSON.stringify({ event, file, detail, pid: process.pid, at: new Date().toISOString() })}\n`)
    } catch {
      // A trace that cannot be written changes nothing about the tests.
    }
  }
  write("file-started")
  beforeEach((context) => write("test-started", context.task.name))
  afterAll(() => write("file-finished"))
}

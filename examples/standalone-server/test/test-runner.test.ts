/**
 * The root `test.mjs`, which `npm test` runs (README "Development"): two vitest runs side by
 * side over the shards of the test files, each line they print prefixed with its shard,
 * their JSON reports merged into the one `--outputFile.json` names, one summary line, and an
 * exit code that fails when any shard failed or no shard found a test file. Run here on the
 * storage-sql project (three small files, a few seconds).
 */
import { execFile } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { basename, join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { childEnvironment, type CommandResult } from "./helpers.js"

const repository = fileURLToPath(new URL("../../../", import.meta.url))
const scratch = mkdtempSync(join(tmpdir(), "switchboard-test-runner-"))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

/** Runs `node test.mjs ...args` at the repository's root with two shards. */
const testScript = (args: ReadonlyArray<string>): Promise<CommandResult> =>
  new Promise((resolve) => {
    execFile(process.execPath, ["test.mjs", ...args], { cwd: repository, env: childEnvironment({ SWITCHBOARD_TEST_SHARDS: "2" }) }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, stdout, stderr })
    )
  })

interface Report {
  readonly numPassedTests: number
  readonly numFailedTests: number
  readonly success: boolean
  readonly testResults: ReadonlyArray<{ readonly name: string; readonly assertionResults: ReadonlyArray<{ readonly status: string }> }>
}

describe("test.mjs (npm test)", () => {
  it("runs the shards side by side and merges their reports: every file once, the counts summed, one summary line", async () => {
    const reportFile = join(scratch, "report.json")
    const result = await testScript(["--project", "storage-sql", `--outputFile.json=${reportFile}`])
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/^\[1\/2\] /m)
    expect(result.stdout).toMatch(/^\[2\/2\] /m)
    const report = JSON.parse(readFileSync(reportFile, "utf8")) as Report
    const files = readdirSync(join(repository, "packages/storage-sql/test")).filter((name) => name.endsWith(".test.ts")).sort()
    expect(report.testResults.map((file) => basename(file.name)).sort()).toEqual(files)
    const passed = report.testResults.flatMap((file) => file.assertionResults).filter((test) => test.status === "passed").length
    expect(passed).toBeGreaterThan(0)
    expect(report).toMatchObject({ numPassedTests: passed, numFailedTests: 0, success: true })
    expect(result.stdout.trimEnd().split("\n").at(-1)).toMatch(new RegExp(`^Tests \\(2 shards, [\\d.]+ s\\): ${passed} passed, 0 failed, 0 skipped \\(${files.length} files\\)$`))
  })

  it("fails when no shard finds a test file", async () => {
    const result = await testScript(["--project", "storage-sql", "no-such-test-file"])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("no test files found in any shard")
  })
})

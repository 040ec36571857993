/**
 * Runs the whole test suite as `npm test` does: SWITCHBOARD_TEST_SHARDS (default 2) vitest
 * runs at once, each over its shard of the test files (`vitest run --shard=i/N`) with one
 * worker, then one summary and one exit code (README "Development", docs/benchmarks.md
 * "The test suite's time").
 *
 *   node test.mjs [vitest arguments...]
 *
 * Why shards and not one run with two workers: vitest runs the projects of
 * vitest.workspace.ts one after another when their files share worker processes
 * (`isolate: false`), and between two projects it waits for the last file of the first and
 * starts new workers; one worker then idles while the other ends the project's slowest
 * file. Two runs side by side fill each other's gaps: two test files still run at a time.
 *
 * The arguments go to every shard. Each shard writes vitest's JSON report to a file of its
 * own; they are merged into one (the counts summed, the files' results concatenated), which
 * goes where `--outputFile.json=<file>` (or `--outputFile.json <file>`) asked, and the last
 * line printed is `Tests: N passed, N failed, N skipped (N files)` from it. Each line a
 * shard prints is prefixed with `[i/N]`. Exit code: 0 when every shard passed, else the
 * first non-zero code (1 when a shard ended without a report, or when no shard found a test
 * file). SWITCHBOARD_TEST_SHARDS=1 runs one plain `vitest run --maxWorkers=2`.
 */
import { spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { createInterface } from "node:readline"
import { fileURLToPath } from "node:url"

const root = dirname(fileURLToPath(import.meta.url))
const vitest = join(dirname(createRequire(import.meta.url).resolve("vitest/package.json")), "vitest.mjs")
const shards = Number(process.env.SWITCHBOARD_TEST_SHARDS ?? 2)
if (!Number.isInteger(shards) || shards < 1) {
  console.error(`test.mjs: SWITCHBOARD_TEST_SHARDS must be a positive integer, got ${process.env.SWITCHBOARD_TEST_SHARDS}`)
  process.exit(2)
}

/** Runs `node vitest.mjs args`, each output line prefixed with `prefix`; resolves its exit code. */
const runVitest = (args, prefix) =>
  new Promise((resolveCode) => {
    const child = spawn(process.execPath, [vitest, ...args], { cwd: root, stdio: prefix === "" ? "inherit" : ["ignore", "pipe", "pipe"] })
    for (const [stream, target] of prefix === "" ? [] : [[child.stdout, process.stdout], [child.stderr, process.stderr]]) {
      createInterface({ input: stream, crlfDelay: Infinity }).on("line", (line) => target.write(`${prefix}${line}\n`))
    }
    for (const signal of ["SIGINT", "SIGTERM"]) process.once(signal, () => child.kill(signal))
    child.on("close", (code, signal) => resolveCode(code ?? (signal === null ? 1 : 128)))
  })

if (shards === 1) process.exit(await runVitest(["run", "--maxWorkers=2", ...process.argv.slice(2)], ""))

// The JSON report asked for, if any, taken out of the arguments: each shard writes its own.
const args = [...process.argv.slice(2)]
let reportPath
for (let index = 0; index < args.length; index++) {
  const arg = args[index]
  if (arg.startsWith("--outputFile.json=")) {
    reportPath = resolve(arg.slice("--outputFile.json=".length))
    args.splice(index--, 1)
  } else if (arg === "--outputFile.json" && index + 1 < args.length) {
    reportPath = resolve(args[index + 1])
    args.splice(index--, 2)
  }
}
// The JSON reporter is added to every shard below; vitest replaces its default reporter
// when any is named, so it is kept when no other was.
for (let index = 0; index < args.length; index++) {
  if (args[index] === "--reporter=json") args.splice(index--, 1)
  else if (args[index] === "--reporter" && args[index + 1] === "json") args.splice(index--, 2)
}
const reporters = args.some((arg) => arg === "--reporter" || arg.startsWith("--reporter=")) ? [] : ["--reporter=default"]
const scratch = mkdtempSync(join(tmpdir(), "switchboard-test-shards-"))
const startedAt = Date.now()
const shardReports = Array.from({ length: shards }, (_, index) => join(scratch, `shard-${index + 1}.json`))
let codes
try {
  codes = await Promise.all(
    shardReports.map((file, index) =>
      runVitest(
        ["run", `--shard=${index + 1}/${shards}`, "--maxWorkers=1", "--passWithNoTests", ...reporters, ...args, "--reporter=json", `--outputFile.json=${file}`],
        `[${index + 1}/${shards}] `
      )
    )
  )
  const reports = shardReports.map((file) => (existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : undefined))
  const merged = mergeReports(reports.filter((report) => report !== undefined))
  const missing = reports.flatMap((report, index) => (report === undefined ? [index + 1] : []))
  if (missing.length > 0) {
    console.error(`test.mjs: shard ${missing.join(", ")} of ${shards} ended without a report (exit ${missing.map((shard) => codes[shard - 1]).join(", ")})`)
    merged.numFailedTests += missing.length
    merged.success = false
  }
  if (merged.numTotalTestSuites === 0 && missing.length === 0) {
    console.error("test.mjs: no test files found in any shard")
    codes.push(1)
  }
  if (reportPath !== undefined) writeFileSync(reportPath, JSON.stringify(merged))
  const skipped = merged.numPendingTests + merged.numTodoTests
  console.log(
    `Tests (${shards} shards, ${((Date.now() - startedAt) / 1000).toFixed(1)} s): ${merged.numPassedTests} passed, ` +
      `${merged.numFailedTests} failed, ${skipped} skipped (${merged.testResults.length} files)`
  )
  if (missing.length > 0 && codes.every((code) => code === 0)) codes.push(1)
} finally {
  rmSync(scratch, { recursive: true, force: true })
}
process.exit(codes.find((code) => code !== 0) ?? 0)

/**
 * One vitest JSON report from several (jest's format, as vitest writes it): every `num*`
 * count summed, `startTime` the earliest, `success` only when every one succeeded, the
 * files' `testResults` concatenated, the first `snapshot` summary.
 */
function mergeReports(reports) {
  const merged = {
    numTotalTestSuites: 0,
    numPassedTestSuites: 0,
    numFailedTestSuites: 0,
    numPendingTestSuites: 0,
    numTotalTests: 0,
    numPassedTests: 0,
    numFailedTests: 0,
    numPendingTests: 0,
    numTodoTests: 0,
    startTime: Math.min(...reports.map((report) => report.startTime ?? Date.now()), Date.now()),
    success: reports.every((report) => report.success === true),
    snapshot: reports[0]?.snapshot,
    testResults: reports.flatMap((report) => report.testResults ?? [])
  }
  for (const report of reports) {
    for (const [key, value] of Object.entries(report)) {
      if (key.startsWith("num") && typeof value === "number") merged[key] = (merged[key] ?? 0) + value
    }
  }
  return merged
}

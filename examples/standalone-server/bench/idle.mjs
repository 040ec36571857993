// An idle server's CPU (docs/benchmarks.md "An idle server as a part of the bench"): the BUILT standalone server
// with its defaults, started on a fresh SQLite file and, when POSTGRES_URL is set, on a
// fresh PostgreSQL schema (dropped at the end), beside a bare node:http server
// (servers/baseline.mjs) as the floor. No request reaches any of them. After
// BENCH_IDLE_SETTLE_SECONDS (default 10: start-up's work done), the
// CPU time (user + system, from /proc) each process uses over BENCH_IDLE_SECONDS (default
// 60) is divided by those seconds: milliseconds of CPU a second, target ≤ 5 for each store.
// The three processes idle side by side, so one window measures all three.
import { join } from "node:path"
import {
  dropPostgresSchemas,
  processCpuSeconds,
  recordTarget,
  runIfMain,
  SERVERS,
  startServer,
  temporaryDirectory,
  temporaryPostgresSchema
} from "./lib.mjs"

const SETTLE_SECONDS = Number(process.env.BENCH_IDLE_SETTLE_SECONDS ?? 10)
const SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 60)
/** The target: at most this many ms of CPU a second for an idle standalone server. */
const TARGET_MS_PER_SECOND = 5

export const run = async () => {
  const directory = temporaryDirectory()
  const filename = join(directory, "idle.db")
  /** `{server, label, target}`: `target` names the store a target is recorded for (`null`: the floor). */
  const servers = []
  try {
    servers.push({ server: await startServer("switchboard", filename, directory), label: `${SERVERS.switchboard.label}, SQLite`, target: "SQLite" })
    // The bare server opens the file the standalone server created (and does nothing with it).
    servers.push({ server: await startServer("baseline", filename, directory), label: SERVERS.baseline.label, target: null })
    const schema = await temporaryPostgresSchema()
    if (schema !== undefined) {
      servers.push({ server: await startServer("switchboardPostgres", schema, temporaryDirectory()), label: SERVERS.switchboardPostgres.label, target: "PostgreSQL" })
    }
    await new Promise((resolve) => setTimeout(resolve, SETTLE_SECONDS * 1000))
    const before = servers.map(({ server }) => processCpuSeconds(server.pid))
    const started = performance.now()
    await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000))
    const elapsedSeconds = (performance.now() - started) / 1000
    const after = servers.map(({ server }) => processCpuSeconds(server.pid))
    const lines = [`An idle server: CPU a second over ${SECONDS} s, after ${SETTLE_SECONDS} s of settling, no requests`]
    if (!servers.some(({ target }) => target === "PostgreSQL")) lines.push("  PostgreSQL: skipped (POSTGRES_URL is not set)")
    servers.forEach(({ label, target }, index) => {
      const msPerSecond = ((after[index] - before[index]) * 1000) / elapsedSeconds
      if (!Number.isFinite(msPerSecond)) throw new Error(`${label}: its CPU time could not be read from /proc`)
      const mark = target === null ? " " : recordTarget(`idle server on ${target}: CPU a second (≤ ${TARGET_MS_PER_SECOND} ms)`, msPerSecond, "most", TARGET_MS_PER_SECOND, "ms")
      lines.push(`  ${mark} ${label.padEnd(70)} ${msPerSecond.toFixed(2).padStart(6)} ms of CPU a second${target === null ? "   (the floor)" : `   target <= ${TARGET_MS_PER_SECOND} ms`}`)
    })
    return lines.join("\n")
  } finally {
    for (const { server } of servers) await server.stop()
    await dropPostgresSchemas()
  }
}

runIfMain(import.meta.url, run)

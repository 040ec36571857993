// Shared helpers of the benchmarks: timing statistics, a temporary SQLite file, an
// organization with a key, and a keep-alive HTTP client.
import { mkdtempSync, rmSync } from "node:fs"
import { Agent, request } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { Core, Organizations } from "@switchboard/core"

/** Median and p99 of durations in ms. */
export const summarise = (durations) => {
  const sorted = [...durations].sort((a, b) => a - b)
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]
  return { median: at(0.5), p99: at(0.99), runs: sorted.length }
}

/** A new temporary directory, removed at exit. */
export const temporaryDirectory = () => {
  const directory = mkdtempSync(join(tmpdir(), "switchboard-bench-"))
  process.once("exit", () => rmSync(directory, { recursive: true, force: true }))
  return directory
}

/** Creates an organization with an unlimited plan and returns its id and API key. */
export const createOrganization = (storageLayer) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const organizations = yield* Organizations
      const organization = yield* organizations.create({ name: "Bench" })
      const key = yield* organizations.issueApiKey(organization.id)
      return { organizationId: organization.id, apiKey: key.api_key }
    }).pipe(Effect.provide(Core.layer), Effect.provide(storageLayer))
  )

const agent = new Agent({ keepAlive: true, maxSockets: 64 })

/** One HTTP request on a keep-alive connection; resolves `{status, body}`. */
export const send = (url, { method = "GET", headers = {}, body } = {}) =>
  new Promise((resolve, reject) => {
    const req = request(url, { method, headers, agent }, (res) => {
      const chunks = []
      res.on("data", (chunk) => chunks.push(chunk))
      res.on("end", () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString("utf8") }))
    })
    req.on("error", reject)
    req.end(body)
  })

/** Formats one figure beside its baseline as a ratio. */
export const line = (label, ours, baseline, target) =>
  `${label}\n  switchboard: median ${ours.median.toFixed(2)} ms, p99 ${ours.p99.toFixed(2)} ms (${ours.runs} runs)\n` +
  `  baseline:    median ${baseline.median.toFixed(2)} ms, p99 ${baseline.p99.toFixed(2)} ms\n` +
  `  ratio (median): ${(ours.median / baseline.median).toFixed(2)}x   target: ${target}`

// HTTP throughput (docs/benchmarks.md): each figure beside a bare node:http baseline run in
// the same bench, as a ratio. Servers run in child processes (one core each at most), the
// load comes from autocannon in this process.
//   GET /verify                          vs a bare node:http server returning the same envelope
//   GET /contacts (20 of 100 000, SQLite) vs node:http + raw better-sqlite3 running the same queries
// BENCH_HTTP_SECONDS (default 8 per measurement), BENCH_HTTP_CONNECTIONS (default 32),
// BENCH_HTTP_ROUNDS (default 2; the median is kept) and BENCH_HTTP_CONTACTS (default 100000).
import { spawn } from "node:child_process"
import { once } from "node:events"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import autocannon from "autocannon"
import { SqliteStorage } from "@switchboard/storage-sqlite"
import { createOrganization, send, temporaryDirectory } from "./lib.mjs"

const SECONDS = Number(process.env.BENCH_HTTP_SECONDS ?? 8)
const CONNECTIONS = Number(process.env.BENCH_HTTP_CONNECTIONS ?? 32)
const ROUNDS = Number(process.env.BENCH_HTTP_ROUNDS ?? 2)
const CONTACTS = Number(process.env.BENCH_HTTP_CONTACTS ?? 100_000)
const BASE = "/api/v1/api"

/** Starts `servers/<name>.mjs` on `filename`; resolves `{url, stop}` once it listens. */
const startServer = async (name, filename, env = {}) => {
  const child = spawn(process.execPath, [fileURLToPath(new URL(`./servers/${name}.mjs`, import.meta.url)), filename], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"]
  })
  let output = ""
  const port = await new Promise((resolve, reject) => {
    child.stdout.on("data", (chunk) => {
      output += chunk
      const match = /ready (\d+)/.exec(output)
      if (match) resolve(Number(match[1]))
    })
    child.once("exit", (code) => reject(new Error(`${name} server exited with ${code}`)))
  })
  return {
    url: `http://127.0.0.1:${port}${BASE}`,
    stop: async () => {
      child.kill("SIGTERM")
      await once(child, "exit")
    }
  }
}

/** Requests per second and latency of GET `url` under autocannon; every answer must be 200. */
const measure = async (url, headers) => {
  const result = await autocannon({ url, headers, connections: CONNECTIONS, duration: SECONDS })
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(`${url}: ${result.non2xx} non-2xx answers and ${result.errors} errors under load`)
  }
  return result.requests.average
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

export const run = async () => {
  const directory = temporaryDirectory()
  const filename = join(directory, "http.db")
  const { apiKey } = await createOrganization(SqliteStorage.layer({ filename }))
  const headers = { authorization: `Bearer ${apiKey}` }

  const switchboard = await startServer("switchboard", filename)
  const groups = ["Customers", "Leads", "Partners", "Suppliers", "Press"]
  for (let start = 0; start < CONTACTS; start += 1000) {
    const contacts = Array.from({ length: Math.min(1000, CONTACTS - start) }, (_, offset) => {
      const index = start + offset
      return {
        first_name: `First${index}`,
        last_name: `Last${index}`,
        phone: `+1415${String(2000000 + index).padStart(7, "0")}`,
        email: `contact${index}@example.com`,
        city: "San Francisco",
        group: [groups[index % groups.length]]
      }
    })
    const answer = await send(`${switchboard.url}/contacts/bulk`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ contacts })
    })
    if (answer.status !== 200) throw new Error(`seeding contacts answered ${answer.status}: ${answer.body}`)
  }
  const verify = await send(`${switchboard.url}/verify`, { headers })
  const contactsPath = "/contacts?page=1&per_page=20"
  const ours = JSON.parse((await send(`${switchboard.url}${contactsPath}`, { headers })).body)
  await switchboard.stop()

  const baseline = await startServer("baseline", filename, { BENCH_VERIFY_BODY: verify.body })
  const theirs = JSON.parse((await send(`${baseline.url}${contactsPath}`)).body)
  await baseline.stop()
  // The baseline must do the same work: the same page of the same records.
  if (JSON.stringify(theirs.data) !== JSON.stringify(ours.data)) {
    throw new Error("the baseline's GET /contacts page differs from Switchboard's: the comparison would be unfair")
  }

  const figures = { verify: [[], []], contacts: [[], []] }
  for (let round = 0; round < ROUNDS; round++) {
    for (const [index, name] of ["baseline", "switchboard"].entries()) {
      const server = await startServer(name, filename, { BENCH_VERIFY_BODY: verify.body })
      try {
        figures.verify[index].push(await measure(`${server.url}/verify`, headers))
        figures.contacts[index].push(await measure(`${server.url}${contactsPath}`, headers))
      } finally {
        await server.stop()
      }
    }
  }
  const row = (label, [theirsValues, oursValues], target) => {
    const [base, mine] = [median(theirsValues), median(oursValues)]
    return (
      `  ${label}\n` +
      `    switchboard: ${mine.toFixed(0)} req/s\n` +
      `    baseline:    ${base.toFixed(0)} req/s\n` +
      `    ratio: ${(mine / base).toFixed(2)}x   target: >= ${target}x`
    )
  }
  return [
    `HTTP throughput, SQLite, ${CONNECTIONS} connections, ${SECONDS} s per figure, median of ${ROUNDS} rounds (server in its own process)`,
    row("GET /verify vs bare node:http with the same envelope", figures.verify, 0.7),
    row(`GET /contacts (20 of ${CONTACTS}) vs node:http + raw better-sqlite3, same queries`, figures.contacts, 0.5)
  ].join("\n")
}

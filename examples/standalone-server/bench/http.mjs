// HTTP throughput (docs/benchmarks.md "Targets"): Switchboard as the BUILT standalone
// server runs with its defaults (dist/main.js, SQLite storage, SQLite rate-limit counters
// in `<db>-rate-limits`, one JSON request log line per request on stderr, limits no run
// reaches) beside its baselines, each in its own child process (lib.mjs `startServer`),
// the load from autocannon in this process:
//   GET /verify    vs a bare node:http server writing the same envelope bytes   (>= 0.5x)
//                  vs Express 5 + express-rate-limit + pino + the same key lookup (Switchboard >= 2x)
//   GET /contacts  (page 1, 20 of BENCH_HTTP_CONTACTS) vs node:http + better-sqlite3 with the
//                  same key check and the same queries                               (>= 0.6x)
//   GET /verify    with the Prometheus metrics on (METRICS_TOKEN) vs off            (>= 0.9x)
// and, when POSTGRES_URL is set, the same on PostgreSQL (DATABASE_URL=postgres://…, a fresh
// schema dropped at the end) against a hand-written node:http + pg endpoint running the
// same statements (servers/postgres-baseline.mjs): GET /verify >= 0.6x (CPU per request
// <= 2x), GET /contacts >= 0.6x.
// Before measuring, every baseline must answer what Switchboard answers (verify bytes,
// the same contacts page, 401 for a wrong key). Each round starts every server afresh, in
// alternating order; the median round is kept and the spread (min–max) printed. Every
// answer must be 2xx; Switchboard's and Express's logs must hold a line per request.
// BENCH_HTTP_SECONDS (default 8 per figure), BENCH_HTTP_CONNECTIONS (default 50),
// BENCH_HTTP_ROUNDS (default 3) and BENCH_HTTP_CONTACTS (default 100 000);
// BENCH_HTTP_ONLY=metrics measures only the metrics figure (on and off, no seeding);
// BENCH_HTTP_ONLY=postgres only the PostgreSQL part (POSTGRES_URL must be set).
import { join } from "node:path"
import autocannon from "autocannon"
import { SqliteStorage } from "@switchboard/storage-sqlite"
import {
  BENCH_METRICS_TOKEN,
  createOrganization,
  dropPostgresSchemas,
  expectStatus,
  median,
  medianRound,
  processCpuSeconds,
  recordTarget,
  runIfMain,
  SERVERS,
  startServer,
  temporaryDirectory,
  temporaryPostgresSchema
} from "./lib.mjs"

const SECONDS = Number(process.env.BENCH_HTTP_SECONDS ?? 8)
const CONNECTIONS = Number(process.env.BENCH_HTTP_CONNECTIONS ?? 50)
const ROUNDS = Number(process.env.BENCH_HTTP_ROUNDS ?? 3)
const CONTACTS = Number(process.env.BENCH_HTTP_CONTACTS ?? 100_000)
/** Seconds of load before each measured figure (JIT, page cache), not counted. */
const WARMUP_SECONDS = 1
const VERIFY = "/verify"
const CONTACTS_PAGE = "/contacts?page=1&per_page=20"

/** Which paths each server is measured on. */
const MEASURED = {
  baseline: [VERIFY, CONTACTS_PAGE],
  express: [VERIFY],
  switchboard: [VERIFY, CONTACTS_PAGE]
}

/**
 * autocannon on `server.url + path` for `seconds`; throws on any non-2xx answer, error or
 * timeout. Resolves requests per second (mean of the per-second samples), the answers
 * counted, and the CPU share (1 = one core) of the server and of this process (the load).
 */
const load = async (server, path, headers, seconds) => {
  const serverCpu = processCpuSeconds(server.pid)
  const ownCpu = process.cpuUsage()
  const started = performance.now()
  const result = await autocannon({ url: `${server.url}${path}`, headers, connections: CONNECTIONS, duration: seconds })
  const elapsed = (performance.now() - started) / 1000
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) {
    throw new Error(`${server.name} ${path}: ${result.non2xx} non-2xx answers, ${result.errors} errors, ${result.timeouts} timeouts under load`)
  }
  const own = process.cpuUsage(ownCpu)
  return {
    rps: result.requests.average,
    answered: result.requests.total,
    serverCpu: (processCpuSeconds(server.pid) - serverCpu) / elapsed,
    loadCpu: (own.user + own.system) / 1e6 / elapsed
  }
}

/** Seeds `CONTACTS` contacts through Switchboard's own `POST /contacts/bulk`, 1000 a request. */
const seedContacts = async (url, headers) => {
  const groups = ["Customers", "Leads", "Partners", "Suppliers", "Press"]
  let requests = 0
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
    const body = JSON.stringify({ contacts })
    await expectStatus(`${url}/contacts/bulk`, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body })
    requests += 1
  }
  return requests
}

/**
 * The stores measured: SQLite (the defaults, with the Express baseline) and, when
 * `POSTGRES_URL` is set, PostgreSQL (DESIGN's "every store": the standalone server on
 * `DATABASE_URL=postgres://…` beside a hand-written node:http + pg endpoint running the same
 * statements; servers/postgres-baseline.mjs).
 */
const STORES = {
  sqlite: {
    title: "SQLite",
    switchboard: "switchboard",
    baseline: "baseline",
    express: "express",
    setup: async () => {
      const directory = temporaryDirectory()
      const filename = join(directory, "http.db")
      return { directory, location: filename, storageLayer: SqliteStorage.layer({ filename }) }
    },
    describe: "node dist/main.js as npm start runs it (SQLite, rate-limit counters in <db>-rate-limits, a JSON log line per request to a file)",
    verifyBaseline: "bare node:http, the same envelope bytes",
    contactsBaseline: "node:http + better-sqlite3, key check + same queries"
  },
  postgres: {
    title: "PostgreSQL",
    switchboard: "switchboardPostgres",
    baseline: "postgresBaseline",
    express: undefined,
    setup: async () => {
      const { PostgresStorage } = await import("@switchboard/storage-postgres")
      const schema = await temporaryPostgresSchema()
      return {
        directory: temporaryDirectory(),
        location: schema,
        storageLayer: PostgresStorage.layer({ connectionString: process.env.POSTGRES_URL, schema })
      }
    },
    describe: "node dist/main.js with DATABASE_URL=postgres://… (a pool of 10, rate-limit counters in the schema's UNLOGGED rate_buckets, the key look-ups and the counters of one event-loop turn one statement each, a JSON log line per request to a file)",
    verifyBaseline: "node:http + pg, key look-up + rate-limit upsert",
    contactsBaseline: "node:http + pg, key look-up + rate-limit upsert + same queries"
  }
}

export const run = async () => {
  if (process.env.BENCH_HTTP_ONLY === "metrics") return measureMetrics()
  const postgresOnly = process.env.BENCH_HTTP_ONLY === "postgres"
  if (postgresOnly && !process.env.POSTGRES_URL) throw new Error("BENCH_HTTP_ONLY=postgres needs POSTGRES_URL")
  const sections = postgresOnly ? [] : [await measure(STORES.sqlite), await measureMetrics()]
  if (process.env.POSTGRES_URL) {
    try {
      sections.push(await measure(STORES.postgres))
    } finally {
      await dropPostgresSchemas()
    }
  } else sections.push("HTTP throughput, PostgreSQL: skipped (POSTGRES_URL is not set)")
  return sections.join("\n\n")
}

/**
 * GET /verify of the standalone server with its Prometheus metrics on (`METRICS_TOKEN`,
 * prom-client's default process metrics too) against the same server with them off, on
 * SQLite, alternating rounds: throughput ratio (target >= 0.9x) and CPU per request. After
 * its load, each metrics-on server is scraped: the requests it answered must be counted.
 */
const measureMetrics = async () => {
  const { directory, location, storageLayer } = await STORES.sqlite.setup()
  const { apiKey } = await createOrganization(storageLayer)
  const headers = { authorization: `Bearer ${apiKey}` }
  const names = ["switchboard", "switchboardMetrics"]
  const figures = {}
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of round % 2 === 0 ? names : [...names].reverse()) {
      const server = await startServer(name, location, directory)
      let answered = 0
      try {
        answered += (await load(server, VERIFY, headers, WARMUP_SECONDS)).answered
        const figure = await load(server, VERIFY, headers, SECONDS)
        answered += figure.answered
        ;((figures[name] ??= {})[VERIFY] ??= []).push(figure)
        if (name === "switchboardMetrics") await checkCounted(server, answered)
      } finally {
        await server.stop()
      }
      server.checkLogged(answered)
    }
  }
  const on = keptOf(figures, "switchboardMetrics", VERIFY)
  const off = keptOf(figures, "switchboard", VERIFY)
  const value = on.rps / off.rps
  const mark = recordTarget("GET /verify: metrics on / off", value, "least", 0.9)
  return [
    `HTTP throughput with metrics, SQLite, ${CONNECTIONS} connections, ${SECONDS} s per figure (after ${WARMUP_SECONDS} s of warm-up), ` +
      `median of ${ROUNDS} round(s), each server in its own process, started afresh each round`,
    `  GET /verify (API-key check, organization envelope)`,
    figureRow("Switchboard, metrics on (METRICS_TOKEN)", on),
    figureRow("Switchboard, metrics off (defaults)", off),
    `    ratio ${"metrics on / off".padEnd(46)} ${value.toFixed(2)}x   target >= 0.9x ${mark}`,
    `    CPU per request ${"metrics on / off".padEnd(36)} ${(on.cpuPerRequestUs / off.cpuPerRequestUs).toFixed(2)}x`
  ].join("\n")
}

/** Scrapes `server`'s GET /metrics: its GET /verify count must be at least `answered`. */
const checkCounted = async (server, answered) => {
  const origin = new URL(server.url).origin
  const text = await expectStatus(`${origin}/metrics`, { headers: { authorization: `Bearer ${BENCH_METRICS_TOKEN}` } })
  const counted = Number(/switchboard_http_requests_total\{route="\/verify",method="GET",status="200"\} (\d+)/.exec(text)?.[1] ?? 0)
  if (counted < answered) throw new Error(`${server.name}: GET /metrics counts ${counted} GET /verify for ${answered} answered: were the metrics on?`)
}

/** The median round of `figures[name][path]`: throughput, its spread, CPU shares and CPU per answer. */
const keptOf = (figures, name, path) => {
  const values = figures[name][path]
  return {
    ...medianRound(values),
    // CPU per answer, steadier than throughput on a shared machine: the load generator
    // limits the fastest servers, not the CPU they spend.
    cpuPerRequestUs: median(values.map((figure) => (figure.serverCpu / figure.rps) * 1e6))
  }
}

const number = (value) => Math.round(value).toLocaleString("en").replace(/,/g, " ")

/** One printed figure: throughput with its spread, the server's CPU and the load generator's. */
const figureRow = (label, { rps, min, max, serverCpu, loadCpu, cpuPerRequestUs }) =>
  `    ${label.padEnd(52)} ${number(rps).padStart(7)} req/s  (rounds ${number(min)}–${number(max)})` +
  `  server CPU ${(serverCpu * 100).toFixed(0)}% (${cpuPerRequestUs.toFixed(0)} µs a request), autocannon CPU ${(loadCpu * 100).toFixed(0)}%`

/** Seeds, checks the baselines answer alike, measures every round and prints the figures of one store. */
const measure = async (store) => {
  const { directory, location, storageLayer } = await store.setup()
  const { apiKey } = await createOrganization(storageLayer)
  const headers = { authorization: `Bearer ${apiKey}` }
  const wrongKey = { authorization: `Bearer sb_${"x".repeat(43)}` }
  const measured = {
    [store.baseline]: [VERIFY, CONTACTS_PAGE],
    ...(store.express === undefined ? {} : { [store.express]: [VERIFY] }),
    [store.switchboard]: [VERIFY, CONTACTS_PAGE]
  }

  // Seed, and take Switchboard's answers the baselines must match.
  const switchboard = await startServer(store.switchboard, location, directory)
  const seeding = await seedContacts(switchboard.url, headers)
  const verifyBody = await expectStatus(`${switchboard.url}${VERIFY}`, { headers })
  const contactsBody = await expectStatus(`${switchboard.url}${CONTACTS_PAGE}`, { headers })
  await expectStatus(`${switchboard.url}${VERIFY}`, { headers: wrongKey }, 401)
  await switchboard.stop()
  switchboard.checkLogged(seeding + 3)

  // Fairness: the same bytes for /verify, the same page for /contacts, a wrong key refused.
  const env = { BENCH_VERIFY_BODY: verifyBody }
  const baseline = await startServer(store.baseline, location, directory, env)
  const baselineVerify = await expectStatus(`${baseline.url}${VERIFY}`, { headers })
  const baselineContacts = await expectStatus(`${baseline.url}${CONTACTS_PAGE}`, { headers })
  await expectStatus(`${baseline.url}${CONTACTS_PAGE}`, { headers: wrongKey }, 401)
  await baseline.stop()
  if (baselineVerify !== verifyBody) throw new Error(`the ${store.title} baseline's GET /verify bytes differ from Switchboard's`)
  if (baselineContacts !== contactsBody) {
    throw new Error(`the ${store.title} baseline's GET /contacts page differs from Switchboard's: the comparison would be unfair\n${baselineContacts.slice(0, 400)}\n${contactsBody.slice(0, 400)}`)
  }
  if (store.express !== undefined) {
    const express = await startServer(store.express, location, directory)
    const expressVerify = await expectStatus(`${express.url}${VERIFY}`, { headers })
    await expectStatus(`${express.url}${VERIFY}`, { headers: wrongKey }, 401)
    await express.stop()
    express.checkLogged(2)
    if (expressVerify !== verifyBody) {
      throw new Error(`the Express baseline's GET /verify answer differs from Switchboard's:\n${expressVerify}\n${verifyBody}`)
    }
  }

  // Rounds: every server afresh, alternating order; figures[server][path] = [{rps, …}, …].
  const figures = {}
  const names = Object.keys(measured)
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of round % 2 === 0 ? names : [...names].reverse()) {
      const server = await startServer(name, location, directory, name === store.baseline ? env : {})
      let answered = 0
      try {
        for (const path of measured[name]) {
          answered += (await load(server, path, headers, WARMUP_SECONDS)).answered
          const figure = await load(server, path, headers, SECONDS)
          answered += figure.answered
          ;((figures[name] ??= {})[path] ??= []).push(figure)
        }
      } finally {
        await server.stop()
      }
      server.checkLogged(answered)
    }
  }

  const kept = (name, path) => keptOf(figures, name, path)
  const row = (label, name, path) => figureRow(label, kept(name, path))
  const ratio = (figure, label, name, path, against, target) => {
    const value = kept(name, path).rps / kept(against, path).rps
    const mark = recordTarget(`${figure}: ${label}`, value, "least", target)
    return `    ratio ${label.padEnd(46)} ${value.toFixed(2)}x   target >= ${target}x ${mark}`
  }
  const cpuRatio = (figure, label, name, path, against, target) => {
    const value = kept(name, path).cpuPerRequestUs / kept(against, path).cpuPerRequestUs
    const mark = recordTarget(`${figure}: ${label}`, value, "most", target)
    return `    CPU per request ${label.padEnd(36)} ${value.toFixed(2)}x   target <= ${target}x ${mark}`
  }
  const sqlite = store.express !== undefined
  return [
    `HTTP throughput, ${store.title}, ${CONNECTIONS} connections, ${SECONDS} s per figure (after ${WARMUP_SECONDS} s of warm-up), ` +
      `median of ${ROUNDS} round(s), each server in its own process, started afresh each round`,
    `  Switchboard: ${store.describe}`,
    `  GET /verify (API-key check, organization envelope)`,
    row("Switchboard", store.switchboard, VERIFY),
    row(store.verifyBaseline, store.baseline, VERIFY),
    ...(sqlite
      ? [
          row(SERVERS.express.label, store.express, VERIFY),
          ratio("GET /verify", "Switchboard / bare node:http", store.switchboard, VERIFY, store.baseline, 0.5),
          ratio("GET /verify", "Switchboard / Express baseline", store.switchboard, VERIFY, store.express, 2)
        ]
      : [
          ratio("GET /verify on PostgreSQL", "Switchboard / hand-written pg endpoint", store.switchboard, VERIFY, store.baseline, 0.6),
          cpuRatio("GET /verify on PostgreSQL", "Switchboard / hand-written", store.switchboard, VERIFY, store.baseline, 2)
        ]),
    `  GET /contacts?page=1&per_page=20 of ${CONTACTS.toLocaleString("en")} contacts`,
    row("Switchboard", store.switchboard, CONTACTS_PAGE),
    row(store.contactsBaseline, store.baseline, CONTACTS_PAGE),
    ratio(`GET /contacts${sqlite ? "" : " on PostgreSQL"}`, "Switchboard / hand-written endpoint", store.switchboard, CONTACTS_PAGE, store.baseline, 0.6)
  ].join("\n")
}

runIfMain(import.meta.url, run)

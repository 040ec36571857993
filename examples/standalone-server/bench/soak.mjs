// The soak (docs/benchmarks.md "The soak"): the BUILT standalone server with its defaults on a
// SQLite file (no channel: sends go to the recording transport), under BENCH_SOAK_CONNECTIONS
// (default 32) connections for BENCH_SOAK_SECONDS (default 180) of a mixed load, each
// connection cycling through:
//   GET /verify; GET /contacts pages; GET /chats (the newest, open ones, a search); GET /labels
//   and GET /labels/{uuid}; POST /labels (a new name each); POST /send (a text to one of the
//   seeded contacts); POST /contacts/bulk (50 contacts, upserts over a fixed set of phones).
// The server's RSS is sampled every second from /proc. Figures (a guard, not a repair):
// RSS growth from the end of the first minute (the mean of its samples from 60 s to 65 s)
// to the end (the mean of the last 5 samples), target ≤ 10%; every answer 200 (counts by
// status printed); p50 and p99 latency of the whole mix, and p99 by kind. A run shorter
// than three minutes measures from a third of its length instead of minute 1.
import { join } from "node:path"
import { SqliteStorage } from "@switchboard/storage-sqlite"
import {
  createOrganization,
  expectStatus,
  processMemory,
  recordTarget,
  runIfMain,
  send,
  startServer,
  temporaryDirectory
} from "./lib.mjs"

const SECONDS = Number(process.env.BENCH_SOAK_SECONDS ?? 180)
const CONNECTIONS = Number(process.env.BENCH_SOAK_CONNECTIONS ?? 32)
/** Contacts seeded before the load; the sends and the label reads use them. */
const SEEDED = 1_000
/** The phones the imports upsert, 50 a request (so the contacts table stops growing once all exist). */
const IMPORT_PHONES = 5_000
const IMPORT_SIZE = 50

/** Contact `n`'s phone: distinct, valid E.164 (US 415 range). */
const phoneOf = (n) => `+1415${String(5000000 + n).padStart(7, "0")}`

/** The RSS of process `pid` in MiB (what this bench calls MB). */
const rssOf = (pid) => processMemory(pid).rss / 2 ** 20

/** The value at quantile `q` (0–1) of sorted `values`. */
const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]

/** The mean of `values` (NaN when empty). */
const mean = (values) => values.reduce((sum, value) => sum + value, 0) / values.length

/** Seeds the organization through the API: `SEEDED` contacts, five labels (the first on 100 contacts), one text to each of the first 200 (their chats). */
const seed = async (url, headers) => {
  const json = (body) => ({ method: "POST", headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify(body) })
  const contacts = []
  for (let start = 0; start < SEEDED; start += 500) {
    const rows = Array.from({ length: Math.min(500, SEEDED - start) }, (_, offset) => ({
      phone: phoneOf(start + offset),
      first_name: `Soak ${start + offset}`,
      group: ["Soak"]
    }))
    contacts.push(...JSON.parse(await expectStatus(`${url}/contacts/bulk`, json({ contacts: rows }))).data.contacts)
  }
  const labels = []
  for (let index = 0; index < 5; index++) labels.push(JSON.parse(await expectStatus(`${url}/labels`, json({ name: `Seeded ${index}` }))).data)
  await expectStatus(`${url}/contacts/labels/assign`, json({ tag_uuid: labels[0].uuid, contact_uuids: contacts.slice(0, 100).map((each) => each.uuid) }))
  for (let index = 0; index < 200; index++) await expectStatus(`${url}/send`, json({ phone: phoneOf(index), message: "Welcome" }))
  return { contacts, labels }
}

/**
 * The mix, one entry per request of a connection's cycle: `[kind, (n) => request options and
 * path]`, `n` a counter shared by every connection (distinct names, rotating phones and pages).
 */
const mixOf = (headers, labels) => {
  const get = (path) => ({ path, options: { headers } })
  const post = (path, body) => ({ path, options: { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify(body) } })
  const verify = ["verify", () => get("/verify")]
  return [
    verify,
    ["contacts page", (n) => get(`/contacts?page=${1 + (n % 50)}&per_page=20`)],
    ["chat list", () => get("/chats")],
    ["send", (n) => post("/send", { phone: phoneOf(n % SEEDED), message: `Soak message ${n}` })],
    verify,
    ["label read", (n) => get(`/labels/${labels[n % labels.length].uuid}`)],
    ["chat list", (n) => get(n % 2 === 0 ? "/chats?status=open&limit=50" : `/chats?search=Soak%20${n % SEEDED}`)],
    ["label create", (n) => post("/labels", { name: `Soak label ${n}` })],
    verify,
    ["contacts page", (n) => get(`/contacts?page=${1 + (n % 50)}&per_page=100`)],
    ["send", (n) => post("/send", { phone: phoneOf((n * 7) % SEEDED), message: `Soak message ${n}` })],
    ["label list", () => get("/labels?page=1&per_page=20")],
    [
      "import of 50",
      (n) =>
        post("/contacts/bulk", {
          contacts: Array.from({ length: IMPORT_SIZE }, (_, offset) => {
            const phone = SEEDED + ((n * IMPORT_SIZE + offset) % IMPORT_PHONES)
            return { phone: phoneOf(phone), first_name: `Imported ${phone}`, last_name: `Run ${n}` }
          })
        })
    ]
  ]
}

export const run = async () => {
  const directory = temporaryDirectory()
  const filename = join(directory, "soak.db")
  const { apiKey } = await createOrganization(SqliteStorage.layer({ filename }))
  const server = await startServer("switchboard", filename, directory)
  try {
    const headers = { authorization: `Bearer ${apiKey}` }
    await expectStatus(`${server.url}/verify`, { headers })
    const { labels } = await seed(server.url, headers)
    const mix = mixOf(headers, labels)
    const statuses = new Map()
    const latencies = []
    const byKind = new Map()
    let counter = 0
    const samples = []
    const started = performance.now()
    const elapsed = () => (performance.now() - started) / 1000
    const sampler = setInterval(() => samples.push({ at: elapsed(), rss: rssOf(server.pid) }), 1000)
    samples.push({ at: 0, rss: rssOf(server.pid) })
    const until = started + SECONDS * 1000
    const connection = async (index) => {
      for (let step = index; performance.now() < until; step++) {
        const [kind, make] = mix[step % mix.length]
        const { path, options } = make(counter++)
        const asked = performance.now()
        const answer = await send(`${server.url}${path}`, options).catch((error) => ({ status: `error ${error.code ?? error.message}` }))
        const took = performance.now() - asked
        latencies.push(took)
        if (!byKind.has(kind)) byKind.set(kind, [])
        byKind.get(kind).push(took)
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
        if (answer.status !== 200 && (statuses.get(answer.status) ?? 0) <= 3) {
          console.error(`soak: ${options.method ?? "GET"} ${path} answered ${answer.status}: ${String(answer.body ?? "").slice(0, 300)}`)
        }
      }
    }
    await Promise.all(Array.from({ length: CONNECTIONS }, (_, index) => connection(index)))
    clearInterval(sampler)
    samples.push({ at: elapsed(), rss: rssOf(server.pid) })
    const seconds = elapsed()
    await server.stop()

    // Minute 1 (a third of a shorter run): the mean of the samples in its first 5 s.
    const settleAt = Math.min(60, SECONDS / 3)
    const settled = mean(samples.filter((sample) => sample.at >= settleAt && sample.at < settleAt + 5).map((sample) => sample.rss))
    const end = mean(samples.slice(-5).map((sample) => sample.rss))
    const highest = Math.max(...samples.filter((sample) => sample.at >= settleAt).map((sample) => sample.rss))
    const growth = ((end - settled) / settled) * 100
    const answered = latencies.length
    const ok = statuses.get(200) ?? 0
    const sorted = [...latencies].sort((a, b) => a - b)
    const p99 = quantile(sorted, 0.99)
    const minute = (at) => samples.filter((sample) => sample.at >= at && sample.at < at + 60)
    const perMinute = []
    for (let at = 0; at < seconds - 1; at += 60) {
      const window = minute(at).map((sample) => sample.rss)
      if (window.length > 0) perMinute.push(`${Math.min(...window).toFixed(0)}–${Math.max(...window).toFixed(0)}`)
    }
    return [
      `Soak: ${CONNECTIONS} connections for ${seconds.toFixed(0)} s, a mix of verify, contact pages, chat lists, label reads and creates, text sends, imports of ${IMPORT_SIZE} (SQLite, standalone server defaults, no channel)`,
      `  ${answered} answers (${(answered / seconds).toFixed(0)}/s); by status: ${[...statuses].map(([status, count]) => `${status} × ${count}`).join(", ")}`,
      `  ${recordTarget("soak: answers other than 200", answered - ok, "most", 0, "answers")} answers other than 200: ${answered - ok}`,
      `  latency p50 ${quantile(sorted, 0.5).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms; p99 by kind: ${[...byKind]
        .map(([kind, values]) => `${kind} ${quantile(values.sort((a, b) => a - b), 0.99).toFixed(1)}`)
        .join(", ")} ms`,
      `  server RSS by minute (min–max, MB): ${perMinute.join(", ")}`,
      `  ${recordTarget(`soak: RSS growth after ${settleAt.toFixed(0)} s (≤ 10%)`, growth, "most", 10, "%")} server RSS ${settled.toFixed(0)} MB at ${settleAt.toFixed(0)} s, ` +
        `${end.toFixed(0)} MB at the end (highest after ${settleAt.toFixed(0)} s: ${highest.toFixed(0)} MB): ${growth >= 0 ? "+" : ""}${growth.toFixed(1)}%`
    ].join("\n")
  } catch (error) {
    await server.stop().catch(() => undefined)
    throw error
  }
}

runIfMain(import.meta.url, run)

// POST /contacts/bulk of 1000 NEW contacts over HTTP, a real socket (docs/benchmarks.md
// "Targets"): Switchboard as the BUILT standalone server runs with its defaults (lib.mjs
// `startServer("switchboard")`: SQLite, SQLite rate-limit counters, request logging on)
// beside the hand-written node:http endpoint of servers/bulk-baseline.mjs doing the same
// work (key check, JSON.parse, E.164 with libphonenumber-js/max, one upsert transaction),
// on a copy of the same migrated file. Both servers run at once, each in its own process;
// the batches alternate between them (which goes first alternates too), one request at a
// time. Every batch holds new phone numbers, written in varied national formats
// ("+1 415-2xx-xxxx") so both normalise them. Median and p99 of BENCH_BATCHES (default 30)
// batches after 5 warm-up batches; target: Switchboard's median <= 2x the hand-written one.
// Checks before and after: both refuse a batch holding an invalid phone with 400, both
// report every batch as 1000 created, both report a re-sent batch as 1000 updated, both
// files end with the same phones and the usage counter (`contact_counts`) equal to them.
import { join } from "node:path"
import Database from "better-sqlite3"
import { SqliteStorage } from "@switchboard/storage-sqlite"
import { createOrganization, recordTarget, runIfMain, SERVERS, send, startServer, summarise, temporaryDirectory } from "./lib.mjs"

const BATCHES = Number(process.env.BENCH_BATCHES ?? 30)
const WARMUP = 5
const ROWS = 1000

/** Batch `index` of 1000 distinct valid US numbers (+1 415 2xx xxxx), none in an earlier batch. */
const batch = (index) =>
  Array.from({ length: ROWS }, (_, row) => {
    const n = index * ROWS + row
    const digits = String(2000000 + n)
    return { first_name: `First ${n}`, last_name: `Last ${n}`, email: `c${n}@example.com`, phone: `+1 415-${digits.slice(0, 3)}-${digits.slice(3)}` }
  })

/** POSTs `contacts` to `server`; resolves `{status, body (parsed), ms}`. */
const post = async (server, apiKey, contacts) => {
  const body = JSON.stringify({ contacts })
  const started = performance.now()
  const answer = await send(`${server.url}/contacts/bulk`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body
  })
  return { status: answer.status, body: JSON.parse(answer.body), ms: performance.now() - started }
}

/** Throws unless `answer` is a 200 reporting `created` created and `updated` updated rows. */
const expectCounts = (name, answer, created, updated) => {
  if (answer.status !== 200 || answer.body.data?.created !== created || answer.body.data?.updated !== updated) {
    throw new Error(`${name}: expected ${created} created and ${updated} updated, got ${answer.status}: ${JSON.stringify(answer.body).slice(0, 400)}`)
  }
}

export const run = async () => {
  const directory = temporaryDirectory()
  const filename = join(directory, "bulk.db")
  const { organizationId, apiKey } = await createOrganization(SqliteStorage.layer({ filename }))
  // The baseline's file: a copy of the migrated file, with the same organization and key.
  const copy = join(directory, "bulk-baseline.db")
  const source = new Database(filename)
  source.prepare("VACUUM INTO ?").run(copy)
  source.close()

  const servers = [await startServer("switchboard", filename, directory), await startServer("bulkBaseline", copy, directory)]
  const durations = new Map(servers.map((server) => [server.name, []]))
  try {
    // Both refuse a batch with an invalid phone, naming the row.
    const invalid = [...batch(10_000).slice(0, 9), { first_name: "Bad", phone: "+1 999" }]
    for (const server of servers) {
      const answer = await post(server, apiKey, invalid)
      if (answer.status !== 400 || !JSON.stringify(answer.body.errors).includes("contacts[9].phone")) {
        throw new Error(`${server.name}: an invalid phone was not refused with 400 naming contacts[9].phone: ${JSON.stringify(answer.body)}`)
      }
    }
    for (let index = 0; index < WARMUP + BATCHES; index++) {
      const contacts = batch(index)
      for (const server of index % 2 === 0 ? servers : [...servers].reverse()) {
        const answer = await post(server, apiKey, contacts)
        expectCounts(server.name, answer, ROWS, 0)
        if (index >= WARMUP) durations.get(server.name).push(answer.ms)
      }
    }
    // Upsert: the first batch again updates every row.
    for (const server of servers) expectCounts(server.name, await post(server, apiKey, batch(0)), 0, ROWS)
  } finally {
    for (const server of servers) await server.stop()
  }
  servers[0].checkLogged(WARMUP + BATCHES + 2)

  // The rows exist, the same in both files, and the usage counter says so.
  const expected = (WARMUP + BATCHES) * ROWS
  const phones = []
  for (const file of [filename, copy]) {
    const db = new Database(file, { readonly: true })
    const rows = db.prepare("SELECT phone FROM contacts WHERE organization_id = ? ORDER BY phone").pluck().all(organizationId)
    const counter = db.prepare("SELECT count FROM contact_counts WHERE organization_id = ?").pluck().get(organizationId)
    db.close()
    if (rows.length !== expected || counter !== expected) {
      throw new Error(`${file}: ${rows.length} contacts and a counter of ${counter}, expected ${expected} of both`)
    }
    phones.push(rows.join("\n"))
  }
  if (phones[0] !== phones[1]) throw new Error("Switchboard's and the baseline's files hold different phones")

  const ours = summarise(durations.get("switchboard"))
  const theirs = summarise(durations.get("bulkBaseline"))
  const ratio = ours.median / theirs.median
  const mark = recordTarget("POST /contacts/bulk median: Switchboard / hand-written endpoint", ratio, "most", 2)
  const row = (label, figures) =>
    `    ${label.padEnd(62)} median ${figures.median.toFixed(2).padStart(6)} ms, p99 ${figures.p99.toFixed(2).padStart(6)} ms (${figures.runs} batches)`
  return [
    `POST /contacts/bulk, ${ROWS} new contacts per batch over HTTP, SQLite, one request at a time, ` +
      `${WARMUP} warm-up + ${BATCHES} measured batches, the two servers alternating (each in its own process)`,
    row(SERVERS.switchboard.label, ours),
    row(SERVERS.bulkBaseline.label, theirs),
    `    ratio (median) Switchboard / hand-written: ${ratio.toFixed(2)}x   target <= 2x ${mark}`
  ].join("\n")
}

runIfMain(import.meta.url, run)

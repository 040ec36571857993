// POST /contacts/bulk of 1000 new contacts on SQLite, over a real socket, beside a raw
// better-sqlite3 transaction inserting the same rows into the same schema (docs/benchmarks.md).
import { createServer } from "node:http"
import { join } from "node:path"
import Database from "better-sqlite3"
import { v7 as uuidv7 } from "uuid"
import { createHandler } from "@switchboard/http-adapter"
import { SqliteStorage } from "@switchboard/storage-sqlite"
import { createOrganization, line, send, summarise, temporaryDirectory } from "./lib.mjs"

const BATCHES = Number(process.env.BENCH_BATCHES ?? 40)
const WARMUP = 5
const ROWS = 1000

/** Batch `index` of 1000 distinct valid US numbers (+1 415 2xx xxxx). */
const batch = (index) =>
  Array.from({ length: ROWS }, (_, row) => {
    const n = index * ROWS + row
    return { first_name: `First ${n}`, last_name: `Last ${n}`, email: `c${n}@example.com`, phone: `+1415${2000000 + n}` }
  })

export const run = async () => {
  const directory = temporaryDirectory()
  const filename = join(directory, "switchboard.db")
  const storage = SqliteStorage.layer({ filename })
  const { apiKey } = await createOrganization(storage)
  const handler = createHandler({ storage, logger: false })
  await handler.ready
  const server = createServer(handler)
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve))
  const url = `http://127.0.0.1:${server.address().port}/api/v1/api/contacts/bulk`
  const headers = { authorization: `Bearer ${apiKey}`, "content-type": "application/json" }

  const ours = []
  for (let index = 0; index < WARMUP + BATCHES; index++) {
    const body = JSON.stringify({ contacts: batch(index) })
    const started = performance.now()
    const response = await send(url, { method: "POST", headers, body })
    const elapsed = performance.now() - started
    if (response.status !== 200) throw new Error(`bulk import answered ${response.status}: ${response.body}`)
    if (index >= WARMUP) ours.push(elapsed)
  }
  server.close()
  await handler.dispose()

  // Baseline: the same schema (copied from the file the adapter migrated), the same rows,
  // already normalised, one transaction per batch.
  const schemaSource = new Database(filename, { readonly: true })
  const schema = schemaSource.prepare("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'").all()
  // A virtual (FTS) table creates its own shadow tables (`<name>_data`, …): copy only it.
  const virtualTables = schema.filter(({ sql }) => /^CREATE VIRTUAL TABLE/i.test(sql)).map(({ name }) => name)
  const ddl = schema.filter(({ name }) => !virtualTables.some((table) => name.startsWith(`${table}_`)))
  const organization = schemaSource.prepare("SELECT * FROM organizations").get()
  schemaSource.close()
  const raw = new Database(join(directory, "raw.db"))
  raw.pragma("journal_mode = WAL")
  raw.pragma("synchronous = NORMAL")
  for (const { sql } of ddl) raw.exec(sql)
  raw.prepare("INSERT INTO organizations VALUES (@id, @name, @contacts_limit, @label_limit, @api_access, @subscription, @created_at, @updated_at)").run(organization)
  const insert = raw.prepare(
    "INSERT INTO contacts (uuid, organization_id, phone, first_name, last_name, email, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
  )
  const insertAll = raw.transaction((rows, now) => {
    for (const row of rows) insert.run(uuidv7(), organization.id, row.phone, row.first_name, row.last_name, row.email, now, now)
  })
  const baseline = []
  for (let index = 0; index < WARMUP + BATCHES; index++) {
    const rows = batch(index)
    const started = performance.now()
    insertAll(rows, new Date().toISOString())
    if (index >= WARMUP) baseline.push(performance.now() - started)
  }
  raw.close()
  return line(
    `POST /contacts/bulk, ${ROWS} new contacts, SQLite (HTTP over a socket) vs raw better-sqlite3 transaction`,
    summarise(ours),
    summarise(baseline),
    "median <= 25 ms and <= 2x raw"
  )
}

// GET /chats over BENCH_CHATS (default 1 000 000) seeded chats on SQLite (docs/benchmarks.md): p50
// and p99 of one request at a time for no filter, each single filter of GET /chats, one
// combined filter, and the first vs the 500th cursor page; each beside a baseline measured
// in this run — the same page read by hand-written SQL on raw better-sqlite3 (the page's
// ids from the best index, then the chats with contact and last message, their groups and
// their labels, serialised), no HTTP. Then the server's RSS after a concurrent load.
// The seeded file is cached in os.tmpdir(), keyed by N, the schema version and
// SEED_DATA_VERSION (seeding 1 000 000 chats takes minutes); BENCH_CHATS_RUNS (default 200)
// requests per figure, BENCH_CHATS_LOAD_SECONDS (default 10) of load before reading RSS.
import { spawnSync } from "node:child_process"
import { existsSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import Database from "better-sqlite3"
import { Effect, Layer } from "effect"
import { SqliteStorage } from "@switchboard/storage-sqlite"
import { processMemory, recordTarget, runIfMain, send, startServer, summarise, temporaryDirectory } from "./lib.mjs"

const CHATS = Number(process.env.BENCH_CHATS ?? 1_000_000)
const RUNS = Number(process.env.BENCH_CHATS_RUNS ?? 200)
const LOAD_SECONDS = Number(process.env.BENCH_CHATS_LOAD_SECONDS ?? 10)
const WARMUP = 20
const LIMIT = 20
const DEEP_PAGE = 500
/** Bump when `seed` generates different data, so cached files are re-seeded. */
const SEED_DATA_VERSION = 1
const CLI = fileURLToPath(new URL("../dist/cli.js", import.meta.url))

export const run = async () => {
  const { filename, organization, seeding } = await seededFile()
  const raw = new Database(filename, { readonly: true })
  const values = sampleValues(raw, organization.org_id)
  // The standalone server with its defaults (request logging on), as `npm start` runs it.
  const server = await startServer("switchboard", filename, temporaryDirectory())
  const headers = { authorization: `Bearer ${organization.api_key}` }
  const get = async (query) => {
    const response = await send(`${server.url}/chats${query === "" ? "" : `?${query}`}`, { headers })
    if (response.status !== 200) throw new Error(`GET /chats?${query} answered ${response.status}: ${response.body}`)
    return JSON.parse(response.body).data
  }
  const baseline = makeBaseline(raw, organization.org_id)
  const lines = [
    `GET /chats over ${CHATS.toLocaleString("en")} chats, SQLite (one request at a time over a socket) vs hand-written SQL on raw better-sqlite3 ` +
      `[seeded file ${(seeding.file_bytes / 2 ** 20).toFixed(0)} MiB, seeded in ${(seeding.duration_ms / 1000).toFixed(0)} s${seeding.cached ? ", cached" : ""}]`
  ]
  const cases = filterCases(values)
  // Warm-up of the server (JIT, statement cache) and of the file's pages: every case 20 times.
  for (let i = 0; i < cases.length * 20; i++) await get(cases[i % cases.length].query)
  let worstSingle = 0
  for (const { label, query, sql } of cases) {
    const ours = await timed(() => get(query))
    const base = await timed(async () => baseline(sql))
    lines.push(figure(label, query, ours, base, "p99 <= 20 ms"))
    if (label !== "combined") worstSingle = Math.max(worstSingle, ours.p99)
  }
  recordTarget(`GET /chats over ${CHATS.toLocaleString("en")} chats, no or one filter: worst p99`, worstSingle, "most", 20, "ms")

  // Cursor pages: walk to the 500th page once (the last full page of a smaller seed), then
  // time it beside the first.
  const deepPage = Math.max(1, Math.min(DEEP_PAGE, Math.floor(CHATS / LIMIT)))
  let cursor = null
  for (let page = 1; page < deepPage; page++) cursor = (await get(`limit=${LIMIT}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`)).pagination.next_cursor
  const first = await timed(() => get(`limit=${LIMIT}`))
  const deep = await timed(() => get(`limit=${LIMIT}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`))
  const position = raw
    .prepare("SELECT last_message_at, uuid FROM chats WHERE organization_id = ? ORDER BY last_message_at DESC, uuid DESC LIMIT 1 OFFSET ?")
    .get(organization.org_id, (deepPage - 1) * LIMIT)
  const baseDeep = await timed(async () => baseline({ ...ALL, keyset: [position.last_message_at, position.uuid] }))
  lines.push(figure("cursor page 1", `limit=${LIMIT}`, first, await timed(async () => baseline(ALL)), "-"))
  lines.push(figure(`cursor page ${deepPage}`, `limit=${LIMIT}&cursor=…`, deep, baseDeep, "<= 1.5x page 1"))
  lines.push(`  page ${deepPage} / page 1 (p50): ${(deep.median / first.median).toFixed(2)}x, (p99): ${(deep.p99 / first.p99).toFixed(2)}x   target: <= 1.5x`)
  recordTarget(`GET /chats cursor page ${deepPage} / page 1 (p50)`, deep.median / first.median, "most", 1.5)

  // Memory: RSS of the server after LOAD_SECONDS of 16 concurrent clients cycling the cases.
  const stop = Date.now() + LOAD_SECONDS * 1000
  let requests = 0
  await Promise.all(
    Array.from({ length: 16 }, async (_, worker) => {
      for (let i = worker; Date.now() < stop; i++) {
        await get(cases[i % cases.length].query)
        requests += 1
      }
    })
  )
  const memory = memoryOf(server.pid)
  recordTarget(`server RSS, ${CHATS.toLocaleString("en")} chats, after load`, Number(memory.rss), "most", 200, "MiB")
  lines.push(
    `server memory after ${requests} requests from 16 concurrent clients: RSS ${memory.rss} MiB (peak ${memory.peak} MiB)   target: RSS <= 200 MiB`
  )
  await server.stop()
  raw.close()
  return lines.join("\n")
}

/** The figure of one case: ours and the baseline, p50 and p99, and their ratios. */
export const figure = (label, query, ours, base, target) =>
  `${label.padEnd(22)} p50 ${ours.median.toFixed(2).padStart(7)} ms  p99 ${ours.p99.toFixed(2).padStart(7)} ms | ` +
  `baseline p50 ${base.median.toFixed(2).padStart(6)} ms  p99 ${base.p99.toFixed(2).padStart(6)} ms | ` +
  `ratio p50 ${(ours.median / base.median).toFixed(1)}x  p99 ${(ours.p99 / base.p99).toFixed(1)}x | target ${target}   [${query || "no filter"}]`

/** Runs `fn` WARMUP + RUNS times, one at a time; p50/p99 of the last RUNS in ms. */
export const timed = async (fn) => {
  const durations = []
  for (let i = 0; i < WARMUP + RUNS; i++) {
    const started = performance.now()
    await fn()
    if (i >= WARMUP) durations.push(performance.now() - started)
  }
  return summarise(durations)
}

const ALL = { from: "chats AS c", where: [], params: [], order: "c.last_message_at DESC, c.uuid DESC" }

/**
 * One case per single filter of `GET /chats` and a combined one: the query string, and the
 * baseline's hand-written page query (`from`, conditions, order).
 */
const filterCases = (v) => {
  const onChats = (where, params) => ({ ...ALL, where, params })
  const onLinks = (kind, uuid, where = [], params = []) => ({
    from: "chat_links AS l CROSS JOIN chats AS c ON c.id = l.chat_id",
    where: ["l.kind = ? AND l.link_uuid = ?", ...where],
    params: [kind, uuid, ...params],
    order: "l.last_message_at DESC, l.uuid DESC"
  })
  return [
    { label: "no filter", query: "", sql: ALL },
    { label: "status", query: "status=pending", sql: onChats(["c.status = ?"], ["pending"]) },
    { label: "assigned_to (agent)", query: `assigned_to=${v.agent}`, sql: onChats(["c.assigned_to = ?"], [v.agent]) },
    { label: "assigned_to=unassigned", query: "assigned_to=unassigned", sql: onChats(["c.assigned_to IS NULL"], []) },
    { label: "group_uuid", query: `group_uuid=${v.group}`, sql: onLinks("group", v.group) },
    { label: "tag_uuid", query: `tag_uuid=${v.label}`, sql: onLinks("label", v.label) },
    { label: "favorite", query: "favorite=true", sql: onChats(["c.favorite = 1"], []) },
    { label: "unread", query: "unread=true", sql: onChats(["c.unread = 1"], []) },
    {
      label: "search (name)",
      query: `search=${encodeURIComponent(v.search)}`,
      sql: {
        from: "chat_search AS s CROSS JOIN chats AS c ON c.id = s.rowid",
        where: ["chat_search MATCH ?"],
        params: [`"${v.search}"`],
        order: ALL.order
      }
    },
    {
      label: "date_from + date_to",
      query: `date_from=${v.dateFrom}&date_to=${v.dateTo}`,
      sql: onChats(["c.last_message_at BETWEEN ? AND ?"], [`${v.dateFrom}T00:00:00.000Z`, `${v.dateTo}T23:59:59.999Z`])
    },
    {
      label: "combined",
      query: `status=open&assigned_to=${v.agent}&unread=true&tag_uuid=${v.label}`,
      sql: onLinks("label", v.label, ["c.status = ?", "c.assigned_to = ?", "c.unread = 1"], ["open", v.agent])
    }
  ]
}

/** Values the filters use, read from the seeded data: an agent, a group, a label, a surname, a week. */
const sampleValues = (db, organizationId) => {
  const agent = db.prepare("SELECT assigned_to FROM chats WHERE organization_id = ? AND assigned_to IS NOT NULL LIMIT 1").pluck().get(organizationId)
  const group = db.prepare("SELECT uuid FROM contact_groups WHERE organization_id = ? AND name = 'Customers'").pluck().get(organizationId)
  const label = db.prepare("SELECT uuid FROM labels WHERE organization_id = ? AND name = 'Churn risk'").pluck().get(organizationId)
  const middle = db.prepare("SELECT contact_uuid FROM chats WHERE organization_id = ? ORDER BY id LIMIT 1 OFFSET ?").pluck().get(organizationId, Math.floor(CHATS / 2))
  const search = db.prepare("SELECT last_name FROM contacts WHERE uuid = ?").pluck().get(middle).toLowerCase()
  const day = (daysAgo) => new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10)
  return { agent, group, label, search, dateFrom: day(37), dateTo: day(30) }
}

/**
 * The baseline: the page's row ids by the hand-written query (keyset `(key, uuid) < (?, ?)`
 * when `sql.keyset` is given), then the three reads the response needs, serialised.
 */
const makeBaseline = (db, organizationId) => {
  const prepared = new Map()
  const prepare = (text) => {
    if (!prepared.has(text)) prepared.set(text, db.prepare(text))
    return prepared.get(text)
  }
  const chats = prepare(`SELECT c.id, c.uuid, c.status, c.assigned_to, c.favorite, c.unread_count, c.last_message_at, c.created_at, c.updated_at,
      ct.uuid AS contact_uuid, ct.first_name, ct.last_name, ct.phone,
      m.uuid AS m_uuid, m.direction AS m_direction, m.type AS m_type, m.text AS m_text, m.status AS m_status, m.created_at AS m_created_at
    FROM chats AS c JOIN contacts AS ct ON ct.uuid = c.contact_uuid LEFT JOIN messages AS m ON m.uuid = c.last_message_uuid
    WHERE c.id IN (SELECT value FROM json_each(?))`)
  const groups = prepare(`SELECT m.contact_uuid, g.uuid, g.name FROM group_members AS m JOIN contact_groups AS g ON g.uuid = m.group_uuid
    WHERE m.contact_uuid IN (SELECT value FROM json_each(?)) ORDER BY g.name, g.uuid`)
  const labels = prepare(`SELECT cl.contact_uuid, l.uuid, l.name, l.color FROM contact_labels AS cl JOIN labels AS l ON l.uuid = cl.label_uuid
    WHERE cl.contact_uuid IN (SELECT value FROM json_each(?)) ORDER BY l.name, l.uuid`)
  return db.transaction((sql) => {
    const keyAlias = sql.order.startsWith("l.") ? "l" : "c"
    const where = [...sql.where, "c.organization_id = ?", ...(sql.keyset ? [`(${keyAlias}.last_message_at, ${keyAlias}.uuid) < (?, ?)`] : [])]
    const text = `SELECT c.id FROM ${sql.from} WHERE ${where.join(" AND ")} ORDER BY ${sql.order} LIMIT ${LIMIT + 1}`
    const ids = prepare(text).pluck().all(...sql.params, organizationId, ...(sql.keyset ?? []))
    const rows = chats.all(JSON.stringify(ids.slice(0, LIMIT)))
    const contacts = JSON.stringify(rows.map((row) => row.contact_uuid))
    return JSON.stringify({ chats: rows, groups: groups.all(contacts), labels: labels.all(contacts) })
  })
}

/**
 * The cached seeded file for CHATS chats (seeded through the CLI's `seed` when missing):
 * `{filename, organization: {org_id, api_key}, seeding: {duration_ms, file_bytes, cached}}`.
 */
const seededFile = async () => {
  const filename = join(tmpdir(), `switchboard-bench-chats-${CHATS}-schema${await schemaVersion()}-data${SEED_DATA_VERSION}.db`)
  const sidecar = `${filename}.json`
  if (existsSync(filename) && existsSync(sidecar)) {
    const cached = JSON.parse(readFileSync(sidecar, "utf8"))
    return { filename, organization: cached.organization, seeding: { ...cached.seeding, cached: true } }
  }
  const partial = `${filename}.partial`
  for (const suffix of ["", "-wal", "-shm"]) rmSync(`${partial}${suffix}`, { force: true })
  const env = { ...process.env, DATABASE_URL: `sqlite:${partial}` }
  const cli = (args, stdio) => {
    const result = spawnSync(process.execPath, [CLI, ...args], { env, stdio, encoding: "utf8", maxBuffer: 2 ** 24 })
    if (result.status !== 0) throw new Error(`cli ${args.join(" ")} failed: ${result.stderr}`)
    return result.stdout === null ? null : JSON.parse(result.stdout)
  }
  const organization = cli(["org", "create", "--name", "Bench chats"], "pipe")
  console.error(`seeding ${CHATS} chats into ${filename} (cached for later runs)…`)
  const started = performance.now()
  cli(["seed", "--org", organization.org_id, "--contacts", String(CHATS), "--chats", String(CHATS), "--seed", "1"], ["ignore", "pipe", "inherit"])
  const seeding = { duration_ms: Math.round(performance.now() - started), file_bytes: statSync(partial).size }
  renameSync(partial, filename)
  writeFileSync(sidecar, JSON.stringify({ organization: { org_id: organization.org_id, api_key: organization.api_key }, seeding }))
  return { filename, organization, seeding: { ...seeding, cached: false } }
}

/** The newest migration version of the SQLite adapter (a fresh temporary file, migrated). */
const schemaVersion = () =>
  Effect.runPromise(
    Effect.gen(function* () {
      const filename = join(temporaryDirectory(), "schema.db")
      yield* Effect.scoped(Layer.build(SqliteStorage.layer({ filename })))
      const db = new Database(filename, { readonly: true })
      const version = db.prepare("SELECT MAX(version) FROM schema_migrations").pluck().get()
      db.close()
      return version
    })
  )

/** VmRSS and VmHWM (peak) of process `pid` in MiB, whole numbers as text, from /proc. */
export const memoryOf = (pid) => {
  const { rss, peak } = processMemory(pid)
  return { rss: (rss / 2 ** 20).toFixed(0), peak: (peak / 2 ** 20).toFixed(0) }
}


runIfMain(import.meta.url, run)

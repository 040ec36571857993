// GET /chats over BENCH_CHATS (default 1 000 000) seeded chats on PostgreSQL (docs/benchmarks.md
// "GET /chats on PostgreSQL"), when POSTGRES_URL is set: p50 and p99 of one request at a time
// for no filter, each single filter of GET /chats, one combined filter and the first vs the
// 500th cursor page, on the standalone server with DATABASE_URL=postgres://…; each beside a
// baseline measured in this run — the same page read by hand-written SQL through pg (the
// page's ids from the best index, then the chats with contact and last message, their groups
// and their labels), no HTTP. Then the server's RSS after a concurrent load.
// The seeded schema stays in the database between runs, keyed by N, the schema version and
// SEED_DATA_VERSION (`switchboard_bench_chats_…`; seeding 1 000 000 chats takes minutes):
// drop it with `DROP SCHEMA … CASCADE` to reclaim the space. BENCH_CHATS_RUNS (default 200)
// requests per figure, BENCH_CHATS_LOAD_SECONDS (default 10) of load before reading RSS.
import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import Pg from "pg"
import { BENCH_SECRET_KEY, recordTarget, runIfMain, send, startServer, temporaryDirectory } from "./lib.mjs"
import { figure, memoryOf, timed } from "./chats.mjs"

const CHATS = Number(process.env.BENCH_CHATS ?? 1_000_000)
const LOAD_SECONDS = Number(process.env.BENCH_CHATS_LOAD_SECONDS ?? 10)
const LIMIT = 20
const DEEP_PAGE = 500
/** Bump when `seed` generates different data, so cached schemas are re-seeded. */
const SEED_DATA_VERSION = 1
const CLI = fileURLToPath(new URL("../dist/cli.js", import.meta.url))

export const run = async () => {
  if (!process.env.POSTGRES_URL) return "GET /chats on PostgreSQL: skipped (POSTGRES_URL is not set)"
  const pool = new Pg.Pool({ connectionString: process.env.POSTGRES_URL, max: 2 })
  try {
    return await measure(pool)
  } finally {
    await pool.end()
  }
}

const measure = async (pool) => {
  const { schema, organization, seeding } = await seededSchema(pool)
  const s = `"${schema}"`
  const values = await sampleValues(pool, s, organization.org_id)
  const server = await startServer("switchboardPostgres", schema, temporaryDirectory())
  const headers = { authorization: `Bearer ${organization.api_key}` }
  const get = async (query) => {
    const response = await send(`${server.url}/chats${query === "" ? "" : `?${query}`}`, { headers })
    if (response.status !== 200) throw new Error(`GET /chats?${query} answered ${response.status}: ${response.body}`)
    return JSON.parse(response.body).data
  }
  const baseline = makeBaseline(pool, s, organization.org_id)
  const lines = [
    `GET /chats over ${CHATS.toLocaleString("en")} chats, PostgreSQL (one request at a time over a socket) vs hand-written SQL through pg ` +
      `[schema ${schema}, seeded in ${(seeding.duration_ms / 1000).toFixed(0)} s${seeding.cached ? ", cached" : ""}]`
  ]
  const cases = filterCases(values)
  for (let i = 0; i < cases.length * 20; i++) await get(cases[i % cases.length].query)
  let worstSingle = 0
  for (const { label, query, sql } of cases) {
    const ours = await timed(() => get(query))
    const base = await timed(() => baseline(sql))
    lines.push(figure(label, query, ours, base, "p99 <= 20 ms"))
    if (label !== "combined") worstSingle = Math.max(worstSingle, ours.p99)
  }
  recordTarget(`GET /chats on PostgreSQL over ${CHATS.toLocaleString("en")} chats, no or one filter: worst p99`, worstSingle, "most", 20, "ms")

  const deepPage = Math.max(1, Math.min(DEEP_PAGE, Math.floor(CHATS / LIMIT)))
  let cursor = null
  for (let page = 1; page < deepPage; page++) cursor = (await get(`limit=${LIMIT}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`)).pagination.next_cursor
  const first = await timed(() => get(`limit=${LIMIT}`))
  const deep = await timed(() => get(`limit=${LIMIT}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`))
  const position = (
    await pool.query(`SELECT last_message_at, uuid FROM ${s}.chats WHERE organization_id = $1 ORDER BY last_message_at DESC, uuid DESC LIMIT 1 OFFSET $2`, [
      organization.org_id,
      (deepPage - 1) * LIMIT
    ])
  ).rows[0]
  const baseDeep = await timed(() => baseline({ ...ALL, keyset: [position.last_message_at, position.uuid] }))
  lines.push(figure("cursor page 1", `limit=${LIMIT}`, first, await timed(() => baseline(ALL)), "-"))
  lines.push(figure(`cursor page ${deepPage}`, `limit=${LIMIT}&cursor=…`, deep, baseDeep, "<= 1.5x page 1"))
  lines.push(`  page ${deepPage} / page 1 (p50): ${(deep.median / first.median).toFixed(2)}x, (p99): ${(deep.p99 / first.p99).toFixed(2)}x   target: <= 1.5x`)
  recordTarget(`GET /chats on PostgreSQL cursor page ${deepPage} / page 1 (p50)`, deep.median / first.median, "most", 1.5)

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
  lines.push(`server memory after ${requests} requests from 16 concurrent clients: RSS ${memory.rss} MiB (peak ${memory.peak} MiB)`)
  await server.stop()
  return lines.join("\n")
}

const ALL = { from: "chats AS c", where: [], params: [], order: "c.last_message_at DESC, c.uuid DESC" }

/** One case per single filter of `GET /chats` and a combined one, with the baseline's page query. */
const filterCases = (v) => {
  const onChats = (where, params) => ({ ...ALL, where, params })
  const onLinks = (kind, uuid, where = [], params = []) => ({
    from: "chat_links AS l JOIN chats AS c ON c.id = l.chat_id",
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
    { label: "favorite", query: "favorite=true", sql: onChats(["c.favorite = ?"], [true]) },
    { label: "unread", query: "unread=true", sql: onChats(["c.unread = ?"], [true]) },
    { label: "search (name)", query: `search=${encodeURIComponent(v.search)}`, sql: onChats(["c.search_text LIKE ?"], [`%${v.search}%`]) },
    {
      label: "date_from + date_to",
      query: `date_from=${v.dateFrom}&date_to=${v.dateTo}`,
      sql: onChats(["c.last_message_at BETWEEN ? AND ?"], [`${v.dateFrom}T00:00:00.000Z`, `${v.dateTo}T23:59:59.999Z`])
    },
    {
      label: "combined",
      query: `status=open&assigned_to=${v.agent}&unread=true&tag_uuid=${v.label}`,
      sql: onLinks("label", v.label, ["c.status = ?", "c.assigned_to = ?", "c.unread = ?"], ["open", v.agent, true])
    }
  ]
}

/** Values the filters use, read from the seeded data: an agent, a group, a label, a surname, a week. */
const sampleValues = async (pool, s, organizationId) => {
  const one = async (text, values) => Object.values((await pool.query(text, values)).rows[0] ?? {})[0]
  const agent = await one(`SELECT assigned_to FROM ${s}.chats WHERE organization_id = $1 AND assigned_to IS NOT NULL LIMIT 1`, [organizationId])
  const group = await one(`SELECT uuid FROM ${s}.contact_groups WHERE organization_id = $1 AND name = 'Customers'`, [organizationId])
  const label = await one(`SELECT uuid FROM ${s}.labels WHERE organization_id = $1 AND name = 'Churn risk'`, [organizationId])
  const middle = await one(`SELECT contact_uuid FROM ${s}.chats WHERE organization_id = $1 ORDER BY id LIMIT 1 OFFSET $2`, [organizationId, Math.floor(CHATS / 2)])
  const search = String(await one(`SELECT last_name FROM ${s}.contacts WHERE uuid = $1`, [middle])).toLowerCase()
  const day = (daysAgo) => new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10)
  return { agent, group, label, search, dateFrom: day(37), dateTo: day(30) }
}

/**
 * The baseline: the page's row ids by the hand-written query (keyset `(key, uuid) < ($, $)`
 * when `sql.keyset` is given), then the three reads the response needs, in one read-only
 * snapshot, serialised.
 */
const makeBaseline = (pool, s, organizationId) => {
  const chats = `SELECT c.id, c.uuid, c.status, c.assigned_to, c.favorite, c.unread_count, c.last_message_at, c.created_at, c.updated_at,
      ct.uuid AS contact_uuid, ct.first_name, ct.last_name, ct.phone,
      m.uuid AS m_uuid, m.direction AS m_direction, m.type AS m_type, m.text AS m_text, m.status AS m_status, m.created_at AS m_created_at
    FROM ${s}.chats AS c JOIN ${s}.contacts AS ct ON ct.uuid = c.contact_uuid LEFT JOIN ${s}.messages AS m ON m.uuid = c.last_message_uuid
    WHERE c.id = ANY($1::bigint[])`
  const groups = `SELECT m.contact_uuid, g.uuid, g.name FROM ${s}.group_members AS m JOIN ${s}.contact_groups AS g ON g.uuid = m.group_uuid
    WHERE m.contact_uuid = ANY($1::text[]) ORDER BY g.name, g.uuid`
  const labels = `SELECT cl.contact_uuid, l.uuid, l.name, l.color FROM ${s}.contact_labels AS cl JOIN ${s}.labels AS l ON l.uuid = cl.label_uuid
    WHERE cl.contact_uuid = ANY($1::text[]) ORDER BY l.name, l.uuid`
  return async (sql) => {
    const client = await pool.connect()
    try {
      await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
      const keyAlias = sql.order.startsWith("l.") ? "l" : "c"
      const where = [...sql.where, "c.organization_id = ?", ...(sql.keyset ? [`(${keyAlias}.last_message_at, ${keyAlias}.uuid) < (?, ?)`] : [])]
      let n = 0
      const text = `SELECT c.id FROM ${sql.from.replace(/(chat_links|chats) AS/g, `${s}.$1 AS`)} WHERE ${where.join(" AND ").replace(/\?/g, () => `$${++n}`)} ORDER BY ${sql.order} LIMIT ${LIMIT + 1}`
      const ids = (await client.query(text, [...sql.params, organizationId, ...(sql.keyset ?? [])])).rows.map((row) => row.id)
      const rows = (await client.query(chats, [ids.slice(0, LIMIT)])).rows
      const contacts = rows.map((row) => row.contact_uuid)
      const result = JSON.stringify({ chats: rows, groups: (await client.query(groups, [contacts])).rows, labels: (await client.query(labels, [contacts])).rows })
      await client.query("COMMIT")
      return result
    } finally {
      client.release()
    }
  }
}

/**
 * The cached seeded schema for CHATS chats (seeded through the CLI's `seed` when missing):
 * `{schema, organization: {org_id, api_key}, seeding: {duration_ms, cached}}`. Its sidecar
 * is the table `bench_seeding` in the schema; a schema without it was interrupted and is
 * seeded again.
 */
const seededSchema = async (pool) => {
  const { PostgresStorage } = await import("@switchboard/storage-postgres")
  const schema = `switchboard_bench_chats_${CHATS}_schema${PostgresStorage.SCHEMA_VERSION}_data${SEED_DATA_VERSION}`
  const cached = await pool.query("SELECT to_regclass($1) IS NOT NULL AS found", [`"${schema}".bench_seeding`])
  if (cached.rows[0].found) {
    const row = (await pool.query(`SELECT organization, seeding FROM "${schema}".bench_seeding`)).rows[0]
    return { schema, organization: row.organization, seeding: { ...row.seeding, cached: true } }
  }
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  const env = {
    ...process.env,
    DATABASE_URL: process.env.POSTGRES_URL,
    DATABASE_SCHEMA: schema,
    SWITCHBOARD_SECRET_KEY: BENCH_SECRET_KEY
  }
  const cli = (args, stdio) => {
    const result = spawnSync(process.execPath, [CLI, ...args], { env, stdio, encoding: "utf8", maxBuffer: 2 ** 24 })
    if (result.status !== 0) throw new Error(`cli ${args.join(" ")} failed: ${result.stderr}`)
    return result.stdout === null ? null : JSON.parse(result.stdout)
  }
  const organization = cli(["org", "create", "--name", "Bench chats"], "pipe")
  console.error(`seeding ${CHATS} chats into PostgreSQL schema ${schema} (kept for later runs)…`)
  const started = performance.now()
  cli(["seed", "--org", organization.org_id, "--contacts", String(CHATS), "--chats", String(CHATS), "--seed", "1"], ["ignore", "pipe", "inherit"])
  const seeding = { duration_ms: Math.round(performance.now() - started) }
  // What a bulk load is followed by: without it the tables' visibility maps are empty (so
  // index-only scans read the heap) and autovacuum comes to the 1 000 000 rows during a
  // later measurement (the run right after a seeding read p99s up to 32 ms, baselines too).
  const tables = (await pool.query("SELECT tablename FROM pg_tables WHERE schemaname = $1", [schema])).rows
  await pool.query(`VACUUM (ANALYZE) ${tables.map(({ tablename }) => `"${schema}"."${tablename}"`).join(", ")}`)
  await pool.query(`CREATE TABLE "${schema}".bench_seeding (organization json NOT NULL, seeding json NOT NULL)`)
  await pool.query(`INSERT INTO "${schema}".bench_seeding VALUES ($1, $2)`, [
    JSON.stringify({ org_id: organization.org_id, api_key: organization.api_key }),
    JSON.stringify(seeding)
  ])
  return { schema, organization, seeding: { ...seeding, cached: false } }
}

runIfMain(import.meta.url, run)

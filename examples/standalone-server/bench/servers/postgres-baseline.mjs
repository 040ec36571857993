// Benchmark baseline on PostgreSQL: a hand-written node:http + pg endpoint, one process,
// on the schema given as argument in the database of POSTGRES_URL (started by lib.mjs
// `startServer`; prints "Postgres baseline listening on …" on stderr). A pool of 10
// connections, like the standalone server's.
//
// What it does, per request, the statements Switchboard runs on PostgreSQL:
// - the API-key check (lib.mjs `apiKeyCheck`'s rules: `Authorization: Bearer`, SHA-256 hex,
//   one SELECT of the key and its organization, no cache: a revocation from another process
//   counts at once), then the rate-limit counter's upsert (`INSERT … ON CONFLICT DO UPDATE
//   … RETURNING count` in the UNLOGGED `rate_buckets`): the two statements of `GET /verify`,
//   answered with Switchboard's own verify bytes (BENCH_VERIFY_BODY);
// - `GET …/contacts?page=P&per_page=N`: the same two, then in one REPEATABLE READ read-only
//   transaction the page's rows, the total from `contact_counts`, their groups and their
//   labels, written as the same envelope.
// What it does not do: validate the query string, send rate-limit headers, log requests,
// add request ids, handle other routes.
import { createHash } from "node:crypto"
import { createServer } from "node:http"
import Pg from "pg"
import { envelope, listen } from "../lib.mjs"

const schema = `"${process.argv[2]}"`
const pool = new Pg.Pool({ connectionString: process.env.POSTGRES_URL, max: 10 })
// Per pool, as the adapter does: counts as numbers, timestamps as ISO strings in UTC.
const types = {
  getTypeParser: (oid, format) =>
    oid === 20 ? Number : oid === 1184 ? (text) => new Date(text.replace(" ", "T").replace(/([+-]\d\d)$/, "$1:00")).toISOString() : Pg.types.getTypeParser(oid, format)
}
const query = (client, text, values) => client.query({ text, values, types })

const DETAILS = ["first_name", "last_name", "email", "street", "city", "state", "zip", "country"]
const SQL = {
  key: `SELECT o.id, o.name, o.api_access, o.subscription FROM ${schema}.api_keys AS k
    JOIN ${schema}.organizations AS o ON o.id = k.organization_id WHERE k.hash = $1 AND k.revoked_at IS NULL`,
  count: `INSERT INTO ${schema}.rate_buckets AS bucket (key, window_start, count, expires_at) VALUES ($1, $2, 1, $3)
    ON CONFLICT (key, window_start) DO UPDATE SET count = bucket.count + 1 RETURNING count`,
  page: `SELECT uuid, phone, phone_valid, ${DETAILS.join(", ")}, marketing_opt_out_at, created_at, updated_at FROM ${schema}.contacts
    WHERE organization_id = $1 ORDER BY created_at DESC, uuid DESC LIMIT $2 OFFSET $3`,
  total: `SELECT COALESCE((SELECT count FROM ${schema}.contact_counts WHERE organization_id = $1), 0) AS count`,
  groups: `SELECT m.contact_uuid, g.uuid, g.name FROM ${schema}.group_members AS m JOIN ${schema}.contact_groups AS g ON g.uuid = m.group_uuid
    WHERE m.contact_uuid = ANY($1::text[]) ORDER BY g.name, g.uuid`,
  labels: `SELECT cl.contact_uuid, l.uuid, l.name, l.color FROM ${schema}.contact_labels AS cl JOIN ${schema}.labels AS l ON l.uuid = cl.label_uuid
    WHERE cl.contact_uuid = ANY($1::text[]) ORDER BY l.name, l.uuid`
}
const HOUR_MS = 3_600_000

const authenticate = async (authorization) => {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "")
  if (match === null) return { status: 401, message: "Missing API key" }
  const found = (await query(pool, SQL.key, [createHash("sha256").update(match[1]).digest("hex")])).rows[0]
  if (found === undefined) return { status: 401, message: "Invalid API key" }
  if (found.subscription !== "active") return { status: 403, message: "Subscription inactive" }
  if (found.api_access !== true) return { status: 403, message: "API access not allowed" }
  const now = Date.now()
  const windowStart = now - (now % HOUR_MS)
  await query(pool, SQL.count, [`baseline:general:${found.id}`, windowStart, windowStart + HOUR_MS])
  return { status: 200, organization: { id: found.id, name: found.name } }
}

const grouped = (rows, pick) => {
  const by = new Map()
  for (const row of rows) by.set(row.contact_uuid, [...(by.get(row.contact_uuid) ?? []), pick(row)])
  return by
}

const list = async (organizationId, perPage, pageNumber) => {
  const client = await pool.connect()
  try {
    await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    const rows = (await query(client, SQL.page, [organizationId, perPage, (pageNumber - 1) * perPage])).rows
    const total = (await query(client, SQL.total, [organizationId])).rows[0].count
    const uuids = rows.map((row) => row.uuid)
    const groups = grouped((await query(client, SQL.groups, [uuids])).rows, ({ uuid, name }) => ({ uuid, name }))
    const labels = grouped((await query(client, SQL.labels, [uuids])).rows, ({ uuid, name, color }) => ({ uuid, name, color }))
    await client.query("COMMIT")
    const contacts = rows.map(({ marketing_opt_out_at, created_at, updated_at, ...row }) => ({
      ...row,
      phone_valid: row.phone_valid,
      groups: groups.get(row.uuid) ?? [],
      labels: labels.get(row.uuid) ?? [],
      marketing_opt_out_at,
      created_at,
      updated_at
    }))
    return { contacts, pagination: { page: pageNumber, per_page: perPage, total, total_pages: Math.ceil(total / perPage) } }
  } finally {
    client.release()
  }
}

const verifyBody = process.env.BENCH_VERIFY_BODY ?? "{}"
const server = createServer(async (request, response) => {
  const url = new URL(request.url, "http://localhost")
  let status = 200
  let body
  try {
    const key = await authenticate(request.headers.authorization)
    if (key.status !== 200) {
      status = key.status
      body = envelope(key.status, key.message, null)
    } else if (url.pathname.endsWith("/verify")) body = verifyBody
    else {
      const data = await list(key.organization.id, Number(url.searchParams.get("per_page") ?? 20), Number(url.searchParams.get("page") ?? 1))
      body = envelope(200, "Contacts retrieved", data)
    }
  } catch (error) {
    status = 500
    body = envelope(500, String(error), null)
  }
  response.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(body) })
  response.end(body)
})
server.keepAliveTimeout = 60_000
await listen("Postgres baseline", server)

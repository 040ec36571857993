// Benchmark baseline: a bare node:http server, one process, on the SQLite file given as
// argument (started by lib.mjs `startServer`; prints "Baseline listening on …" on stderr).
//
// What it does:
// - `GET …/verify`: writes the fixed bytes of BENCH_VERIFY_BODY (Switchboard's own verify
//   answer, captured by the bench) with status 200. No authentication, no database, no
//   rate limit, no log: the ceiling — the cost of node:http itself.
// - `GET …/contacts?page=P&per_page=N`: checks the API key the way Switchboard does
//   (lib.mjs `apiKeyCheck`: `Authorization: Bearer`, SHA-256 hex, one prepared SELECT of
//   the key and its organization, revoked / subscription / api_access refused with 401 or
//   403; no cache), then runs, on raw better-sqlite3 in one read transaction, the same
//   queries as the SQLite adapter (the page's rows, the total from `contact_counts`, their
//   groups, their labels) and writes the same envelope.
// What it does not do: validate the query string (bad numbers are not refused), rate
// limit, log requests, add request ids or rate-limit headers, handle other routes.
import { createServer } from "node:http"
import { apiKeyCheck, envelope, listen, openDatabase } from "../lib.mjs"

const db = openDatabase(process.argv[2])
const authenticate = apiKeyCheck(db)
const DETAILS = ["first_name", "last_name", "email", "street", "city", "state", "zip", "country"]
const page = db.prepare(
  `SELECT uuid, phone, phone_valid, ${DETAILS.join(", ")}, marketing_opt_out_at, created_at, updated_at FROM contacts WHERE organization_id = ? ORDER BY created_at DESC, uuid DESC LIMIT ? OFFSET ?`
)
const count = db.prepare("SELECT COALESCE((SELECT count FROM contact_counts WHERE organization_id = ?), 0) AS count")
const groupsOf = db.prepare(`SELECT m.contact_uuid, g.uuid, g.name FROM group_members AS m JOIN contact_groups AS g ON g.uuid = m.group_uuid
  WHERE m.contact_uuid IN (SELECT value FROM json_each(?)) ORDER BY g.name, g.uuid`)
const labelsOf = db.prepare(`SELECT cl.contact_uuid, l.uuid, l.name, l.color FROM contact_labels AS cl JOIN labels AS l ON l.uuid = cl.label_uuid
  WHERE cl.contact_uuid IN (SELECT value FROM json_each(?)) ORDER BY l.name, l.uuid`)
const grouped = (rows, pick) => {
  const by = new Map()
  for (const row of rows) by.set(row.contact_uuid, [...(by.get(row.contact_uuid) ?? []), pick(row)])
  return by
}
const list = db.transaction((organizationId, perPage, pageNumber) => {
  const rows = page.all(organizationId, perPage, (pageNumber - 1) * perPage)
  const total = count.get(organizationId).count
  const uuids = JSON.stringify(rows.map((row) => row.uuid))
  const groups = grouped(groupsOf.all(uuids), ({ uuid, name }) => ({ uuid, name }))
  const labels = grouped(labelsOf.all(uuids), ({ uuid, name, color }) => ({ uuid, name, color }))
  const contacts = rows.map(({ marketing_opt_out_at, created_at, updated_at, ...row }) => ({
    ...row,
    phone_valid: row.phone_valid !== 0,
    groups: groups.get(row.uuid) ?? [],
    labels: labels.get(row.uuid) ?? [],
    marketing_opt_out_at,
    created_at,
    updated_at
  }))
  return { contacts, pagination: { page: pageNumber, per_page: perPage, total, total_pages: Math.ceil(total / perPage) } }
})

const verifyBody = process.env.BENCH_VERIFY_BODY ?? "{}"
const server = createServer((request, response) => {
  const url = new URL(request.url, "http://localhost")
  let status = 200
  let body
  if (url.pathname.endsWith("/verify")) body = verifyBody
  else {
    const key = authenticate(request.headers.authorization)
    if (key.status !== 200) {
      status = key.status
      body = envelope(key.status, key.message, null)
    } else {
      const data = list(key.organization.id, Number(url.searchParams.get("per_page") ?? 20), Number(url.searchParams.get("page") ?? 1))
      body = envelope(200, "Contacts retrieved", data)
    }
  }
  response.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(body) })
  response.end(body)
})
server.keepAliveTimeout = 60_000
await listen("Baseline", server)

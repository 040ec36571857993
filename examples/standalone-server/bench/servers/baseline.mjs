// Benchmark baseline: a bare node:http server. `GET …/verify` returns the fixed envelope in
// BENCH_VERIFY_BODY; `GET …/contacts?page=P&per_page=N` runs, on raw better-sqlite3, the
// same queries as the SQLite adapter (page rows, total, their groups, their labels: one
// snapshot) and writes the same envelope. No authentication, validation or rate limit:
// the floor the handler is measured against. Argument: the SQLite file; prints "ready <port>".
import { createServer } from "node:http"
import Database from "better-sqlite3"

const db = new Database(process.argv[2], { readonly: true })
const organizationId = db.prepare("SELECT id FROM organizations LIMIT 1").get().id
const DETAILS = ["first_name", "last_name", "email", "street", "city", "state", "zip", "country"]
const page = db.prepare(
  `SELECT uuid, phone, ${DETAILS.join(", ")}, created_at, updated_at FROM contacts WHERE organization_id = ? ORDER BY created_at DESC, uuid DESC LIMIT ? OFFSET ?`
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
const list = db.transaction((perPage, pageNumber) => {
  const rows = page.all(organizationId, perPage, (pageNumber - 1) * perPage)
  const total = count.get(organizationId).count
  const uuids = JSON.stringify(rows.map((row) => row.uuid))
  const groups = grouped(groupsOf.all(uuids), ({ uuid, name }) => ({ uuid, name }))
  const labels = grouped(labelsOf.all(uuids), ({ uuid, name, color }) => ({ uuid, name, color }))
  const contacts = rows.map(({ created_at, updated_at, ...row }) => ({
    ...row,
    groups: groups.get(row.uuid) ?? [],
    labels: labels.get(row.uuid) ?? [],
    created_at,
    updated_at
  }))
  return { contacts, pagination: { page: pageNumber, per_page: perPage, total, total_pages: Math.ceil(total / perPage) } }
})

const verifyBody = process.env.BENCH_VERIFY_BODY ?? "{}"
const server = createServer((request, response) => {
  const url = new URL(request.url, "http://localhost")
  let body
  if (url.pathname.endsWith("/verify")) body = verifyBody
  else {
    const data = list(Number(url.searchParams.get("per_page") ?? 20), Number(url.searchParams.get("page") ?? 1))
    body = JSON.stringify({ status: 200, success: true, message: "Contacts retrieved", data, errors: [] })
  }
  response.writeHead(200, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(body) })
  response.end(body)
})
server.keepAliveTimeout = 60_000
server.listen(0, "127.0.0.1", () => console.log(`ready ${server.address().port}`))
process.on("SIGTERM", () => server.close(() => process.exit(0)))

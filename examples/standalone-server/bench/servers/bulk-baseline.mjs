// Benchmark baseline: an expert's hand-written `POST /contacts/bulk`, node:http, one
// process, on the SQLite file given as argument — a copy of a file Switchboard's adapter
// migrated, so the same schema, indexes and triggers (started by lib.mjs `startServer`;
// prints "Bulk baseline listening on …" on stderr).
//
// What it does, per request:
// - checks the API key the way Switchboard does (lib.mjs `apiKeyCheck`: Bearer key, SHA-256
//   hex, one prepared SELECT of the key and its organization; no cache);
// - reads the body (at most 1 MiB, else 413) and `JSON.parse`s it: `{contacts: [...]}`;
// - per row: `first_name` required, `email` checked against a simple pattern, `phone`
//   parsed with libphonenumber-js's max metadata (`parsePhoneNumberWithError`, then
//   `isValid()`) and normalised to E.164; any invalid row → 400 listing every invalid field,
//   nothing written (all or nothing, as Switchboard);
// - ONE better-sqlite3 transaction: per row a prepared
//   `INSERT … ON CONFLICT(organization_id, phone) DO UPDATE … RETURNING uuid` (the
//   contacts table's unique (organization_id, phone)), a new uuid v7 per row, created or
//   updated told by the uuid returned; the organization's usage counter (`contact_counts`)
//   is kept by the schema's own triggers inside that transaction, as for Switchboard;
// - answers the envelope `{created, updated, contacts: [{uuid, phone, status}]}`.
// What it does not do: rate limit, log, groups (`group` is ignored: the bench sends none),
// plan-limit checks (the bench organization has no contacts limit), `contact.created`
// webhook events (the bench organization has no endpoints; Switchboard looks that up once),
// a null detail does not clear a stored one on update.
import { createServer } from "node:http"
import { parsePhoneNumberWithError } from "libphonenumber-js/max"
import { v7 as uuidv7 } from "uuid"
import { apiKeyCheck, envelope, listen, openDatabase } from "../lib.mjs"

const BODY_LIMIT = 1024 * 1024
const DETAILS = ["first_name", "last_name", "email", "street", "city", "state", "zip", "country"]
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/

const db = openDatabase(process.argv[2])
const authenticate = apiKeyCheck(db)
const upsert = db.prepare(
  `INSERT INTO contacts (uuid, organization_id, phone, ${DETAILS.join(", ")}, created_at, updated_at)
   VALUES (?, ?, ?, ${DETAILS.map(() => "?").join(", ")}, ?, ?)
   ON CONFLICT (organization_id, phone) DO UPDATE SET
     ${DETAILS.map((field) => `${field} = COALESCE(excluded.${field}, ${field})`).join(", ")},
     updated_at = excluded.updated_at
   RETURNING uuid`
)
const importAll = db.transaction((organizationId, rows, now) => {
  let created = 0
  const contacts = rows.map((row) => {
    const uuid = uuidv7()
    const stored = upsert.get(uuid, organizationId, row.phone, ...DETAILS.map((field) => row[field] ?? null), now, now).uuid
    if (stored === uuid) created += 1
    return { uuid: stored, phone: row.phone, status: stored === uuid ? "created" : "updated" }
  })
  return { created, updated: contacts.length - created, contacts }
})

/** The rows, normalised, or the issues of every invalid field. */
const readRows = (input) => {
  const issues = []
  const invalid = (code, field, message) => issues.push({ code, message, field })
  if (typeof input !== "object" || input === null || !Array.isArray(input.contacts)) {
    invalid("invalid_type", "contacts", "contacts must be an array")
    return { issues }
  }
  const rows = input.contacts.map((contact, index) => {
    const path = `contacts[${index}]`
    if (typeof contact !== "object" || contact === null) {
      invalid("invalid_type", path, `${path} must be an object`)
      return null
    }
    const row = {}
    for (const field of DETAILS) {
      const value = contact[field]
      if (value === undefined || value === null) continue
      if (typeof value !== "string") invalid("invalid_type", `${path}.${field}`, `${path}.${field} must be a string`)
      else row[field] = value.trim() === "" ? null : value.trim()
    }
    if (!row.first_name) invalid("required", `${path}.first_name`, `${path}.first_name is required`)
    if (row.email && !EMAIL.test(row.email)) invalid("invalid_format", `${path}.email`, `${path}.email must be an e-mail address`)
    let phone
    try {
      phone = typeof contact.phone === "string" ? parsePhoneNumberWithError(contact.phone) : undefined
    } catch {
      phone = undefined
    }
    if (phone === undefined || !phone.isValid()) {
      invalid("invalid_format", `${path}.phone`, `${path}.phone '${contact.phone}' is not a valid phone number`)
    } else row.phone = phone.number
    return row
  })
  return { rows, issues }
}

const answer = (response, status, body) => {
  response.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(body) })
  response.end(body)
}

const server = createServer((request, response) => {
  if (request.method !== "POST" || !request.url.endsWith("/contacts/bulk")) return answer(response, 404, envelope(404, "Not found", null))
  const key = authenticate(request.headers.authorization)
  if (key.status !== 200) return answer(response, key.status, envelope(key.status, key.message, null))
  const chunks = []
  let size = 0
  request.on("data", (chunk) => {
    size += chunk.length
    if (size <= BODY_LIMIT) chunks.push(chunk)
  })
  request.on("end", () => {
    if (size > BODY_LIMIT) return answer(response, 413, envelope(413, "Payload too large", null))
    let input
    try {
      input = JSON.parse(Buffer.concat(chunks).toString("utf8"))
    } catch {
      return answer(response, 400, envelope(400, "Malformed JSON", null))
    }
    const { rows, issues } = readRows(input)
    if (issues.length > 0) return answer(response, 400, envelope(400, "Invalid input", null, issues))
    const result = importAll(key.organization.id, rows, new Date().toISOString())
    answer(response, 200, envelope(200, `${result.created} created, ${result.updated} updated`, result))
  })
})
server.keepAliveTimeout = 60_000
await listen("Bulk baseline", server)

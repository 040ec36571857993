import {
  chatSearchText,
  CONTACT_DETAIL_FIELDS,
  type ContactDetails,
  type ContactId,
  type ContactImportOutcome,
  type ContactImportRequest,
  type ContactImportResult,
  type GroupId,
  nameKey
} from "@switchboard/core"
import type { AnyBulkWriteOperation } from "mongodb"
import type { ContactDocument } from "../internal/documents.js"
import { isDuplicateKey } from "../internal/driver.js"
import { byKeys, contactsByPhones, contactUpdatePipeline, knownDetails, owned, ownedAmong } from "../internal/queries.js"
import { contactRecords } from "../internal/records.js"
import type { Collections } from "../internal/schema.js"
import type { Usage } from "../internal/usage.js"
import { missingGroups } from "./groups.js"
import { pendingEvent, subscribersOf } from "./webhooks.js"

/** How many times an import restarts after a concurrent request created one of its phones. */
const ATTEMPTS = 3

/**
 * `contacts.importBulk` without multi-document transactions (docs/storage.md "Plan limits without transactions"), in this order:
 * 1. checks: group uuids must be the organization's (`GroupsNotFound`); the phones that
 *    exist decide which rows are new;
 * 2. reserves one `contacts` slot per new row with the conditional `$inc` of usage.ts
 *    (`LimitExceeded` when it would pass `contactsLimit`): nothing written before this;
 * 3. creates the groups named by name that are missing (unique `name_key`: a concurrent
 *    import creating the same name is matched, not duplicated);
 * 4. inserts the new contacts with one unordered `insertMany` (with `request.events !==
 *    false` and endpoints subscribed, each carries its `contact.created` event in
 *    `pending_events`: webhooks.ts); if any fails (a concurrent
 *    request created the same phone: duplicate key), it deletes the ones this batch
 *    inserted and the groups it created, releases the reservation and starts again
 *    (up to 3 times), so a refused batch leaves nothing behind;
 * 5. upserts the existing contacts with one unordered `bulkWrite` of pipeline updates
 *    (details overwrite, groups are added, search text recomputed).
 * Crash windows: between 2 and 4 the counter is above the real count until the start-up
 * reconciliation; a crash during 4–5 leaves the rows written so far (re-running the import
 * is idempotent: it upserts by phone).
 */
export const importBulk = async (
  collections: Collections,
  usage: Usage,
  organizationId: string,
  request: ContactImportRequest
): Promise<ContactImportOutcome> => {
  if (request.rows.length === 0) return { _tag: "Imported", result: { created: 0, updated: 0, contacts: [] } }
  const referenced = request.rows.flatMap((row) => row.groups.flatMap((g) => (g._tag === "ById" ? [g.uuid] : [])))
  const missing = await missingGroups(collections, organizationId, referenced)
  if (missing.length > 0) return { _tag: "GroupsNotFound", uuids: missing as Array<GroupId> }
  for (let attempt = 1; ; attempt++) {
    const outcome = await importOnce(collections, usage, organizationId, request)
    if (outcome !== "Retry") return outcome
    if (attempt >= ATTEMPTS) throw new Error("importBulk: phones kept being created concurrently; try again")
  }
}

/** One attempt of {@link importBulk} after the group check; `"Retry"` when it was undone. */
const importOnce = async (
  collections: Collections,
  usage: Usage,
  organizationId: string,
  request: ContactImportRequest
): Promise<ContactImportOutcome | "Retry"> => {
  const { rows, now } = request
  const existing = await collections.contacts
    .find(contactsByPhones(organizationId, rows.map((row) => row.phone)), { projection: { _id: 1, phone: 1 } })
    .toArray()
  const existingByPhone = new Map(existing.map((d) => [d.phone, d._id]))
  const created = rows.filter((row) => !existingByPhone.has(row.phone)).length
  if (created > 0) {
    const reservation = await usage.reserve(organizationId, "contacts", created, request.contactsLimit)
    if (!reservation.reserved) {
      return { _tag: "LimitExceeded", limit: request.contactsLimit ?? 0, usage: reservation.usage, requested: created }
    }
  }
  // New contacts take the first ids, in row order; new groups the ones after.
  let next = 0
  const nextId = () => {
    const id = request.ids[next++]
    if (id === undefined) throw new Error("importBulk: not enough ids")
    return id
  }
  const rowIds = rows.map((row) => existingByPhone.get(row.phone) ?? nextId())
  const groups = await resolveGroupNames(collections, organizationId, request, nextId)
  const groupIdsOf = (row: ContactImportRequest["rows"][number]) => [
    ...new Set(row.groups.map((g) => (g._tag === "ById" ? g.uuid : groups.byKey.get(nameKey(g.name))!)))
  ]
  const fresh: Array<ContactDocument> = []
  const updates: Array<AnyBulkWriteOperation<ContactDocument>> = []
  rows.forEach((row, index) => {
    const id = rowIds[index]!
    if (existingByPhone.has(row.phone)) {
      const update = contactUpdatePipeline({ details: row.details }, now, groupIdsOf(row))
      updates.push({ updateOne: { filter: owned(organizationId, id), update } })
    } else {
      fresh.push(newContactDocument(organizationId, id, row.phone, row.details, groupIdsOf(row), now, row.phone_valid !== false))
    }
  })
  if (fresh.length > 0 && request.events !== false) {
    // Each created contact carries its own contact.created event, written with it.
    const endpoints = (await subscribersOf(collections, organizationId))("contact.created")
    if (endpoints.length > 0) {
      const records = await contactRecords(collections, organizationId, fresh)
      fresh.forEach((document, index) => {
        fresh[index] = { ...document, pending_events: [pendingEvent("contact.created", now, endpoints, records[index])] }
      })
    }
  }
  if (fresh.length > 0) {
    try {
      await collections.contacts.insertMany(fresh, { ordered: false })
    } catch (error) {
      await undo(collections, usage, organizationId, fresh.map((d) => d._id), groups.created)
      if (isDuplicateKey(error)) return "Retry"
      throw error
    }
  }
  if (updates.length > 0) await collections.contacts.bulkWrite(updates, { ordered: false })
  const contacts = rows.map((row, index) => ({
    uuid: rowIds[index] as ContactId,
    phone: row.phone,
    status: existingByPhone.has(row.phone) ? ("updated" as const) : ("created" as const)
  }))
  const result: ContactImportResult = { created, updated: rows.length - created, contacts }
  return { _tag: "Imported", result }
}

/**
 * The uuid of every group named by name in the rows (key: `nameKey`), creating the missing
 * ones in first-seen order (trimmed name, fresh ids from `nextId`). Returns those it created.
 */
const resolveGroupNames = async (
  collections: Collections,
  organizationId: string,
  request: ContactImportRequest,
  nextId: () => string
) => {
  const names = new Map<string, string>()
  for (const row of request.rows) {
    for (const g of row.groups) if (g._tag === "ByName" && !names.has(nameKey(g.name))) names.set(nameKey(g.name), g.name.trim())
  }
  const byKey = new Map<string, string>()
  const created: Array<string> = []
  if (names.size === 0) return { byKey, created }
  const found = await collections.groups.find(byKeys(organizationId, "name_key", [...names.keys()]), { projection: { name_key: 1 } }).toArray()
  for (const d of found) byKey.set(d.name_key, d._id)
  for (const [key, name] of names) {
    if (byKey.has(key)) continue
    const id = nextId()
    try {
      await collections.groups.insertOne({ _id: id, organization_id: organizationId, name, name_key: key, created_at: request.now, updated_at: request.now })
      created.push(id)
      byKey.set(key, id)
    } catch (error) {
      if (!isDuplicateKey(error)) throw error
      const other = await collections.groups.findOne(byKeys(organizationId, "name_key", [key]), { projection: { _id: 1 } })
      if (other === null) throw error
      byKey.set(key, other._id)
    }
  }
  return { byKey, created }
}

/** Undoes a failed insert: deletes the batch's new contacts and groups, releases the reservation. */
const undo = async (
  collections: Collections,
  usage: Usage,
  organizationId: string,
  contactIds: ReadonlyArray<string>,
  groupIds: ReadonlyArray<string>
) => {
  await collections.contacts.deleteMany(ownedAmong(organizationId, contactIds))
  if (groupIds.length > 0) await collections.groups.deleteMany(ownedAmong(organizationId, groupIds))
  await usage.add(organizationId, "contacts", -contactIds.length)
}

/** A new contact document: every detail not given is `null`. */
export const newContactDocument = (
  organizationId: string,
  id: string,
  phone: string,
  details: Partial<ContactDetails>,
  groupIds: ReadonlyArray<string>,
  now: string,
  phoneValid = true
): ContactDocument => {
  const known = knownDetails(details)
  const fields = Object.fromEntries(CONTACT_DETAIL_FIELDS.map((field) => [field, known[field] ?? null])) as unknown as ContactDetails
  return {
    _id: id,
    organization_id: organizationId,
    phone,
    phone_valid: phoneValid,
    ...fields,
    group_ids: groupIds,
    label_ids: [],
    search_text: chatSearchText({ ...fields, phone }),
    marketing_opt_out_at: null,
    created_at: now,
    updated_at: now
  }
}


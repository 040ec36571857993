import {
  CONTACT_DETAIL_FIELDS,
  type ContactDetails,
  type ContactId,
  type ContactImportOutcome,
  type ContactImportRequest,
  type ContactImportResult,
  type ContactImportRow,
  nameKey,
  type OrganizationId
} from "@switchboard/core"
import { freshIds, groupsNamedBy, type ResolvedGroups, resolvedGroups } from "@switchboard/storage-sql"
import type { Sql } from "../internal/sql.js"
import { contactsByUuid } from "./rows.js"
import { recordWebhookEvents } from "./webhookEvents.js"

/**
 * The body of `contacts.importBulk` (docs/contacts.md "Rules"); run it inside one
 * transaction holding the organization's lock (`lockOrganization`), so the checks and the
 * writes are atomic across processes. Reads with a fixed number of queries (existing
 * phones, groups by uuid and by name key, the counter), then writes with one multi-row
 * statement each (new contacts, updates, new groups, memberships): a handful of statements
 * for any number of rows. With `request.events !== false`, writes a `contact.created` event
 * per created contact to the outbox (one look-up when the organization has no subscribed
 * endpoint; otherwise the created contacts are read back in row order, with their
 * groups, by one statement). Returns `GroupsNotFound` or `LimitExceeded` before
 * writing anything; throws the driver's error.
 *
 * The plan limit: the organization's `contact_counts` row is created when missing and
 * locked (`INSERT … ON CONFLICT DO UPDATE … RETURNING count`), the new contacts are checked
 * against it, and the insert that follows in the same transaction moves it (the schema's
 * triggers); no other writer of the organization's contacts can commit in between.
 */
export const importRows = async (
  sql: Sql,
  schema: string,
  organizationId: OrganizationId,
  request: ContactImportRequest
): Promise<ContactImportOutcome> => {
  const { contactsLimit, now, rows } = request
  const existing = await existingPhones(sql, schema, organizationId, rows)
  const groups = await resolveGroups(sql, schema, organizationId, rows)
  if (groups.missing.length > 0) return { _tag: "GroupsNotFound", uuids: groups.missing }
  const requested = new Set(rows.map((row) => row.phone).filter((phone) => !existing.has(phone))).size
  if (contactsLimit !== null && requested > 0) {
    const usage = (await sql.row<{ count: number }>(lockCounter(schema), [organizationId]))!.count
    if (usage + requested > contactsLimit) {
      return { _tag: "LimitExceeded", limit: contactsLimit, usage, requested }
    }
  }
  const ids = freshIds(request.ids)
  const plan = planContacts(rows, existing, ids)
  await insertContacts(sql, schema, organizationId, plan.inserts, now)
  if (plan.updates.size > 0) {
    await sql.run(updateContacts(schema), [organizationId, JSON.stringify(Object.fromEntries(plan.updates)), now])
  }
  const toCreate = groups.toCreate.map(({ key, name }) => ({ uuid: ids(), key, name }))
  if (toCreate.length > 0) {
    await sql.run(
      `INSERT INTO ${schema}.contact_groups (uuid, organization_id, name, name_key, created_at, updated_at)
        SELECT uuid, $1, name, name_key, $5, $5 FROM unnest($2::text[], $3::text[], $4::text[]) AS t (uuid, name, name_key)`,
      [organizationId, toCreate.map((g) => g.uuid), toCreate.map((g) => g.name), toCreate.map((g) => g.key), now]
    )
    for (const { key, uuid } of toCreate) groups.byKey.set(key, uuid)
  }
  const members: Array<readonly [string, string]> = []
  rows.forEach((row, i) => {
    for (const group of row.groups) {
      const groupUuid = group._tag === "ById" ? group.uuid : groups.byKey.get(nameKey(group.name))!
      members.push([groupUuid, plan.result.contacts[i]!.uuid])
    }
  })
  if (members.length > 0) {
    await sql.run(
      `INSERT INTO ${schema}.group_members (group_uuid, contact_uuid, added_at)
        SELECT group_uuid, contact_uuid, $3 FROM unnest($1::text[], $2::text[]) AS t (group_uuid, contact_uuid)
        ON CONFLICT DO NOTHING`,
      [members.map(([group]) => group), members.map(([, contact]) => contact), now]
    )
  }
  if (request.events !== false && plan.inserts.length > 0) {
    await recordWebhookEvents(sql, schema, organizationId, "contact.created", now, () =>
      contactsByUuid(sql, schema, organizationId, plan.inserts.map((contact) => contact.uuid))
    )
  }
  return { _tag: "Imported", result: plan.result }
}

/**
 * Locks the organization's counter row (created at 0 when missing) and answers its
 * `count`: one statement.
 */
const lockCounter = (schema: string) => `INSERT INTO ${schema}.contact_counts AS counts (organization_id, count)
  VALUES ($1, 0) ON CONFLICT (organization_id) DO UPDATE SET count = counts.count RETURNING count`

/**
 * Sets, on each contact of the JSON object `$2` (uuid → details patch), the details the
 * patch holds (a key present with `null` clears, a key absent keeps), and `updated_at`.
 */
const updateContacts = (schema: string) => `UPDATE ${schema}.contacts AS c SET
    ${CONTACT_DETAIL_FIELDS.map((f) => `${f} = CASE WHEN p.patch ? '${f}' THEN p.patch ->> '${f}' ELSE c.${f} END`).join(",\n    ")},
    updated_at = $3
  FROM jsonb_each($2::jsonb) AS p (uuid, patch)
  WHERE c.organization_id = $1 AND c.uuid = p.uuid`

/** A contact to insert: its uuid, phone, validity and details (later rows of its phone folded in). */
interface NewContact {
  readonly uuid: ContactId
  readonly phone: string
  readonly phone_valid: boolean
  details: Partial<ContactDetails>
}

/**
 * What the rows do, in row order: a phone not stored yet creates a contact (taking the next
 * fresh id); a stored phone, or one created by an earlier row, updates it. The details of
 * several rows of one contact are folded into one insert or one patch (later present
 * fields win), as applying the rows one by one would leave them.
 */
const planContacts = (
  rows: ReadonlyArray<ContactImportRow>,
  existing: Map<string, ContactId>,
  ids: () => string
): {
  readonly inserts: Array<NewContact>
  readonly updates: Map<ContactId, Partial<ContactDetails>>
  readonly result: ContactImportResult
} => {
  const inserts: Array<NewContact> = []
  const created = new Map<string, NewContact>()
  const updates = new Map<ContactId, Partial<ContactDetails>>()
  const contacts: Array<ContactImportResult["contacts"][number]> = []
  for (const row of rows) {
    const known = existing.get(row.phone)
    const fresh = created.get(row.phone)
    if (fresh !== undefined) {
      fresh.details = fold(fresh.details, row.details)
      contacts.push({ uuid: fresh.uuid, phone: row.phone, status: "updated" })
    } else if (known !== undefined) {
      updates.set(known, fold(updates.get(known) ?? {}, row.details))
      contacts.push({ uuid: known, phone: row.phone, status: "updated" })
    } else {
      const contact: NewContact = {
        uuid: ids() as ContactId,
        phone: row.phone,
        phone_valid: row.phone_valid !== false,
        details: fold({}, row.details)
      }
      inserts.push(contact)
      created.set(row.phone, contact)
      contacts.push({ uuid: contact.uuid, phone: row.phone, status: "created" })
    }
  }
  return { inserts, updates, result: { created: inserts.length, updated: contacts.length - inserts.length, contacts } }
}

/** `details` with the fields `patch` holds (a present `null` included) written over it. */
const fold = (details: Partial<ContactDetails>, patch: Partial<ContactDetails>): Partial<ContactDetails> => {
  const folded: Partial<Record<keyof ContactDetails, string | null>> = { ...details }
  for (const field of CONTACT_DETAIL_FIELDS) {
    const value = patch[field]
    if (value !== undefined) folded[field] = value
  }
  return folded
}

/** Inserts the new contacts: one statement over one array per column. */
const insertContacts = async (
  sql: Sql,
  schema: string,
  organizationId: OrganizationId,
  contacts: ReadonlyArray<NewContact>,
  now: string
): Promise<void> => {
  if (contacts.length === 0) return
  const columns = ["uuid", "phone", "phone_valid", ...CONTACT_DETAIL_FIELDS]
  const arrays = [
    contacts.map((contact) => contact.uuid),
    contacts.map((contact) => contact.phone),
    contacts.map((contact) => contact.phone_valid),
    ...CONTACT_DETAIL_FIELDS.map((field) => contacts.map((contact) => contact.details[field] ?? null))
  ]
  const unnested = columns.map((column, i) => `$${i + 3}::${column === "phone_valid" ? "boolean" : "text"}[]`)
  await sql.run(
    `INSERT INTO ${schema}.contacts (organization_id, created_at, updated_at, ${columns.join(", ")})
      SELECT $1, $2, $2, ${columns.join(", ")} FROM unnest(${unnested.join(", ")}) AS t (${columns.join(", ")})`,
    [organizationId, now, ...arrays]
  )
}

/** Phone → uuid of the organization's contacts among the rows' phones: one query. */
const existingPhones = async (
  sql: Sql,
  schema: string,
  organizationId: OrganizationId,
  rows: ReadonlyArray<ContactImportRow>
): Promise<Map<string, ContactId>> => {
  if (rows.length === 0) return new Map()
  const found = await sql.rows<{ uuid: ContactId; phone: string }>(
    `SELECT uuid, phone FROM ${schema}.contacts WHERE organization_id = $1 AND phone = ANY($2::text[])`,
    [organizationId, [...new Set(rows.map((row) => row.phone))]]
  )
  return new Map(found.map((row) => [row.phone, row.uuid]))
}

const resolveGroups = async (
  sql: Sql,
  schema: string,
  organizationId: OrganizationId,
  rows: ReadonlyArray<ContactImportRow>
): Promise<ResolvedGroups> => {
  const named = groupsNamedBy(rows)
  const { ids, names } = named
  const known = new Set(
    ids.size === 0
      ? []
      : (
          await sql.rows<{ uuid: string }>(
            `SELECT uuid FROM ${schema}.contact_groups WHERE organization_id = $1 AND uuid = ANY($2::text[])`,
            [organizationId, [...ids]]
          )
        ).map((row) => row.uuid)
  )
  const byKey = new Map(
    names.size === 0
      ? []
      : (
          await sql.rows<{ uuid: string; name_key: string }>(
            `SELECT uuid, name_key FROM ${schema}.contact_groups WHERE organization_id = $1 AND name_key = ANY($2::text[])`,
            [organizationId, [...names.keys()]]
          )
        ).map((row) => [row.name_key, row.uuid] as const)
  )
  return resolvedGroups(named, known, byKey)
}

import {
  CONTACT_DETAIL_FIELDS,
  type Contact,
  type ContactDetails,
  type ContactId,
  type Group,
  type GroupId,
  type GroupSummary,
  type Label,
  type LabelId,
  type LabelSummary
} from "@switchboard/core"
import type { Sql } from "../internal/sql.js"

// Rows of the records area (contacts, contact_groups, labels and their links, see
// src/schema/records.ts), the SQL shared by several repositories, and the decoding of rows
// into core's records. Every statement names its schema (`schema`: the quoted name,
// `db.schema`). The casts to branded ids are safe: every id was written from a branded value.

/** A row of `contacts` (every column but `organization_id`). */
export interface ContactRow extends ContactDetails {
  readonly uuid: string
  readonly phone: string
  readonly phone_valid: boolean
  /** When the contact's number refused marketing messages, ISO 8601; `null` when it has not. */
  readonly marketing_opt_out_at: string | null
  readonly created_at: string
  readonly updated_at: string
}

/** A row of `contact_groups` with the number of its members. */
export interface GroupRow {
  readonly uuid: string
  readonly name: string
  readonly contacts_count: number
  readonly created_at: string
  readonly updated_at: string
}

/** A row of `labels` with the number of contacts carrying it. */
export interface LabelRow extends GroupRow {
  readonly color: string
}

/** The columns of a {@link ContactRow}, in `SELECT` order. */
export const CONTACT_COLUMNS = [
  "uuid",
  "phone",
  "phone_valid",
  ...CONTACT_DETAIL_FIELDS,
  "marketing_opt_out_at",
  "created_at",
  "updated_at"
].join(", ")

/** {@link CONTACT_COLUMNS} of the table aliased `alias` (`c.uuid, c.phone, …`). */
export const contactColumnsOf = (alias: string): string =>
  CONTACT_COLUMNS.split(", ").map((column) => `${alias}.${column}`).join(", ")

/** `SELECT` of {@link GroupRow}s from `contact_groups AS g`; append `WHERE …`. */
export const groupSelect = (schema: string): string => `SELECT g.uuid, g.name, g.created_at, g.updated_at,
    (SELECT COUNT(*) FROM ${schema}.group_members AS m WHERE m.group_uuid = g.uuid) AS contacts_count
  FROM ${schema}.contact_groups AS g`

/** `SELECT` of {@link LabelRow}s from `labels AS l`; append `WHERE …`. */
export const labelSelect = (schema: string): string => `SELECT l.uuid, l.name, l.color, l.created_at, l.updated_at,
    (SELECT COUNT(*) FROM ${schema}.contact_labels AS cl WHERE cl.label_uuid = l.uuid) AS contacts_count
  FROM ${schema}.labels AS l`

/**
 * The sort of every list (docs/http-api.md "Pagination") and the page bounds, bound as
 * `$limit` and `$limit + 1` (pass `pageBounds(page)` there).
 */
export const newestFirst = (limit: number): string =>
  `ORDER BY created_at DESC, uuid DESC LIMIT $${limit} OFFSET $${limit + 1}`

/**
 * The number of contacts of the organization (`$1`), as `count`: read from
 * `contact_counts` (kept by triggers), never by counting rows.
 */
export const contactsCount = (schema: string): string =>
  `SELECT COALESCE((SELECT count FROM ${schema}.contact_counts WHERE organization_id = $1), 0) AS count`

/**
 * `SELECT` of contact rows with their groups and labels from `contacts AS c` (append
 * `WHERE …`): each list a JSON array sorted by name (byte order) then uuid, `[]` when
 * none. One statement, so the contact and its links are read from one snapshot; decode
 * with {@link decodeContactWithRelations}.
 */
export const contactSelect = (schema: string): string => `SELECT ${contactColumnsOf("c")},
    COALESCE((SELECT json_agg(json_build_object('uuid', g.uuid, 'name', g.name) ORDER BY g.name, g.uuid)
      FROM ${schema}.group_members AS m JOIN ${schema}.contact_groups AS g ON g.uuid = m.group_uuid
      WHERE m.contact_uuid = c.uuid), '[]') AS groups,
    COALESCE((SELECT json_agg(json_build_object('uuid', l.uuid, 'name', l.name, 'color', l.color) ORDER BY l.name, l.uuid)
      FROM ${schema}.contact_labels AS cl JOIN ${schema}.labels AS l ON l.uuid = cl.label_uuid
      WHERE cl.contact_uuid = c.uuid), '[]') AS labels
  FROM ${schema}.contacts AS c`

/** A row of {@link contactSelect}. */
export interface ContactWithRelationsRow extends ContactRow {
  readonly groups: ReadonlyArray<GroupSummary>
  readonly labels: ReadonlyArray<LabelSummary>
}

/** A contact record from a row of {@link contactSelect}. */
export const decodeContactWithRelations = (row: ContactWithRelationsRow): Contact =>
  decodeContact(row, row.groups, row.labels)

/**
 * The organization's contacts with these uuids, with their groups and labels, in the
 * order of `uuids` (uuids of no contact of the organization are left out): one statement.
 */
export const contactsByUuid = async (
  sql: Sql,
  schema: string,
  organizationId: string,
  uuids: ReadonlyArray<string>
): Promise<Array<Contact>> => {
  if (uuids.length === 0) return []
  const rows = await sql.rows<ContactWithRelationsRow>(
    `${contactSelect(schema)}
      JOIN unnest($2::text[]) WITH ORDINALITY AS wanted (uuid, position) ON wanted.uuid = c.uuid
      WHERE c.organization_id = $1
      ORDER BY wanted.position`,
    [organizationId, uuids]
  )
  return rows.map(decodeContactWithRelations)
}

/** The `count` of a statement selecting one row with a `count` column (0 when none). */
export const countOf = async (sql: Sql, text: string, values: ReadonlyArray<unknown>): Promise<number> =>
  (await sql.row<{ count: number }>(text, values))?.count ?? 0

/**
 * The groups and labels of these contacts, each list sorted by name (byte order), keyed by
 * contact uuid (contacts with none are absent): two queries for all the contacts together,
 * never one per contact. Shared by contact and chat records.
 */
export const groupsAndLabelsOf = async (
  sql: Sql,
  schema: string,
  contactUuids: ReadonlyArray<string>
): Promise<{ readonly groups: Map<string, Array<GroupSummary>>; readonly labels: Map<string, Array<LabelSummary>> }> => {
  const uuids = [...new Set(contactUuids)]
  const groupRows = await sql.rows<{ contact_uuid: string; uuid: string; name: string }>(
    `SELECT m.contact_uuid, g.uuid, g.name
      FROM ${schema}.group_members AS m JOIN ${schema}.contact_groups AS g ON g.uuid = m.group_uuid
      WHERE m.contact_uuid = ANY($1::text[])
      ORDER BY g.name, g.uuid`,
    [uuids]
  )
  const labelRows = await sql.rows<{ contact_uuid: string; uuid: string; name: string; color: string }>(
    `SELECT cl.contact_uuid, l.uuid, l.name, l.color
      FROM ${schema}.contact_labels AS cl JOIN ${schema}.labels AS l ON l.uuid = cl.label_uuid
      WHERE cl.contact_uuid = ANY($1::text[])
      ORDER BY l.name, l.uuid`,
    [uuids]
  )
  return {
    groups: groupBy(groupRows, (row): GroupSummary => ({ uuid: row.uuid as GroupId, name: row.name })),
    labels: groupBy(labelRows, (row): LabelSummary => ({ uuid: row.uuid as LabelId, name: row.name, color: row.color }))
  }
}

/**
 * Turns contact rows into {@link Contact} records with their groups and labels
 * ({@link groupsAndLabelsOf}), keeping the rows' order.
 */
export const withRelations = async (
  sql: Sql,
  schema: string,
  rows: ReadonlyArray<ContactRow>
): Promise<Array<Contact>> => {
  if (rows.length === 0) return []
  const { groups, labels } = await groupsAndLabelsOf(sql, schema, rows.map((row) => row.uuid))
  return rows.map((row) => decodeContact(row, groups.get(row.uuid) ?? [], labels.get(row.uuid) ?? []))
}

/** A contact record from its row and its (sorted) groups and labels. */
export const decodeContact = (
  row: ContactRow,
  groups: ReadonlyArray<GroupSummary>,
  labels: ReadonlyArray<LabelSummary>
): Contact => ({
  uuid: row.uuid as ContactId,
  phone: row.phone,
  phone_valid: row.phone_valid,
  first_name: row.first_name,
  last_name: row.last_name,
  email: row.email,
  street: row.street,
  city: row.city,
  state: row.state,
  zip: row.zip,
  country: row.country,
  groups,
  labels,
  marketing_opt_out_at: row.marketing_opt_out_at,
  created_at: row.created_at,
  updated_at: row.updated_at
})

/** A group record from its row. */
export const decodeGroup = (row: GroupRow): Group => ({
  uuid: row.uuid as GroupId,
  name: row.name,
  contacts_count: row.contacts_count,
  created_at: row.created_at,
  updated_at: row.updated_at
})

/** A label record from its row. */
export const decodeLabel = (row: LabelRow): Label => ({
  uuid: row.uuid as LabelId,
  name: row.name,
  color: row.color,
  contacts_count: row.contacts_count,
  created_at: row.created_at,
  updated_at: row.updated_at
})

/** Groups link rows by `contact_uuid`, keeping their order. */
const groupBy = <Row extends { contact_uuid: string }, A>(
  rows: ReadonlyArray<Row>,
  decode: (row: Row) => A
): Map<string, Array<A>> => {
  const byContact = new Map<string, Array<A>>()
  for (const row of rows) {
    const list = byContact.get(row.contact_uuid)
    if (list === undefined) byContact.set(row.contact_uuid, [decode(row)])
    else list.push(decode(row))
  }
  return byContact
}

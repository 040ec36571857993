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
  type LabelSummary,
  type PageRequest
} from "@switchboard/core"
import type { Statements } from "../internal/sql.js"

// Rows of migration 2 (contacts, contact_groups, labels and their links), the SQL shared by
// several repositories, and the decoding of rows into core's records. The casts to branded
// ids are safe: every id was written from a branded value.

/** A row of `contacts` (every column but `organization_id`). */
export interface ContactRow extends ContactDetails {
  readonly uuid: string
  readonly phone: string
  /** `1` or `0` (migration 13). */
  readonly phone_valid: number
  /** When the contact's number refused marketing messages, ISO 8601; `null` when it has not (migration 18). */
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

/** `SELECT` of {@link GroupRow}s from `contact_groups AS g`; append `WHERE …`. */
export const GROUP_SELECT = `SELECT g.uuid, g.name, g.created_at, g.updated_at,
    (SELECT COUNT(*) FROM group_members AS m WHERE m.group_uuid = g.uuid) AS contacts_count
  FROM contact_groups AS g`

/** `SELECT` of {@link LabelRow}s from `labels AS l`; append `WHERE …`. */
export const LABEL_SELECT = `SELECT l.uuid, l.name, l.color, l.created_at, l.updated_at,
    (SELECT COUNT(*) FROM contact_labels AS cl WHERE cl.label_uuid = l.uuid) AS contacts_count
  FROM labels AS l`

/** The sort of every list (docs/http-api.md "Pagination") and the page bounds: `LIMIT ? OFFSET ?`. */
export const NEWEST_FIRST = "ORDER BY created_at DESC, uuid DESC LIMIT ? OFFSET ?"

/** The `LIMIT` and `OFFSET` parameters of a page request. */
export const pageBounds = (page: PageRequest): [number, number] => [page.per_page, (page.page - 1) * page.per_page]

/** A JSON array parameter, read in SQL with `json_each(?)`: one query for many values. */
export const jsonArray = (values: ReadonlyArray<string>): string => JSON.stringify(values)

/**
 * The number of contacts of the organization (`?`), as `count`: read from `contact_counts`
 * (migration 6, kept by triggers), never by counting rows.
 */
export const CONTACTS_COUNT =
  "SELECT COALESCE((SELECT count FROM contact_counts WHERE organization_id = ?), 0) AS count"

/** The `COUNT(*)` of a statement selecting `COUNT(*) AS count`. */
export const countOf = (statements: Statements, sql: string, ...params: Array<unknown>): number =>
  statements.prepare<{ count: number }>(sql).get(...params)?.count ?? 0

const SQL = {
  groupsOf: `SELECT m.contact_uuid, g.uuid, g.name
    FROM group_members AS m JOIN contact_groups AS g ON g.uuid = m.group_uuid
    WHERE m.contact_uuid IN (SELECT value FROM json_each(?))
    ORDER BY g.name, g.uuid`,
  labelsOf: `SELECT cl.contact_uuid, l.uuid, l.name, l.color
    FROM contact_labels AS cl JOIN labels AS l ON l.uuid = cl.label_uuid
    WHERE cl.contact_uuid IN (SELECT value FROM json_each(?))
    ORDER BY l.name, l.uuid`
} as const

/**
 * The groups and labels of these contacts, each list sorted by name, keyed by contact uuid
 * (contacts with none are absent): two queries for all the contacts together, never one
 * per contact. Shared by contact and chat records.
 */
export const groupsAndLabelsOf = (
  statements: Statements,
  contactUuids: ReadonlyArray<string>
): { readonly groups: Map<string, Array<GroupSummary>>; readonly labels: Map<string, Array<LabelSummary>> } => {
  const uuids = jsonArray(contactUuids)
  return {
    groups: groupBy(
      statements.prepare<{ contact_uuid: string; uuid: string; name: string }>(SQL.groupsOf).all(uuids),
      (row): GroupSummary => ({ uuid: row.uuid as GroupId, name: row.name })
    ),
    labels: groupBy(
      statements.prepare<{ contact_uuid: string; uuid: string; name: string; color: string }>(SQL.labelsOf).all(
        uuids
      ),
      (row): LabelSummary => ({ uuid: row.uuid as LabelId, name: row.name, color: row.color })
    )
  }
}

/**
 * Turns contact rows into {@link Contact} records with their groups and labels
 * ({@link groupsAndLabelsOf}).
 */
export const withRelations = (statements: Statements, rows: ReadonlyArray<ContactRow>): Array<Contact> => {
  if (rows.length === 0) return []
  const { groups, labels } = groupsAndLabelsOf(statements, rows.map((row) => row.uuid))
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
  phone_valid: row.phone_valid !== 0,
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

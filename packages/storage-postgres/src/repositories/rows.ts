import type { Contact, GroupSummary, LabelSummary } from "@switchboard/core"
import {
  columnsOf,
  CONTACT_COLUMNS,
  contactStatementsOf,
  type ContactRow,
  type GroupLinkRow,
  type LabelLinkRow,
  linksByContact
} from "@switchboard/storage-sql"
import { decoders, postgresDialect } from "../dialect.js"
import { perSchema, type Sql } from "../internal/sql.js"

// The SQL of the records area (contacts, contact_groups, labels and their links, see
// src/schema/records.ts) shared by several repositories, on PostgreSQL; their rows,
// decoders and shared statements are @switchboard/storage-sql's (dialect.ts). Every
// statement names its schema (`schema`: the quoted name, `db.schema`).

export { CONTACT_COLUMNS, type ContactRow, type GroupRow, type LabelRow } from "@switchboard/storage-sql"

/** A contact record from its row and its (sorted) groups and labels. */
export const decodeContact = decoders.contact

/** A group record from its row. */
export const decodeGroup = decoders.group

/** A label record from its row. */
export const decodeLabel = decoders.label

/** {@link CONTACT_COLUMNS} of the table aliased `alias` (`c.uuid, c.phone, …`). */
export const contactColumnsOf = (alias: string): string => columnsOf(CONTACT_COLUMNS, alias)

/** `SELECT` of {@link GroupRow}s from `contact_groups AS g`; append `WHERE …`. */
export const groupSelect = (schema: string): string => statementsOf(schema).groupSelect

/** `SELECT` of {@link LabelRow}s from `labels AS l`; append `WHERE …`. */
export const labelSelect = (schema: string): string => statementsOf(schema).labelSelect

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
  const SQL = statementsOf(schema)
  return linksByContact(await sql.rows<GroupLinkRow>(SQL.groupsOf, [uuids]), await sql.rows<LabelLinkRow>(SQL.labelsOf, [uuids]))
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

/** The shared statements of `schema` (quoted), built once per schema. */
const statementsOf = perSchema((schema) => contactStatementsOf(postgresDialect(schema)))

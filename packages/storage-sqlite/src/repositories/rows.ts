import type { Contact, GroupSummary, LabelSummary } from "@switchboard/core"
import { contactStatementsOf, type ContactRow, type GroupLinkRow, type LabelLinkRow, linksByContact } from "@switchboard/storage-sql"
import { decoders, sqliteDialect } from "../dialect.js"
import type { Statements } from "../internal/sql.js"

// The SQL of contacts, groups and labels shared by several repositories, on SQLite; their
// rows, decoders and shared statements are @switchboard/storage-sql's (dialect.ts).

export { CONTACT_COLUMNS, type ContactRow, type GroupRow, type LabelRow, pageBounds } from "@switchboard/storage-sql"

/** A contact record from its row and its (sorted) groups and labels. */
export const decodeContact = decoders.contact

/** A group record from its row. */
export const decodeGroup = decoders.group

/** A label record from its row. */
export const decodeLabel = decoders.label

const SQL = contactStatementsOf(sqliteDialect)

/** `SELECT` of {@link GroupRow}s from `contact_groups AS g`; append `WHERE …`. */
export const GROUP_SELECT = SQL.groupSelect

/** `SELECT` of {@link LabelRow}s from `labels AS l`; append `WHERE …`. */
export const LABEL_SELECT = SQL.labelSelect

/** The sort of every list (docs/http-api.md "Pagination") and the page bounds: `LIMIT ? OFFSET ?`. */
export const NEWEST_FIRST = "ORDER BY created_at DESC, uuid DESC LIMIT ? OFFSET ?"

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
  return linksByContact(
    statements.prepare<GroupLinkRow>(SQL.groupsOf).all(uuids),
    statements.prepare<LabelLinkRow>(SQL.labelsOf).all(uuids)
  )
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

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
import { compilerOf } from "../compile.js"
import type { SqlDialect, SqlValues } from "../SqlDialect.js"
import type { SqlBoolean } from "./values.js"

// Rows of contacts, contact_groups, labels and their links, and their decoding into core's
// records. The casts to branded ids are safe: every id was written from a branded value.

/**
 * A row of `contacts` (every column but `organization_id`).
 *
 * @category rows
 */
export interface ContactRow extends ContactDetails {
  readonly uuid: string
  readonly phone: string
  readonly phone_valid: SqlBoolean
  /** When the contact's number refused marketing messages, ISO 8601; `null` when it has not. */
  readonly marketing_opt_out_at: string | null
  readonly created_at: string
  readonly updated_at: string
}

/**
 * A row of `contact_groups` with the number of its members.
 *
 * @category rows
 */
export interface GroupRow {
  readonly uuid: string
  readonly name: string
  readonly contacts_count: number
  readonly created_at: string
  readonly updated_at: string
}

/**
 * A row of `labels` with the number of contacts carrying it.
 *
 * @category rows
 */
export interface LabelRow extends GroupRow {
  readonly color: string
}

/**
 * A group of a contact as the link query reads it.
 *
 * @category rows
 */
export interface GroupLinkRow {
  readonly contact_uuid: string
  readonly uuid: string
  readonly name: string
}

/**
 * A label of a contact as the link query reads it.
 *
 * @category rows
 */
export interface LabelLinkRow extends GroupLinkRow {
  readonly color: string
}

/**
 * The columns of a {@link ContactRow}, in `SELECT` order.
 *
 * @category statements
 */
export const CONTACT_COLUMNS = [
  "uuid",
  "phone",
  "phone_valid",
  ...CONTACT_DETAIL_FIELDS,
  "marketing_opt_out_at",
  "created_at",
  "updated_at"
].join(", ")

/**
 * The decoders of contacts, groups and labels for one dialect's values.
 *
 * @category decoders
 */
export interface ContactDecoders {
  /** A contact record from its row and its (sorted) groups and labels. */
  readonly contact: (row: ContactRow, groups: ReadonlyArray<GroupSummary>, labels: ReadonlyArray<LabelSummary>) => Contact
  readonly group: (row: GroupRow) => Group
  readonly label: (row: LabelRow) => Label
}

/**
 * The {@link ContactDecoders} of `values`.
 *
 * @category decoders
 */
export const contactDecodersOf = ({ readBoolean }: SqlValues): ContactDecoders => ({
  contact: (row, groups, labels) => ({
    uuid: row.uuid as ContactId,
    phone: row.phone,
    phone_valid: readBoolean(row.phone_valid),
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
  }),
  group: (row) => ({
    uuid: row.uuid as GroupId,
    name: row.name,
    contacts_count: row.contacts_count,
    created_at: row.created_at,
    updated_at: row.updated_at
  }),
  label: (row) => ({
    uuid: row.uuid as LabelId,
    name: row.name,
    color: row.color,
    contacts_count: row.contacts_count,
    created_at: row.created_at,
    updated_at: row.updated_at
  })
})

/**
 * The groups and labels of the link rows, each list in the rows' order, keyed by contact
 * uuid (contacts with none are absent).
 *
 * @category decoders
 */
export const linksByContact = (
  groupRows: ReadonlyArray<GroupLinkRow>,
  labelRows: ReadonlyArray<LabelLinkRow>
): { readonly groups: Map<string, Array<GroupSummary>>; readonly labels: Map<string, Array<LabelSummary>> } => ({
  groups: groupBy(groupRows, (row): GroupSummary => ({ uuid: row.uuid as GroupId, name: row.name })),
  labels: groupBy(labelRows, (row): LabelSummary => ({ uuid: row.uuid as LabelId, name: row.name, color: row.color }))
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

/**
 * The statements of contacts, groups and labels that several repositories share, written
 * once for `dialect`: `groupSelect` and `labelSelect` select {@link GroupRow}s from
 * `contact_groups AS g` and {@link LabelRow}s from `labels AS l` (append `WHERE …`; no
 * parameter); `groupsOf` and `labelsOf` read the {@link GroupLinkRow}s and
 * {@link LabelLinkRow}s of a list of contact uuids (`dialect.list`), each sorted by name
 * then uuid, as {@link linksByContact} takes them.
 *
 * @category statements
 */
export const contactStatementsOf = (dialect: SqlDialect) => {
  const compile = compilerOf(dialect)
  const table = dialect.table
  return {
    groupSelect: `SELECT g.uuid, g.name, g.created_at, g.updated_at,
    (SELECT COUNT(*) FROM ${table("group_members")} AS m WHERE m.group_uuid = g.uuid) AS contacts_count
  FROM ${table("contact_groups")} AS g`,
    labelSelect: `SELECT l.uuid, l.name, l.color, l.created_at, l.updated_at,
    (SELECT COUNT(*) FROM ${table("contact_labels")} AS cl WHERE cl.label_uuid = l.uuid) AS contacts_count
  FROM ${table("labels")} AS l`,
    groupsOf: compile(`SELECT m.contact_uuid, g.uuid, g.name
    FROM ${table("group_members")} AS m JOIN ${table("contact_groups")} AS g ON g.uuid = m.group_uuid
    WHERE ${dialect.inList("m.contact_uuid")}
    ORDER BY g.name, g.uuid`),
    labelsOf: compile(`SELECT cl.contact_uuid, l.uuid, l.name, l.color
    FROM ${table("contact_labels")} AS cl JOIN ${table("labels")} AS l ON l.uuid = cl.label_uuid
    WHERE ${dialect.inList("cl.contact_uuid")}
    ORDER BY l.name, l.uuid`)
  } as const
}

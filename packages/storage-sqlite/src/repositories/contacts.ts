import { Option } from "effect"
import type { Contact, ContactRepository, ContactUpdateOutcome, OrganizationId } from "@switchboard/core"
import { attempt, type RepositoryFactory, snapshot, type Statements, transaction } from "../internal/sql.js"
import { markContactMediaDeleted } from "./media.js"
import { importRows, updateContactRow } from "./recordsImport.js"
import {
  CONTACT_COLUMNS,
  type ContactRow,
  CONTACTS_COUNT,
  countOf,
  decodeLabel,
  LABEL_SELECT,
  type LabelRow,
  NEWEST_FIRST,
  pageBounds,
  withRelations
} from "./rows.js"

/**
 * `Storage.contacts` on SQLite: table `contacts` with `group_members` and `contact_labels`
 * (migration 2; `marketing_opt_out_at`, migration 18). `importBulk` and `update` are each
 * one `BEGIN IMMEDIATE` transaction, so the plan-limit and phone checks and the writes are
 * atomic across processes; so is `delete`, which marks the contact's media `deleted`
 * (`media.ts`); `markMarketingOptOut` is one conditional `UPDATE`; reads of
 * several statements share one snapshot. A list or read costs a fixed number of queries
 * (the rows, the total, their groups, their labels), never one per contact.
 *
 * @category repositories
 */
export const contactRepository: RepositoryFactory<ContactRepository> = (db, statements) => ({
  importBulk: (organizationId, request) =>
    attempt("contacts.importBulk", () => transaction(db, () => importRows(statements, organizationId, request))),
  list: (organizationId, page) =>
    attempt("contacts.list", () =>
      snapshot(db, () => {
        const rows = statements.prepare<ContactRow>(SQL.page).all(organizationId, ...pageBounds(page))
        return { items: withRelations(statements, rows), total: countOf(statements, SQL.count, organizationId) }
      })
    ),
  findById: (organizationId, id) =>
    attempt("contacts.findById", () => snapshot(db, () => Option.fromNullable(find(statements, organizationId, id)))),
  findByPhone: (organizationId, phone) =>
    attempt("contacts.findByPhone", () =>
      snapshot(db, () => {
        const row = statements.prepare<ContactRow>(SQL.findByPhone).get(organizationId, phone)
        return Option.fromNullable(row === undefined ? undefined : withRelations(statements, [row])[0])
      })
    ),
  update: (organizationId, id, patch, now) =>
    attempt("contacts.update", () =>
      transaction(db, (): ContactUpdateOutcome => {
        const current = statements.prepare<ContactRow>(SQL.findById).get(organizationId, id)
        if (current === undefined) return { _tag: "NotFound" }
        if (patch.phone !== undefined && patch.phone !== current.phone) {
          if (statements.prepare(SQL.phoneOwner).get(organizationId, patch.phone) !== undefined) {
            return { _tag: "PhoneTaken" }
          }
        }
        updateContactRow(statements, id, patch.phone, patch.details, now, patch.marketing_opt_out_at === null)
        return { _tag: "Updated", contact: find(statements, organizationId, id)! }
      })
    ),
  markMarketingOptOut: (organizationId, id, at) =>
    attempt("contacts.markMarketingOptOut", () => statements.prepare(SQL.markMarketingOptOut).run(at, organizationId, id).changes > 0),
  delete: (organizationId, id) =>
    attempt("contacts.delete", () =>
      transaction(db, () => {
        if (statements.prepare(SQL.delete).run(organizationId, id).changes === 0) return false
        markContactMediaDeleted(statements, organizationId, id)
        return true
      })
    ),
  labelsOf: (organizationId, id) =>
    attempt("contacts.labelsOf", () =>
      snapshot(db, () =>
        statements.prepare(SQL.exists).get(organizationId, id) === undefined
          ? Option.none()
          : Option.some(statements.prepare<LabelRow>(SQL.labelsOf).all(id, organizationId).map(decodeLabel))
      )
    )
})

const SQL = {
  page: `SELECT ${CONTACT_COLUMNS} FROM contacts WHERE organization_id = ? ${NEWEST_FIRST}`,
  count: CONTACTS_COUNT,
  findById: `SELECT ${CONTACT_COLUMNS} FROM contacts WHERE organization_id = ? AND uuid = ?`,
  findByPhone: `SELECT ${CONTACT_COLUMNS} FROM contacts WHERE organization_id = ? AND phone = ?`,
  exists: "SELECT 1 AS found FROM contacts WHERE organization_id = ? AND uuid = ?",
  phoneOwner: "SELECT uuid FROM contacts WHERE organization_id = ? AND phone = ?",
  // One statement, so atomic: the first opt-out is kept; updated_at is not moved.
  markMarketingOptOut: `UPDATE contacts SET marketing_opt_out_at = ?
    WHERE organization_id = ? AND uuid = ? AND marketing_opt_out_at IS NULL`,
  // group_members and contact_labels rows go with it (ON DELETE CASCADE, foreign_keys = ON).
  delete: "DELETE FROM contacts WHERE organization_id = ? AND uuid = ?",
  labelsOf: `${LABEL_SELECT} JOIN contact_labels AS mine ON mine.label_uuid = l.uuid
    WHERE mine.contact_uuid = ? AND l.organization_id = ?
    ORDER BY l.name, l.uuid`
} as const

/** The contact with its groups and labels, or `undefined`. */
const find = (statements: Statements, organizationId: OrganizationId, id: string): Contact | undefined => {
  const row = statements.prepare<ContactRow>(SQL.findById).get(organizationId, id)
  return row === undefined ? undefined : withRelations(statements, [row])[0]
}

import { Option } from "effect"
import {
  type ContactId,
  type LabelAssignOutcome,
  type LabelCreateOutcome,
  type LabelRepository,
  nameKey
} from "@switchboard/core"
import { attempt, type RepositoryFactory, snapshot, transaction } from "../internal/sql.js"
import { countOf, decodeLabel, jsonArray, LABEL_SELECT, type LabelRow, NEWEST_FIRST, pageBounds } from "./rows.js"

/**
 * `Storage.labels` on SQLite: tables `labels` and `contact_labels` (migration 2), names
 * unique per organization by `name_key` (a UNIQUE index). `create` (with the
 * `label_limit` check) and `assign` (with its existence checks) are each one
 * `BEGIN IMMEDIATE` transaction; `deleteMany` is one statement whose assignments cascade.
 *
 * @category repositories
 */
export const labelRepository: RepositoryFactory<LabelRepository> = (db, statements) => ({
  create: (organizationId, label, labelLimit) =>
    attempt("labels.create", () =>
      transaction(db, (): LabelCreateOutcome => {
        if (labelLimit !== null) {
          const usage = countOf(statements, SQL.count, organizationId)
          if (usage >= labelLimit) return { _tag: "LimitExceeded", limit: labelLimit, usage }
        }
        const { changes } = statements
          .prepare(SQL.insert)
          .run(label.uuid, organizationId, label.name, nameKey(label.name), label.color, label.now, label.now)
        if (changes === 0) return { _tag: "NameTaken" }
        const { uuid, name, color, now } = label
        return { _tag: "Created", label: { uuid, name, color, contacts_count: 0, created_at: now, updated_at: now } }
      })
    ),
  findById: (organizationId, id) =>
    attempt("labels.findById", () =>
      Option.map(Option.fromNullable(statements.prepare<LabelRow>(SQL.findById).get(organizationId, id)), decodeLabel)
    ),
  findByNames: (organizationId, names) =>
    attempt("labels.findByNames", () =>
      statements.prepare<LabelRow>(SQL.findByNames).all(organizationId, jsonArray(names.map(nameKey))).map(decodeLabel)
    ),
  list: (organizationId, page) =>
    attempt("labels.list", () =>
      snapshot(db, () => ({
        items: statements.prepare<LabelRow>(SQL.page).all(organizationId, ...pageBounds(page)).map(decodeLabel),
        total: countOf(statements, SQL.count, organizationId)
      }))
    ),
  deleteMany: (organizationId, ids) =>
    attempt("labels.deleteMany", () => {
      const deleted = new Set(
        statements.prepare<{ uuid: string }>(SQL.deleteMany).all(organizationId, jsonArray(ids)).map((row) => row.uuid)
      )
      return [...new Set(ids)].filter((id) => deleted.has(id))
    }),
  assign: (organizationId, id, contactIds, now) =>
    attempt("labels.assign", () =>
      transaction(db, (): LabelAssignOutcome => {
        const labelMissing = statements.prepare(SQL.exists).get(organizationId, id) === undefined
        const contacts = jsonArray(contactIds)
        const found = new Set(
          statements.prepare<{ uuid: string }>(SQL.contactsAmong).all(organizationId, contacts).map((row) => row.uuid)
        )
        const missing: Array<ContactId> = [...new Set(contactIds)].filter((contact) => !found.has(contact))
        if (labelMissing || missing.length > 0) return { _tag: "NotFound", label: labelMissing, contacts: missing }
        statements.prepare(SQL.assign).run(id, now, contacts)
        return { _tag: "Assigned" }
      })
    )
})

const SQL = {
  count: "SELECT COUNT(*) AS count FROM labels WHERE organization_id = ?",
  insert: `INSERT INTO labels (uuid, organization_id, name, name_key, color, created_at, updated_at)
    VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (organization_id, name_key) DO NOTHING`,
  findById: `${LABEL_SELECT} WHERE l.organization_id = ? AND l.uuid = ?`,
  findByNames: `${LABEL_SELECT} WHERE l.organization_id = ? AND l.name_key IN (SELECT value FROM json_each(?))`,
  exists: "SELECT 1 AS found FROM labels WHERE organization_id = ? AND uuid = ?",
  page: `${LABEL_SELECT} WHERE l.organization_id = ? ${NEWEST_FIRST}`,
  // contact_labels rows go with them (ON DELETE CASCADE, foreign_keys = ON).
  deleteMany: `DELETE FROM labels WHERE organization_id = ? AND uuid IN (SELECT value FROM json_each(?))
    RETURNING uuid`,
  contactsAmong: "SELECT uuid FROM contacts WHERE organization_id = ? AND uuid IN (SELECT value FROM json_each(?))",
  assign: `INSERT OR IGNORE INTO contact_labels (label_uuid, contact_uuid, assigned_at)
    SELECT ?, value, ? FROM json_each(?)`
} as const

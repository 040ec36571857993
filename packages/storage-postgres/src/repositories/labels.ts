import { Option } from "effect"
import {
  type ContactId,
  type LabelAssignOutcome,
  type LabelCreateOutcome,
  type LabelRepository,
  nameKey
} from "@switchboard/core"
import { attempt, pageBounds, type RepositoryFactory } from "../internal/sql.js"
import { countOf, decodeLabel, labelSelect, type LabelRow, newestFirst } from "./rows.js"

/**
 * `Storage.labels` on PostgreSQL: tables `labels` and `contact_labels`
 * (src/schema/records.ts), names unique per organization by `name_key` (a UNIQUE index).
 * `create` (the `label_limit` check by `COUNT` and the insert), `assign` (its existence
 * checks and the insert) and `deleteMany` each run in one transaction holding the
 * organization's lock (`lockOrganization`), so two processes creating labels at once
 * cannot pass the limit together, and a label or contact checked cannot vanish before its
 * assignment is written. `deleteMany` is one statement whose assignments cascade.
 *
 * @category repositories
 */
export const labelRepository: RepositoryFactory<LabelRepository> = (db) => {
  const SQL = statementsOf(db.schema)
  return {
    create: (organizationId, label, labelLimit) =>
      attempt("labels.create", () =>
        db.transaction(
          async (sql): Promise<LabelCreateOutcome> => {
            if (labelLimit !== null) {
              const usage = await countOf(sql, SQL.count, [organizationId])
              if (usage >= labelLimit) return { _tag: "LimitExceeded", limit: labelLimit, usage }
            }
            const { uuid, name, color, now } = label
            const inserted = await sql.run(SQL.insert, [uuid, organizationId, name, nameKey(name), color, now])
            if (inserted === 0) return { _tag: "NameTaken" }
            return { _tag: "Created", label: { uuid, name, color, contacts_count: 0, created_at: now, updated_at: now } }
          },
          { lockOrganization: organizationId }
        )
      ),
    findById: (organizationId, id) =>
      attempt("labels.findById", async () =>
        Option.map(Option.fromNullable(await db.sql.row<LabelRow>(SQL.findById, [organizationId, id])), decodeLabel)
      ),
    findByNames: (organizationId, names) =>
      attempt("labels.findByNames", async () =>
        names.length === 0
          ? []
          : (await db.sql.rows<LabelRow>(SQL.findByNames, [organizationId, names.map(nameKey)])).map(decodeLabel)
      ),
    list: (organizationId, page) =>
      attempt("labels.list", () =>
        db.snapshot(async (sql) => ({
          items: (await sql.rows<LabelRow>(SQL.page, [organizationId, ...pageBounds(page)])).map(decodeLabel),
          total: await countOf(sql, SQL.count, [organizationId])
        }))
      ),
    deleteMany: (organizationId, ids) =>
      attempt("labels.deleteMany", async () => {
        if (ids.length === 0) return []
        const rows = await db.transaction(
          (sql) => sql.rows<{ uuid: string }>(SQL.deleteMany, [organizationId, [...new Set(ids)]]),
          { lockOrganization: organizationId }
        )
        const deleted = new Set(rows.map((row) => row.uuid))
        return [...new Set(ids)].filter((id) => deleted.has(id))
      }),
    assign: (organizationId, id, contactIds, now) =>
      attempt("labels.assign", () =>
        db.transaction(
          async (sql): Promise<LabelAssignOutcome> => {
            const labelMissing = (await sql.row(SQL.exists, [organizationId, id])) === undefined
            const contacts = [...new Set(contactIds)]
            const found = new Set(
              contacts.length === 0
                ? []
                : (await sql.rows<{ uuid: string }>(SQL.contactsAmong, [organizationId, contacts])).map((row) => row.uuid)
            )
            const missing: Array<ContactId> = contacts.filter((contact) => !found.has(contact))
            if (labelMissing || missing.length > 0) return { _tag: "NotFound", label: labelMissing, contacts: missing }
            if (contacts.length > 0) await sql.run(SQL.assign, [id, now, contacts])
            return { _tag: "Assigned" }
          },
          { lockOrganization: organizationId }
        )
      )
  }
}

/** The statements of this repository on `schema`. */
const statementsOf = (schema: string) =>
  ({
    count: `SELECT COUNT(*) AS count FROM ${schema}.labels WHERE organization_id = $1`,
    insert: `INSERT INTO ${schema}.labels (uuid, organization_id, name, name_key, color, created_at, updated_at)
      VALUES ($1, $2, $3, $4, $5, $6, $6) ON CONFLICT (organization_id, name_key) DO NOTHING`,
    findById: `${labelSelect(schema)} WHERE l.organization_id = $1 AND l.uuid = $2`,
    findByNames: `${labelSelect(schema)} WHERE l.organization_id = $1 AND l.name_key = ANY($2::text[])`,
    exists: `SELECT 1 AS found FROM ${schema}.labels WHERE organization_id = $1 AND uuid = $2`,
    page: `${labelSelect(schema)} WHERE l.organization_id = $1 ${newestFirst(2)}`,
    // contact_labels rows go with them (ON DELETE CASCADE).
    deleteMany: `DELETE FROM ${schema}.labels WHERE organization_id = $1 AND uuid = ANY($2::text[]) RETURNING uuid`,
    contactsAmong: `SELECT uuid FROM ${schema}.contacts WHERE organization_id = $1 AND uuid = ANY($2::text[])`,
    assign: `INSERT INTO ${schema}.contact_labels (label_uuid, contact_uuid, assigned_at)
      SELECT $1, contact_uuid, $2 FROM unnest($3::text[]) AS t (contact_uuid)
      ON CONFLICT DO NOTHING`
  }) as const

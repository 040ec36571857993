import { Option } from "effect"
import {
  CONTACT_DETAIL_FIELDS,
  type ContactDetails,
  type ContactRepository,
  type ContactUpdateOutcome
} from "@switchboard/core"
import { attempt, pageBounds, type RepositoryFactory, type Sql } from "../internal/sql.js"
import { markContactMediaDeleted } from "./media.js"
import { importRows } from "./recordsImport.js"
import {
  type ContactRow,
  contactSelect,
  contactsCount,
  type ContactWithRelationsRow,
  countOf,
  decodeContactWithRelations,
  decodeLabel,
  labelSelect,
  type LabelRow,
  newestFirst
} from "./rows.js"

/**
 * `Storage.contacts` on PostgreSQL: table `contacts` with `group_members` and
 * `contact_labels` (src/schema/records.ts). `importBulk`, `update` and `delete` each run in
 * one transaction holding the organization's lock (`lockOrganization`), so the plan-limit
 * and phone checks and the writes are atomic across processes (the `UNIQUE` index on
 * `(organization_id, phone)` backs them); `delete` marks the contact's media `deleted` in
 * its transaction (`media.ts`); `markMarketingOptOut` is one conditional
 * `UPDATE`. A contact is read with its groups and labels by one statement
 * (`contactSelect`); a page and its total share one snapshot. A list or read costs a fixed
 * number of statements, never one per contact; an import a handful, whatever its size.
 *
 * @category repositories
 */
export const contactRepository: RepositoryFactory<ContactRepository> = (db) => {
  const SQL = statementsOf(db.schema)
  /** The contact with its groups and labels, or `None`. */
  const find = async (sql: Sql, organizationId: string, id: string) =>
    Option.map(
      Option.fromNullable(await sql.row<ContactWithRelationsRow>(SQL.findById, [organizationId, id])),
      decodeContactWithRelations
    )
  return {
    importBulk: (organizationId, request) =>
      attempt("contacts.importBulk", () =>
        db.transaction(
          (sql) => importRows(sql, db.schema, organizationId, request),
          { lockOrganization: organizationId }
        )
      ),
    list: (organizationId, page) =>
      attempt("contacts.list", () =>
        db.snapshot(async (sql) => ({
          items: (await sql.rows<ContactWithRelationsRow>(SQL.page, [organizationId, ...pageBounds(page)])).map(
            decodeContactWithRelations
          ),
          total: await countOf(sql, SQL.count, [organizationId])
        }))
      ),
    findById: (organizationId, id) => attempt("contacts.findById", () => find(db.sql, organizationId, id)),
    findByPhone: (organizationId, phone) =>
      attempt("contacts.findByPhone", async () =>
        Option.map(
          Option.fromNullable(await db.sql.row<ContactWithRelationsRow>(SQL.findByPhone, [organizationId, phone])),
          decodeContactWithRelations
        )
      ),
    update: (organizationId, id, patch, now) =>
      attempt("contacts.update", () =>
        db.transaction(
          async (sql): Promise<ContactUpdateOutcome> => {
            const current = await sql.row<Pick<ContactRow, "phone">>(SQL.phoneOf, [organizationId, id])
            if (current === undefined) return { _tag: "NotFound" }
            if (patch.phone !== undefined && patch.phone !== current.phone) {
              if ((await sql.row(SQL.phoneOwner, [organizationId, patch.phone])) !== undefined) {
                return { _tag: "PhoneTaken" }
              }
            }
            await sql.run(SQL.update, updateValues(organizationId, id, patch, now))
            return { _tag: "Updated", contact: Option.getOrThrow(await find(sql, organizationId, id)) }
          },
          { lockOrganization: organizationId }
        )
      ),
    markMarketingOptOut: (organizationId, id, at) =>
      attempt("contacts.markMarketingOptOut", async () => (await db.sql.run(SQL.markMarketingOptOut, [at, organizationId, id])) > 0),
    delete: (organizationId, id) =>
      attempt("contacts.delete", () =>
        db.transaction(
          async (sql) => {
            // The contact's media marked (their rows locked) before its messages go, in the
            // order recordFetch locks them; again after, for a media appended meanwhile by an
            // inbound message whose chat lock the delete waited for.
            await markContactMediaDeleted(sql, db.schema, organizationId, id)
            const deleted = (await sql.run(SQL.delete, [organizationId, id])) > 0
            if (deleted) await markContactMediaDeleted(sql, db.schema, organizationId, id)
            return deleted
          },
          { lockOrganization: organizationId }
        )
      ),
    labelsOf: (organizationId, id) =>
      attempt("contacts.labelsOf", () =>
        db.snapshot(async (sql) =>
          (await sql.row(SQL.exists, [organizationId, id])) === undefined
            ? Option.none()
            : Option.some((await sql.rows<LabelRow>(SQL.labelsOf, [id, organizationId])).map(decodeLabel))
        )
      )
  }
}

/** The statements of this repository on `schema`. */
const statementsOf = (schema: string) =>
  ({
    page: `${contactSelect(schema)} WHERE c.organization_id = $1 ${newestFirst(2)}`,
    count: contactsCount(schema),
    findById: `${contactSelect(schema)} WHERE c.organization_id = $1 AND c.uuid = $2`,
    findByPhone: `${contactSelect(schema)} WHERE c.organization_id = $1 AND c.phone = $2`,
    phoneOf: `SELECT phone FROM ${schema}.contacts WHERE organization_id = $1 AND uuid = $2`,
    exists: `SELECT 1 AS found FROM ${schema}.contacts WHERE organization_id = $1 AND uuid = $2`,
    phoneOwner: `SELECT uuid FROM ${schema}.contacts WHERE organization_id = $1 AND phone = $2`,
    // $3 … : a flag and a value per field; a phone set here was validated (phone_valid true).
    update: `UPDATE ${schema}.contacts SET
        phone = CASE WHEN $3::boolean THEN $4 ELSE phone END,
        phone_valid = CASE WHEN $3::boolean THEN true ELSE phone_valid END,
        ${CONTACT_DETAIL_FIELDS.map((f, i) => `${f} = CASE WHEN $${5 + 2 * i}::boolean THEN $${6 + 2 * i}::text ELSE ${f} END`).join(",\n        ")},
        marketing_opt_out_at = CASE WHEN $${5 + 2 * CONTACT_DETAIL_FIELDS.length}::boolean THEN NULL ELSE marketing_opt_out_at END,
        updated_at = $${6 + 2 * CONTACT_DETAIL_FIELDS.length}
      WHERE organization_id = $1 AND uuid = $2`,
    // One statement, so atomic: the first opt-out is kept; updated_at is not moved.
    markMarketingOptOut: `UPDATE ${schema}.contacts SET marketing_opt_out_at = $1
      WHERE organization_id = $2 AND uuid = $3 AND marketing_opt_out_at IS NULL`,
    // group_members and contact_labels rows go with it (ON DELETE CASCADE); the
    // contact_counts trigger counts it out.
    delete: `DELETE FROM ${schema}.contacts WHERE organization_id = $1 AND uuid = $2`,
    labelsOf: `${labelSelect(schema)} JOIN ${schema}.contact_labels AS mine ON mine.label_uuid = l.uuid
      WHERE mine.contact_uuid = $1 AND l.organization_id = $2
      ORDER BY l.name, l.uuid`
  }) as const

/** The parameters of `update`: `phone` when given, the given details (`null` clears), the opt-out clearing, `now`. */
const updateValues = (
  organizationId: string,
  id: string,
  patch: { readonly phone?: string; readonly details: Partial<ContactDetails>; readonly marketing_opt_out_at?: null },
  now: string
): Array<unknown> => [
  organizationId,
  id,
  patch.phone !== undefined,
  patch.phone ?? null,
  ...CONTACT_DETAIL_FIELDS.flatMap((field) => [patch.details[field] !== undefined, patch.details[field] ?? null]),
  patch.marketing_opt_out_at === null,
  now
]

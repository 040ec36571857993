import { Option } from "effect"
import {
  nameKey,
  type Template,
  type TemplateRepository,
  type TemplateStatusOutcome,
  type TemplateWriteOutcome
} from "@switchboard/core"
import { TEMPLATE_COLUMNS, templateContentValues, type TemplateRow } from "@switchboard/storage-sql"
import { decoders } from "../dialect.js"
import { attempt, pageBounds, type RepositoryFactory, type Sql } from "../internal/sql.js"
import { recordWebhookEvent } from "./webhookEvents.js"

/**
 * `Storage.templates` on PostgreSQL: table `templates` (schema/catalog.ts), `components` a
 * `json` column (returned as written); the identity (`organization_id`, `name_key`,
 * `language`) is a UNIQUE constraint, `name_key` being core's `nameKey(name)`. `create` is
 * one statement (`ON CONFLICT DO NOTHING`); `update` and `updateStatus` are each one
 * transaction holding the organization's lock, so neither races the other into a lost
 * `rejected_reason`, and an `update` racing a `create` into the same identity answers
 * `NameTaken` (the constraint refuses it); a status change writes its
 * `template.status_updated` event to the outbox in that transaction. `list` reads a page and its total in one
 * snapshot.
 *
 * @category repositories
 */
export const templateRepository: RepositoryFactory<TemplateRepository> = (db) => {
  const SQL = statements(db.schema)
  return {
    create: (organizationId, { uuid, content, now }) =>
      attempt("templates.create", async (): Promise<TemplateWriteOutcome> => {
        const written = await db.sql.run(SQL.insert, [uuid, organizationId, ...templateContentValues(content), now, now])
        if (written === 0) return { _tag: "NameTaken" }
        return { _tag: "Written", template: { uuid, ...content, rejected_reason: null, created_at: now, updated_at: now } }
      }),
    update: (organizationId, id, content, now) =>
      attempt("templates.update", () =>
        db
          .transaction(
            async (sql): Promise<TemplateWriteOutcome> => {
              const current = await find(sql, SQL.findById, organizationId, id)
              if (current === undefined) return { _tag: "NotFound" }
              const owner = await sql.row(SQL.identityOwner, [organizationId, nameKey(content.name), content.language, id])
              if (owner !== undefined) return { _tag: "NameTaken" }
              const rejected_reason = content.status === "REJECTED" ? current.rejected_reason : null
              await sql.run(SQL.update, [...templateContentValues(content), rejected_reason, now, organizationId, id])
              return {
                _tag: "Written",
                template: { uuid: id, ...content, rejected_reason, created_at: current.created_at, updated_at: now }
              }
            },
            { lockOrganization: organizationId }
          )
          // A `create` (which takes no lock) committed the same identity after the check.
          .catch((error: unknown): TemplateWriteOutcome => {
            if ((error as { code?: unknown }).code === UNIQUE_VIOLATION) return { _tag: "NameTaken" }
            throw error
          })
      ),
    updateStatus: (organizationId, id, { now, rejected_reason, status }) =>
      attempt("templates.updateStatus", () =>
        db.transaction(
          async (sql): Promise<TemplateStatusOutcome> => {
            const current = await find(sql, SQL.findById, organizationId, id)
            if (current === undefined) return { _tag: "NotFound" }
            if (current.status === status && current.rejected_reason === rejected_reason) {
              return { _tag: "Updated", template: current, changed: false }
            }
            await sql.run(SQL.updateStatus, [status, rejected_reason, now, organizationId, id])
            const template: Template = { ...current, status, rejected_reason, updated_at: now }
            await recordWebhookEvent(sql, db.schema, organizationId, "template.status_updated", now, () => template)
            return { _tag: "Updated", template, changed: true }
          },
          { lockOrganization: organizationId }
        )
      ),
    findById: (organizationId, id) =>
      attempt("templates.findById", async () => Option.fromNullable(await find(db.sql, SQL.findById, organizationId, id))),
    findByIdentity: (organizationId, name, language) =>
      attempt("templates.findByIdentity", async () =>
        Option.fromNullable(await find(db.sql, SQL.findByIdentity, organizationId, nameKey(name), language))
      ),
    list: (organizationId, page) =>
      attempt("templates.list", () =>
        db.snapshot(async (sql) => ({
          items: (await sql.rows<TemplateRow>(SQL.page, [organizationId, ...pageBounds(page)])).map(decodeTemplate),
          total: (await sql.row<{ count: number }>(SQL.count, [organizationId]))?.count ?? 0
        }))
      )
  }
}

/** SQLSTATE unique_violation. */
const UNIQUE_VIOLATION = "23505"

const COLUMNS = TEMPLATE_COLUMNS

/** The statements of this repository on `schema` (quoted). */
const statements = (schema: string) =>
  ({
    insert: `INSERT INTO ${schema}.templates
        (uuid, organization_id, name, name_key, language, category, status, components, created_at, updated_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (organization_id, name_key, language) DO NOTHING`,
    update: `UPDATE ${schema}.templates SET name = $1, name_key = $2, language = $3, category = $4, status = $5,
        components = $6, rejected_reason = $7, updated_at = $8
      WHERE organization_id = $9 AND uuid = $10`,
    updateStatus: `UPDATE ${schema}.templates SET status = $1, rejected_reason = $2, updated_at = $3
      WHERE organization_id = $4 AND uuid = $5`,
    findById: `SELECT ${COLUMNS} FROM ${schema}.templates WHERE organization_id = $1 AND uuid = $2`,
    findByIdentity: `SELECT ${COLUMNS} FROM ${schema}.templates WHERE organization_id = $1 AND name_key = $2 AND language = $3`,
    identityOwner: `SELECT uuid FROM ${schema}.templates
      WHERE organization_id = $1 AND name_key = $2 AND language = $3 AND uuid <> $4`,
    page: `SELECT ${COLUMNS} FROM ${schema}.templates WHERE organization_id = $1
      ORDER BY created_at DESC, uuid DESC LIMIT $2 OFFSET $3`,
    count: `SELECT COUNT(*) AS count FROM ${schema}.templates WHERE organization_id = $1`
  }) as const

const find = async (sql: Sql, text: string, ...params: Array<unknown>): Promise<Template | undefined> => {
  const row = await sql.row<TemplateRow>(text, params)
  return row === undefined ? undefined : decodeTemplate(row)
}

/** A template record from its row. */
const decodeTemplate = decoders.template

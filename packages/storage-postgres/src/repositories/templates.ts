import { Option } from "effect"
import {
  nameKey,
  type Template,
  type TemplateRepository,
  type TemplateStatusOutcome,
  type TemplateWriteOutcome
} from "@switchboard/core"
import { TEMPLATE_COLUMNS, templateContentValues, type TemplateRow, writtenTemplate } from "@switchboard/storage-sql"
import { decoders } from "../dialect.js"
import { attempt, isUniqueViolation, pageBounds, type RepositoryFactory, type Sql } from "../internal/sql.js"
import { recordWebhookEvent } from "./webhookEvents.js"

/**
 * `Storage.templates` on PostgreSQL: table `templates` (schema/catalog.ts and
 * schema/templatesFromMeta.ts), `components` and `problems` `json` columns (returned as
 * written); the identity (`organization_id`, `name_key`, `language`,
 * `COALESCE(waba_id, '')`) is the UNIQUE expression index `templates_identity`, `name_key`
 * being core's `nameKey(name)`, so templates with no account are one group.
 * `findByIdentity` reads both candidates (the account's and the one with no account) in
 * one indexed statement, the account's first. `create` is
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
        const rejected_reason = content.rejected_reason ?? null
        const written = await db.sql.run(SQL.insert, [uuid, organizationId, ...templateContentValues(content), rejected_reason, now, now])
        if (written === 0) return { _tag: "NameTaken" }
        return { _tag: "Written", template: writtenTemplate(uuid, content, rejected_reason, now, now) }
      }),
    update: (organizationId, id, content, now, guard) =>
      attempt("templates.update", () =>
        db
          .transaction(
            async (sql): Promise<TemplateWriteOutcome> => {
              const current = await find(sql, SQL.findById, organizationId, id)
              if (current === undefined) return { _tag: "NotFound" }
              if (isStale(current, guard?.unchangedSince)) return { _tag: "Stale", template: current }
              const owner = await sql.row(SQL.identityOwner, [organizationId, nameKey(content.name), content.language, content.waba_id, id])
              if (owner !== undefined) return { _tag: "NameTaken" }
              const rejected_reason =
                content.rejected_reason !== undefined ? content.rejected_reason : content.status === "REJECTED" ? current.rejected_reason : null
              await sql.run(SQL.update, [...templateContentValues(content), rejected_reason, now, organizationId, id])
              return { _tag: "Written", template: writtenTemplate(id, content, rejected_reason, current.created_at, now) }
            },
            { lockOrganization: organizationId }
          )
          // A `create` (which takes no lock) committed the same identity after the check.
          .catch((error: unknown): TemplateWriteOutcome => {
            if (isUniqueViolation(error)) return { _tag: "NameTaken" }
            throw error
          })
      ),
    updateStatus: (organizationId, id, { now, rejected_reason, status, category, unchangedSince }) =>
      attempt("templates.updateStatus", () =>
        db.transaction(
          async (sql): Promise<TemplateStatusOutcome> => {
            const current = await find(sql, SQL.findById, organizationId, id)
            if (current === undefined) return { _tag: "NotFound" }
            if (isStale(current, unchangedSince)) return { _tag: "Stale", template: current }
            const newCategory = category ?? current.category
            if (current.status === status && current.rejected_reason === rejected_reason && current.category === newCategory) {
              return { _tag: "Updated", template: current, changed: false }
            }
            await sql.run(SQL.updateStatus, [status, rejected_reason, now, organizationId, id, newCategory])
            const template: Template = { ...current, status, rejected_reason, category: newCategory, updated_at: now }
            await recordWebhookEvent(sql, db.schema, organizationId, category === undefined ? "template.status_updated" : "template.category_updated", now, () => template)
            return { _tag: "Updated", template, changed: true }
          },
          { lockOrganization: organizationId }
        )
      ),
    findById: (organizationId, id) =>
      attempt("templates.findById", async () => Option.fromNullable(await find(db.sql, SQL.findById, organizationId, id))),
    findByIdentity: (organizationId, name, language, wabaId = null) =>
      attempt("templates.findByIdentity", async () =>
        Option.fromNullable(await find(db.sql, SQL.findByIdentity, organizationId, nameKey(name), language, wabaId ?? ""))
      ),
    deleteUnsubmitted: (organizationId, id) =>
      attempt("templates.deleteUnsubmitted", async () => (await db.sql.run(SQL.deleteUnsubmitted, [organizationId, id])) > 0),
    findByProviderId: (organizationId, providerTemplateId) =>
      attempt("templates.findByProviderId", async () =>
        Option.fromNullable(await find(db.sql, SQL.findByProviderId, organizationId, providerTemplateId))
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

const COLUMNS = TEMPLATE_COLUMNS

/** The statements of this repository on `schema` (quoted). */
const statements = (schema: string) =>
  ({
    insert: `INSERT INTO ${schema}.templates
        (uuid, organization_id, waba_id, provider_template_id, name, name_key, language, category, status, components, problems,
          rejected_reason, created_at, updated_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
      ON CONFLICT (organization_id, name_key, language, (COALESCE(waba_id, ''))) DO NOTHING`,
    update: `UPDATE ${schema}.templates SET waba_id = $1, provider_template_id = $2, name = $3, name_key = $4, language = $5,
        category = $6, status = $7, components = $8, problems = $9, rejected_reason = $10, updated_at = $11
      WHERE organization_id = $12 AND uuid = $13`,
    updateStatus: `UPDATE ${schema}.templates SET status = $1, rejected_reason = $2, updated_at = $3, category = $6
      WHERE organization_id = $4 AND uuid = $5`,
    findById: `SELECT ${COLUMNS} FROM ${schema}.templates WHERE organization_id = $1 AND uuid = $2`,
    // The account's template ($4 its id, '' when none was asked) before the one with no
    // account: both through templates_identity.
    findByIdentity: `SELECT ${COLUMNS} FROM ${schema}.templates
      WHERE organization_id = $1 AND name_key = $2 AND language = $3 AND COALESCE(waba_id, '') IN ($4, '')
      ORDER BY COALESCE(waba_id, '') DESC LIMIT 1`,
    deleteUnsubmitted: `DELETE FROM ${schema}.templates WHERE organization_id = $1 AND uuid = $2 AND provider_template_id IS NULL`,
    findByProviderId: `SELECT ${COLUMNS} FROM ${schema}.templates WHERE organization_id = $1 AND provider_template_id = $2
      ORDER BY created_at, uuid LIMIT 1`,
    identityOwner: `SELECT uuid FROM ${schema}.templates
      WHERE organization_id = $1 AND name_key = $2 AND language = $3 AND COALESCE(waba_id, '') = COALESCE($4, '') AND uuid <> $5`,
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

/**
 * Whether a guarded write must not touch `current`: it changed after `unchangedSince`. Both
 * are instants; compared as times (the decoded `updated_at` is ISO 8601 UTC, as given).
 */
const isStale = (current: { readonly updated_at: string }, unchangedSince: string | undefined): boolean =>
  unchangedSince !== undefined && Date.parse(current.updated_at) > Date.parse(unchangedSince)

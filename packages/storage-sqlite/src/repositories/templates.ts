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
import { attempt, type RepositoryFactory, snapshot, type Statements, transaction } from "../internal/sql.js"
import { countOf, NEWEST_FIRST, pageBounds } from "./rows.js"
import { recordWebhookEvent } from "./webhookEvents.js"

/**
 * `Storage.templates` on SQLite: table `templates` (migrations 3 and 10), `components`
 * stored as JSON text; the identity (`organization_id`, `name_key`, `language`) is a UNIQUE
 * index, `name_key` being core's `nameKey(name)`. `create` is one statement; `update` and
 * `updateStatus` are each one `BEGIN IMMEDIATE` transaction, so neither can race another
 * writer into a duplicate or a lost `rejected_reason`; a status change writes its
 * `template.status_updated` event to the outbox in that transaction.
 *
 * @category repositories
 */
export const templateRepository: RepositoryFactory<TemplateRepository> = (db, statements) => ({
  create: (organizationId, { uuid, content, now }) =>
    attempt("templates.create", (): TemplateWriteOutcome => {
      const { changes } = statements.prepare(SQL.insert).run(uuid, organizationId, ...templateContentValues(content), now, now)
      if (changes === 0) return { _tag: "NameTaken" }
      return { _tag: "Written", template: { uuid, ...content, rejected_reason: null, created_at: now, updated_at: now } }
    }),
  update: (organizationId, id, content, now) =>
    attempt("templates.update", () =>
      transaction(db, (): TemplateWriteOutcome => {
        const current = find(statements, SQL.findById, organizationId, id)
        if (current === undefined) return { _tag: "NotFound" }
        const owner = statements.prepare(SQL.identityOwner).get(organizationId, nameKey(content.name), content.language, id)
        if (owner !== undefined) return { _tag: "NameTaken" }
        const rejected_reason = content.status === "REJECTED" ? current.rejected_reason : null
        statements.prepare(SQL.update).run(...templateContentValues(content), rejected_reason, now, organizationId, id)
        return { _tag: "Written", template: { uuid: id, ...content, rejected_reason, created_at: current.created_at, updated_at: now } }
      })
    ),
  updateStatus: (organizationId, id, { now, rejected_reason, status }) =>
    attempt("templates.updateStatus", () =>
      transaction(db, (): TemplateStatusOutcome => {
        const current = find(statements, SQL.findById, organizationId, id)
        if (current === undefined) return { _tag: "NotFound" }
        if (current.status === status && current.rejected_reason === rejected_reason) {
          return { _tag: "Updated", template: current, changed: false }
        }
        statements.prepare(SQL.updateStatus).run(status, rejected_reason, now, organizationId, id)
        const template: Template = { ...current, status, rejected_reason, updated_at: now }
        recordWebhookEvent(statements, organizationId, "template.status_updated", now, () => template)
        return { _tag: "Updated", template, changed: true }
      })
    ),
  findById: (organizationId, id) =>
    attempt("templates.findById", () => Option.fromNullable(find(statements, SQL.findById, organizationId, id))),
  findByIdentity: (organizationId, name, language) =>
    attempt("templates.findByIdentity", () =>
      Option.fromNullable(find(statements, SQL.findByIdentity, organizationId, nameKey(name), language))
    ),
  list: (organizationId, page) =>
    attempt("templates.list", () =>
      snapshot(db, () => ({
        items: statements.prepare<TemplateRow>(SQL.page).all(organizationId, ...pageBounds(page)).map(decodeTemplate),
        total: countOf(statements, SQL.count, organizationId)
      }))
    )
})

const COLUMNS = TEMPLATE_COLUMNS

/** The statements of this repository (exported for the query-plan test). */
export const SQL = {
  insert: `INSERT INTO templates
      (uuid, organization_id, name, name_key, language, category, status, components, created_at, updated_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (organization_id, name_key, language) DO NOTHING`,
  update: `UPDATE templates SET name = ?, name_key = ?, language = ?, category = ?, status = ?, components = ?,
      rejected_reason = ?, updated_at = ?
    WHERE organization_id = ? AND uuid = ?`,
  updateStatus: "UPDATE templates SET status = ?, rejected_reason = ?, updated_at = ? WHERE organization_id = ? AND uuid = ?",
  findById: `SELECT ${COLUMNS} FROM templates WHERE organization_id = ? AND uuid = ?`,
  findByIdentity: `SELECT ${COLUMNS} FROM templates WHERE organization_id = ? AND name_key = ? AND language = ?`,
  identityOwner: "SELECT uuid FROM templates WHERE organization_id = ? AND name_key = ? AND language = ? AND uuid <> ?",
  page: `SELECT ${COLUMNS} FROM templates WHERE organization_id = ? ${NEWEST_FIRST}`,
  count: "SELECT COUNT(*) AS count FROM templates WHERE organization_id = ?"
} as const

const find = (statements: Statements, sql: string, ...params: Array<unknown>): Template | undefined => {
  const row = statements.prepare<TemplateRow>(sql).get(...params)
  return row === undefined ? undefined : decodeTemplate(row)
}

/** A template record from its row. */
const decodeTemplate = decoders.template

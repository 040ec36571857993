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
import { attempt, type RepositoryFactory, snapshot, type Statements, transaction } from "../internal/sql.js"
import { countOf, NEWEST_FIRST, pageBounds } from "./rows.js"
import { recordWebhookEvent } from "./webhookEvents.js"

/**
 * `Storage.templates` on SQLite: table `templates` (migrations 3, 10 and 20), `components`
 * and `problems` stored as JSON text; the identity (`organization_id`, `name_key`,
 * `language`, `COALESCE(waba_id, '')`) is a UNIQUE expression index (`templates_identity`),
 * `name_key` being core's `nameKey(name)`, so templates with no account are one group.
 * `findByIdentity` reads both candidates (the account's and the one with no account) in
 * one indexed statement, the account's first. `create` is one statement; `update` and
 * `updateStatus` are each one `BEGIN IMMEDIATE` transaction, so neither can race another
 * writer into a duplicate or a lost `rejected_reason`; a status change writes its
 * `template.status_updated` event to the outbox in that transaction.
 *
 * @category repositories
 */
export const templateRepository: RepositoryFactory<TemplateRepository> = (db, statements) => ({
  create: (organizationId, { uuid, content, now }) =>
    attempt("templates.create", (): TemplateWriteOutcome => {
      const rejected_reason = content.rejected_reason ?? null
      const { changes } = statements.prepare(SQL.insert).run(uuid, organizationId, ...templateContentValues(content), rejected_reason, now, now)
      if (changes === 0) return { _tag: "NameTaken" }
      return { _tag: "Written", template: writtenTemplate(uuid, content, rejected_reason, now, now) }
    }),
  update: (organizationId, id, content, now, guard) =>
    attempt("templates.update", () =>
      transaction(db, (): TemplateWriteOutcome => {
        const current = find(statements, SQL.findById, organizationId, id)
        if (current === undefined) return { _tag: "NotFound" }
        if (guard?.unchangedSince !== undefined && current.updated_at > guard.unchangedSince) return { _tag: "Stale", template: current }
        const owner = statements.prepare(SQL.identityOwner).get(organizationId, nameKey(content.name), content.language, content.waba_id, id)
        if (owner !== undefined) return { _tag: "NameTaken" }
        const rejected_reason =
          content.rejected_reason !== undefined ? content.rejected_reason : content.status === "REJECTED" ? current.rejected_reason : null
        statements.prepare(SQL.update).run(...templateContentValues(content), rejected_reason, now, organizationId, id)
        return { _tag: "Written", template: writtenTemplate(id, content, rejected_reason, current.created_at, now) }
      })
    ),
  updateStatus: (organizationId, id, { now, rejected_reason, status, category, unchangedSince }) =>
    attempt("templates.updateStatus", () =>
      transaction(db, (): TemplateStatusOutcome => {
        const current = find(statements, SQL.findById, organizationId, id)
        if (current === undefined) return { _tag: "NotFound" }
        if (unchangedSince !== undefined && current.updated_at > unchangedSince) return { _tag: "Stale", template: current }
        const newCategory = category ?? current.category
        if (current.status === status && current.rejected_reason === rejected_reason && current.category === newCategory) {
          return { _tag: "Updated", template: current, changed: false }
        }
        statements.prepare(SQL.updateStatus).run(status, rejected_reason, newCategory, now, organizationId, id)
        const template: Template = { ...current, status, rejected_reason, category: newCategory, updated_at: now }
        recordWebhookEvent(statements, organizationId, category === undefined ? "template.status_updated" : "template.category_updated", now, () => template)
        return { _tag: "Updated", template, changed: true }
      })
    ),
  findById: (organizationId, id) =>
    attempt("templates.findById", () => Option.fromNullable(find(statements, SQL.findById, organizationId, id))),
  findByIdentity: (organizationId, name, language, wabaId = null) =>
    attempt("templates.findByIdentity", () =>
      Option.fromNullable(find(statements, SQL.findByIdentity, organizationId, nameKey(name), language, wabaId ?? ""))
    ),
  deleteUnsubmitted: (organizationId, id) =>
    attempt("templates.deleteUnsubmitted", () => statements.prepare(SQL.deleteUnsubmitted).run(organizationId, id).changes > 0),
  findByProviderId: (organizationId, providerTemplateId) =>
    attempt("templates.findByProviderId", () =>
      Option.fromNullable(find(statements, SQL.findByProviderId, organizationId, providerTemplateId))
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
      (uuid, organization_id, waba_id, provider_template_id, name, name_key, language, category, status, components, problems,
        rejected_reason, created_at, updated_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (organization_id, name_key, language, COALESCE(waba_id, '')) DO NOTHING`,
  update: `UPDATE templates SET waba_id = ?, provider_template_id = ?, name = ?, name_key = ?, language = ?, category = ?,
      status = ?, components = ?, problems = ?, rejected_reason = ?, updated_at = ?
    WHERE organization_id = ? AND uuid = ?`,
  updateStatus: "UPDATE templates SET status = ?, rejected_reason = ?, category = ?, updated_at = ? WHERE organization_id = ? AND uuid = ?",
  findById: `SELECT ${COLUMNS} FROM templates WHERE organization_id = ? AND uuid = ?`,
  // The account's template (its `COALESCE` is the account; '' when none was asked) before
  // the one with no account ('' sorts first): two probes of templates_identity, read in
  // the index's order (no sort).
  findByIdentity: `SELECT ${COLUMNS} FROM templates
    WHERE organization_id = ? AND name_key = ? AND language = ? AND COALESCE(waba_id, '') IN (?, '')
    ORDER BY COALESCE(waba_id, '') DESC LIMIT 1`,
  deleteUnsubmitted: "DELETE FROM templates WHERE organization_id = ? AND uuid = ? AND provider_template_id IS NULL",
  findByProviderId: `SELECT ${COLUMNS} FROM templates WHERE organization_id = ? AND provider_template_id = ?
    ORDER BY created_at, uuid LIMIT 1`,
  identityOwner: `SELECT uuid FROM templates
    WHERE organization_id = ? AND name_key = ? AND language = ? AND COALESCE(waba_id, '') = COALESCE(?, '') AND uuid <> ?`,
  page: `SELECT ${COLUMNS} FROM templates WHERE organization_id = ? ${NEWEST_FIRST}`,
  count: "SELECT COUNT(*) AS count FROM templates WHERE organization_id = ?"
} as const

const find = (statements: Statements, sql: string, ...params: Array<unknown>): Template | undefined => {
  const row = statements.prepare<TemplateRow>(sql).get(...params)
  return row === undefined ? undefined : decodeTemplate(row)
}

/** A template record from its row. */
const decodeTemplate = decoders.template

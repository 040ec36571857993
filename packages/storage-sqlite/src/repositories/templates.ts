import { Option } from "effect"
import {
  nameKey,
  type Template,
  type TemplateContent,
  type TemplateId,
  type TemplateRepository,
  type TemplateStatusOutcome,
  type TemplateWriteOutcome
} from "@switchboard/core"
import { attempt, type RepositoryFactory, snapshot, type Statements, transaction } from "../internal/sql.js"
import { countOf, NEWEST_FIRST, pageBounds } from "./rows.js"
import { recordWebhookEvent } from "./webhooks.js"

/**
 * Part of migration 10: `templates` takes Meta's eleven review statuses and
 * `rejected_reason` (Meta's reason, `NULL` when none). A CHECK cannot be altered in SQLite,
 * so the table is rebuilt the documented way (ALTER TABLE, "making other kinds of table
 * schema changes"): create the new table, copy every row, drop the old one, rename it,
 * recreate the index. Nothing references `templates` and no trigger or view reads it, so
 * foreign keys can stay on; the UNIQUE identity and the primary key come back with the
 * table (their automatic indexes are renamed with it), and the whole migration runs in
 * the migration transaction, so a failure leaves version 9 as it was.
 */
export const TEMPLATES_WIDENED_MIGRATION = `
  CREATE TABLE templates_v10 (
    uuid TEXT PRIMARY KEY NOT NULL,
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    name TEXT NOT NULL,
    name_key TEXT NOT NULL,
    language TEXT NOT NULL,
    category TEXT NOT NULL CHECK (category IN ('MARKETING', 'UTILITY', 'AUTHENTICATION')),
    status TEXT NOT NULL CHECK (status IN ('APPROVED', 'PENDING', 'REJECTED', 'PAUSED', 'DISABLED', 'IN_APPEAL',
      'PENDING_DELETION', 'DELETED', 'FLAGGED', 'REINSTATED', 'LIMIT_EXCEEDED')),
    rejected_reason TEXT,
    components TEXT NOT NULL CHECK (json_valid(components)),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (organization_id, name_key, language)
  ) STRICT;
  INSERT INTO templates_v10 (uuid, organization_id, name, name_key, language, category, status, components,
      created_at, updated_at)
    SELECT uuid, organization_id, name, name_key, language, category, status, components, created_at, updated_at
    FROM templates;
  DROP TABLE templates;
  ALTER TABLE templates_v10 RENAME TO templates;
  CREATE INDEX templates_newest ON templates (organization_id, created_at DESC, uuid DESC);
`

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
      const { changes } = statements.prepare(SQL.insert).run(uuid, organizationId, ...contentParams(content), now, now)
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
        statements.prepare(SQL.update).run(...contentParams(content), rejected_reason, now, organizationId, id)
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

/** A row of `templates` (every column but `organization_id` and `name_key`). */
interface TemplateRow {
  readonly uuid: string
  readonly name: string
  readonly language: string
  readonly category: Template["category"]
  readonly status: Template["status"]
  readonly rejected_reason: string | null
  readonly components: string
  readonly created_at: string
  readonly updated_at: string
}

const COLUMNS = "uuid, name, language, category, status, rejected_reason, components, created_at, updated_at"

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

/** The content columns in `INSERT`/`UPDATE` order: name, name_key, language, category, status, components. */
const contentParams = (content: TemplateContent) =>
  [content.name, nameKey(content.name), content.language, content.category, content.status, JSON.stringify(content.components)] as const

const find = (statements: Statements, sql: string, ...params: Array<unknown>): Template | undefined => {
  const row = statements.prepare<TemplateRow>(sql).get(...params)
  return row === undefined ? undefined : decodeTemplate(row)
}

/** A template record from its row; the casts are safe, every value was written from core's types. */
const decodeTemplate = (row: TemplateRow): Template => ({
  uuid: row.uuid as TemplateId,
  name: row.name,
  language: row.language,
  category: row.category,
  status: row.status,
  rejected_reason: row.rejected_reason,
  components: JSON.parse(row.components) as Template["components"],
  created_at: row.created_at,
  updated_at: row.updated_at
})

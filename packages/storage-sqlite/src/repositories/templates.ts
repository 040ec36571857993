import { Option } from "effect"
import {
  nameKey,
  type Template,
  type TemplateContent,
  type TemplateId,
  type TemplateRepository,
  type TemplateWriteOutcome
} from "@switchboard/core"
import { attempt, type RepositoryFactory, snapshot, type Statements, transaction } from "../internal/sql.js"
import { countOf, NEWEST_FIRST, pageBounds } from "./rows.js"

/**
 * `Storage.templates` on SQLite: table `templates` (migration 3), `components` stored as
 * JSON text; the identity (`organization_id`, `name_key`, `language`) is a UNIQUE index,
 * `name_key` being core's `nameKey(name)`. `create` is one statement and `update` one
 * `BEGIN IMMEDIATE` transaction, so neither can race another writer into a duplicate.
 *
 * @category repositories
 */
export const templateRepository: RepositoryFactory<TemplateRepository> = (db, statements) => ({
  create: (organizationId, { uuid, content, now }) =>
    attempt("templates.create", (): TemplateWriteOutcome => {
      const { changes } = statements.prepare(SQL.insert).run(uuid, organizationId, ...contentParams(content), now, now)
      if (changes === 0) return { _tag: "NameTaken" }
      return { _tag: "Written", template: { uuid, ...content, created_at: now, updated_at: now } }
    }),
  update: (organizationId, id, content, now) =>
    attempt("templates.update", () =>
      transaction(db, (): TemplateWriteOutcome => {
        const current = find(statements, SQL.findById, organizationId, id)
        if (current === undefined) return { _tag: "NotFound" }
        const owner = statements.prepare(SQL.identityOwner).get(organizationId, nameKey(content.name), content.language, id)
        if (owner !== undefined) return { _tag: "NameTaken" }
        statements.prepare(SQL.update).run(...contentParams(content), now, organizationId, id)
        return { _tag: "Written", template: { uuid: id, ...content, created_at: current.created_at, updated_at: now } }
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
  readonly components: string
  readonly created_at: string
  readonly updated_at: string
}

const COLUMNS = "uuid, name, language, category, status, components, created_at, updated_at"

/** The statements of this repository (exported for the query-plan test). */
export const SQL = {
  insert: `INSERT INTO templates
      (uuid, organization_id, name, name_key, language, category, status, components, created_at, updated_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (organization_id, name_key, language) DO NOTHING`,
  update: `UPDATE templates SET name = ?, name_key = ?, language = ?, category = ?, status = ?, components = ?,
      updated_at = ?
    WHERE organization_id = ? AND uuid = ?`,
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
  components: JSON.parse(row.components) as Template["components"],
  created_at: row.created_at,
  updated_at: row.updated_at
})

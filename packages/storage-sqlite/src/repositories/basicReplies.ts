import { Option } from "effect"
import { type BasicReplyCreateOutcome, type BasicReplyRepository, nameKey } from "@switchboard/core"
import { decodeReply, REPLY_COLUMN_NAMES, type ReplyRow } from "@switchboard/storage-sql"
import { attempt, type RepositoryFactory, snapshot } from "../internal/sql.js"
import { countOf, NEWEST_FIRST, pageBounds } from "./rows.js"

/**
 * `Storage.basicReplies` on SQLite: table `basic_replies` (migration 3); triggers unique
 * per organization by `trigger_key` (core's `nameKey`, a UNIQUE index), so `create` is one
 * statement that cannot race another writer into a duplicate, and `findByTrigger` one
 * index look-up.
 *
 * @category repositories
 */
export const basicReplyRepository: RepositoryFactory<BasicReplyRepository> = (db, statements) => ({
  create: (organizationId, { uuid, name, trigger, response, now }) =>
    attempt("basicReplies.create", (): BasicReplyCreateOutcome => {
      const { changes } = statements
        .prepare(SQL.insert)
        .run(uuid, organizationId, name, trigger, nameKey(trigger), response, now, now)
      if (changes === 0) return { _tag: "TriggerTaken" }
      return { _tag: "Created", reply: { uuid, name, trigger, response, created_at: now, updated_at: now } }
    }),
  findById: (organizationId, id) =>
    attempt("basicReplies.findById", () =>
      Option.map(Option.fromNullable(statements.prepare<ReplyRow>(SQL.findById).get(organizationId, id)), decodeReply)
    ),
  findByTrigger: (organizationId, text) =>
    attempt("basicReplies.findByTrigger", () =>
      Option.map(Option.fromNullable(statements.prepare<ReplyRow>(SQL.findByTrigger).get(organizationId, nameKey(text))), decodeReply)
    ),
  list: (organizationId, page) =>
    attempt("basicReplies.list", () =>
      snapshot(db, () => ({
        items: statements.prepare<ReplyRow>(SQL.page).all(organizationId, ...pageBounds(page)).map(decodeReply),
        total: countOf(statements, SQL.count, organizationId)
      }))
    )
})

// `trigger` is an SQL keyword: quoted wherever it names the column.
const COLUMNS = REPLY_COLUMN_NAMES.join(", ")

/** The statements of this repository (exported for the query-plan test). */
export const SQL = {
  insert: `INSERT INTO basic_replies (uuid, organization_id, name, "trigger", trigger_key, response, created_at, updated_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (organization_id, trigger_key) DO NOTHING`,
  findById: `SELECT ${COLUMNS} FROM basic_replies WHERE organization_id = ? AND uuid = ?`,
  findByTrigger: `SELECT ${COLUMNS} FROM basic_replies WHERE organization_id = ? AND trigger_key = ?`,
  page: `SELECT ${COLUMNS} FROM basic_replies WHERE organization_id = ? ${NEWEST_FIRST}`,
  count: "SELECT COUNT(*) AS count FROM basic_replies WHERE organization_id = ?"
} as const

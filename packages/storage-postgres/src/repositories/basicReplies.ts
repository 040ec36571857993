import { Option } from "effect"
import { type BasicReply, type BasicReplyCreateOutcome, type BasicReplyId, type BasicReplyRepository, nameKey } from "@switchboard/core"
import { attempt, pageBounds, type RepositoryFactory } from "../internal/sql.js"

/**
 * `Storage.basicReplies` on PostgreSQL: table `basic_replies` (schema/catalog.ts); triggers
 * unique per organization by `trigger_key` (core's `nameKey`, a UNIQUE constraint), so
 * `create` is one statement (`ON CONFLICT DO NOTHING`) that cannot race another writer into
 * a duplicate, and `findByTrigger` one index look-up. `list` reads a page and its total in
 * one snapshot.
 *
 * @category repositories
 */
export const basicReplyRepository: RepositoryFactory<BasicReplyRepository> = (db) => {
  const SQL = statements(db.schema)
  return {
    create: (organizationId, { uuid, name, trigger, response, now }) =>
      attempt("basicReplies.create", async (): Promise<BasicReplyCreateOutcome> => {
        const written = await db.sql.run(SQL.insert, [uuid, organizationId, name, trigger, nameKey(trigger), response, now, now])
        if (written === 0) return { _tag: "TriggerTaken" }
        return { _tag: "Created", reply: { uuid, name, trigger, response, created_at: now, updated_at: now } }
      }),
    findById: (organizationId, id) =>
      attempt("basicReplies.findById", async () =>
        Option.map(Option.fromNullable(await db.sql.row<ReplyRow>(SQL.findById, [organizationId, id])), decodeReply)
      ),
    findByTrigger: (organizationId, text) =>
      attempt("basicReplies.findByTrigger", async () =>
        Option.map(Option.fromNullable(await db.sql.row<ReplyRow>(SQL.findByTrigger, [organizationId, nameKey(text)])), decodeReply)
      ),
    list: (organizationId, page) =>
      attempt("basicReplies.list", () =>
        db.snapshot(async (sql) => ({
          items: (await sql.rows<ReplyRow>(SQL.page, [organizationId, ...pageBounds(page)])).map(decodeReply),
          total: (await sql.row<{ count: number }>(SQL.count, [organizationId]))?.count ?? 0
        }))
      )
  }
}

/** A row of `basic_replies` (every column but `organization_id` and `trigger_key`). */
type ReplyRow = Omit<BasicReply, "uuid"> & { readonly uuid: string }

// `trigger` is an SQL keyword: quoted wherever it names the column.
const COLUMNS = `uuid, name, "trigger", response, created_at, updated_at`

/** The statements of this repository on `schema` (quoted). */
const statements = (schema: string) =>
  ({
    insert: `INSERT INTO ${schema}.basic_replies
        (uuid, organization_id, name, "trigger", trigger_key, response, created_at, updated_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (organization_id, trigger_key) DO NOTHING`,
    findById: `SELECT ${COLUMNS} FROM ${schema}.basic_replies WHERE organization_id = $1 AND uuid = $2`,
    findByTrigger: `SELECT ${COLUMNS} FROM ${schema}.basic_replies WHERE organization_id = $1 AND trigger_key = $2`,
    page: `SELECT ${COLUMNS} FROM ${schema}.basic_replies WHERE organization_id = $1
      ORDER BY created_at DESC, uuid DESC LIMIT $2 OFFSET $3`,
    count: `SELECT COUNT(*) AS count FROM ${schema}.basic_replies WHERE organization_id = $1`
  }) as const

/** A reply record from its row. */
const decodeReply = (row: ReplyRow): BasicReply => ({
  uuid: row.uuid as BasicReplyId,
  name: row.name,
  trigger: row.trigger,
  response: row.response,
  created_at: row.created_at,
  updated_at: row.updated_at
})

import { Option } from "effect"
import {
  type BasicReplyCreateOutcome,
  type BasicReplyRepository,
  nameKey,
  type OrganizationId
} from "@switchboard/core"
import { decodeReply, REPLY_COLUMN_NAMES, type ReplyRow } from "@switchboard/storage-sql"
import { attempt, oneQueryPerTurn, pageBounds, type RepositoryFactory } from "../internal/sql.js"

/**
 * `Storage.basicReplies` on PostgreSQL: table `basic_replies` (schema/catalog.ts); triggers
 * unique per organization by `trigger_key` (core's `nameKey`, a UNIQUE constraint), so
 * `create` is one statement (`ON CONFLICT DO NOTHING`) that cannot race another writer into
 * a duplicate, and `findByTrigger` one index look-up (the look-ups of one event-loop turn
 * in one statement). `list` reads a page and its total in one snapshot.
 *
 * @category repositories
 */
export const basicReplyRepository: RepositoryFactory<BasicReplyRepository> = (db) => {
  const SQL = statements(db.schema)
  // The look-ups asked during one turn of the event loop (an inbound text each) are one
  // statement: one index probe per look-up, in the order asked.
  const findAtEndOfTurn = oneQueryPerTurn(
    "basicReplies.findByTrigger",
    async (requests: ReadonlyArray<{ readonly organizationId: OrganizationId; readonly key: string }>) => {
      const rows = await db.sql.rows<ReplyRow & { readonly n: number }>(SQL.findByTriggers, [
        requests.map((request) => request.organizationId),
        requests.map((request) => request.key)
      ])
      const byRequest = new Map(rows.map(({ n, ...row }) => [n, decodeReply(row)]))
      return requests.map((_, index) => Option.fromNullable(byRequest.get(index + 1)))
    }
  )
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
    findByTrigger: (organizationId, text) => findAtEndOfTurn({ organizationId, key: nameKey(text) }),
    list: (organizationId, page) =>
      attempt("basicReplies.list", () =>
        db.snapshot(async (sql) => ({
          items: (await sql.rows<ReplyRow>(SQL.page, [organizationId, ...pageBounds(page)])).map(decodeReply),
          total: (await sql.row<{ count: number }>(SQL.count, [organizationId]))?.count ?? 0
        }))
      )
  }
}

// `trigger` is an SQL keyword: quoted wherever it names the column.
const COLUMNS = REPLY_COLUMN_NAMES.join(", ")
/** {@link COLUMNS} of the table aliased `r`. */
const REPLY_COLUMNS = REPLY_COLUMN_NAMES.map((name) => `r.${name}`).join(", ")

/** The statements of this repository on `schema` (quoted). */
const statements = (schema: string) =>
  ({
    insert: `INSERT INTO ${schema}.basic_replies
        (uuid, organization_id, name, "trigger", trigger_key, response, created_at, updated_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (organization_id, trigger_key) DO NOTHING`,
    findById: `SELECT ${COLUMNS} FROM ${schema}.basic_replies WHERE organization_id = $1 AND uuid = $2`,
    findByTriggers: `SELECT q.n::int AS n, ${REPLY_COLUMNS}
      FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS q (organization_id, trigger_key, n)
      JOIN ${schema}.basic_replies r ON r.organization_id = q.organization_id AND r.trigger_key = q.trigger_key`,
    page: `SELECT ${COLUMNS} FROM ${schema}.basic_replies WHERE organization_id = $1
      ORDER BY created_at DESC, uuid DESC LIMIT $2 OFFSET $3`,
    count: `SELECT COUNT(*) AS count FROM ${schema}.basic_replies WHERE organization_id = $1`
  }) as const

import { type ChatListMergeRow, type ChatListPlan, type ChatListStatement, mergeChatList } from "@switchboard/storage-sql"
import type { Chat } from "@switchboard/core"
import type { Sql } from "../internal/sql.js"
import { chatsByIds, chatsOfPage } from "./chatRows.js"

// The chat list on PostgreSQL (docs/chats.md "Storage", docs/benchmarks.md): planned by
// @switchboard/storage-sql's planner through the store's dialect (dialect.ts: `-infinity`
// for a chat without messages, the `LIKE` search on the trigram index, `OFFSET 0` fences,
// `keysetImplied`), run here asynchronously.

export { PROBE_ROWS } from "@switchboard/storage-sql"

/**
 * Runs a plan: the probe when it fills the page, else the exact query; or every part of a
 * merge, merged in sort order. Row ids of the page, in order.
 */
export const runChatList = async (sql: Sql, plan: ChatListPlan): Promise<ReadonlyArray<number>> => {
  if (plan._tag === "Merge") {
    const parts: Array<ReadonlyArray<ChatListMergeRow>> = []
    for (const part of plan.parts) parts.push(await sql.rows<ChatListMergeRow>(part.sql, part.params))
    return mergeChatList(plan, parts)
  }
  const ids = async (statement: ChatListStatement) =>
    (await sql.rows<{ id: number }>(statement.sql, statement.params)).map((row) => Number(row.id))
  if (plan.probe !== undefined) {
    const probed = await ids(plan.probe)
    if (probed.length === plan.limit) return probed
  }
  return ids(plan.exact)
}

/**
 * The chat records of a plan's page, in order: a `Single` plan without a probe in one
 * statement ({@link chatsOfPage}: needs no transaction for one snapshot); any other plan
 * by {@link runChatList}, then {@link chatsByIds} (run it inside `db.snapshot`).
 */
export const chatsOfList = async (sql: Sql, schema: string, plan: ChatListPlan): Promise<Array<Chat>> =>
  oneStatement(plan) ? chatsOfPage(sql, schema, plan.exact) : chatsByIds(sql, schema, await runChatList(sql, plan))

/** Whether {@link chatsOfList} reads the plan's page in one statement (then no transaction is needed around it). */
export const oneStatement = (plan: ChatListPlan): plan is Extract<ChatListPlan, { _tag: "Single" }> =>
  plan._tag === "Single" && plan.probe === undefined

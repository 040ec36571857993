import { chatListPlannerOf, type ChatListPlan, type ChatListStatement, mergeChatList, type ChatListMergeRow } from "@switchboard/storage-sql"
import { sqliteDialect } from "../dialect.js"
import type { Statements } from "../internal/sql.js"

// The chat list on SQLite (docs/chats.md "Storage", docs/benchmarks.md): planned by
// @switchboard/storage-sql's planner through SQLite's dialect (dialect.ts: its index hints
// and FTS5 trigram search), run here synchronously.

export { type ChatListPlan, type ChatListStatement, type ChatListWindow, PROBE_ROWS } from "@switchboard/storage-sql"

const planner = chatListPlannerOf(sqliteDialect)

/** The plan of one page of the chats matching `filters` in `sort` order. */
export const planChatList = planner.list

/** The `COUNT(*)` of the chats matching `filters` (offset pagination's total). */
export const planChatCount = planner.count

/**
 * Runs a plan: the probe when it fills the page, else the exact query; or every part of a
 * merge, merged in sort order. Row ids of the page, in order.
 */
export const runChatList = (statements: Statements, plan: ChatListPlan): ReadonlyArray<number> => {
  if (plan._tag === "Merge") {
    return mergeChatList(plan, plan.parts.map((part) => statements.prepare<ChatListMergeRow>(part.sql).all(...part.params)))
  }
  const ids = (statement: ChatListStatement) =>
    statements.prepare<number>(statement.sql).pluck().all(...statement.params) as Array<number>
  if (plan.probe !== undefined) {
    const probed = ids(plan.probe)
    if (probed.length === plan.limit) return probed
  }
  return ids(plan.exact)
}

import { describe, expect, it } from "@effect/vitest"
import Sqlite from "better-sqlite3"
import { Effect } from "effect"
import { type ChatFilters, type ChatId, type ChatSort, type GroupId, type LabelId, type OrganizationId, Storage } from "@switchboard/core"
import { fixtures } from "@switchboard/storage-contract"
import { SqliteStorage } from "@switchboard/storage-sqlite"
import { type ChatListPlan, type ChatListStatement, planChatCount, planChatList, PROBE_ROWS } from "../src/repositories/chatList.js"
import { MESSAGE_PAGE_SQL } from "../src/repositories/chatRows.js"
import { SQL as CHATS } from "../src/repositories/chats.js"
import { SQL as STATUS } from "../src/repositories/messageStatus.js"

// docs/chats.md "Storage": every filter and every cursor page of GET /chats is answered from an index,
// never a scan of the chats table. EXPLAIN QUERY PLAN shows how SQLite runs each statement
// of each plan (chatList.ts), on the real schema of migration 4.

const ORG = fixtures.organization().id as OrganizationId
const GROUPS = [fixtures.uuid(), fixtures.uuid()] as Array<GroupId>
const LABELS = [fixtures.uuid()] as Array<LabelId>

/** One filter at a time (docs/benchmarks.md), then a few combinations. */
const SINGLE: ReadonlyArray<readonly [string, ChatFilters]> = [
  ["none", {}],
  ["status", { status: "open" }],
  ["assigned_to user", { assignedTo: "user-1" }],
  ["assigned_to unassigned", { assignedTo: null }],
  ["favorite", { favorite: true }],
  ["unread", { unread: false }],
  ["date_from", { lastMessageFrom: "2026-03-01T00:00:00.000Z" }],
  ["date_to", { lastMessageTo: "2026-03-01T23:59:59.999Z" }],
  ["group_uuid", { groupIds: GROUPS }],
  ["tag_uuid", { labelIds: LABELS }],
  ["search", { search: "lovelace" }],
  ["search of 2 characters", { search: "lo" }]
]
const COMBINED: ReadonlyArray<readonly [string, ChatFilters]> = [
  ["status + favorite", { status: "open", favorite: true }],
  ["status + date range", { status: "closed", lastMessageFrom: "2026-03-01T00:00:00.000Z", lastMessageTo: "2026-03-02T00:00:00.000Z" }],
  ["group + search", { groupIds: GROUPS, search: "ada" }],
  ["tag + unread + assigned", { labelIds: LABELS, unread: true, assignedTo: "user-2" }]
]
const SORTS: ReadonlyArray<ChatSort> = (["last_message_at", "created_at", "updated_at"] as const).flatMap((by) =>
  (["desc", "asc"] as const).map((order) => ({ by, order }))
)
const AFTER = { value: "2026-03-01T12:00:00.000Z", uuid: fixtures.uuid() as ChatId }

/** A migrated database with the repository's SQL function registered. */
const openDatabase = Effect.gen(function* () {
  const db = new Sqlite(":memory:")
  yield* Effect.provide(Storage, SqliteStorage.layerFromClient(db))
  return db
})

/** Every statement a plan may run. */
const statementsOf = (plan: ChatListPlan): ReadonlyArray<ChatListStatement> =>
  plan._tag === "Merge" ? plan.parts : plan.probe === undefined ? [plan.exact] : [plan.probe, plan.exact]

/** The plan, which must be a `Single` one. */
const single = (plan: ChatListPlan) => {
  if (plan._tag !== "Single") throw new Error(`expected a Single plan, got ${plan._tag}`)
  return plan
}

const planOf = (db: Sqlite.Database, statement: ChatListStatement): Array<string> =>
  db
    .prepare<Array<unknown>, { detail: string }>(`EXPLAIN QUERY PLAN ${statement.sql}`)
    .all(...statement.params)
    .map((row) => row.detail)

/** No line reads the chats table or one of its indexes without a constraint. */
const expectNoChatsScan = (lines: ReadonlyArray<string>, label: string) => {
  for (const line of lines) {
    expect(line, `${label}: ${lines.join(" | ")}`).not.toMatch(/^SCAN (c|chats)\b/)
    if (/^SEARCH c /.test(line)) {
      expect(line, label).toMatch(
        /^SEARCH c USING ((COVERING )?INDEX chats_by_\w+ \(organization_id=\?|INTEGER PRIMARY KEY|INDEX sqlite_autoindex_chats_\d \(contact_uuid=\?\))/
      )
    }
  }
}

/** Whether a filter is served by one index range in sort order (chatList.ts "direct"). */
const isDirect = (filters: ChatFilters, sort: ChatSort): boolean => {
  const eq = [filters.status, filters.assignedTo, filters.favorite, filters.unread].filter((v) => v !== undefined).length
  const dates = filters.lastMessageFrom !== undefined || filters.lastMessageTo !== undefined
  const residual = filters.search !== undefined || filters.groupIds !== undefined || filters.labelIds !== undefined
  return !residual && (sort.by === "last_message_at" ? eq <= 1 : eq === 0 && !dates)
}

describe("chat list query plans (EXPLAIN QUERY PLAN)", () => {
  it.effect("no statement of any filter, sort or page scans the chats table", () =>
    Effect.gen(function* () {
      const db = yield* openDatabase
      for (const [name, filters] of [...SINGLE, ...COMBINED]) {
        for (const sort of SORTS) {
          for (const window of [{ after: null, offset: 0, limit: 21 }, { after: AFTER, offset: 0, limit: 21 }, { after: null, offset: 40, limit: 20 }]) {
            const plan = planChatList(ORG, filters, sort, window)
            const label = `${name}, ${sort.by} ${sort.order}, ${window.after === null ? `offset ${window.offset}` : "cursor"}`
            for (const statement of statementsOf(plan)) expectNoChatsScan(planOf(db, statement), label)
          }
        }
        expectNoChatsScan(planOf(db, planChatCount(ORG, filters)), `${name}, count`)
      }
      db.close()
    }))

  it.effect("a direct filter's cursor page is one index range positioned by (key, uuid): no sort, cost independent of depth", () =>
    Effect.gen(function* () {
      const db = yield* openDatabase
      for (const [name, filters] of SINGLE) {
        for (const sort of SORTS.filter((sort) => isDirect(filters, sort))) {
          const plan = single(planChatList(ORG, filters, sort, { after: AFTER, offset: 0, limit: 21 }))
          const lines = planOf(db, plan.exact)
          const label = `${name}, ${sort.by} ${sort.order}: ${lines.join(" | ")}`
          expect(plan.probe, label).toBeUndefined()
          expect(lines, label).toHaveLength(1)
          const comparison = sort.order === "desc" ? "<" : ">"
          expect(lines[0], label).toContain(`(${sort.by},uuid)${comparison}(?,?)`)
          // Covering except for `unread`, a generated column SQLite reads from the row.
          expect(lines[0], label).toMatch(/^SEARCH c USING (COVERING )?INDEX chats_by_/)
        }
      }
      db.close()
    }))

  it.effect("the other filters start from their own index: trigram FTS, group and label links, equality and date ranges", () =>
    Effect.gen(function* () {
      const db = yield* openDatabase
      const sort: ChatSort = { by: "created_at", order: "desc" }
      const window = { after: AFTER, offset: 0, limit: 21 }
      const sources: ReadonlyArray<readonly [ChatFilters, RegExp]> = [
        [{ search: "lovelace" }, /^SCAN s VIRTUAL TABLE INDEX \d+:M/],
        [{ groupIds: GROUPS }, /^SEARCH group_members USING (COVERING INDEX|PRIMARY KEY)/],
        [{ labelIds: LABELS }, /^SEARCH contact_labels USING (COVERING INDEX|PRIMARY KEY)/],
        [{ status: "open" }, /^SEARCH c USING (COVERING )?INDEX chats_by_status \(organization_id=\? AND status=\?\)/],
        [{ lastMessageFrom: "2026-03-01T00:00:00.000Z" }, /^SEARCH c USING (COVERING )?INDEX chats_by_last_message_at \(organization_id=\? AND last_message_at>\?\)/]
      ]
      for (const [filters, source] of sources) {
        const plan = single(planChatList(ORG, filters, sort, window))
        const lines = planOf(db, plan.exact)
        expect(lines.some((line) => source.test(line)), `${JSON.stringify(filters)}: ${lines.join(" | ")}`).toBe(true)
        // The probe reads at most PROBE_ROWS entries of the sort index from the position.
        const probe = planOf(db, plan.probe!)
        expect(plan.probe!.sql).toContain(`LIMIT ${PROBE_ROWS})`)
        expect(probe.some((line) => line.includes("chats_by_created_at (organization_id=? AND (created_at,uuid)<(?,?))")), probe.join(" | ")).toBe(true)
      }
      db.close()
    }))

  it.effect("a group or tag filter sorted by last_message_at is one range of chat_links per uuid, positioned by the cursor", () =>
    Effect.gen(function* () {
      const db = yield* openDatabase
      for (const [filters, kind] of [[{ groupIds: GROUPS }, "group"], [{ labelIds: LABELS }, "label"], [{ groupIds: GROUPS, labelIds: LABELS, status: "open" }, "group"]] as const) {
        for (const order of ["desc", "asc"] as const) {
          const plan = planChatList(ORG, filters, { by: "last_message_at", order }, { after: AFTER, offset: 0, limit: 21 })
          if (plan._tag !== "Merge") throw new Error(`expected a Merge plan for ${JSON.stringify(filters)}`)
          expect(plan.parts).toHaveLength(kind === "group" ? GROUPS.length : LABELS.length)
          for (const part of plan.parts) {
            const lines = planOf(db, part)
            const label = `${JSON.stringify(filters)} ${order}: ${lines.join(" | ")}`
            expect(part.params.slice(0, 2), label).toEqual([kind, kind === "group" ? GROUPS[plan.parts.indexOf(part)] : LABELS[0]])
            expect(lines[0], label).toBe(`SEARCH l USING PRIMARY KEY (kind=? AND link_uuid=? AND (last_message_at,uuid)${order === "desc" ? "<" : ">"}(?,?))`)
            expect(lines[1], label).toBe("SEARCH c USING INTEGER PRIMARY KEY (rowid=?)")
            expect(lines.join(" "), label).not.toContain("TEMP B-TREE")
          }
        }
      }
      db.close()
    }))
})

describe("a chat's message pages (EXPLAIN QUERY PLAN)", () => {
  it.effect("the first page and every later one are one range of messages_by_chat, in index order: no sort, cost independent of depth", () =>
    Effect.gen(function* () {
      const db = yield* openDatabase
      const first = db.prepare<Array<unknown>, { detail: string }>(`EXPLAIN QUERY PLAN ${MESSAGE_PAGE_SQL.first}`).all(fixtures.uuid(), 21).map((row) => row.detail)
      expect(first).toEqual(["SEARCH messages USING INDEX messages_by_chat (chat_uuid=?)"])
      const after = db
        .prepare<Array<unknown>, { detail: string }>(`EXPLAIN QUERY PLAN ${MESSAGE_PAGE_SQL.after}`)
        .all(fixtures.uuid(), "2026-03-01T12:00:00.000Z", fixtures.uuid(), 21)
        .map((row) => row.detail)
      expect(after).toEqual(["SEARCH messages USING INDEX messages_by_chat (chat_uuid=? AND (created_at,uuid)<(?,?))"])
      db.close()
    }))
})

describe("provider status reports, one message and the last inbound channel (EXPLAIN QUERY PLAN)", () => {
  const cases: ReadonlyArray<readonly [string, string, ReadonlyArray<unknown>, ReadonlyArray<string>]> = [
    [
      "one message of an organization by uuid (GET /messages/{uuid})",
      CHATS.message,
      [ORG, fixtures.uuid()],
      ["SEARCH messages USING INDEX sqlite_autoindex_messages_1 (uuid=?)"]
    ],
    [
      "the outbound message of a provider id",
      CHATS.outboundByProviderId,
      [ORG, "wamid.1"],
      ["SEARCH messages USING INDEX messages_by_provider_id (organization_id=? AND direction=? AND provider_message_id=?)"]
    ],
    [
      "the pending reports of a provider id, in arrival order",
      STATUS.pendingOf,
      [ORG, "wamid.1"],
      ["SEARCH pending_message_statuses USING INDEX pending_message_statuses_by_provider_id (organization_id=? AND provider_message_id=?)"]
    ],
    [
      "deleting the pending reports of a provider id",
      STATUS.deletePendingOf,
      [ORG, "wamid.1"],
      ["SEARCH pending_message_statuses USING COVERING INDEX pending_message_statuses_by_provider_id (organization_id=? AND provider_message_id=?)"]
    ],
    [
      "pruning the reports past pending_until",
      CHATS.prunePending,
      ["2026-03-01T12:00:00.000Z"],
      ["SEARCH pending_message_statuses USING COVERING INDEX pending_message_statuses_by_pending_until (pending_until<?)"]
    ],
    [
      "the last inbound channel of a contact",
      CHATS.lastInboundChannel,
      [ORG, fixtures.uuid()],
      [
        "SEARCH messages USING INDEX messages_by_chat (chat_uuid=?)",
        "SCALAR SUBQUERY 1",
        "SEARCH chats USING INDEX sqlite_autoindex_chats_2 (contact_uuid=?)"
      ]
    ],
    [
      "the latest inbound message of a chat (a read receipt's)",
      CHATS.latestInboundMessage,
      [fixtures.uuid(), ORG],
      ["SEARCH messages USING INDEX messages_by_chat (chat_uuid=?)"]
    ]
  ]
  for (const [name, sql, params, expected] of cases) {
    it.effect(`${name}: one index range, no scan and no sort`, () =>
      Effect.gen(function* () {
        const db = yield* openDatabase
        const plan = db.prepare<Array<unknown>, { detail: string }>(`EXPLAIN QUERY PLAN ${sql}`).all(...params).map((row) => row.detail)
        expect(plan, name).toEqual(expected)
        db.close()
      }))
  }
})

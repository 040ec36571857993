import type { ChatFilters, ChatId, ChatPosition, ChatSort, GroupId, LabelId } from "@switchboard/core"

// The chat-list cases whose SQL text and parameters are held to the goldens beside this file
// (chat-list.sqlite.json, chat-list.postgres.json): every filter alone and combined, every
// sort and direction, positions inside, above and below the date bounds, a position without
// a message, offsets around the probe's limit, and the counts. The goldens were captured
// from the two planners as they were before they were written once; the shared planner must
// reproduce them exactly, so no query plan changes unnoticed.

/** One page to plan: its filters, sort and window. */
export interface ListCase {
  readonly name: string
  readonly filters: ChatFilters
  readonly sort: ChatSort
  readonly window: { readonly after: ChatPosition | null; readonly offset: number; readonly limit: number }
}

/** One total to plan: its filters. */
export interface CountCase {
  readonly name: string
  readonly filters: ChatFilters
}

/** The organization every case plans for. */
export const ORGANIZATION = "org_golden"

/** The schema name the PostgreSQL cases name (quoted as the store quotes it). */
export const SCHEMA = '"switchboard"'

const uuid = "chat-0000-golden" as ChatId
const at = (value: string | null): ChatPosition => ({ value, uuid })
const groups = ["grp-a", "grp-b"] as ReadonlyArray<string> as ReadonlyArray<GroupId>
const labels = ["lbl-a", "lbl-b", "lbl-c"] as ReadonlyArray<string> as ReadonlyArray<LabelId>
const FROM = "2026-01-01T00:00:00.000Z"
const TO = "2026-02-01T00:00:00.000Z"
const INSIDE = "2026-01-15T12:00:00.000Z"
const ABOVE = "2026-03-01T00:00:00.000Z"
const BELOW = "2025-12-01T00:00:00.000Z"

const desc = (by: ChatSort["by"]): ChatSort => ({ by, order: "desc" })
const asc = (by: ChatSort["by"]): ChatSort => ({ by, order: "asc" })
const first = { after: null, offset: 0, limit: 20 }
const after = (value: string | null) => ({ after: at(value), offset: 0, limit: 20 })
const offset = (n: number) => ({ after: null, offset: n, limit: 20 })

const list = (name: string, filters: ChatFilters, sort: ChatSort, window: ListCase["window"]): ListCase => ({
  name,
  filters,
  sort,
  window
})

/** The list cases. */
export const LIST_CASES: ReadonlyArray<ListCase> = [
  list("no filter, last_message_at desc", {}, desc("last_message_at"), first),
  list("no filter, last_message_at asc", {}, asc("last_message_at"), first),
  list("no filter, created_at desc", {}, desc("created_at"), first),
  list("no filter, created_at asc", {}, asc("created_at"), first),
  list("no filter, updated_at desc", {}, desc("updated_at"), first),
  list("no filter, updated_at asc after a position", {}, asc("updated_at"), after(INSIDE)),
  list("no filter, last_message_at desc after a position", {}, desc("last_message_at"), after(INSIDE)),
  list("no filter, last_message_at asc after no message", {}, asc("last_message_at"), after(null)),
  list("no filter, last_message_at desc after no message", {}, desc("last_message_at"), after(null)),
  list("no filter, offset 40", {}, desc("last_message_at"), offset(40)),
  list("status", { status: "open" }, desc("last_message_at"), first),
  list("status, created_at desc", { status: "closed" }, desc("created_at"), first),
  list("assigned to someone", { assignedTo: "agent-7" }, desc("last_message_at"), after(INSIDE)),
  list("assigned to no one", { assignedTo: null }, asc("last_message_at"), first),
  list("favorite", { favorite: true }, desc("last_message_at"), first),
  list("not favorite, updated_at asc", { favorite: false }, asc("updated_at"), first),
  list("unread", { unread: true }, desc("last_message_at"), first),
  list("read", { unread: false }, desc("created_at"), after("2026-01-03T00:00:00.000Z")),
  list("status and favorite", { status: "open", favorite: true }, desc("last_message_at"), first),
  list("status, assignee, unread, created_at asc", { status: "open", assignedTo: "a", unread: true }, asc("created_at"), first),
  list("status and unread, offset past the probe", { status: "open", unread: true }, desc("last_message_at"), offset(1990)),
  list("from", { lastMessageFrom: FROM }, desc("last_message_at"), first),
  list("to", { lastMessageTo: TO }, desc("last_message_at"), first),
  list("from and to", { lastMessageFrom: FROM, lastMessageTo: TO }, desc("last_message_at"), first),
  list("from and to, desc after inside", { lastMessageFrom: FROM, lastMessageTo: TO }, desc("last_message_at"), after(INSIDE)),
  list("from and to, desc after above", { lastMessageFrom: FROM, lastMessageTo: TO }, desc("last_message_at"), after(ABOVE)),
  list("from and to, asc after inside", { lastMessageFrom: FROM, lastMessageTo: TO }, asc("last_message_at"), after(INSIDE)),
  list("from and to, asc after below", { lastMessageFrom: FROM, lastMessageTo: TO }, asc("last_message_at"), after(BELOW)),
  list("to, asc after no message", { lastMessageTo: TO }, asc("last_message_at"), after(null)),
  list("to, desc after no message", { lastMessageTo: TO }, desc("last_message_at"), after(null)),
  list("from, asc after inside", { lastMessageFrom: FROM }, asc("last_message_at"), after(INSIDE)),
  list("from and to, created_at desc", { lastMessageFrom: FROM, lastMessageTo: TO }, desc("created_at"), first),
  list("from and status, updated_at asc after", { lastMessageFrom: FROM, status: "open" }, asc("updated_at"), after(INSIDE)),
  list("search of two characters", { search: "ab" }, desc("last_message_at"), first),
  list("search of three characters", { search: "abc" }, desc("last_message_at"), first),
  list("search with quotes and wildcards", { search: 'a"b%c_d\\e' }, asc("created_at"), after(INSIDE)),
  list("search of one non-ASCII character pair", { search: "éü" }, desc("last_message_at"), first),
  list("search and status", { search: "hello", status: "open" }, desc("updated_at"), first),
  list("groups, last_message_at desc", { groupIds: groups }, desc("last_message_at"), first),
  list("groups, last_message_at asc after", { groupIds: groups }, asc("last_message_at"), after(INSIDE)),
  list("groups, created_at desc", { groupIds: groups }, desc("created_at"), first),
  list("labels, last_message_at desc with offset", { labelIds: labels }, desc("last_message_at"), offset(10)),
  list("labels, updated_at asc", { labelIds: labels }, asc("updated_at"), after(INSIDE)),
  list("groups and labels and status", { groupIds: groups, labelIds: labels, status: "open" }, desc("last_message_at"), first),
  list("groups and dates, desc after", { groupIds: groups, lastMessageFrom: FROM, lastMessageTo: TO }, desc("last_message_at"), after(INSIDE)),
  list("labels and search and unread", { labelIds: labels, search: "xyz", unread: true }, desc("created_at"), first),
  list("everything", {
    search: "abcd",
    status: "open",
    assignedTo: "agent",
    groupIds: groups,
    labelIds: labels,
    favorite: true,
    unread: false,
    lastMessageFrom: FROM,
    lastMessageTo: TO
  }, desc("last_message_at"), after(INSIDE)),
  list("everything but groups, created_at asc", {
    search: "abcd",
    status: "open",
    assignedTo: null,
    labelIds: labels,
    favorite: false,
    unread: true,
    lastMessageFrom: FROM,
    lastMessageTo: TO
  }, asc("created_at"), offset(5))
]

/** The count cases. */
export const COUNT_CASES: ReadonlyArray<CountCase> = [
  { name: "no filter", filters: {} },
  { name: "status", filters: { status: "open" } },
  { name: "assigned to no one and unread", filters: { assignedTo: null, unread: true } },
  { name: "dates", filters: { lastMessageFrom: FROM, lastMessageTo: TO } },
  { name: "to only", filters: { lastMessageTo: TO } },
  { name: "search of two", filters: { search: "ab" } },
  { name: "search of three", filters: { search: "abc" } },
  { name: "groups", filters: { groupIds: groups } },
  { name: "labels and favorite", filters: { labelIds: labels, favorite: true } },
  { name: "groups, labels, search", filters: { groupIds: groups, labelIds: labels, search: "abcd" } }
]

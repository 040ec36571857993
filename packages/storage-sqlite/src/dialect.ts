import type { ChatFilters, ChatPosition, ChatSort } from "@switchboard/core"
import { decodersOf, type Fragment, fragment, outcomeRowOf, type SqlDialect, type SqlValues, statusMoveOf } from "@switchboard/storage-sql"

/** Name of the SQL function the chat repository registers for search matching (core's rule). */
export const SEARCH_FUNCTION = "switchboard_chat_search"

/** SQLite's values: booleans as `1`/`0`, JSON columns as text, lists as one JSON array read by `json_each(?)`. */
export const sqliteValues: SqlValues = {
  boolean: (value) => (value ? 1 : 0),
  readBoolean: (value) => value !== 0,
  readJson: (value) => (value === null || value === undefined ? null : JSON.parse(value as string)),
  json: (value) => (value === null || value === undefined ? null : JSON.stringify(value)),
  sameJson: (a, b) => a === b,
  list: (values) => JSON.stringify(values)
}

const SORT_INDEX = {
  last_message_at: "chats_by_last_message_at",
  created_at: "chats_by_created_at",
  updated_at: "chats_by_updated_at"
} as const

const EQ_INDEX = {
  status: "chats_by_status",
  assignedTo: "chats_by_assigned_to",
  favorite: "chats_by_favorite",
  unread: "chats_by_unread"
} as const

/**
 * SQLite's dialect (`@switchboard/storage-sql`): `?` placeholders, unqualified tables, the
 * chat list's index hints (SQLite's planner would rather walk another index) and its FTS5
 * trigram search.
 */
export const sqliteDialect: SqlDialect = {
  ...sqliteValues,
  name: "sqlite",
  placeholder: () => "?",
  table: (name) => name,
  true: "1",
  cast: () => "?",
  inList: (expression) => `${expression} IN (SELECT value FROM json_each(?))`,
  orderedJoin: "CROSS JOIN",
  subqueryFence: "",
  chatList: {
    // `''` (no message) is below "0", which is below every timestamp.
    noMessage: "",
    sortValue: (column) => column,
    dateBounds: (filters, sort, after) => dateBounds(filters, sort, after),
    keysetImplied: () => false,
    searchCondition: (term) => fragment(`${SEARCH_FUNCTION}(c.search_text, ?)`, term),
    // CROSS JOIN keeps the trigram index the outer loop (SQLite would rather walk the sort
    // index and ask FTS row by row: a scan of the organization for a rare term).
    searchSource: (term) => ({
      from: "chat_search AS s CROSS JOIN chats AS c ON c.id = s.rowid",
      params: [],
      first: [fragment("chat_search MATCH ?", `"${term.replace(/"/g, '""')}"`)],
      recheck: true
    }),
    sortIndexHint: (by) => ` INDEXED BY ${SORT_INDEX[by]}`,
    equalityIndexHint: (filter) => ` INDEXED BY ${EQ_INDEX[filter]}`
  }
}

/**
 * The date bounds on `c.last_message_at`; a bound the position implies (sorting by
 * last_message_at, on the side the list comes from) is left out. `''` (no message) is below
 * `"0"`, the lower bound when only an upper one is given.
 */
const dateBounds = (filters: ChatFilters, sort: ChatSort, after: ChatPosition | null): ReadonlyArray<Fragment> => {
  if (filters.lastMessageFrom === undefined && filters.lastMessageTo === undefined) return []
  const from = filters.lastMessageFrom ?? "0"
  const to = filters.lastMessageTo
  const position = after !== null && sort.by === "last_message_at" ? (after.value ?? "") : undefined
  const impliedFrom = position !== undefined && sort.order === "asc" && position >= from
  const impliedTo = position !== undefined && sort.order === "desc" && to !== undefined && position <= to
  const dates: Array<Fragment> = []
  if (!impliedFrom) dates.push(fragment("c.last_message_at >= ?", from))
  if (to !== undefined && !impliedTo) dates.push(fragment("c.last_message_at <= ?", to))
  return dates
}

/** The row decoders of SQLite's values (`@switchboard/storage-sql`), built once. */
export const decoders = decodersOf(sqliteValues)

/** The status moves of rows as SQLite holds them (failures as JSON text), built once. */
export const statusMove = statusMoveOf(sqliteValues)

/** The rows of send attempts' outcomes as SQLite holds them, built once. */
export const outcomeRow = outcomeRowOf(sqliteValues)

import type { ChatFilters, ChatPosition, ChatSort } from "@switchboard/core"
import { decodersOf, type Fragment, fragment, jsonOrNull, outcomeRowOf, type SqlDialect, type SqlValues, statusMoveOf } from "@switchboard/storage-sql"

/** PostgreSQL's values as `pg` answers them: booleans, `json` columns parsed, lists as driver arrays. */
export const postgresValues: SqlValues = {
  boolean: (value) => value,
  readBoolean: (value) => value as boolean,
  readJson: (value) => value ?? null,
  json: (value) => value ?? null,
  sameJson: (a, b) => jsonOrNull(a) === jsonOrNull(b),
  list: (values) => values
}

/**
 * PostgreSQL's dialect over the schema `schema` (quoted, `"switchboard"`): `$n`
 * placeholders, schema-qualified tables, casts, `= ANY(?::text[])` lists, `OFFSET 0`
 * fences, and the chat list's `-infinity` for a chat without messages and its `LIKE`
 * search on the trigram index.
 */
export const postgresDialect = (schema: string): SqlDialect => ({
  ...postgresValues,
  name: "postgres",
  placeholder: (position) => `$${position}`,
  table: (name) => `${schema}.${name}`,
  true: "true",
  cast: (type) => `?::${type}`,
  inList: (expression) => `${expression} = ANY(?::text[])`,
  orderedJoin: "JOIN",
  subqueryFence: " OFFSET 0",
  chatList: {
    noMessage: "-infinity",
    sortValue: (column) => `NULLIF(${column}, '-infinity')`,
    dateBounds,
    keysetImplied,
    // Search matches `search_text` (stored lowercased, schema/chats.ts) by `LIKE '%term%'`:
    // a case-insensitive substring, as core's `chatSearchMatches`.
    searchCondition: (term) => fragment("c.search_text LIKE ?", containing(term)),
    // OFFSET 0 keeps the trigram index the source (else the planner, which cannot
    // estimate a substring's rarity, may walk the sort index: a scan of the organization),
    // and the matching rows come whole from it (no join back to chats).
    searchSource: (term) => ({
      from: `(SELECT * FROM ${schema}.chats WHERE search_text LIKE ? OFFSET 0) AS c`,
      params: [containing(term)],
      first: [],
      recheck: false
    }),
    sortIndexHint: () => "",
    equalityIndexHint: () => ""
  }
})

/** `%term%` for `LIKE`, the term's `%`, `_` and `\` escaped. */
const containing = (term: string): string => `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`

/**
 * The date bounds on `c.last_message_at`; a bound the position implies (sorting by
 * last_message_at, on the side the list comes from) is left out. `-infinity` (no message)
 * matches neither bound.
 */
const dateBounds = (filters: ChatFilters, sort: ChatSort, after: ChatPosition | null): ReadonlyArray<Fragment> => {
  if (filters.lastMessageFrom === undefined && filters.lastMessageTo === undefined) return []
  const from = filters.lastMessageFrom
  const to = filters.lastMessageTo
  // The position's value; null = -infinity (below every instant).
  const position = after !== null && sort.by === "last_message_at" ? after.value : undefined
  const impliedFrom =
    position !== undefined && position !== null && sort.order === "asc" && (from === undefined || position >= from)
  const impliedTo = position !== undefined && sort.order === "desc" && to !== undefined && (position === null || position <= to)
  const dates: Array<Fragment> = []
  if (!impliedFrom) {
    dates.push(from === undefined ? fragment("c.last_message_at > '-infinity'") : fragment("c.last_message_at >= ?::timestamptz", from))
  }
  if (to !== undefined && !impliedTo) dates.push(fragment("c.last_message_at <= ?::timestamptz", to))
  return dates
}

/**
 * Whether the date bounds alone keep the list after the position (sorting by
 * last_message_at: descending from a position above `lastMessageTo`, ascending from one
 * below `lastMessageFrom` or without a message): then the position is left out, so the
 * index range starts at the bound (PostgreSQL does not combine a row comparison with a
 * bound on its first column, and would scan from the position).
 */
const keysetImplied = (filters: ChatFilters, sort: ChatSort, after: ChatPosition | null): boolean => {
  if (after === null || sort.by !== "last_message_at") return false
  if (filters.lastMessageFrom === undefined && filters.lastMessageTo === undefined) return false
  const from = filters.lastMessageFrom
  const to = filters.lastMessageTo
  if (sort.order === "desc") return to !== undefined && after.value !== null && after.value > to
  return after.value === null || (from !== undefined && after.value < from)
}

/** The row decoders of PostgreSQL's values (`@switchboard/storage-sql`), built once: they do not depend on the schema. */
export const decoders = decodersOf(postgresValues)

/** The status moves of rows as `pg` answers them (failures parsed), built once. */
export const statusMove = statusMoveOf(postgresValues)

/** The rows of send attempts' outcomes as `pg` answers them, built once. */
export const outcomeRow = outcomeRowOf(postgresValues)

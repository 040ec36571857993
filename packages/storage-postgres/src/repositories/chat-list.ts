import type { ChatFilters, ChatPosition, ChatSort, OrganizationId } from "@switchboard/core"
import type { Sql } from "../internal/sql.js"

// The chat list on PostgreSQL (docs/chats.md "Storage", docs/benchmarks.md), SQLite's plans
// translated: which index answers which query.
//
// - "merge": a group or label filter, sorted by last_message_at: per uuid of the list, one
//   range of `chat_links (kind, link_uuid, last_message_at, uuid)` from the position, the
//   other filters checked on the way; the ranges are merged (a chat in two of the groups
//   once). Cost ∝ page size × list length, at any depth and any density.
// - "direct": no search, group or label filter, at most one equality filter (status,
//   assigned_to, favorite, unread) and, unless sorting by last_message_at, no date bound.
//   One range of one index in sort order: `(organization_id[, column], key, uuid)`, the
//   page positioned by `(key, uuid) < ($n, $m)`. Cost ∝ page size, at any depth.
// - otherwise "adaptive": a probe reads at most PROBE_ROWS entries of the sort-ordered
//   index from the position and filters them; when that fills the page (dense filters) it
//   is the answer. Else the exact query starts from the most selective source — the
//   trigram index for a search of 3+ characters, the members of the groups or the
//   carriers of the labels (each behind `OFFSET 0`, so the planner cannot turn it into a
//   walk of the sort index) — or leaves the planner the equality index or the date range,
//   and sorts what it finds. Cost ∝ matches of that source, at any depth.
// Search matches `search_text` (stored lowercased, schema/chats.ts) by `LIKE '%term%'`: a
// case-insensitive substring, as core's `chatSearchMatches`.

/** Most index entries the probe reads. */
export const PROBE_ROWS = 2000

/** One SQL statement and its parameters. */
export interface ChatListStatement {
  readonly sql: string
  readonly params: ReadonlyArray<unknown>
}

/**
 * The statements of one list page. `Single`: `probe` (absent when `exact` reads in sort
 * order and stops at the page) and `exact`, each selecting the row `id`s of the page in
 * order. `Merge`: one statement per group or label uuid, each selecting `id, value, uuid`
 * in order, up to `offset + limit` rows; merged, deduplicated, then cut to the window.
 */
export type ChatListPlan =
  | {
      readonly _tag: "Single"
      readonly probe: ChatListStatement | undefined
      readonly exact: ChatListStatement
      readonly limit: number
    }
  | {
      readonly _tag: "Merge"
      readonly parts: ReadonlyArray<ChatListStatement>
      readonly order: ChatSort["order"]
      readonly offset: number
      readonly limit: number
    }

/** Which chats of the sorted list a page holds: after a position, or from an offset. */
export interface ChatListWindow {
  readonly after: ChatPosition | null
  readonly offset: number
  readonly limit: number
}

/** The plan of one page of the chats matching `filters` in `sort` order, in schema `s`. */
export const planChatList = (
  s: string,
  organizationId: OrganizationId,
  filters: ChatFilters,
  sort: ChatSort,
  given: ChatListWindow
): ChatListPlan => {
  const window = keysetImplied(filters, sort, given.after) ? { ...given, after: null } : given
  const parts = partsOf(s, filters, sort, window.after)
  const byLastMessage = sort.by === "last_message_at"
  if (byLastMessage && (filters.groupIds !== undefined || filters.labelIds !== undefined)) {
    return mergePlan(s, organizationId, filters, parts, sort, window)
  }
  const hasDates = parts.dates.length > 0
  const direct = parts.residual.length === 0 && (byLastMessage ? parts.eq.length <= 1 : parts.eq.length === 0 && !hasDates)
  const source = sourceOf(s, filters, parts, sort)
  const exact = select("c", source, organizationId, [...source.conditions, keyset("c", sort, window.after)], sort, window)
  const ordered = direct || source.ordered
  const single = { _tag: "Single", exact, limit: window.limit } as const
  if (ordered || window.offset + window.limit > PROBE_ROWS) return { ...single, probe: undefined }
  return { ...single, probe: probe(s, organizationId, parts, sort, window) }
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

/** The `COUNT(*)` of the chats matching `filters` (offset pagination's total). */
export const planChatCount = (s: string, organizationId: OrganizationId, filters: ChatFilters): ChatListStatement => {
  const sort: ChatSort = { by: "last_message_at", order: "desc" }
  const source = sourceOf(s, filters, partsOf(s, filters, sort, null), sort)
  const where = all([fragment("c.organization_id = ?", organizationId), ...source.conditions])
  return numbered(`SELECT COUNT(*) AS count FROM ${source.from} WHERE ${where.sql}`, [...source.params, ...where.params])
}

/**
 * Runs a plan: the probe when it fills the page, else the exact query; or every part of a
 * merge, merged in sort order. Row ids of the page, in order.
 */
export const runChatList = async (sql: Sql, plan: ChatListPlan): Promise<ReadonlyArray<number>> => {
  if (plan._tag === "Merge") return merge(sql, plan)
  const ids = async (statement: ChatListStatement) =>
    (await sql.rows<{ id: number }>(statement.sql, statement.params)).map((row) => Number(row.id))
  if (plan.probe !== undefined) {
    const probed = await ids(plan.probe)
    if (probed.length === plan.limit) return probed
  }
  return ids(plan.exact)
}

/** A row of a merge part: `value` null for a chat without messages (below every instant). */
interface MergeRow {
  readonly id: number
  readonly value: string | null
  readonly uuid: string
}

const merge = async (sql: Sql, plan: Extract<ChatListPlan, { _tag: "Merge" }>): Promise<ReadonlyArray<number>> => {
  const rows = new Map<number, MergeRow>()
  for (const part of plan.parts) {
    for (const row of await sql.rows<MergeRow>(part.sql, part.params)) rows.set(Number(row.id), row)
  }
  const sign = plan.order === "desc" ? -1 : 1
  // ISO instants of one form and ASCII uuids: JavaScript compares them as "C" does.
  const value = (row: MergeRow) => row.value ?? ""
  const compare = (a: MergeRow, b: MergeRow) =>
    sign *
    (value(a) === value(b) ? (a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0) : value(a) < value(b) ? -1 : 1)
  return [...rows.values()].sort(compare).slice(plan.offset, plan.offset + plan.limit).map((row) => Number(row.id))
}

/**
 * The merge plan of a group (else label) filter sorted by last_message_at: per uuid, the
 * range of `chat_links` from the position (date bounds on the link's copy of
 * last_message_at), joined to its chat for the other conditions.
 */
const mergePlan = (
  s: string,
  organizationId: OrganizationId,
  filters: ChatFilters,
  parts: Parts,
  sort: ChatSort,
  window: ChatListWindow
): ChatListPlan => {
  const [kind, ids, key] =
    filters.groupIds !== undefined
      ? (["group", filters.groupIds, "groups"] as const)
      : (["label", filters.labelIds ?? [], "labels"] as const)
  const onLink = (part: Fragment): Fragment => ({ ...part, sql: part.sql.replace(/\bc\.last_message_at\b/g, "l.last_message_at") })
  const others = [
    ...parts.eq.map((part) => part.condition),
    ...parts.residual.filter((part) => part.key !== key).map((part) => part.condition)
  ]
  const statements = ids.map((id): ChatListStatement => {
    const where = all([
      fragment("l.kind = ? AND l.link_uuid = ?", kind, id),
      ...parts.dates.map(onLink),
      keyset("l", sort, window.after),
      fragment("c.organization_id = ?", organizationId),
      ...others
    ])
    return numbered(
      "SELECT c.id AS id, NULLIF(l.last_message_at, '-infinity') AS value, l.uuid AS uuid " +
        `FROM ${s}.chat_links AS l JOIN ${s}.chats AS c ON c.id = l.chat_id WHERE ${where.sql} ${orderBy("l", sort)} LIMIT ?`,
      [...where.params, Math.min(window.offset + window.limit, Number.MAX_SAFE_INTEGER)]
    )
  })
  return { _tag: "Merge", parts: statements, order: sort.order, offset: window.offset, limit: window.limit }
}

/** A piece of SQL with `?` placeholders and their parameters, in text order. */
interface Fragment {
  readonly sql: string
  readonly params: ReadonlyArray<unknown>
}

const fragment = (sql: string, ...params: ReadonlyArray<unknown>): Fragment => ({ sql, params })

const all = (fragments: ReadonlyArray<Fragment>): Fragment => ({
  sql: fragments.map((part) => part.sql).join(" AND "),
  params: fragments.flatMap((part) => part.params)
})

/** A statement whose `?` placeholders (never in the text otherwise) become `$1, $2, …`. */
const numbered = (sql: string, params: ReadonlyArray<unknown>): ChatListStatement => {
  let n = 0
  return { sql: sql.replace(/\?/g, () => `$${++n}`), params }
}

type EqFilter = "status" | "assignedTo" | "favorite" | "unread"

/** The conditions of the filters, by kind; each written for alias `c`. */
interface Parts {
  readonly eq: ReadonlyArray<{ readonly key: EqFilter; readonly condition: Fragment }>
  readonly dates: ReadonlyArray<Fragment>
  /** Search, group and label conditions: no index orders by them. */
  readonly residual: ReadonlyArray<{ readonly key: "search" | "groups" | "labels"; readonly condition: Fragment }>
}

/** `%term%` for `LIKE`, the term's `%`, `_` and `\` escaped. */
const containing = (term: string): string => `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`

/**
 * The conditions of `filters`. A date bound that the position already implies (sorting by
 * last_message_at, the bound on the side the list comes from) is left out, so that the
 * index range starts at the position: a deep page costs what the first one does.
 */
const partsOf = (s: string, filters: ChatFilters, sort: ChatSort, after: ChatPosition | null): Parts => {
  const eq: Array<Parts["eq"][number]> = []
  if (filters.status !== undefined) eq.push({ key: "status", condition: fragment("c.status = ?", filters.status) })
  if (filters.assignedTo !== undefined) {
    const condition =
      filters.assignedTo === null ? fragment("c.assigned_to IS NULL") : fragment("c.assigned_to = ?", filters.assignedTo)
    eq.push({ key: "assignedTo", condition })
  }
  if (filters.favorite !== undefined) eq.push({ key: "favorite", condition: fragment("c.favorite = ?", filters.favorite) })
  if (filters.unread !== undefined) eq.push({ key: "unread", condition: fragment("c.unread = ?", filters.unread) })
  const dates: Array<Fragment> = []
  if (filters.lastMessageFrom !== undefined || filters.lastMessageTo !== undefined) {
    // `-infinity` (no message) matches neither bound.
    const from = filters.lastMessageFrom
    const to = filters.lastMessageTo
    // The position's value; null = -infinity (below every instant).
    const position = after !== null && sort.by === "last_message_at" ? after.value : undefined
    const impliedFrom =
      position !== undefined && position !== null && sort.order === "asc" && (from === undefined || position >= from)
    const impliedTo = position !== undefined && sort.order === "desc" && to !== undefined && (position === null || position <= to)
    if (!impliedFrom) {
      dates.push(from === undefined ? fragment("c.last_message_at > '-infinity'") : fragment("c.last_message_at >= ?::timestamptz", from))
    }
    if (to !== undefined && !impliedTo) dates.push(fragment("c.last_message_at <= ?::timestamptz", to))
  }
  const residual: Array<Parts["residual"][number]> = []
  if (filters.search !== undefined) {
    residual.push({ key: "search", condition: fragment("c.search_text LIKE ?", containing(filters.search)) })
  }
  if (filters.groupIds !== undefined) {
    residual.push({ key: "groups", condition: linked(`${s}.group_members`, "group_uuid", filters.groupIds) })
  }
  if (filters.labelIds !== undefined) {
    residual.push({ key: "labels", condition: linked(`${s}.contact_labels`, "label_uuid", filters.labelIds) })
  }
  return { eq, dates, residual }
}

const linked = (table: string, column: string, ids: ReadonlyArray<string>): Fragment =>
  fragment(
    `EXISTS (SELECT 1 FROM ${table} AS link WHERE link.contact_uuid = c.contact_uuid AND link.${column} = ANY(?::text[]))`,
    ids
  )

/** Where the exact query starts: its `FROM`, the conditions left to check, and whether it reads in sort order. */
interface Source {
  readonly from: string
  readonly params: ReadonlyArray<unknown>
  readonly conditions: ReadonlyArray<Fragment>
  readonly ordered: boolean
}

const sourceOf = (s: string, filters: ChatFilters, parts: Parts, sort: ChatSort): Source => {
  const eqConditions = parts.eq.map((part) => part.condition)
  const residual = (except?: string) => parts.residual.filter((part) => part.key !== except).map((part) => part.condition)
  const everything = [...eqConditions, ...parts.dates, ...residual()]
  if (filters.search !== undefined && [...filters.search].length >= 3) {
    return {
      // OFFSET 0 keeps the trigram index the source (else the planner, which cannot
      // estimate a substring's rarity, may walk the sort index: a scan of the organization),
      // and the matching rows come whole from it (no join back to chats).
      from: `(SELECT * FROM ${s}.chats WHERE search_text LIKE ? OFFSET 0) AS c`,
      params: [containing(filters.search)],
      conditions: [...eqConditions, ...parts.dates, ...residual("search")],
      ordered: false
    }
  }
  for (const [key, table, column, ids] of [
    ["groups", "group_members", "group_uuid", filters.groupIds],
    ["labels", "contact_labels", "label_uuid", filters.labelIds]
  ] as const) {
    if (ids === undefined) continue
    return {
      from:
        `(SELECT DISTINCT contact_uuid FROM ${s}.${table} WHERE ${column} = ANY(?::text[]) OFFSET 0) AS link ` +
        `JOIN ${s}.chats AS c ON c.contact_uuid = link.contact_uuid`,
      params: [ids],
      conditions: [...eqConditions, ...parts.dates, ...residual(key)],
      ordered: false
    }
  }
  const ordered = sort.by === "last_message_at" || (parts.eq.length === 0 && parts.dates.length === 0)
  return { from: `${s}.chats AS c`, params: [], conditions: everything, ordered }
}

/** `(key, uuid) < (?, ?)` (or `>` ascending), or nothing from the start. */
const keyset = (alias: string, sort: ChatSort, after: ChatPosition | null): Fragment =>
  after === null
    ? fragment("true")
    : fragment(
        `(${alias}.${sort.by}, ${alias}.uuid) ${sort.order === "desc" ? "<" : ">"} (?::timestamptz, ?::text)`,
        after.value ?? "-infinity",
        after.uuid
      )

const orderBy = (alias: string, sort: ChatSort): string => {
  const direction = sort.order === "desc" ? "DESC" : "ASC"
  return `ORDER BY ${alias}.${sort.by} ${direction}, ${alias}.uuid ${direction}`
}

const select = (
  alias: string,
  source: { readonly from: string; readonly params: ReadonlyArray<unknown> },
  organizationId: OrganizationId,
  conditions: ReadonlyArray<Fragment>,
  sort: ChatSort,
  window: ChatListWindow
): ChatListStatement => {
  const where = all([fragment(`${alias}.organization_id = ?`, organizationId), ...conditions])
  return numbered(`SELECT ${alias}.id FROM ${source.from} WHERE ${where.sql} ${orderBy(alias, sort)} LIMIT ? OFFSET ?`, [
    ...source.params,
    ...where.params,
    window.limit,
    Math.min(window.offset, Number.MAX_SAFE_INTEGER)
  ])
}

/**
 * The probe: the first PROBE_ROWS chats in sort order from the position (inside: the
 * organization, the keyset, and the equality filter and date range the ordered index
 * covers), then the other conditions on those rows only.
 */
const probe = (
  s: string,
  organizationId: OrganizationId,
  parts: Parts,
  sort: ChatSort,
  window: ChatListWindow
): ChatListStatement => {
  const byLastMessage = sort.by === "last_message_at"
  const [firstEq, ...otherEq] = byLastMessage ? parts.eq : [undefined, ...parts.eq]
  const inside = all([
    fragment("c.organization_id = ?", organizationId),
    ...(firstEq === undefined ? [] : [firstEq.condition]),
    ...(byLastMessage ? parts.dates : []),
    keyset("c", sort, window.after)
  ])
  const outside = [
    ...otherEq.flatMap((part) => (part === undefined ? [] : [part.condition])),
    ...(byLastMessage ? [] : parts.dates),
    ...parts.residual.map((part) => part.condition)
  ]
  const rows = `(SELECT c.* FROM ${s}.chats AS c WHERE ${inside.sql} ${orderBy("c", sort)} LIMIT ${PROBE_ROWS})`
  // The conditions are written for alias `c`; outside, the rows are `probe`.
  const where = all([fragment("true"), ...outside.map((part) => ({ ...part, sql: part.sql.replace(/\bc\./g, "probe.") }))])
  return numbered(`SELECT probe.id FROM ${rows} AS probe WHERE ${where.sql} ${orderBy("probe", sort)} LIMIT ? OFFSET ?`, [
    ...inside.params,
    ...where.params,
    window.limit,
    window.offset
  ])
}

import type { ChatFilters, ChatPosition, ChatSort, OrganizationId } from "@switchboard/core"
import { compilerOf, type Statement } from "./compile.js"
import { all, type Fragment, fragment } from "./fragment.js"
import type { ChatEqualityFilter, SqlDialect } from "./SqlDialect.js"

// The chat list on a SQL engine (docs/chats.md "Storage", docs/benchmarks.md): which index
// answers which query. The engines differ only where the dialect's chat-list hooks say.
//
// - "merge": a group or label filter, sorted by last_message_at: per uuid of the list, one
//   range of `chat_links (kind, link_uuid, last_message_at, uuid)` from the position, the
//   other filters checked on the way; the ranges are merged (a chat in two of the groups
//   once). Cost ∝ page size × list length, at any depth and any density.
// - "direct": no search, group or label filter, at most one equality filter (status,
//   assigned_to, favorite, unread) and, unless sorting by last_message_at, no date bound.
//   One range of one index in sort order: `(organization_id[, column], key, uuid)`, the
//   page positioned by `(key, uuid) < (?, ?)`. Cost ∝ page size, at any depth.
// - otherwise "adaptive": a probe reads at most PROBE_ROWS entries of the sort-ordered
//   index from the position and filters them; when that fills the page (dense filters) it
//   is the answer. Else the exact query starts from the most selective source — the
//   dialect's search source for a search of 3+ characters, the members of the groups or
//   the carriers of the labels (fenced, where the engine would flatten them), the equality
//   index, the date range — and sorts what it finds. Cost ∝ matches of that source, at any
//   depth.

/**
 * Most index entries the probe reads.
 *
 * @category chat list
 */
export const PROBE_ROWS = 2000

/**
 * One SQL statement of a chat-list plan and its parameters, compiled for the dialect.
 *
 * @category chat list
 */
export type ChatListStatement = Statement

/**
 * The statements of one list page. `Single`: `probe` (absent when `exact` reads in sort
 * order and stops at the page) and `exact`, each selecting the row `id`s of the page in
 * order. `Merge`: one statement per group or label uuid, each selecting `id, value, uuid`
 * in order, up to `offset + limit` rows; merged, deduplicated, then cut to the window
 * ({@link mergeChatList}).
 *
 * @category chat list
 */
export type ChatListPlan =
  | {
      readonly _tag: "Single"
      readonly probe: ChatListStatement | undefined
      readonly exact: ChatListStatement
      readonly limit: number
    }
  | ChatListMergePlan

/**
 * The merge of a group or label filter: see {@link ChatListPlan}.
 *
 * @category chat list
 */
export interface ChatListMergePlan {
  readonly _tag: "Merge"
  readonly parts: ReadonlyArray<ChatListStatement>
  readonly order: ChatSort["order"]
  readonly offset: number
  readonly limit: number
}

/**
 * Which chats of the sorted list a page holds: after a position, or from an offset.
 *
 * @category chat list
 */
export interface ChatListWindow {
  readonly after: ChatPosition | null
  readonly offset: number
  readonly limit: number
}

/**
 * The chat-list planner of one store: built once from its dialect.
 *
 * @category chat list
 */
export interface ChatListPlanner {
  /** The plan of one page of the chats matching `filters` in `sort` order. */
  readonly list: (organizationId: OrganizationId, filters: ChatFilters, sort: ChatSort, window: ChatListWindow) => ChatListPlan
  /** The `COUNT(*)` of the chats matching `filters` (offset pagination's total). */
  readonly count: (organizationId: OrganizationId, filters: ChatFilters) => ChatListStatement
}

/**
 * The {@link ChatListPlanner} of `dialect`. The adapter runs the plans (`runChatList`):
 * the probe when it fills the page, else the exact query; or every part of a merge, then
 * {@link mergeChatList}.
 *
 * @example
 * const planner = chatListPlannerOf(dialect)
 * const plan = planner.list(organizationId, { status: "open" }, { by: "last_message_at", order: "desc" }, { after: null, offset: 0, limit: 20 })
 *
 * @category chat list
 */
export const chatListPlannerOf = (dialect: SqlDialect): ChatListPlanner => {
  const planner = new Planner(dialect)
  return {
    list: (organizationId, filters, sort, window) => planner.list(organizationId, filters, sort, window),
    count: (organizationId, filters) => planner.count(organizationId, filters)
  }
}

/**
 * A row of a merge part: `value` null (or the dialect's no-message value) for a chat
 * without messages, below every instant.
 *
 * @category chat list
 */
export interface ChatListMergeRow {
  readonly id: number | string
  readonly value: string | null
  readonly uuid: string
}

/**
 * The page of a merge plan from the rows of its parts (in the order of `plan.parts`): each
 * chat once, sorted by value then uuid in the plan's order, cut to the window. Row ids.
 * Values are ISO instants of one form and uuids ASCII: JavaScript compares them as the
 * engines' byte order does.
 *
 * @category chat list
 */
export const mergeChatList = (
  plan: ChatListMergePlan,
  parts: ReadonlyArray<ReadonlyArray<ChatListMergeRow>>
): ReadonlyArray<number> => {
  const rows = new Map<number, ChatListMergeRow>()
  for (const part of parts) for (const row of part) rows.set(Number(row.id), row)
  const sign = plan.order === "desc" ? -1 : 1
  const value = (row: ChatListMergeRow) => row.value ?? ""
  const compare = (a: ChatListMergeRow, b: ChatListMergeRow) =>
    sign * (value(a) === value(b) ? (a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0) : value(a) < value(b) ? -1 : 1)
  return [...rows.values()].sort(compare).slice(plan.offset, plan.offset + plan.limit).map((row) => Number(row.id))
}

/** The conditions of the filters, by kind; each written for alias `c`. */
interface Parts {
  readonly eq: ReadonlyArray<{ readonly key: ChatEqualityFilter; readonly condition: Fragment }>
  readonly dates: ReadonlyArray<Fragment>
  /** Search, group and label conditions: no index orders by them. */
  readonly residual: ReadonlyArray<{ readonly key: "search" | "groups" | "labels"; readonly condition: Fragment }>
}

/** Where the exact query starts: its `FROM`, the conditions left to check, and whether it reads in sort order. */
interface Source {
  readonly from: string
  readonly params: ReadonlyArray<unknown>
  readonly conditions: ReadonlyArray<Fragment>
  readonly ordered: boolean
}

const LINKS = [
  ["groups", "group_members", "group_uuid"],
  ["labels", "contact_labels", "label_uuid"]
] as const

class Planner {
  private readonly compile: (sql: string) => string
  private readonly chats: string

  constructor(private readonly dialect: SqlDialect) {
    this.compile = compilerOf(dialect)
    this.chats = dialect.table("chats")
  }

  list(organizationId: OrganizationId, filters: ChatFilters, sort: ChatSort, given: ChatListWindow): ChatListPlan {
    const window = this.dialect.chatList.keysetImplied(filters, sort, given.after) ? { ...given, after: null } : given
    const parts = this.partsOf(filters, sort, window.after)
    const byLastMessage = sort.by === "last_message_at"
    if (byLastMessage && (filters.groupIds !== undefined || filters.labelIds !== undefined)) {
      return this.mergePlan(organizationId, filters, parts, sort, window)
    }
    const hasDates = parts.dates.length > 0
    const direct = parts.residual.length === 0 && (byLastMessage ? parts.eq.length <= 1 : parts.eq.length === 0 && !hasDates)
    const source = this.sourceOf(filters, parts, sort)
    const exact = this.select(source, organizationId, [...source.conditions, this.keyset("c", sort, window.after)], sort, window)
    const ordered = direct || source.ordered
    const single = { _tag: "Single", exact, limit: window.limit } as const
    if (ordered || window.offset + window.limit > PROBE_ROWS) return { ...single, probe: undefined }
    return { ...single, probe: this.probe(organizationId, parts, sort, window) }
  }

  count(organizationId: OrganizationId, filters: ChatFilters): ChatListStatement {
    const sort: ChatSort = { by: "last_message_at", order: "desc" }
    const source = this.sourceOf(filters, this.partsOf(filters, sort, null), sort)
    const where = all([fragment("c.organization_id = ?", organizationId), ...source.conditions])
    return this.statement(`SELECT COUNT(*) AS count FROM ${source.from} WHERE ${where.sql}`, [...source.params, ...where.params])
  }

  private statement(sql: string, params: ReadonlyArray<unknown>): ChatListStatement {
    return { sql: this.compile(sql), params }
  }

  /**
   * The merge plan of a group (else label) filter sorted by last_message_at: per uuid, the
   * range of `chat_links` from the position (date bounds on the link's copy of
   * last_message_at), joined to its chat for the other conditions.
   */
  private mergePlan(
    organizationId: OrganizationId,
    filters: ChatFilters,
    parts: Parts,
    sort: ChatSort,
    window: ChatListWindow
  ): ChatListPlan {
    const [kind, ids, key] =
      filters.groupIds !== undefined
        ? (["group", filters.groupIds, "groups"] as const)
        : (["label", filters.labelIds ?? [], "labels"] as const)
    const onLink = (part: Fragment): Fragment => ({ ...part, sql: part.sql.replace(/\bc\.last_message_at\b/g, "l.last_message_at") })
    const others = [
      ...parts.eq.map((part) => part.condition),
      ...parts.residual.filter((part) => part.key !== key).map((part) => part.condition)
    ]
    const { dialect } = this
    const from =
      `FROM ${dialect.table("chat_links")} AS l ${dialect.orderedJoin} ${this.chats} AS c ON c.id = l.chat_id`
    const statements = ids.map((id): ChatListStatement => {
      const where = all([
        fragment("l.kind = ? AND l.link_uuid = ?", kind, id),
        ...parts.dates.map(onLink),
        this.keyset("l", sort, window.after),
        fragment("c.organization_id = ?", organizationId),
        ...others
      ])
      return this.statement(
        `SELECT c.id AS id, ${dialect.chatList.sortValue("l.last_message_at")} AS value, l.uuid AS uuid ` +
          `${from} WHERE ${where.sql} ${orderBy("l", sort)} LIMIT ?`,
        [...where.params, Math.min(window.offset + window.limit, Number.MAX_SAFE_INTEGER)]
      )
    })
    return { _tag: "Merge", parts: statements, order: sort.order, offset: window.offset, limit: window.limit }
  }

  /**
   * The conditions of `filters`. A date bound that the position already implies (sorting by
   * last_message_at, the bound on the side the list comes from) is left out by the
   * dialect, so that the index range starts at the position: a deep page costs what the
   * first one does.
   */
  private partsOf(filters: ChatFilters, sort: ChatSort, after: ChatPosition | null): Parts {
    const { dialect } = this
    const eq: Array<Parts["eq"][number]> = []
    if (filters.status !== undefined) eq.push({ key: "status", condition: fragment("c.status = ?", filters.status) })
    if (filters.assignedTo !== undefined) {
      const condition =
        filters.assignedTo === null ? fragment("c.assigned_to IS NULL") : fragment("c.assigned_to = ?", filters.assignedTo)
      eq.push({ key: "assignedTo", condition })
    }
    if (filters.favorite !== undefined) {
      eq.push({ key: "favorite", condition: fragment("c.favorite = ?", dialect.boolean(filters.favorite)) })
    }
    if (filters.unread !== undefined) eq.push({ key: "unread", condition: fragment("c.unread = ?", dialect.boolean(filters.unread)) })
    const dates = dialect.chatList.dateBounds(filters, sort, after)
    const residual: Array<Parts["residual"][number]> = []
    if (filters.search !== undefined) residual.push({ key: "search", condition: dialect.chatList.searchCondition(filters.search) })
    for (const [key, table, column] of LINKS) {
      const ids = key === "groups" ? filters.groupIds : filters.labelIds
      if (ids !== undefined) residual.push({ key, condition: this.linked(table, column, ids) })
    }
    return { eq, dates, residual }
  }

  private linked(table: string, column: string, ids: ReadonlyArray<string>): Fragment {
    return fragment(
      `EXISTS (SELECT 1 FROM ${this.dialect.table(table)} AS link WHERE link.contact_uuid = c.contact_uuid ` +
        `AND ${this.dialect.inList(`link.${column}`)})`,
      this.dialect.list(ids)
    )
  }

  private sourceOf(filters: ChatFilters, parts: Parts, sort: ChatSort): Source {
    const { dialect } = this
    const eqConditions = parts.eq.map((part) => part.condition)
    const residual = (except?: string) => parts.residual.filter((part) => part.key !== except).map((part) => part.condition)
    if (filters.search !== undefined && [...filters.search].length >= 3) {
      const search = dialect.chatList.searchSource(filters.search)
      return {
        from: search.from,
        params: search.params,
        conditions: [...search.first, ...eqConditions, ...parts.dates, ...residual(search.recheck ? undefined : "search")],
        ordered: false
      }
    }
    for (const [key, table, column] of LINKS) {
      const ids = key === "groups" ? filters.groupIds : filters.labelIds
      if (ids === undefined) continue
      return {
        from:
          `(SELECT DISTINCT contact_uuid FROM ${dialect.table(table)} WHERE ${dialect.inList(column)}${dialect.subqueryFence}) AS link ` +
          `${dialect.orderedJoin} ${this.chats} AS c ON c.contact_uuid = link.contact_uuid`,
        params: [dialect.list(ids)],
        conditions: [...eqConditions, ...parts.dates, ...residual(key)],
        ordered: false
      }
    }
    const everything = [...eqConditions, ...parts.dates, ...residual()]
    const byLastMessage = sort.by === "last_message_at"
    const [firstEq] = parts.eq
    if (firstEq !== undefined) {
      return { from: `${this.chats} AS c${dialect.chatList.equalityIndexHint(firstEq.key)}`, params: [], conditions: everything, ordered: byLastMessage }
    }
    if (parts.dates.length > 0) {
      const hint = dialect.chatList.sortIndexHint("last_message_at")
      return { from: `${this.chats} AS c${hint}`, params: [], conditions: everything, ordered: byLastMessage }
    }
    return { from: `${this.chats} AS c${dialect.chatList.sortIndexHint(sort.by)}`, params: [], conditions: everything, ordered: true }
  }

  /** `(key, uuid) < (?, ?)` (or `>` ascending), or nothing from the start. */
  private keyset(alias: string, sort: ChatSort, after: ChatPosition | null): Fragment {
    const { dialect } = this
    if (after === null) return fragment(dialect.true)
    const operator = sort.order === "desc" ? "<" : ">"
    return fragment(
      `(${alias}.${sort.by}, ${alias}.uuid) ${operator} (${dialect.cast("timestamptz")}, ${dialect.cast("text")})`,
      after.value ?? dialect.chatList.noMessage,
      after.uuid
    )
  }

  private select(
    source: Source,
    organizationId: OrganizationId,
    conditions: ReadonlyArray<Fragment>,
    sort: ChatSort,
    window: ChatListWindow
  ): ChatListStatement {
    const where = all([fragment("c.organization_id = ?", organizationId), ...conditions])
    return this.statement(`SELECT c.id FROM ${source.from} WHERE ${where.sql} ${orderBy("c", sort)} LIMIT ? OFFSET ?`, [
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
  private probe(organizationId: OrganizationId, parts: Parts, sort: ChatSort, window: ChatListWindow): ChatListStatement {
    const { dialect } = this
    const byLastMessage = sort.by === "last_message_at"
    const [firstEq, ...otherEq] = byLastMessage ? parts.eq : [undefined, ...parts.eq]
    const hint = firstEq === undefined ? dialect.chatList.sortIndexHint(sort.by) : dialect.chatList.equalityIndexHint(firstEq.key)
    const inside = all([
      fragment("c.organization_id = ?", organizationId),
      ...(firstEq === undefined ? [] : [firstEq.condition]),
      ...(byLastMessage ? parts.dates : []),
      this.keyset("c", sort, window.after)
    ])
    const outside = [
      ...otherEq.flatMap((part) => (part === undefined ? [] : [part.condition])),
      ...(byLastMessage ? [] : parts.dates),
      ...parts.residual.map((part) => part.condition)
    ]
    const rows = `(SELECT c.* FROM ${this.chats} AS c${hint} WHERE ${inside.sql} ${orderBy("c", sort)} LIMIT ${PROBE_ROWS})`
    // The conditions are written for alias `c`; outside, the rows are `probe`.
    const where = all([fragment(dialect.true), ...outside.map((part) => ({ ...part, sql: part.sql.replace(/\bc\./g, "probe.") }))])
    return this.statement(`SELECT probe.id FROM ${rows} AS probe WHERE ${where.sql} ${orderBy("probe", sort)} LIMIT ? OFFSET ?`, [
      ...inside.params,
      ...where.params,
      window.limit,
      window.offset
    ])
  }
}

const orderBy = (alias: string, sort: ChatSort): string => {
  const direction = sort.order === "desc" ? "DESC" : "ASC"
  return `ORDER BY ${alias}.${sort.by} ${direction}, ${alias}.uuid ${direction}`
}

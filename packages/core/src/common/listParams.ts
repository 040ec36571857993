import type { GroupId } from "../model/groups.js"
import { IssueCollector, UUID_PATTERN } from "../internal/validation.js"
import type { LabelId } from "../model/labels.js"
import type { OrganizationId } from "../model/organizations.js"
import type { PageRequest } from "../model/common.js"
import type { MessageId } from "../model/messages.js"
import type { ChatFilters, ChatPosition, ChatSort, MessagePosition } from "../storage/ChatRepository.js"
import { cursorBinding, decodeCursor, messagesCursorBinding } from "./cursor.js"
import {
  CHAT_STATUSES,
  type ChatId,
  type ChatListParams,
  type ChatSortBy,
  type ChatSortOrder,
  type ChatStatus,
  type MessageListParams
} from "../model/chats.js"
import { MAX_NAME_LENGTH } from "../model/names.js"

// Reading the chat list's parameters (docs/chats.md "`GET /chats`"):
// every bad parameter becomes one issue naming it, all reported at once.

/** Default and largest `limit` / `per_page` (docs/http-api.md "Limits"). */
export const DEFAULT_CHAT_PAGE_SIZE = 20
/** Largest `limit` / `per_page`. */
export const MAX_CHAT_PAGE_SIZE = 100
/** Most uuids in one `group_uuid` or `tag_uuid` list. */
export const MAX_FILTER_UUIDS = 100

/** What {@link readChatListParams} makes of valid parameters. */
export interface ChatListQuery {
  readonly filters: ChatFilters
  readonly sort: ChatSort
  readonly binding: string
  readonly mode:
    | { readonly _tag: "Offset"; readonly page: PageRequest }
    | { readonly _tag: "Cursor"; readonly limit: number; readonly after: ChatPosition | null }
}

/** The list query of `params`, or the issues found (every one naming its parameter). */
export const readChatListParams = (
  organizationId: OrganizationId,
  params: ChatListParams
): { readonly query: ChatListQuery } | { readonly issues: IssueCollector["issues"] } => {
  const collector = new IssueCollector()
  const filters = readFilters(collector, params)
  const sort: ChatSort = {
    by: oneOf(collector, "sort_by", params.sort_by, SORT_KEYS) ?? "last_message_at",
    order: oneOf(collector, "sort_order", params.sort_order, SORT_ORDERS) ?? "desc"
  }
  const offsetMode = bool(collector, "pagination", params.pagination) === true
  for (const name of offsetMode ? (["cursor", "limit"] as const) : (["page", "per_page"] as const)) {
    if (params[name] !== undefined) {
      const needed = offsetMode ? "without pagination=true" : "with pagination=true"
      collector.add("wrong_pagination_mode", name, `${name} is only allowed ${needed}`)
    }
  }
  const binding = cursorBinding(organizationId, filters, sort)
  // Only the parameters of the chosen mode are read; the others were reported above.
  const page = offsetMode ? (int(collector, "page", params.page, 1, Number.MAX_SAFE_INTEGER) ?? 1) : 1
  const perPage = offsetMode ? (int(collector, "per_page", params.per_page, 1, MAX_CHAT_PAGE_SIZE) ?? DEFAULT_CHAT_PAGE_SIZE) : 0
  const limit = offsetMode ? 0 : (int(collector, "limit", params.limit, 1, MAX_CHAT_PAGE_SIZE) ?? DEFAULT_CHAT_PAGE_SIZE)
  let after: ChatPosition | null = null
  if (params.cursor !== undefined && !offsetMode && collector.issues.length === 0) {
    const decoded =
      typeof params.cursor === "string"
        ? decodeCursor(params.cursor, binding, sort.by === "last_message_at")
        : undefined
    if (decoded === undefined) {
      collector.add(
        "invalid_cursor",
        "cursor",
        "cursor is not valid for this list: use the next_cursor of a page with the same sort and filters"
      )
    }
    after = decoded ?? null
  }
  if (collector.issues.length > 0) return { issues: collector.issues }
  const mode: ChatListQuery["mode"] = offsetMode
    ? { _tag: "Offset", page: { page, per_page: perPage } }
    : { _tag: "Cursor", limit, after }
  return { query: { filters, sort, binding, mode } }
}

/** What {@link readMessageListParams} makes of valid parameters. */
export interface MessageListQuery {
  readonly binding: string
  readonly limit: number
  readonly after: MessagePosition | null
}

/**
 * The query of a chat's messages (`limit` 1–100, default 20; `cursor` a `next_cursor` of
 * this chat's messages), or the issues found, each naming its parameter.
 */
export const readMessageListParams = (
  organizationId: OrganizationId,
  chatId: ChatId,
  params: MessageListParams
): { readonly query: MessageListQuery } | { readonly issues: IssueCollector["issues"] } => {
  const binding = messagesCursorBinding(organizationId, chatId)
  const read = readCursorPageParams<MessageId>(
    params,
    binding,
    "cursor is not valid for this chat: use the next_cursor of a page of its messages"
  )
  if ("issues" in read) return read
  const { limit, after } = read.query
  return { query: { binding, limit, after: after === null ? null : { created_at: after.value, uuid: after.uuid } } }
}

/**
 * The `limit` (1–100, default 20) and `cursor` of a keyset list newest first whose
 * cursors are made with `binding` (a chat's messages, an endpoint's deliveries): the
 * position after which the page starts, or the issues found, each naming its parameter
 * (`invalid_cursor` with `invalidCursorMessage` for a cursor of another list).
 */
export const readCursorPageParams = <Id extends string>(
  params: { readonly limit?: unknown; readonly cursor?: unknown },
  binding: string,
  invalidCursorMessage: string
):
  | { readonly query: { readonly limit: number; readonly after: { readonly value: string; readonly uuid: Id } | null } }
  | { readonly issues: IssueCollector["issues"] } => {
  const collector = new IssueCollector()
  const limit = int(collector, "limit", params.limit, 1, MAX_CHAT_PAGE_SIZE) ?? DEFAULT_CHAT_PAGE_SIZE
  let after: { readonly value: string; readonly uuid: Id } | null = null
  if (params.cursor !== undefined) {
    const decoded = typeof params.cursor === "string" ? decodeCursor<Id>(params.cursor, binding, false) : undefined
    if (decoded === undefined) collector.add("invalid_cursor", "cursor", invalidCursorMessage)
    else after = { value: decoded.value ?? "", uuid: decoded.uuid }
  }
  if (collector.issues.length > 0) return { issues: collector.issues }
  return { query: { limit, after } }
}

const SORT_KEYS: ReadonlyArray<ChatSortBy> = ["created_at", "updated_at", "last_message_at"]
const SORT_ORDERS: ReadonlyArray<ChatSortOrder> = ["asc", "desc"]

const readFilters = (collector: IssueCollector, params: ChatListParams): ChatFilters => {
  const filters: { -readonly [K in keyof ChatFilters]: ChatFilters[K] } = {}
  const search = searchTerm(collector, params.search)
  if (search !== undefined) filters.search = search
  const status = oneOf<ChatStatus>(collector, "status", params.status, CHAT_STATUSES)
  if (status !== undefined) filters.status = status
  const assignee = assignedTo(collector, params.assigned_to)
  if (assignee !== undefined) filters.assignedTo = assignee
  const groups = uuidList<GroupId>(collector, "group_uuid", params.group_uuid)
  if (groups !== undefined) filters.groupIds = groups
  const labels = uuidList<LabelId>(collector, "tag_uuid", params.tag_uuid)
  if (labels !== undefined) filters.labelIds = labels
  const favorite = bool(collector, "favorite", params.favorite)
  if (favorite !== undefined) filters.favorite = favorite
  const unread = bool(collector, "unread", params.unread)
  if (unread !== undefined) filters.unread = unread
  const from = dateBound(collector, "date_from", params.date_from, "start")
  const to = dateBound(collector, "date_to", params.date_to, "end")
  if (from !== undefined) filters.lastMessageFrom = from
  if (to !== undefined) filters.lastMessageTo = to
  if (from !== undefined && to !== undefined && from > to) {
    collector.add("out_of_range", "date_to", "date_to must not be before date_from")
  }
  return filters
}

/** Characters a phone number may be written with; a term of only these is a phone search. */
const PHONE_LIKE = /^[+\d\s().-]*\d[+\d\s().-]*$/

/**
 * The normalised `search` term: trimmed, inner whitespace collapsed to one space,
 * lowercase; a term that looks like a phone number (digits and `+ ( ) . -` or spaces) is
 * reduced to its digits. `undefined` when blank.
 */
export const searchTerm = (collector: IssueCollector, value: unknown): string | undefined => {
  if (value === undefined) return undefined
  if (typeof value !== "string") {
    collector.add("invalid_type", "search", "search must be a string")
    return undefined
  }
  const term = value.trim().replace(/\s+/g, " ").toLowerCase()
  if (term.length > MAX_NAME_LENGTH) {
    collector.add("too_long", "search", `search must be at most ${MAX_NAME_LENGTH} characters`)
    return undefined
  }
  if (term === "") return undefined
  return PHONE_LIKE.test(term) ? term.replace(/\D/g, "") : term
}

const oneOf = <A extends string>(
  collector: IssueCollector,
  field: string,
  value: unknown,
  allowed: ReadonlyArray<A>
): A | undefined => {
  if (value === undefined) return undefined
  if (typeof value === "string" && (allowed as ReadonlyArray<string>).includes(value)) return value as A
  collector.add("invalid_format", field, `${field} must be one of ${allowed.join(", ")}`)
  return undefined
}

const bool = (collector: IssueCollector, field: string, value: unknown): boolean | undefined => {
  if (value === undefined || typeof value === "boolean") return value
  collector.add("invalid_type", field, `${field} must be true or false`)
  return undefined
}

const int = (collector: IssueCollector, field: string, value: unknown, min: number, max: number): number | undefined => {
  if (value === undefined) return undefined
  if (typeof value !== "number" || !Number.isInteger(value)) {
    collector.add("invalid_type", field, `${field} must be an integer`)
    return undefined
  }
  if (value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `at least ${min}` : `from ${min} to ${max}`
    collector.add("out_of_range", field, `${field} must be ${range}`)
    return undefined
  }
  return value
}

/** `assigned_to`: a user id (trimmed, 1–255 characters), or `null` for `unassigned`. */
const assignedTo = (collector: IssueCollector, value: unknown): string | null | undefined => {
  if (value === undefined) return undefined
  if (value === UNASSIGNED) return null
  if (typeof value !== "string") {
    collector.add("invalid_type", "assigned_to", "assigned_to must be a string")
    return undefined
  }
  const id = value.trim()
  if (id === "" || id.length > MAX_NAME_LENGTH) {
    collector.add("invalid_format", "assigned_to", `assigned_to must be a user id of 1 to ${MAX_NAME_LENGTH} characters or '${UNASSIGNED}'`)
    return undefined
  }
  return id
}

/** The literal of `assigned_to` that selects chats assigned to nobody (docs/chats.md "`GET /chats`"). */
export const UNASSIGNED = "unassigned"

/** A comma-separated list (or array) of 1–100 uuids, lowercased and deduplicated. */
const uuidList = <Id extends string>(collector: IssueCollector, field: string, value: unknown): ReadonlyArray<Id> | undefined => {
  if (value === undefined) return undefined
  const items = typeof value === "string" ? value.split(",") : Array.isArray(value) ? (value as Array<unknown>) : undefined
  if (items === undefined) {
    collector.add("invalid_type", field, `${field} must be a comma-separated list of uuids`)
    return undefined
  }
  const uuids = items.map((item) => (typeof item === "string" ? item.trim().toLowerCase() : ""))
  if (uuids.some((uuid) => !UUID_PATTERN.test(uuid))) {
    collector.add("invalid_format", field, `${field} must be a comma-separated list of uuids`)
    return undefined
  }
  const unique = [...new Set(uuids)]
  if (unique.length > MAX_FILTER_UUIDS) {
    collector.add("out_of_range", field, `${field} may hold at most ${MAX_FILTER_UUIDS} uuids`)
    return undefined
  }
  return unique.map((uuid) => uuid as Id)
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/
// A date-time: `T` separator, optional seconds and fraction, optional offset (UTC when
// absent). A space before the offset is read as `+`: an unencoded `+` in a query string
// arrives as a space.
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+\- ]\d{2}:?\d{2})?$/i

/**
 * An inclusive bound as an ISO 8601 UTC instant (`toISOString` form). A bare date is the
 * start (`date_from`) or the last millisecond (`date_to`) of that UTC day.
 */
export const dateBound = (
  collector: IssueCollector,
  field: string,
  value: unknown,
  side: "start" | "end"
): string | undefined => {
  if (value === undefined) return undefined
  const millis = typeof value === "string" ? parseBound(value.trim(), side) : undefined
  if (millis === undefined) {
    collector.add("invalid_format", field, `${field} must be an ISO 8601 date (2026-03-01) or date-time (2026-03-01T09:30:00Z)`)
    return undefined
  }
  const year = new Date(millis).getUTCFullYear()
  if (year < 1 || year > 9999) {
    collector.add("out_of_range", field, `${field} must be between the years 0001 and 9999`)
    return undefined
  }
  return new Date(millis).toISOString()
}

const parseBound = (text: string, side: "start" | "end"): number | undefined => {
  const date = DATE.exec(text)
  if (date !== null) {
    const start = utc(Number(date[1]), Number(date[2]), Number(date[3]), 0, 0, 0)
    return start === undefined ? undefined : side === "start" ? start : start + 86_400_000 - 1
  }
  const time = DATE_TIME.exec(text)
  if (time === null) return undefined
  const [, y, mo, d, h, mi, s, fraction, zone] = time
  const base = utc(Number(y), Number(mo), Number(d), Number(h), Number(mi), Number(s ?? 0))
  const offset = offsetMinutes(zone)
  if (base === undefined || offset === undefined) return undefined
  // Stored instants have millisecond precision: round a finer `date_from` up, a `date_to` down.
  const exact = Number(`0.${fraction ?? "0"}`) * 1000
  const millis = side === "start" ? Math.ceil(exact) : Math.floor(exact)
  return base + millis - offset * 60_000
}

/** Milliseconds of a UTC calendar date and time, or `undefined` when it does not exist. */
const utc = (y: number, mo: number, d: number, h: number, mi: number, s: number): number | undefined => {
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59) return undefined
  const date = new Date(0)
  date.setUTCFullYear(y, mo - 1, d)
  date.setUTCHours(h, mi, s, 0)
  return date.getUTCDate() === d ? date.getTime() : undefined
}

/** Minutes east of UTC of `Z`, `±HH:MM` or `±HHMM` (no zone = UTC), or `undefined`. */
const offsetMinutes = (zone: string | undefined): number | undefined => {
  if (zone === undefined || zone.toUpperCase() === "Z") return 0
  const digits = zone.slice(1).replace(":", "")
  const hours = Number(digits.slice(0, 2))
  const minutes = Number(digits.slice(2))
  if (hours > 23 || minutes > 59) return undefined
  return (zone.startsWith("-") ? -1 : 1) * (hours * 60 + minutes)
}

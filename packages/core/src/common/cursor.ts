import { Either, Encoding } from "effect"
import { UUID_PATTERN } from "../internal/validation.js"
import type { OrganizationId } from "../model/organizations.js"
import type { ChatFilters, ChatPosition, ChatSort } from "../storage/ChatRepository.js"
import type { Chat, ChatCursorPagination, ChatId } from "../model/chats.js"

// The opaque cursor of the chat list and of a chat's messages (docs/chats.md "GET /chats",
// "GET /chats/{uuid}/messages"): base64url of `{v, b, k, u}` — format version, binding (a
// hash of the organization and of what decides the list: the sort and filters of the chat
// list, the chat of a message list), the sort value and the uuid of the last record of
// the page. A cursor positions only; a forged one can do no more than a real one.

const VERSION = 1
/** Longer cursors are rejected before decoding. */
const MAX_CURSOR_LENGTH = 512

/**
 * The binding of a cursor: a hash of everything that decides which chats a list holds and
 * in which order. Lists are normalised first (sorted), so `group_uuid=a,b` and `b,a` bind
 * alike.
 */
export const cursorBinding = (organizationId: OrganizationId, filters: ChatFilters, sort: ChatSort): string =>
  hash(
    JSON.stringify([
      organizationId,
      sort.by,
      sort.order,
      filters.search ?? null,
      filters.status ?? null,
      filters.assignedTo === undefined ? null : [filters.assignedTo],
      filters.groupIds === undefined ? null : [...filters.groupIds].sort(),
      filters.labelIds === undefined ? null : [...filters.labelIds].sort(),
      filters.favorite ?? null,
      filters.unread ?? null,
      filters.lastMessageFrom ?? null,
      filters.lastMessageTo ?? null
    ])
  )

/**
 * The binding of a cursor through a list that belongs to one record: `scope` names the
 * list (`"messages"` of a chat, `"webhook_deliveries"` of an endpoint), `recordId` its record.
 */
export const recordListCursorBinding = (organizationId: OrganizationId, scope: string, recordId: string): string =>
  hash(JSON.stringify([organizationId, scope, recordId]))

/** The binding of a cursor through the messages of one chat (newest first). */
export const messagesCursorBinding = (organizationId: OrganizationId, chatId: ChatId): string =>
  recordListCursorBinding(organizationId, "messages", chatId)

/** The position of `chat` in a list sorted by `sort.by`. */
export const positionOf = (chat: Chat, sort: ChatSort): ChatPosition => ({ value: chat[sort.by], uuid: chat.uuid })

/** Encodes a position (a sort value and a uuid) with its binding. */
export const encodeCursor = (binding: string, position: { readonly value: string | null; readonly uuid: string }): string =>
  Encoding.encodeBase64Url(JSON.stringify({ v: VERSION, b: binding, k: position.value, u: position.uuid }))

/**
 * The position of a cursor made with `binding`, or `undefined` when the cursor is not one
 * of ours, is damaged, or was made with another organization, sort or filters.
 * `nullable` says whether the sort value may be `null` (sort by `last_message_at`).
 */
export const decodeCursor = <Id extends string = ChatId>(
  cursor: string,
  binding: string,
  nullable: boolean
): { readonly value: string | null; readonly uuid: Id } | undefined => {
  if (cursor.length === 0 || cursor.length > MAX_CURSOR_LENGTH) return undefined
  const json = Encoding.decodeBase64UrlString(cursor)
  if (Either.isLeft(json)) return undefined
  let payload: unknown
  try {
    payload = JSON.parse(json.right)
  } catch {
    return undefined
  }
  if (typeof payload !== "object" || payload === null) return undefined
  const { v, b, k, u } = payload as Record<string, unknown>
  if (v !== VERSION || b !== binding || typeof u !== "string" || !UUID_PATTERN.test(u)) return undefined
  if (!(typeof k === "string" || (k === null && nullable))) return undefined
  return { value: k, uuid: u as Id }
}

/**
 * One cursor page of `rows`, which the store answered for `limit + 1` (the extra row only
 * says whether there is more): the first `limit` rows and the cursor pagination object,
 * whose `next_cursor` is `cursorOf` the last row of the page, or `null` on the last page.
 */
export const cursorPage = <A>(
  rows: ReadonlyArray<A>,
  limit: number,
  cursorOf: (last: A) => string
): { readonly items: ReadonlyArray<A>; readonly pagination: ChatCursorPagination } => {
  const items = rows.slice(0, limit)
  const last = items[items.length - 1]
  const hasMore = rows.length > limit && last !== undefined
  return { items, pagination: { mode: "cursor", limit, next_cursor: hasMore ? cursorOf(last) : null, has_more: hasMore } }
}

/** cyrb53: a fast, well-mixed 53-bit string hash (not cryptographic; none is needed). */
const hash = (text: string): string => {
  let h1 = 0xdeadbeef
  let h2 = 0x41c6ce57
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    h1 = Math.imul(h1 ^ code, 2654435761)
    h2 = Math.imul(h2 ^ code, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36)
}

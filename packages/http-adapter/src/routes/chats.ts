import { Effect } from "effect"
import { CHAT_STATUSES, type ChatListParams, Chats } from "@switchboard/core"
import { defineRoute } from "./route.js"
import { ChatListData } from "./schemas.js"
import { pageNumber } from "./shared.js"

// Query values arrive as strings. The schema checks what it can say of one parameter alone
// (enums, booleans, integer ranges); Chats.list checks the rest (uuid lists, dates, search
// length, the pagination mode, the cursor), each issue naming its parameter.

const text = { type: "string", optional: true } as const
const boolean = { type: "enum", values: ["true", "false"], optional: true } as const
const pageSize = { type: "number", integer: true, min: 1, max: 100, convert: true, optional: true } as const

/** `"true"` / `"false"` as a boolean; absent stays absent. */
const booleanOf = (value: unknown): boolean | undefined => (value === undefined ? undefined : value === "true")

const stringOf = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined)

const numberOf = (value: unknown): number | undefined => (typeof value === "number" ? value : undefined)

/**
 * `GET /chats` (docs/chats.md "`GET /chats`"): filters `search`, `status`, `assigned_to`, `group_uuid`, `tag_uuid`,
 * `favorite`, `unread`, `date_from`, `date_to` (AND), `sort_by`, `sort_order`, and either
 * offset pages (`pagination=true`, `page`, `per_page`) or cursor pages (`cursor`,
 * `limit`). Data `{chats, pagination}`; every bad parameter → 400 naming it
 * (`invalid_cursor` for a cursor of another sort, filters or organization).
 */
export const listChatsRoute = defineRoute({
  method: "GET",
  path: "/chats",
  tag: "Chats",
  summary: "List chats with the dashboard's filters, sorts and pagination",
  data: ChatListData,
  errors: ["invalid_input", "invalid_cursor"],
  query: {
    search: text,
    status: { type: "enum", values: [...CHAT_STATUSES], optional: true },
    assigned_to: text,
    group_uuid: text,
    tag_uuid: text,
    favorite: boolean,
    unread: boolean,
    date_from: text,
    date_to: text,
    sort_by: { type: "enum", values: ["created_at", "updated_at", "last_message_at"], optional: true },
    sort_order: { type: "enum", values: ["asc", "desc"], optional: true },
    pagination: boolean,
    page: pageNumber,
    per_page: pageSize,
    cursor: text,
    limit: pageSize
  },
  handle: ({ auth, query }) => {
    const params: ChatListParams = {
      search: stringOf(query.search),
      status: stringOf(query.status),
      assigned_to: stringOf(query.assigned_to),
      group_uuid: stringOf(query.group_uuid),
      tag_uuid: stringOf(query.tag_uuid),
      favorite: booleanOf(query.favorite),
      unread: booleanOf(query.unread),
      date_from: stringOf(query.date_from),
      date_to: stringOf(query.date_to),
      sort_by: stringOf(query.sort_by),
      sort_order: stringOf(query.sort_order),
      pagination: booleanOf(query.pagination),
      page: numberOf(query.page),
      per_page: numberOf(query.per_page),
      cursor: stringOf(query.cursor),
      limit: numberOf(query.limit)
    }
    return Effect.map(
      Effect.flatMap(Chats, (chats) => chats.list(auth.organization.id, params)),
      (list) => ({ message: "Chats retrieved", data: list })
    )
  }
})

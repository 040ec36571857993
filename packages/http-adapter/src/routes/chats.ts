import { Effect } from "effect"
import { type ChatId, CHAT_STATUSES, type ChatListParams, Chats, type ChatStatus, InvalidInput, Messaging } from "@switchboard/core"
import { defineRoute } from "./route.js"
import { ChatListData, ChatReadData, ChatRecord, MessageListData } from "./schemas.js"
import { pageNumber, pageSize, uuidOf, uuidParams } from "./shared.js"

// Query values arrive as strings. The schema checks what it can say of one parameter alone
// (enums, booleans, integer ranges); Chats.list checks the rest (uuid lists, dates, search
// length, the pagination mode, the cursor), each issue naming its parameter.

const text = { type: "string", optional: true } as const
const boolean = { type: "enum", values: ["true", "false"], optional: true } as const

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

/** `GET /chats/{uuid}` (extension, docs/chats.md "Inbox routes"): the chat as `GET /chats` lists it. */
export const getChatRoute = defineRoute({
  method: "GET",
  path: "/chats/:uuid",
  tag: "Chats",
  summary: "Read a chat (extension)",
  data: ChatRecord,
  params: uuidParams,
  handle: ({ auth, params }) =>
    Effect.map(
      Effect.flatMap(Chats, (chats) => chats.get(auth.organization.id, uuidOf<ChatId>(params.uuid))),
      (chat) => ({ message: "Chat retrieved", data: chat })
    )
})

/**
 * `GET /chats/{uuid}/messages` (extension, docs/chats.md "Inbox routes"): the chat's
 * messages newest first, cursor pages (`limit` 1–100, default 20; `cursor`); data
 * `{messages, pagination: {mode: "cursor", limit, next_cursor, has_more}}`.
 */
export const listChatMessagesRoute = defineRoute({
  method: "GET",
  path: "/chats/:uuid/messages",
  tag: "Chats",
  summary: "List a chat's messages, newest first (extension)",
  data: MessageListData,
  errors: ["invalid_input", "invalid_cursor"],
  params: uuidParams,
  query: { limit: pageSize, cursor: text },
  handle: ({ auth, params, query }) =>
    Effect.map(
      Effect.flatMap(Chats, (chats) =>
        chats.listMessages(auth.organization.id, uuidOf<ChatId>(params.uuid), {
          limit: numberOf(query.limit),
          cursor: stringOf(query.cursor)
        })
      ),
      (list) => ({ message: "Messages retrieved", data: list })
    )
})

/**
 * `PUT /chats/{uuid}` (extension, docs/chats.md "Inbox routes"): sets any of `status`,
 * `assigned_to` (a user id, or `null` to unassign) and `favorite`; data is the chat. A
 * field given its current value changes nothing (200); a body with none of the three →
 * 400. Applied by `Chats.update` in one atomic store write (one `chat.updated` event when
 * anything changed); a refused body writes nothing.
 */
export const updateChatRoute = defineRoute({
  method: "PUT",
  path: "/chats/:uuid",
  tag: "Chats",
  summary: "Set a chat's status, assignee or favorite flag (extension)",
  data: ChatRecord,
  errors: ["invalid_input"],
  params: uuidParams,
  body: {
    status: { type: "enum", values: [...CHAT_STATUSES], optional: true },
    assigned_to: { type: "string", min: 1, max: 255, optional: true, nullable: true },
    favorite: { type: "boolean", optional: true }
  },
  handle: ({ auth, params, body }) =>
    Effect.gen(function* () {
      const input = body as { status?: ChatStatus | null; assigned_to?: string | null; favorite?: boolean | null }
      yield* checkChatUpdate(input)
      const chats = yield* Chats
      const chat = yield* chats.update(auth.organization.id, uuidOf<ChatId>(params.uuid), {
        ...(input.status == null ? {} : { status: input.status }),
        ...(input.assigned_to === undefined ? {} : { assigned_to: input.assigned_to }),
        ...(input.favorite == null ? {} : { favorite: input.favorite })
      })
      return { message: "Chat updated", data: chat }
    })
})

/**
 * `POST /chats/{uuid}/read` (extension, docs/chats.md "Read receipts"): an optional body
 * `{typing?: boolean}`; `unread_count` 0 and `unread` false (always committed), and the
 * read receipt of the chat's latest inbound message sent to Meta inline
 * (`Messaging.markChatRead`). Data is the chat with its `read_receipt`; `typing` not a
 * boolean → 400 naming it, nothing written. General bucket.
 */
export const markChatReadRoute = defineRoute({
  method: "POST",
  path: "/chats/:uuid/read",
  tag: "Chats",
  summary: "Mark a chat read and send Meta the read receipt (extension)",
  description:
    "Sets `unread_count` to 0 (always), then tells Meta that the business read the chat's latest inbound message " +
    "(`typing: true` also shows the contact a typing indicator). A message already read is not sent again. " +
    "`read_receipt` says whether the receipt was `sent`, `skipped` (and why) or `failed` (and Meta's error).",
  data: ChatReadData,
  errors: ["invalid_input"],
  params: uuidParams,
  body: { typing: { type: "boolean", optional: true } },
  bodyOptional: true,
  handle: ({ auth, params, body }) =>
    Effect.map(
      Effect.flatMap(Messaging, (messaging) =>
        messaging.markChatRead(auth.organization.id, uuidOf<ChatId>(params.uuid), { typing: (body as { typing?: boolean }).typing })
      ),
      (chat) => ({ message: "Chat marked read", data: chat })
    )
})

/** What the schema of `PUT /chats/{uuid}` lets through but the route refuses. */
const checkChatUpdate = (input: { status?: unknown; assigned_to?: unknown; favorite?: unknown }) => {
  const issues: Array<{ code: string; field?: string; message: string }> = []
  if (input.status === undefined && input.assigned_to === undefined && input.favorite === undefined) {
    issues.push({ code: "required", message: "Give at least one of status, assigned_to, favorite" })
  }
  if (input.status === null) issues.push({ code: "invalid_type", field: "status", message: "status must be one of " + CHAT_STATUSES.join(", ") })
  if (input.favorite === null) issues.push({ code: "invalid_type", field: "favorite", message: "favorite must be true or false" })
  return issues.length === 0 ? Effect.void : Effect.fail(new InvalidInput({ issues }))
}

import { Effect, Option } from "effect"
import { InvalidInput, RecordNotFound } from "../model/commonErrors.js"
import { nowIso } from "../internal/time.js"
import { IssueCollector } from "../internal/validation.js"
import type { OrganizationId } from "../model/organizations.js"
import { paginationOf } from "../model/common.js"
import type { ChatPatch } from "../storage/ChatRepository.js"
import type { StorageService } from "../storage/Storage.js"
import type { ChatsService } from "./ChatsService.js"
import { cursorPage, encodeCursor, positionOf } from "../common/cursor.js"
import { ChatStatusUnchanged } from "../model/chatErrors.js"
import { readChatListParams, readMessageListParams, UNASSIGNED } from "../common/listParams.js"
import {
  CHAT_STATUSES,
  type ChatId,
  type ChatList,
  type ChatStatus,
  type ChatUpdateInput,
  type MessageList
} from "../model/chats.js"
import { MAX_NAME_LENGTH } from "../model/names.js"

// The chat side of the Chats service: status, assignment, favorite, read, and the reads.

const chatNotFound = (id: string) => new RecordNotFound({ missing: [{ resource: "chat", uuid: id }] })

const invalid = (collector: IssueCollector) => new InvalidInput({ issues: collector.issues })

const found = <A>(option: Option.Option<A>, onNone: () => RecordNotFound) =>
  Option.match(option, { onNone: () => Effect.fail(onNone()), onSome: Effect.succeed })

/**
 * The fields of a chat update as core stores them, each checked (docs/chats.md "Inbox
 * routes"): `status` one of {@link CHAT_STATUSES}; `assigned_to` a user id (trimmed,
 * 1–255 characters, not the reserved `unassigned`) or `null`; `favorite` a boolean. Absent
 * fields are left out.
 */
const readChatUpdate = (collector: IssueCollector, changes: ChatUpdateInput): ChatPatch => {
  const checked: { -readonly [K in keyof ChatPatch]?: ChatPatch[K] } = {}
  if (changes.status !== undefined) {
    if (!CHAT_STATUSES.includes(changes.status)) {
      collector.add("invalid_format", "status", `status must be one of ${CHAT_STATUSES.join(", ")}`)
    }
    checked.status = changes.status
  }
  if (changes.assigned_to !== undefined) {
    const assignee = changes.assigned_to === null ? null : collector.requiredText("assigned_to", changes.assigned_to, MAX_NAME_LENGTH)
    if (assignee === UNASSIGNED) {
      collector.add("invalid_format", "assigned_to", `'${UNASSIGNED}' is reserved: pass null to unassign`)
    }
    checked.assigned_to = assignee
  }
  if (changes.favorite !== undefined) {
    if (typeof changes.favorite !== "boolean") collector.add("invalid_type", "favorite", "favorite must be true or false")
    checked.favorite = changes.favorite
  }
  return checked
}

/** Every operation of the Chats service but those of `messageOperations.ts`. */
export const makeChatOperations = (
  storage: StorageService
): Omit<ChatsService, "receiveInbound" | "appendOutbound" | "updateMessageStatus" | "applyProviderStatus" | "ensure"> => {
  /** Applies `patch`; answers the chat and whether anything changed. */
  const patch = (organizationId: OrganizationId, id: ChatId, changes: ChatPatch) =>
    Effect.flatMap(nowIso, (now) => storage.chats.update(organizationId, id, changes, now)).pipe(
      Effect.flatMap((outcome) =>
        outcome._tag === "NotFound" ? Effect.fail(chatNotFound(id)) : Effect.succeed(outcome)
      )
    )

  /** Validates the fields given (every issue at once), then applies them in one store write. */
  const update = Effect.fn("Chats.update")(function* (organizationId: OrganizationId, id: ChatId, changes: ChatUpdateInput) {
    const collector = new IssueCollector()
    const checked = readChatUpdate(collector, changes)
    if (collector.issues.length > 0) return yield* invalid(collector)
    return yield* patch(organizationId, id, checked)
  })

  const assign = Effect.fn("Chats.assign")(function* (organizationId: OrganizationId, id: ChatId, userId: string | null) {
    return (yield* update(organizationId, id, { assigned_to: userId })).chat
  })

  const setStatus = Effect.fn("Chats.setStatus")(function* (organizationId: OrganizationId, id: ChatId, status: ChatStatus) {
    const outcome = yield* update(organizationId, id, { status })
    if (!outcome.changed) return yield* new ChatStatusUnchanged({ chat_uuid: id, status })
    return outcome.chat
  })

  const setFavorite = Effect.fn("Chats.setFavorite")(function* (organizationId: OrganizationId, id: ChatId, favorite: boolean) {
    return (yield* update(organizationId, id, { favorite })).chat
  })

  // A plain function returning one Effect, no generator and no span, like
  // Organizations.authenticate: `GET /chats` runs it on every request. No span above all: when
  // a span ends, Effect's `NativeSpan` stores the exit (the whole page) in an object literal
  // whose allocation site V8 pretenures under load; referenced from old space, every page
  // then outlived its request until the next mark-compact (docs/benchmarks.md "Memory").
  const list: ChatsService["list"] = (organizationId, params) => {
    const read = readChatListParams(organizationId, params)
    if ("issues" in read) return Effect.fail(new InvalidInput({ issues: read.issues }))
    const { filters, sort, binding, mode } = read.query
    if (mode._tag === "Offset") {
      return Effect.map(
        storage.chats.listPage(organizationId, filters, sort, mode.page),
        (page): ChatList => ({ chats: page.items, pagination: { mode: "offset", ...paginationOf(mode.page, page.total) } })
      )
    }
    return Effect.map(storage.chats.listAfter(organizationId, filters, sort, mode.after, mode.limit + 1), (rows): ChatList => {
      const page = cursorPage(rows, mode.limit, (last) => encodeCursor(binding, positionOf(last, sort)))
      return { chats: page.items, pagination: page.pagination }
    })
  }

  // Like `list`: no span holding each page of messages past its request.
  const listMessages: ChatsService["listMessages"] = (organizationId, id, params) => {
    const read = readMessageListParams(organizationId, id, params)
    if ("issues" in read) return Effect.fail(new InvalidInput({ issues: read.issues }))
    const { binding, limit, after } = read.query
    return Effect.map(
      Effect.flatMap(storage.chats.listMessagesAfter(organizationId, id, after, limit + 1), (rows) =>
        found(rows, () => chatNotFound(id))
      ),
      (rows): MessageList => {
        const page = cursorPage(rows, limit, (last) => encodeCursor(binding, { value: last.created_at, uuid: last.uuid }))
        return { messages: page.items, pagination: page.pagination }
      }
    )
  }

  return {
    update: (organizationId, id, changes) => Effect.map(update(organizationId, id, changes), (outcome) => outcome.chat),
    assign,
    setStatus,
    setFavorite,
    markRead: (organizationId, id) => Effect.map(patch(organizationId, id, { unread_count: 0 }), (outcome) => outcome.chat),
    get: (organizationId, id) =>
      Effect.flatMap(storage.chats.findById(organizationId, id), (chat) => found(chat, () => chatNotFound(id))),
    getByContact: (organizationId, contactId) =>
      Effect.flatMap(storage.chats.findByContact(organizationId, contactId), (chat) =>
        found(chat, () => new RecordNotFound({ missing: [{ resource: "chat", uuid: contactId, field: "contact_uuid" }] }))
      ),
    getMessage: (organizationId, id) =>
      Effect.flatMap(storage.chats.findMessage(organizationId, id), (message) =>
        found(message, () => new RecordNotFound({ missing: [{ resource: "message", uuid: id }] }))
      ),
    messages: (organizationId, id, page) =>
      Effect.flatMap(storage.chats.listMessages(organizationId, id, page), (messages) =>
        found(messages, () => chatNotFound(id))
      ),
    listMessages,
    list
  }
}

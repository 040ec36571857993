import { Effect, Option } from "effect"
import type { Chat, ChatId, ChatStatus } from "../../chats/model.js"
import { CONTACT_DETAIL_FIELDS, type ContactId } from "../../contacts/model.js"
import type { Message, MessageId } from "../../messages/model.js"
import type { OrganizationId } from "../../organizations/model.js"
import {
  type ChatAppendOutcome,
  type ChatAppendRequest,
  type ChatFilters,
  type ChatImportOutcome,
  type ChatImportRequest,
  type ChatPosition,
  type ChatRepository,
  type ChatSort,
  type MessageStatusOutcome,
  type MessageStatusUpdate,
  type ProviderStatusUpdate,
  chatSearchMatches,
  chatSearchText
} from "../ChatRepository.js"
import { byName, type ContactRow, type MemoryState, phoneKey } from "./state.js"
import { recordWebhookEvent } from "./webhooks.js"

/** A chat as the memory store keeps it: its own fields, the rest is read from the contact. */
interface ChatRow {
  readonly organization_id: OrganizationId
  readonly uuid: ChatId
  readonly contact_uuid: ContactId
  readonly status: ChatStatus
  readonly assigned_to: string | null
  readonly favorite: boolean
  readonly unread_count: number
  readonly last_message_at: string | null
  readonly last_message_uuid: MessageId | null
  readonly created_at: string
  readonly updated_at: string
}

/** What the memory store holds for chats, beside the {@link MemoryState} of contacts. */
interface ChatState {
  readonly chats: Map<ChatId, ChatRow>
  readonly chatIdsByContact: Map<ContactId, ChatId>
  readonly messages: Map<MessageId, Message & { readonly organization_id: OrganizationId }>
  readonly messageIdsByChat: Map<ChatId, Array<MessageId>>
  /** `organizationId direction providerMessageId` → message uuid, for deduplication. */
  readonly providerIds: Map<string, MessageId>
  /** `organizationId outbound providerMessageId` → status reports waiting for that id, in arrival order. */
  readonly pendingStatuses: Map<string, Array<ProviderStatusUpdate>>
}

const chatStates = new WeakMap<MemoryState, ChatState>()

/** The chat state that belongs to one memory store, created on first use. */
const chatStateOf = (state: MemoryState): ChatState => {
  let chatState = chatStates.get(state)
  if (chatState === undefined) {
    chatState = {
      chats: new Map(),
      chatIdsByContact: new Map(),
      messages: new Map(),
      messageIdsByChat: new Map(),
      providerIds: new Map(),
      pendingStatuses: new Map()
    }
    chatStates.set(state, chatState)
  }
  return chatState
}

/**
 * The chats repository of the memory store. A chat whose contact was deleted is deleted
 * with its messages when next seen (the memory contacts repository knows nothing of chats).
 */
export const chatRepository = (state: MemoryState): ChatRepository => {
  const chats = chatStateOf(state)
  const view = makeView(state, chats)
  return {
    appendMessage: (organizationId, request) => Effect.sync(() => appendMessage(state, chats, organizationId, request)),
    ensure: (organizationId, contactId, newChat, now) =>
      Effect.sync(() => {
        if (state.contacts.get(contactId)?.organization_id !== organizationId) return { _tag: "ContactNotFound" } as const
        const id = chats.chatIdsByContact.get(contactId)
        const existing = id === undefined ? undefined : view.owned(organizationId, id)
        if (existing !== undefined) return { _tag: "Ensured", chat: view.chatOf(existing), created: false } as const
        const row = newChatRow(organizationId, contactId, newChat, now)
        chats.chats.set(row.uuid, row)
        chats.chatIdsByContact.set(contactId, row.uuid)
        return { _tag: "Ensured", chat: view.chatOf(row), created: true } as const
      }),
    update: (organizationId, id, patch, now) =>
      Effect.sync(() => {
        const row = view.owned(organizationId, id)
        if (row === undefined) return { _tag: "NotFound" } as const
        const changed = (Object.keys(patch) as Array<keyof typeof patch>).some((key) => patch[key] !== row[key])
        const updated: ChatRow = changed ? { ...row, ...patch, updated_at: now } : row
        chats.chats.set(id, updated)
        if (changed) recordWebhookEvent(state, organizationId, "chat.updated", now, () => view.chatOf(updated))
        return { _tag: "Updated", chat: view.chatOf(updated), changed } as const
      }),
    findById: (organizationId, id) => Effect.sync(() => Option.map(Option.fromNullable(view.owned(organizationId, id)), view.chatOf)),
    findByContact: (organizationId, contactId) =>
      Effect.sync(() => {
        const id = chats.chatIdsByContact.get(contactId)
        return Option.map(Option.fromNullable(id && view.owned(organizationId, id)), view.chatOf)
      }),
    listAfter: (organizationId, filters, sort, after, limit) =>
      Effect.sync(() => {
        const rows = view.matching(organizationId, filters, sort)
        const start = after === null ? 0 : rows.findIndex((row) => compare(position(row, sort), after, sort) > 0)
        return (start === -1 ? [] : rows.slice(start, start + limit)).map(view.chatOf)
      }),
    listPage: (organizationId, filters, sort, page) =>
      Effect.sync(() => {
        const rows = view.matching(organizationId, filters, sort)
        const start = (page.page - 1) * page.per_page
        return { items: rows.slice(start, start + page.per_page).map(view.chatOf), total: rows.length }
      }),
    findMessage: (organizationId, id) => Effect.sync(() => Option.map(Option.fromNullable(view.ownedMessage(organizationId, id)), withoutOrganization)),
    listMessages: (organizationId, chatId, page) =>
      Effect.sync(() => {
        if (view.owned(organizationId, chatId) === undefined) return Option.none()
        const ids = chats.messageIdsByChat.get(chatId) ?? []
        const messages = ids.map((id) => chats.messages.get(id)!).sort(newestFirst)
        const start = (page.page - 1) * page.per_page
        return Option.some({ items: messages.slice(start, start + page.per_page).map(withoutOrganization), total: messages.length })
      }),
    listMessagesAfter: (organizationId, chatId, after, limit) =>
      Effect.sync(() => {
        if (view.owned(organizationId, chatId) === undefined) return Option.none()
        const ids = chats.messageIdsByChat.get(chatId) ?? []
        const messages = ids.map((id) => chats.messages.get(id)!).sort(newestFirst)
        const start = after === null ? 0 : messages.findIndex((message) => newestFirst(message, { ...after }) > 0)
        return Option.some((start === -1 ? [] : messages.slice(start, start + limit)).map(withoutOrganization))
      }),
    importChats: (organizationId, request) => Effect.sync(() => importChats(state, chats, organizationId, request)),
    updateMessageStatus: (organizationId, id, update) =>
      Effect.sync((): MessageStatusOutcome => {
        const message = view.ownedMessage(organizationId, id)
        if (message === undefined) return { _tag: "NotFound" }
        let outcome = applyStatus(chats, organizationId, message, update)
        const providerId = outcome.message.provider_message_id
        if (update.provider_message_id !== undefined && providerId !== null && message.direction === "outbound") {
          const key = providerKey(organizationId, "outbound", providerId)
          const pending = chats.pendingStatuses.get(key) ?? []
          chats.pendingStatuses.delete(key)
          for (const report of pending.filter((report) => report.pendingUntil > update.now)) {
            const next = applyStatus(chats, organizationId, chats.messages.get(id)!, { ...report, now: update.now })
            outcome = { ...next, changed: outcome.changed || next.changed }
          }
        }
        const written = outcome.message
        if (written.status !== message.status) {
          recordWebhookEvent(state, organizationId, "message.status_updated", update.now, () => written)
        }
        return outcome
      }),
    updateMessageStatusByProviderId: (organizationId, providerMessageId, update) =>
      Effect.sync(() => {
        const key = providerKey(organizationId, "outbound", providerMessageId)
        const id = chats.providerIds.get(key)
        const message = id === undefined ? undefined : view.ownedMessage(organizationId, id)
        if (message !== undefined && message.provider_message_id === providerMessageId) {
          const outcome = applyStatus(chats, organizationId, message, update)
          if (outcome.message.status !== message.status) {
            recordWebhookEvent(state, organizationId, "message.status_updated", update.now, () => outcome.message)
          }
          return outcome
        }
        for (const [otherKey, reports] of chats.pendingStatuses) {
          const live = reports.filter((report) => report.pendingUntil > update.now)
          if (live.length === 0) chats.pendingStatuses.delete(otherKey)
          else if (live.length !== reports.length) chats.pendingStatuses.set(otherKey, live)
        }
        chats.pendingStatuses.set(key, [...(chats.pendingStatuses.get(key) ?? []), update])
        return { _tag: "Pending" } as const
      }),
    lastInboundChannel: (organizationId, contactId) =>
      Effect.sync(() => {
        const chatId = chats.chatIdsByContact.get(contactId)
        if (chatId === undefined || view.owned(organizationId, chatId) === undefined) return Option.none()
        const ids = chats.messageIdsByChat.get(chatId) ?? []
        const newest = ids
          .map((id) => chats.messages.get(id)!)
          .filter((message) => message.direction === "inbound" && message.channel_uuid !== null)
          .sort(newestFirst)[0]
        return Option.fromNullable(newest?.channel_uuid)
      })
  }
}

/** Writes one status update to a stored message per the rules of `MessageStatusUpdate`. */
const applyStatus = (
  chats: ChatState,
  organizationId: OrganizationId,
  message: Message & { readonly organization_id: OrganizationId },
  update: Pick<MessageStatusUpdate, "status" | "from" | "failure" | "now" | "provider_message_id">
): Extract<MessageStatusOutcome, { _tag: "Updated" }> => {
  const written = update.from.includes(message.status)
  const status = written ? update.status : message.status
  const failure = written && update.failure !== undefined ? update.failure : message.failure
  const providerId = update.provider_message_id ?? message.provider_message_id
  const changed = status !== message.status || providerId !== message.provider_message_id || failure !== message.failure
  const stored = changed ? { ...message, status, failure, provider_message_id: providerId, updated_at: update.now } : message
  chats.messages.set(message.uuid, stored)
  if (changed && providerId !== null) chats.providerIds.set(providerKey(organizationId, stored.direction, providerId), message.uuid)
  return { _tag: "Updated", message: withoutOrganization(stored), changed }
}

const withoutOrganization = ({ organization_id: _, ...message }: Message & { readonly organization_id: OrganizationId }): Message =>
  message

const providerKey = (organizationId: OrganizationId, direction: string, providerId: string) => `${organizationId} ${direction} ${providerId}`

/** Newest first (`created_at desc, uuid desc`): negative when `a` comes first. */
const newestFirst = (a: Pick<Message, "created_at" | "uuid">, b: Pick<Message, "created_at" | "uuid">): number =>
  a.created_at === b.created_at ? (a.uuid < b.uuid ? 1 : -1) : a.created_at < b.created_at ? 1 : -1

/** The sort position of a row; a missing `last_message_at` sorts as `""`, before any time. */
const position = (row: ChatRow, sort: ChatSort): ChatPosition => ({ value: row[sort.by], uuid: row.uuid })

/** Compares two positions in `sort` order: negative when `a` comes first. */
const compare = (a: ChatPosition, b: ChatPosition, sort: ChatSort): number => {
  const [av, bv] = [a.value ?? "", b.value ?? ""]
  const ascending = av === bv ? (a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0) : av < bv ? -1 : 1
  return sort.order === "asc" ? ascending : -ascending
}

/** Reads of chats: ownership (purging chats of deleted contacts), records, filtering. */
const makeView = (state: MemoryState, chats: ChatState) => {
  const purge = (row: ChatRow) => {
    chats.chats.delete(row.uuid)
    chats.chatIdsByContact.delete(row.contact_uuid)
    for (const id of chats.messageIdsByChat.get(row.uuid) ?? []) {
      const message = chats.messages.get(id)
      chats.messages.delete(id)
      if (message?.provider_message_id) chats.providerIds.delete(providerKey(row.organization_id, message.direction, message.provider_message_id))
    }
    chats.messageIdsByChat.delete(row.uuid)
  }
  const live = (row: ChatRow | undefined): ChatRow | undefined => {
    if (row === undefined) return undefined
    if (state.contacts.get(row.contact_uuid)?.organization_id === row.organization_id) return row
    purge(row)
    return undefined
  }
  const owned = (organizationId: OrganizationId, id: ChatId) => {
    const row = live(chats.chats.get(id))
    return row?.organization_id === organizationId ? row : undefined
  }
  const ownedMessage = (organizationId: OrganizationId, id: MessageId) => {
    const message = chats.messages.get(id)
    if (message === undefined || message.organization_id !== organizationId) return undefined
    return owned(organizationId, message.chat_uuid) === undefined ? undefined : chats.messages.get(id)
  }
  const chatOf = (row: ChatRow): Chat => chatRecord(state, chats, row)
  const matching = (organizationId: OrganizationId, filters: ChatFilters, sort: ChatSort): Array<ChatRow> =>
    [...chats.chats.values()]
      .filter((row) => row.organization_id === organizationId && live(row) !== undefined && matches(state, row, filters))
      .sort((a, b) => compare(position(a, sort), position(b, sort), sort))
  return { owned, ownedMessage, chatOf, matching }
}

/** The chat record of a live row: contact, its groups and labels, the last message. */
const chatRecord = (state: MemoryState, chats: ChatState, row: ChatRow): Chat => {
  const contact = state.contacts.get(row.contact_uuid)!
  const groups = []
  for (const [groupId, members] of state.groupMembers) {
    const group = state.groups.get(groupId)
    if (group !== undefined && members.has(row.contact_uuid)) groups.push({ uuid: group.uuid, name: group.name })
  }
  const labels = []
  for (const [labelId, carriers] of state.labelledContacts) {
    const label = state.labels.get(labelId)
    if (label !== undefined && carriers.has(row.contact_uuid)) labels.push({ uuid: label.uuid, name: label.name, color: label.color })
  }
  const last = row.last_message_uuid === null ? undefined : chats.messages.get(row.last_message_uuid)
  return {
    uuid: row.uuid,
    contact: { uuid: contact.uuid, first_name: contact.first_name, last_name: contact.last_name, phone: contact.phone },
    status: row.status,
    assigned_to: row.assigned_to,
    groups: byName(groups),
    labels: byName(labels),
    favorite: row.favorite,
    unread: row.unread_count > 0,
    unread_count: row.unread_count,
    last_message_at: row.last_message_at,
    last_message:
      last === undefined
        ? null
        : { uuid: last.uuid, direction: last.direction, type: last.type, text: last.text, status: last.status, created_at: last.created_at },
    created_at: row.created_at,
    updated_at: row.updated_at
  }
}

/** Whether a chat passes every filter given (AND; lists match any). */
const matches = (state: MemoryState, row: ChatRow, filters: ChatFilters): boolean => {
  const contact = state.contacts.get(row.contact_uuid)!
  const inAny = (ids: ReadonlyArray<string> | undefined, links: Map<string, Set<ContactId>>) =>
    ids === undefined || ids.some((id) => links.get(id)?.has(row.contact_uuid) === true)
  const at = row.last_message_at
  return (
    (filters.search === undefined || chatSearchMatches(chatSearchText(contact), filters.search)) &&
    (filters.status === undefined || row.status === filters.status) &&
    (filters.assignedTo === undefined || row.assigned_to === filters.assignedTo) &&
    inAny(filters.groupIds, state.groupMembers as Map<string, Set<ContactId>>) &&
    inAny(filters.labelIds, state.labelledContacts as Map<string, Set<ContactId>>) &&
    (filters.favorite === undefined || row.favorite === filters.favorite) &&
    (filters.unread === undefined || row.unread_count > 0 === filters.unread) &&
    (filters.lastMessageFrom === undefined || (at !== null && at >= filters.lastMessageFrom)) &&
    (filters.lastMessageTo === undefined || (at !== null && at <= filters.lastMessageTo))
  )
}

/** A chat without messages, as `ensure` and `appendMessage` create it. */
const newChatRow = (
  organizationId: OrganizationId,
  contactId: ContactId,
  newChat: { readonly uuid: ChatId; readonly status: ChatStatus },
  now: string
): ChatRow => ({
  organization_id: organizationId,
  uuid: newChat.uuid,
  contact_uuid: contactId,
  status: newChat.status,
  assigned_to: null,
  favorite: false,
  unread_count: 0,
  last_message_at: null,
  last_message_uuid: null,
  created_at: now,
  updated_at: now
})

const emptyDetails = Object.fromEntries(CONTACT_DETAIL_FIELDS.map((field) => [field, null]))

/** Checks first (duplicate, contact), then writes; synchronous, so atomic. */
const appendMessage = (
  state: MemoryState,
  chats: ChatState,
  organizationId: OrganizationId,
  request: ChatAppendRequest
): ChatAppendOutcome => {
  const view = makeView(state, chats)
  const { message } = request
  const key = message.provider_message_id === null ? undefined : providerKey(organizationId, message.direction, message.provider_message_id)
  const earlier = key === undefined || !request.dedupe ? undefined : chats.providerIds.get(key)
  const duplicate = earlier === undefined ? undefined : view.ownedMessage(organizationId, earlier)
  if (duplicate !== undefined) {
    return { _tag: "Duplicate", chat: view.chatOf(view.owned(organizationId, duplicate.chat_uuid)!), message: withoutOrganization(duplicate) }
  }
  const contact = resolveContact(state, organizationId, request)
  if (contact === undefined) return { _tag: "ContactNotFound" }
  const existingId = chats.chatIdsByContact.get(contact.row.uuid)
  const existing = existingId === undefined ? undefined : view.owned(organizationId, existingId)
  const chat: ChatRow = existing ?? newChatRow(organizationId, contact.row.uuid, request.newChat, request.now)
  const stored = { ...message, organization_id: organizationId, chat_uuid: chat.uuid, contact_uuid: contact.row.uuid }
  chats.messages.set(message.uuid, stored)
  chats.messageIdsByChat.set(chat.uuid, [...(chats.messageIdsByChat.get(chat.uuid) ?? []), message.uuid])
  if (key !== undefined) chats.providerIds.set(key, message.uuid)
  const newest = chat.last_message_at === null || message.created_at >= chat.last_message_at
  const updated: ChatRow = {
    ...chat,
    status: request.reopen.from.includes(chat.status) ? request.reopen.to : chat.status,
    unread_count: chat.unread_count + request.unreadIncrement,
    last_message_at: newest ? message.created_at : chat.last_message_at,
    last_message_uuid: newest ? message.uuid : chat.last_message_uuid,
    updated_at: request.now
  }
  chats.chats.set(chat.uuid, updated)
  chats.chatIdsByContact.set(contact.row.uuid, chat.uuid)
  if (message.direction === "inbound") {
    recordWebhookEvent(state, organizationId, "message.received", request.now, () => withoutOrganization(stored))
    if (existing !== undefined && updated.status !== existing.status) {
      recordWebhookEvent(state, organizationId, "chat.updated", request.now, () => view.chatOf(updated))
    }
  }
  return { _tag: "Appended", chat: view.chatOf(updated), message: withoutOrganization(stored), contactCreated: contact.created, chatCreated: existing === undefined }
}

/** The contact of a request: found by uuid or phone, or created by phone. */
const resolveContact = (state: MemoryState, organizationId: OrganizationId, request: ChatAppendRequest) => {
  const reference = request.contact
  if (reference._tag === "ById") {
    const row = state.contacts.get(reference.uuid)
    return row?.organization_id === organizationId ? { row, created: false } : undefined
  }
  const id = state.contactIdsByPhone.get(phoneKey(organizationId, reference.phone))
  const found = id === undefined ? undefined : state.contacts.get(id)
  if (found !== undefined) return { row: found, created: false }
  const row = {
    ...(emptyDetails as Omit<ContactRow, "organization_id" | "uuid" | "phone" | "phone_valid" | "created_at" | "updated_at">),
    organization_id: organizationId,
    uuid: reference.create.uuid,
    phone: reference.phone,
    phone_valid: reference.create.phone_valid ?? true,
    first_name: reference.create.first_name,
    last_name: reference.create.last_name,
    created_at: request.now,
    updated_at: request.now
  } satisfies ContactRow
  state.contacts.set(row.uuid, row)
  state.contactIdsByPhone.set(phoneKey(organizationId, reference.phone), row.uuid)
  return { row, created: true }
}

/** The identity of an imported message within its chat: direction, type, text, created_at. */
const importKey = (message: Pick<Message, "direction" | "type" | "text" | "created_at">): string =>
  JSON.stringify([message.direction, message.type, message.text, message.created_at])

/** `importChats`: checks every contact first, then writes; synchronous, so atomic. */
const importChats = (
  state: MemoryState,
  chats: ChatState,
  organizationId: OrganizationId,
  request: ChatImportRequest
): ChatImportOutcome => {
  const view = makeView(state, chats)
  const missing = request.chats
    .map((entry) => entry.contactId)
    .filter((id) => state.contacts.get(id)?.organization_id !== organizationId)
  if (missing.length > 0) return { _tag: "ContactsNotFound", contactIds: missing }
  const results = request.chats.map((entry) => {
    const existingId = chats.chatIdsByContact.get(entry.contactId)
    const existing = existingId === undefined ? undefined : view.owned(organizationId, existingId)
    let row: ChatRow = existing ?? {
      ...newChatRow(organizationId, entry.contactId, { uuid: entry.chatId, status: "open" }, entry.created_at),
      ...entry.attributes
    }
    const ids = chats.messageIdsByChat.get(row.uuid) ?? []
    const known = new Set(ids.map((id) => importKey(chats.messages.get(id)!)))
    let added = 0
    for (const message of entry.messages) {
      const key = importKey(message)
      if (known.has(key)) continue
      known.add(key)
      added += 1
      chats.messages.set(message.uuid, { ...message, organization_id: organizationId, chat_uuid: row.uuid, contact_uuid: entry.contactId })
      ids.push(message.uuid)
      if (row.last_message_at === null || message.created_at >= row.last_message_at) {
        row = { ...row, last_message_at: message.created_at, last_message_uuid: message.uuid }
      }
    }
    chats.messageIdsByChat.set(row.uuid, ids)
    if (existing === undefined) {
      const newest = row.last_message_at !== null && row.last_message_at > row.created_at ? row.last_message_at : row.created_at
      row = { ...row, updated_at: newest }
    } else {
      const patched = { ...row, ...entry.attributes }
      const changed = added > 0 || (Object.keys(entry.attributes) as Array<keyof typeof entry.attributes>).some((key) => entry.attributes[key] !== existing[key])
      row = changed ? { ...patched, updated_at: request.now } : existing
    }
    chats.chats.set(row.uuid, row)
    chats.chatIdsByContact.set(entry.contactId, row.uuid)
    return { uuid: row.uuid, created: existing === undefined, messagesAdded: added }
  })
  return { _tag: "Imported", chats: results }
}

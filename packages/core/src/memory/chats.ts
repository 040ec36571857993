import { Effect, Option } from "effect"
import { type Chat, type ChatId, type ChatStatus, chatSearchMatches, chatSearchText } from "../model/chats.js"
import { windowExpiresAt } from "../model/window.js"
import { CONTACT_DETAIL_FIELDS, type ContactId } from "../model/contacts.js"
import { listedMessageType, type Message, type MessageId, type MessageReactionParty, withReaction } from "../model/messages.js"
import type { OrganizationId } from "../model/organizations.js"
import type {
  ChatAppendOutcome,
  ChatAppendRequest,
  ChatFilters,
  ChatImportOutcome,
  ChatImportRequest,
  ChatPosition,
  ChatRepository,
  ChatSort,
  InboundReaction,
  MessageStatusOutcome
} from "../storage/ChatRepository.js"
import { insertInboundMedia } from "./media.js"
import { applyStatus, providerKey, withoutOrganization, writeStatus } from "./messages.js"
import { placeInOutbox } from "./outbox.js"
import { byName, type ChatRow, type ContactRow, type MemoryState, phoneKey } from "./state.js"
import { recordWebhookEvent } from "./webhooks.js"

/**
 * The chats repository of the memory store. A chat whose contact was deleted is deleted
 * with its messages when next seen (the memory contacts repository knows nothing of chats).
 */
export const chatRepository = (state: MemoryState): ChatRepository => {
  const view = makeView(state)
  return {
    appendMessage: (organizationId, request) => Effect.sync(() => appendMessage(state, organizationId, request)),
    ensure: (organizationId, contactId, newChat, now) =>
      Effect.sync(() => {
        if (state.contacts.get(contactId)?.organization_id !== organizationId) return { _tag: "ContactNotFound" } as const
        const id = state.chatIdsByContact.get(contactId)
        const existing = id === undefined ? undefined : view.owned(organizationId, id)
        if (existing !== undefined) return { _tag: "Ensured", chat: view.chatOf(existing), created: false } as const
        const row = newChatRow(organizationId, contactId, newChat, now)
        state.chats.set(row.uuid, row)
        state.chatIdsByContact.set(contactId, row.uuid)
        return { _tag: "Ensured", chat: view.chatOf(row), created: true } as const
      }),
    update: (organizationId, id, patch, now) =>
      Effect.sync(() => {
        const row = view.owned(organizationId, id)
        if (row === undefined) return { _tag: "NotFound" } as const
        const changed = (Object.keys(patch) as Array<keyof typeof patch>).some((key) => patch[key] !== row[key])
        const updated: ChatRow = changed ? { ...row, ...patch, updated_at: now } : row
        state.chats.set(id, updated)
        if (changed) recordWebhookEvent(state, organizationId, "chat.updated", now, () => view.chatOf(updated))
        return { _tag: "Updated", chat: view.chatOf(updated), changed } as const
      }),
    findById: (organizationId, id) => Effect.sync(() => Option.map(Option.fromNullable(view.owned(organizationId, id)), view.chatOf)),
    findByContact: (organizationId, contactId) =>
      Effect.sync(() => {
        const id = state.chatIdsByContact.get(contactId)
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
        const messages = listedMessages(state, chatId)
        const start = (page.page - 1) * page.per_page
        return Option.some({ items: messages.slice(start, start + page.per_page).map(withoutOrganization), total: messages.length })
      }),
    listMessagesAfter: (organizationId, chatId, after, limit) =>
      Effect.sync(() => {
        if (view.owned(organizationId, chatId) === undefined) return Option.none()
        const messages = listedMessages(state, chatId)
        const start = after === null ? 0 : messages.findIndex((message) => newestFirst(message, { ...after }) > 0)
        return Option.some((start === -1 ? [] : messages.slice(start, start + limit)).map(withoutOrganization))
      }),
    importChats: (organizationId, request) => Effect.sync(() => importChats(state, organizationId, request)),
    updateMessageStatus: (organizationId, id, update) =>
      Effect.sync((): MessageStatusOutcome => {
        const message = view.ownedMessage(organizationId, id)
        if (message === undefined) return { _tag: "NotFound" }
        return writeStatus(state, organizationId, message, update)
      }),
    updateMessageStatusByProviderId: (organizationId, providerMessageId, update) =>
      Effect.sync(() => {
        const key = providerKey(organizationId, "outbound", providerMessageId)
        const id = state.providerIds.get(key)
        const message = id === undefined ? undefined : view.ownedMessage(organizationId, id)
        if (message !== undefined && message.provider_message_id === providerMessageId) {
          const outcome = applyStatus(state, organizationId, message, update)
          // A reaction row is never announced: its target's message.reactions_updated is.
          if (outcome.message.status !== message.status && listedMessageType(message.type)) {
            recordWebhookEvent(state, organizationId, "message.status_updated", update.now, () => outcome.message)
          }
          return outcome
        }
        for (const [otherKey, reports] of state.pendingStatuses) {
          const live = reports.filter((report) => report.pendingUntil > update.now)
          if (live.length === 0) state.pendingStatuses.delete(otherKey)
          else if (live.length !== reports.length) state.pendingStatuses.set(otherKey, live)
        }
        state.pendingStatuses.set(key, [...(state.pendingStatuses.get(key) ?? []), update])
        return { _tag: "Pending" } as const
      }),
    lastInboundChannel: (organizationId, contactId) =>
      Effect.sync(() => {
        const chatId = state.chatIdsByContact.get(contactId)
        if (chatId === undefined || view.owned(organizationId, chatId) === undefined) return Option.none()
        const ids = state.messageIdsByChat.get(chatId) ?? []
        const newest = ids
          .map((id) => state.messages.get(id)!)
          .filter((message) => message.direction === "inbound" && message.channel_uuid !== null)
          .sort(newestFirst)[0]
        return Option.fromNullable(newest?.channel_uuid)
      }),
    latestInboundMessage: (organizationId, chatId) =>
      Effect.sync(() => {
        if (view.owned(organizationId, chatId) === undefined) return Option.none()
        const newest = (state.messageIdsByChat.get(chatId) ?? [])
          .map((id) => state.messages.get(id)!)
          .filter((message) => message.direction === "inbound" && listedMessageType(message.type))
          .sort(newestFirst)[0]
        return Option.fromNullable(newest)
      }),
    lastInboundAt: (organizationId, contactId, channelId) =>
      Effect.sync(() => {
        if (state.contacts.get(contactId)?.organization_id !== organizationId) return Option.none()
        return Option.fromNullable(state.lastInboundAt.get(windowKey(contactId, channelId)))
      })
  }
}

/** A chat's messages as its lists show them: newest first, reaction rows left out. */
const listedMessages = (state: MemoryState, chatId: ChatId) =>
  (state.messageIdsByChat.get(chatId) ?? [])
    .map((id) => state.messages.get(id)!)
    .filter((message) => listedMessageType(message.type))
    .sort(newestFirst)

/** The key of `lastInboundAt`. */
const windowKey = (contactId: ContactId, channelId: string): string => `${contactId} ${channelId}`

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
const makeView = (state: MemoryState) => {
  const purge = (row: ChatRow) => {
    state.chats.delete(row.uuid)
    state.chatIdsByContact.delete(row.contact_uuid)
    for (const id of state.messageIdsByChat.get(row.uuid) ?? []) {
      const message = state.messages.get(id)
      state.messages.delete(id)
      state.dispatch.delete(id)
      if (message?.provider_message_id) state.providerIds.delete(providerKey(row.organization_id, message.direction, message.provider_message_id))
    }
    state.messageIdsByChat.delete(row.uuid)
  }
  const live = (row: ChatRow | undefined): ChatRow | undefined => {
    if (row === undefined) return undefined
    if (state.contacts.get(row.contact_uuid)?.organization_id === row.organization_id) return row
    purge(row)
    return undefined
  }
  const owned = (organizationId: OrganizationId, id: ChatId) => {
    const row = live(state.chats.get(id))
    return row?.organization_id === organizationId ? row : undefined
  }
  const ownedMessage = (organizationId: OrganizationId, id: MessageId) => {
    const message = state.messages.get(id)
    if (message === undefined || message.organization_id !== organizationId) return undefined
    return owned(organizationId, message.chat_uuid) === undefined ? undefined : state.messages.get(id)
  }
  const chatOf = (row: ChatRow): Chat => chatRecord(state, row)
  const matching = (organizationId: OrganizationId, filters: ChatFilters, sort: ChatSort): Array<ChatRow> =>
    [...state.chats.values()]
      .filter((row) => row.organization_id === organizationId && live(row) !== undefined && matches(state, row, filters))
      .sort((a, b) => compare(position(a, sort), position(b, sort), sort))
  return { owned, ownedMessage, chatOf, matching }
}

/** The chat record of a live row: contact, its groups and labels, the last message. */
const chatRecord = (state: MemoryState, row: ChatRow): Chat => {
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
  const last = row.last_message_uuid === null ? undefined : state.messages.get(row.last_message_uuid)
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
    last_inbound_channel_uuid: row.last_inbound_channel_uuid,
    window_expires_at: windowExpiresAt(row.last_inbound_at),
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
  last_inbound_at: null,
  last_inbound_channel_uuid: null,
  created_at: now,
  updated_at: now
})

const emptyDetails = Object.fromEntries(CONTACT_DETAIL_FIELDS.map((field) => [field, null]))

/** Checks first (duplicate by uuid or provider id, contact), then writes; synchronous, so atomic. */
export const appendMessage = (
  state: MemoryState,
  organizationId: OrganizationId,
  request: ChatAppendRequest
): ChatAppendOutcome => {
  const view = makeView(state)
  const { message } = request
  const key = message.provider_message_id === null ? undefined : providerKey(organizationId, message.direction, message.provider_message_id)
  const earlier = key === undefined || !request.dedupe ? undefined : state.providerIds.get(key)
  // A held uuid (an Idempotency-Key's) already written by the other writer, else a redelivery.
  const duplicate = view.ownedMessage(organizationId, message.uuid) ?? (earlier === undefined ? undefined : view.ownedMessage(organizationId, earlier))
  if (duplicate !== undefined) {
    return { _tag: "Duplicate", chat: view.chatOf(view.owned(organizationId, duplicate.chat_uuid)!), message: withoutOrganization(duplicate) }
  }
  const contact = resolveContact(state, organizationId, request)
  if (contact === undefined) return { _tag: "ContactNotFound" }
  const existingId = state.chatIdsByContact.get(contact.row.uuid)
  const existing = existingId === undefined ? undefined : view.owned(organizationId, existingId)
  const chat: ChatRow = existing ?? newChatRow(organizationId, contact.row.uuid, request.newChat, request.now)
  const replyTo = request.replyTo === undefined ? message.reply_to : (byProviderId(state, view, organizationId, request.replyTo)?.uuid ?? null)
  const created = { ...message, reply_to: replyTo, organization_id: organizationId, chat_uuid: chat.uuid, contact_uuid: contact.row.uuid }
  const stored = request.outbox === undefined ? created : placeInOutbox(state, created, request.outbox, request.now)
  state.messages.set(message.uuid, stored)
  state.messageIdsByChat.set(chat.uuid, [...(state.messageIdsByChat.get(chat.uuid) ?? []), message.uuid])
  if (key !== undefined) state.providerIds.set(key, message.uuid)
  if (request.media !== undefined) insertInboundMedia(state, organizationId, request.media, message.uuid, contact.row.uuid)
  // A reaction row is no message of its own: not the last one, and it does not move the chat.
  const listed = listedMessageType(message.type)
  const newest = listed && (chat.last_message_at === null || message.created_at >= chat.last_message_at)
  const window = windowWrite(state, contact.row.uuid, chat, request)
  const updated: ChatRow = {
    ...chat,
    ...window,
    status: request.reopen.from.includes(chat.status) ? request.reopen.to : chat.status,
    unread_count: chat.unread_count + request.unreadIncrement,
    last_message_at: newest ? message.created_at : chat.last_message_at,
    last_message_uuid: newest ? message.uuid : chat.last_message_uuid,
    updated_at: listed ? request.now : chat.updated_at
  }
  state.chats.set(chat.uuid, updated)
  state.chatIdsByContact.set(contact.row.uuid, chat.uuid)
  if (request.reaction !== undefined) {
    foldReaction(state, view, organizationId, "contact", request.reaction, request.now)
  } else if (message.direction === "inbound") {
    recordWebhookEvent(state, organizationId, "message.received", request.now, () => withoutOrganization(stored))
  }
  if (message.direction === "inbound") {
    if (existing !== undefined && updated.status !== existing.status) {
      recordWebhookEvent(state, organizationId, "chat.updated", request.now, () => view.chatOf(updated))
    }
  }
  return { _tag: "Appended", chat: view.chatOf(updated), message: withoutOrganization(stored), contactCreated: contact.created, chatCreated: existing === undefined }
}

/** The organization's message with this provider id: outbound first, then inbound. */
const byProviderId = (state: MemoryState, view: ReturnType<typeof makeView>, organizationId: OrganizationId, providerId: string) => {
  for (const direction of ["outbound", "inbound"] as const) {
    const id = state.providerIds.get(providerKey(organizationId, direction, providerId))
    const found = id === undefined ? undefined : view.ownedMessage(organizationId, id)
    if (found !== undefined && found.provider_message_id === providerId) return found
  }
  return undefined
}

/**
 * Folds a reaction of `party` into its target (the message with `reaction.message_id` as
 * provider id): its `reactions` and `updated_at`, with `message.reactions_updated` when
 * they changed. No such message: nothing.
 */
export const foldReaction = (
  state: MemoryState,
  view: ReturnType<typeof makeView>,
  organizationId: OrganizationId,
  party: MessageReactionParty,
  reaction: InboundReaction,
  now: string
): void => {
  const target = byProviderId(state, view, organizationId, reaction.message_id)
  if (target === undefined) return
  const reactions = withReaction(target.reactions, party, reaction.emoji, reaction.at)
  if (reactions === target.reactions) return
  const written = { ...target, reactions, updated_at: now }
  state.messages.set(target.uuid, written)
  recordWebhookEvent(state, organizationId, "message.reactions_updated", now, () => withoutOrganization(written))
}

/**
 * The customer service window write of an inbound message through a channel with
 * `inboundAt`: the contact's `last_inbound_at` on the channel moves forward, and the
 * chat's fields to set when this is its latest inbound instant (else none).
 */
const windowWrite = (
  state: MemoryState,
  contactId: ContactId,
  chat: ChatRow,
  request: ChatAppendRequest
): Partial<Pick<ChatRow, "last_inbound_at" | "last_inbound_channel_uuid">> => {
  const { inboundAt, message } = request
  if (inboundAt === undefined || message.direction !== "inbound" || message.channel_uuid === null) return {}
  const key = windowKey(contactId, message.channel_uuid)
  const stored = state.lastInboundAt.get(key)
  if (stored === undefined || inboundAt > stored) state.lastInboundAt.set(key, inboundAt)
  const latest = chat.last_inbound_at === null || inboundAt >= chat.last_inbound_at
  return latest ? { last_inbound_at: inboundAt, last_inbound_channel_uuid: message.channel_uuid } : {}
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
  organizationId: OrganizationId,
  request: ChatImportRequest
): ChatImportOutcome => {
  const view = makeView(state)
  const missing = request.chats
    .map((entry) => entry.contactId)
    .filter((id) => state.contacts.get(id)?.organization_id !== organizationId)
  if (missing.length > 0) return { _tag: "ContactsNotFound", contactIds: missing }
  const results = request.chats.map((entry) => {
    const existingId = state.chatIdsByContact.get(entry.contactId)
    const existing = existingId === undefined ? undefined : view.owned(organizationId, existingId)
    let row: ChatRow = existing ?? {
      ...newChatRow(organizationId, entry.contactId, { uuid: entry.chatId, status: "open" }, entry.created_at),
      ...entry.attributes
    }
    const ids = state.messageIdsByChat.get(row.uuid) ?? []
    const known = new Set(ids.map((id) => importKey(state.messages.get(id)!)))
    let added = 0
    for (const message of entry.messages) {
      const key = importKey(message)
      if (known.has(key)) continue
      known.add(key)
      added += 1
      state.messages.set(message.uuid, { ...message, organization_id: organizationId, chat_uuid: row.uuid, contact_uuid: entry.contactId })
      ids.push(message.uuid)
      if (row.last_message_at === null || message.created_at >= row.last_message_at) {
        row = { ...row, last_message_at: message.created_at, last_message_uuid: message.uuid }
      }
    }
    state.messageIdsByChat.set(row.uuid, ids)
    if (existing === undefined) {
      const newest = row.last_message_at !== null && row.last_message_at > row.created_at ? row.last_message_at : row.created_at
      row = { ...row, updated_at: newest }
    } else {
      const patched = { ...row, ...entry.attributes }
      const changed = added > 0 || (Object.keys(entry.attributes) as Array<keyof typeof entry.attributes>).some((key) => entry.attributes[key] !== existing[key])
      row = changed ? { ...patched, updated_at: request.now } : existing
    }
    state.chats.set(row.uuid, row)
    state.chatIdsByContact.set(entry.contactId, row.uuid)
    return { uuid: row.uuid, created: existing === undefined, messagesAdded: added }
  })
  return { _tag: "Imported", chats: results }
}

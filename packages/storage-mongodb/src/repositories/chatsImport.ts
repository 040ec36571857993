import type {
  ChatId,
  ChatImportEntry,
  ChatImportOutcome,
  ChatImportRequest,
  ContactId,
  Message,
  NewMessage
} from "@switchboard/core"
import type { AnyBulkWriteOperation } from "mongodb"
import type { ChatDocument, ContactDocument, MessageDocument } from "../internal/documents.js"
import { anyOf, chatById, chatImportPipeline, ofOrganization, owned, ownedAmong } from "../internal/queries.js"
import { messageDocument } from "../internal/records.js"
import type { Collections } from "../internal/schema.js"

/** One entry's writes, planned before any of them. */
interface EntryPlan {
  readonly entry: ChatImportEntry
  readonly chatId: string
  readonly created: boolean
  readonly messages: ReadonlyArray<MessageDocument>
  readonly write: AnyBulkWriteOperation<ContactDocument> | undefined
}

/**
 * `chats.importChats` (the admin import and `seed`, docs/import.md) in a few round trips for
 * the whole batch: one read of the contacts (`ContactsNotFound` before any write), one read
 * of the message identities of the chats that exist, one unordered `insertMany` of every
 * new message, one unordered `bulkWrite` of the chats (a new chat set on its contact only
 * while it has none; an existing one updated by a pipeline). When a chat was created
 * meanwhile by an inbound message (its conditional `$set` matched nothing), that entry's
 * messages are deleted and the entry is imported again onto the chat that now exists.
 * Without a transaction, a failure midway leaves the chats written so far; importing
 * again adds only what is missing (messages are matched by direction, type, text and
 * created_at).
 */
export const importChats = async (
  collections: Collections,
  organizationId: string,
  request: ChatImportRequest
): Promise<ChatImportOutcome> => {
  const ids = request.chats.map((entry) => entry.contactId)
  const contacts = ids.length === 0 ? [] : await collections.contacts.find(ownedAmong(organizationId, ids), { projection: { chat: 1 } }).toArray()
  const byId = new Map(contacts.map((d) => [d._id, d]))
  const missing = ids.filter((id) => !byId.has(id))
  if (missing.length > 0) return { _tag: "ContactsNotFound", contactIds: missing as Array<ContactId> }
  const existingChats = contacts.flatMap((d) => (d.chat === undefined ? [] : [d.chat.uuid]))
  const keys = await messageKeys(collections, organizationId, existingChats)
  const plans = request.chats.map((entry) => planEntry(organizationId, entry, byId.get(entry.contactId)!.chat, keys, request.now))
  const messages = plans.flatMap((plan) => plan.messages)
  if (messages.length > 0) await collections.messages.insertMany(messages, { ordered: false })
  const writes = plans.flatMap((plan) => (plan.write === undefined ? [] : [plan.write]))
  if (writes.length > 0) await collections.contacts.bulkWrite(writes, { ordered: false })
  const lost = await lostCreations(collections, organizationId, plans)
  const redone = lost.length === 0 ? undefined : await redo(collections, organizationId, request, lost)
  return {
    _tag: "Imported",
    chats: plans.map((plan) => redone?.get(plan.entry.contactId) ?? { uuid: plan.chatId as ChatId, created: plan.created, messagesAdded: plan.messages.length })
  }
}

/** The identity of a message within its chat (what makes a re-import add nothing). */
const identity = (m: Pick<Message, "direction" | "type" | "text" | "created_at">): string =>
  JSON.stringify([m.direction, m.type, m.text, m.created_at])

/** The identities of the messages of each chat among `chatIds`. */
const messageKeys = async (collections: Collections, organizationId: string, chatIds: ReadonlyArray<string>) => {
  const keys = new Map<string, Set<string>>()
  if (chatIds.length === 0) return keys
  const cursor = collections.messages.find(
    { ...ofOrganization(organizationId), chat_uuid: anyOf(chatIds) },
    { projection: { chat_uuid: 1, direction: 1, type: 1, text: 1, created_at: 1 } }
  )
  for await (const m of cursor) {
    const set = keys.get(m.chat_uuid) ?? new Set<string>()
    set.add(identity(m))
    keys.set(m.chat_uuid, set)
  }
  return keys
}

/** The messages an entry adds and the write of its chat (none when nothing changes). */
const planEntry = (
  organizationId: string,
  entry: ChatImportEntry,
  chat: ChatDocument | undefined,
  keys: Map<string, Set<string>>,
  now: string
): EntryPlan => {
  const chatId = chat?.uuid ?? entry.chatId
  const known = new Set(keys.get(chatId) ?? [])
  const added: Array<NewMessage> = []
  let last: NewMessage | null = null
  for (const message of entry.messages) {
    if (known.has(identity(message))) continue
    known.add(identity(message))
    added.push(message)
    if (last === null || message.created_at >= last.created_at) last = message
  }
  const messages = added.map((m) =>
    messageDocument(organizationId, { ...m, chat_uuid: chatId as Message["chat_uuid"], contact_uuid: entry.contactId }, undefined)
  )
  if (chat === undefined) {
    const document = newImportedChat(entry, last)
    const write = { updateOne: { filter: { ...owned(organizationId, entry.contactId), chat: { $exists: false } }, update: { $set: { chat: document } } } }
    return { entry, chatId, created: true, messages, write }
  }
  const keysOfPatch = ["status", "assigned_to", "favorite", "unread_count"] as const
  const changed = added.length > 0 || keysOfPatch.some((key) => entry.attributes[key] !== undefined && entry.attributes[key] !== chat[key])
  const update = chatImportPipeline(entry.attributes, last, now)
  return { entry, chatId, created: false, messages, write: changed ? { updateOne: { filter: chatById(organizationId, chatId), update } } : undefined }
}

/** A new chat per the entry: defaults, then attributes; last message and `updated_at` from the messages. */
const newImportedChat = (entry: ChatImportEntry, last: NewMessage | null): ChatDocument => {
  const unreadCount = entry.attributes.unread_count ?? 0
  const lastAt = last?.created_at ?? ""
  return {
    uuid: entry.chatId,
    status: entry.attributes.status ?? "open",
    assigned_to: entry.attributes.assigned_to === undefined ? null : entry.attributes.assigned_to,
    favorite: entry.attributes.favorite ?? false,
    unread_count: unreadCount,
    unread: unreadCount > 0,
    last_message_at: lastAt,
    last_message_uuid: last?.uuid ?? null,
    created_at: entry.created_at,
    updated_at: lastAt > entry.created_at ? lastAt : entry.created_at
  }
}

/** The plans whose new chat was not set (the contact got a chat meanwhile). */
const lostCreations = async (collections: Collections, organizationId: string, plans: ReadonlyArray<EntryPlan>) => {
  const creations = plans.filter((plan) => plan.created)
  if (creations.length === 0) return []
  const stored = await collections.contacts
    .find({ ...ofOrganization(organizationId), "chat.uuid": anyOf(creations.map((plan) => plan.chatId)) }, { projection: { "chat.uuid": 1 } })
    .toArray()
  const set = new Set(stored.map((d) => d.chat?.uuid))
  return creations.filter((plan) => !set.has(plan.chatId))
}

/** Deletes the messages of lost creations and imports those entries again onto the existing chats. */
const redo = async (collections: Collections, organizationId: string, request: ChatImportRequest, lost: ReadonlyArray<EntryPlan>) => {
  await collections.messages.deleteMany(ownedAmong(organizationId, lost.flatMap((plan) => plan.messages.map((m) => m._id))))
  const again = await importChats(collections, organizationId, { chats: lost.map((plan) => plan.entry), now: request.now })
  const results = new Map<string, { readonly uuid: ChatId; readonly created: boolean; readonly messagesAdded: number }>()
  if (again._tag === "Imported") lost.forEach((plan, index) => results.set(plan.entry.contactId, again.chats[index]!))
  return results
}

import { Effect } from "effect"
import type { CountryCode } from "libphonenumber-js"
import { readContent } from "../chats/messageContent.js"
import { dateBound, UNASSIGNED } from "../common/listParams.js"
import { CHAT_STATUSES, type ChatId, type ChatStatus } from "../model/chats.js"
import type { ContactId } from "../model/contacts.js"
import { isRecord, IssueCollector } from "../internal/validation.js"
import { type MessageId, MessageStatus } from "../model/messages.js"
import type { OrganizationId } from "../model/organizations.js"
import type { SecureRandomService } from "../random/SecureRandom.js"
import type { ChatImportEntry, ChatPatch, NewMessage } from "../storage/ChatRepository.js"
import type { StorageError } from "../storage/errors.js"
import type { StorageService } from "../storage/Storage.js"
import { MAX_NAME_LENGTH } from "../model/names.js"

// The `chats` key of the admin import (docs/import.md):
// read with the rest of the document before anything is written, written after the
// contacts step (which creates the contacts of chat phones the file does not list).
// Used by Imports.importDocument.

/**
 * One chat of the document after reading, merged by phone: the attributes given (absent
 * ones are not in `attributes`), the `created_at` given (if any), and every message.
 */
export interface ReadChat {
  readonly phone: string
  readonly attributes: ChatPatch
  readonly created_at: string | undefined
  readonly messages: ReadonlyArray<ReadMessage>
}

/** A message of a chat entry, without its uuid. */
export type ReadMessage = Omit<NewMessage, "uuid">

/** The chats of a document: merged by E.164 phone (first-seen order) and each phone as written. */
export interface ChatsDocument {
  readonly chats: ReadonlyArray<ReadChat>
  readonly phonesAsGiven: ReadonlyArray<{ readonly asGiven: string; readonly phone: string }>
}

/**
 * Reads `chats` (`[{phone, status, assigned_to, favorite, unread_count, created_at,
 * messages: [{direction, type, text, created_at, status}]}]`), adding every problem to
 * `collector` with its JSON path (`chats[2].messages[0].created_at`):
 * - `phone` required (normalised to E.164 like contacts); `status` one of open, pending,
 *   resolved, closed; `assigned_to` a user id (1–255 characters, not `unassigned`) or
 *   `null`; `favorite` a boolean; `unread_count` an integer ≥ 0; `created_at` an ISO 8601
 *   date or date-time (UTC when no offset). Every attribute is optional.
 * - each message: `direction` inbound or outbound (required), `type` text (default),
 *   template or media with the content rules of sends (`text` ≤ 4096 characters; a
 *   template message needs `template`, a media one `media`), `created_at` required,
 *   `status` one of queued, sent, delivered, read, failed (default delivered for inbound,
 *   sent for outbound).
 * Entries with the same phone are one chat: later attributes overwrite, messages add up,
 * the first `created_at` given wins.
 */
export const readChats = (
  collector: IssueCollector,
  document: unknown,
  defaultCountry: CountryCode | undefined
): ChatsDocument => {
  const root = isRecord(document) ? document : {}
  const value = root["chats"]
  if (value !== undefined && !Array.isArray(value)) collector.add("invalid_type", "chats", "chats must be an array")
  const entries: ReadonlyArray<unknown> = Array.isArray(value) ? value : []
  const merged = new Map<string, { attributes: ChatPatch; created_at: string | undefined; messages: Array<ReadMessage> }>()
  const phonesAsGiven: Array<{ asGiven: string; phone: string }> = []
  entries.forEach((entry, index) => {
    const path = `chats[${index}]`
    if (!isRecord(entry)) {
      collector.add("invalid_type", path, `${path} must be an object`)
      return
    }
    const chat = readChat(collector, path, entry, defaultCountry)
    if (chat.phone === "") return
    phonesAsGiven.push({ asGiven: typeof entry.phone === "string" ? entry.phone : chat.phone, phone: chat.phone })
    const known = merged.get(chat.phone)
    if (known === undefined) merged.set(chat.phone, { ...chat, messages: [...chat.messages] })
    else {
      known.attributes = { ...known.attributes, ...chat.attributes }
      known.created_at ??= chat.created_at
      known.messages.push(...chat.messages)
    }
  })
  return { chats: [...merged].map(([phone, chat]) => ({ phone, ...chat })), phonesAsGiven }
}

/** The number of uuids {@link writeChats} needs: one per chat and one per message. */
export const uuidsNeeded = (document: ChatsDocument): number =>
  document.chats.reduce((total, chat) => total + 1 + chat.messages.length, 0)

/**
 * Writes what {@link readChats} read through `Storage.chats.importChats`, once the contacts
 * exist (`contactIds` by E.164 phone): a chat without `created_at` is created at its oldest
 * message, or at `now` without messages. Returns `{phone as written: chat uuid}`. A contact
 * missing at this point (deleted meanwhile) is a defect. Fails only with `StorageError`.
 */
export const writeChats = (
  storage: StorageService,
  random: SecureRandomService,
  organizationId: OrganizationId,
  document: ChatsDocument,
  contactIds: ReadonlyMap<string, ContactId>,
  now: string
): Effect.Effect<Record<string, ChatId>, StorageError> =>
  Effect.gen(function* () {
    if (document.chats.length === 0) return {}
    const ids = yield* random.uuids(uuidsNeeded(document))
    let next = 0
    const entries = document.chats.map(
      (chat): ChatImportEntry => ({
        contactId: contactIds.get(chat.phone) as ContactId,
        chatId: ids[next++] as ChatId,
        created_at: chat.created_at ?? oldest(chat.messages) ?? now,
        attributes: chat.attributes,
        messages: chat.messages.map((message) => ({ ...message, uuid: ids[next++] as MessageId }))
      })
    )
    const outcome = yield* storage.chats.importChats(organizationId, { chats: entries, now })
    if (outcome._tag === "ContactsNotFound") {
      return yield* Effect.dieMessage(`import: contacts ${outcome.contactIds.join(", ")} vanished during the import`)
    }
    const byPhone = new Map(document.chats.map((chat, index) => [chat.phone, outcome.chats[index]!.uuid]))
    return Object.fromEntries(document.phonesAsGiven.map(({ asGiven, phone }) => [asGiven, byPhone.get(phone) as ChatId]))
  })

/** Reads one chat entry (an object) at `path`. */
const readChat = (
  collector: IssueCollector,
  path: string,
  entry: Record<string, unknown>,
  defaultCountry: CountryCode | undefined
): ReadChat => {
  const phone = collector.phone(`${path}.phone`, entry.phone, defaultCountry)
  const attributes: { -readonly [K in keyof ChatPatch]: ChatPatch[K] } = {}
  if (entry.status !== undefined) {
    if (typeof entry.status === "string" && (CHAT_STATUSES as ReadonlyArray<string>).includes(entry.status)) {
      attributes.status = entry.status as ChatStatus
    } else collector.add("invalid_format", `${path}.status`, `${path}.status must be one of ${CHAT_STATUSES.join(", ")}`)
  }
  if (entry.assigned_to === null) attributes.assigned_to = null
  else if (entry.assigned_to !== undefined) {
    const assignee = collector.requiredText(`${path}.assigned_to`, entry.assigned_to, MAX_NAME_LENGTH)
    if (assignee === UNASSIGNED) collector.add("invalid_format", `${path}.assigned_to`, `'${UNASSIGNED}' is reserved: use null for no assignee`)
    attributes.assigned_to = assignee
  }
  if (entry.favorite !== undefined) {
    if (typeof entry.favorite === "boolean") attributes.favorite = entry.favorite
    else collector.add("invalid_type", `${path}.favorite`, `${path}.favorite must be true or false`)
  }
  if (entry.unread_count !== undefined) {
    if (typeof entry.unread_count === "number" && Number.isSafeInteger(entry.unread_count) && entry.unread_count >= 0) {
      attributes.unread_count = entry.unread_count
    } else collector.add("out_of_range", `${path}.unread_count`, `${path}.unread_count must be an integer of 0 or more`)
  }
  const created_at = dateBound(collector, `${path}.created_at`, entry.created_at ?? undefined, "start")
  const messages: Array<ReadMessage> = []
  if (entry.messages !== undefined && !Array.isArray(entry.messages)) {
    collector.add("invalid_type", `${path}.messages`, `${path}.messages must be an array`)
  }
  for (const [index, message] of (Array.isArray(entry.messages) ? entry.messages : []).entries()) {
    const read = readMessage(collector, `${path}.messages[${index}]`, message)
    if (read !== undefined) messages.push(read)
  }
  return { phone, attributes, created_at, messages }
}

const DIRECTIONS = ["inbound", "outbound"] as const

/** Reads one message at `path`; `undefined` when it is not an object. */
const readMessage = (collector: IssueCollector, path: string, value: unknown): ReadMessage | undefined => {
  if (!isRecord(value)) {
    collector.add("invalid_type", path, `${path} must be an object`)
    return undefined
  }
  const direction = value.direction
  if (typeof direction !== "string" || !(DIRECTIONS as ReadonlyArray<string>).includes(direction)) {
    collector.add(direction === undefined ? "required" : "invalid_format", `${path}.direction`, `${path}.direction must be inbound or outbound`)
  }
  // readContent names fields from the message's root ("text", "media.url"): prefix them.
  const local = new IssueCollector()
  const content = readContent(local, { ...value, type: value.type ?? "text" }, ["text", "template", "media"])
  for (const issue of local.issues) collector.add(issue.code, `${path}.${issue.field}`, `${path}.${issue.message}`)
  if (value.created_at === undefined || value.created_at === null) {
    collector.add("required", `${path}.created_at`, `${path}.created_at is required`)
  }
  const createdAt = dateBound(collector, `${path}.created_at`, value.created_at ?? undefined, "start") ?? ""
  const outbound = direction === "outbound"
  let status: MessageStatus = outbound ? "sent" : "delivered"
  if (value.status !== undefined) {
    if (typeof value.status === "string" && (IMPORTED_STATUSES as ReadonlyArray<string>).includes(value.status)) {
      status = value.status as MessageStatus
    } else collector.add("invalid_format", `${path}.status`, `${path}.status must be one of ${IMPORTED_STATUSES.join(", ")}`)
  }
  return {
    direction: outbound ? "outbound" : "inbound",
    ...content,
    content: null,
    status,
    provider_message_id: null,
    failure: null,
    channel_uuid: null,
    // Imported history was never handed to a transport.
    transport: null,
    attempts: 0,
    next_attempt_at: null,
    broadcast_uuid: null,
    reply_to: null,
    reactions: [],
    created_at: createdAt,
    updated_at: createdAt
  }
}

/** The earliest `created_at` of `messages`, if any. */
const oldest = (messages: ReadonlyArray<ReadMessage>): string | undefined =>
  messages.reduce<string | undefined>((min, message) => (min === undefined || message.created_at < min ? message.created_at : min), undefined)


/**
 * The statuses an imported message may have: every {@link MessageStatus} but `sending`
 * (a send queue's claim; an imported message is never in the send queue, docs/chats.md "Import").
 */
const IMPORTED_STATUSES: ReadonlyArray<MessageStatus> = MessageStatus.literals.filter((status) => status !== "sending")

import { randomUUID } from "node:crypto"
import { Option } from "effect"
import {
  type Chat,
  type ChatAppendOutcome,
  type ChatAppendRequest,
  type ChatEnsureOutcome,
  type ChatRepository,
  type ChatStatus,
  type ChatUpdateOutcome,
  type InboundReaction,
  type Message,
  type MessageReactionParty,
  type MessageStatusOutcome,
  type ProviderStatusOutcome,
  withReaction
} from "@switchboard/core"
import type { ChatDocument, ContactDocument } from "../internal/documents.js"
import { attempt, isDuplicateKey } from "../internal/driver.js"
import {
  chatById,
  chatListQuery,
  chatPatchUpdate,
  chatTouchPipeline,
  contactByPhone,
  eq,
  ofOrganization,
  owned
} from "../internal/queries.js"
import { chatRecords, messageDocument, messageRecord, newMediaDocument } from "../internal/records.js"
import { type Collections, HAS_CHAT, IS_REACTION } from "../internal/schema.js"
import type { Usage } from "../internal/usage.js"
import { importChats } from "./chatsImport.js"
import { newContactDocument } from "./contactsImport.js"
import { endMediaOfDeletedMessage, moveInboundMedia } from "./media.js"
import { placeInOutbox } from "./outbox.js"
import { applyPending, chatExists, writeStatus } from "./statusWrites.js"
import { fillMarker, pendingEvent, reopenMarkerStage, subscribersOf } from "./webhooks.js"

/** The fields a chat record is made from. */
const CHAT_PROJECTION = { phone: 1, first_name: 1, last_name: 1, group_ids: 1, label_ids: 1, chat: 1 } as const

/** The organization's message document with this provider id: outbound first, then inbound; `null` when none. */
const messageByProviderId = async (collections: Collections, organizationId: string, providerId: string) =>
  (await collections.messages.findOne({ ...ofOrganization(organizationId), direction: eq("outbound"), provider_message_id: eq(providerId) })) ??
  (await collections.messages.findOne({ ...ofOrganization(organizationId), direction: eq("inbound"), provider_message_id: eq(providerId) }))

/**
 * Folds a reaction of `party` into its target (the message with `reaction.message_id` as
 * provider id): its `reactions` (core's `withReaction`) and `updated_at`, with
 * `message.reactions_updated` for `endpoints` in the same document update, compare-and-set
 * on the reactions read (retried when another write came first). No such message: nothing.
 */
export const foldReaction = async (
  collections: Collections,
  organizationId: string,
  endpoints: ReadonlyArray<string>,
  party: MessageReactionParty,
  reaction: InboundReaction,
  now: string
): Promise<void> => {
  for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
    const document = await messageByProviderId(collections, organizationId, reaction.message_id)
    if (document === null) return
    const target = messageRecord(document)
    const reactions = withReaction(target.reactions, party, reaction.emoji, reaction.at)
    if (reactions === target.reactions) return
    const written: Message = { ...target, reactions, updated_at: now }
    const event = endpoints.length === 0 ? {} : { $push: { pending_events: pendingEvent("message.reactions_updated", now, endpoints, written) } }
    const result = await collections.messages.updateOne(
      { _id: eq(document._id), reactions: document.reactions === undefined ? { $exists: false } : eq(document.reactions) },
      { $set: { reactions, updated_at: now }, ...event } as never
    )
    if (result.matchedCount > 0) return
  }
}

/**
 * Folds the inbound reaction rows written before reactions were folded (no
 * `reactions_folded`) into their targets, at start-up (the SQL stores' migrations' rule):
 * oldest first, each the contact's reaction on its target at the row's `created_at` (a
 * later one replaces it, an empty emoji removes it), with no event; each row is then
 * marked. Chats whose last message was such a row get their newest other message as last
 * (none: `''` and `null`). Idempotent: a crash between is repaired at the next start. The
 * rows are read through the `messages_reactions_to_fold` index (only those not folded yet)
 * and iterated, never collected.
 */
export const upgradeReactions = async (collections: Collections): Promise<void> => {
  const rows = collections.messages.find(
    { ...IS_REACTION, reactions_folded: { $exists: false } },
    { sort: { reactions_folded: 1, created_at: 1, _id: 1 }, hint: "messages_reactions_to_fold" }
  )
  for await (const row of rows) {
    const content = row.content === undefined || row.content === null ? {} : (JSON.parse(row.content) as Record<string, unknown>)
    const reaction = (typeof content.reaction === "object" && content.reaction !== null ? content.reaction : content) as Record<string, unknown>
    if (row.direction === "inbound" && typeof reaction.message_id === "string" && reaction.message_id !== "") {
      const emoji = typeof reaction.emoji === "string" ? reaction.emoji : ""
      const target = await messageByProviderId(collections, row.organization_id, reaction.message_id)
      if (target !== null && target.type !== "reaction") {
        const reactions = withReaction(messageRecord(target).reactions, "contact", emoji, row.created_at)
        await collections.messages.updateOne({ _id: eq(target._id) }, { $set: { reactions } } as never)
      }
    }
    const chat = await collections.contacts.findOne({ "chat.last_message_uuid": eq(row._id) } as never, { projection: CHAT_PROJECTION })
    if (chat !== null) {
      const [newest] = await collections.messages
        .find({ chat_uuid: eq(row.chat_uuid), type: { $ne: "reaction" as const } }, { sort: { created_at: -1, _id: -1 }, limit: 1 })
        .toArray()
      await collections.contacts.updateOne({ _id: eq(chat._id) }, {
        $set: { "chat.last_message_uuid": newest?._id ?? null, "chat.last_message_at": newest?.created_at ?? "" }
      } as never)
    }
    await collections.messages.updateOne({ _id: eq(row._id) }, { $set: { reactions_folded: true } } as never)
  }
}

/** How many times a compare-and-set update is retried when another write came first. */
const CAS_ATTEMPTS = 10

/**
 * The append path of {@link chatRepository}'s `appendMessage` (its steps and crash window are
 * described there), shared with the broadcasts' start (broadcasts.ts `writeRecipients`):
 * `appendMessage(organizationId, request)` answers core's `ChatAppendOutcome`; `record`
 * makes a chat record of a contact document, `findChat` reads a contact document by chat
 * uuid, `chatOf` gives a contact document its chat (created as `newChat` when missing).
 */
export const messageAppender = (collections: Collections, usage: Usage) => {
  const record = async (organizationId: string, document: ContactDocument): Promise<Chat> =>
    (await chatRecords(collections, organizationId, [document]))[0]!
  const findChat = (organizationId: string, chatId: string) =>
    collections.contacts.findOne(chatById(organizationId, chatId), { projection: CHAT_PROJECTION }) as Promise<ContactDocument | null>

  /**
   * The `Duplicate` outcome of the stored message with the request message's uuid (a held
   * uuid, an Idempotency-Key's, the other writer stored first) or, under `dedupe`, with its
   * direction and provider id; one look-up either way.
   */
  const duplicateOf = async (organizationId: string, request: ChatAppendRequest): Promise<ChatAppendOutcome | undefined> => {
    const { message } = request
    // Each branch whole, so each is one index probe (`_id`, messages_by_provider_id).
    const held = owned(organizationId, message.uuid)
    const found = await collections.messages.findOne(
      !request.dedupe || message.provider_message_id === null
        ? held
        : {
            $or: [
              held,
              { ...ofOrganization(organizationId), direction: eq(message.direction), provider_message_id: eq(message.provider_message_id) }
            ]
          }
    )
    const chat = found === null ? null : await findChat(organizationId, found.chat_uuid)
    return found === null || chat === null ? undefined : { _tag: "Duplicate", chat: await record(organizationId, chat), message: messageRecord(found) }
  }

  /** The contact of the request, created by phone with its chat when missing. */
  const contactOf = async (organizationId: string, request: ChatAppendRequest) => {
    const reference = request.contact
    if (reference._tag === "ById") {
      const document = await collections.contacts.findOne(owned(organizationId, reference.uuid), { projection: CHAT_PROJECTION })
      return document === null ? undefined : { document: document as ContactDocument, created: false }
    }
    const existing = await collections.contacts.findOne(contactByPhone(organizationId, reference.phone), { projection: CHAT_PROJECTION })
    if (existing !== null) return { document: existing as ContactDocument, created: false }
    const { uuid, first_name, last_name, phone_valid } = reference.create
    const document: ContactDocument = {
      ...newContactDocument(organizationId, uuid, reference.phone, { first_name, last_name }, [], request.now, phone_valid !== false),
      chat: newChatDocument(request.newChat, request.now)
    }
    await usage.add(organizationId, "contacts", 1) // never refused, but counted before the write
    try {
      await collections.contacts.insertOne(document)
      return { document, created: true }
    } catch (error) {
      await usage.add(organizationId, "contacts", -1)
      if (!isDuplicateKey(error)) throw error
      const winner = await collections.contacts.findOne(contactByPhone(organizationId, reference.phone), { projection: CHAT_PROJECTION })
      return winner === null ? undefined : { document: winner as ContactDocument, created: false }
    }
  }

  /** The chat of a contact document, created as `newChat` when it has none. */
  const chatOf = async (organizationId: string, contact: ContactDocument, newChat: ChatAppendRequest["newChat"], now: string) => {
    if (contact.chat !== undefined) return { document: contact, created: false }
    const result = await collections.contacts.updateOne(
      { ...owned(organizationId, contact._id), chat: { $exists: false } },
      { $set: { chat: newChatDocument(newChat, now) } }
    )
    const document = (await collections.contacts.findOne(owned(organizationId, contact._id), { projection: CHAT_PROJECTION })) as ContactDocument | null
    return document?.chat === undefined ? undefined : { document, created: result.modifiedCount > 0 }
  }

  const appendMessage = async (organizationId: string, request: ChatAppendRequest): Promise<ChatAppendOutcome> => {
    const duplicate = await duplicateOf(organizationId, request)
    if (duplicate !== undefined) return duplicate
    const contact = await contactOf(organizationId, request)
    if (contact === undefined) return { _tag: "ContactNotFound" }
    const chat = contact.created
      ? { document: contact.document, created: true }
      : await chatOf(organizationId, contact.document, request.newChat, request.now)
    if (chat === undefined) return { _tag: "ContactNotFound" }
    const chatId = chat.document.chat!.uuid
    const replyTo =
      request.replyTo === undefined ? request.message.reply_to : ((await messageByProviderId(collections, organizationId, request.replyTo))?._id ?? null)
    const appended: Message = {
      ...request.message,
      reply_to: replyTo as Message["reply_to"],
      chat_uuid: chatId as Message["chat_uuid"],
      contact_uuid: contact.document._id as Message["contact_uuid"]
    }
    // A message of the send queue: its dispatch state, claimed at once or queued (outbox.ts).
    const placed = request.outbox === undefined ? undefined : await placeInOutbox(collections, organizationId, appended, request.outbox, request.now)
    const message = placed?.message ?? appended
    const dedupeKey = request.dedupe && message.provider_message_id !== null ? `${message.direction} ${message.provider_message_id}` : undefined
    // Webhook events of an inbound message: message.received in the message's insert, and a
    // chat.updated marker in the chat's update when it reopens the chat (webhooks.ts).
    const subscribers = message.direction === "inbound" ? await subscribersOf(collections, organizationId) : () => []
    // A reaction writes message.reactions_updated on its target instead (foldReaction).
    const received = request.reaction === undefined ? subscribers("message.received") : []
    const reopened = subscribers("chat.updated")
    const marker = reopened.length > 0 && !chat.created ? pendingEvent("chat.updated", request.now, reopened, null) : undefined
    // An inbound media rides in the message's insert (so a duplicate writes none), then is
    // moved to `media` once the chat is updated (media.ts `moveInboundMedia`).
    const pendingMedia =
      request.media === undefined
        ? undefined
        : newMediaDocument(organizationId, { ...request.media, message_uuid: message.uuid, contact_uuid: contact.document._id })
    try {
      const document = {
        ...messageDocument(organizationId, message, dedupeKey),
        ...placed?.dispatch,
        ...(pendingMedia === undefined ? {} : { pending_media: pendingMedia }),
        // Folded in this append: the start-up's upgradeReactions leaves it.
        ...(message.type === "reaction" ? { reactions_folded: true as const } : {})
      }
      await collections.messages.insertOne(
        received.length === 0 ? document : { ...document, pending_events: [pendingEvent("message.received", request.now, received, message)] }
      )
    } catch (error) {
      if (!isDuplicateKey(error)) throw error
      const winner = await duplicateOf(organizationId, request)
      if (winner === undefined) throw error
      return winner
    }
    const pipeline = marker === undefined ? chatTouchPipeline(request) : [reopenMarkerStage(request.reopen, marker), ...chatTouchPipeline(request)]
    const touched = (await collections.contacts.findOneAndUpdate(chatById(organizationId, chatId), pipeline, {
      returnDocument: "after",
      projection: marker === undefined ? CHAT_PROJECTION : { ...CHAT_PROJECTION, pending_events: 1 }
    })) as ContactDocument | null
    if (touched === null) {
      await collections.messages.deleteOne(owned(organizationId, message.uuid)) // the contact was deleted meanwhile
      if (pendingMedia !== undefined) await endMediaOfDeletedMessage(collections, usage, pendingMedia._id)
      return { _tag: "ContactNotFound" }
    }
    if (pendingMedia !== undefined) await moveInboundMedia(collections, usage, message.uuid, pendingMedia)
    if (request.reaction !== undefined) {
      await foldReaction(collections, organizationId, subscribers("message.reactions_updated"), "contact", request.reaction, request.now)
    }
    const chatRecord = await record(organizationId, touched)
    if (marker !== undefined && touched.pending_events?.some((event) => event.id === marker.id) === true) {
      await fillMarker(collections, touched._id, marker.id, chatRecord)
    }
    return {
      _tag: "Appended",
      chat: chatRecord,
      message,
      contactCreated: contact.created,
      chatCreated: chat.created
    }
  }

  return { record, findChat, chatOf, appendMessage }
}

/**
 * `Storage.chats` on MongoDB. A chat is embedded in its contact's document (one chat per
 * contact), so the list filters on the contact's groups, labels and search text and sorts
 * by the chat's keys within one document, on the indexes of schema.ts; deleting the
 * contact deletes the chat. Messages are the `messages` collection; every read checks that
 * the message's chat still exists (a crash between deleting a contact and its messages
 * leaves messages nobody can read).
 *
 * `appendMessage` runs, without a transaction: the duplicate look-up (a message with the
 * request's uuid, a held uuid whose other writer stored first; under `dedupe`, one with its
 * provider id); the contact (created by
 * phone with its chat, counted in usage first: inbound messages are never refused); the
 * chat (created with a conditional `$set`); the message insert (a unique partial index on
 * `dedupe_key` stores one of two concurrent deliveries, `_id` one of two concurrent writers
 * of one uuid; the other answers `Duplicate`, having possibly taken a pacing slot);
 * then one pipeline update of the chat (unread count, reopening, last message,
 * `updated_at`, and with `inboundAt` the customer service window: the contact's
 * `last_inbound_at.<channel>` and the chat's latest one, in the same document); then, for
 * an inbound media message (`media`), the move of its media document, inserted within the
 * message as `pending_media`, to `media` (media.ts `moveInboundMedia`; a crash before it
 * leaves the move to `media.claimFetches`' repair). A message of the send queue (`outbox`) gets its dispatch state, and its
 * pacing slot when claimed at once, just before its insert (outbox.ts `placeInOutbox`). A crash between the last two leaves the message stored and the chat not
 * updated for it; the next message updates the chat. `update` and `updateMessageStatus`
 * are compare-and-set on the values read, retried when another write came first.
 *
 * A status report whose provider id no outbound message has yet is stored in
 * `pending_message_statuses` (a TTL index removes it after `pending_until`). Without a
 * transaction, both sides look again after their own write: `updateMessageStatus` records
 * the provider id, then applies the pending reports of that id; `updateMessageStatusByProviderId`
 * stores its report, then looks the message up again and, found, applies the pending
 * reports itself. Each report is claimed with `findOneAndDelete` before it is applied, so
 * it is applied once whichever side gets it; a crash between the claim and the write loses
 * that one report.
 *
 * Webhook events (webhooks.ts) ride in the document each write changes: `message.received`
 * in the inbound message's insert; `message.status_updated` in each status write;
 * `chat.updated` in `update`'s compare-and-set, and, for a chat an inbound message
 * reopens, as a marker appended by the chat's pipeline update (only when it reopens),
 * whose data the next write fills with the chat record returned.
 *
 * @category repositories
 */
export const chatRepository = (collections: Collections, usage: Usage): ChatRepository => {
  const { record, findChat, chatOf, appendMessage } = messageAppender(collections, usage)

  /** The organization's outbound message with this provider id (on `messages_by_provider_id`). */
  const outboundByProviderId = (organizationId: string, providerMessageId: string) =>
    collections.messages.findOne({ ...ofOrganization(organizationId), direction: eq("outbound"), provider_message_id: eq(providerMessageId) })

  return {
    appendMessage: (organizationId, request) => attempt("chats.appendMessage", () => appendMessage(organizationId, request)),
    ensure: (organizationId, contactId, newChat, now) =>
      attempt("chats.ensure", async (): Promise<ChatEnsureOutcome> => {
        const contact = (await collections.contacts.findOne(owned(organizationId, contactId), { projection: CHAT_PROJECTION })) as ContactDocument | null
        const chat = contact === null ? undefined : await chatOf(organizationId, contact, newChat, now)
        if (chat === undefined) return { _tag: "ContactNotFound" }
        return { _tag: "Ensured", chat: await record(organizationId, chat.document), created: chat.created }
      }),
    update: (organizationId, id, patch, now) =>
      attempt("chats.update", async (): Promise<ChatUpdateOutcome> => {
        for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
          const document = await findChat(organizationId, id)
          if (document?.chat === undefined) return { _tag: "NotFound" }
          const write = chatPatchUpdate(organizationId, document.chat, patch, now)
          if (!write.changed) return { _tag: "Updated", chat: await record(organizationId, document), changed: false }
          const endpoints = (await subscribersOf(collections, organizationId))("chat.updated")
          if (endpoints.length > 0) {
            // The chat as this write leaves it, carried by its chat.updated event in the same update.
            const chat = { ...document.chat }
            for (const [key, value] of Object.entries(write.update.$set as Record<string, unknown>)) (chat as Record<string, unknown>)[key.slice("chat.".length)] = value
            const updated = await record(organizationId, { ...document, chat })
            const event = pendingEvent("chat.updated", now, endpoints, updated)
            const result = await collections.contacts.updateOne(write.filter, { ...write.update, $push: { pending_events: event } })
            if (result.matchedCount === 0) continue // another write came first: read again
            return { _tag: "Updated", chat: updated, changed: true }
          }
          const result = await collections.contacts.updateOne(write.filter, write.update)
          if (result.matchedCount === 0) continue // another write came first: read again
          const updated = await findChat(organizationId, id)
          if (updated === null) return { _tag: "NotFound" }
          return { _tag: "Updated", chat: await record(organizationId, updated), changed: true }
        }
        throw new Error("chats.update: the chat kept changing concurrently")
      }),
    findById: (organizationId, id) =>
      attempt("chats.findById", async () => {
        const document = await findChat(organizationId, id)
        return document === null ? Option.none() : Option.some(await record(organizationId, document))
      }),
    findByContact: (organizationId, contactId) =>
      attempt("chats.findByContact", async () => {
        const document = (await collections.contacts.findOne({ ...owned(organizationId, contactId), ...HAS_CHAT }, { projection: CHAT_PROJECTION })) as ContactDocument | null
        return document === null ? Option.none() : Option.some(await record(organizationId, document))
      }),
    listAfter: (organizationId, filters, sort, after, limit) =>
      attempt("chats.listAfter", async () => {
        const query = chatListQuery(organizationId, filters, sort, after)
        const documents = await collections.contacts.find(query.filter, { sort: query.sort, limit, projection: CHAT_PROJECTION }).toArray()
        return chatRecords(collections, organizationId, documents as Array<ContactDocument>)
      }),
    listPage: (organizationId, filters, sort, page) =>
      attempt("chats.listPage", async () => {
        const query = chatListQuery(organizationId, filters, sort, null)
        const [documents, total] = await Promise.all([
          collections.contacts
            .find(query.filter, { sort: query.sort, skip: (page.page - 1) * page.per_page, limit: page.per_page, projection: CHAT_PROJECTION })
            .toArray(),
          collections.contacts.countDocuments(query.filter)
        ])
        return { items: await chatRecords(collections, organizationId, documents as Array<ContactDocument>), total }
      }),
    findMessage: (organizationId, id) =>
      attempt("chats.findMessage", async () => {
        const document = await collections.messages.findOne(owned(organizationId, id))
        if (document === null || (await chatExists(collections, organizationId, document.chat_uuid)) === false) return Option.none()
        return Option.some(messageRecord(document))
      }),
    listMessages: (organizationId, chatId, page) =>
      attempt("chats.listMessages", async () => {
        if (!(await chatExists(collections, organizationId, chatId))) return Option.none()
        const filter = { ...ofOrganization(organizationId), chat_uuid: eq(chatId), type: { $ne: "reaction" as const } }
        const [documents, total] = await Promise.all([
          collections.messages
            .find(filter, { sort: { created_at: -1, _id: -1 }, skip: (page.page - 1) * page.per_page, limit: page.per_page })
            .toArray(),
          collections.messages.countDocuments(filter)
        ])
        return Option.some({ items: documents.map(messageRecord), total })
      }),
    listMessagesAfter: (organizationId, chatId, after, limit) =>
      attempt("chats.listMessagesAfter", async () => {
        if (!(await chatExists(collections, organizationId, chatId))) return Option.none()
        // One range of messages_by_chat: (created_at, _id) strictly below the position.
        const filter = {
          ...ofOrganization(organizationId),
          chat_uuid: eq(chatId),
          type: { $ne: "reaction" as const },
          ...(after === null
            ? {}
            : { $or: [{ created_at: { $lt: after.created_at } }, { created_at: eq(after.created_at), _id: { $lt: after.uuid } }] })
        }
        const documents = await collections.messages.find(filter, { sort: { created_at: -1, _id: -1 }, limit }).toArray()
        return Option.some(documents.map(messageRecord))
      }),
    importChats: (organizationId, request) => attempt("chats.importChats", () => importChats(collections, organizationId, request)),
    updateMessageStatus: (organizationId, id, update) =>
      attempt("chats.updateMessageStatus", async (): Promise<MessageStatusOutcome> => {
        const outcome = await writeStatus(collections, organizationId, id, update)
        const providerId = update.provider_message_id
        if (outcome._tag === "NotFound" || providerId === undefined || outcome.message.direction !== "outbound") return outcome
        return applyPending(collections, organizationId, providerId, update.now, outcome)
      }),
    updateMessageStatusByProviderId: (organizationId, providerMessageId, update) =>
      attempt("chats.updateMessageStatusByProviderId", async (): Promise<ProviderStatusOutcome> => {
        const found = await outboundByProviderId(organizationId, providerMessageId)
        const outcome = found === null ? undefined : await writeStatus(collections, organizationId, found._id, update)
        if (outcome?._tag === "Updated") return outcome
        await collections.pendingMessageStatuses.insertOne({
          _id: randomUUID(),
          organization_id: organizationId,
          provider_message_id: providerMessageId,
          status: update.status,
          from: [...update.from],
          failure: update.failure ?? null,
          reported_at: update.now,
          pending_until: update.pendingUntil,
          expire_at: new Date(update.pendingUntil)
        })
        // A send may have recorded the id after the look-up above and claimed the pending
        // reports before this one was stored: look again, and apply what is left.
        const recorded = await outboundByProviderId(organizationId, providerMessageId)
        if (recorded === null || !(await chatExists(collections, organizationId, recorded.chat_uuid))) return { _tag: "Pending" }
        const applied = await applyPending(collections, organizationId, providerMessageId, update.now, {
          _tag: "Updated",
          message: messageRecord(recorded),
          changed: false
        })
        return applied._tag === "Updated" ? applied : { _tag: "Pending" }
      }),
    lastInboundChannel: (organizationId, contactId) =>
      attempt("chats.lastInboundChannel", async () => {
        const contact = await collections.contacts.findOne({ ...owned(organizationId, contactId), ...HAS_CHAT }, { projection: { "chat.uuid": 1 } })
        if (contact?.chat === undefined) return Option.none()
        // One range of messages_by_chat, newest first, read until the first match.
        const [message] = await collections.messages
          .find(
            { ...ofOrganization(organizationId), chat_uuid: eq(contact.chat.uuid), direction: eq("inbound"), channel_uuid: { $type: "string" } },
            { sort: { created_at: -1, _id: -1 }, limit: 1, projection: { channel_uuid: 1 } }
          )
          .toArray()
        return Option.fromNullable(message?.channel_uuid)
      }),
    latestInboundMessage: (organizationId, chatId) =>
      attempt("chats.latestInboundMessage", async () => {
        if (!(await chatExists(collections, organizationId, chatId))) return Option.none()
        // One range of messages_by_chat, newest first, read until the first match.
        const [document] = await collections.messages
          .find(
            { ...ofOrganization(organizationId), chat_uuid: eq(chatId), direction: eq("inbound"), type: { $ne: "reaction" } },
            { sort: { created_at: -1, _id: -1 }, limit: 1 }
          )
          .toArray()
        return Option.fromNullable(document === undefined ? undefined : messageRecord(document))
      }),
    lastInboundAt: (organizationId, contactId, channelId) =>
      attempt("chats.lastInboundAt", async () => {
        const contact = await collections.contacts.findOne(owned(organizationId, contactId), { projection: { last_inbound_at: 1 } })
        const windows = contact?.last_inbound_at
        return Option.fromNullable(windows !== undefined && Object.hasOwn(windows, channelId) ? windows[channelId] : undefined)
      })
  }
}

/** A chat without messages, as `ensure` and `appendMessage` create it. */
export const newChatDocument = (newChat: { readonly uuid: string; readonly status: ChatStatus }, now: string): ChatDocument => ({
  uuid: newChat.uuid,
  status: newChat.status,
  assigned_to: null,
  favorite: false,
  unread_count: 0,
  unread: false,
  last_message_at: "",
  last_message_uuid: null,
  created_at: now,
  updated_at: now
})

import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { type ChatId, type ContactId, type MessageId, Storage } from "@switchboard/core"
import { append, chatOf, inboundRequest, outboundRequest, patchChat, receive } from "./chat-support.js"
import type { StorageContractOptions } from "./options.js"
import * as fixtures from "./fixtures.js"
import { assignLabel, contactOf, createGroup, createLabel, importContact, importContacts, insertOrganization, runner } from "./support.js"

const { instant, phone } = fixtures

/**
 * Contract of `Storage.chats` apart from the list (chats-list.ts): appendMessage (contact
 * and chat created as needed, counters, reopening, last message, deduplication), ensure,
 * update, reads, messages and their status, tenant isolation, and chats going with their
 * contact (docs/chats.md "Records", "Status transitions").
 */
export const chatsContract = (options: StorageContractOptions): void => {
  const run = runner(options)

  describe("chats", () => {
    it.effect("an inbound message from a new phone creates the contact and an open chat holding it", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const request = inboundRequest(phone(1), { now: instant(5), text: "Hello", firstName: "Ada", lastName: "Lovelace" })
          const outcome = yield* append(org.id, request)
          expect([outcome.contactCreated, outcome.chatCreated]).toEqual([true, true])
          const contactId = request.contact._tag === "ByPhone" ? request.contact.create.uuid : expect.fail("by phone")
          const message = { ...request.message, chat_uuid: request.newChat.uuid, contact_uuid: contactId }
          expect(outcome.message).toEqual(message)
          expect(outcome.chat).toEqual({
            uuid: request.newChat.uuid,
            contact: { uuid: contactId, first_name: "Ada", last_name: "Lovelace", phone: phone(1) },
            status: "open",
            assigned_to: null,
            groups: [],
            labels: [],
            favorite: false,
            unread: true,
            unread_count: 1,
            last_message_at: instant(5),
            last_message: { uuid: message.uuid, direction: "inbound", type: "text", text: "Hello", status: "delivered", created_at: instant(5) },
            last_inbound_channel_uuid: null,
            window_expires_at: null,
            created_at: instant(5),
            updated_at: instant(5)
          })
          expect(yield* chats.findById(org.id, outcome.chat.uuid)).toEqual(Option.some(outcome.chat))
          expect(yield* chats.findMessage(org.id, message.uuid)).toEqual(Option.some(message))
          const contact = yield* contactOf(org.id, contactId)
          expect([contact.phone, contact.first_name, contact.last_name, contact.created_at]).toEqual([phone(1), "Ada", "Lovelace", instant(5)])
        })
      ))

    it.effect("later messages go to the same chat: unread_count grows, the last message and updated_at follow", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const first = yield* receive(org.id, phone(1), 1)
          const second = yield* append(org.id, inboundRequest(phone(1), { now: instant(2), text: "again" }))
          expect([second.contactCreated, second.chatCreated]).toEqual([false, false])
          expect(second.chat.uuid).toBe(first.uuid)
          expect(second.chat.contact).toEqual(first.contact)
          expect([second.chat.unread_count, second.chat.last_message_at, second.chat.last_message?.text]).toEqual([2, instant(2), "again"])
          expect([second.chat.created_at, second.chat.updated_at]).toEqual([instant(1), instant(2)])
          const reply = yield* append(org.id, outboundRequest(first.contact.uuid, { now: instant(3), text: "reply" }))
          expect([reply.chatCreated, reply.chat.uuid, reply.chat.unread_count]).toEqual([false, first.uuid, 2])
          expect(reply.chat.last_message).toMatchObject({ direction: "outbound", status: "queued", text: "reply" })
        })
      ))

    it.effect("an inbound message with a provider id to an existing chat answers that chat as stored after it", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const first = yield* receive(org.id, phone(1), 1, { providerId: "wamid.first" })
          yield* patchChat(org.id, first.uuid, { status: "resolved" })
          const second = yield* append(org.id, inboundRequest(phone(1), { now: instant(2), text: "again", providerId: "wamid.second" }))
          expect(second.chat.uuid).toBe(first.uuid)
          expect([second.chat.status, second.chat.unread_count, second.chat.last_message_at]).toEqual(["open", 2, instant(2)])
          expect(second.chat.last_message).toEqual({
            uuid: second.message.uuid,
            direction: "inbound",
            type: "text",
            text: "again",
            status: "delivered",
            created_at: instant(2)
          })
          expect(yield* chats.findById(org.id, first.uuid)).toEqual(Option.some(second.chat))
        })
      ))

    it.effect("an inbound message from a known phone uses that contact; the chat carries its groups and labels by name", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const beta = yield* createGroup(org.id, "Beta")
          const alpha = yield* createGroup(org.id, "alpha")
          const row = fixtures.importRow(phone(1), { first_name: "Grace" }, [fixtures.groupWithId(beta.uuid), fixtures.groupWithId(alpha.uuid)])
          const contactId = (yield* importContacts(org.id, [row])).contacts[0]!.uuid
          const vip = yield* createLabel(org.id, "VIP", "#ff0000")
          yield* assignLabel(org.id, vip, [contactId])
          const outcome = yield* append(org.id, inboundRequest(phone(1), { firstName: "Ignored" }))
          expect(outcome.contactCreated).toBe(false)
          expect(outcome.chat.contact).toEqual({ uuid: contactId, first_name: "Grace", last_name: null, phone: phone(1) })
          expect(outcome.chat.groups).toEqual([{ uuid: beta.uuid, name: "Beta" }, { uuid: alpha.uuid, name: "alpha" }])
          expect(outcome.chat.labels).toEqual([{ uuid: vip.uuid, name: "VIP", color: "#ff0000" }])
        })
      ))

    it.effect("an outbound message to an unknown contact, or another organization's, is ContactNotFound and writes nothing", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const foreign = yield* importContact(other.id, phone(1))
          for (const contactId of [fixtures.uuid() as ContactId, foreign]) {
            const request = outboundRequest(contactId)
            expect(yield* chats.appendMessage(org.id, request)).toEqual({ _tag: "ContactNotFound" })
            expect(yield* chats.findMessage(org.id, request.message.uuid)).toEqual(Option.none())
            expect(yield* chats.findMessage(other.id, request.message.uuid)).toEqual(Option.none())
          }
          expect(yield* chats.findByContact(other.id, foreign)).toEqual(Option.none())
        })
      ))

    it.effect("an outbound message to a contact without a chat creates it open, without unread messages", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const contactId = yield* importContact(org.id, phone(1))
          const outcome = yield* append(org.id, outboundRequest(contactId, { now: instant(4) }))
          expect(outcome.chatCreated).toBe(true)
          expect(outcome.chat).toMatchObject({ status: "open", unread: false, unread_count: 0, last_message_at: instant(4) })
        })
      ))

    it.effect("reopen: an inbound message sets a resolved or closed chat open and leaves pending and open alone; outbound never", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const chat = yield* receive(org.id, phone(1), 0)
          for (const [status, after] of [["resolved", "open"], ["closed", "open"], ["pending", "pending"], ["open", "open"]] as const) {
            yield* patchChat(org.id, chat.uuid, { status })
            expect((yield* append(org.id, outboundRequest(chat.contact.uuid))).chat.status).toBe(status)
            expect((yield* receive(org.id, phone(1), 1)).status).toBe(after)
          }
        })
      ))

    it.effect("a message older than the chat's newest is stored but does not become the last message", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const chat = yield* receive(org.id, phone(1), 10, { text: "newest" })
          const older = yield* append(org.id, inboundRequest(phone(1), { now: instant(11), createdAt: instant(3), text: "older" }))
          expect([older.chat.last_message_at, older.chat.last_message?.text, older.chat.updated_at]).toEqual([instant(10), "newest", instant(11)])
          const messages = yield* chats.listMessages(org.id, chat.uuid, { page: 1, per_page: 10 })
          expect(Option.map(messages, (page) => page.items.map((m) => m.text))).toEqual(Option.some(["newest", "older"]))
        })
      ))

    it.effect("dedupe: a provider id already received in this organization and direction is Duplicate, nothing written", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const first = yield* append(org.id, inboundRequest(phone(1), { providerId: "wamid.1", text: "once" }))
          const again = inboundRequest(phone(1), { providerId: "wamid.1", now: instant(9) })
          expect(yield* chats.appendMessage(org.id, again)).toEqual({ _tag: "Duplicate", chat: first.chat, message: first.message })
          expect(yield* chats.findMessage(org.id, again.message.uuid)).toEqual(Option.none())
          expect((yield* append(other.id, inboundRequest(phone(1), { providerId: "wamid.1" }))).chatCreated).toBe(true)
          const outbound = yield* append(org.id, { ...outboundRequest(first.chat.contact.uuid, { providerId: "wamid.1" }), dedupe: true })
          expect(outbound.message.provider_message_id).toBe("wamid.1")
          const notDeduped = yield* append(org.id, { ...inboundRequest(phone(1), { providerId: "wamid.1" }), dedupe: false })
          expect(notDeduped.chat.unread_count).toBe(2)
        })
      ))

    it.effect("ensure returns the contact's chat, or creates one without messages; unknown contact → ContactNotFound", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const contactId = yield* importContact(org.id, phone(1))
          const uuid = fixtures.uuid() as ChatId
          const created = yield* chats.ensure(org.id, contactId, { uuid, status: "open" }, instant(7))
          expect(created).toMatchObject({ _tag: "Ensured", created: true })
          if (created._tag !== "Ensured") return
          expect(created.chat).toMatchObject({ uuid, status: "open", unread_count: 0, last_message_at: null, last_message: null, created_at: instant(7) })
          const again = yield* chats.ensure(org.id, contactId, { uuid: fixtures.uuid() as ChatId, status: "open" }, instant(8))
          expect(again).toEqual({ _tag: "Ensured", chat: created.chat, created: false })
          expect(yield* chats.ensure(other.id, contactId, { uuid: fixtures.uuid() as ChatId, status: "open" }, instant(8))).toEqual({
            _tag: "ContactNotFound"
          })
          const first = yield* append(org.id, inboundRequest(phone(1), { now: instant(9) }))
          expect([first.chatCreated, first.chat.uuid, first.chat.last_message_at]).toEqual([false, uuid, instant(9)])
        })
      ))

    it.effect("update sets the fields that differ and updated_at; an unchanged patch writes nothing", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const chat = yield* receive(org.id, phone(1), 0)
          const assigned = yield* patchChat(org.id, chat.uuid, { assigned_to: "user-7", favorite: true, status: "pending" }, instant(1))
          expect(assigned.changed).toBe(true)
          expect(assigned.chat).toEqual({ ...chat, assigned_to: "user-7", favorite: true, status: "pending", updated_at: instant(1) })
          const same = yield* patchChat(org.id, chat.uuid, { assigned_to: "user-7", status: "pending" }, instant(2))
          expect(same).toEqual({ _tag: "Updated", chat: assigned.chat, changed: false })
          const read = yield* patchChat(org.id, chat.uuid, { unread_count: 0, assigned_to: null, favorite: false }, instant(3))
          expect(read.chat).toMatchObject({ unread: false, unread_count: 0, assigned_to: null, favorite: false, updated_at: instant(3) })
          expect(yield* chatOf(org.id, chat.uuid)).toEqual(read.chat)
        })
      ))

    it.effect("update, findById, findByContact, listMessages never reach another organization's chat", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const chat = yield* receive(other.id, phone(1), 0)
          expect(yield* chats.update(org.id, chat.uuid, { favorite: true }, instant(1))).toEqual({ _tag: "NotFound" })
          expect(yield* chats.update(org.id, fixtures.uuid() as ChatId, { favorite: true }, instant(1))).toEqual({ _tag: "NotFound" })
          expect(yield* chats.findById(org.id, chat.uuid)).toEqual(Option.none())
          expect(yield* chats.findByContact(org.id, chat.contact.uuid)).toEqual(Option.none())
          expect(yield* chats.listMessages(org.id, chat.uuid, { page: 1, per_page: 5 })).toEqual(Option.none())
          expect(yield* chats.findById(other.id, chat.uuid)).toEqual(Option.some(chat))
          expect(yield* chats.findByContact(other.id, chat.contact.uuid)).toEqual(Option.some(chat))
        })
      ))

    it.effect("listMessages: newest first (created_at desc, uuid desc), one page with the total", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const chat = yield* receive(org.id, phone(1), 1, { text: "m1" })
          yield* receive(org.id, phone(1), 3, { text: "m3" })
          yield* append(org.id, outboundRequest(chat.contact.uuid, { now: instant(2), text: "m2" }))
          yield* receive(org.id, phone(1), 3, { text: "m3b" })
          const page = (n: number) => chats.listMessages(org.id, chat.uuid, { page: n, per_page: 3 })
          const first = Option.getOrThrow(yield* page(1))
          expect([first.items.map((m) => m.text), first.total]).toEqual([["m3b", "m3", "m2"], 4])
          expect(Option.getOrThrow(yield* page(2)).items.map((m) => m.text)).toEqual(["m1"])
          expect(Option.getOrThrow(yield* page(3)).items).toEqual([])
        })
      ))

    it.effect("updateMessageStatus writes the status only from an allowed one, records the provider id, and shows in the chat", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const contactId = yield* importContact(org.id, phone(1))
          const { message, chat } = yield* append(org.id, outboundRequest(contactId))
          const sent = yield* chats.updateMessageStatus(org.id, message.uuid, { status: "sent", from: ["queued"], provider_message_id: "wamid.9", now: instant(1) })
          expect(sent).toEqual({ _tag: "Updated", changed: true, message: { ...message, status: "sent", provider_message_id: "wamid.9", updated_at: instant(1) } })
          const refused = yield* chats.updateMessageStatus(org.id, message.uuid, { status: "failed", from: ["queued"], now: instant(2) })
          expect(refused).toEqual({ ...sent, changed: false })
          expect((yield* chatOf(org.id, chat.uuid)).last_message?.status).toBe("sent")
          const other = yield* insertOrganization()
          expect(yield* chats.updateMessageStatus(other.id, message.uuid, { status: "read", from: ["sent"], now: instant(3) })).toEqual({ _tag: "NotFound" })
          expect(yield* chats.updateMessageStatus(org.id, fixtures.uuid() as MessageId, { status: "read", from: ["sent"], now: instant(3) })).toEqual({ _tag: "NotFound" })
          expect(yield* chats.findMessage(other.id, message.uuid)).toEqual(Option.none())
          expect(Option.map(yield* chats.findMessage(org.id, message.uuid), (m) => m.status)).toEqual(Option.some("sent"))
        })
      ))

    it.effect("template and media content round-trips", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const contactId = yield* importContact(org.id, phone(1))
          const base = outboundRequest(contactId)
          const template = { name: "welcome", language: { code: "en_US" }, components: [{ type: "body", parameters: [{ type: "text", text: "Ada" }] }] }
          const media = { type: "image" as const, url: "https://example.com/a.png", caption: "Look" }
          const withTemplate = yield* append(org.id, { ...base, message: { ...base.message, type: "template", text: null, template } })
          const mediaBase = outboundRequest(contactId)
          const withMedia = yield* append(org.id, { ...mediaBase, message: { ...mediaBase.message, type: "media", text: "Look", media } })
          expect(yield* chats.findMessage(org.id, withTemplate.message.uuid)).toEqual(Option.some(withTemplate.message))
          expect(yield* chats.findMessage(org.id, withMedia.message.uuid)).toEqual(Option.some(withMedia.message))
          expect(withMedia.message).toMatchObject({ type: "media", media, template: null, text: "Look" })
        })
      ))

    it.effect("deleting a contact deletes its chat and messages; a new message from the phone starts afresh", () =>
      run(
        Effect.gen(function* () {
          const { chats, contacts } = yield* Storage
          const org = yield* insertOrganization()
          const { chat, message } = yield* append(org.id, inboundRequest(phone(1)))
          expect(yield* contacts.delete(org.id, chat.contact.uuid)).toBe(true)
          expect(yield* chats.findById(org.id, chat.uuid)).toEqual(Option.none())
          expect(yield* chats.findMessage(org.id, message.uuid)).toEqual(Option.none())
          expect(yield* chats.listAfter(org.id, {}, { by: "last_message_at", order: "desc" }, null, 10)).toEqual([])
          const again = yield* append(org.id, inboundRequest(phone(1), { providerId: null }))
          expect([again.contactCreated, again.chatCreated, again.chat.unread_count]).toEqual([true, true, 1])
        })
      ))
  })
}

import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import {
  type ChatId,
  type ChatImportEntry,
  type ContactId,
  type MessageId,
  type NewMessage,
  Storage
} from "@switchboard/core"
import { chatOf } from "./chat-support.js"
import type { StorageContractOptions } from "./options.js"
import * as fixtures from "./fixtures.js"
import { assignLabel, createGroup, createLabel, importContact, importContacts, insertOrganization, runner } from "./support.js"

const { instant, phone } = fixtures

/**
 * Contract of `Storage.chats.importChats` (the admin import and `seed`, docs/import.md): new
 * chats with attributes, messages, last message and `updated_at`; re-import of the same
 * messages adds nothing; an existing chat gets its attributes and only new messages;
 * unknown contacts write nothing; the imported chats are listed and filtered like others;
 * tenant isolation.
 */
export const chatsImportContract = (options: StorageContractOptions): void => {
  const run = runner(options)

  describe("chats.importChats", () => {
    it.effect("creates chats with their attributes and messages; the newest message is the last one", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const contactId = yield* importContact(org.id, phone(1), instant(0), { first_name: "Ada", last_name: "Lovelace" })
          const older = message("inbound", "Hello", instant(10))
          const newer = message("outbound", "Hi Ada", instant(20))
          const entry = chatEntry(contactId, [newer, older], {
            created_at: instant(5),
            attributes: { status: "pending", assigned_to: "agent-1", favorite: true, unread_count: 3 }
          })
          const outcome = yield* chats.importChats(org.id, { chats: [entry], now: instant(100) })
          expect(outcome).toEqual({ _tag: "Imported", chats: [{ uuid: entry.chatId, created: true, messagesAdded: 2 }] })
          expect(yield* chatOf(org.id, entry.chatId)).toEqual({
            uuid: entry.chatId,
            contact: { uuid: contactId, first_name: "Ada", last_name: "Lovelace", phone: phone(1) },
            status: "pending",
            assigned_to: "agent-1",
            groups: [],
            labels: [],
            favorite: true,
            unread: true,
            unread_count: 3,
            last_message_at: instant(20),
            last_message: { uuid: newer.uuid, direction: "outbound", type: "text", text: "Hi Ada", status: "sent", created_at: instant(20) },
            last_inbound_channel_uuid: null,
            window_expires_at: null,
            created_at: instant(5),
            updated_at: instant(20)
          })
          const page = yield* chats.listMessages(org.id, entry.chatId, { page: 1, per_page: 10 })
          expect(Option.map(page, (p) => p.items)).toEqual(
            Option.some([newer, older].map((m) => ({ ...m, chat_uuid: entry.chatId, contact_uuid: contactId })))
          )
        })
      ))

    it.effect("a new chat without messages or attributes is open, unassigned, unread 0, updated at its creation", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const contactId = yield* importContact(org.id, phone(1))
          const entry = chatEntry(contactId, [], { created_at: instant(7) })
          yield* chats.importChats(org.id, { chats: [entry], now: instant(100) })
          const chat = yield* chatOf(org.id, entry.chatId)
          expect([chat.status, chat.assigned_to, chat.favorite, chat.unread_count, chat.last_message_at, chat.last_message]).toEqual([
            "open",
            null,
            false,
            0,
            null,
            null
          ])
          expect([chat.created_at, chat.updated_at]).toEqual([instant(7), instant(7)])
        })
      ))

    it.effect("importing the same messages again adds nothing and changes nothing", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const contactId = yield* importContact(org.id, phone(1))
          const messages = [message("inbound", "Hello", instant(10)), message("outbound", "Hi", instant(11))]
          const entry = chatEntry(contactId, messages, { attributes: { status: "resolved" } })
          yield* chats.importChats(org.id, { chats: [entry], now: instant(100) })
          const before = yield* chatOf(org.id, entry.chatId)
          // Same content, fresh uuids: what a second run of one import file produces.
          const again = chatEntry(contactId, messages.map((m) => ({ ...m, uuid: fixtures.uuid() as MessageId })), {
            attributes: { status: "resolved" }
          })
          const outcome = yield* chats.importChats(org.id, { chats: [again], now: instant(200) })
          expect(outcome).toEqual({ _tag: "Imported", chats: [{ uuid: entry.chatId, created: false, messagesAdded: 0 }] })
          expect(yield* chatOf(org.id, entry.chatId)).toEqual(before)
          const page = yield* chats.listMessages(org.id, entry.chatId, { page: 1, per_page: 10 })
          expect(Option.map(page, (p) => p.total)).toEqual(Option.some(2))
        })
      ))

    it.effect("an existing chat keeps its uuid and created_at, takes the attributes given and appends only new messages", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const contactId = yield* importContact(org.id, phone(1))
          const first = message("inbound", "Hello", instant(10))
          const entry = chatEntry(contactId, [first], { created_at: instant(1), attributes: { assigned_to: "agent-1", unread_count: 1 } })
          yield* chats.importChats(org.id, { chats: [entry], now: instant(100) })
          const later = message("outbound", "Bye", instant(30))
          const earlier = message("inbound", "Before", instant(5))
          const update = chatEntry(contactId, [{ ...first, uuid: fixtures.uuid() as MessageId }, earlier, later], {
            created_at: instant(2),
            attributes: { favorite: true, assigned_to: null }
          })
          const outcome = yield* chats.importChats(org.id, { chats: [update], now: instant(200) })
          expect(outcome).toEqual({ _tag: "Imported", chats: [{ uuid: entry.chatId, created: false, messagesAdded: 2 }] })
          const chat = yield* chatOf(org.id, entry.chatId)
          expect({
            created_at: chat.created_at,
            updated_at: chat.updated_at,
            favorite: chat.favorite,
            assigned_to: chat.assigned_to,
            unread_count: chat.unread_count,
            last: chat.last_message?.uuid,
            last_message_at: chat.last_message_at
          }).toEqual({
            created_at: instant(1),
            updated_at: instant(200),
            favorite: true,
            assigned_to: null,
            unread_count: 1,
            last: later.uuid,
            last_message_at: instant(30)
          })
          const page = yield* chats.listMessages(org.id, entry.chatId, { page: 1, per_page: 10 })
          expect(Option.map(page, (p) => p.items.map((m) => m.text))).toEqual(Option.some(["Bye", "Hello", "Before"]))
        })
      ))

    it.effect("within one entry a repeated message is stored once; on a created_at tie the later one is the last", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const contactId = yield* importContact(org.id, phone(1))
          const a = message("inbound", "same", instant(10))
          const b = message("outbound", "tie", instant(10))
          const entry = chatEntry(contactId, [a, { ...a, uuid: fixtures.uuid() as MessageId }, b])
          const outcome = yield* chats.importChats(org.id, { chats: [entry], now: instant(100) })
          expect(outcome).toEqual({ _tag: "Imported", chats: [{ uuid: entry.chatId, created: true, messagesAdded: 2 }] })
          expect((yield* chatOf(org.id, entry.chatId)).last_message?.uuid).toBe(b.uuid)
        })
      ))

    it.effect("an unknown or another organization's contact → ContactsNotFound, nothing written", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const own = yield* importContact(org.id, phone(1))
          const foreign = yield* importContact(other.id, phone(2))
          const unknown = fixtures.uuid() as ContactId
          const ownEntry = chatEntry(own, [message("inbound", "Hello", instant(1))])
          const outcome = yield* chats.importChats(org.id, {
            chats: [ownEntry, chatEntry(foreign, []), chatEntry(unknown, [])],
            now: instant(100)
          })
          expect(outcome).toEqual({ _tag: "ContactsNotFound", contactIds: [foreign, unknown] })
          expect(yield* chats.findByContact(org.id, own)).toEqual(Option.none())
          expect(yield* chats.findByContact(other.id, foreign)).toEqual(Option.none())
        })
      ))

    it.effect("imported chats carry their contact's groups and labels and are listed and filtered like others", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const group = yield* createGroup(org.id, "VIP")
          const label = yield* createLabel(org.id, "Hot")
          const result = yield* importContacts(org.id, [
            fixtures.importRow(phone(1), { first_name: "Ada" }, [fixtures.groupWithId(group.uuid)]),
            fixtures.importRow(phone(2), { first_name: "Bob" })
          ])
          const [ada, bob] = result.contacts.map((c) => c.uuid) as [ContactId, ContactId]
          yield* assignLabel(org.id, label, [ada])
          const adaChat = chatEntry(ada, [message("inbound", "a", instant(20))], { attributes: { status: "pending" } })
          const bobChat = chatEntry(bob, [message("inbound", "b", instant(30))])
          yield* chats.importChats(org.id, { chats: [adaChat, bobChat], now: instant(100) })
          const sort = { by: "last_message_at", order: "desc" } as const
          const ids = (filters: Parameters<typeof chats.listAfter>[1]) =>
            Effect.map(chats.listAfter(org.id, filters, sort, null, 10), (list) => list.map((chat) => chat.uuid))
          expect(yield* ids({})).toEqual([bobChat.chatId, adaChat.chatId])
          expect(yield* ids({ groupIds: [group.uuid] })).toEqual([adaChat.chatId])
          expect(yield* ids({ labelIds: [label.uuid] })).toEqual([adaChat.chatId])
          expect(yield* ids({ status: "pending" })).toEqual([adaChat.chatId])
          expect(yield* ids({ search: "bob" })).toEqual([bobChat.chatId])
          expect(yield* ids({ lastMessageFrom: instant(25) })).toEqual([bobChat.chatId])
          const chat = yield* chatOf(org.id, adaChat.chatId)
          expect([chat.groups.map((g) => g.name), chat.labels.map((l) => l.name)]).toEqual([["VIP"], ["Hot"]])
        })
      ))

    // 1 203 chats by default: more chats (and, at two messages each, more messages) than
    // one multi-row statement of a SQL store holds (1 000 rows).
    const importCount = Math.min(1203, options.largeCaseSize ?? 1203)
    it.effect(`one call of ${importCount} chats writes every chat and message, an existing chat among them, in the order given`, () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const group = yield* createGroup(org.id, "VIP")
          const count = importCount
          const existingAt = Math.floor(count / 2)
          const nearEnd = count - 3
          const result = yield* importContacts(
            org.id,
            Array.from({ length: count }, (_, n) => fixtures.importRow(phone(n), { first_name: `C${n}` }, [fixtures.groupWithId(group.uuid)]))
          )
          const contactIds = result.contacts.map((c) => c.uuid)
          const existingEntry = chatEntry(contactIds[existingAt]!, [message("inbound", "first", instant(10))])
          yield* chats.importChats(org.id, { chats: [existingEntry], now: instant(50) })
          const entries = contactIds.map((contactId, n) =>
            chatEntry(contactId, [message("inbound", `in ${n}`, instant(100 + n)), message("outbound", `out ${n}`, instant(101 + n))])
          )
          const outcome = yield* chats.importChats(org.id, { chats: entries, now: instant(5000) })
          expect(outcome).toEqual({
            _tag: "Imported",
            chats: entries.map((entry, n) =>
              n === existingAt
                ? { uuid: existingEntry.chatId, created: false, messagesAdded: 2 }
                : { uuid: entry.chatId, created: true, messagesAdded: 2 }
            )
          })
          const sort = { by: "last_message_at", order: "desc" } as const
          const all = yield* chats.listPage(org.id, {}, sort, { page: 1, per_page: 5 })
          expect(all.total).toBe(count)
          expect(all.items.map((chat) => chat.uuid)).toEqual(entries.slice(-5).reverse().map((entry) => entry.chatId))
          expect((yield* chats.listPage(org.id, { groupIds: [group.uuid] }, sort, { page: 1, per_page: 1 })).total).toBe(count)
          const last = entries[count - 1]!
          const lastChat = yield* chatOf(org.id, last.chatId)
          expect([lastChat.last_message_at, lastChat.last_message?.text]).toEqual([instant(101 + count - 1), `out ${count - 1}`])
          const existing = yield* chats.listMessages(org.id, existingEntry.chatId, { page: 1, per_page: 10 })
          expect(Option.getOrThrow(existing).items.map((m) => m.text)).toEqual([`out ${existingAt}`, `in ${existingAt}`, "first"])
          const near = yield* chats.listMessages(org.id, entries[nearEnd]!.chatId, { page: 1, per_page: 10 })
          expect(Option.getOrThrow(near).items.map((m) => m.text)).toEqual([`out ${nearEnd}`, `in ${nearEnd}`])
        })
      ))
  })
}

/** An import entry for a contact: fresh chat uuid, `created_at` default `instant(0)`, no attributes. */
const chatEntry = (
  contactId: ContactId,
  messages: ReadonlyArray<NewMessage>,
  options: { readonly created_at?: string; readonly attributes?: ChatImportEntry["attributes"] } = {}
): ChatImportEntry => ({
  contactId,
  chatId: fixtures.uuid() as ChatId,
  created_at: options.created_at ?? instant(0),
  attributes: options.attributes ?? {},
  messages
})

/** A text message as the import writes it: inbound `delivered`, outbound `sent`. */
const message = (direction: "inbound" | "outbound", text: string, createdAt: string): NewMessage => ({
  uuid: fixtures.uuid() as MessageId,
  direction,
  type: "text",
  text,
  template: null,
  media: null,
  content: null,
  status: direction === "inbound" ? "delivered" : "sent",
  provider_message_id: null,
  failure: null,
  channel_uuid: null,
  transport: null,
  attempts: 0,
  next_attempt_at: null,
  broadcast_uuid: null,
  reply_to: null,
  reactions: [],
  created_at: createdAt,
  updated_at: createdAt
})

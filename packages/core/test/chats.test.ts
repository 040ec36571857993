import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import {
  type ChatId,
  Chats,
  type ChatStatus,
  type ContactId,
  Contacts,
  Core,
  type InvalidInput,
  MemoryStorage,
  type MessageId,
  type MessageStatus,
  Organizations
} from "@switchboard/core"

const TestLayer = Core.layer.pipe(Layer.provideMerge(MemoryStorage.layer))

const UNKNOWN = "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6a"

/** A fresh organization (optionally with a plan) and the Chats service. */
const setUp = (plan: { readonly contacts_limit?: number | null } = {}) =>
  Effect.gen(function* () {
    const org = yield* Effect.flatMap(Organizations, (organizations) => organizations.create({ name: "Acme", plan }))
    return { orgId: org.id, chats: yield* Chats }
  })

/** The `[field, code]` of each issue of an `InvalidInput`. */
const issuesOf = (error: { readonly _tag: string }) =>
  error._tag === "InvalidInput" ? (error as InvalidInput).issues.map((issue) => [issue.field, issue.code]) : error._tag

describe("Chats.receiveInbound", () => {
  it.effect("creates the contact (phone in E.164) and an open chat with one unread message, at the Clock's time", () =>
    Effect.gen(function* () {
      const { orgId, chats } = yield* setUp()
      yield* TestClock.setTime(Date.UTC(2026, 2, 1, 9, 30))
      const receipt = yield* chats.receiveInbound(orgId, { phone: "+1 (415) 555-0100", type: "text", text: " Hi there ", first_name: " Ada " })
      expect([receipt.contact_created, receipt.chat_created, receipt.duplicate]).toEqual([true, true, false])
      expect(receipt.message).toMatchObject({ direction: "inbound", type: "text", text: " Hi there ", status: "delivered", template: null, media: null })
      expect(receipt.message.created_at).toBe("2026-03-01T09:30:00.000Z")
      expect(receipt.chat).toMatchObject({
        contact: { first_name: "Ada", last_name: null, phone: "+14155550100" },
        status: "open",
        unread: true,
        unread_count: 1,
        last_message_at: "2026-03-01T09:30:00.000Z",
        created_at: "2026-03-01T09:30:00.000Z"
      })
      const contact = yield* Effect.flatMap(Contacts, (contacts) => contacts.get(orgId, receipt.chat.contact.uuid))
      expect(contact.phone).toBe("+14155550100")
    }).pipe(Effect.provide(TestLayer)))

  it.effect("never drops a message from a new phone, even over contacts_limit (docs/chats.md)", () =>
    Effect.gen(function* () {
      const { orgId, chats } = yield* setUp({ contacts_limit: 0 })
      const first = yield* chats.receiveInbound(orgId, { phone: "+14155550100", type: "text", text: "one" })
      const second = yield* chats.receiveInbound(orgId, { phone: "+14155550101", type: "text", text: "two" })
      expect([first.contact_created, second.contact_created]).toEqual([true, true])
      const list = yield* chats.list(orgId, {})
      expect(list.chats).toHaveLength(2)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("adds to unread_count, moves last_message_at, and reopens resolved and closed chats only", () =>
    Effect.gen(function* () {
      const { orgId, chats } = yield* setUp()
      const phone = "+14155550100"
      const { chat } = yield* chats.receiveInbound(orgId, { phone, type: "text", text: "1" })
      for (const [status, after] of [["resolved", "open"], ["closed", "open"], ["pending", "pending"]] as const) {
        yield* chats.setStatus(orgId, chat.uuid, status)
        yield* TestClock.adjust("1 minute")
        const receipt = yield* chats.receiveInbound(orgId, { phone, type: "text", text: status })
        expect([receipt.chat.status, receipt.chat_created, receipt.contact_created]).toEqual([after, false, false])
      }
      const final = yield* chats.get(orgId, chat.uuid)
      expect([final.unread_count, final.last_message_at, final.last_message?.text]).toEqual([4, "1970-01-01T00:03:00.000Z", "pending"])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("a provider_message_id received before is a duplicate: nothing changes", () =>
    Effect.gen(function* () {
      const { orgId, chats } = yield* setUp()
      const input = { phone: "+14155550100", type: "text" as const, text: "hi", provider_message_id: "wamid.1" }
      const first = yield* chats.receiveInbound(orgId, input)
      const again = yield* chats.receiveInbound(orgId, { ...input, text: "retry" })
      expect(again).toEqual({ chat: first.chat, message: first.message, contact_created: false, chat_created: false, duplicate: true })
      expect((yield* chats.get(orgId, first.chat.uuid)).unread_count).toBe(1)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("media messages keep their media (the provider's id and MIME type); the caption is the text", () =>
    Effect.gen(function* () {
      const { orgId, chats } = yield* setUp()
      const media = { type: "image" as const, id: "1479537139650973", mime_type: "image/jpeg", caption: "Look" }
      const { message, chat } = yield* chats.receiveInbound(orgId, { phone: "+14155550100", type: "image", text: "Look", media })
      expect(message).toMatchObject({ type: "image", media, text: "Look" })
      expect(chat.last_message).toMatchObject({ type: "image", text: "Look" })
    }).pipe(Effect.provide(TestLayer)))

  it.effect("a sender libphonenumber-js calls invalid, + and digits, is kept as given: the contact is created with phone_valid false", () =>
    Effect.gen(function* () {
      const { orgId, chats } = yield* setUp()
      const first = yield* chats.receiveInbound(orgId, { phone: "+999123", type: "text", text: "hi" })
      expect([first.contact_created, first.chat.contact.phone]).toEqual([true, "+999123"])
      const again = yield* chats.receiveInbound(orgId, { phone: "+999123", type: "text", text: "again" })
      expect([again.contact_created, again.chat.uuid, again.chat.unread_count]).toEqual([false, first.chat.uuid, 2])
      const contact = yield* Effect.flatMap(Contacts, (contacts) => contacts.get(orgId, first.chat.contact.uuid))
      expect([contact.phone, contact.phone_valid]).toEqual(["+999123", false])
      const valid = yield* chats.receiveInbound(orgId, { phone: "+1 415 555 0100", type: "text", text: "hi" })
      const validContact = yield* Effect.flatMap(Contacts, (contacts) => contacts.get(orgId, valid.chat.contact.uuid))
      expect([validContact.phone, validContact.phone_valid]).toEqual(["+14155550100", true])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("InvalidInput names every bad field, and nothing is written", () =>
    Effect.gen(function* () {
      const { orgId, chats } = yield* setUp()
      const cases: ReadonlyArray<readonly [unknown, ReadonlyArray<readonly [string, string]>]> = [
        [{ phone: "12", type: "text", text: "x" }, [["phone", "invalid_format"]]],
        [{ phone: "+12a", type: "text", text: "x" }, [["phone", "invalid_format"]]],
        [{ phone: `+${"1".repeat(21)}`, type: "text", text: "x" }, [["phone", "invalid_format"]]],
        [{ type: "text", text: "x" }, [["phone", "required"]]],
        [{ phone: "+14155550100", type: "text" }, [["text", "required"]]],
        [{ phone: "+14155550100", type: "text", text: "   " }, [["text", "required"]]],
        [{ phone: "+14155550100", type: "text", text: "x".repeat(4097) }, [["text", "too_long"]]],
        [{ phone: "+14155550100", type: "template", text: "x" }, [["type", "invalid_format"]]],
        [{ phone: "+14155550100", type: "media", media: { type: "image", id: "1" } }, [["type", "invalid_format"]]],
        [{ phone: "+14155550100", type: "image" }, [["media", "required"]]],
        [{ phone: "+14155550100", type: "image", media: { type: "video", mime_type: 3 } }, [["media.type", "invalid_format"], ["media.id", "required"], ["media.mime_type", "invalid_type"]]],
        [{ phone: "+14155550100", type: "location", media: { type: "image", id: "1" } }, [["media", "invalid_format"]]],
        [{ phone: "+14155550100", type: "location", content: [1] }, [["content", "invalid_type"]]],
        [{ phone: "+14155550100", type: "text", text: "x", channel_uuid: "nope" }, [["channel_uuid", "invalid_format"]]],
        [{ phone: "+14155550100", type: "text", text: "x", provider_message_id: "p".repeat(256) }, [["provider_message_id", "too_long"]]],
        [{ phone: 5, type: "sms", first_name: 7 }, [["phone", "invalid_type"], ["type", "invalid_format"], ["first_name", "invalid_type"]]]
      ]
      for (const [input, expected] of cases) {
        const error = yield* Effect.flip(chats.receiveInbound(orgId, input as never))
        expect(issuesOf(error), JSON.stringify(input)).toEqual(expected)
      }
      expect((yield* chats.list(orgId, {})).chats).toEqual([])
    }).pipe(Effect.provide(TestLayer)))
})

describe("Chats.appendOutbound and updateMessageStatus", () => {
  it.effect("appends a queued message to the contact's chat (created open when missing), never changing status or unread", () =>
    Effect.gen(function* () {
      const { orgId, chats } = yield* setUp()
      const { chat } = yield* chats.receiveInbound(orgId, { phone: "+14155550100", type: "text", text: "hi" })
      yield* chats.setStatus(orgId, chat.uuid, "resolved")
      const template = { name: "welcome", language: { code: "en_US" }, components: [] }
      const sent = yield* chats.appendOutbound(orgId, chat.contact.uuid, { type: "template", template, text: "Welcome!" })
      expect(sent.message).toMatchObject({ direction: "outbound", status: "queued", type: "template", template, text: "Welcome!" })
      expect([sent.chat_created, sent.chat.status, sent.chat.unread_count]).toEqual([false, "resolved", 1])
      const contacts = yield* Contacts
      const imported = yield* contacts.importBulk(orgId, [{ phone: "+14155550199", first_name: "New" }])
      const fresh = yield* chats.appendOutbound(orgId, imported.contacts[0]!.uuid, { type: "text", text: "Hello" })
      expect([fresh.chat_created, fresh.chat.status, fresh.chat.unread_count]).toEqual([true, "open", 0])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("an unknown contact → RecordNotFound; bad content → InvalidInput", () =>
    Effect.gen(function* () {
      const { orgId, chats } = yield* setUp()
      const missing = yield* Effect.flip(chats.appendOutbound(orgId, UNKNOWN as ContactId, { type: "text", text: "x" }))
      expect(missing).toMatchObject({ _tag: "RecordNotFound", missing: [{ resource: "contact", uuid: UNKNOWN }] })
      const bad = yield* Effect.flip(chats.appendOutbound(orgId, UNKNOWN as ContactId, { type: "template", template: { name: "", language: {} } as never }))
      expect(issuesOf(bad)).toEqual([["template.name", "required"], ["template.language.code", "required"]])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("transport: stored as given (absent: null, as for inbound messages); a kind that is not one → InvalidInput naming it", () =>
    Effect.gen(function* () {
      const { orgId, chats } = yield* setUp()
      const received = yield* chats.receiveInbound(orgId, { phone: "+14155550100", type: "text", text: "hi" })
      const contactId = received.chat.contact.uuid
      const custom = yield* chats.appendOutbound(orgId, contactId, { type: "text", text: "x", transport: "custom" })
      const none = yield* chats.appendOutbound(orgId, contactId, { type: "text", text: "y" })
      expect([received.message.transport, custom.message.transport, none.message.transport]).toEqual([null, "custom", null])
      expect((yield* chats.getMessage(orgId, custom.message.uuid)).transport).toBe("custom")
      const bad = yield* Effect.flip(chats.appendOutbound(orgId, contactId, { type: "text", text: "z", transport: "pigeon" as never }))
      expect(issuesOf(bad)).toEqual([["transport", "invalid_format"]])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("status moves forward only: queued → sent → delivered → read; failed from queued or sent; the rest is ignored", () =>
    Effect.gen(function* () {
      const { orgId, chats } = yield* setUp()
      const contactId = (yield* chats.receiveInbound(orgId, { phone: "+14155550100", type: "text", text: "hi" })).chat.contact.uuid
      const steps: ReadonlyArray<readonly [ReadonlyArray<MessageStatus>, MessageStatus, MessageStatus]> = [
        [[], "sent", "sent"],
        [[], "read", "read"],
        [["sent"], "failed", "failed"],
        [["delivered"], "failed", "delivered"],
        [["read"], "delivered", "read"],
        [["failed"], "sent", "failed"],
        [["sent", "delivered"], "sent", "delivered"]
      ]
      for (const [before, status, expected] of steps) {
        const { message } = yield* chats.appendOutbound(orgId, contactId, { type: "text", text: "x" })
        for (const step of before) yield* chats.updateMessageStatus(orgId, message.uuid, step)
        const updated = yield* chats.updateMessageStatus(orgId, message.uuid, status)
        expect(updated.status, `${before.join(" → ")} then ${status}`).toBe(expected)
      }
      // `queued` and `sending` are the send queue's own moves: no status update sets them.
      const { message } = yield* chats.appendOutbound(orgId, contactId, { type: "text", text: "x" })
      yield* chats.updateMessageStatus(orgId, message.uuid, "sent")
      for (const status of ["queued", "sending"] as const) {
        expect(issuesOf(yield* Effect.flip(chats.updateMessageStatus(orgId, message.uuid, status)))).toEqual([["status", "invalid_format"]])
      }
    }).pipe(Effect.provide(TestLayer)))

  it.effect("records the provider id; the chat's last message shows the status; unknown message or bad status are errors", () =>
    Effect.gen(function* () {
      const { orgId, chats } = yield* setUp()
      const contactId = (yield* chats.receiveInbound(orgId, { phone: "+14155550100", type: "text", text: "hi" })).chat.contact.uuid
      const { message, chat } = yield* chats.appendOutbound(orgId, contactId, { type: "text", text: "x" })
      yield* TestClock.adjust("5 seconds")
      const sent = yield* chats.updateMessageStatus(orgId, message.uuid, "sent", "wamid.7")
      expect(sent).toMatchObject({ status: "sent", provider_message_id: "wamid.7", updated_at: "1970-01-01T00:00:05.000Z" })
      expect((yield* chats.get(orgId, chat.uuid)).last_message?.status).toBe("sent")
      const missing = yield* Effect.flip(chats.updateMessageStatus(orgId, UNKNOWN as MessageId, "read"))
      expect(missing).toMatchObject({ _tag: "RecordNotFound", missing: [{ resource: "message" }] })
      expect(issuesOf(yield* Effect.flip(chats.updateMessageStatus(orgId, message.uuid, "seen" as never)))).toEqual([["status", "invalid_format"]])
    }).pipe(Effect.provide(TestLayer)))
})

describe("Chats: status, assignment, favorite, read", () => {
  const STATUSES: ReadonlyArray<ChatStatus> = ["open", "pending", "resolved", "closed"]

  it.effect("setStatus moves any status to any other (all 12 transitions); the same status → ChatStatusUnchanged", () =>
    Effect.gen(function* () {
      const { orgId, chats } = yield* setUp()
      const { chat } = yield* chats.receiveInbound(orgId, { phone: "+14155550100", type: "text", text: "hi" })
      for (const from of STATUSES) {
        for (const to of STATUSES) {
          if ((yield* chats.get(orgId, chat.uuid)).status !== from) yield* chats.setStatus(orgId, chat.uuid, from)
          yield* TestClock.adjust("1 second")
          if (from === to) {
            const error = yield* Effect.flip(chats.setStatus(orgId, chat.uuid, to))
            expect(error).toMatchObject({ _tag: "ChatStatusUnchanged", status: to, chat_uuid: chat.uuid })
          } else {
            const updated = yield* chats.setStatus(orgId, chat.uuid, to)
            expect([updated.status, updated.updated_at > chat.updated_at]).toEqual([to, true])
          }
        }
      }
      expect(issuesOf(yield* Effect.flip(chats.setStatus(orgId, chat.uuid, "archived" as never)))).toEqual([["status", "invalid_format"]])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("assign sets a trimmed user id or null; 'unassigned', empty and over-long ids are InvalidInput", () =>
    Effect.gen(function* () {
      const { orgId, chats } = yield* setUp()
      const { chat } = yield* chats.receiveInbound(orgId, { phone: "+14155550100", type: "text", text: "hi" })
      expect((yield* chats.assign(orgId, chat.uuid, " agent-1 ")).assigned_to).toBe("agent-1")
      expect((yield* chats.assign(orgId, chat.uuid, "agent-1")).assigned_to).toBe("agent-1")
      expect((yield* chats.assign(orgId, chat.uuid, null)).assigned_to).toBeNull()
      for (const [id, code] of [["unassigned", "invalid_format"], ["  ", "required"], ["x".repeat(256), "too_long"]] as const) {
        expect(issuesOf(yield* Effect.flip(chats.assign(orgId, chat.uuid, id)))).toEqual([["assigned_to", code]])
      }
    }).pipe(Effect.provide(TestLayer)))

  it.effect("update sets status, assignee and favorite together; a value it already has changes nothing; bad fields are all listed, nothing written", () =>
    Effect.gen(function* () {
      const { orgId, chats } = yield* setUp()
      const { chat } = yield* chats.receiveInbound(orgId, { phone: "+14155550100", type: "text", text: "hi" })
      yield* TestClock.adjust("1 minute")
      const updated = yield* chats.update(orgId, chat.uuid, { status: "pending", assigned_to: " agent-1 ", favorite: true })
      expect(updated).toMatchObject({ status: "pending", assigned_to: "agent-1", favorite: true, updated_at: "1970-01-01T00:01:00.000Z" })
      yield* TestClock.adjust("1 minute")
      expect(yield* chats.update(orgId, chat.uuid, { status: "pending", assigned_to: "agent-1", favorite: true })).toEqual(updated)
      expect(yield* chats.update(orgId, chat.uuid, {})).toEqual(updated)
      const error = yield* Effect.flip(chats.update(orgId, chat.uuid, { status: "archived" as never, assigned_to: "unassigned", favorite: "yes" as never }))
      expect(issuesOf(error)).toEqual([["status", "invalid_format"], ["assigned_to", "invalid_format"], ["favorite", "invalid_type"]])
      expect(yield* chats.get(orgId, chat.uuid)).toEqual(updated)
      expect((yield* Effect.flip(chats.update(orgId, UNKNOWN as ChatId, { favorite: true })))._tag).toBe("RecordNotFound")
    }).pipe(Effect.provide(TestLayer)))

  it.effect("setFavorite and markRead are idempotent: a call that changes nothing leaves updated_at alone", () =>
    Effect.gen(function* () {
      const { orgId, chats } = yield* setUp()
      const { chat } = yield* chats.receiveInbound(orgId, { phone: "+14155550100", type: "text", text: "hi" })
      yield* TestClock.adjust("1 minute")
      const favorite = yield* chats.setFavorite(orgId, chat.uuid, true)
      expect([favorite.favorite, favorite.updated_at]).toEqual([true, "1970-01-01T00:01:00.000Z"])
      yield* TestClock.adjust("1 minute")
      expect(yield* chats.setFavorite(orgId, chat.uuid, true)).toEqual(favorite)
      const read = yield* chats.markRead(orgId, chat.uuid)
      expect([read.unread, read.unread_count, read.updated_at]).toEqual([false, 0, "1970-01-01T00:02:00.000Z"])
      yield* TestClock.adjust("1 minute")
      expect(yield* chats.markRead(orgId, chat.uuid)).toEqual(read)
      expect(issuesOf(yield* Effect.flip(chats.setFavorite(orgId, chat.uuid, "yes" as never)))).toEqual([["favorite", "invalid_type"]])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("every chat operation of another organization's chat, or an unknown one, is RecordNotFound", () =>
    Effect.gen(function* () {
      const { orgId, chats } = yield* setUp()
      const other = yield* setUp()
      const { chat, message } = yield* chats.receiveInbound(other.orgId, { phone: "+14155550100", type: "text", text: "hi" })
      for (const id of [chat.uuid, UNKNOWN as ChatId]) {
        const calls = [
          chats.get(orgId, id),
          chats.setStatus(orgId, id, "closed"),
          chats.assign(orgId, id, "me"),
          chats.setFavorite(orgId, id, true),
          chats.markRead(orgId, id),
          chats.messages(orgId, id, { page: 1, per_page: 10 })
        ]
        for (const call of calls) expect(yield* Effect.flip(call as Effect.Effect<unknown, { _tag: string }>)).toMatchObject({ _tag: "RecordNotFound" })
      }
      expect(yield* Effect.flip(chats.getByContact(orgId, chat.contact.uuid))).toMatchObject({ _tag: "RecordNotFound" })
      expect(yield* Effect.flip(chats.ensure(orgId, chat.contact.uuid))).toMatchObject({ _tag: "RecordNotFound" })
      expect(yield* Effect.flip(chats.updateMessageStatus(orgId, message.uuid, "read"))).toMatchObject({ _tag: "RecordNotFound" })
      expect(yield* chats.get(other.orgId, chat.uuid)).toEqual(chat)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("ensure opens a chat without messages for a contact; messages lists a chat's messages newest first", () =>
    Effect.gen(function* () {
      const { orgId, chats } = yield* setUp()
      const contacts = yield* Contacts
      const contactId = (yield* contacts.importBulk(orgId, [{ phone: "+14155550100", first_name: "Ada" }])).contacts[0]!.uuid
      const { chat, created } = yield* chats.ensure(orgId, contactId)
      expect([created, chat.status, chat.last_message, chat.last_message_at]).toEqual([true, "open", null, null])
      expect(yield* chats.ensure(orgId, contactId)).toEqual({ chat, created: false })
      expect(yield* chats.getByContact(orgId, contactId)).toEqual(chat)
      yield* chats.appendOutbound(orgId, contactId, { type: "text", text: "first" })
      yield* TestClock.adjust("1 second")
      yield* chats.receiveInbound(orgId, { phone: "+14155550100", type: "text", text: "second" })
      const page = yield* chats.messages(orgId, chat.uuid, { page: 1, per_page: 10 })
      expect([page.items.map((message) => message.text), page.total]).toEqual([["second", "first"], 2])
    }).pipe(Effect.provide(TestLayer)))
})

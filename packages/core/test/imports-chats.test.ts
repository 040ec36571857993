import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Chats, Contacts, Core, Imports, MemoryStorage, Organizations, type Plan } from "@switchboard/core"
import { failureOf } from "./failure.js"

const TestLayer = Core.layer.pipe(Layer.provideMerge(MemoryStorage.layer))

const withOrganization = (plan: Partial<Plan> = {}) =>
  Effect.flatMap(Organizations, (organizations) => organizations.create({ name: "Acme", plan }))

const document = {
  contacts: [{ first_name: "Ada", phone: "+14155550100" }],
  chats: [
    {
      phone: "+1 415 555 0100",
      status: "pending",
      assigned_to: "agent-7",
      favorite: true,
      unread_count: 2,
      created_at: "2026-01-01",
      messages: [
        { direction: "inbound", type: "text", text: "Hello", created_at: "2026-01-02T10:00:00Z" },
        { direction: "outbound", text: "Hi Ada", created_at: "2026-01-02T10:05:00+02:00" }
      ]
    },
    { phone: "+14155550199", messages: [{ direction: "inbound", text: "Who is this?", created_at: "2026-01-03T08:00:00Z" }] }
  ]
}

const page = { page: 1, per_page: 100 }

describe("Imports.importDocument: chats (docs/import.md)", () => {
  it.effect("creates chats with attributes and messages, keyed by phone as written; last_message_at is the newest message", () =>
    Effect.gen(function* () {
      const org = yield* withOrganization()
      const result = yield* (yield* Imports).importDocument(org.id, document)
      expect(Object.keys(result.chats)).toEqual(["+1 415 555 0100", "+14155550199"])
      const chats = yield* Chats
      const chat = yield* chats.get(org.id, result.chats["+1 415 555 0100"]!)
      expect(chat).toMatchObject({
        contact: { uuid: result.contacts["+14155550100"], first_name: "Ada", phone: "+14155550100" },
        status: "pending",
        assigned_to: "agent-7",
        favorite: true,
        unread_count: 2,
        created_at: "2026-01-01T00:00:00.000Z",
        // 10:05+02:00 is 08:05Z, older than the inbound message at 10:00Z.
        last_message_at: "2026-01-02T10:00:00.000Z",
        last_message: { direction: "inbound", type: "text", text: "Hello", status: "delivered" }
      })
      const messages = yield* chats.messages(org.id, chat.uuid, page)
      expect(messages.items.map((m) => [m.direction, m.text, m.status, m.created_at])).toEqual([
        ["inbound", "Hello", "delivered", "2026-01-02T10:00:00.000Z"],
        ["outbound", "Hi Ada", "sent", "2026-01-02T08:05:00.000Z"]
      ])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("a phone the file does not list as a contact creates a contact with that phone; the chat starts at its oldest message", () =>
    Effect.gen(function* () {
      const org = yield* withOrganization()
      const result = yield* (yield* Imports).importDocument(org.id, document)
      const chat = yield* (yield* Chats).get(org.id, result.chats["+14155550199"]!)
      expect(chat).toMatchObject({
        contact: { first_name: null, last_name: null, phone: "+14155550199" },
        status: "open",
        assigned_to: null,
        favorite: false,
        unread_count: 0,
        created_at: "2026-01-03T08:00:00.000Z",
        last_message_at: "2026-01-03T08:00:00.000Z"
      })
      expect((yield* (yield* Contacts).list(org.id, page)).total).toBe(2)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("re-importing the same file matches the chats and duplicates no message", () =>
    Effect.gen(function* () {
      const org = yield* withOrganization()
      const imports = yield* Imports
      const first = yield* imports.importDocument(org.id, document)
      const chats = yield* Chats
      const before = yield* chats.get(org.id, first.chats["+1 415 555 0100"]!)
      const second = yield* imports.importDocument(org.id, document)
      expect(second.chats).toEqual(first.chats)
      expect(yield* chats.get(org.id, before.uuid)).toEqual(before)
      expect((yield* chats.messages(org.id, before.uuid, page)).total).toBe(2)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("a later import updates the attributes given and appends only new messages", () =>
    Effect.gen(function* () {
      const org = yield* withOrganization()
      const imports = yield* Imports
      const first = yield* imports.importDocument(org.id, document)
      yield* imports.importDocument(org.id, {
        chats: [
          {
            phone: "+14155550100",
            status: "closed",
            assigned_to: null,
            messages: [
              { direction: "inbound", text: "Hello", created_at: "2026-01-02T10:00:00Z" },
              { direction: "inbound", text: "Thanks!", created_at: "2026-02-01T09:00:00Z" }
            ]
          }
        ]
      })
      const chats = yield* Chats
      const chat = yield* chats.get(org.id, first.chats["+1 415 555 0100"]!)
      expect(chat).toMatchObject({ status: "closed", assigned_to: null, favorite: true, unread_count: 2, last_message_at: "2026-02-01T09:00:00.000Z" })
      const texts = (yield* chats.messages(org.id, chat.uuid, page)).items.map((m) => m.text)
      expect(texts).toEqual(["Thanks!", "Hello", "Hi Ada"])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("entries with one phone are one chat: later attributes win, messages add up", () =>
    Effect.gen(function* () {
      const org = yield* withOrganization()
      const result = yield* (yield* Imports).importDocument(org.id, {
        chats: [
          { phone: "+14155550100", status: "pending", messages: [{ direction: "inbound", text: "a", created_at: "2026-01-01T00:00:00Z" }] },
          { phone: "+1 (415) 555-0100", status: "resolved", messages: [{ direction: "outbound", text: "b", created_at: "2026-01-01T00:01:00Z" }] }
        ]
      })
      expect(result.chats["+14155550100"]).toBe(result.chats["+1 (415) 555-0100"])
      const chats = yield* Chats
      expect((yield* chats.get(org.id, result.chats["+14155550100"]!)).status).toBe("resolved")
      expect((yield* chats.messages(org.id, result.chats["+14155550100"]!, page)).total).toBe(2)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("reports every bad chat field with its path and writes nothing", () =>
    Effect.gen(function* () {
      const org = yield* withOrganization()
      const error = yield* failureOf(
        (yield* Imports).importDocument(org.id, {
          contacts: [{ first_name: "Ada", phone: "+14155550100" }],
          chats: [
            {
              phone: "12",
              status: "archived",
              assigned_to: "unassigned",
              favorite: "yes",
              unread_count: -1,
              created_at: "yesterday",
              messages: [
                { direction: "sideways", text: "", created_at: "2026-13-01" },
                { direction: "inbound", type: "media", created_at: "2026-01-01", status: "seen" },
                "hello",
                { direction: "outbound", text: "no time" },
                { direction: "outbound", text: "in flight", created_at: "2026-01-01", status: "sending" }
              ]
            },
            { status: "open" },
            { phone: "+14155550101", messages: {} }
          ]
        })
      )
      expect(error._tag).toBe("InvalidInput")
      const fields = error._tag === "InvalidInput" ? error.issues.map((issue) => issue.field) : []
      expect(fields).toEqual([
        "chats[0].phone",
        "chats[0].status",
        "chats[0].assigned_to",
        "chats[0].favorite",
        "chats[0].unread_count",
        "chats[0].created_at",
        "chats[0].messages[0].direction",
        "chats[0].messages[0].text",
        "chats[0].messages[0].created_at",
        "chats[0].messages[1].media",
        "chats[0].messages[1].status",
        "chats[0].messages[2]",
        "chats[0].messages[3].created_at",
        "chats[0].messages[4].status",
        "chats[1].phone",
        "chats[2].messages"
      ])
      expect((yield* (yield* Contacts).list(org.id, page)).total).toBe(0)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("contacts created for chats count against contacts_limit: over it → PlanLimitExceeded, nothing written", () =>
    Effect.gen(function* () {
      const org = yield* withOrganization({ contacts_limit: 1 })
      const error = yield* failureOf((yield* Imports).importDocument(org.id, document))
      expect(error).toMatchObject({ _tag: "PlanLimitExceeded", plan_limit: "contacts_limit", limit: 1, usage: 0, requested: 2 })
      expect((yield* (yield* Contacts).list(org.id, page)).total).toBe(0)
      const fits = yield* withOrganization({ contacts_limit: 2 })
      const result = yield* (yield* Imports).importDocument(fits.id, document)
      expect(Object.keys(result.chats)).toHaveLength(2)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("a document without chats answers chats: {}", () =>
    Effect.gen(function* () {
      const org = yield* withOrganization()
      const result = yield* (yield* Imports).importDocument(org.id, { groups: [{ name: "VIP" }] })
      expect(result.chats).toEqual({})
    }).pipe(Effect.provide(TestLayer)))
})

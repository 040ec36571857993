import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { BasicReplies, Contacts, Core, Imports, MemoryStorage, Organizations, Templates, type Plan } from "@switchboard/core"
import { failureOf } from "./failure.js"

const TestLayer = Core.layer.pipe(Layer.provideMerge(MemoryStorage.layer))

const withOrganization = (plan: Partial<Plan> = {}) =>
  Effect.flatMap(Organizations, (organizations) => organizations.create({ name: "Acme", plan }))

const orderUpdate = {
  name: "order_update",
  language: "en_US",
  category: "UTILITY",
  status: "APPROVED",
  components: [{ type: "BODY", text: "Hi {{1}}, order {{2}} has shipped." }]
}

const document = {
  templates: [orderUpdate, { ...orderUpdate, language: "es", components: [{ type: "BODY", text: "Hola {{1}}" }] }],
  basic_replies: [
    { name: "Hours", trigger: "Opening hours", response: "9–17" },
    { name: "Prices", trigger: " prices ", response: "See example.com/prices" }
  ]
}

const counts = (orgId: Parameters<Templates["Type"]["list"]>[0]) =>
  Effect.gen(function* () {
    const page = { page: 1, per_page: 100 }
    return {
      templates: (yield* (yield* Templates).list(orgId, page)).total,
      replies: (yield* (yield* BasicReplies).list(orgId, page)).total,
      contacts: (yield* (yield* Contacts).list(orgId, page)).total
    }
  })

describe("Imports.importDocument: templates and basic_replies (docs/import.md)", () => {
  it.effect("creates them and returns uuids keyed \"name/language\" and by trigger, as written", () =>
    Effect.gen(function* () {
      const org = yield* withOrganization()
      const result = yield* (yield* Imports).importDocument(org.id, document)
      expect(Object.keys(result.templates)).toEqual(["order_update/en_US", "order_update/es"])
      expect(Object.keys(result.basic_replies)).toEqual(["Opening hours", "prices"])
      const template = yield* (yield* Templates).get(org.id, result.templates["order_update/es"]!)
      expect(template).toMatchObject({ name: "order_update", language: "es", status: "APPROVED", components: [{ type: "BODY", text: "Hola {{1}}" }] })
      const reply = yield* (yield* BasicReplies).get(org.id, result.basic_replies["prices"]!)
      expect(reply).toMatchObject({ name: "Prices", trigger: "prices", response: "See example.com/prices" })
    }).pipe(Effect.provide(TestLayer)))

  it.effect("matches existing ones (name + language; trigger, case-insensitively), leaving them unchanged", () =>
    Effect.gen(function* () {
      const org = yield* withOrganization()
      const existing = yield* (yield* Templates).create(org.id, { ...orderUpdate, status: "PENDING" })
      const hours = yield* (yield* BasicReplies).create(org.id, { name: "Old", trigger: "OPENING HOURS", response: "old" })
      const imports = yield* Imports
      const first = yield* imports.importDocument(org.id, document)
      expect(first.templates["order_update/en_US"]).toBe(existing.uuid)
      expect(first.basic_replies["Opening hours"]).toBe(hours.uuid)
      expect(yield* (yield* Templates).get(org.id, existing.uuid)).toEqual(existing)
      expect(yield* (yield* BasicReplies).get(org.id, hours.uuid)).toEqual(hours)
      const second = yield* imports.importDocument(org.id, document)
      expect(second).toEqual(first)
      expect(yield* counts(org.id)).toEqual({ templates: 2, replies: 2, contacts: 0 })
    }).pipe(Effect.provide(TestLayer)))

  it.effect("a repeated identity in the file is one record: the first entry wins", () =>
    Effect.gen(function* () {
      const org = yield* withOrganization()
      const result = yield* (yield* Imports).importDocument(org.id, {
        templates: [orderUpdate, { ...orderUpdate, status: "REJECTED" }],
        basic_replies: [
          { name: "A", trigger: "hi", response: "first" },
          { name: "B", trigger: "HI", response: "second" }
        ]
      })
      expect(Object.keys(result.basic_replies)).toEqual(["hi"])
      expect((yield* (yield* Templates).get(org.id, result.templates["order_update/en_US"]!)).status).toBe("APPROVED")
      expect((yield* (yield* BasicReplies).get(org.id, result.basic_replies["hi"]!)).response).toBe("first")
      expect(yield* counts(org.id)).toEqual({ templates: 1, replies: 1, contacts: 0 })
    }).pipe(Effect.provide(TestLayer)))

  it.effect("validates them with the rest of the document, every problem at once, and writes nothing", () =>
    Effect.gen(function* () {
      const org = yield* withOrganization()
      const error = yield* failureOf(
        (yield* Imports).importDocument(org.id, {
          contacts: [{ first_name: "Ada", phone: "nope" }],
          templates: [orderUpdate, { ...orderUpdate, name: "Bad Name", components: [{ type: "BODY", text: "{{2}}" }] }, "x"],
          basic_replies: [{ name: "Hours", trigger: "hours", response: "ok" }, { name: "Empty", trigger: " " }]
        })
      )
      if (error._tag !== "InvalidInput") return expect.fail(`expected InvalidInput, got ${error._tag}`)
      expect(error.issues.map(({ code, field }) => ({ code, field }))).toEqual([
        { code: "invalid_format", field: "contacts[0].phone" },
        { code: "invalid_format", field: "templates[1].name" },
        { code: "invalid_format", field: "templates[1].components[0].text" },
        { code: "invalid_type", field: "templates[2]" },
        { code: "required", field: "basic_replies[1].trigger" },
        { code: "required", field: "basic_replies[1].response" }
      ])
      expect(yield* counts(org.id)).toEqual({ templates: 0, replies: 0, contacts: 0 })
    }).pipe(Effect.provide(TestLayer)))

  it.effect("templates or basic_replies that are not arrays are one invalid_type issue each", () =>
    Effect.gen(function* () {
      const org = yield* withOrganization()
      const error = yield* failureOf((yield* Imports).importDocument(org.id, { templates: {}, basic_replies: "none" }))
      if (error._tag !== "InvalidInput") return expect.fail(`expected InvalidInput, got ${error._tag}`)
      expect(error.issues.map(({ code, field }) => ({ code, field }))).toEqual([
        { code: "invalid_type", field: "templates" },
        { code: "invalid_type", field: "basic_replies" }
      ])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("a document rejected by a plan limit writes no template or reply either", () =>
    Effect.gen(function* () {
      const org = yield* withOrganization({ contacts_limit: 0 })
      const error = yield* failureOf(
        (yield* Imports).importDocument(org.id, { ...document, contacts: [{ first_name: "Ada", phone: "+14155550100" }] })
      )
      expect(error).toMatchObject({ _tag: "PlanLimitExceeded", plan_limit: "contacts_limit" })
      expect(yield* counts(org.id)).toEqual({ templates: 0, replies: 0, contacts: 0 })
    }).pipe(Effect.provide(TestLayer)))

  it.effect("without the keys, the result has empty templates and basic_replies", () =>
    Effect.gen(function* () {
      const org = yield* withOrganization()
      const result = yield* (yield* Imports).importDocument(org.id, { groups: [{ name: "VIP" }] })
      expect(result.templates).toEqual({})
      expect(result.basic_replies).toEqual({})
    }).pipe(Effect.provide(TestLayer)))
})

import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import {
  ContactGroups,
  Contacts,
  Core,
  Imports,
  Labels,
  MemoryStorage,
  Organizations,
  type Plan,
  Storage,
  type WebhookEndpointId
} from "@switchboard/core"

const TestLayer = Core.layer.pipe(Layer.provideMerge(MemoryStorage.layer))

const document = {
  groups: [{ name: "VIP" }, { name: "Empty group" }],
  labels: [{ name: "Hot", color: "#FF0000" }],
  contacts: [
    { first_name: "Ada", phone: "+1 415 555 0100", group: ["vip", "Newsletter"], labels: ["Hot", "Cold"] },
    { first_name: "Bob", last_name: "Stone", phone: "+14155550101", email: "bob@example.com" }
  ]
}

const withOrganization = (plan: Partial<Plan> = {}) =>
  Effect.flatMap(Organizations, (organizations) => organizations.create({ name: "Acme", plan }))

describe("Imports.importDocument (docs/import.md)", () => {
  it.effect("creates groups, labels and contacts and returns their uuids keyed as in the file", () =>
    Effect.gen(function* () {
      const org = yield* withOrganization()
      const result = yield* (yield* Imports).importDocument(org.id, document)
      expect(Object.keys(result.groups)).toEqual(["VIP", "Empty group", "Newsletter"])
      expect(Object.keys(result.labels)).toEqual(["Hot", "Cold"])
      expect(Object.keys(result.contacts)).toEqual(["+1 415 555 0100", "+14155550101"])
      const ada = yield* (yield* Contacts).get(org.id, result.contacts["+1 415 555 0100"]!)
      expect(ada.phone).toBe("+14155550100")
      expect(ada.groups.map((g) => g.name)).toEqual(["Newsletter", "VIP"])
      expect(ada.labels.map((l) => [l.name, l.color])).toEqual([["Cold", "#808080"], ["Hot", "#ff0000"]])
      const empty = yield* (yield* ContactGroups).get(org.id, result.groups["Empty group"]!)
      expect(empty.contacts_count).toBe(0)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("matches what exists on a second run instead of duplicating it", () =>
    Effect.gen(function* () {
      const org = yield* withOrganization()
      const imports = yield* Imports
      const first = yield* imports.importDocument(org.id, document)
      const second = yield* imports.importDocument(org.id, document)
      expect(second).toEqual(first)
      const labels = yield* (yield* Labels).list(org.id, { page: 1, per_page: 100 })
      expect(labels.total).toBe(2)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("reports every problem with its path and writes nothing", () =>
    Effect.gen(function* () {
      const org = yield* withOrganization()
      const error = yield* Effect.flip(
        (yield* Imports).importDocument(org.id, {
          groups: [{ name: "" }],
          labels: [{ name: "Hot", color: "red" }],
          contacts: [{ first_name: "Ada", phone: "nope" }, { phone: "+14155550101" }]
        })
      )
      expect(error._tag).toBe("InvalidInput")
      const fields = error._tag === "InvalidInput" ? error.issues.map((issue) => issue.field) : []
      expect(fields).toEqual(["groups[0].name", "labels[0].color", "contacts[0].phone", "contacts[1].first_name"])
      expect((yield* (yield* Contacts).list(org.id, { page: 1, per_page: 10 })).total).toBe(0)
      expect((yield* (yield* Labels).list(org.id, { page: 1, per_page: 10 })).total).toBe(0)
      expect((yield* (yield* ContactGroups).list(org.id, { page: 1, per_page: 10 })).total).toBe(0)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("rejects a document that would pass a plan limit, writing nothing", () =>
    Effect.gen(function* () {
      const imports = yield* Imports
      const labelsOver = yield* withOrganization({ label_limit: 1 })
      const labelError = yield* Effect.flip(imports.importDocument(labelsOver.id, document))
      expect(labelError).toMatchObject({ _tag: "PlanLimitExceeded", plan_limit: "label_limit", limit: 1, usage: 0, requested: 2 })
      const contactsOver = yield* withOrganization({ contacts_limit: 1 })
      const contactError = yield* Effect.flip(imports.importDocument(contactsOver.id, document))
      expect(contactError).toMatchObject({ _tag: "PlanLimitExceeded", plan_limit: "contacts_limit", limit: 1, requested: 2 })
      for (const org of [labelsOver, contactsOver]) {
        expect((yield* (yield* Contacts).list(org.id, { page: 1, per_page: 10 })).total).toBe(0)
        expect((yield* (yield* Labels).list(org.id, { page: 1, per_page: 10 })).total).toBe(0)
        expect((yield* (yield* ContactGroups).list(org.id, { page: 1, per_page: 10 })).total).toBe(0)
      }
    }).pipe(Effect.provide(TestLayer)))

  it.effect("rejects a document that is not an object", () =>
    Effect.gen(function* () {
      const org = yield* withOrganization()
      const error = yield* Effect.flip((yield* Imports).importDocument(org.id, [1, 2]))
      expect(error._tag).toBe("InvalidInput")
    }).pipe(Effect.provide(TestLayer)))
})

describe("webhook events of imports (docs/webhooks.md)", () => {
  it.effect("the admin import writes no contact.created events; POST /contacts/bulk's import does", () =>
    Effect.gen(function* () {
      const org = yield* withOrganization()
      const storage = yield* Storage
      const now = new Date().toISOString()
      const endpoint = {
        uuid: "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6a" as WebhookEndpointId,
        url: "https://hooks.example.com/switchboard",
        events: null,
        description: null,
        enabled: true,
        created_at: now,
        updated_at: now
      }
      expect((yield* storage.webhooks.insertEndpoint(org.id, { endpoint, secret_sealed: "sealed" }, 10))._tag).toBe("Inserted")
      const later = new Date(Date.now() + 60_000).toISOString()
      const farLater = new Date(Date.now() + 120_000).toISOString()
      yield* (yield* Imports).importDocument(org.id, { contacts: [{ first_name: "Ada", phone: "+14155550100" }] })
      expect(yield* storage.webhooks.claimDue(later, farLater, 10)).toEqual([])
      yield* (yield* Contacts).importBulk(org.id, [{ first_name: "Bob", phone: "+14155550101" }])
      const claimed = yield* storage.webhooks.claimDue(later, farLater, 10)
      expect(claimed.map((delivery) => [delivery.event.type, (delivery.event.data as { phone: string }).phone])).toEqual([
        ["contact.created", "+14155550101"]
      ])
    }).pipe(Effect.provide(TestLayer)))
})

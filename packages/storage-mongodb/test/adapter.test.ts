import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import type { MongoClient } from "mongodb"
import { type ChannelId, type ContactId, type LabelId, MESSAGE_STATUS_PREDECESSORS, Storage, type TemplateId, type WebhookEndpointId } from "@switchboard/core"
import { fixtures } from "@switchboard/storage-contract"
import { MongoRateLimitStore, MongoStorage } from "@switchboard/storage-mongodb"
import { RateLimitStore } from "@switchboard/core"
import { selectionTimeout } from "../src/internal/connection.js"
import { reconcileUsage } from "../src/internal/usage.js"
import { collectionsOf, INDEXES } from "../src/internal/schema.js"
import { type FakeDb, makeFakeDb } from "./support/fakeMongo.js"
import { limitsHoldAcrossInstances } from "./support/twoInstances.js"

// The adapter's repositories over the driver stand-in (support/fakeMongo.ts): what they
// send, in which order, and how they behave when a write fails midway.

const { importRow, instant, phone } = fixtures

const withStorage = <A, E>(fake: FakeDb, body: Effect.Effect<A, E, Storage>) =>
  body.pipe(Effect.provide(Layer.effect(Storage, MongoStorage.fromDb(fake.db))))

const insertOrganization = (overrides: Parameters<typeof fixtures.organization>[0] = {}) =>
  Effect.gen(function* () {
    const { organizations } = yield* Storage
    const organization = fixtures.organization(overrides)
    yield* organizations.insert(organization)
    return organization
  })

const usageOf = (fake: FakeDb, organizationId: string) => fake.documents("usage").find((d) => d._id === organizationId)

describe("start-up", () => {
  it.effect("creates every declared index, and creating them again changes nothing", () =>
    Effect.gen(function* () {
      const fake = makeFakeDb()
      yield* withStorage(fake, Effect.void)
      yield* withStorage(fake, Effect.void)
      for (const [name, collection] of [["contacts", "contacts"], ["messages", "messages"], ["labels", "labels"]] as const) {
        expect(fake.indexes(collection).map((i) => i.name)).toEqual(INDEXES[name].map((i) => i.name))
      }
      expect(fake.calls.filter((c) => c.method === "createIndexes").length).toBe(2 * Object.values(INDEXES).filter((list) => list.length > 0).length)
    }))

  it.effect("reaction rows of an earlier version are folded into their targets at start-up (newest wins, a removal leaves none), once; a chat whose last message was one gets its newest other message", () =>
    Effect.gen(function* () {
      const fake = makeFakeDb()
      const message = (uuid: string, direction: "inbound" | "outbound", providerId: string, minutes: number) => ({
        uuid: uuid as never, direction, type: "text", text: "hi", template: null, media: null, content: null,
        status: direction === "inbound" ? "delivered" : "sent", provider_message_id: providerId, failure: null, channel_uuid: null,
        transport: direction === "inbound" ? null : "recording", attempts: 0, next_attempt_at: null, broadcast_uuid: null,
        reply_to: null, reactions: [], created_at: instant(minutes), updated_at: instant(minutes)
      }) as const
      const [inbound, outbound] = [fixtures.uuid(), fixtures.uuid()]
      const { org, chatUuid, contactUuid } = yield* withStorage(
        fake,
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const contact = fixtures.uuid() as ContactId
          const first = yield* chats.appendMessage(org.id, {
            contact: { _tag: "ByPhone", phone: phone(1), create: { uuid: contact, first_name: null, last_name: null } },
            newChat: { uuid: fixtures.uuid() as never, status: "open" },
            message: message(inbound, "inbound", "wamid.in", 1),
            unreadIncrement: 1, reopen: { from: [], to: "open" }, dedupe: true, now: instant(1)
          })
          yield* chats.appendMessage(org.id, {
            contact: { _tag: "ById", uuid: contact }, newChat: { uuid: fixtures.uuid() as never, status: "open" },
            message: message(outbound, "outbound", "wamid.out", 2), unreadIncrement: 0, reopen: { from: [], to: "open" }, dedupe: false, now: instant(2)
          })
          return { org, chatUuid: first._tag === "Appended" ? first.chat.uuid : "", contactUuid: contact }
        })
      )
      // What an earlier version stored: reaction rows as messages, one of them the chat's last.
      const legacy = (id: string, target: string, emoji: string, minutes: number) => ({
        _id: id, organization_id: org.id, chat_uuid: chatUuid, contact_uuid: contactUuid, direction: "inbound", type: "reaction",
        text: emoji === "" ? null : emoji, template: null, media: null, content: JSON.stringify({ reaction: { message_id: target, emoji } }),
        status: "delivered", provider_message_id: `wamid.${id}`, failure: null, channel_uuid: null,
        created_at: instant(minutes), updated_at: instant(minutes)
      })
      yield* Effect.promise(async () => {
        const { messages, contacts } = collectionsOf(fake.db)
        await messages.insertMany([
          legacy("r1", "wamid.out", "👍", 3), legacy("r2", "wamid.out", "❤️", 4), legacy("r3", "wamid.in", "😀", 5), legacy("r4", "wamid.in", "", 6)
        ] as never)
        await contacts.updateOne({ _id: contactUuid } as never, { $set: { "chat.last_message_uuid": "r4", "chat.last_message_at": instant(6) } } as never)
      })
      const read = Effect.gen(function* () {
        const { chats } = yield* Storage
        const target = Option.getOrThrow(yield* chats.findMessage(org.id, outbound as never))
        const other = Option.getOrThrow(yield* chats.findMessage(org.id, inbound as never))
        const chat = Option.getOrThrow(yield* chats.findById(org.id, chatUuid as never))
        return { target: target.reactions, other: other.reactions, last: chat.last_message?.uuid, at: chat.last_message_at }
      })
      const expected = { target: [{ emoji: "❤️", by: "contact", at: instant(4) }], other: [], last: outbound, at: instant(2) }
      expect(yield* withStorage(fake, read)).toEqual(expected)
      expect(fake.documents("messages").filter((d) => d.type === "reaction").every((d) => d.reactions_folded === true)).toBe(true)
      expect(yield* withStorage(fake, read)).toEqual(expected)
      // Each start reads the rows still to fold through their partial index, never a scan of every message.
      const folds = fake.calls.filter((call) => call.collection === "messages" && call.method === "find" && "reactions_folded" in (call.args[0] as object))
      expect(folds.length).toBeGreaterThanOrEqual(2)
      for (const call of folds) {
        expect(call.args).toEqual([
          { type: { $eq: "reaction" }, reactions_folded: { $exists: false } },
          { sort: { reactions_folded: 1, created_at: 1, _id: 1 }, hint: "messages_reactions_to_fold" }
        ])
      }
      expect(fake.indexes("messages").filter((index) => index.name === "messages_reactions_to_fold")).toEqual([
        { name: "messages_reactions_to_fold", key: { reactions_folded: 1, created_at: 1, _id: 1 }, partialFilterExpression: { type: { $eq: "reaction" } } }
      ])
    }))

  it.effect("a database of an earlier version is upgraded: the identity index without accounts dropped, FLAGGED and REINSTATED templates APPROVED, one jittered sync record per channel account", () =>
    Effect.gen(function* () {
      const fake = makeFakeDb()
      const org = fixtures.organization()
      const other = fixtures.organization()
      // What an earlier version left: its identity index, statuses it stored, channels
      // without sync records.
      yield* Effect.promise(() =>
        collectionsOf(fake.db).templates.createIndexes([
          { name: "templates_by_identity", key: { organization_id: 1, name_key: 1, language: 1 }, unique: true }
        ])
      )
      const legacy = (status: string, name: string) => ({
        _id: fixtures.uuid(),
        organization_id: org.id,
        name,
        name_key: name,
        language: "en_US",
        category: "UTILITY",
        status,
        components: "[]",
        created_at: instant(0),
        updated_at: instant(0)
      })
      fake.documents("templates").push(legacy("FLAGGED", "a"), legacy("REINSTATED", "b"), legacy("PAUSED", "c"))
      const channel = (organizationId: string, wabaId: string) => ({
        ...fixtures.channelRecord({ waba_id: wabaId }),
        _id: fixtures.uuid(),
        organization_id: organizationId
      })
      fake.documents("channels").push(channel(org.id, "111"), channel(org.id, "111"), channel(org.id, "222"), channel(other.id, "111"))
      const before = Date.now()
      yield* withStorage(fake, Effect.void)
      const after = Date.now()
      expect(fake.indexes("templates").map((index) => index.name)).not.toContain("templates_by_identity")
      expect(fake.documents("templates").map((document) => document.status)).toEqual(["APPROVED", "APPROVED", "PAUSED"])
      const syncs = fake.documents("template_syncs")
      expect(syncs.map((sync) => [sync.organization_id, sync.waba_id]).sort()).toEqual(
        [[org.id, "111"], [org.id, "222"], [other.id, "111"]].sort()
      )
      for (const sync of syncs) {
        const due = Date.parse(sync.next_due_at as string)
        expect(due).toBeGreaterThanOrEqual(before)
        expect(due).toBeLessThan(after + 21_600_000)
        expect(sync).toMatchObject({ lease: null, last_run_at: null, last_outcome: null, last_error: null })
      }
      // A second start changes nothing: the records stay as they are.
      const dueTimes = syncs.map((sync) => sync.next_due_at)
      yield* withStorage(fake, Effect.void)
      expect(fake.documents("template_syncs").map((sync) => sync.next_due_at)).toEqual(dueTimes)
      // Two accounts' templates of one name now coexist; a template with no account is its own group.
      yield* Effect.gen(function* () {
        const { organizations, templates } = yield* Storage
        yield* organizations.insert(org)
        const write = (waba_id: string | null) =>
          templates.create(org.id, {
            uuid: fixtures.uuid() as TemplateId,
            content: { waba_id, provider_template_id: null, name: "a", language: "en_US", category: "UTILITY", status: "APPROVED", components: [], problems: [] },
            now: instant(1)
          })
        expect((yield* write("111"))._tag).toBe("Written")
        expect((yield* write("222"))._tag).toBe("Written")
        expect((yield* write(null))._tag).toBe("NameTaken")
      }).pipe(Effect.provide(Layer.effect(Storage, MongoStorage.fromDb(fake.db))))
    }))

  it.effect("layerFromClient takes the host's Db, or its MongoClient and a database name", () =>
    Effect.gen(function* () {
      const fake = makeFakeDb()
      const org = fixtures.organization()
      yield* Effect.flatMap(Storage, ({ organizations }) => organizations.insert(org)).pipe(Effect.provide(MongoStorage.layerFromClient(fake.db)))
      expect(fake.documents("organizations").map((d) => d._id)).toEqual([org.id])
      const asked: Array<string | undefined> = []
      const client = { db: (name?: string) => (asked.push(name), fake.db) } as unknown as MongoClient
      const found = yield* Effect.flatMap(Storage, ({ organizations }) => organizations.findById(org.id)).pipe(
        Effect.provide(MongoStorage.layerFromClient(client, { database: "app" }))
      )
      expect([Option.isSome(found), asked]).toEqual([true, ["app"]])
    }))

  it("reads the database from the connection string and hides credentials in messages", () => {
    expect(MongoStorage.databaseOf("mongodb://localhost:27017/switchboard")).toBe("switchboard")
    expect(MongoStorage.databaseOf("mongodb://u:p@h1:1,h2:2/app%2Dprod?replicaSet=rs0")).toBe("app-prod")
    expect(MongoStorage.databaseOf("mongodb+srv://cluster.example.net/?retryWrites=true")).toBe("switchboard")
    expect(MongoStorage.databaseOf("mongodb://localhost")).toBe("switchboard")
    expect(MongoStorage.redactUrl("mongodb://admin:s3cret@db:27017/app")).toBe("mongodb://db:27017/app")
    expect(MongoStorage.redactUrl("mongodb+srv://user@cluster.example.net/app")).toBe("mongodb+srv://cluster.example.net/app")
    expect(MongoStorage.redactUrl("mongodb://db:27017/app")).toBe("mongodb://db:27017/app")
  })

  it("passes serverSelectionTimeoutMS to the client unless the URL sets its own", () => {
    expect(selectionTimeout("mongodb://h/db", 250)).toEqual({ serverSelectionTimeoutMS: 250 })
    expect(selectionTimeout("mongodb://h/db?serverSelectionTimeoutMS=300", undefined)).toEqual({})
    expect(selectionTimeout("mongodb://h/db?replicaSet=rs&serverselectiontimeoutms=300", undefined)).toEqual({})
    expect(selectionTimeout("mongodb://h/db", undefined)).toEqual({ serverSelectionTimeoutMS: 10_000 })
  })

  it.effect("a server that cannot be reached fails the Layer with StorageError operation connect, within the timeout", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(Effect.scoped(MongoStorage.make({ url: "mongodb://127.0.0.1:9/switchboard", serverSelectionTimeoutMS: 300 })))
      expect(error._tag).toBe("StorageError")
      expect(error.operation).toBe("connect")
    }))
})

describe("injection payloads through the repositories", () => {
  it.effect("a hash shaped like an operator finds no credential", () =>
    withStorage(
      makeFakeDb(),
      Effect.gen(function* () {
        const { organizations } = yield* Storage
        const org = yield* insertOrganization()
        yield* organizations.insertApiKey(fixtures.apiKey(org.id))
        expect(yield* organizations.findCredentialByHash({ $gt: "" } as unknown as string)).toEqual(Option.none())
        expect(yield* organizations.findCredentialByHash({ $ne: null } as unknown as string)).toEqual(Option.none())
      })
    ))

  it.effect("names starting with $ are stored as written, not read as field paths", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { contacts } = yield* Storage
        const org = yield* insertOrganization()
        const result = yield* contacts.importBulk(org.id, fixtures.importRequest([importRow(phone(1), { first_name: "Ada" })]))
        const id = result._tag === "Imported" ? result.result.contacts[0]!.uuid : expect.fail("imported")
        const outcome = yield* contacts.update(org.id, id, { details: { first_name: "$phone", last_name: "$$ROOT" } }, instant(1))
        expect(outcome._tag === "Updated" && [outcome.contact.first_name, outcome.contact.last_name]).toEqual(["$phone", "$$ROOT"])
        const sent = fake.calls.find((c) => c.collection === "contacts" && c.method === "findOneAndUpdate")!
        expect(JSON.stringify(sent.args[1])).toContain('"first_name":{"$literal":"$phone"}')
      })
    )
  })

  it.effect("template components with $ and dotted keys are stored as JSON text and come back as written", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { templates } = yield* Storage
        const org = yield* insertOrganization()
        const components = [{ type: "BODY", text: "Hi {{1}}", "a.b": 1, $where: "x" }] as never
        const uuid = fixtures.uuid() as TemplateId
        const content = {
          waba_id: null,
          provider_template_id: null,
          name: "t",
          language: "en_US",
          category: "UTILITY",
          status: "APPROVED",
          components,
          problems: []
        } as const
        yield* templates.create(org.id, { uuid, content, now: instant(0) })
        expect(Option.map(yield* templates.findById(org.id, uuid), (t) => t.components)).toEqual(Option.some(components))
        expect(typeof fake.documents("templates")[0]!.components).toBe("string")
      })
    )
  })

  it.effect("a template stored before rejected_reason and accounts existed reads them as null (no problems); updateStatus writes only what differs", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { templates } = yield* Storage
        const org = yield* insertOrganization()
        const uuid = fixtures.uuid() as TemplateId
        fake.documents("templates").push({
          _id: uuid,
          organization_id: org.id,
          name: "t",
          name_key: "t",
          language: "en_US",
          category: "UTILITY",
          status: "REJECTED",
          components: "[]",
          created_at: instant(0),
          updated_at: instant(0)
        })
        const stored = {
          uuid,
          waba_id: null,
          provider_template_id: null,
          name: "t",
          language: "en_US",
          category: "UTILITY",
          status: "REJECTED",
          rejected_reason: null,
          components: [],
          problems: [],
          created_at: instant(0),
          updated_at: instant(0)
        }
        expect(yield* templates.findById(org.id, uuid)).toEqual(Option.some(stored))
        const unchanged = yield* templates.updateStatus(org.id, uuid, { status: "REJECTED", rejected_reason: null, now: instant(1) })
        expect(unchanged).toEqual({ _tag: "Updated", template: stored, changed: false })
        expect(fake.documents("templates")[0]).not.toHaveProperty("rejected_reason")
        const updates = fake.calls.filter((call) => call.collection === "templates" && call.method === "findOneAndUpdate")
        expect(updates).toHaveLength(1)
        const reason = yield* templates.updateStatus(org.id, uuid, { status: "REJECTED", rejected_reason: "INVALID_FORMAT", now: instant(2) })
        expect(reason).toEqual({ _tag: "Updated", template: { ...stored, rejected_reason: "INVALID_FORMAT", updated_at: instant(2) }, changed: true })
      })
    )
  })

  it.effect("search metacharacters match themselves only", () =>
    withStorage(
      makeFakeDb(),
      Effect.gen(function* () {
        const { chats, contacts } = yield* Storage
        const org = yield* insertOrganization()
        yield* contacts.importBulk(org.id, fixtures.importRequest([importRow(phone(1), { first_name: "abc" }), importRow(phone(2), { first_name: "a.c (x)" })]))
        const ids = (yield* contacts.list(org.id, { page: 1, per_page: 10 })).items.map((c) => c.uuid)
        for (const id of ids) yield* chats.ensure(org.id, id, { uuid: fixtures.uuid() as never, status: "open" }, instant(1))
        const found = (search: string) =>
          Effect.map(chats.listAfter(org.id, { search }, { by: "created_at", order: "asc" }, null, 10), (list) => list.map((c) => c.contact.first_name))
        expect(yield* found("a.c")).toEqual(["a.c (x)"])
        expect(yield* found(".*")).toEqual([])
        expect(yield* found("(x)")).toEqual(["a.c (x)"])
        expect(yield* found("[")).toEqual([])
      })
    ))
})

describe("plan limits without transactions", () => {
  it.effect("reserves with a conditional $inc on the usage document before inserting any contact", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { contacts } = yield* Storage
        const org = yield* insertOrganization()
        fake.calls.length = 0
        yield* contacts.importBulk(org.id, fixtures.importRequest([importRow(phone(1)), importRow(phone(2))], { contactsLimit: 5 }))
        const writes = fake.calls.filter((c) => ["updateOne", "insertMany", "insertOne", "bulkWrite"].includes(c.method))
        expect(writes.map((c) => `${c.collection}.${c.method}`)).toEqual(["usage.updateOne", "contacts.insertMany"])
        expect(writes[0]!.args[0]).toEqual({ _id: { $eq: org.id }, contacts: { $lte: 3 } })
        expect(writes[0]!.args[1]).toEqual({ $inc: { contacts: 2 }, $currentDate: { touched_at: true } })
        expect(usageOf(fake, org.id)?.contacts).toBe(2)
      })
    )
  })

  it.effect("concurrent imports never pass contacts_limit, and the counter ends equal to the contacts stored", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { contacts } = yield* Storage
        const org = yield* insertOrganization()
        const outcomes = yield* Effect.all(
          Array.from({ length: 6 }, (_, i) =>
            contacts.importBulk(org.id, fixtures.importRequest([importRow(phone(10 + 2 * i)), importRow(phone(11 + 2 * i))], { contactsLimit: 7 }))
          ),
          { concurrency: "unbounded" }
        )
        expect(outcomes.filter((o) => o._tag === "Imported")).toHaveLength(3)
        expect(outcomes.filter((o) => o._tag === "LimitExceeded")).toHaveLength(3)
        expect(fake.documents("contacts")).toHaveLength(6)
        expect(usageOf(fake, org.id)?.contacts).toBe(6)
      })
    )
  })

  it.effect("two storages on one database (two instances) never pass the limits together", () =>
    Effect.gen(function* () {
      const fake = makeFakeDb()
      const first = yield* MongoStorage.fromDb(fake.db)
      const second = yield* MongoStorage.fromDb(fake.db, { reconcileUsage: false })
      yield* limitsHoldAcrossInstances(first, second)
    }))

  it.effect("concurrent label creates never pass label_limit", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { labels } = yield* Storage
        const org = yield* insertOrganization()
        const outcomes = yield* Effect.all(
          Array.from({ length: 8 }, (_, i) => labels.create(org.id, { uuid: fixtures.uuid() as LabelId, name: `l${i}`, color: "#000", now: instant(i) }, 3)),
          { concurrency: "unbounded" }
        )
        expect(outcomes.filter((o) => o._tag === "Created")).toHaveLength(3)
        expect(outcomes.filter((o) => o._tag === "LimitExceeded")).toHaveLength(5)
        expect(fake.documents("labels")).toHaveLength(3)
        expect(usageOf(fake, org.id)?.labels).toBe(3)
      })
    )
  })

  it.effect("a batch whose insert fails midway (a phone created concurrently) is deleted, released and retried", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { contacts } = yield* Storage
        const org = yield* insertOrganization()
        const collection = fake.db.collection("contacts") as unknown as { insertMany: (docs: Array<Record<string, unknown>>, o: object) => Promise<unknown> }
        const original = collection.insertMany.bind(collection)
        let raced = false
        collection.insertMany = async (docs, options) => {
          if (!raced) {
            raced = true // another request creates the second phone between our read and our write
            fake.documents("contacts").push({ ...docs[1]!, _id: "0190f0e0-0000-7000-8000-00000000ffff", first_name: "Other" })
          }
          return original(docs, options)
        }
        const rows = [importRow(phone(1), { first_name: "A" }), importRow(phone(2), { first_name: "B" }), importRow(phone(3), { first_name: "C" })]
        const outcome = yield* contacts.importBulk(org.id, fixtures.importRequest(rows, { contactsLimit: 10 }))
        expect(outcome._tag === "Imported" && [outcome.result.created, outcome.result.updated]).toEqual([2, 1])
        const deletes = fake.calls.filter((c) => c.collection === "contacts" && c.method === "deleteMany")
        expect(deletes).toHaveLength(1)
        expect(fake.documents("contacts").map((d) => d.phone).sort()).toEqual([phone(1), phone(2), phone(3)])
        expect(fake.documents("contacts").find((d) => d.phone === phone(2))?.first_name).toBe("B")
        // The racing contact was inserted behind the counter's back (as another process
        // that crashed before counting would): 2 counted by this import.
        expect(usageOf(fake, org.id)?.contacts).toBe(2)
      })
    )
  })

  it.effect("reconciliation lowers a counter left high by a crash, unless it changed within the quiet period", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { contacts } = yield* Storage
        const org = yield* insertOrganization()
        yield* contacts.importBulk(org.id, fixtures.importRequest([importRow(phone(1)), importRow(phone(2))]))
        const usage = usageOf(fake, org.id)!
        Object.assign(usage, { contacts: 7, labels: 4, touched_at: new Date() }) // a crash after reserving
        const collections = collectionsOf(fake.db)
        expect(yield* Effect.promise(() => reconcileUsage(collections, 60_000))).toBe(0)
        expect(usageOf(fake, org.id)?.contacts).toBe(7)
        Object.assign(usage, { touched_at: new Date(Date.now() - 120_000) })
        expect(yield* Effect.promise(() => reconcileUsage(collections, 60_000))).toBe(1)
        expect([usageOf(fake, org.id)?.contacts, usageOf(fake, org.id)?.labels]).toEqual([2, 0])
      })
    )
  })

  it.effect("channels: the counter is added from the real count, kept by inserts and deletes, and reconciled when left high", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { channels } = yield* Storage
        const org = yield* insertOrganization()
        const channel = (n: number) => ({
          uuid: `00000000-0000-4000-8000-0000000c000${n}` as ChannelId,
          provider: "whatsapp_cloud" as const,
          phone_number_id: `77${n}`,
          display_phone_number: "+31612345678",
          waba_id: "1",
          access_token_set: true as const,
          access_token_last4: "abcd",
          throughput_mps: 50,
          status: "active" as const,
          paused_reason: null,
          paused_at: null,
          created_at: instant(n),
          updated_at: instant(n)
        })
        // A channel stored before the counter existed (no `channels` field): it is counted.
        yield* Effect.promise(() => collectionsOf(fake.db).channels.insertOne({ _id: channel(1).uuid, organization_id: org.id, ...channel(1), access_token_sealed: "s" }))
        expect(usageOf(fake, org.id)?.channels).toBeUndefined()
        expect((yield* channels.insert(org.id, { channel: channel(2), access_token_sealed: "s" }, 2))._tag).toBe("Inserted")
        expect(usageOf(fake, org.id)?.channels).toBe(2)
        expect(yield* channels.insert(org.id, { channel: channel(3), access_token_sealed: "s" }, 2)).toEqual({ _tag: "LimitReached", limit: 2 })
        expect(yield* channels.insert(org.id, { channel: { ...channel(4), phone_number_id: "772" }, access_token_sealed: "s" }, 5)).toEqual({ _tag: "PhoneNumberIdTaken" })
        expect(usageOf(fake, org.id)?.channels).toBe(2)
        expect(yield* channels.delete(org.id, channel(2).uuid)).toBe(true)
        expect(usageOf(fake, org.id)?.channels).toBe(1)
        Object.assign(usageOf(fake, org.id)!, { channels: 5, touched_at: new Date(Date.now() - 120_000) }) // a crash after reserving
        expect(yield* Effect.promise(() => reconcileUsage(collectionsOf(fake.db), 60_000))).toBe(1)
        expect(usageOf(fake, org.id)?.channels).toBe(1)
      })
    )
  })

  it.effect("channels: a document stored before throughput_mps existed reads as 50, and update adds the field", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { channels } = yield* Storage
        const org = yield* insertOrganization()
        const uuid = "00000000-0000-4000-8000-0000000c0101" as ChannelId
        yield* Effect.promise(() =>
          collectionsOf(fake.db).channels.insertOne({
            _id: uuid,
            organization_id: org.id,
            provider: "whatsapp_cloud",
            phone_number_id: "881",
            display_phone_number: "+31612345678",
            waba_id: "1",
            access_token_sealed: "s",
            access_token_last4: "abcd",
            created_at: instant(1),
            updated_at: instant(1)
          })
        )
        expect((yield* channels.list(org.id)).map((c) => c.throughput_mps)).toEqual([50])
        const updated = yield* channels.update(org.id, uuid, { throughput_mps: 12, updated_at: instant(2) })
        expect(Option.map(updated, (c) => c.throughput_mps)).toEqual(Option.some(12))
        expect((yield* Effect.promise(() => collectionsOf(fake.db).channels.findOne({ _id: uuid })))?.throughput_mps).toBe(12)
      })
    )
  })

  it.effect("an idempotency record stored before resource_uuid existed: a takeover stores and answers its own uuid", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { idempotency } = yield* Storage
        const org = yield* insertOrganization()
        yield* Effect.promise(() =>
          collectionsOf(fake.db).idempotencyKeys.insertOne({
            _id: `${org.id}:crashed`,
            organization_id: org.id,
            fingerprint: "fp",
            locked_until: instant(1),
            expires_at: instant(1440),
            expire_at: new Date(instant(1440)),
            response_status: null,
            response_body: null,
            created_at: instant(0)
          })
        )
        const at = (minutes: number, resourceUuid: string) => ({
          key: "crashed",
          fingerprint: "fp",
          resourceUuid,
          now: instant(minutes),
          lockedUntil: instant(minutes + 1),
          expiresAt: instant(minutes + 1440)
        })
        expect(yield* idempotency.claim(org.id, at(2, "uuid-b"))).toEqual({ _tag: "Claimed", resourceUuid: "uuid-b", takeover: true })
        expect(yield* idempotency.claim(org.id, at(4, "uuid-c"))).toEqual({ _tag: "Claimed", resourceUuid: "uuid-b", takeover: true })
        expect(fake.documents("idempotency_keys")[0]?.resource_uuid).toBe("uuid-b")
      })
    )
  })

  it.effect("an organization without a usage document (stored before it existed) gets one from the real counts", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { contacts, labels } = yield* Storage
        const org = yield* insertOrganization()
        const imported = yield* contacts.importBulk(org.id, fixtures.importRequest([importRow(phone(1)), importRow(phone(2)), importRow(phone(3))]))
        const ids = imported._tag === "Imported" ? imported.result.contacts.map((c) => c.uuid) : expect.fail("imported")
        const drop = () => fake.documents("usage").splice(fake.documents("usage").findIndex((d) => d._id === org.id), 1)
        drop()
        expect(yield* contacts.delete(org.id, ids[0]!)).toBe(true)
        expect(usageOf(fake, org.id)?.contacts).toBe(2)
        drop()
        const outcome = yield* labels.create(org.id, { uuid: fixtures.uuid() as LabelId, name: "hot", color: "#000", now: instant(1) }, 1)
        expect(outcome._tag).toBe("Created")
        expect([usageOf(fake, org.id)?.contacts, usageOf(fake, org.id)?.labels]).toEqual([2, 1])
      })
    )
  })

  it.effect("deleting a contact deletes its chat's messages and frees its slot", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { chats, contacts } = yield* Storage
        const org = yield* insertOrganization()
        const request = {
          contact: { _tag: "ByPhone", phone: phone(1), create: { uuid: fixtures.uuid() as ContactId, first_name: null, last_name: null } },
          newChat: { uuid: fixtures.uuid() as never, status: "open" },
          message: { uuid: fixtures.uuid() as never, direction: "inbound", type: "text", text: "hi", template: null, media: null, content: null, status: "delivered", provider_message_id: null, failure: null, channel_uuid: null, transport: null, attempts: 0, next_attempt_at: null, broadcast_uuid: null, reply_to: null, reactions: [], created_at: instant(1), updated_at: instant(1) },
          unreadIncrement: 1,
          reopen: { from: [], to: "open" },
          dedupe: false,
          now: instant(1)
        } as const
        const outcome = yield* chats.appendMessage(org.id, request)
        expect(usageOf(fake, org.id)?.contacts).toBe(1)
        expect(fake.documents("messages")).toHaveLength(1)
        expect(yield* contacts.delete(org.id, request.contact.create.uuid)).toBe(true)
        expect(outcome._tag).toBe("Appended")
        expect(fake.documents("messages")).toHaveLength(0)
        expect(usageOf(fake, org.id)?.contacts).toBe(0)
      })
    )
  })
})

describe("provider status reports without transactions", () => {
  /** An organization with one queued outbound message, to a new contact. */
  const queuedOutbound = Effect.gen(function* () {
    const { chats } = yield* Storage
    const org = yield* insertOrganization()
    const outcome = yield* chats.appendMessage(org.id, {
      contact: { _tag: "ByPhone", phone: phone(1), create: { uuid: fixtures.uuid() as ContactId, first_name: null, last_name: null } },
      newChat: { uuid: fixtures.uuid() as never, status: "open" },
      message: { uuid: fixtures.uuid() as never, direction: "outbound", type: "text", text: "hi", template: null, media: null, content: null, status: "queued", provider_message_id: null, failure: null, channel_uuid: null, transport: "recording", attempts: 0, next_attempt_at: null, broadcast_uuid: null, reply_to: null, reactions: [], created_at: instant(0), updated_at: instant(0) },
      unreadIncrement: 0,
      reopen: { from: [], to: "open" },
      dedupe: false,
      now: instant(0)
    })
    if (outcome._tag !== "Appended") return expect.fail(`expected Appended, got ${outcome._tag}`)
    return { org, message: outcome.message }
  })

  /** Wraps the fake's insert of a pending report: `before` runs first, `after` once it is stored. */
  const aroundPendingInsert = (fake: FakeDb, hooks: { readonly before?: () => Promise<unknown>; readonly after?: () => Promise<unknown> }) => {
    const collection = fake.db.collection("pending_message_statuses") as unknown as { insertOne: (document: unknown) => Promise<unknown> }
    const insertOne = collection.insertOne.bind(collection)
    collection.insertOne = async (document) => {
      await hooks.before?.()
      const result = await insertOne(document)
      await hooks.after?.()
      return result
    }
  }

  const delivered = { status: "delivered", from: MESSAGE_STATUS_PREDECESSORS.delivered, now: instant(1), pendingUntil: instant(60) } as const
  const sent = { status: "sent", from: MESSAGE_STATUS_PREDECESSORS.sent, provider_message_id: "wamid.1", now: instant(2) } as const

  it.effect("a report for an unknown provider id is stored with expire_at for the TTL index", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { chats } = yield* Storage
        const { org } = yield* queuedOutbound
        const failure = { code: "131047", title: "Re-engagement message" }
        expect(yield* chats.updateMessageStatusByProviderId(org.id, "wamid.1", { ...delivered, status: "failed", failure })).toEqual({ _tag: "Pending" })
        expect(fake.documents("pending_message_statuses")).toEqual([
          {
            _id: expect.any(String),
            organization_id: org.id,
            provider_message_id: "wamid.1",
            status: "failed",
            from: MESSAGE_STATUS_PREDECESSORS.delivered,
            failure,
            reported_at: instant(1),
            pending_until: instant(60),
            expire_at: new Date(instant(60))
          }
        ])
        expect(fake.indexes("pending_message_statuses")).toContainEqual({ name: "pending_message_statuses_expiry", key: { expire_at: 1 }, expireAfterSeconds: 0 })
      })
    )
  })

  it.effect("the send records the id between a report's look-up and its insert: the report looks again and applies itself", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const storage = yield* Storage
        const { message, org } = yield* queuedOutbound
        const sends: Array<unknown> = []
        aroundPendingInsert(fake, {
          before: async () => sends.push(await Effect.runPromise(storage.chats.updateMessageStatus(org.id, message.uuid, sent)))
        })
        const outcome = yield* storage.chats.updateMessageStatusByProviderId(org.id, "wamid.1", delivered)
        expect(sends).toMatchObject([{ _tag: "Updated", changed: true, message: { status: "sent" } }])
        expect(outcome).toMatchObject({ _tag: "Updated", changed: true, message: { status: "delivered", provider_message_id: "wamid.1" } })
        expect(Option.map(yield* storage.chats.findMessage(org.id, message.uuid), (m) => m.status)).toEqual(Option.some("delivered"))
        expect(fake.documents("pending_message_statuses")).toEqual([])
      })
    )
  })

  it.effect("the send records the id and claims the reports between a report's insert and its second look-up: applied once, by the send", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const storage = yield* Storage
        const { message, org } = yield* queuedOutbound
        const sends: Array<unknown> = []
        aroundPendingInsert(fake, {
          after: async () => sends.push(await Effect.runPromise(storage.chats.updateMessageStatus(org.id, message.uuid, sent)))
        })
        const outcome = yield* storage.chats.updateMessageStatusByProviderId(org.id, "wamid.1", delivered)
        expect(sends).toMatchObject([{ _tag: "Updated", changed: true, message: { status: "delivered" } }])
        expect(outcome).toMatchObject({ _tag: "Updated", changed: false, message: { status: "delivered" } })
        const claims = fake.calls.filter((call) => call.collection === "pending_message_statuses" && call.method === "findOneAndDelete")
        expect(claims).toHaveLength(3) // the send's claim and its end, the report's empty claim
        expect(fake.documents("pending_message_statuses")).toEqual([])
      })
    )
  })
})

describe("MongoRateLimitStore", () => {
  it.effect("sends one findOneAndUpdate per increment and creates the TTL index", () => {
    const fake = makeFakeDb()
    return Effect.gen(function* () {
      const store = yield* RateLimitStore
      const request = { key: "general:org:a", windowStart: 60_000, expiresAt: 120_000, now: 60_001 }
      fake.calls.length = 0
      expect(yield* store.increment(request)).toBe(1)
      expect(yield* store.increment(request)).toBe(2)
      expect(fake.calls.map((c) => `${c.collection}.${c.method}`)).toEqual(["rate_buckets.findOneAndUpdate", "rate_buckets.findOneAndUpdate"])
      expect(fake.documents("rate_buckets")).toEqual([{ _id: "60000:general:org:a", count: 2, expires_at: new Date(120_000) }])
      expect(fake.indexes("rate_buckets")).toEqual([{ name: "rate_buckets_expiry", key: { expires_at: 1 }, expireAfterSeconds: 0 }])
    }).pipe(Effect.provide(Layer.effect(RateLimitStore, MongoRateLimitStore.fromDb(fake.db))))
  })
})

describe("outgoing webhooks without transactions", () => {
  const endpoint = (minutes: number) => ({
    uuid: fixtures.uuid() as WebhookEndpointId,
    url: "https://example.com/hooks",
    events: null,
    description: null,
    enabled: true,
    created_at: instant(minutes),
    updated_at: instant(minutes)
  })

  it.effect("concurrent inserts past the limit: exactly the endpoints past it in (created_at, _id) order are refused and deleted", () =>
    Effect.gen(function* () {
      const fake = makeFakeDb()
      yield* withStorage(
        fake,
        Effect.gen(function* () {
          const { webhooks } = yield* Storage
          const org = yield* insertOrganization()
          for (let n = 0; n < 8; n++) yield* webhooks.insertEndpoint(org.id, { endpoint: endpoint(n), secret_sealed: "s" }, 10)
          const racing = [endpoint(10), endpoint(11), endpoint(12), endpoint(13)]
          const outcomes = yield* Effect.all(
            racing.map((candidate) => webhooks.insertEndpoint(org.id, { endpoint: candidate, secret_sealed: "s" }, 10)),
            { concurrency: "unbounded" }
          )
          expect(outcomes.map((outcome) => outcome._tag)).toEqual(["Inserted", "Inserted", "LimitReached", "LimitReached"])
          expect((yield* webhooks.listEndpoints(org.id)).map((e) => e.uuid).slice(0, 2)).toEqual([racing[1]!.uuid, racing[0]!.uuid])
          expect(fake.documents("webhook_endpoints")).toHaveLength(10)
        })
      )
    }))

  it.effect("an event rides in the changed document until the relay moves it; a second relay moves nothing again", () =>
    Effect.gen(function* () {
      const fake = makeFakeDb()
      yield* withStorage(
        fake,
        Effect.gen(function* () {
          const { contacts, webhooks } = yield* Storage
          const org = yield* insertOrganization()
          const created = endpoint(0)
          yield* webhooks.insertEndpoint(org.id, { endpoint: created, secret_sealed: "s" }, 10)
          yield* contacts.importBulk(org.id, fixtures.importRequest([importRow(phone(1))], { now: instant(1) }))
          const [contact] = fake.documents("contacts")
          const [pending] = contact!.pending_events as Array<{ id: string; type: string; endpoints: Array<string> }>
          expect([pending!.type, pending!.endpoints]).toEqual(["contact.created", [created.uuid]])
          expect(fake.documents("webhook_events")).toEqual([])
          const claimed = yield* webhooks.claimDue(instant(2), instant(3), 10)
          expect(claimed.map((delivery) => [delivery.delivery_id, delivery.event.id])).toEqual([[`${pending!.id}:${created.uuid}`, pending!.id]])
          expect(fake.documents("contacts")[0]!.pending_events).toEqual([])
          expect(yield* webhooks.claimDue(instant(2), instant(3), 10)).toEqual([])
          expect(fake.documents("webhook_deliveries")).toHaveLength(1)
        })
      )
    }))
})

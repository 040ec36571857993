import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import {
  BROADCAST_CANCELLED_FAILURE,
  type BroadcastId,
  type BroadcastRecipientWrite,
  type ChatId,
  type Contact,
  type MessageId,
  type OrganizationId,
  Storage,
  type WebhookEndpointId
} from "@switchboard/core"
import { fixtures } from "@switchboard/storage-contract"
import { MongoStorage } from "@switchboard/storage-mongodb"
import { INDEXES } from "../src/internal/schema.js"
import { type FakeDb, makeFakeDb } from "./support/fakeMongo.js"

// Broadcasts on the driver stand-in (support/fakeMongo.ts): the one-recipient-per-contact
// index, the writes a start and a cancel make without transactions when they meet, and
// documents written before the contacts' opt-out field existed.

const { importRow, instant, phone } = fixtures

/** The tests' clock: epoch ms of `instant(0)`, and ISO 8601 times `ms` after it. */
const T0 = Date.parse(instant(0))
const at = (ms: number): string => new Date(T0 + ms).toISOString()
const LEASE_MS = 30_000

const withStorage = <A, E>(fake: FakeDb, body: Effect.Effect<A, E, Storage>) =>
  body.pipe(Effect.provide(Layer.effect(Storage, MongoStorage.fromDb(fake.db))))

/** A template send object whose parameter holds keys MongoDB would refuse in a document. */
const template = {
  name: "order_update",
  language: { code: "en_US" },
  components: [{ type: "body", parameters: [{ type: "text", text: "{{contact.first_name}}", "$where": "1", "a.b": 2 }] }]
}

/** An organization with `n` contacts (uuids ascending) and a `sending` broadcast to them, its start claimed: the lease. */
const claimedBroadcast = (n: number) =>
  Effect.gen(function* () {
    const { broadcasts, contacts, organizations } = yield* Storage
    const org = fixtures.organization()
    yield* organizations.insert(org)
    const imported = yield* contacts.importBulk(org.id, fixtures.importRequest(Array.from({ length: n }, (_, i) => importRow(phone(i)))))
    if (imported._tag !== "Imported") return expect.fail(imported._tag)
    const ids = imported.result.contacts.map((contact) => contact.uuid).sort()
    const broadcast = yield* broadcasts.create(org.id, {
      uuid: fixtures.uuid() as BroadcastId,
      name: "Spring sale",
      status: "sending",
      template: template as never,
      audience: { group_uuids: [], label_uuids: [], contact_uuids: ids },
      channel_uuid: null,
      transport: "recording",
      send_at: null,
      now: at(0)
    })
    const start = Option.getOrThrow(yield* broadcasts.claimStart({ now: T0 + 1, lease: "lease-1", leaseUntil: T0 + 1 + LEASE_MS }))
    const page = yield* broadcasts.audiencePage(org.id, broadcast.audience, null, 100)
    return { org, broadcast, lease: start.lease, page }
  })

/** The recipient write of `contact`, queued. */
const recipientOf = (broadcastId: BroadcastId, contact: Contact): BroadcastRecipientWrite => ({
  contact_uuid: contact.uuid,
  chat_uuid: fixtures.uuid() as ChatId,
  message: {
    uuid: fixtures.uuid() as MessageId,
    direction: "outbound",
    type: "template",
    text: null,
    template: template as never,
    media: null,
    content: null,
    status: "queued",
    provider_message_id: null,
    failure: null,
    channel_uuid: null,
    transport: "recording",
    attempts: 0,
    next_attempt_at: null,
    broadcast_uuid: broadcastId,
    reply_to: null,
    reactions: [],
    created_at: at(2),
    updated_at: at(2)
  },
  to: contact.phone,
  expires_at: instant(10_000)
})

/** The batch of `page`, the last one of the start. */
const batchOf = (broadcastId: BroadcastId, page: ReadonlyArray<Contact>) => ({
  recipients: page.map((contact) => recipientOf(broadcastId, contact)),
  cursor: page[page.length - 1]!.uuid,
  finished: true,
  leaseUntil: T0 + 2 + LEASE_MS,
  now: at(2)
})

/** Runs `before` once, just before the first message insert of the fake database. */
const beforeFirstMessageInsert = (fake: FakeDb, before: () => Promise<void>) => {
  const collection = fake.db.collection("messages") as unknown as { insertOne: (document: Record<string, unknown>) => Promise<unknown> }
  const original = collection.insertOne.bind(collection)
  let done = false
  collection.insertOne = async (document) => {
    if (!done) {
      done = true
      await before()
    }
    return original(document)
  }
}

describe("broadcasts: schema", () => {
  it.effect("one recipient per (broadcast, contact): a second one is a duplicate key; messages without a broadcast are not held by it", () =>
    Effect.gen(function* () {
      const fake = makeFakeDb()
      yield* withStorage(fake, Effect.void)
      expect(INDEXES.messages).toContainEqual({
        name: "messages_by_broadcast_contact",
        key: { organization_id: 1, broadcast_uuid: 1, contact_uuid: 1 },
        unique: true,
        partialFilterExpression: { broadcast_uuid: { $type: "string" } }
      })
      const messages = fake.db.collection<{ _id: string }>("messages")
      const message = (id: string, broadcast: string | null) => ({ _id: id, organization_id: "o", contact_uuid: "c", broadcast_uuid: broadcast })
      yield* Effect.promise(() => messages.insertMany([message("m1", null), message("m2", null), message("m3", "b1"), message("m4", "b2")]))
      const duplicate = yield* Effect.flip(Effect.tryPromise(() => messages.insertOne(message("m5", "b1"))))
      expect(duplicate.cause).toMatchObject({ code: 11000 })
    }))
})

describe("broadcasts: without transactions", () => {
  it.effect("a contact another holder of the start wrote between the batch's look-up and its insert: the duplicate key is skipped, the contact has one recipient", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { broadcasts } = yield* Storage
        const { org, broadcast, lease, page } = yield* claimedBroadcast(2)
        const other = fixtures.uuid()
        beforeFirstMessageInsert(fake, async () => {
          // As another holder's insert would leave it (only the fields the index and the reads use).
          fake.documents("messages").push({
            _id: other,
            organization_id: org.id,
            contact_uuid: page[0]!.uuid,
            broadcast_uuid: broadcast.uuid,
            status: "queued",
            to: page[0]!.phone,
            failure: null
          })
        })
        expect(yield* broadcasts.writeRecipients(org.id, broadcast.uuid, lease, batchOf(broadcast.uuid, page))).toBe(true)
        const recipients = yield* broadcasts.recipients(org.id, broadcast.uuid, { status: null, limit: 10, after: null })
        expect(recipients.map((r) => [r.contact_uuid, r.message_uuid === other])).toEqual([
          [page[0]!.uuid, true],
          [page[1]!.uuid, false]
        ])
      })
    )
  })

  it.effect("a cancel between a batch's check and its inserts: the batch answers false and fails the recipients it wrote with the cancel's failure", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const storage = yield* Storage
        const { org, broadcast, lease, page } = yield* claimedBroadcast(3)
        const cancels: Array<string> = []
        beforeFirstMessageInsert(fake, async () => {
          const outcome = await Effect.runPromise(storage.broadcasts.cancel(org.id, broadcast.uuid, BROADCAST_CANCELLED_FAILURE, at(2)))
          cancels.push(outcome._tag)
        })
        expect(yield* storage.broadcasts.writeRecipients(org.id, broadcast.uuid, lease, batchOf(broadcast.uuid, page))).toBe(false)
        expect(cancels).toEqual(["Done"])
        const found = Option.getOrThrow(yield* storage.broadcasts.findById(org.id, broadcast.uuid))
        expect(found).toMatchObject({ status: "cancelled", counts: { total: 3, queued: 0, failed: 3 } })
        const recipients = yield* storage.broadcasts.recipients(org.id, broadcast.uuid, { status: null, limit: 10, after: null })
        expect(recipients.map((r) => r.failure)).toEqual([BROADCAST_CANCELLED_FAILURE, BROADCAST_CANCELLED_FAILURE, BROADCAST_CANCELLED_FAILURE])
        // None is left for the send queue, and the start is over.
        expect(fake.documents("messages").filter((d) => typeof d.next_attempt_at === "string")).toEqual([])
        expect(yield* storage.broadcasts.claimStart({ now: T0 + 10 * LEASE_MS, lease: "lease-2", leaseUntil: T0 + 11 * LEASE_MS })).toEqual(Option.none())
      })
    )
  })

  it.effect("claimStart is one findOneAndUpdate; the template is stored as JSON text and read back as given", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { broadcasts } = yield* Storage
        const { org, broadcast } = yield* claimedBroadcast(1)
        expect(fake.calls.filter((c) => c.collection === "broadcasts" && c.method === "findOneAndUpdate")).toHaveLength(1)
        expect(typeof fake.documents("broadcasts")[0]!.template).toBe("string")
        expect(Option.map(yield* broadcasts.findById(org.id, broadcast.uuid), (b) => b.template)).toEqual(Option.some(template))
      })
    )
  })

  it.effect("broadcast.completed rides in the broadcast's document until the relay moves it", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { broadcasts, webhooks } = yield* Storage
        const { org, broadcast, lease, page } = yield* claimedBroadcast(1)
        const endpoint = fixtures.uuid() as WebhookEndpointId
        yield* webhooks.insertEndpoint(
          org.id,
          {
            endpoint: { uuid: endpoint, url: "https://example.com/hooks", events: ["broadcast.completed"], description: null, enabled: true, created_at: at(0), updated_at: at(0) },
            secret_sealed: "s"
          },
          10
        )
        const skipped = { ...batchOf(broadcast.uuid, page) }
        const failed = skipped.recipients.map((r) => ({ ...r, message: { ...r.message, status: "failed" as const, failure: { code: "opted_out", title: "Opted out" } } }))
        expect(yield* broadcasts.writeRecipients(org.id, broadcast.uuid, lease, { ...skipped, recipients: failed })).toBe(true)
        const [completed] = yield* broadcasts.completeFinished(at(3))
        expect(completed).toMatchObject({ uuid: broadcast.uuid, status: "completed", counts: { total: 1, failed: 1 } })
        const [pending] = fake.documents("broadcasts")[0]!.pending_events as Array<{ type: string; data: string; endpoints: Array<string> }>
        expect([pending!.type, JSON.parse(pending!.data), pending!.endpoints]).toEqual(["broadcast.completed", completed, [endpoint]])
        const claimed = yield* webhooks.claimDue(at(4), at(5), 10)
        expect(claimed.map((delivery) => [delivery.event.type, delivery.event.data])).toEqual([["broadcast.completed", completed]])
        expect(fake.documents("broadcasts")[0]!.pending_events).toEqual([])
      })
    )
  })
})

describe("contacts: marketing opt-out", () => {
  it.effect("a contact stored before marketing_opt_out_at existed reads null, and markMarketingOptOut writes it once", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { contacts, organizations } = yield* Storage
        const org = fixtures.organization()
        yield* organizations.insert(org)
        yield* contacts.importBulk(org.id, fixtures.importRequest([importRow(phone(1))]))
        const [document] = fake.documents("contacts")
        delete document!.marketing_opt_out_at
        const id = document!._id as Contact["uuid"]
        expect(Option.map(yield* contacts.findById(org.id as OrganizationId, id), (c) => c.marketing_opt_out_at)).toEqual(Option.some(null))
        expect(yield* contacts.markMarketingOptOut(org.id, id, at(1))).toBe(true)
        expect(yield* contacts.markMarketingOptOut(org.id, id, at(2))).toBe(false)
        expect(fake.documents("contacts")[0]!.marketing_opt_out_at).toBe(at(1))
        expect(fake.documents("contacts")[0]!.updated_at).toBe(document!.created_at)
      })
    )
  })
})

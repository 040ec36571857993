import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer, Option } from "effect"
import {
  type ChatAppendRequest,
  type ContactId,
  type NewInboundMedia,
  type NewMedia,
  type OrganizationId,
  Storage,
  type WebhookEndpointId
} from "@switchboard/core"
import { fixtures } from "@switchboard/storage-contract"
import { MongoStorage } from "@switchboard/storage-mongodb"
import { dueFetchFilter, mediaPageFilter, usageReconcileFilter } from "../src/internal/queries.js"
import { collectionsOf, HAS_FETCH_JOB, INDEXES } from "../src/internal/schema.js"
import { reconcileUsage } from "../src/internal/usage.js"
import { type FakeDb, makeFakeDb } from "./support/fakeMongo.js"

// The media repository on the driver stand-in (support/fakeMongo.ts), beyond the contract:
// the crash windows between its single-document writes and their repair, the stored-bytes
// counter, and the documents it sends.

const { instant, phone } = fixtures

const withStorage = <A, E>(fake: FakeDb, body: Effect.Effect<A, E, Storage>) =>
  body.pipe(Effect.provide(Layer.effect(Storage, MongoStorage.fromDb(fake.db, { reconcileUsage: false }))))

const insertOrganization = Effect.gen(function* () {
  const { organizations } = yield* Storage
  const organization = fixtures.organization()
  yield* organizations.insert(organization)
  return organization
})

const CHANNEL = "0190f0e0-0000-7000-8000-0000000000c9"

/** The media of an inbound image, due at `minutes`. */
const inboundMedia = (minutes: number): NewInboundMedia => ({
  uuid: fixtures.uuid(),
  type: "image",
  mime_type: "image/jpeg",
  size: null,
  sha256: null,
  filename: null,
  status: "pending",
  failure: null,
  source: "inbound",
  blob_key: null,
  created_at: instant(minutes),
  stored_at: null,
  fetch: {
    channel_uuid: CHANNEL,
    provider_media_id: `meta-${fixtures.uuid()}`,
    declared_sha256: null,
    expires_at: instant(minutes + 7 * 24 * 60),
    next_fetch_at: instant(minutes)
  }
})

/** An uploaded, stored media of `size` bytes. */
const upload = (size: number): NewMedia => {
  const uuid = fixtures.uuid()
  return {
    uuid,
    type: "document",
    mime_type: "application/pdf",
    size,
    sha256: "a".repeat(64),
    filename: null,
    status: "stored",
    failure: null,
    source: "upload",
    message_uuid: null,
    contact_uuid: null,
    blob_key: `media/${uuid}`,
    created_at: instant(1),
    stored_at: instant(1),
    fetch: null
  }
}

/** The append core makes for an inbound image message from `phone(n)` carrying `media` (provider id `providerId`). */
const receive = (organizationId: OrganizationId, n: number, media: NewInboundMedia, providerId = `wamid.${media.uuid}`) =>
  Effect.flatMap(Storage, ({ chats }) => {
    const request: ChatAppendRequest = {
      contact: { _tag: "ByPhone", phone: phone(n), create: { uuid: fixtures.uuid() as ContactId, first_name: null, last_name: null } },
      newChat: { uuid: fixtures.uuid() as never, status: "open" },
      message: {
        uuid: fixtures.uuid() as never,
        direction: "inbound",
        type: "image",
        text: null,
        template: null,
        media: { type: "image", id: media.fetch!.provider_media_id, mime_type: media.mime_type, media_uuid: media.uuid, status: "pending", failure: null },
        content: null,
        status: "delivered",
        provider_message_id: providerId,
        failure: null,
        channel_uuid: CHANNEL,
        transport: null,
        attempts: 0,
        next_attempt_at: null,
        broadcast_uuid: null,
        reply_to: null,
        reactions: [],
        created_at: media.created_at,
        updated_at: media.created_at
      },
      unreadIncrement: 1,
      reopen: { from: ["resolved", "closed"], to: "open" },
      dedupe: true,
      now: media.created_at,
      media
    }
    return chats.appendMessage(organizationId, request)
  })

/** An endpoint of the organization subscribed to `message.media_updated`. */
const addEndpoint = (organizationId: OrganizationId) =>
  Effect.flatMap(Storage, ({ webhooks }) =>
    webhooks.insertEndpoint(
      organizationId,
      {
        endpoint: {
          uuid: fixtures.uuid() as WebhookEndpointId,
          url: "https://example.com/hooks",
          events: ["message.media_updated"],
          description: null,
          enabled: true,
          created_at: instant(0),
          updated_at: instant(0)
        },
        secret_sealed: "sealed"
      },
      10
    )
  )

/** Replaces one method of a stand-in collection; returns the original, bound. */
const intercept = <F extends (...args: Array<any>) => Promise<unknown>>(fake: FakeDb, collection: string, method: string, replacement: (original: F) => F) => {
  const target = fake.db.collection(collection) as unknown as Record<string, F>
  const original = target[method]!.bind(target) as F
  target[method] = replacement(original)
  return () => {
    target[method] = original
  }
}

const usageOf = (fake: FakeDb, organizationId: string) => fake.documents("usage").find((d) => d._id === organizationId)

describe("media on MongoDB documents", () => {
  it.effect("an inbound media rides in its message's insert; a crash before its move leaves it there, nextFetchDueAt sees it and claimFetches moves it", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { media } = yield* Storage
        const org = yield* insertOrganization
        const incoming = inboundMedia(1)
        const restore = intercept(fake, "media", "insertOne", () => async () => {
          throw new Error("the process died")
        })
        expect(Either.isLeft(yield* Effect.either(receive(org.id, 1, incoming, "wamid.photo")))).toBe(true)
        restore()
        const [carrier] = fake.documents("messages")
        expect((carrier!.pending_media as { _id: string })._id).toBe(incoming.uuid)
        expect(yield* media.get(org.id, incoming.uuid)).toEqual(Option.none())
        expect(yield* media.nextFetchDueAt()).toEqual(Option.some(instant(1)))
        const jobs = yield* media.claimFetches(instant(2), instant(3), 10)
        expect(jobs.map((job) => job.media.uuid)).toEqual([incoming.uuid])
        expect(jobs[0]!.media).toMatchObject({ status: "pending", message_uuid: carrier!._id, channel_uuid: CHANNEL })
        expect(fake.documents("messages")[0]!.pending_media).toBeUndefined()
        // Redelivered: a duplicate, no second media.
        expect((yield* receive(org.id, 1, inboundMedia(1), "wamid.photo"))._tag).toBe("Duplicate")
        expect(fake.documents("media")).toHaveLength(1)
      })
    )
  })

  it.effect("a media moved after its message was deleted (its contact deleted meanwhile) ends deleted, its job ended", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { media } = yield* Storage
        const org = yield* insertOrganization
        const incoming = inboundMedia(1)
        const restore = intercept(fake, "media", "insertOne", (original) => async (document: unknown) => {
          fake.documents("messages").splice(0) // contacts.delete deletes the messages between the two writes
          return original(document)
        })
        yield* receive(org.id, 1, incoming)
        restore()
        expect(Option.getOrThrow(yield* media.get(org.id, incoming.uuid)).status).toBe("deleted")
        expect(yield* media.claimFetches(instant(2), instant(3), 10)).toEqual([])
        expect(yield* media.nextFetchDueAt()).toEqual(Option.none())
      })
    )
  })

  it.effect("a message rewrite that fails after its media's change (or a crash between) leaves message_update; the change stands; claimFetches' repair rewrites the message with one event", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { chats, media, webhooks } = yield* Storage
        const org = yield* insertOrganization
        const incoming = inboundMedia(1)
        const appended = yield* receive(org.id, 1, incoming)
        if (appended._tag !== "Appended") return expect.fail("expected Appended")
        yield* addEndpoint(org.id)
        const [job] = yield* media.claimFetches(instant(2), instant(3), 10)
        const restore = intercept(fake, "messages", "updateOne", (original) => async (filter: Record<string, unknown>, update: unknown, options?: unknown) => {
          if ("media" in filter) throw new Error("the process died")
          return original(filter, update, options)
        })
        const stored = { _tag: "Stored", blob_key: `media/${incoming.uuid}`, size: 5_000_000_123, sha256: "b".repeat(64), mime_type: null, bytesLimit: null } as const
        expect(yield* media.recordFetch(incoming.uuid, job!.lease, stored, instant(3))).toMatchObject({ _tag: "Settled", media: { status: "stored" }, message: null })
        restore()
        expect(Option.getOrThrow(yield* media.get(org.id, incoming.uuid))).toMatchObject({ status: "stored", size: 5_000_000_123 })
        expect(fake.documents("media")[0]!.message_update).toMatchObject({ at: instant(3) })
        expect(Option.getOrThrow(yield* chats.findMessage(org.id, appended.message.uuid)).media?.status).toBe("pending")
        expect(yield* media.bytesUsed(org.id)).toBe(5_000_000_123)
        // The lease was spent: a second recording is Lost; the repair does the rewrite.
        expect(yield* media.recordFetch(incoming.uuid, job!.lease, stored, instant(4))).toEqual({ _tag: "Lost" })
        yield* media.claimFetches(instant(10), instant(11), 10)
        const message = Option.getOrThrow(yield* chats.findMessage(org.id, appended.message.uuid))
        expect(message.media).toMatchObject({ media_uuid: incoming.uuid, status: "stored", failure: null })
        expect(message.updated_at).toBe(instant(3))
        expect(fake.documents("media")[0]!.message_update).toBeNull()
        yield* media.claimFetches(instant(11), instant(12), 10)
        const deliveries = yield* webhooks.claimDue(instant(100), instant(101), 10)
        expect(deliveries.map((delivery) => [delivery.event.type, delivery.event.created_at])).toEqual([["message.media_updated", instant(3)]])
        expect(deliveries[0]!.event.data).toEqual(message)
      })
    )
  })

  it.effect("a message's media is rewritten forward only: a late rewrite of an earlier status writes nothing and no event", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { chats, media, webhooks } = yield* Storage
        const org = yield* insertOrganization
        const incoming = inboundMedia(1)
        const appended = yield* receive(org.id, 1, incoming)
        if (appended._tag !== "Appended") return expect.fail("expected Appended")
        const [job] = yield* media.claimFetches(instant(2), instant(3), 10)
        yield* media.recordFetch(incoming.uuid, job!.lease, { _tag: "Failed", code: "not_found" }, instant(3))
        yield* media.markDeleted(org.id, incoming.uuid, instant(4))
        const deleted = Option.getOrThrow(yield* chats.findMessage(org.id, appended.message.uuid))
        expect(deleted.media?.status).toBe("deleted")
        yield* addEndpoint(org.id)
        // The `failed` change's rewrite, left over and repaired after the delete's landed.
        Object.assign(fake.documents("media")[0]!, { status: "failed", message_update: { id: "stale", at: instant(3) } })
        yield* media.claimFetches(instant(5), instant(6), 10)
        expect(Option.getOrThrow(yield* chats.findMessage(org.id, appended.message.uuid))).toEqual(deleted)
        expect(fake.documents("media")[0]!.message_update).toBeNull()
        expect(yield* webhooks.claimDue(instant(100), instant(101), 10)).toEqual([])
      })
    )
  })

  it.effect("stored bytes: reserved on the usage document before the insert, given back after a delete; an older usage document gets media_bytes from the real sum; reconciliation lowers it", () => {
    const fake = makeFakeDb()
    return withStorage(
      fake,
      Effect.gen(function* () {
        const { media } = yield* Storage
        const org = yield* insertOrganization
        expect(usageOf(fake, org.id)?.media_bytes).toBe(0)
        const first = upload(600)
        const before = fake.calls.length
        yield* media.insert(org.id, first, 1_000)
        const writes = fake.calls.slice(before).filter((c) => ["updateOne", "insertOne"].includes(c.method) && ["usage", "media"].includes(c.collection))
        expect(writes.map((c) => `${c.collection}.${c.method}`)).toEqual(["usage.updateOne", "media.insertOne"])
        expect(writes[0]!.args[0]).toEqual({ _id: { $eq: org.id }, media_bytes: { $lte: 400 } })
        expect(usageOf(fake, org.id)?.media_bytes).toBe(600)
        // A usage document from before media existed: the counter is added from the stored media.
        delete usageOf(fake, org.id)!.media_bytes
        expect(yield* media.insert(org.id, upload(500), 1_000)).toEqual({ _tag: "LimitReached", used: 600, limit: 1_000 })
        expect(usageOf(fake, org.id)?.media_bytes).toBe(600)
        yield* media.markDeleted(org.id, first.uuid, instant(2))
        expect(usageOf(fake, org.id)?.media_bytes).toBe(0)
        // A crash after a reservation leaves the counter high; the reconciliation lowers it.
        yield* media.insert(org.id, upload(70), null)
        Object.assign(usageOf(fake, org.id)!, { media_bytes: 900, touched_at: new Date(Date.now() - 120_000) })
        expect(yield* Effect.promise(() => reconcileUsage(collectionsOf(fake.db), 60_000))).toBe(1)
        expect(usageOf(fake, org.id)?.media_bytes).toBe(70)
        expect(yield* media.bytesUsed(org.id)).toBe(70)
      })
    )
  })
})

describe("media documents", () => {
  it("claims run on the partial due index and compare the lease with $eq", () => {
    const filter = dueFetchFilter(instant(1))
    expect(filter).toEqual({
      next_fetch_at: { $type: "string", $lte: instant(1) },
      $or: [{ lease_until: { $eq: null } }, { lease_until: { $lt: instant(1) } }]
    })
    expect(INDEXES.media.find((index) => index.name === "media_fetch_due")).toEqual({
      name: "media_fetch_due",
      key: { next_fetch_at: 1, _id: 1 },
      partialFilterExpression: HAS_FETCH_JOB
    })
  })

  it("a page's filters are literal values, never operators", () => {
    const payload = { $gt: "" } as unknown as string
    expect(mediaPageFilter("org", { source: payload, status: payload }, { _id: "m", created_at: instant(1) })).toEqual({
      organization_id: { $eq: "org" },
      source: { $eq: payload },
      status: { $eq: payload },
      $or: [{ created_at: { $lt: instant(1) } }, { created_at: { $eq: instant(1) }, _id: { $lt: "m" } }]
    })
    expect(INDEXES.media.some((index) => JSON.stringify(index.key) === JSON.stringify({ organization_id: 1, created_at: -1, _id: -1 }))).toBe(true)
  })

  it("the reconciliation's compare-and-set holds media_bytes as read (absent: still absent)", () => {
    expect(usageReconcileFilter("org", { contacts: 1, labels: 2 }, 1000)).toMatchObject({ media_bytes: { $exists: false } })
    expect(usageReconcileFilter("org", { contacts: 1, labels: 2, media_bytes: 5 }, 1000)).toMatchObject({ media_bytes: { $eq: 5 } })
  })
})

import { describe, expect, it } from "@effect/vitest"
import { createHash, randomBytes } from "node:crypto"
import { Clock, Duration, Effect, Fiber, Layer, Option, TestClock } from "effect"
import { afterAll, afterEach, beforeAll } from "vitest"
import {
  BlobStore,
  Channels,
  ChannelVerifier,
  Core,
  fetchMediaOnce,
  generateSecretKey,
  makeDispatchWake,
  MediaFetchSettings,
  MemoryBlobStore,
  MemoryStorage,
  type Message,
  Organizations,
  removeDeletedBlobs,
  runMediaFetcher,
  SecretKey,
  Storage,
  type StorageService,
  WhatsAppWebhooks
} from "@switchboard/core"
import { inboundMessagePayload, mediaMessage, startSimulator, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"

// The inbound media fetch loop (docs/media.md "Inbound") on the memory store and blob store,
// against the WhatsApp simulator: a customer's media message is stored at once with its
// media pending, then one pass of the fetch queue brings the bytes (or records why not),
// rewrites the message's media and emits message.media_updated.

const TOKEN = "EAAGsimulator-media-fetcher-0001"
const NUMBER = { phone_number_id: "106540352242922", display_phone_number: "+1 555-078-3881", waba_id: "102290129340398", access_token: TOKEN }

let simulator: WhatsAppSimulator
beforeAll(async () => {
  simulator = await startSimulator({ numbers: [NUMBER] })
})
afterEach(() => simulator.reset())
afterAll(() => simulator.close())

const acceptingVerifier = Layer.succeed(ChannelVerifier, { verify: () => Effect.succeed({ display_phone_number: NUMBER.display_phone_number }) })

const run = <A, E>(body: Effect.Effect<A, E, any>, settings: { readonly leaseMs?: number } = {}) =>
  Effect.suspend(() => {
    const layer = Core.layer.pipe(
      Layer.provideMerge(Layer.mergeAll(SecretKey.layer(generateSecretKey()), acceptingVerifier, MemoryBlobStore.layer)),
      Layer.provideMerge(MemoryStorage.layer),
      Layer.provideMerge(MediaFetchSettings.layer({ graphApi: { baseUrl: simulator.url }, retryDelaysMs: [1_000, 2_000], ...settings }))
    )
    return body.pipe(Effect.provide(layer)) as Effect.Effect<A, E>
  })

/** An organization with the simulator's number as its channel. */
const withChannel = Effect.gen(function* () {
  const org = yield* Effect.flatMap(Organizations, (organizations) => organizations.create({ name: "Acme" }))
  const channel = yield* Effect.flatMap(Channels, (channels) =>
    channels.add(org.id, { phone_number_id: NUMBER.phone_number_id, waba_id: NUMBER.waba_id, access_token: TOKEN }))
  return { orgId: org.id, channel }
})

/** Registers `bytes` at the simulator and receives the image message that carries them; answers the stored message. */
const receiveImage = (bytes: Uint8Array, options: { readonly sha256?: string; readonly wamid?: string } = {}) =>
  Effect.gen(function* () {
    const media = yield* Effect.promise(() => simulator.registerMedia({ mime_type: "image/jpeg", bytes }))
    const payload = inboundMessagePayload({
      number: NUMBER,
      from: "16505551234",
      profile_name: "Sheena",
      message: mediaMessage("image", { id: media.id, mime_type: "image/jpeg", caption: "the receipt", sha256: options.sha256 ?? media.sha256_base64 }),
      ...(options.wamid === undefined ? {} : { id: options.wamid })
    })
    yield* Effect.flatMap(WhatsAppWebhooks, (webhooks) => webhooks.receive(payload))
    return yield* onlyMessage
  })

/** The message of the organization's newest media (each test has one organization and one media message). */
const onlyMessage = Effect.gen(function* () {
  const storage = yield* Storage
  const [org] = yield* storage.organizations.list()
  const { items } = yield* storage.media.list(org!.id, {}, { per_page: 1 })
  return Option.getOrThrow(yield* storage.chats.findMessage(org!.id, items[0]!.message_uuid as Message["uuid"]))
})

const mediaOf = (message: Message) =>
  Effect.flatMap(Storage, (storage) => Effect.map(storage.media.getForLink(message.media!.media_uuid!), Option.getOrThrow))

const bytesOf = (key: string) =>
  Effect.flatMap(BlobStore, (store) => store.get(key)).pipe(
    Effect.flatMap((content) =>
      Effect.promise(async () => {
        const chunks: Array<Buffer> = []
        for await (const chunk of content.stream) chunks.push(chunk as Buffer)
        return Buffer.concat(chunks)
      })
    )
  )

const passNow = Effect.flatMap(Clock.currentTimeMillis, (now) => fetchMediaOnce(new Date(now)))
const hex = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

describe("the media fetch queue", () => {
  it.effect("a customer's photo: the message is stored at once with its media pending; one pass stores the bytes and rewrites the message", () =>
    run(Effect.gen(function* () {
      yield* withChannel
      const bytes = randomBytes(300_000)
      const received = yield* receiveImage(bytes)
      expect(received.media).toMatchObject({ type: "image", status: "pending", failure: null, media_uuid: expect.any(String) })
      expect((yield* mediaOf(received)).status).toBe("pending")
      expect(yield* passNow).toMatchObject({ claimed: 1, stored: 1 })
      const media = yield* mediaOf(received)
      expect(media).toMatchObject({ status: "stored", size: bytes.length, sha256: hex(bytes), mime_type: "image/jpeg", source: "inbound" })
      expect((yield* bytesOf(media.blob_key!)).equals(bytes)).toBe(true)
      expect((yield* onlyMessage).media).toMatchObject({ status: "stored", media_uuid: media.uuid })
      expect(yield* passNow).toMatchObject({ claimed: 0 })
    })))

  it.effect("a look-up answering 503 three times retries on the schedule and then stores; the message was visible all along", () =>
    run(Effect.gen(function* () {
      yield* withChannel
      const bytes = randomBytes(1_000)
      simulator.script.enqueue([{ http_status: 503 }, { http_status: 503 }, { http_status: 503 }], "media_lookup")
      const received = yield* receiveImage(bytes)
      for (let attempt = 1; attempt <= 3; attempt++) {
        expect(yield* passNow).toMatchObject({ claimed: 1, retrying: 1 })
        expect((yield* mediaOf(received)).status).toBe("pending")
        yield* TestClock.adjust(Duration.seconds(3))
      }
      expect(yield* passNow).toMatchObject({ claimed: 1, stored: 1 })
      expect((yield* mediaOf(received)).status).toBe("stored")
    })))

  it.effect("an id Meta does not know ends failed not_found; a redelivered webhook makes no second fetch", () =>
    run(Effect.gen(function* () {
      yield* withChannel
      const received = yield* receiveImage(randomBytes(10), { wamid: "wamid.same" })
      simulator.reset()
      yield* receiveImage(randomBytes(10), { wamid: "wamid.same" }).pipe(Effect.ignore)
      expect(yield* passNow).toMatchObject({ claimed: 1, failed: 1 })
      expect(yield* mediaOf(received)).toMatchObject({ status: "failed", failure: { code: "not_found" } })
      expect((yield* onlyMessage).media).toMatchObject({ status: "failed", failure: { code: "not_found" } })
    })))

  it.effect("bytes that do not match the declared SHA-256 retry three times, then end failed integrity, nothing kept", () =>
    run(Effect.gen(function* () {
      yield* withChannel
      const received = yield* receiveImage(randomBytes(500), { sha256: randomBytes(32).toString("base64") })
      for (let attempt = 1; attempt <= 3; attempt++) {
        expect(yield* passNow).toMatchObject({ retrying: 1 })
        yield* TestClock.adjust(Duration.seconds(3))
      }
      expect(yield* passNow).toMatchObject({ failed: 1 })
      expect(yield* mediaOf(received)).toMatchObject({ status: "failed", failure: { code: "integrity" }, blob_key: null })
    })))

  it.effect("a channel removed before the fetch ends failed channel_removed", () =>
    run(Effect.gen(function* () {
      const { orgId, channel } = yield* withChannel
      const received = yield* receiveImage(randomBytes(10))
      yield* Effect.flatMap(Channels, (channels) => channels.remove(orgId, channel.uuid))
      expect(yield* passNow).toMatchObject({ failed: 1 })
      expect(yield* mediaOf(received)).toMatchObject({ status: "failed", failure: { code: "channel_removed" } })
    })))

  it.effect("a plan's media_bytes_limit below the file ends failed plan_limit and keeps no blob", () =>
    run(Effect.gen(function* () {
      const { orgId } = yield* withChannel
      yield* Effect.flatMap(Organizations, (organizations) => organizations.update(orgId, { plan: { media_bytes_limit: 100 } }))
      const received = yield* receiveImage(randomBytes(1_000))
      expect(yield* passNow).toMatchObject({ failed: 1 })
      expect(yield* mediaOf(received)).toMatchObject({ status: "failed", failure: { code: "plan_limit" } })
    })))

  it.effect("a 131052 media message is kept with its media failed too_large and no fetch", () =>
    run(Effect.gen(function* () {
      yield* withChannel
      const payload = inboundMessagePayload({
        number: NUMBER,
        from: "16505551234",
        profile_name: "Sheena",
        message: { type: "video", video: { mime_type: "video/mp4" }, errors: [{ code: 131052, title: "Media download error" }] }
      })
      yield* Effect.flatMap(WhatsAppWebhooks, (webhooks) => webhooks.receive(payload))
      const message = yield* onlyMessage
      expect(message).toMatchObject({ type: "video", media: { type: "video", status: "failed", failure: { code: "too_large" } } })
      expect(yield* mediaOf(message)).toMatchObject({ status: "failed", failure: { code: "too_large" }, source: "inbound" })
      expect(yield* passNow).toMatchObject({ claimed: 0 })
    })))

  for (const leaseMs of [undefined, 5_000]) {
    it.effect(`a fetch still downloading is taken over once its lease (${leaseMs ?? "default 60 000"} ms) lapses, not before`, () =>
      run(
        Effect.gen(function* () {
          yield* withChannel
          const bytes = randomBytes(50_000)
          const received = yield* receiveImage(bytes)
          const now = yield* Clock.currentTimeMillis
          // The first download waits 1.5 s (real time) before its bytes: the pass is still on it.
          simulator.script.enqueue([{ delay_ms: 1_500 }], "media_download")
          const first = yield* Effect.fork(fetchMediaOnce(new Date(now)))
          yield* Effect.promise(() => simulator.waitFor(() => simulator.received({ route: "media_download" }).length === 1, "the first download"))
          const later = yield* fetchMediaOnce(new Date(now + 5_001))
          yield* Fiber.join(first)
          if (leaseMs === undefined) {
            expect(later).toMatchObject({ claimed: 0 })
          } else {
            expect(later).toMatchObject({ claimed: 1, stored: 1 })
            expect(simulator.received({ route: "media_download" })).toHaveLength(2)
          }
          expect(yield* mediaOf(received)).toMatchObject({ status: "stored", size: bytes.length, sha256: hex(bytes) })
        }),
        leaseMs === undefined ? {} : { leaseMs }
      ))
  }

  it.effect("a deleted media's blob is removed by the housekeeping, its record kept deleted", () =>
    run(Effect.gen(function* () {
      const { orgId } = yield* withChannel
      const received = yield* receiveImage(randomBytes(100))
      yield* passNow
      const media = yield* mediaOf(received)
      const storage = yield* Storage
      yield* storage.media.markDeleted(orgId, media.uuid, new Date().toISOString())
      expect(yield* removeDeletedBlobs).toBe(1)
      expect(yield* Effect.flatMap(BlobStore, (store) => store.head(media.blob_key!))).toBeUndefined()
      expect(yield* mediaOf(received)).toMatchObject({ status: "deleted", blob_key: null })
    })))
})

describe("the media loop's wakes", () => {
  // docs/benchmarks.md "Dispatch on PostgreSQL: the loops woken for nothing".
  it.live("a send's recorded outcome does not wake it (it never makes a fetch due); the process's other wakes do", () =>
    Effect.gen(function* () {
      const base = MemoryStorage.make()
      let claims = 0
      const storage: StorageService = {
        ...base,
        media: {
          ...base.media,
          claimFetches: (now, leaseUntil, limit) => Effect.suspend(() => {
            claims++
            return base.media.claimFetches(now, leaseUntil, limit)
          })
        }
      }
      const wake = makeDispatchWake()
      const layer = Core.layer.pipe(
        Layer.provideMerge(Layer.mergeAll(SecretKey.layer(generateSecretKey()), acceptingVerifier, MemoryBlobStore.layer)),
        Layer.provideMerge(Layer.succeed(Storage, storage))
      )
      const loop = yield* Effect.fork(runMediaFetcher({ wake, pollIntervalMs: 60_000 }).pipe(Effect.provide(layer)))
      yield* Effect.sleep(Duration.millis(300))
      expect(claims).toBe(1)
      for (let i = 0; i < 5; i++) {
        wake.unsafeWakeAfterSendOutcome?.()
        yield* Effect.sleep(Duration.millis(20))
      }
      expect(claims).toBe(1)
      wake.unsafeWake?.()
      yield* Effect.sleep(Duration.millis(200))
      expect(claims).toBe(2)
      yield* Fiber.interrupt(loop)
    }))
})

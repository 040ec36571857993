import { describe, expect, it } from "@effect/vitest"
import { createHash, randomBytes } from "node:crypto"
import { mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { afterAll, afterEach, beforeAll } from "vitest"
import { BlobStore, FileBlobStore, fetchMedia, type MediaFetchRequest } from "@switchboard/core"
import { startSimulator, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"

// One inbound media fetch (docs/media.md "Inbound") against the WhatsApp simulator, into a
// file-system blob store: the look-up, the streamed download, the checks, and every way it
// ends — with nothing left under the attempt's key unless the file was fetched.

const TOKEN = "EAAGsimulator-media-token-0001"
const NUMBER = { phone_number_id: "106540352242922", display_phone_number: "+1 555-078-3881", waba_id: "102290129340398", access_token: TOKEN }
const channel = { phone_number_id: NUMBER.phone_number_id, access_token: TOKEN }

let simulator: WhatsAppSimulator
const directory = mkdtempSync(join(tmpdir(), "switchboard-media-fetch-"))
beforeAll(async () => {
  simulator = await startSimulator({ numbers: [NUMBER] })
})
afterEach(() => simulator.reset())
afterAll(async () => {
  await simulator.close()
  rmSync(directory, { recursive: true, force: true })
})

const blobs = FileBlobStore.layer({ directory })
const run = (request: Partial<MediaFetchRequest> & Pick<MediaFetchRequest, "providerMediaId">) =>
  fetchMedia({ channel, declaredSha256: null, maxBytes: 100 * 1024 * 1024, blobKey: `tmp/${request.providerMediaId}/1`, ...request }, { baseUrl: simulator.url }).pipe(
    Effect.provide(blobs)
  )
const stored = (key: string) => Effect.flatMap(BlobStore, (store) => store.head(key)).pipe(Effect.provide(blobs))
const bytesOf = (key: string) =>
  Effect.flatMap(BlobStore, (store) => store.get(key)).pipe(
    Effect.flatMap((content) =>
      Effect.promise(async () => {
        const chunks: Array<Buffer> = []
        for await (const chunk of content.stream) chunks.push(chunk as Buffer)
        return Buffer.concat(chunks)
      })
    ),
    Effect.provide(blobs)
  )
const hex = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

describe("fetchMedia", () => {
  it.effect("brings a customer's file into the blob store, checked against Meta's size and both declared SHA-256s", () =>
    Effect.gen(function* () {
      const bytes = randomBytes(1_500_000)
      const media = yield* Effect.promise(() => simulator.registerMedia({ mime_type: "image/jpeg", bytes }))
      const outcome = yield* run({ providerMediaId: media.id, declaredSha256: media.sha256_base64 })
      expect(outcome).toEqual({ _tag: "Fetched", size: bytes.length, sha256: hex(bytes), mimeType: "image/jpeg" })
      expect((yield* bytesOf(`tmp/${media.id}/1`)).equals(bytes)).toBe(true)
      expect(simulator.received().map((entry) => [entry.route, entry.authorization])).toEqual([
        ["media_lookup", `Bearer ${TOKEN}`],
        ["media_download", `Bearer ${TOKEN}`]
      ])
    }))

  it.effect("an id Meta does not know is NotFound, with no download", () =>
    Effect.gen(function* () {
      const outcome = yield* run({ providerMediaId: "1234567890123456" })
      expect(outcome._tag).toBe("NotFound")
      expect(simulator.received({ route: "media_download" })).toEqual([])
    }))

  it.effect("a look-up that fails (503, 429, no answer) is Transient and counts as a failed look-up", () =>
    Effect.gen(function* () {
      const media = yield* Effect.promise(() => simulator.registerMedia({ mime_type: "audio/ogg", bytes: randomBytes(100) }))
      simulator.script.enqueue([{ http_status: 503 }, { code: 130429 }, { drop: "close" }], "media_lookup")
      for (let attempt = 0; attempt < 3; attempt++) {
        expect(yield* run({ providerMediaId: media.id })).toMatchObject({ _tag: "Transient", lookupFailed: true })
      }
      expect(yield* run({ providerMediaId: media.id })).toMatchObject({ _tag: "Fetched" })
    }))

  it.effect("a download that fails or is cut mid-way is Transient, not a failed look-up, and leaves nothing under the key", () =>
    Effect.gen(function* () {
      const bytes = randomBytes(400_000)
      const media = yield* Effect.promise(() => simulator.registerMedia({ mime_type: "video/mp4", bytes }))
      simulator.script.enqueue([{ http_status: 500 }, { drop: "mid_stream" }, { http_status: 404 }], "media_download")
      for (let attempt = 0; attempt < 3; attempt++) {
        expect(yield* run({ providerMediaId: media.id })).toMatchObject({ _tag: "Transient", lookupFailed: false })
        expect(yield* stored(`tmp/${media.id}/1`)).toBeUndefined()
      }
      expect(readdirSync(join(directory, ".partial"))).toEqual([])
      expect(yield* run({ providerMediaId: media.id })).toMatchObject({ _tag: "Fetched", size: bytes.length })
    }))

  it.effect("a download URL that lapsed (404, as Meta's does after 5 minutes) is asked for again: the next attempt looks the id up anew", () =>
    Effect.gen(function* () {
      const bytes = randomBytes(20_000)
      const media = yield* Effect.promise(() => simulator.registerMedia({ mime_type: "image/jpeg", bytes }))
      simulator.script.enqueue([{ http_status: 404 }], "media_download")
      expect(yield* run({ providerMediaId: media.id })).toMatchObject({ _tag: "Transient", lookupFailed: false })
      expect(yield* run({ providerMediaId: media.id })).toMatchObject({ _tag: "Fetched", size: bytes.length })
      expect(simulator.received().map((entry) => entry.route)).toEqual(["media_lookup", "media_download", "media_lookup", "media_download"])
    }))

  it.effect("bytes that do not match the webhook's SHA-256 are Integrity, and nothing is kept", () =>
    Effect.gen(function* () {
      const media = yield* Effect.promise(() => simulator.registerMedia({ mime_type: "application/pdf", bytes: randomBytes(2_000) }))
      const other = createHash("sha256").update("other bytes").digest("base64")
      const outcome = yield* run({ providerMediaId: media.id, declaredSha256: other })
      expect(outcome).toMatchObject({ _tag: "Integrity", reason: expect.stringContaining("the webhook") })
      expect(yield* stored(`tmp/${media.id}/1`)).toBeUndefined()
    }))

  it.effect("a file over maxBytes is TooLarge: by Meta's file_size before any download", () =>
    Effect.gen(function* () {
      const media = yield* Effect.promise(() => simulator.registerMedia({ mime_type: "application/pdf", bytes: randomBytes(50_000) }))
      expect(yield* run({ providerMediaId: media.id, maxBytes: 49_999 })).toMatchObject({ _tag: "TooLarge" })
      expect(simulator.received({ route: "media_download" })).toEqual([])
      expect(yield* stored(`tmp/${media.id}/1`)).toBeUndefined()
    }))

  it.effect("a download that stalls past downloadIdleMs is Transient", () =>
    Effect.gen(function* () {
      const media = yield* Effect.promise(() => simulator.registerMedia({ mime_type: "image/png", bytes: randomBytes(1_000) }))
      simulator.script.enqueue([{ drop: "hang" }], "media_download")
      const outcome = yield* run({ providerMediaId: media.id, downloadIdleMs: 300 })
      expect(outcome).toMatchObject({ _tag: "Transient", lookupFailed: false })
    }))

  it.effect("Meta's look-up never sees a token in a reason", () =>
    Effect.gen(function* () {
      simulator.script.enqueue([{ http_status: 500 }], "media_lookup")
      const media = yield* Effect.promise(() => simulator.registerMedia({ mime_type: "image/png", bytes: randomBytes(10) }))
      const outcomes = [yield* run({ providerMediaId: media.id }), yield* run({ providerMediaId: "999" })]
      for (const outcome of outcomes) expect(JSON.stringify(outcome)).not.toContain(TOKEN)
    }))
})


import { describe, expect, it } from "@effect/vitest"
import { createHash, randomBytes } from "node:crypto"
import { Readable } from "node:stream"
import { Effect } from "effect"
import { afterAll, afterEach, beforeAll } from "vitest"
import { classifyFailure, MessageTransport, recordingTransport, WhatsAppCloudTransport, type MediaUpload } from "@switchboard/core"
import { startSimulator, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"

// Uploading a stored file to Meta (docs/media.md "Sending a stored file"): the WhatsApp
// Cloud transport's multipart upload, streamed, against the simulator; its failures in the
// classes of a send's; the recording transport's made-up id.

const TOKEN = "EAAGsimulator-upload-token-0001"
const CHANNEL_TOKEN = "EAAGsimulator-upload-token-0002"
const DEFAULT_NUMBER = { phone_number_id: "106540352242922", display_phone_number: "+1 555-078-3881", waba_id: "102290129340398", access_token: TOKEN }
const CHANNEL_NUMBER = { phone_number_id: "106540352249999", display_phone_number: "+1 555-078-3882", waba_id: "102290129340398", access_token: CHANNEL_TOKEN }

let simulator: WhatsAppSimulator
beforeAll(async () => {
  simulator = await startSimulator({ numbers: [DEFAULT_NUMBER, CHANNEL_NUMBER] })
})
afterEach(() => simulator.reset())
afterAll(() => simulator.close())

/** An upload of `bytes`, with a stream that records whether it was destroyed. */
const uploadOf = (bytes: Buffer, mimeType = "image/png", filename: string | null = "chart.png") => {
  const stream = Readable.from([bytes.subarray(0, bytes.length / 2), bytes.subarray(bytes.length / 2)])
  const upload: MediaUpload = { stream, size: bytes.length, mimeType, filename }
  return upload
}

const transport = () =>
  Effect.provide(MessageTransport, WhatsAppCloudTransport.layer({ phoneNumberId: DEFAULT_NUMBER.phone_number_id, accessToken: TOKEN, baseUrl: simulator.url }))

describe("WhatsAppCloudTransport.uploadMedia", () => {
  it.effect("streams the file to POST /{phone_number_id}/media and answers Meta's media id; the simulator holds the exact bytes", () =>
    Effect.gen(function* () {
      const bytes = randomBytes(900_001)
      const service = yield* transport()
      const { provider_media_id } = yield* service.uploadMedia!(null, uploadOf(bytes, "image/png", 'chart "q1".png'))
      const media = simulator.media.get(provider_media_id)!
      expect(media).toMatchObject({ phone_number_id: DEFAULT_NUMBER.phone_number_id, mime_type: "image/png", file_size: bytes.length, source: "upload" })
      expect((yield* Effect.promise(() => simulator.media.bytes(provider_media_id))).equals(bytes)).toBe(true)
      const entry = simulator.received({ route: "media_upload" })[0]!
      expect(entry.authorization).toBe(`Bearer ${TOKEN}`)
      expect(entry.body).toEqual({
        messaging_product: "whatsapp",
        type: "image/png",
        file: { filename: "chart _q1_.png", mime_type: "image/png", file_size: bytes.length, sha256: createHash("sha256").update(bytes).digest("hex") }
      })
    }))

  it.effect("with a channel, uploads through the channel's number and token (withChannels too)", () =>
    Effect.gen(function* () {
      const channel = { uuid: "channel-1", phone_number_id: CHANNEL_NUMBER.phone_number_id, access_token: CHANNEL_TOKEN }
      const viaLayer = yield* transport()
      const viaChannels = WhatsAppCloudTransport.withChannels({ baseUrl: simulator.url }, recordingTransport)
      for (const service of [viaLayer, viaChannels]) {
        const { provider_media_id } = yield* service.uploadMedia!(channel, uploadOf(randomBytes(100)))
        expect(simulator.media.get(provider_media_id)?.phone_number_id).toBe(CHANNEL_NUMBER.phone_number_id)
      }
      expect(simulator.received({ route: "media_upload" }).map((entry) => entry.authorization)).toEqual([`Bearer ${CHANNEL_TOKEN}`, `Bearer ${CHANNEL_TOKEN}`])
      // Without a channel, withChannels hands the upload to its fallback (here: recording).
      expect((yield* viaChannels.uploadMedia!(null, uploadOf(randomBytes(10)))).provider_media_id).toMatch(/^recorded-/)
    }))

  it.effect("a refusal, a 503 and an unreachable Graph API fail TransportFailed in the classes of a send's, without the token", () =>
    Effect.gen(function* () {
      const service = yield* transport()
      simulator.script.enqueue([{ code: 131053 }, { http_status: 503 }], "media_upload")
      const refused = yield* Effect.flip(service.uploadMedia!(null, uploadOf(randomBytes(10))))
      expect(refused).toMatchObject({ provider_code: "131053", http_status: 400 })
      const unavailable = yield* Effect.flip(service.uploadMedia!(null, uploadOf(randomBytes(10))))
      expect([unavailable.http_status, classifyFailure(unavailable)]).toEqual([503, "transient"])
      const unreachable = WhatsAppCloudTransport.withChannels({ baseUrl: "http://127.0.0.1:9" }, recordingTransport)
      const lost = yield* Effect.flip(unreachable.uploadMedia!({ uuid: "c", phone_number_id: "1", access_token: TOKEN }, uploadOf(randomBytes(10))))
      expect([lost.network_error, classifyFailure(lost)]).toEqual(["ECONNREFUSED", "transient"])
      for (const failure of [refused, unavailable, lost]) expect(JSON.stringify(failure)).not.toContain(TOKEN)
      // A file over its type's limit is Meta's 131053 too.
      const large = yield* Effect.flip(service.uploadMedia!(null, uploadOf(randomBytes(600 * 1024), "image/webp", "sticker.webp")))
      expect(large.provider_code).toBe("131053")
      expect(simulator.media.list()).toEqual([])
    }))

  it.effect("the recording transport reads nothing and answers a made-up media id", () =>
    Effect.gen(function* () {
      const upload = uploadOf(randomBytes(1000))
      const { provider_media_id } = yield* recordingTransport.uploadMedia!(null, upload)
      expect(provider_media_id).toMatch(/^recorded-[0-9a-f-]{36}$/)
      expect(upload.stream.destroyed).toBe(true)
      expect(simulator.received()).toEqual([])
    }))
})

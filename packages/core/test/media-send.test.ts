import { describe, expect, it } from "@effect/vitest"
import { randomBytes } from "node:crypto"
import { Readable } from "node:stream"
import { Clock, Effect } from "effect"
import {
  Media,
  Messaging,
  type OrganizationId,
  Organizations,
  runLeasedPass,
  sendQueue,
  Storage,
  WhatsAppWebhooks
} from "@switchboard/core"
import { inboundMessagePayload, textMessage } from "@switchboard/whatsapp-simulator"
import { failureOf } from "./failure.js"
import { useSimulatorSends } from "./simulatorSends.js"

// Sending a stored file by `media_uuid` (docs/media.md "Sending a stored file"): the send
// is queued (never sent in the request), the dispatcher uploads the file to Meta through
// the message's channel on its first attempt and sends it by Meta's id; a second send
// through the same channel reuses the id (one upload).

const TOKEN = "EAAGsimulator-media-send-0001"
const NUMBER = { phone_number_id: "106540352242922", display_phone_number: "+1 555-078-3881", waba_id: "102290129340398", access_token: TOKEN }

const fixture = useSimulatorSends(NUMBER)
const { run, addChannel } = fixture

/** A PDF's first bytes, then `size` random ones. */
const pdf = (size: number) => Buffer.concat([Buffer.from("%PDF-1.7\n"), randomBytes(size)])

/** An organization with the simulator's number as its channel, and a customer who wrote (the window is open). */
const setUp = Effect.gen(function* () {
  const org = yield* Effect.flatMap(Organizations, (organizations) => organizations.create({ name: "Acme" }))
  yield* addChannel(org.id)
  for (const from of ["16505551234", "16505551299"]) {
    const payload = inboundMessagePayload({ number: NUMBER, from, profile_name: "Sheena", message: textMessage("Send me the offer") })
    yield* Effect.flatMap(WhatsAppWebhooks, (webhooks) => webhooks.receive(payload))
  }
  return org.id
})

const uploadFile = (organizationId: OrganizationId, bytes: Buffer, filename = "offer.pdf") =>
  Effect.flatMap(Media, (media) =>
    Effect.flatMap(media.stage(organizationId, { source: Readable.from([bytes]), mime_type: "application/pdf", filename }), (staged) =>
      media.commit(organizationId, staged)))

const dispatchOnce = Effect.flatMap(Clock.currentTimeMillis, (now) => runLeasedPass(sendQueue, now, 60_000, 100))

/** Dispatch passes (at most 5) until the message left the queue. */
const untilSent = (organizationId: OrganizationId, messageId: Parameters<Storage["Type"]["chats"]["findMessage"]>[1]) =>
  Effect.gen(function* () {
    for (let pass = 0; pass < 5; pass++) {
      yield* dispatchOnce
      const found = yield* Effect.flatMap(Storage, (storage) => storage.chats.findMessage(organizationId, messageId))
      if (found._tag === "Some" && found.value.status !== "queued" && found.value.status !== "sending") return found.value
      yield* Effect.sleep("20 millis")
    }
    return expect.fail("the message never left the queue")
  })

describe("sending a stored file", () => {
  it.live("is queued, uploaded through the channel on its first attempt, sent by Meta's id byte for byte; a second send reuses the id", () =>
    run(Effect.gen(function* () {
      const organizationId = yield* setUp
      const bytes = pdf(2_000_000)
      const file = yield* uploadFile(organizationId, bytes)
      const messaging = yield* Messaging
      const sent = yield* messaging.sendMedia(organizationId, { phone: "+16505551234", media: { media_uuid: file.uuid, caption: "Your offer" } as never })
      expect(sent.status).toBe("queued")
      // The upload outlasts the message's pacing slot: the attempt after it takes a new one
      // (the upload is kept, not made again).
      yield* untilSent(organizationId, sent.message_id)
      const uploads = fixture.simulator.received({ route: "media_upload" })
      expect(uploads.length).toBe(1)
      const messages = fixture.simulator.received({ route: "messages" })
      const body = messages.at(-1)!.body as { type: string; document: { id: string; caption: string; filename: string } }
      expect(body.type).toBe("document")
      expect(body.document).toMatchObject({ caption: "Your offer", filename: "offer.pdf" })
      expect((yield* Effect.promise(() => fixture.simulator.media.bytes(body.document.id))).equals(bytes)).toBe(true)
      const again = yield* messaging.sendMedia(organizationId, { phone: "+16505551234", media: { media_uuid: file.uuid } as never })
      yield* untilSent(organizationId, again.message_id)
      expect(fixture.simulator.received({ route: "media_upload" }).length).toBe(1)
      const second = fixture.simulator.received({ route: "messages" }).at(-1)!.body as { document: { id: string } }
      expect(second.document.id).toBe(body.document.id)
      const stored = yield* Effect.flatMap(Storage, (storage) => storage.chats.findMessage(organizationId, again.message_id))
      expect(stored._tag === "Some" && stored.value).toMatchObject({ status: "sent", media: { media_uuid: file.uuid, type: "document", mime_type: "application/pdf" } })
    })))

  it.live("another organization's file is 404 naming media.media_uuid; a deleted file is media_unavailable; a wrong type is 400; nothing is written", () =>
    run(Effect.gen(function* () {
      const organizationId = yield* setUp
      const other = yield* Effect.flatMap(Organizations, (organizations) => organizations.create({ name: "Other" }))
      const file = yield* uploadFile(organizationId, pdf(100))
      const messaging = yield* Messaging
      const foreign = yield* failureOf(messaging.sendMedia(other.id, { phone: "+16505551234", media: { media_uuid: file.uuid } as never }))
      expect(foreign).toMatchObject({ _tag: "RecordNotFound", missing: [{ resource: "media", field: "media.media_uuid" }] })
      const wrongType = yield* failureOf(messaging.sendMedia(organizationId, { phone: "+16505551234", media: { media_uuid: file.uuid, type: "image" } as never }))
      expect(wrongType).toMatchObject({ _tag: "InvalidInput", issues: [{ field: "media.type" }] })
      const both = yield* failureOf(messaging.sendMedia(organizationId, { phone: "+16505551234", media: { media_uuid: file.uuid, url: "https://example.com/a.pdf", type: "document" } as never }))
      expect(both).toMatchObject({ _tag: "InvalidInput", issues: [{ field: "media.url" }] })
      yield* Effect.flatMap(Media, (media) => media.remove(organizationId, file.uuid))
      const deleted = yield* failureOf(messaging.sendMedia(organizationId, { phone: "+16505551234", media: { media_uuid: file.uuid } as never }))
      expect(deleted).toMatchObject({ _tag: "MediaUnavailable", status: "deleted" })
      const chats = yield* Effect.flatMap(Storage, (storage) => storage.outbox.summary())
      expect(chats.reduce((sum, row) => sum + row.queued + row.sending, 0)).toBe(0)
    })))

  it.live("an upload Meta refuses for good fails the message with Meta's code; one that is unavailable is retried", () =>
    run(Effect.gen(function* () {
      const organizationId = yield* setUp
      const file = yield* uploadFile(organizationId, pdf(100))
      const messaging = yield* Messaging
      fixture.simulator.script.enqueue([{ http_status: 503 }, { code: 131053 }], "media_upload")
      const retried = yield* messaging.sendMedia(organizationId, { phone: "+16505551234", media: { media_uuid: file.uuid } as never })
      yield* dispatchOnce
      const afterFirst = yield* Effect.flatMap(Storage, (storage) => storage.chats.findMessage(organizationId, retried.message_id))
      expect(afterFirst._tag === "Some" && afterFirst.value).toMatchObject({ status: "queued", attempts: 1 })
      const refused = yield* messaging.sendMedia(organizationId, { phone: "+16505551299", media: { media_uuid: file.uuid } as never })
      yield* dispatchOnce
      const failed = yield* Effect.flatMap(Storage, (storage) => storage.chats.findMessage(organizationId, refused.message_id))
      expect(failed._tag === "Some" && failed.value).toMatchObject({ status: "failed", failure: { code: "131053" } })
    })))
})

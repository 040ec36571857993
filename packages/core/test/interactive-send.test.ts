import { describe, expect, it } from "@effect/vitest"
import { randomBytes } from "node:crypto"
import { Readable } from "node:stream"
import { Clock, Effect, Layer } from "effect"
import {
  Contacts,
  type InteractiveContent,
  Media,
  Messaging,
  MessageTransport,
  type OrganizationId,
  Organizations,
  type OutboundMessage,
  recordingTransport,
  runLeasedPass,
  sendQueue,
  sendsType,
  Storage,
  WhatsAppCloudTransport,
  WhatsAppWebhooks
} from "@switchboard/core"
import { inboundMessagePayload, textMessage } from "@switchboard/whatsapp-simulator"
import { failureOf } from "./failure.js"
import { useSimulatorSends } from "./simulatorSends.js"

// Interactive sends (docs/messaging.md "Interactive messages") through the send steps: the
// window applies as for text, the record keeps the object, a header's stored file is
// uploaded first, and a transport that does not send interactive messages fails them.

const TOKEN = "EAAGsimulator-interactive-send-0001"
const NUMBER = { phone_number_id: "106540352242977", display_phone_number: "+1 555-078-3877", waba_id: "102290129340377", access_token: TOKEN }
const CUSTOMER = "+16505551234"

const fixture = useSimulatorSends(NUMBER)
const { run, addChannel, findMessage } = fixture

const createOrganization = Effect.map(Effect.flatMap(Organizations, (organizations) => organizations.create({ name: "Acme" })), (org) => org.id)

/** An organization with the simulator's number as its channel; `wrote`: the customer wrote (its window is open). */
const withChannel = (wrote: boolean) =>
  Effect.gen(function* () {
    const organizationId = yield* createOrganization
    yield* addChannel(organizationId)
    if (wrote) {
      const payload = inboundMessagePayload({ number: NUMBER, from: CUSTOMER, profile_name: "Sheena", message: textMessage("Which day?") })
      yield* Effect.flatMap(WhatsAppWebhooks, (webhooks) => webhooks.receive(payload))
    }
    return organizationId
  })

const buttonMessage = (header?: InteractiveContent["header"]): InteractiveContent => ({
  type: "button",
  ...(header === undefined ? {} : { header }),
  body: { text: "Does Tuesday suit you?" },
  footer: { text: "Reply below" },
  action: { buttons: [{ type: "reply", reply: { id: "yes", title: "Yes" } }, { type: "reply", reply: { id: "no", title: "Another day" } }] }
} as InteractiveContent)

/** What the organization has written: its contacts and the messages in the send queue's figures. */
const written = (organizationId: OrganizationId) =>
  Effect.gen(function* () {
    const contacts = (yield* Effect.flatMap(Contacts, (c) => c.list(organizationId, { page: 1, per_page: 10 }))).items.length
    const queue = yield* Effect.flatMap(Storage, (storage) => storage.outbox.summary())
    return { contacts, queued: queue.reduce((sum, row) => sum + row.queued + row.sending, 0) }
  })

const dispatchOnce = Effect.flatMap(Clock.currentTimeMillis, (now) => runLeasedPass(sendQueue, now, 60_000, 100))

describe("sendInteractive through a channel", () => {
  it.live("goes out as Meta's interactive payload; the record has type interactive, text the body, content.interactive the object", () =>
    run(Effect.gen(function* () {
      const organizationId = yield* withChannel(true)
      const interactive = buttonMessage({ type: "text", text: "Delivery" })
      const result = yield* Effect.flatMap(Messaging, (messaging) => messaging.sendInteractive(organizationId, { phone: CUSTOMER, interactive }))
      expect([result.status, result.transport]).toEqual(["sent", "whatsapp"])
      const [sent] = fixture.simulator.sends(NUMBER.phone_number_id)
      expect(sent!.body).toEqual({
        messaging_product: "whatsapp",
        recipient_type: "individual",
        to: "16505551234",
        biz_opaque_callback_data: result.message_id,
        type: "interactive",
        interactive
      })
      expect(sent!.wamid).toBe(result.provider_message_id)
      const message = yield* findMessage(organizationId, result.message_id)
      expect(message).toMatchObject({ type: "interactive", direction: "outbound", text: "Does Tuesday suit you?", content: { interactive }, template: null, media: null })
    })))

  it.live("the customer never wrote: OutsideCustomerServiceWindow (window_expires_at null), nothing written, nothing sent", () =>
    run(Effect.gen(function* () {
      const organizationId = yield* withChannel(false)
      const refused = yield* failureOf(Effect.flatMap(Messaging, (messaging) => messaging.sendInteractive(organizationId, { phone: CUSTOMER, interactive: buttonMessage() })))
      expect(refused).toMatchObject({ _tag: "OutsideCustomerServiceWindow", window_expires_at: null })
      expect(yield* written(organizationId)).toEqual({ contacts: 0, queued: 0 })
      expect(fixture.simulator.sends()).toEqual([])
    })))

  it.live("a document header by media_uuid is queued, uploaded through the channel, and sent by Meta's id", () =>
    run(Effect.gen(function* () {
      const organizationId = yield* withChannel(true)
      const bytes = Buffer.concat([Buffer.from("%PDF-1.7\n"), randomBytes(2_000)])
      const file = yield* Effect.flatMap(Media, (media) =>
        Effect.flatMap(media.stage(organizationId, { source: Readable.from([bytes]), mime_type: "application/pdf", filename: "menu.pdf" }), (staged) =>
          media.commit(organizationId, staged)))
      const interactive = buttonMessage({ type: "document", document: { media_uuid: file.uuid, filename: "menu.pdf" } })
      const messaging = yield* Messaging
      const result = yield* messaging.sendInteractive(organizationId, { phone: CUSTOMER, interactive })
      expect(result.status).toBe("queued")
      for (let pass = 0; pass < 5 && (yield* findMessage(organizationId, result.message_id)).status !== "sent"; pass++) {
        yield* dispatchOnce
        yield* Effect.sleep("20 millis")
      }
      expect((yield* findMessage(organizationId, result.message_id)).status).toBe("sent")
      expect(fixture.simulator.received({ route: "media_upload" }).length).toBe(1)
      const body = fixture.simulator.sends(NUMBER.phone_number_id).at(-1)!.body as { interactive: { header: { document: { id: string; filename: string } } } }
      expect(body.interactive.header).toEqual({ type: "document", document: { id: expect.any(String), filename: "menu.pdf" } })
      expect((yield* Effect.promise(() => fixture.simulator.media.bytes(body.interactive.header.document.id))).equals(bytes)).toBe(true)
      // The record keeps the stored file's uuid, never Meta's id.
      expect((yield* findMessage(organizationId, result.message_id)).content).toEqual({ interactive })
      // An image header naming the stored PDF is refused, nothing written.
      const wrongType = yield* failureOf(messaging.sendInteractive(organizationId, {
        phone: "+16505551299",
        interactive: buttonMessage({ type: "image", image: { media_uuid: file.uuid } })
      }))
      expect(wrongType).toMatchObject({ _tag: "InvalidInput", issues: [{ field: "interactive.header.image.media_uuid" }] })
      const unknown = yield* failureOf(messaging.sendInteractive(organizationId, {
        phone: "+16505551299",
        interactive: buttonMessage({ type: "image", image: { media_uuid: "8f0f0b5e-1f7c-4a57-9a07-3b8e25e3a001" } })
      }))
      expect(unknown).toMatchObject({ _tag: "RecordNotFound", missing: [{ resource: "media", field: "interactive.header.image.media_uuid" }] })
      expect((yield* written(organizationId)).contacts).toBe(1)
    })))
})

describe("sendInteractive: input and transports", () => {
  it.effect("a bad object is InvalidInput naming every path; nothing is written", () =>
    run(Effect.gen(function* () {
      const organizationId = yield* createOrganization
      const rows = Array.from({ length: 11 }, (_, index) => ({ id: `r${index}`, title: `Row ${index}` }))
      const refused = yield* failureOf(Effect.flatMap(Messaging, (messaging) =>
        messaging.sendInteractive(organizationId, {
          phone: "not a phone",
          interactive: { type: "list", body: { text: "Pick" }, action: { button: "Slots", sections: [{ rows }] } } as never
        })))
      expect(refused).toMatchObject({ _tag: "InvalidInput" })
      expect((refused as { issues: ReadonlyArray<{ field: string }> }).issues.map((issue) => issue.field)).toEqual(["phone", "interactive.action.sections"])
      expect(yield* written(organizationId)).toEqual({ contacts: 0, queued: 0 })
    })))

  it.effect("without a channel the recording transport takes it: sent, the object kept", () =>
    run(Effect.gen(function* () {
      const organizationId = yield* createOrganization
      const interactive: InteractiveContent = {
        type: "cta_url",
        body: { text: "Your parcel is on its way" },
        action: { name: "cta_url", parameters: { display_text: "Track it", url: "https://example.com/t/42" } }
      }
      const result = yield* Effect.flatMap(Messaging, (messaging) => messaging.sendInteractive(organizationId, { phone: CUSTOMER, interactive }))
      expect([result.status, result.transport]).toEqual(["sent", "recording"])
      expect(yield* findMessage(organizationId, result.message_id)).toMatchObject({ type: "interactive", text: "Your parcel is on its way", content: { interactive } })
    })))

  it.effect("a custom transport that does not list interactive fails it for good, unattempted (message_type_unsupported)", () => {
    const handed: Array<OutboundMessage> = []
    const custom = Layer.succeed(MessageTransport, {
      send: (message) => Effect.sync(() => {
        handed.push(message)
        return { provider_message_id: "custom-1", status: "sent" as const }
      })
    })
    return run(Effect.gen(function* () {
      const organizationId = yield* createOrganization
      const result = yield* Effect.flatMap(Messaging, (messaging) => messaging.sendInteractive(organizationId, { phone: CUSTOMER, interactive: buttonMessage() }))
      expect(result).toMatchObject({ status: "failed", transport: "custom", failure: { code: "message_type_unsupported" } })
      expect(handed).toEqual([])
      // The same transport still sends text.
      const text = yield* Effect.flatMap(Messaging, (messaging) => messaging.sendText(organizationId, { phone: CUSTOMER, message: "Hello" }))
      expect(text.status).toBe("sent")
      expect(handed.map((message) => message.type)).toEqual(["text"])
    }), custom)
  })
})

describe("sendsType: which transports are handed interactive messages", () => {
  const custom = { send: () => Effect.succeed({ provider_message_id: null, status: "sent" as const }) }
  const channel = { channel: { uuid: "8f0f0b5e-1f7c-4a57-9a07-3b8e25e3a001" } }
  it("the recording and WhatsApp transports send them; a custom one only when it lists them; text always", () => {
    expect(sendsType(recordingTransport, "interactive", { channel: null })).toBe(true)
    expect(sendsType(custom, "interactive", { channel: null })).toBe(false)
    expect(sendsType(custom, "text", { channel: null })).toBe(true)
    expect(sendsType({ ...custom, messageTypes: ["interactive"] }, "interactive", { channel: null })).toBe(true)
    const routed = WhatsAppCloudTransport.withChannels({ baseUrl: "http://127.0.0.1:9" }, custom)
    expect([sendsType(routed, "interactive", channel), sendsType(routed, "interactive", { channel: null })]).toEqual([true, false])
    const recorded = WhatsAppCloudTransport.withChannels({ baseUrl: "http://127.0.0.1:9" }, recordingTransport)
    expect(sendsType(recorded, "interactive", { channel: null })).toBe(true)
  })
})

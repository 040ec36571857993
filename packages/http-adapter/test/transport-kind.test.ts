import { afterAll, describe, expect, it } from "vitest"
import { Effect, Layer } from "effect"
import { Core, MessageTransport, type OrganizationId, type Storage, Templates } from "@switchboard/core"
import type { SwitchboardHandler } from "@switchboard/http-adapter"
import { type ApiClient, bearer, expectEnvelope, importContacts, isHandedBack, makeHandler, makeSharedStorage, makeTenant, phone, request, settledSend } from "./helpers.js"
import { orderUpdate, template, useSendQueueSetup } from "./send-queue-helpers.js"

// What a send says it went through (docs/messaging.md "Transports"): `data.transport` and
// the envelope's message of every send, the message record, an Idempotency-Key's replay and
// a broadcast's record, for each kind — `recording` (no channel: nothing leaves the
// server), `whatsapp` (a channel, here on the WhatsApp simulator) and `custom` (a host's
// own transport that says no kind).

const RECORDED = "Message recorded: no channel, nothing left this server"

const { setup, messageWhen } = useSendQueueSetup({ appSecret: "transport-kind-app-secret", numberBase: 7_300_000 })

const handlers: Array<SwitchboardHandler> = []
afterAll(() => Promise.all(handlers.map((handler) => handler.dispose())))

/** A fresh store, a handler (the default transport unless `transport` is given) and a tenant with order_update. */
const tenantWithout = async (transport?: Layer.Layer<MessageTransport>) => {
  const storage = makeSharedStorage()
  const handler = makeHandler(storage, { sendQueue: { pollIntervalMs: 20 }, ...(transport === undefined ? {} : { transport }) })
  handlers.push(handler)
  const made = await makeTenant(storage, handler)
  await createTemplate(storage, made.organization.id)
  return { ...made, handler }
}

const createTemplate = (storage: Layer.Layer<Storage>, organizationId: OrganizationId) =>
  Effect.runPromise(
    Effect.flatMap(Templates, (templates) => templates.create(organizationId, orderUpdate)).pipe(Effect.provide(Core.layer), Effect.provide(storage))
  )

/** `POST path` with an Idempotency-Key: the status, the replay header and the envelope. */
const postWithKey = async (handler: SwitchboardHandler, apiKey: string, path: string, body: unknown, key: string) => {
  const response = await request(handler, {
    method: "POST",
    url: `/api/v1/api${path}`,
    headers: { ...bearer(apiKey), "content-type": "application/json", "idempotency-key": key },
    payload: JSON.stringify(body)
  })
  return { replayed: response.headers["idempotent-replayed"], envelope: expectEnvelope(response.statusCode, response.body) }
}

/** Polls `GET /broadcasts/{uuid}` until it completed; then its record and its recipients. */
const completedBroadcast = async (api: ApiClient, uuid: string) => {
  const deadline = Date.now() + 10_000
  for (;;) {
    const found = await api.get(`/broadcasts/${uuid}`)
    if (found.data.status === "completed") {
      const recipients = (await api.get(`/broadcasts/${uuid}/recipients`)).data.recipients as Array<{ message_uuid: string }>
      return { broadcast: found.data as Record<string, any>, recipients }
    }
    if (Date.now() > deadline) throw new Error(`broadcast ${uuid} never completed: ${JSON.stringify(found.data)}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** The transport of each message, read back by `GET /messages/{uuid}`. */
const storedTransports = async (api: ApiClient, uuids: ReadonlyArray<string>) =>
  Promise.all(uuids.map(async (uuid) => (await api.get(`/messages/${uuid}`)).data.transport as string | null))

describe("no channel: the recording transport", () => {
  it("every send answers status sent, transport recording and says nothing left the server; the message stores it", async () => {
    const { api } = await tenantWithout()
    const text = await api.post("/send", { phone: phone(1), message: "Hello" })
    const templated = await api.post("/send/template", { phone: phone(2), template: template("#1") })
    const media = await api.post("/send/media", { phone: phone(3), media: { type: "image", url: "https://example.com/a.png" } })
    for (const sent of [text, templated, media]) {
      expect([sent.status, sent.message, sent.data.status, sent.data.transport]).toEqual([200, RECORDED, "sent", "recording"])
    }
    expect(await storedTransports(api, [text, templated, media].map((sent) => sent.data.message_id))).toEqual(["recording", "recording", "recording"])
  })

  it("an Idempotency-Key's replay answers the same transport and message", async () => {
    const { api, apiKey, handler } = await tenantWithout()
    const body = { phone: phone(4), message: "Your order shipped" }
    const first = await postWithKey(handler, apiKey, "/send", body, "order-1-shipped")
    const again = await postWithKey(handler, apiKey, "/send", body, "order-1-shipped")
    expect([first.replayed, again.replayed]).toEqual([undefined, "true"])
    expect(again.envelope).toEqual(first.envelope)
    expect([again.envelope.message, again.envelope.data.transport]).toEqual([RECORDED, "recording"])
    expect(await storedTransports(api, [first.envelope.data.message_id])).toEqual(["recording"])
  })

  it("a broadcast's record says recording, as do its recipients' messages", async () => {
    const { api } = await tenantWithout()
    const { contacts } = await importContacts(api, [{ phone: phone(5), first_name: "Ada" }, { phone: phone(6), first_name: "Grace" }])
    const created = await api.post("/broadcasts", { name: "Shipped", template: template("#2"), audience: { contact_uuids: contacts.map((c) => c.uuid) } })
    expect([created.status, created.message, created.data.channel_uuid, created.data.transport]).toEqual([
      200,
      "Broadcast recording: no channel, nothing leaves this server",
      null,
      "recording"
    ])
    const { broadcast, recipients } = await completedBroadcast(api, created.data.uuid)
    expect([broadcast.transport, broadcast.counts.sent]).toEqual(["recording", 2])
    expect(await storedTransports(api, recipients.map((r) => r.message_uuid))).toEqual(["recording", "recording"])
    const scheduled = await api.post("/broadcasts", {
      name: "Later",
      template: template("#3"),
      audience: { contact_uuids: [contacts[0]!.uuid] },
      send_at: new Date(Date.now() + 86_400_000).toISOString()
    })
    expect([scheduled.message, scheduled.data.transport]).toEqual(["Broadcast scheduled: no channel, nothing will leave this server", "recording"])
  })
})

describe("a channel: the WhatsApp Cloud API (the simulator)", () => {
  it("a send answers Message sent with transport whatsapp; the message, a replay and a broadcast say the same", async () => {
    const made = await setup()
    const { api, apiKey, handler } = made
    // Its inline attempt, when late for its pacing slot (a busy machine), is handed back and
    // the dispatcher sends it: settledSend answers as the inline attempt would have.
    const sent = await settledSend(api, await api.post("/send/template", { phone: phone(7), template: template("#4") }))
    expect([sent.status, sent.message, sent.data.status, sent.data.transport]).toEqual([200, "Message sent", "sent", "whatsapp"])
    expect(sent.data.provider_message_id).toMatch(/^wamid\./)
    expect(await storedTransports(api, [sent.data.message_id])).toEqual(["whatsapp"])

    const body = { phone: phone(8), template: template("#5") }
    const first = await postWithKey(handler, apiKey, "/send/template", body, "order-5")
    const again = await postWithKey(handler, apiKey, "/send/template", body, "order-5")
    expect(again.replayed).toBe("true")
    // The replay repeats the first answer: "Message sent", or that hand-back.
    expect(again.envelope.message === "Message sent" || isHandedBack(again.envelope), again.envelope.message).toBe(true)
    expect(again.envelope.data.transport).toBe("whatsapp")
    expect(again.envelope.data).toEqual(first.envelope.data)

    const created = await api.post("/broadcasts", { name: "Shipped", template: template("#6"), audience: { contact_uuids: [sent.data.contact_uuid] } })
    expect([created.message, created.data.channel_uuid, created.data.transport]).toEqual(["Broadcast sending", made.channelId, "whatsapp"])
    const { broadcast, recipients } = await completedBroadcast(api, created.data.uuid)
    expect(broadcast.transport).toBe("whatsapp")
    const [recipient] = recipients
    expect((await messageWhen(api, recipient!.message_uuid, (message) => message.status === "sent")).transport).toBe("whatsapp")
  })
})

describe("a host's own transport that says no kind", () => {
  const custom = Layer.succeed(MessageTransport, {
    send: () => Effect.succeed({ provider_message_id: "custom-1", status: "sent" as const })
  })

  it("answers transport custom and Message sent; the message and a broadcast say custom", async () => {
    const { api } = await tenantWithout(custom)
    const sent = await api.post("/send", { phone: phone(9), message: "Hello" })
    expect([sent.status, sent.message, sent.data.status, sent.data.transport]).toEqual([200, "Message sent", "sent", "custom"])
    expect(await storedTransports(api, [sent.data.message_id])).toEqual(["custom"])
    const created = await api.post("/broadcasts", { name: "Shipped", template: template("#7"), audience: { contact_uuids: [sent.data.contact_uuid] } })
    expect([created.message, created.data.transport]).toEqual(["Broadcast sending", "custom"])
    const { broadcast, recipients } = await completedBroadcast(api, created.data.uuid)
    expect(broadcast.transport).toBe("custom")
    expect(await storedTransports(api, recipients.map((r) => r.message_uuid))).toEqual(["custom"])
  })
})

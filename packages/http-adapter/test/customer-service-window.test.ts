import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { Effect } from "effect"
import { Core, Templates, type TemplateInput } from "@switchboard/core"
import type { SwitchboardHandler } from "@switchboard/http-adapter"
import { inboundMessagePayload, sign, startSimulator, textMessage, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"
import { makeHandler, makeSharedStorage, makeTenant, phone, request, type ApiClient } from "./helpers.js"

// The customer service window over HTTP (docs/messaging.md "The customer service window"):
// through a channel, text and media go only within 24 hours of the contact's last inbound
// message on that channel; templates always go. The WhatsApp simulator stands in for the
// Graph API; inbound messages are Meta's signed webhooks, stamped with the instant a test
// chooses.

const SECRET_KEY = Buffer.alloc(32, 7).toString("base64")
const APP_SECRET = "window-app-secret"
const TOKEN = "EAAGwindowtoken000000000000000001"
const DAY_MS = 24 * 3_600_000

let simulator: WhatsAppSimulator
const handlers: Array<SwitchboardHandler> = []
beforeAll(async () => {
  simulator = await startSimulator()
})
afterEach(() => simulator.script.clear())
afterAll(async () => {
  await Promise.all(handlers.map((handler) => handler.dispose()))
  await simulator.close()
})

const orderUpdate: TemplateInput = {
  name: "order_update",
  language: "en_US",
  category: "UTILITY",
  status: "APPROVED",
  components: [{ type: "BODY", text: "Order {{1}} has shipped.", example: { body_text: [["#1234"]] } }]
}
const template = (order: string) => ({
  name: "order_update",
  language: { code: "en_US" },
  components: [{ type: "body", parameters: [{ type: "text", text: order }] }]
})
const media = { type: "image", url: "https://example.com/a.png" }

let numbers = 0
/** A fresh store, handler and tenant with one channel on the simulator and the order_update template. */
const setup = async () => {
  const storage = makeSharedStorage()
  const handler = makeHandler(storage, {
    secretKey: SECRET_KEY,
    graphApi: { baseUrl: simulator.url, apiVersion: "v21.0" },
    whatsapp: { appSecret: APP_SECRET },
    sendQueue: { retryDelaysMs: [50, 50, 50], timeoutMs: 400, settleMs: 300, pollIntervalMs: 50 }
  })
  handlers.push(handler)
  const { organization, api } = await makeTenant(storage, handler)
  const number = {
    phone_number_id: String(106540352270000 + ++numbers),
    display_phone_number: "+31 6 1234 5678",
    waba_id: "102290129340398",
    access_token: TOKEN
  }
  simulator.addNumber(number)
  const channel = await api.post("/channels", { phone_number_id: number.phone_number_id, waba_id: number.waba_id, access_token: TOKEN, throughput_mps: 1000 })
  expect(channel.status).toBe(200)
  await Effect.runPromise(
    Effect.flatMap(Templates, (templates) => templates.create(organization.id, orderUpdate)).pipe(Effect.provide(Core.layer), Effect.provide(storage))
  )
  return { handler, api, number, channelId: channel.data.uuid as string }
}

type Setup = Awaited<ReturnType<typeof setup>>

/** Posts Meta's signed inbound text from `from`, stamped `atMs` (ms since the epoch; default now). */
const postInbound = async (setupOf: Setup, from: string, atMs = Date.now()) => {
  const body = JSON.stringify(
    inboundMessagePayload({
      number: setupOf.number,
      from,
      profile_name: "Customer",
      timestamp: String(Math.floor(atMs / 1000)),
      message: textMessage("Hello?")
    })
  )
  const response = await request(setupOf.handler, {
    method: "POST",
    url: "/api/v1/api/webhooks/whatsapp",
    headers: { "content-type": "application/json", "x-hub-signature-256": sign(body, APP_SECRET) },
    payload: body
  })
  expect(response.statusCode).toBe(200)
}

/** Polls `GET /messages/{id}` until `done` holds (at most 8 s); the message then. */
const messageWhen = async (api: ApiClient, id: string, done: (message: Record<string, any>) => boolean) => {
  const deadline = Date.now() + 8_000
  for (;;) {
    const message = (await api.get(`/messages/${id}`)).data as Record<string, any>
    if (done(message)) return message
    if (Date.now() > deadline) throw new Error(`message ${id} never reached the expected state: ${JSON.stringify(message)}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const sendText = (api: ApiClient, to: string, message = "Your order shipped") => api.post("/send", { phone: to, message })

describe("sends and the window", () => {
  it("text and media to a contact who never wrote: 400 outside_customer_service_window (window_expires_at null), nothing written; a template goes", async () => {
    const setupOf = await setup()
    for (const refused of [await sendText(setupOf.api, phone(1)), await setupOf.api.post("/send/media", { phone: phone(1), media })]) {
      expect(refused.status).toBe(400)
      expect(refused.errors).toEqual([
        { code: "outside_customer_service_window", message: expect.any(String), field: "phone", window_expires_at: null }
      ])
    }
    expect((await setupOf.api.get("/contacts")).data.contacts).toEqual([])
    expect((await setupOf.api.get("/chats")).data.chats).toEqual([])
    expect(simulator.sends(setupOf.number.phone_number_id)).toEqual([])
    const sent = await setupOf.api.post("/send/template", { phone: phone(1), template: template("#1") })
    expect([sent.status, sent.data.status]).toEqual([200, "sent"])
    // The template created the contact; it still never wrote.
    expect((await sendText(setupOf.api, phone(1))).errors[0]).toMatchObject({ code: "outside_customer_service_window", window_expires_at: null })
  })

  it("after an inbound message stamped now: text and media go; GET /chats/{uuid} shows the channel and window_expires_at", async () => {
    const setupOf = await setup()
    const before = Date.now()
    await postInbound(setupOf, phone(2))
    const text = await sendText(setupOf.api, phone(2))
    expect([text.status, text.data.status]).toEqual([200, "sent"])
    const sentMedia = await setupOf.api.post("/send/media", { phone: phone(2), media })
    expect([sentMedia.status, sentMedia.data.status]).toEqual([200, "sent"])
    const chat = (await setupOf.api.get(`/chats/${text.data.chat_uuid}`)).data
    expect(chat.last_inbound_channel_uuid).toBe(setupOf.channelId)
    // Meta's timestamp has whole seconds: the window opened at most a second before the post.
    const expires = Date.parse(chat.window_expires_at)
    expect(expires).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + DAY_MS)
    expect(expires).toBeLessThanOrEqual(Date.now() + DAY_MS)
    const listed = (await setupOf.api.get("/chats")).data.chats
    expect(listed.map((each: Record<string, unknown>) => each.window_expires_at)).toEqual([chat.window_expires_at])
  })

  it("an inbound message more than 24 hours old: the window has closed, 400 with window_expires_at, nothing written", async () => {
    const setupOf = await setup()
    const stampedAt = Date.now() - DAY_MS - 60_000
    await postInbound(setupOf, phone(3), stampedAt)
    const chat = (await setupOf.api.get("/chats")).data.chats[0]
    const refused = await sendText(setupOf.api, phone(3))
    expect(refused.status).toBe(400)
    expect(refused.errors).toEqual([
      { code: "outside_customer_service_window", message: expect.any(String), field: "phone", window_expires_at: chat.window_expires_at }
    ])
    expect(Date.parse(chat.window_expires_at)).toBe(Math.floor(stampedAt / 1000) * 1000 + DAY_MS)
    expect((await setupOf.api.get(`/chats/${chat.uuid}/messages`)).data.messages.map((message: { direction: string }) => message.direction)).toEqual([
      "inbound"
    ])
    expect((await setupOf.api.post("/send/template", { phone: phone(3), template: template("#3") })).data.status).toBe("sent")
  })
})

describe("a queued free-form message and the window", () => {
  it("fails outside_customer_service_window when the window closes while it waits; retry is 409 until the contact writes again", async () => {
    const setupOf = await setup()
    const to = phone(4)
    // The window closes two seconds from now.
    await postInbound(setupOf, to, Date.now() - DAY_MS + 2_000)
    // A template held by a pair-rate refusal (6 s) keeps the recipient's lane busy.
    simulator.script.enqueue([{ code: 131056 }])
    const held = await setupOf.api.post("/send/template", { phone: to, template: template("#4") })
    expect(held.data.status).toBe("queued")
    const queued = await sendText(setupOf.api, to)
    expect([queued.status, queued.data.status]).toEqual([200, "queued"])
    await new Promise((resolve) => setTimeout(resolve, 2_500))
    await setupOf.api.post(`/messages/${held.data.message_id}/cancel`, {})
    const failed = await messageWhen(setupOf.api, queued.data.message_id, (message) => message.status === "failed")
    expect(failed).toMatchObject({ failure: { code: "outside_customer_service_window" }, attempts: 0 })
    const sentTexts = simulator
      .sends(setupOf.number.phone_number_id)
      .filter((each) => (each.body as { biz_opaque_callback_data?: string }).biz_opaque_callback_data === queued.data.message_id)
    expect(sentTexts).toEqual([])
    const refused = await setupOf.api.post(`/messages/${queued.data.message_id}/retry`, {})
    expect([refused.status, refused.errors[0]?.code]).toEqual([409, "message_not_retryable"])
    expect((await setupOf.api.get(`/messages/${queued.data.message_id}`)).data.status).toBe("failed")
    // The contact writes again: the retry goes.
    await postInbound(setupOf, to)
    const retried = await setupOf.api.post(`/messages/${queued.data.message_id}/retry`, {})
    expect([retried.status, retried.data.status]).toEqual([200, "queued"])
    await messageWhen(setupOf.api, queued.data.message_id, (message) => message.status === "sent")
  }, 20_000)
})

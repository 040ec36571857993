import { describe, expect, it } from "vitest"
import { inboundMessagePayload, textMessage } from "@switchboard/whatsapp-simulator"
import { phone, settledSend, type ApiClient } from "./helpers.js"
import { template, useSendQueueSetup } from "./send-queue-helpers.js"

// The customer service window over HTTP (docs/messaging.md "The customer service window"):
// through a channel, text and media go only within 24 hours of the contact's last inbound
// message on that channel; templates always go. The WhatsApp simulator stands in for the
// Graph API; inbound messages are Meta's signed webhooks, stamped with the instant a test
// chooses.

const DAY_MS = 24 * 3_600_000
const media = { type: "image", url: "https://example.com/a.png" }

const { simulator, setup, postWebhook, messageWhen } = useSendQueueSetup({
  appSecret: "window-app-secret",
  numberBase: 106540352270000,
  waitMs: 8_000
})

type Setup = Awaited<ReturnType<typeof setup>>

/** Posts Meta's signed inbound text from `from`, stamped `atMs` (ms since the epoch; default now). */
const postInbound = (setupOf: Setup, from: string, atMs = Date.now()) =>
  postWebhook(
    setupOf,
    JSON.stringify(
      inboundMessagePayload({
        number: setupOf.number,
        from,
        profile_name: "Customer",
        timestamp: String(Math.floor(atMs / 1000)),
        message: textMessage("Hello?")
      })
    )
  )

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
    expect(simulator().sends(setupOf.number.phone_number_id)).toEqual([])
    const sent = await settledSend(setupOf.api, await setupOf.api.post("/send/template", { phone: phone(1), template: template("#1") }))
    expect([sent.status, sent.data.status]).toEqual([200, "sent"])
    // The template created the contact; it still never wrote.
    expect((await sendText(setupOf.api, phone(1))).errors[0]).toMatchObject({ code: "outside_customer_service_window", window_expires_at: null })
  })

  it("after an inbound message stamped now: text and media go; GET /chats/{uuid} shows the channel and window_expires_at", async () => {
    const setupOf = await setup()
    const before = Date.now()
    await postInbound(setupOf, phone(2))
    // An attempt in the request late for its pacing slot (a busy machine) is handed back and the
    // dispatcher sends it: settledSend answers as the inline attempt would have.
    const text = await settledSend(setupOf.api, await sendText(setupOf.api, phone(2)))
    expect([text.status, text.data.status]).toEqual([200, "sent"])
    const sentMedia = await settledSend(setupOf.api, await setupOf.api.post("/send/media", { phone: phone(2), media }))
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
    expect((await settledSend(setupOf.api, await setupOf.api.post("/send/template", { phone: phone(3), template: template("#3") }))).data.status).toBe("sent")
  })
})

describe("a queued free-form message and the window", () => {
  it("fails outside_customer_service_window when the window closes while it waits; retry is 409 until the contact writes again", async () => {
    const setupOf = await setup()
    const to = phone(4)
    // The window closes two seconds from now.
    await postInbound(setupOf, to, Date.now() - DAY_MS + 2_000)
    // A template held by a pair-rate refusal (6 s) keeps the recipient's lane busy.
    simulator().script.enqueue([{ code: 131056 }])
    const held = await setupOf.api.post("/send/template", { phone: to, template: template("#4") })
    expect(held.data.status).toBe("queued")
    const queued = await sendText(setupOf.api, to)
    expect([queued.status, queued.data.status]).toEqual([200, "queued"])
    await new Promise((resolve) => setTimeout(resolve, 2_500))
    await setupOf.api.post(`/messages/${held.data.message_id}/cancel`, {})
    const failed = await messageWhen(setupOf.api, queued.data.message_id, (message) => message.status === "failed")
    expect(failed).toMatchObject({ failure: { code: "outside_customer_service_window" }, attempts: 0 })
    const sentTexts = simulator()
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

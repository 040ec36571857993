import { describe, expect, it } from "vitest"
import { inboundMessagePayload, textMessage } from "@switchboard/whatsapp-simulator"
import { phone } from "./helpers.js"
import { useSendQueueSetup } from "./send-queue-helpers.js"

// Scheduled sends over HTTP, in real time (docs/messaging.md "Scheduled sends"): `send_at`
// on the sends, `status: scheduled` whatever the window at the request, the message
// leaving through the send queue at its time (the WhatsApp simulator records when each
// send arrived), cancel, and the window checked when it leaves.

const DAY_MS = 24 * 3_600_000

const { simulator, setup, postWebhook, requestsFor, messageWhen } = useSendQueueSetup({
  appSecret: "scheduled-app-secret",
  numberBase: 106540352290000,
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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe("send_at over HTTP", () => {
  it("400 naming send_at when malformed or more than 30 days ahead, nothing written", async () => {
    const setupOf = await setup()
    for (const sendAt of ["next week", new Date(Date.now() + 31 * DAY_MS).toISOString()]) {
      const refused = await setupOf.api.post("/send", { phone: phone(1), message: "Hi", send_at: sendAt })
      expect(refused.status).toBe(400)
      expect(refused.errors.map((error: { field?: string }) => error.field)).toEqual(["send_at"])
    }
    const wrongType = await setupOf.api.post("/send/template", { phone: phone(1), template: { name: "order_update", language: { code: "en_US" } }, send_at: 5 })
    expect([wrongType.status, wrongType.errors[0]?.field]).toEqual([400, "send_at"])
    expect((await setupOf.api.get("/contacts")).data.contacts).toEqual([])
  })

  it("a text 3 s ahead answers scheduled and leaves within 1 s of send_at; a cancelled one never leaves", async () => {
    const setupOf = await setup()
    const to = phone(2)
    await postInbound(setupOf, to)
    const sendAt = new Date(Date.now() + 3_000)
    const scheduled = await setupOf.api.post("/send", { phone: to, message: "See you at 8", send_at: sendAt.toISOString() })
    expect(scheduled.status).toBe(200)
    expect(scheduled.message).toBe("Message scheduled")
    expect(scheduled.data).toMatchObject({ status: "scheduled", next_attempt_at: sendAt.toISOString(), provider_message_id: null })
    const cancelled = await setupOf.api.post("/send", { phone: phone(3), message: "Never", send_at: sendAt.toISOString() })
    expect(cancelled.data.status).toBe("scheduled")
    const cancel = await setupOf.api.post(`/messages/${cancelled.data.message_id}/cancel`, {})
    expect([cancel.status, cancel.data.status, cancel.data.failure?.code]).toEqual([200, "failed", "cancelled"])
    // Listed in its chat at once; counted in the channel's queue figures.
    const listed = (await setupOf.api.get(`/chats/${scheduled.data.chat_uuid}/messages`)).data.messages
    expect(listed.map((message: { uuid: string; status: string }) => [message.uuid, message.status])).toContainEqual([scheduled.data.message_id, "scheduled"])
    expect((await setupOf.api.get(`/channels/${setupOf.channelId}`)).data.queue.queued).toBe(1)
    const sent = await messageWhen(setupOf.api, scheduled.data.message_id, (message) => message.status === "sent")
    expect(sent.provider_message_id).toEqual(expect.any(String))
    const [request] = requestsFor(setupOf, scheduled.data.message_id)
    expect(request!.at_ms).toBeGreaterThanOrEqual(sendAt.getTime())
    expect(request!.at_ms).toBeLessThanOrEqual(sendAt.getTime() + 1_000)
    await sleep(300)
    expect(requestsFor(setupOf, cancelled.data.message_id)).toEqual([])
    expect((await setupOf.api.get(`/messages/${cancelled.data.message_id}`)).data.status).toBe("failed")
  }, 15_000)

  it("a free-form text whose window is open at the request but closed at send_at ends failed outside_customer_service_window, never sent", async () => {
    const setupOf = await setup()
    const to = phone(4)
    // The window closes one second from now; the text is due in two.
    await postInbound(setupOf, to, Date.now() - DAY_MS + 1_000)
    const sendAt = Date.now() + 2_000
    const scheduled = await setupOf.api.post("/send", { phone: to, message: "Too late", send_at: new Date(sendAt).toISOString() })
    expect([scheduled.status, scheduled.data.status]).toEqual([200, "scheduled"])
    // A contact who never wrote: accepted too, scheduled.
    const never = await setupOf.api.post("/send/media", {
      phone: phone(5),
      media: { type: "image", url: "https://example.com/a.png" },
      send_at: new Date(sendAt).toISOString()
    })
    expect([never.status, never.data.status]).toEqual([200, "scheduled"])
    for (const id of [scheduled.data.message_id, never.data.message_id]) {
      const failed = await messageWhen(setupOf.api, id, (message) => message.status === "failed")
      expect(failed).toMatchObject({ failure: { code: "outside_customer_service_window" }, attempts: 0 })
      expect(Date.parse(failed.updated_at)).toBeGreaterThanOrEqual(sendAt)
      expect(requestsFor(setupOf, id)).toEqual([])
    }
    expect(simulator().sends(setupOf.number.phone_number_id)).toEqual([])
  }, 15_000)
})

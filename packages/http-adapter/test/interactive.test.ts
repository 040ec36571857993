import { afterAll, describe, expect, it } from "vitest"
import type { SwitchboardHandler } from "@switchboard/http-adapter"
import { inboundMessagePayload, interactiveReply, textMessage } from "@switchboard/whatsapp-simulator"
import { bearer, makeHandler, makeSharedStorage, makeTenant, phone, request, type ApiClient } from "./helpers.js"
import { useSendQueueSetup } from "./send-queue-helpers.js"

// `POST /send/interactive` (docs/messaging.md "Interactive messages"): a 400 names the field
// by its path and writes nothing; through the recording transport the message is stored
// with type interactive; through a channel Meta's payload reaches the simulator, which
// checks it as Meta does, and the customer's tap comes back as an interactive reply.

const storage = makeSharedStorage()
const handler = makeHandler(storage)
const handlers: Array<SwitchboardHandler> = [handler]
afterAll(() => Promise.all(handlers.map((each) => each.dispose())))

const buttons = {
  type: "button",
  header: { type: "text", text: "Delivery" },
  body: { text: "Does Tuesday suit you? 📦" },
  footer: { text: "Tap a button" },
  action: { buttons: [{ type: "reply", reply: { id: "yes", title: "Tuesday is fine" } }, { type: "reply", reply: { id: "no", title: "Another day" } }] }
}

const rows = (count: number) => Array.from({ length: count }, (_, index) => ({ id: `slot-${index}`, title: `Slot ${index}` }))
const list = (count: number) => ({ type: "list", body: { text: "Pick a slot" }, action: { button: "Slots", sections: [{ rows: rows(count) }] } })

/** What the organization holds: its contacts and chats. */
const written = async (api: ApiClient) => ({
  contacts: (await api.get("/contacts")).data.contacts.length,
  chats: (await api.get("/chats")).data.chats.length
})

describe("POST /send/interactive: input", () => {
  it("a list with 11 rows is 400 naming interactive.action.sections; nothing is written", async () => {
    const { api } = await makeTenant(storage, handler)
    const refused = await api.post("/send/interactive", { phone: phone(1), interactive: list(11) })
    expect(refused.status).toBe(400)
    expect(refused.errors).toEqual([{ code: "out_of_range", field: "interactive.action.sections", message: expect.stringContaining("at most 10 rows") }])
    expect(await written(api)).toEqual({ contacts: 0, chats: 0 })
  })

  it("every bad field is named by its path in one 400; a wrong type is named too; nothing is written", async () => {
    const { api } = await makeTenant(storage, handler)
    const bad = {
      ...buttons,
      footer: { text: "f".repeat(61) },
      action: { buttons: [{ type: "reply", reply: { id: "a", title: "A" } }, { type: "reply", reply: { id: "a", title: "😀".repeat(21) } }] }
    }
    const refused = await api.post("/send/interactive", { phone: phone(2), interactive: bad })
    expect(refused.status).toBe(400)
    expect(refused.errors.map((error) => error.field)).toEqual([
      "interactive.footer.text",
      "interactive.action.buttons[1].reply.title",
      "interactive.action.buttons[1].reply.id"
    ])
    const typed = await api.post("/send/interactive", { phone: phone(2), interactive: { ...buttons, body: { text: 42 } } })
    expect([typed.status, typed.errors[0]?.field]).toEqual([400, "interactive.body.text"])
    const unknown = await api.post("/send/interactive", { phone: phone(2), interactive: { ...buttons, type: "carousel" } })
    expect([unknown.status, unknown.errors[0]?.field]).toEqual([400, "interactive.type"])
    const missing = await api.post("/send/interactive", { phone: phone(2) })
    expect([missing.status, missing.errors[0]?.field]).toEqual([400, "interactive"])
    expect(await written(api)).toEqual({ contacts: 0, chats: 0 })
  })
})

describe("POST /send/interactive through the recording transport", () => {
  it("200: stored with type interactive, text the body, content.interactive the object (unknown properties dropped)", async () => {
    const { api } = await makeTenant(storage, handler)
    const sent = await api.post("/send/interactive", { phone: phone(3), interactive: { ...buttons, colour: "red" } })
    expect(sent.status).toBe(200)
    expect(sent.data).toMatchObject({ status: "sent", transport: "recording" })
    const message = (await api.get(`/messages/${sent.data.message_id}`)).data
    expect(message).toMatchObject({ type: "interactive", direction: "outbound", text: "Does Tuesday suit you? 📦", content: { interactive: buttons } })
    expect(message.content.interactive).not.toHaveProperty("colour")
    const listed = (await api.get(`/chats/${sent.data.chat_uuid}/messages`)).data.messages
    expect(listed.map((each: { type: string }) => each.type)).toEqual(["interactive"])
  })

  it("an Idempotency-Key replays the first answer and sends once", async () => {
    const { api, apiKey } = await makeTenant(storage, handler)
    const post = () =>
      request(handler, {
        method: "POST",
        url: "/api/v1/api/send/interactive",
        headers: { ...bearer(apiKey), "content-type": "application/json", "idempotency-key": "interactive-once" },
        payload: JSON.stringify({ phone: phone(4), interactive: list(3) })
      })
    const first = await post()
    const second = await post()
    expect([first.statusCode, second.statusCode]).toEqual([200, 200])
    expect(second.headers["idempotent-replayed"]).toBe("true")
    expect(JSON.parse(second.body).data.message_id).toBe(JSON.parse(first.body).data.message_id)
    const chat = (await api.get("/chats")).data.chats[0]
    expect((await api.get(`/chats/${chat.uuid}/messages`)).data.messages).toHaveLength(1)
  })
})

describe("POST /send/interactive with send_at", () => {
  it("a send_at ahead answers scheduled and can be cancelled; one more than 30 days ahead is 400 naming send_at", async () => {
    const { api } = await makeTenant(storage, handler)
    const later = new Date(Date.now() + 3_600_000).toISOString()
    const scheduled = await api.post("/send/interactive", { phone: phone(7), interactive: buttons, send_at: later })
    expect([scheduled.status, scheduled.data.status]).toEqual([200, "scheduled"])
    const cancelled = await api.post(`/messages/${scheduled.data.message_id}/cancel`, {})
    expect([cancelled.status, cancelled.data.type, cancelled.data.status]).toEqual([200, "interactive", "failed"])
    const tooFar = await api.post("/send/interactive", { phone: phone(8), interactive: buttons, send_at: new Date(Date.now() + 31 * 86_400_000).toISOString() })
    expect([tooFar.status, tooFar.errors[0]?.field]).toEqual([400, "send_at"])
  })
})

describe("POST /send/interactive through a channel and the simulator", () => {
  const { simulator, setup, postWebhook, requestsFor, messageWhen } = useSendQueueSetup({
    appSecret: "interactive-app-secret",
    numberBase: 106540352310000,
    waitMs: 8_000
  })

  it("outside the window: 400 outside_customer_service_window, nothing written; after the customer writes: Meta's payload, accepted", async () => {
    const setupOf = await setup()
    const to = phone(5)
    const refused = await setupOf.api.post("/send/interactive", { phone: to, interactive: buttons })
    expect(refused.status).toBe(400)
    expect(refused.errors).toEqual([{ code: "outside_customer_service_window", message: expect.any(String), field: "phone", window_expires_at: null }])
    expect(await written(setupOf.api)).toEqual({ contacts: 0, chats: 0 })
    await postWebhook(setupOf, JSON.stringify(inboundMessagePayload({ number: setupOf.number, from: to, profile_name: "Sheena", message: textMessage("When?") })))
    const sent = await setupOf.api.post("/send/interactive", { phone: to, interactive: buttons })
    expect(sent.status).toBe(200)
    // Sent in the request, or (a networked store under load) by the dispatcher moments later.
    expect(sent.data).toMatchObject({ transport: "whatsapp" })
    const message = await messageWhen(setupOf.api, sent.data.message_id, (each) => each.status === "sent")
    expect(message.provider_message_id).toMatch(/^wamid\./)
    const [request] = requestsFor(setupOf, sent.data.message_id).filter((each) => each.wamid !== null)
    expect(request!.body).toMatchObject({ messaging_product: "whatsapp", recipient_type: "individual", type: "interactive", interactive: buttons })
    expect(request!.wamid).toBe(message.provider_message_id)

    // The customer taps "Tuesday is fine": an interactive reply to our message.
    const tap = interactiveReply("button_reply", { id: "yes", title: "Tuesday is fine" }, message.provider_message_id)
    await postWebhook(setupOf, JSON.stringify(inboundMessagePayload({ number: setupOf.number, from: to, profile_name: "Sheena", message: tap })))
    const messages = (await setupOf.api.get(`/chats/${sent.data.chat_uuid}/messages`)).data.messages as Array<Record<string, any>>
    const reply = messages.find((message) => message.direction === "inbound" && message.type === "interactive")
    expect(reply).toBeDefined()
    expect(JSON.stringify(reply!.content)).toContain("\"yes\"")
  })

  it("a list and a cta_url within the limits are accepted by the simulator as Meta would", async () => {
    const setupOf = await setup()
    const to = phone(6)
    await postWebhook(setupOf, JSON.stringify(inboundMessagePayload({ number: setupOf.number, from: to, profile_name: "Ravi", message: textMessage("Hi") })))
    const cta = { type: "cta_url", body: { text: "On its way" }, action: { name: "cta_url", parameters: { display_text: "Track it", url: "https://example.com/t/1" } } }
    for (const interactive of [list(10), cta]) {
      const sent = await setupOf.api.post("/send/interactive", { phone: to, interactive })
      expect(sent.status).toBe(200)
      const message = await messageWhen(setupOf.api, sent.data.message_id, (each) => each.status !== "queued" && each.status !== "sending")
      expect([message.status, message.failure]).toEqual(["sent", null])
    }
    expect(simulator().sends(setupOf.number.phone_number_id).filter((each) => each.wamid !== null)).toHaveLength(2)
  })
})

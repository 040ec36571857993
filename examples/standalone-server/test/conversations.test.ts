import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { interactiveReply, reactionMessage, textMessage, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"
import {
  api,
  type ApiAnswer,
  assertBuilt,
  killServers,
  removeTemporaryDirectories,
  runCliJson,
  settledSend,
  startOneNumberSimulator,
  startServer,
  temporaryDatabaseUrl,
  until,
  type RunningServer
} from "./helpers.js"

// Conversations beyond text through the built server and CLI on a SQLite file, the WhatsApp
// simulator playing Meta and the customer: the customer writes first (the window opens),
// reply buttons go out in Meta's interactive shape and the customer's tap comes back as an
// interactive message in the chat; a list over WhatsApp's row limit is refused before
// anything is written or sent; marking the chat read sends Meta the read receipt of the
// customer's latest message; a text scheduled a few seconds ahead leaves at its time and
// one cancelled before its time never leaves, and one whose customer service window closes
// before its time ends failed, never sent; the business reacts to the customer's message
// and takes it back; the customer's reaction to our message shows in
// its reactions, and taking it back removes it (docs/messaging.md, docs/chats.md).
// The steps run in order on one server and share its state.

const TOKEN = "EAAGconversations3Tq8Wm5Lx2Rk7Pv"
const APP_SECRET = "conversations-app-secret-7c2e"
const PHONE_NUMBER_ID = "106540352242988"
const WABA_ID = "102290129340398"
/** The customer: digits as Meta sends them, E.164 as Switchboard stores them. */
const CUSTOMER_DIGITS = "14155550100"
const CUSTOMER_PHONE = `+${CUSTOMER_DIGITS}`
/** A second customer, whose last message is nearly a day old. */
const LATE_CUSTOMER_DIGITS = "14155550177"

let simulator: WhatsAppSimulator

beforeAll(async () => {
  assertBuilt()
  simulator = await startOneNumberSimulator({ phoneNumberId: PHONE_NUMBER_ID, token: TOKEN, appSecret: APP_SECRET })
})
afterAll(async () => {
  killServers()
  removeTemporaryDirectories()
  await simulator.close()
})

// State shared by the steps, in order.
let server: RunningServer
let apiKey = ""
let chatUuid = ""
/** The wamid of the customer's latest message (what a read receipt must name). */
let latestInboundWamid = ""
/** Our reply-buttons message: its uuid and Meta's wamid. */
let ourUuid = ""
let ourWamid = ""

const call = (method: string, path: string, body?: unknown): Promise<ApiAnswer> => api(server.baseUrl, apiKey, method, path, body)

const messagesOfChat = async (): Promise<Array<any>> => {
  const answer = await call("GET", `/chats/${chatUuid}/messages`)
  expect(answer.status, JSON.stringify(answer.json)).toBe(200)
  return answer.json.data.messages
}

/** The Graph sends (not read receipts) the simulator received so far. */
const graphSends = () => simulator.sends(PHONE_NUMBER_ID).filter((entry) => (entry.body as any)?.status !== "read")

/** An RFC 3339 date-time `ms` from now, on a whole second (at least `ms` ahead). */
const whole = (ms: number): Date => new Date(Math.ceil((Date.now() + ms) / 1000) * 1000)

describe("conversations beyond text, end to end: built CLI and server, SQLite, the WhatsApp simulator", () => {
  it("org create and channel add; the customer writes first, so the window is open", async () => {
    const env = { DATABASE_URL: temporaryDatabaseUrl(), WHATSAPP_API_BASE_URL: simulator.url, WHATSAPP_APP_SECRET: APP_SECRET, REDIS_URL: "" }
    const org = await runCliJson<{ org_id: string; api_key: string }>(["org", "create", "--name", "Acme"], env)
    apiKey = org.api_key
    server = await startServer(env)
    const added = await call("POST", "/channels", { phone_number_id: PHONE_NUMBER_ID, waba_id: WABA_ID, access_token: TOKEN })
    expect(added.status, JSON.stringify(added.json)).toBe(200)
    simulator.configure({ webhookUrl: `${server.baseUrl}/webhooks/whatsapp` })

    const hello = await simulator.postInbound({ from: CUSTOMER_DIGITS, profile_name: "Sheena Nelson", message: textMessage("Hi, is my order ready?") })
    expect(hello.delivery.status).toBe(200)
    latestInboundWamid = hello.id
    await until(async () => (await call("GET", "/chats")).json.data.chats.length === 1, "the customer's chat", 5_000, 50)
    const chat = (await call("GET", "/chats")).json.data.chats[0]
    chatUuid = chat.uuid
    expect(chat).toMatchObject({ unread_count: 1, window_expires_at: expect.any(String) })
    expect(await messagesOfChat()).toMatchObject([{ direction: "inbound", type: "text", text: "Hi, is my order ready?", provider_message_id: hello.id }])
  })

  it("reply buttons go out in Meta's interactive shape; the customer's tap lands in the chat as an interactive message", async () => {
    const interactive = {
      type: "button",
      body: { text: "Your order is ready. Pick it up today?" },
      footer: { text: "Acme" },
      action: { buttons: [{ type: "reply", reply: { id: "yes", title: "Yes" } }, { type: "reply", reply: { id: "later", title: "Tomorrow" } }] }
    }
    const sent = await settledSend(server.baseUrl, apiKey, await call("POST", "/send/interactive", { phone: CUSTOMER_PHONE, interactive }))
    expect(sent.status, JSON.stringify(sent.json)).toBe(200)
    expect(sent.json.data).toMatchObject({ status: "sent", transport: "whatsapp", chat_uuid: chatUuid })
    ourUuid = sent.json.data.message_id
    ourWamid = sent.json.data.provider_message_id

    const sends = graphSends()
    expect(sends).toHaveLength(1)
    expect(sends[0]!.wamid).toBe(ourWamid)
    expect(sends[0]!.authorization).toBe(`Bearer ${TOKEN}`)
    expect(sends[0]!.body).toEqual({
      messaging_product: "whatsapp",
      recipient_type: "individual",
      to: CUSTOMER_DIGITS,
      biz_opaque_callback_data: ourUuid,
      type: "interactive",
      interactive
    })

    const tap = await simulator.postInbound({
      from: CUSTOMER_DIGITS,
      profile_name: "Sheena Nelson",
      message: interactiveReply("button_reply", { id: "yes", title: "Yes" }, ourWamid)
    })
    expect(tap.delivery.status).toBe(200)
    latestInboundWamid = tap.id
    await until(async () => (await messagesOfChat()).some((message) => message.provider_message_id === tap.id), "the customer's tap in the chat", 5_000, 50)
    const reply = (await messagesOfChat()).find((message) => message.provider_message_id === tap.id)
    expect(reply).toMatchObject({
      direction: "inbound",
      type: "interactive",
      text: "Yes",
      content: { interactive: { type: "button_reply", button_reply: { id: "yes", title: "Yes" } } },
      reply_to: ourUuid
    })
    const ours = await call("GET", `/messages/${ourUuid}`)
    expect(ours.json.data).toMatchObject({ direction: "outbound", type: "interactive", text: "Your order is ready. Pick it up today?", content: { interactive } })
  })

  it("a list with 11 rows is a 400 naming interactive.action.sections: no message written, nothing sent", async () => {
    const messagesBefore = await messagesOfChat()
    const sendsBefore = simulator.sends().length
    const rows = (count: number, from: number) => Array.from({ length: count }, (_, index) => ({ id: `slot-${from + index}`, title: `Slot ${from + index}` }))
    const refused = await call("POST", "/send/interactive", {
      phone: CUSTOMER_PHONE,
      interactive: {
        type: "list",
        body: { text: "Pick a pick-up slot" },
        action: { button: "Slots", sections: [{ title: "Morning", rows: rows(6, 1) }, { title: "Afternoon", rows: rows(5, 7) }] }
      }
    })
    expect(refused.status, JSON.stringify(refused.json)).toBe(400)
    expect(refused.json.errors.map((error: { field: string }) => error.field)).toEqual(["interactive.action.sections"])
    expect(await messagesOfChat()).toEqual(messagesBefore)
    // A send the server had taken would have been in the simulator by now (the valid one above was, inline).
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(simulator.sends()).toHaveLength(sendsBefore)
  })

  it("POST /chats/{uuid}/read sends Meta the read receipt of the customer's latest message; the chat has nothing unread", async () => {
    const before = (await call("GET", `/chats/${chatUuid}`)).json.data
    expect(before.unread_count).toBe(2)
    const read = await call("POST", `/chats/${chatUuid}/read`)
    expect(read.status, JSON.stringify(read.json)).toBe(200)
    expect(read.json.data).toMatchObject({ uuid: chatUuid, unread_count: 0, unread: false, read_receipt: { status: "sent", reason: null, failure: null } })
    const receipts = simulator.readReceipts(PHONE_NUMBER_ID)
    expect(receipts).toHaveLength(1)
    expect(receipts[0]).toMatchObject({ message_id: latestInboundWamid, typing_indicator: false, accepted: true })
    expect(simulator.received({ route: "mark_read" })[0]!.body).toEqual({ messaging_product: "whatsapp", status: "read", message_id: latestInboundWamid })
    const latest = (await messagesOfChat()).find((message) => message.provider_message_id === latestInboundWamid)
    expect(read.json.data.read_receipt.message_uuid).toBe(latest.uuid)
    expect((await call("GET", `/chats/${chatUuid}`)).json.data.unread_count).toBe(0)
  })

  it("a text scheduled 3 s ahead reaches Meta within 1 s after its send_at; one cancelled before its time never does; one whose window closed before its time ends failed", async () => {
    // A second customer who wrote 24 hours less 2 seconds ago: the window is open now and
    // closed before the texts' time.
    const nearlyADayAgo = Math.floor(Date.now() / 1000) - 24 * 60 * 60 + 2
    await simulator.postInbound({ from: LATE_CUSTOMER_DIGITS, profile_name: "Ravi Patel", message: textMessage("Any news?"), timestamp: String(nearlyADayAgo) })
    const sendAt = whole(3_000)
    const cancelledAt = whole(3_000)
    const tooLate = await call("POST", "/send", { phone: `+${LATE_CUSTOMER_DIGITS}`, message: "Your order shipped", send_at: sendAt.toISOString() })
    expect([tooLate.status, tooLate.json.data?.status], JSON.stringify(tooLate.json)).toEqual([200, "scheduled"])
    const scheduled = await call("POST", "/send", { phone: CUSTOMER_PHONE, message: "Reminder: pick-up closes at 6", send_at: sendAt.toISOString() })
    expect(scheduled.status, JSON.stringify(scheduled.json)).toBe(200)
    expect(scheduled.json).toMatchObject({ message: "Message scheduled", data: { status: "scheduled", next_attempt_at: sendAt.toISOString() } })
    const dropped = await call("POST", "/send", { phone: CUSTOMER_PHONE, message: "This one is called off", send_at: cancelledAt.toISOString() })
    expect(dropped.json.data.status).toBe("scheduled")
    const cancelled = await call("POST", `/messages/${dropped.json.data.message_id}/cancel`)
    expect(cancelled.status, JSON.stringify(cancelled.json)).toBe(200)
    expect(cancelled.json.data).toMatchObject({ status: "failed", failure: { code: "cancelled" } })

    const sendsBefore = graphSends().length
    const arrival = await simulator.waitFor(
      () => graphSends().find((entry) => (entry.body as any)?.biz_opaque_callback_data === scheduled.json.data.message_id),
      "the scheduled text at the simulator",
      sendAt.getTime() - Date.now() + 5_000
    )
    expect(arrival.at_ms).toBeGreaterThanOrEqual(sendAt.getTime())
    expect(arrival.at_ms).toBeLessThanOrEqual(sendAt.getTime() + 1_000)
    expect((arrival.body as any).text).toEqual({ preview_url: false, body: "Reminder: pick-up closes at 6" })

    // Past the cancelled one's time by 1.5 s: only the scheduled text went out.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, cancelledAt.getTime() + 1_500 - Date.now())))
    expect(graphSends()).toHaveLength(sendsBefore + 1)
    expect(graphSends().some((entry) => (entry.body as any)?.biz_opaque_callback_data === dropped.json.data.message_id)).toBe(false)
    expect((await call("GET", `/messages/${scheduled.json.data.message_id}`)).json.data.status).toBe("sent")
    expect((await call("GET", `/messages/${dropped.json.data.message_id}`)).json.data).toMatchObject({ status: "failed", failure: { code: "cancelled" } })
    // The window closed before its time: failed when it was due, never sent.
    let failed: any
    await until(async () => {
      failed = (await call("GET", `/messages/${tooLate.json.data.message_id}`)).json.data
      return failed?.status === "failed"
    }, "the scheduled text past its window failed", 10_000, 100)
    expect(failed).toMatchObject({ status: "failed", failure: { code: "outside_customer_service_window" }, provider_message_id: null })
    expect(graphSends().some((entry) => (entry.body as any)?.biz_opaque_callback_data === tooLate.json.data.message_id)).toBe(false)
  })

  it("POST /messages/{uuid}/reaction reacts to the customer's message through Meta; an empty emoji takes it back", async () => {
    const tapped = (await messagesOfChat()).find((message) => message.provider_message_id === latestInboundWamid)
    const reactionsOf = async (): Promise<Array<any>> => (await call("GET", `/messages/${tapped.uuid}`)).json.data.reactions
    const reactionSends = () => graphSends().filter((entry) => (entry.body as any)?.type === "reaction")

    const reacted = await call("POST", `/messages/${tapped.uuid}/reaction`, { emoji: "👍" })
    expect(reacted.status, JSON.stringify(reacted.json)).toBe(200)
    expect(reacted.json.data.uuid).toBe(tapped.uuid)
    await simulator.waitFor(() => reactionSends().length === 1, "the business's reaction at the simulator", 5_000)
    expect(reactionSends()[0]!.body).toMatchObject({
      messaging_product: "whatsapp",
      to: CUSTOMER_DIGITS,
      type: "reaction",
      reaction: { message_id: latestInboundWamid, emoji: "👍" }
    })
    await until(async () => (await reactionsOf()).length === 1, "the business's reaction on the customer's message", 5_000, 50)
    expect(await reactionsOf()).toEqual([{ emoji: "👍", by: "business", at: expect.any(String) }])

    const removed = await call("POST", `/messages/${tapped.uuid}/reaction`, { emoji: "" })
    expect(removed.status, JSON.stringify(removed.json)).toBe(200)
    await simulator.waitFor(() => reactionSends().length === 2, "the business's reaction taken back at the simulator", 5_000)
    expect(reactionSends()[1]!.body).toMatchObject({ type: "reaction", reaction: { message_id: latestInboundWamid, emoji: "" } })
    await until(async () => (await reactionsOf()).length === 0, "the business's reaction taken back", 5_000, 50)
  })

  it("the customer reacts to our message: its reactions show the emoji; an empty emoji takes it back; the chat's list and unread count do not change", async () => {
    const listed = (await messagesOfChat()).map((message) => message.uuid)
    const reacted = await simulator.postInbound({ from: CUSTOMER_DIGITS, profile_name: "Sheena Nelson", message: reactionMessage(ourWamid, "👍") })
    expect(reacted.delivery.status).toBe(200)
    const reactionsOf = async (): Promise<Array<any>> => (await call("GET", `/messages/${ourUuid}`)).json.data.reactions
    await until(async () => (await reactionsOf()).length === 1, "the customer's reaction on our message", 5_000, 50)
    expect(await reactionsOf()).toEqual([{ emoji: "👍", by: "contact", at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T.*Z$/) }])
    expect((await messagesOfChat()).map((message) => message.uuid)).toEqual(listed)
    expect((await call("GET", `/chats/${chatUuid}`)).json.data.unread_count).toBe(0)

    const takenBack = await simulator.postInbound({ from: CUSTOMER_DIGITS, profile_name: "Sheena Nelson", message: reactionMessage(ourWamid, "") })
    expect(takenBack.delivery.status).toBe(200)
    await until(async () => (await reactionsOf()).length === 0, "the customer's reaction taken back", 5_000, 50)
    expect((await messagesOfChat()).map((message) => message.uuid)).toEqual(listed)
  })
})

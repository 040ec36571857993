import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { connectSimulator, startSimulator, textMessage, type WhatsAppSimulator } from "../src/index.js"
import { graph, startReceiver } from "./helpers.js"

// Meta's read receipt (`POST …/messages` with `status: "read"`): checked against Meta's
// rules, recorded, and listed by `readReceipts()` and the control API.

const TOKEN = "EAAGsimulator-read-token-0001"
const OTHER_TOKEN = "EAAGsimulator-read-token-0002"
const ID = "106540352242922"
const OTHER_ID = "106540352249999"

let simulator: WhatsAppSimulator
let receiver: Awaited<ReturnType<typeof startReceiver>>
beforeAll(async () => {
  receiver = await startReceiver()
  simulator = await startSimulator({
    numbers: [
      { phone_number_id: ID, display_phone_number: "+1 555-078-3881", waba_id: "102290129340398", access_token: TOKEN },
      { phone_number_id: OTHER_ID, display_phone_number: "+1 555-078-3882", waba_id: "102290129340398", access_token: OTHER_TOKEN }
    ]
  })
})
afterEach(() => {
  simulator.reset()
  simulator.configure({ webhookUrl: null })
})
afterAll(async () => {
  await simulator.close()
  await receiver.close()
})

/** A customer's message delivered to `phoneNumberId`; its wamid. */
const inbound = async (phoneNumberId = ID) => {
  simulator.configure({ webhookUrl: receiver.url })
  return (await simulator.postInbound({ from: "16505551234", profile_name: "Sheena", message: textMessage("Hi"), phone_number_id: phoneNumberId })).id
}

const markRead = (body: Record<string, unknown>, id = ID, token = TOKEN) => graph(simulator.url, `/v21.0/${id}/messages`, token, body)

describe("a read receipt", () => {
  it("of a delivered message: {success: true}, recorded with its message_id, with or without the typing indicator; no status webhook", async () => {
    const wamid = await inbound()
    const plain = await markRead({ messaging_product: "whatsapp", status: "read", message_id: wamid })
    expect([plain.status, plain.json]).toEqual([200, { success: true }])
    const typing = await markRead({ messaging_product: "whatsapp", status: "read", message_id: wamid, typing_indicator: { type: "text" } })
    expect(typing.json).toEqual({ success: true })
    expect(simulator.readReceipts()).toEqual([
      { seq: 1, at_ms: expect.any(Number), phone_number_id: ID, message_id: wamid, typing_indicator: false, accepted: true },
      { seq: 2, at_ms: expect.any(Number), phone_number_id: ID, message_id: wamid, typing_indicator: true, accepted: true }
    ])
    // Not a send: no wamid, no sends, no status notifications.
    expect(simulator.sends()).toEqual([])
    expect(simulator.received({ route: "mark_read" }).map((entry) => entry.wamid)).toEqual([null, null])
    expect(simulator.notifications().map((notification) => notification.kind)).toEqual(["inbound"])
    // The control API and the client list them too.
    expect(await connectSimulator(simulator.url).readReceipts()).toEqual(simulator.readReceipts())
    expect(await connectSimulator(simulator.url).readReceipts(OTHER_ID)).toEqual([])
  })

  it("status read is read before to: a read receipt needs no recipient and a body with to is still one", async () => {
    const wamid = await inbound()
    const answer = await markRead({ messaging_product: "whatsapp", status: "read", message_id: wamid, to: "16505551234" })
    expect(answer.json).toEqual({ success: true })
    expect(simulator.received().map((entry) => entry.route)).toEqual(["mark_read"])
  })

  it("refused as Meta does: no messaging_product or message_id, a bad typing indicator (100); an id this number never received (131009)", async () => {
    const wamid = await inbound()
    const otherWamid = await inbound(OTHER_ID)
    const cases: ReadonlyArray<[Record<string, unknown>, number, string]> = [
      [{ status: "read", message_id: wamid }, 100, "messaging_product"],
      [{ messaging_product: "whatsapp", status: "read" }, 100, "message_id"],
      [{ messaging_product: "whatsapp", status: "read", message_id: 42 }, 100, "message_id"],
      [{ messaging_product: "whatsapp", status: "read", message_id: wamid, typing_indicator: { type: "audio" } }, 100, "typing_indicator"],
      [{ messaging_product: "whatsapp", status: "read", message_id: wamid, typing_indicator: true }, 100, "typing_indicator"],
      [{ messaging_product: "whatsapp", status: "read", message_id: "wamid.unknown" }, 131009, "wamid.unknown"],
      // Another number's customer message.
      [{ messaging_product: "whatsapp", status: "read", message_id: otherWamid }, 131009, otherWamid]
    ]
    for (const [body, code, mentioned] of cases) {
      const answer = await markRead(body)
      expect(answer.status, JSON.stringify(body)).toBe(400)
      expect(answer.json.error.code, JSON.stringify(body)).toBe(code)
      expect(JSON.stringify(answer.json.error), JSON.stringify(body)).toContain(mentioned)
    }
    expect(simulator.readReceipts().map((call) => call.accepted)).toEqual(Array(cases.length).fill(false))
    // The other number's token reaches only its own number; its own message is accepted.
    expect((await markRead({ messaging_product: "whatsapp", status: "read", message_id: otherWamid }, OTHER_ID, OTHER_TOKEN)).json).toEqual({ success: true })
    // After a reset the simulator no longer knows the message.
    simulator.reset()
    expect((await markRead({ messaging_product: "whatsapp", status: "read", message_id: wamid })).json.error.code).toBe(131009)
  })

  it("follows the script of route mark_read (a 503, then success)", async () => {
    const wamid = await inbound()
    simulator.script.enqueue([{ http_status: 503 }], "mark_read")
    const body = { messaging_product: "whatsapp", status: "read", message_id: wamid }
    expect((await markRead(body)).status).toBe(503)
    expect((await markRead(body)).json).toEqual({ success: true })
    expect(simulator.readReceipts().map((call) => call.accepted)).toEqual([false, true])
  })
})

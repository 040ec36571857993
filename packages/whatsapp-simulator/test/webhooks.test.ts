import { createHmac } from "node:crypto"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { connectSimulator, sign, startSimulator, textMessage, locationMessage, type WhatsAppSimulator } from "../src/index.js"
import { graph, startReceiver, textSend } from "./helpers.js"

// What the simulator posts (status notifications, inbound messages, template updates),
// signed like Meta, and its control API, over real sockets.

const TOKEN = "EAAGsimulator-webhook-token-0001"
const APP_SECRET = "simulator-app-secret"
const NUMBER = { phone_number_id: "106540352242922", display_phone_number: "+1 555-078-3881", waba_id: "102290129340398", access_token: TOKEN }

let simulator: WhatsAppSimulator
let receiver: Awaited<ReturnType<typeof startReceiver>>
beforeAll(async () => {
  receiver = await startReceiver()
  simulator = await startSimulator({ numbers: [NUMBER], webhookUrl: receiver.url, appSecret: APP_SECRET, statusDelayMs: 5 })
})
afterEach(() => {
  simulator.reset()
  simulator.configure({ statuses: ["sent", "delivered", "read"], webhookUrl: receiver.url })
  receiver.deliveries.length = 0
})
afterAll(async () => {
  await simulator.close()
  await receiver.close()
})

const send = (to: string, extra: Record<string, unknown> = {}) => graph(simulator.url, `/v21.0/${NUMBER.phone_number_id}/messages`, TOKEN, textSend(to, "Hi", extra))
const hmac = (body: string) => `sha256=${createHmac("sha256", APP_SECRET).update(body).digest("hex")}`
const statusesOf = (body: string) => JSON.parse(body).entry[0].changes[0].value.statuses

describe("sign", () => {
  it("is sha256=<hex HMAC-SHA256 of the exact body> under the secret", () => {
    expect(sign("{}", "secret")).toBe("sha256=77325902caca812dc259733aacd046b73817372c777b8d95b402647474516e13")
    expect(sign('{"a":1}', APP_SECRET)).toBe(hmac('{"a":1}'))
    expect(sign('{"a":1}', APP_SECRET)).toMatch(/^sha256=[0-9a-f]{64}$/)
    expect(sign('{"a": 1}', APP_SECRET)).not.toBe(hmac('{"a":1}'))
  })
})

describe("status notifications", () => {
  it("after a send: sent, delivered, read in order, signed over the exact body, echoing biz_opaque_callback_data", async () => {
    const before = Math.floor(Date.now() / 1000)
    const answer = await send("+16505551234", { biz_opaque_callback_data: "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6a" })
    const wamid = answer.json.messages[0].id
    await simulator.waitFor(() => receiver.deliveries.length === 3, "three statuses")
    expect(receiver.deliveries.map((delivery) => statusesOf(delivery.body)[0].status)).toEqual(["sent", "delivered", "read"])
    for (const delivery of receiver.deliveries) {
      expect(delivery.headers["x-hub-signature-256"]).toBe(hmac(delivery.body))
      expect(delivery.headers["content-type"]).toBe("application/json")
      const payload = JSON.parse(delivery.body)
      expect(payload).toMatchObject({
        object: "whatsapp_business_account",
        entry: [{ id: NUMBER.waba_id, changes: [{ field: "messages", value: { messaging_product: "whatsapp", metadata: { display_phone_number: "15550783881", phone_number_id: NUMBER.phone_number_id } } }] }]
      })
      const [status] = statusesOf(delivery.body)
      expect(status).toMatchObject({ id: wamid, recipient_id: "16505551234", biz_opaque_callback_data: "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6a" })
      expect(Number(status.timestamp)).toBeGreaterThanOrEqual(before)
      expect(status.timestamp).toMatch(/^\d+$/)
    }
    expect(simulator.notifications().map((n) => [n.kind, n.wamid, n.status, n.delivery.status])).toEqual([
      ["status", wamid, "sent", 200],
      ["status", wamid, "delivered", 200],
      ["status", wamid, "read", 200]
    ])
  })

  it("without biz_opaque_callback_data in the send, none in the statuses; the configured statuses only", async () => {
    simulator.configure({ statuses: ["delivered"] })
    await send("16505551235")
    await simulator.waitFor(() => receiver.deliveries.length === 1, "one status")
    const [status] = statusesOf(receiver.deliveries[0]!.body)
    expect(status.status).toBe("delivered")
    expect(status).not.toHaveProperty("biz_opaque_callback_data")
  })

  it("a scripted failure posts failed with Meta's errors [{code, title, message, error_data}]", async () => {
    simulator.script.enqueue([{ failure: { code: 131026, details: "The recipient is not on WhatsApp." } }])
    const answer = await send("16505551236", { biz_opaque_callback_data: "cb-1" })
    expect(answer.status).toBe(200)
    await simulator.waitFor(() => receiver.deliveries.length === 1, "the failed status")
    const [status] = statusesOf(receiver.deliveries[0]!.body)
    expect(status).toMatchObject({
      id: answer.json.messages[0].id,
      status: "failed",
      biz_opaque_callback_data: "cb-1",
      errors: [{ code: 131026, title: "Message undeliverable", message: "Message undeliverable", error_data: { details: "The recipient is not on WhatsApp." } }]
    })
  })

  it("no statuses for a refused send, with statuses [] or without a webhook URL", async () => {
    simulator.script.enqueue([{ code: 131047 }, { statuses: [] }])
    await send("16505551237")
    await send("16505551238")
    simulator.configure({ webhookUrl: null })
    await send("16505551239")
    simulator.configure({ webhookUrl: receiver.url, statuses: ["read"] })
    await send("16505551240")
    await simulator.waitFor(() => receiver.deliveries.length === 1, "the one status")
    expect(statusesOf(receiver.deliveries[0]!.body)[0]).toMatchObject({ status: "read", recipient_id: "16505551240" })
  })
})

describe("inbound messages and template updates", () => {
  it("postInbound: a signed messages webhook stamped now, from the customer with a profile name", async () => {
    const before = Math.floor(Date.now() / 1000)
    const { id, delivery } = await simulator.postInbound({ from: "+1 650-555-1234", profile_name: "Sheena Nelson", message: textMessage("Hi there") })
    expect(delivery.status).toBe(200)
    const [received] = receiver.deliveries
    expect(received!.headers["x-hub-signature-256"]).toBe(hmac(received!.body))
    const value = JSON.parse(received!.body).entry[0].changes[0].value
    expect(value.contacts).toEqual([{ profile: { name: "Sheena Nelson" }, wa_id: "16505551234" }])
    expect(value.messages).toEqual([{ from: "16505551234", id, timestamp: expect.stringMatching(/^\d+$/), type: "text", text: { body: "Hi there" } }])
    expect(Number(value.messages[0].timestamp)).toBeGreaterThanOrEqual(before)
    expect(Number(value.messages[0].timestamp)).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000))
  })

  it("postInbound with a timestamp (and POST /_simulator/inbound with one): the message is stamped that time, as a customer's earlier message", async () => {
    const dayAgo = String(Math.floor(Date.now() / 1000) - 86_400)
    await simulator.postInbound({ from: "16505551234", profile_name: "Sheena", message: textMessage("Yesterday"), timestamp: dayAgo })
    const response = await fetch(`${simulator.url}/_simulator/inbound`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ from: "16505551234", profile_name: "Sheena", message: textMessage("Also yesterday"), timestamp: dayAgo })
    })
    expect(response.status).toBe(200)
    const stamps = receiver.deliveries.map((delivery) => JSON.parse(delivery.body).entry[0].changes[0].value.messages[0].timestamp)
    expect(stamps).toEqual([dayAgo, dayAgo])
  })

  it("postTemplateStatus: message_template_status_update routed by the account id", async () => {
    await simulator.postTemplateStatus({ event: "REJECTED", name: "summer_sale", language: "en_US", reason: "INVALID_FORMAT" })
    const payload = JSON.parse(receiver.deliveries[0]!.body)
    expect(payload.entry[0]).toMatchObject({
      id: NUMBER.waba_id,
      changes: [{ field: "message_template_status_update", value: { event: "REJECTED", message_template_name: "summer_sale", message_template_language: "en_US", reason: "INVALID_FORMAT", message_template_id: expect.any(Number) } }]
    })
    expect(payload.entry[0].changes[0].value).not.toHaveProperty("metadata")
  })

  it("a webhook that cannot be reached is recorded with its error, never thrown", async () => {
    simulator.configure({ webhookUrl: "http://127.0.0.1:9/webhooks/whatsapp" })
    const { delivery } = await simulator.postInbound({ from: "16505551234", profile_name: "A", message: locationMessage({ latitude: 1, longitude: 2 }) })
    expect(delivery).toMatchObject({ status: null, error: expect.stringMatching(/fetch failed/) })
  })
})

describe("the control API (/_simulator)", () => {
  const control = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${simulator.url}/_simulator${path}`, {
      method,
      ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
    })
    return { status: response.status, json: (await response.json()) as any }
  }

  it("scripts, reads what was received (token cut to its last four), resets", async () => {
    expect((await control("POST", "/script", { answers: [{ code: 131056 }] })).json).toEqual({ pending: 1 })
    expect((await control("PUT", "/recipients/%2B16505550009", { code: 131026 })).status).toBe(200)
    expect((await send("16505550001")).json.error.code).toBe(131056)
    expect((await send("16505550009")).json.error.code).toBe(131026)
    expect((await send("16505550001")).status).toBe(200)
    const { json } = await control("GET", `/received?route=messages&phone_number_id=${NUMBER.phone_number_id}`)
    expect(json.received.map((entry: any) => [entry.body.to, entry.answer.status])).toEqual([["16505550001", 429], ["16505550009", 400], ["16505550001", 200]])
    expect(json.received[0].authorization).toBe("Bearer …0001")
    expect(JSON.stringify(json)).not.toContain(TOKEN)
    expect((await control("POST", "/reset")).json).toEqual({ reset: true })
    expect((await control("GET", "/received")).json).toEqual({ received: [] })
    expect((await send("16505550009")).status).toBe(200)
  })

  it("settings and numbers never show the app secret or a token; a share and a default answer can be set", async () => {
    const settings = await control("GET", "/settings")
    expect(settings.json).toEqual({ webhook_url: receiver.url, app_secret_set: true, statuses: ["sent", "delivered", "read"], status_delay_ms: 5 })
    expect((await control("PUT", "/settings", { statuses: [] })).json.statuses).toEqual([])
    const added = await control("POST", "/numbers", { phone_number_id: "555", display_phone_number: "+1 555-000-0555", waba_id: "9", access_token: "EAAGadded-0555" })
    expect(added.json.numbers[1]).toEqual({ phone_number_id: "555", display_phone_number: "+1 555-000-0555", waba_id: "9", access_token_last4: ["0555"] })
    expect(JSON.stringify([settings.json, added.json])).not.toMatch(new RegExp(`${APP_SECRET}|${TOKEN}|EAAGadded`))
    expect((await control("PUT", "/share", { fraction: 1, seed: 7, answer: { code: 4 } })).status).toBe(200)
    expect((await send("16505550010")).json.error.code).toBe(4)
    expect((await control("DELETE", "/share")).status).toBe(200)
    expect((await control("PUT", "/default", { http_status: 503 })).status).toBe(200)
    expect((await send("16505550011")).status).toBe(503)
  })

  it("connectSimulator drives it from another process: script, recipients, inbound, received, reset", async () => {
    const client = connectSimulator(simulator.url)
    simulator.configure({ statuses: [] })
    expect(await client.script([{ code: 130429 }])).toEqual({ pending: 1 })
    await client.refuseRecipient("+16505550020", { code: 131026 })
    expect((await send("16505550021")).json.error.code).toBe(130429)
    expect((await send("16505550020")).json.error.code).toBe(131026)
    await client.clearRecipient("16505550020")
    expect((await send("16505550020")).status).toBe(200)
    const received = await client.received({ route: "messages" })
    expect(received.map((entry) => (entry.answer as { status: number }).status)).toEqual([429, 400, 200])
    expect(received[2]!.wamid).toBe(simulator.sends()[2]!.wamid)
    expect(await client.receivedCount({ route: "messages" })).toEqual({ count: 3, answered: 3 })
    expect(await client.receivedCount({ route: "messages", phone_number_id: "nobody" })).toEqual({ count: 0, answered: 0 })
    const inbound = await client.postInbound({ from: "16505550022", profile_name: "Ravi", message: textMessage("hello") })
    expect(inbound.delivery.status).toBe(200)
    expect(JSON.parse(receiver.deliveries.at(-1)!.body).entry[0].changes[0].value.messages[0].id).toBe(inbound.id)
    expect((await client.notifications()).map((n) => n.kind)).toEqual(["inbound"])
    await client.reset()
    expect(await client.received()).toEqual([])
    expect(await client.receivedCount()).toEqual({ count: 0, answered: 0 })
    await expect(client.script([{ drop: "never" as "close" }])).rejects.toThrow(/drop must be/)
  })

  it("answers 400 naming the problem for a bad body, 404 for an unknown route", async () => {
    expect(await control("POST", "/script", { answers: [{ code: "x" }] })).toEqual({ status: 400, json: { error: { message: "code must be an integer from 0 to 99999999" } } })
    expect((await control("PUT", "/settings", { webhook_url: "ftp://x" })).json.error.message).toMatch(/webhookUrl must be an http/)
    expect((await control("POST", "/numbers", { phone_number_id: "12a", waba_id: "1", access_token: "t" })).status).toBe(400)
    expect((await control("GET", "/nothing")).status).toBe(404)
  })
})

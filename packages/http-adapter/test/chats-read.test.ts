import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Effect, Layer } from "effect"
import { ChannelVerifier } from "@switchboard/core"
import { DEFAULT_BASE_PATH, defaultRoutes, openApiDocument, type SwitchboardHandler } from "@switchboard/http-adapter"
import { startSimulator, textMessage, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"
import { receive } from "./chats-helpers.js"
import { type ApiClient, type ApiResult, expectEnvelope, listen, makeHandler, makeSharedStorage, makeTenant, phone, request, UNKNOWN_UUID } from "./helpers.js"

// `POST /chats/{uuid}/read` (docs/chats.md "Read receipts"): the optional body, the local
// read that always commits, the `read_receipt` of the answer; and end to end through the
// WhatsApp Cloud transport, Meta being the simulator.

const handlers: Array<SwitchboardHandler> = []
const closers: Array<() => Promise<void>> = []
afterAll(async () => {
  for (const close of closers) await close()
  await Promise.all(handlers.map((each) => each.dispose()))
})

describe("POST /chats/{uuid}/read on the recording transport", () => {
  const storage = makeSharedStorage()
  const handler = makeHandler(storage)
  handlers.push(handler)

  /** A tenant with one chat of two inbound messages (provider ids, no channel). */
  const tenantWithChat = async () => {
    const made = await makeTenant(storage, handler)
    await receive(storage, made.organization.id, phone(1), 1, { provider_message_id: "wamid.first" })
    const chat = await receive(storage, made.organization.id, phone(1), 2, { provider_message_id: "wamid.second" })
    return { ...made, chat }
  }

  it("without a body, with {} or {typing}: 200, unread_count 0, the chat with its read_receipt; the message becomes read", async () => {
    const { api, apiKey, chat } = await tenantWithChat()
    expect(chat.unread_count).toBe(2)
    // No body at all: no Content-Type, no Content-Length.
    const bare = await request(handler, { method: "POST", url: `/api/v1/api/chats/${chat.uuid}/read`, headers: { authorization: `Bearer ${apiKey}` } })
    const read = expectEnvelope(bare.statusCode, bare.body)
    expect([read.status, read.message]).toEqual([200, "Chat marked read"])
    const latest = (await api.get(`/chats/${chat.uuid}/messages`)).data.messages[0]
    expect(latest).toMatchObject({ direction: "inbound", provider_message_id: "wamid.second", status: "read" })
    expect(read.data).toMatchObject({
      uuid: chat.uuid,
      unread: false,
      unread_count: 0,
      read_receipt: { status: "skipped", message_uuid: latest.uuid, reason: "no_channel", failure: null }
    })
    const { read_receipt: _receipt, ...readChat } = read.data
    expect((await api.get(`/chats/${chat.uuid}`)).data).toEqual(readChat)
    // Again, with a body: nothing more to send.
    for (const body of [{}, { typing: true }]) {
      const again = await api.post(`/chats/${chat.uuid}/read`, body)
      expect(again.status).toBe(200)
      expect(again.data.read_receipt).toEqual({ status: "skipped", message_uuid: latest.uuid, reason: "already_read", failure: null })
    }
  })

  it("typing not a boolean → 400 naming it, nothing written; a body that is not JSON → 415; an unknown chat → 404", async () => {
    const { api, apiKey, chat } = await tenantWithChat()
    for (const typing of ["yes", 1, { on: true }]) {
      const refused = await api.post(`/chats/${chat.uuid}/read`, { typing })
      expect(refused.status).toBe(400)
      expect(refused.errors.map((error) => error.field)).toEqual(["typing"])
    }
    const text = await request(handler, {
      method: "POST",
      url: `/api/v1/api/chats/${chat.uuid}/read`,
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "text/plain" },
      payload: "typing"
    })
    expect(expectEnvelope(text.statusCode, text.body).errors[0]?.code).toBe("unsupported_media_type")
    expect((await api.get(`/chats/${chat.uuid}`)).data).toMatchObject({ unread_count: 2 })
    expect((await api.get(`/chats/${chat.uuid}/messages`)).data.messages.map((message: { status: string }) => message.status)).toEqual(["delivered", "delivered"])
    expect((await api.post(`/chats/${UNKNOWN_UUID}/read`, undefined)).status).toBe(404)
  })
})

describe("POST /chats/{uuid}/read in the OpenAPI document", () => {
  it("its body is optional, with typing a boolean; its data is the chat plus read_receipt", () => {
    const document = openApiDocument({ basePath: DEFAULT_BASE_PATH, routes: defaultRoutes }) as any
    const operation = document.paths["/chats/{uuid}/read"].post
    expect(operation.requestBody.required).toBe(false)
    expect(operation.requestBody.content["application/json"].schema.properties.typing).toMatchObject({ type: "boolean" })
    const text = JSON.stringify(document)
    for (const word of ["read_receipt", "transport_unsupported", "already_read", "message_uuid"]) expect(text).toContain(word)
    // Every other POST with a body still requires it.
    expect(document.paths["/send"].post.requestBody.required).toBe(true)
  })
})

describe("POST /chats/{uuid}/read through the WhatsApp Cloud transport (the simulator as Meta)", () => {
  const APP_SECRET = "read-receipts-app-secret"
  const SECRET_KEY = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
  const TOKEN = "EAAGread-receipts-token-0001"
  const NUMBER = { phone_number_id: "306540352240001", display_phone_number: "+1 555-078-3881", waba_id: "102290129340398", access_token: TOKEN }
  const CUSTOMER = "16505551234"
  let simulator: WhatsAppSimulator
  let setup: { api: ApiClient; fetchApi: (method: string, path: string, body?: unknown) => Promise<ApiResult> }

  beforeAll(async () => {
    simulator = await startSimulator({ numbers: [NUMBER], appSecret: APP_SECRET })
    closers.push(() => simulator.close())
    const storage = makeSharedStorage()
    const handler = makeHandler(storage, {
      whatsapp: { appSecret: APP_SECRET },
      secretKey: SECRET_KEY,
      channelVerifier: Layer.succeed(ChannelVerifier, { verify: () => Effect.succeed({ display_phone_number: NUMBER.display_phone_number }) }),
      graphApi: { baseUrl: simulator.url, apiVersion: "v22.0" }
    })
    handlers.push(handler)
    const server = await listen(handler)
    closers.unshift(server.close)
    simulator.configure({ webhookUrl: `${server.base}/webhooks/whatsapp` })
    const tenant = await makeTenant(storage, handler)
    const channel = await tenant.api.post("/channels", { phone_number_id: NUMBER.phone_number_id, waba_id: NUMBER.waba_id, access_token: TOKEN })
    expect(channel.status, JSON.stringify(channel.errors)).toBe(200)
    setup = { api: tenant.api, fetchApi: (method, path, body) => server.fetchApi(tenant.apiKey, method, path, body) }
  })

  /** The customer writes `count` messages through the simulator; their wamids, oldest first, and the chat. */
  const customerWrites = async (count: number) => {
    const wamids: Array<string> = []
    for (let index = 0; index < count; index++) {
      const { id, delivery } = await simulator.postInbound({ from: CUSTOMER, profile_name: "Sheena", message: textMessage(`Message ${index}`) })
      expect(delivery.status).toBe(200)
      wamids.push(id)
      // Distinct created_at instants, so "latest" is not a tie.
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    const chat = (await setup.api.get("/chats")).data.chats[0]
    return { wamids, chat }
  }

  it("Meta receives the read receipt of the latest inbound message (with the typing indicator when asked); unread_count 0; a second call sends nothing", async () => {
    const { wamids, chat } = await customerWrites(2)
    expect(chat.unread_count).toBe(2)
    const read = await setup.fetchApi("POST", `/chats/${chat.uuid}/read`, { typing: true })
    expect(read.status, JSON.stringify(read.errors)).toBe(200)
    const messages = (await setup.api.get(`/chats/${chat.uuid}/messages`)).data.messages
    expect(messages.map((message: { provider_message_id: string; status: string }) => [message.provider_message_id, message.status])).toEqual([
      [wamids[1], "read"],
      [wamids[0], "delivered"]
    ])
    expect(read.data).toMatchObject({ uuid: chat.uuid, unread_count: 0, unread: false, read_receipt: { status: "sent", message_uuid: messages[0].uuid, reason: null, failure: null } })
    expect(simulator.readReceipts()).toEqual([
      expect.objectContaining({ phone_number_id: NUMBER.phone_number_id, message_id: wamids[1], typing_indicator: true, accepted: true })
    ])
    const [call] = simulator.received({ route: "mark_read" })
    expect(call?.authorization).toBe(`Bearer ${TOKEN}`)
    expect(call?.path).toBe(`/v22.0/${NUMBER.phone_number_id}/messages`)
    expect(call?.body).toEqual({ messaging_product: "whatsapp", status: "read", message_id: wamids[1], typing_indicator: { type: "text" } })
    expect((await setup.api.get(`/chats/${chat.uuid}`)).data).toMatchObject({ unread_count: 0 })
    // Idempotent: already read, Meta is not called again. Without a body (fetch sends Content-Length: 0).
    const again = await setup.fetchApi("POST", `/chats/${chat.uuid}/read`)
    expect(again.data.read_receipt).toMatchObject({ status: "skipped", reason: "already_read" })
    expect(simulator.readReceipts()).toHaveLength(1)
    // A new message: read again, without the typing indicator.
    const { wamids: next } = await customerWrites(1)
    expect((await setup.api.post(`/chats/${chat.uuid}/read`, undefined)).data.read_receipt.status).toBe("sent")
    expect(simulator.readReceipts().at(-1)).toMatchObject({ message_id: next[0], typing_indicator: false, accepted: true })
    expect(simulator.received({ route: "mark_read" }).at(-1)?.body).toEqual({ messaging_product: "whatsapp", status: "read", message_id: next[0] })
    // No send went out for any of it.
    expect(simulator.sends()).toEqual([])
  })

  it("Meta unavailable twice: 200, the local read committed, read_receipt failed, the message still delivered; the next call sends it", async () => {
    const { wamids, chat } = await customerWrites(1)
    const before = simulator.readReceipts().length
    simulator.script.enqueue([{ code: 131000, http_status: 500 }, { code: 131000, http_status: 500 }], "mark_read")
    const read = await setup.api.post(`/chats/${chat.uuid}/read`, undefined)
    expect(read.status).toBe(200)
    expect(read.data).toMatchObject({ unread_count: 0, read_receipt: { status: "failed", reason: null, failure: { code: "131000" } } })
    expect(simulator.readReceipts().slice(before).map((call) => [call.message_id, call.accepted])).toEqual([
      [wamids[0], false],
      [wamids[0], false]
    ])
    expect((await setup.api.get(`/chats/${chat.uuid}`)).data.unread_count).toBe(0)
    expect((await setup.api.get(`/chats/${chat.uuid}/messages`)).data.messages[0]).toMatchObject({ provider_message_id: wamids[0], status: "delivered" })
    expect((await setup.api.post(`/chats/${chat.uuid}/read`, undefined)).data.read_receipt.status).toBe("sent")
    expect(simulator.readReceipts().at(-1)).toMatchObject({ message_id: wamids[0], accepted: true })
  })
})

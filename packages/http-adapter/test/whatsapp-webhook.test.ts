import { readFileSync } from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Effect, Layer, Logger } from "effect"
import { ChannelVerifier, type OrganizationId, Storage, StorageError, type StorageService } from "@switchboard/core"
import { createFetchHandler, type SwitchboardHandler } from "@switchboard/http-adapter"
import { inboundMessagePayload, sign, startSimulator, textMessage, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"
import { expectEnvelope, makeHandler, makeSharedStorage, makeTenant, request, settledSend } from "./helpers.js"

// POST /webhooks/whatsapp end to end in the handler (docs/whatsapp-webhooks.md): signature
// over the raw bytes, routing by phone_number_id, what is stored, the answer after
// storing, a storage failure as a 500, and sends and automatic replies through the
// channel's number and token (the WhatsApp simulator standing in for the Graph API).

const APP_SECRET = "webhook-app-secret"
const SECRET_KEY = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
const TOKEN = "EAAGwebhookHTTPtoken-00000000000042"
const PHONE_NUMBER_ID = "106540352242922"
const WABA_ID = "102290129340398"

/** Meta's timestamp of the fixtures' inbound messages, stamped now: free-form replies need the customer service window open. */
const FIXTURE_TIMESTAMP = "1749416383"
const NOW_SECONDS = String(Math.floor(Date.now() / 1000))

const fixtureText = (name: string): string =>
  readFileSync(new URL(`../../core/test/fixtures/whatsapp/${name}.json`, import.meta.url), "utf8").replaceAll(
    `"${FIXTURE_TIMESTAMP}"`,
    `"${NOW_SECONDS}"`
  )

/** The WhatsApp simulator stands in for the Graph API: each test's number is added to it, every send answered with a new wamid. */
let simulator: WhatsAppSimulator
let graphUrl = ""
beforeAll(async () => {
  simulator = await startSimulator()
  graphUrl = simulator.url
})
afterAll(() => simulator.close())

/** The messages POSTs the simulator received: URL, bearer header, body. */
const graphCalls = () => simulator.sends().map(({ authorization, body, path }) => ({ url: path, authorization: authorization ?? undefined, body }))

const acceptingVerifier = Layer.succeed(ChannelVerifier, {
  verify: () => Effect.succeed({ display_phone_number: "+1 555-078-3881" })
})

const handlers: Array<SwitchboardHandler> = []
afterAll(() => Promise.all(handlers.map((handler) => handler.dispose())))

/** POSTs `body` signed with `signature` (default: the right one, under APP_SECRET; `null`: no header). */
const post = (handler: SwitchboardHandler, body: string, signature: string | null = sign(body, APP_SECRET)) =>
  request(handler, {
    method: "POST",
    url: "/api/v1/api/webhooks/whatsapp",
    headers: { "content-type": "application/json", ...(signature === null ? {} : { "x-hub-signature-256": signature }) },
    payload: body
  })

/** Each test uses its own phone_number_id, so tests on one shared store never see each other's webhooks. */
let nextNumber = 0
const withNumber = (body: string, phoneNumberId: string) => body.replaceAll(PHONE_NUMBER_ID, phoneNumberId)

const statuses = (phoneNumberId: string, list: ReadonlyArray<[string, string]>) =>
  JSON.stringify({
    object: "whatsapp_business_account",
    entry: [
      {
        id: WABA_ID,
        changes: [
          {
            field: "messages",
            value: {
              messaging_product: "whatsapp",
              metadata: { display_phone_number: "15550783881", phone_number_id: phoneNumberId },
              statuses: list.map(([id, status]) => ({ id, status, timestamp: "1749416400", recipient_id: "16505551234" }))
            }
          }
        ]
      }
    ]
  })

/** A text from WhatsApp id `from` to the business number `phoneNumberId` (the simulator's payload builder). */
const textFrom = (phoneNumberId: string, from: string, id: string, body: string) =>
  JSON.stringify(
    inboundMessagePayload({
      number: { phone_number_id: phoneNumberId, display_phone_number: "+1 555-078-3881", waba_id: WABA_ID },
      from,
      profile_name: "Customer",
      id,
      timestamp: NOW_SECONDS,
      message: textMessage(body)
    })
  )

/** The refused webhook parts kept in `storage`, newest first (of one organization when given). */
const rejectsOf = (storage: Layer.Layer<Storage>, organizationId?: OrganizationId) =>
  Effect.runPromise(
    Effect.flatMap(Storage, (store) => store.webhookRejects.list({ limit: 100, ...(organizationId === undefined ? {} : { organizationId }) })).pipe(
      Effect.provide(storage)
    )
  )

/** A fresh handler and tenant whose channel has a number of its own; the fixtures rewritten to it. */
const freshChannel = async (
  options: { readonly storage?: Layer.Layer<Storage>; readonly logger?: Logger.Logger<unknown, unknown> } = {}
) => {
  const phoneNumberId = String(206540352240000 + ++nextNumber)
  simulator.addNumber({ phone_number_id: phoneNumberId, display_phone_number: "+1 555-078-3881", waba_id: WABA_ID, access_token: TOKEN })
  const storage = options.storage ?? makeSharedStorage()
  const handler = makeHandler(storage, {
    whatsapp: { appSecret: APP_SECRET },
    secretKey: SECRET_KEY,
    channelVerifier: acceptingVerifier,
    graphApi: { baseUrl: graphUrl, apiVersion: "v22.0" },
    ...(options.logger === undefined ? {} : { logger: options.logger })
  })
  handlers.push(handler)
  const tenant = await makeTenant(storage, handler)
  const channel = await tenant.api.post("/channels", { phone_number_id: phoneNumberId, waba_id: WABA_ID, access_token: TOKEN })
  expect(channel.status, JSON.stringify(channel.errors)).toBe(200)
  return { handler, phoneNumberId, channel: channel.data as { uuid: string }, fixture: (name: string) => withNumber(fixtureText(name), phoneNumberId), ...tenant }
}

describe("POST /webhooks/whatsapp", () => {
  it("stores an inbound text from a new number: contact named by the profile, unread chat, 200 {received: 1} once stored; a redelivery changes nothing", async () => {
    const { api, channel, fixture, handler } = await freshChannel()
    const body = fixture("text")
    const response = await post(handler, body)
    expect(expectEnvelope(response.statusCode, response.body).data).toEqual({ received: 1 })
    const chats = await api.get("/chats")
    expect(chats.data.chats).toHaveLength(1)
    expect(chats.data.chats[0]).toMatchObject({ unread_count: 1, contact: { phone: "+16505551234", first_name: "Sheena Nelson" } })
    const messages = await api.get(`/chats/${chats.data.chats[0].uuid}/messages`)
    expect(messages.data.messages).toEqual([
      expect.objectContaining({ direction: "inbound", type: "text", text: "Does it come in another color?", provider_message_id: "wamid.text1", channel_uuid: channel.uuid })
    ])
    expect(expectEnvelope(200, (await post(handler, body)).body).data).toEqual({ received: 1 })
    expect((await api.get(`/chats/${chats.data.chats[0].uuid}/messages`)).data.messages).toHaveLength(1)
  })

  it("401 invalid_signature and nothing stored: wrong secret, missing header, the same JSON re-serialized", async () => {
    const { api, fixture, handler } = await freshChannel()
    const body = fixture("text")
    const reformatted = JSON.stringify(JSON.parse(body))
    for (const [payload, signature] of [
      [body, sign(body, "not-the-secret")],
      [body, null],
      [reformatted, sign(body, APP_SECRET)]
    ] as const) {
      const response = await post(handler, payload, signature)
      expect(response.statusCode).toBe(401)
      expect(expectEnvelope(401, response.body).errors[0]?.code).toBe("invalid_signature")
    }
    expect((await api.get("/chats")).data.chats).toEqual([])
    expect((await api.get("/contacts")).data.contacts).toEqual([])
  })

  it("a number no channel has: 200 {received: 0}, nothing stored, not even as refused", async () => {
    const storage = makeSharedStorage()
    const { api, handler } = await freshChannel({ storage })
    const body = withNumber(fixtureText("text"), "999999999999")
    expect(expectEnvelope(200, (await post(handler, body)).body).data).toEqual({ received: 0 })
    expect((await api.get("/chats")).data.chats).toEqual([])
    expect(await rejectsOf(storage)).toEqual([])
  })

  it("a sender number libphonenumber-js calls invalid (from 999123): its contact (+999123, phone_valid false) and message are stored, and a send answers it", async () => {
    const { api, handler, phoneNumberId } = await freshChannel()
    const response = await post(handler, textFrom(phoneNumberId, "999123", "wamid.odd1", "Is anyone there?"))
    expect(expectEnvelope(response.statusCode, response.body).data).toEqual({ received: 1 })
    const chats = (await api.get("/chats")).data.chats
    expect(chats).toHaveLength(1)
    expect(chats[0]).toMatchObject({ unread_count: 1, contact: { phone: "+999123" } })
    const messages = await api.get(`/chats/${chats[0].uuid}/messages`)
    expect(messages.data.messages.map((message: { text: string }) => message.text)).toEqual(["Is anyone there?"])
    const contact = await api.get(`/contacts/${chats[0].contact.uuid}`)
    expect(contact.data).toMatchObject({ phone: "+999123", phone_valid: false })
    const before = graphCalls().length
    // Sent inline, or, when that attempt was late for its pacing slot (a loaded machine),
    // handed back and sent by the dispatcher just after: settledSend answers as inline.
    const sent = await settledSend(api, await api.post("/send", { phone: "+999123", message: "Yes, how can we help?" }))
    expect(sent.status, JSON.stringify(sent.errors)).toBe(200)
    expect(sent.data).toMatchObject({ chat_uuid: chats[0].uuid, contact_uuid: chats[0].contact.uuid, status: "sent" })
    expect(graphCalls().slice(before).map((call) => (call.body as { to: string }).to)).toEqual(["999123"])
    const other = await api.post("/send", { phone: "+999124", message: "Hello" })
    expect(other.status).toBe(400)
    expect(other.errors).toEqual([expect.objectContaining({ code: "invalid_format", field: "phone" })])
  })

  it("an empty text is answered 200 but kept as refused with its raw JSON and organization; log lines of the routed change carry the organization id", async () => {
    const lines: Array<Record<string, unknown>> = []
    const logger = Logger.make(({ annotations, message }) => {
      lines.push({ message: String(message), ...Object.fromEntries(annotations) })
    })
    const storage = makeSharedStorage()
    const { api, handler, organization, phoneNumberId } = await freshChannel({ storage, logger })
    const response = await post(handler, textFrom(phoneNumberId, "16505551234", "wamid.empty1", ""))
    expect(expectEnvelope(response.statusCode, response.body).data).toEqual({ received: 1 })
    expect((await api.get("/chats")).data.chats).toEqual([])
    const rejects = await rejectsOf(storage, organization.id)
    expect(rejects.map((reject) => [reject.organization_id, reject.phone_number_id, reject.reason, reject.item])).toEqual([
      [organization.id, phoneNumberId, "text: required", { from: "16505551234", id: "wamid.empty1", timestamp: NOW_SECONDS, type: "text", text: { body: "" } }]
    ])
    const refused = lines.filter((line) => String(line.message).startsWith("WhatsApp webhook:"))
    expect(refused.map((line) => [line.organization_id, line.provider_message_id])).toEqual([[organization.id, "wamid.empty1"]])
    // The request's own line names the organization the webhook was routed to; an unrouted one names none.
    await post(handler, textFrom("999999999999", "16505551234", "wamid.elsewhere", "Hi"))
    const requests = lines.filter((line) => line.message === "request" && line.route === "/webhooks/whatsapp")
    expect(requests.map((line) => line.organization_id)).toEqual([organization.id, null])
    expect(JSON.stringify(rejects)).not.toContain(APP_SECRET)
  })

  it("a send goes to the Graph API with the channel's number and token; delivered and read (in any order, repeated) end read", async () => {
    const { api, fixture, handler, phoneNumberId } = await freshChannel()
    // The customer writes first (stamped now): a free-form reply needs the customer service window open.
    expect((await post(handler, fixture("text"))).statusCode).toBe(200)
    const before = graphCalls().length
    // On a loaded machine the inline attempt may be late for its pacing slot, handed back and
    // sent by the dispatcher just after: settledSend answers as inline.
    const sent = await settledSend(api, await api.post("/send", { phone: "+16505551234", message: "Your order shipped" }))
    expect(sent.status, JSON.stringify(sent.errors)).toBe(200)
    expect([sent.message, sent.data.status]).toEqual(["Message sent", "sent"])
    expect(graphCalls().length - before).toBe(1)
    const call = graphCalls()[before]!
    expect(call).toMatchObject({ url: `/v22.0/${phoneNumberId}/messages`, authorization: `Bearer ${TOKEN}`, body: { to: "16505551234", type: "text" } })
    const wamid = simulator.sends()[before]!.wamid!
    expect(wamid).toMatch(/^wamid\./)
    expect(sent.data.provider_message_id).toBe(wamid)
    expect((await api.get(`/messages/${sent.data.message_id}`)).data.provider_message_id).toBe(wamid)
    const deliveries: ReadonlyArray<ReadonlyArray<[string, string]>> = [[[wamid, "read"]], [[wamid, "delivered"]], [[wamid, "read"], [wamid, "delivered"]]]
    for (const list of deliveries) {
      const response = await post(handler, statuses(phoneNumberId, list))
      expect(expectEnvelope(response.statusCode, response.body).data).toEqual({ received: 1 })
    }
    const messages = await api.get(`/chats/${sent.data.chat_uuid}/messages`)
    expect(messages.data.messages.find((message: { uuid: string }) => message.uuid === sent.data.message_id)).toMatchObject({
      status: "read",
      provider_message_id: wamid
    })
  })

  it("answers a basic reply's trigger through the same channel; the token appears in no response and no log line", async () => {
    const lines: Array<string> = []
    const logger = Logger.make(({ annotations, message }) => lines.push(JSON.stringify({ message, annotations: [...annotations] })))
    const { api, fixture, handler, phoneNumberId } = await freshChannel({ logger })
    const reply = await api.post("/basic-replies", { name: "Colors", trigger: "does it come in another color?", response: "Red and blue." })
    expect(reply.status, JSON.stringify(reply.errors)).toBe(200)
    const before = graphCalls().length
    const response = await post(handler, fixture("text"))
    expect(response.statusCode).toBe(200)
    // The reply is queued with the inbound message; the handler's dispatcher sends it at once.
    await expect.poll(() => graphCalls().length).toBe(before + 1)
    expect(graphCalls().slice(before)).toEqual([
      expect.objectContaining({ url: `/v22.0/${phoneNumberId}/messages`, authorization: `Bearer ${TOKEN}`, body: expect.objectContaining({ text: { preview_url: false, body: "Red and blue." } }) })
    ])
    expect(response.body).not.toContain(TOKEN)
    const chat = (await api.get("/chats")).data.chats[0]
    const messages = await api.get(`/chats/${chat.uuid}/messages`)
    expect(messages.data.messages.map((message: { direction: string }) => message.direction)).toEqual(["outbound", "inbound"])
    expect(JSON.stringify(messages.data)).not.toContain(TOKEN)
    expect(lines.length).toBeGreaterThan(0)
    expect(lines.join("\n")).not.toContain(TOKEN)
  })

  it("an unknown channel_uuid on a send is a 404 naming the field, and nothing is written", async () => {
    const { api } = await freshChannel()
    const result = await api.post("/send", { phone: "+16505550000", message: "x", channel_uuid: "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6a" })
    expect(result.status).toBe(404)
    expect(result.errors[0]).toMatchObject({ code: "not_found", field: "channel_uuid" })
    expect((await api.get("/contacts")).data.contacts).toEqual([])
  })

  it("a storage failure while storing is a 500 (Meta retries), never an acknowledgement", async () => {
    const shared = makeSharedStorage()
    const service = Effect.runSync(Effect.provide(Storage, shared))
    let failing = false
    const failingStorage = Layer.succeed(Storage, {
      ...service,
      chats: {
        ...service.chats,
        appendMessage: (organizationId, request) =>
          failing ? Effect.fail(new StorageError({ operation: "appendMessage", cause: new Error("disk full") })) : service.chats.appendMessage(organizationId, request)
      }
    } satisfies StorageService)
    const { fixture, handler } = await freshChannel({ storage: failingStorage })
    failing = true
    const response = await post(handler, fixture("text"))
    expect(response.statusCode).toBe(500)
    expect(response.body).not.toContain("disk full")
    failing = false
    expect(expectEnvelope(200, (await post(handler, fixture("text"))).body).data).toEqual({ received: 1 })
  })

  it("is served by the Fetch handler too, with the same signature rule", async () => {
    const storage = makeSharedStorage()
    const { fixture } = await freshChannel({ storage })
    const fetchHandler = createFetchHandler({
      storage,
      logger: false,
      whatsapp: { appSecret: APP_SECRET },
      secretKey: SECRET_KEY,
      channelVerifier: acceptingVerifier,
      graphApi: { baseUrl: graphUrl }
    })
    const body = fixture("text")
    const call = (signature: string) =>
      fetchHandler(
        new Request("http://localhost/api/v1/api/webhooks/whatsapp", {
          method: "POST",
          headers: { "content-type": "application/json", "x-hub-signature-256": signature },
          body
        })
      )
    const refused = await call(sign(body, "wrong"))
    expect(refused.status).toBe(401)
    const accepted = await call(sign(body, APP_SECRET))
    expect(expectEnvelope(accepted.status, await accepted.text()).data).toEqual({ received: 1 })
    await fetchHandler.dispose()
  })
})

/**
 * `@switchboard/client` against the built standalone server (docs/client.md): every
 * operation of the client's method table is called through the client at least once (a
 * test compares the operations the server saw with the table), a send whose connection is
 * dropped before the answer is retried with the same Idempotency-Key and sent once, 250
 * contacts iterate 100 a page each once, a 404 is a NotFoundError with its code and request
 * id, and a real signed delivery passes `verifyWebhook`. The calls succeed where that is
 * cheap to arrange: a customer's message (posted by the simulator, signed as Meta signs it)
 * opens the customer service window for the free-form sends, the reaction and the read
 * receipt; a send the simulator refuses for good fails, so it can be retried; a delivered
 * webhook delivery is sent again. One server (and one WhatsApp simulator) for the file; the
 * tests run in order and share what they create.
 */
import { connect, createServer as createTcpServer, type AddressInfo, type Server as TcpServer, type Socket } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ApiError, ConflictError, createClient, METHODS, NotFoundError, OPERATIONS, verifyWebhook, type Client, type OperationId } from "@switchboard/client"
import { startSimulator, textMessage, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"
import { readFileSync } from "node:fs"
import { generatedFiles } from "../../../packages/client/scripts/generate.mjs"
import { assertBuilt, killServers, organizationWithChannel, pdfBytes, removeTemporaryDirectories, startServer, until, type RunningServer, type ReceivedDelivery, startWebhookReceiver } from "./helpers.js"

const TOKEN = "EAAGclientToken4Rt7Yu1Io3Pa5Sd"
const PHONE_NUMBER_ID = "106540352280011"
const SECOND_PHONE_NUMBER_ID = "106540352280012"
const SECOND_TOKEN = "EAAGclientSecondToken9Xc2Vb4Nm"
const WABA_ID = "102290129340398"
/** The app secret Meta (here the simulator) signs its webhooks with, and the server checks. */
const APP_SECRET = "client-test-app-secret-5d1f"

let simulator: WhatsAppSimulator
let server: RunningServer
let apiKey: string
let client: Client
/** The operationId of every request the client sent (matched from its method and path). */
const called = new Set<OperationId>()

/** The operationId of a request the client sends, from its method and URL path under the base. */
const operationOf = (method: string, path: string): OperationId | undefined =>
  (Object.entries(OPERATIONS) as Array<[OperationId, (typeof OPERATIONS)[OperationId]]>).find(
    ([, operation]) =>
      operation.method === method && new RegExp(`^${operation.path.replace(/\{[^}]+\}/g, "[^/]+")}$`).test(path)
  )?.[0]

/** `fetch` recording the operation of every request. */
const recordingFetch: typeof fetch = (input, init) => {
  const url = new URL(input instanceof Request ? input.url : String(input))
  const path = url.pathname.slice("/api/v1/api".length)
  const operation = operationOf((init?.method ?? "GET").toUpperCase(), path)
  if (operation !== undefined) called.add(operation)
  return fetch(input, init)
}

/** A call's outcome: "ok", or its ApiError's code (so a failed expectation names the refusal). */
const refusal = (promise: Promise<unknown>): Promise<string> =>
  promise.then(
    () => "ok",
    (error: unknown) => {
      if (error instanceof ApiError) return error.code
      throw error
    }
  )

/** Deliveries received by the local webhook receiver: raw body and headers. */
const received: Array<ReceivedDelivery> = []
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>> | undefined
let receiverUrl: string

beforeAll(async () => {
  assertBuilt()
  simulator = await startSimulator({
    numbers: [
      { phone_number_id: PHONE_NUMBER_ID, display_phone_number: "+31 6 1234 5601", waba_id: WABA_ID, access_token: TOKEN },
      { phone_number_id: SECOND_PHONE_NUMBER_ID, display_phone_number: "+31 6 1234 5602", waba_id: WABA_ID, access_token: SECOND_TOKEN }
    ],
    statuses: [],
    delayMs: 0,
    appSecret: APP_SECRET
  })
  receiver = await startWebhookReceiver(received)
  receiverUrl = receiver.url
  const setup = await organizationWithChannel({
    simulatorUrl: simulator.url,
    phoneNumberId: PHONE_NUMBER_ID,
    token: TOKEN,
    throughputMps: 80,
    contactsLimit: 5000,
    templates: [{ name: "order_update", language: "en_US", category: "UTILITY", status: "APPROVED", components: [{ type: "BODY", text: "Hi {{1}}, your order shipped." }] }],
    extraEnv: { WHATSAPP_APP_SECRET: APP_SECRET, SWITCHBOARD_WEBHOOKS_ALLOW_PRIVATE: "1", DEVELOPER_API_SEND_RATE_LIMIT_MAX: "100000", DEVELOPER_API_RATE_LIMIT_MAX: "100000" }
  })
  apiKey = setup.apiKey
  server = await startServer(setup.env)
  simulator.configure({ webhookUrl: `${server.baseUrl}/webhooks/whatsapp` })
  client = createClient({ baseUrl: server.baseUrl, apiKey, fetch: recordingFetch, timeoutMs: 20_000 })
}, 60_000)

afterAll(async () => {
  killServers()
  removeTemporaryDirectories()
  await simulator?.close()
  await receiver?.close()
})

const orderUpdate = { name: "order_update", language: { code: "en_US" }, components: [{ type: "body", parameters: [{ type: "text", text: "Ann" }] }] }

const phone = (n: number) => `+3162${String(n).padStart(7, "0")}`

describe("@switchboard/client against the standalone server", () => {
  it("its committed generated types are those of the running server's /openapi.json", async () => {
    const served = await (await fetch(`${server.baseUrl}/openapi.json`)).json()
    const files = await generatedFiles(served)
    for (const name of ["openapi.ts", "operations.ts"] as const) {
      expect(files[name], `packages/client/src/generated/${name}: run npm run generate -w @switchboard/client`).toBe(
        readFileSync(new URL(`../../../packages/client/src/generated/${name}`, import.meta.url), "utf8")
      )
    }
  }, 60_000)

  it("verifies the key, and a 404 is a NotFoundError with its code and the answer's request id", async () => {
    const verified = await client.auth.verify()
    expect(verified.organization.name).toBe("Acme")
    expect(verified.requestId).toMatch(/\S/)
    const error = await client.contacts.get("7a1c0e9e-3f7b-4c3e-9d2a-5b7c8e9f0a1b").catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(NotFoundError)
    expect(error).toMatchObject({ status: 404, code: "not_found" })
    expect((error as NotFoundError).requestId).toMatch(/\S/)
    expect((error as NotFoundError).requestId).not.toBe(verified.requestId)
  })

  it("iterates 250 contacts 100 a page, each once; pages() gives the three pages", async () => {
    const endpoint = await client.webhookEndpoints.create({ url: receiverUrl, events: ["contact.created"] })
    const contacts = Array.from({ length: 250 }, (_, n) => ({ first_name: `Person ${n}`, phone: phone(n), group: ["Customers"] }))
    const imported = await client.contacts.import({ contacts })
    expect(imported).toMatchObject({ created: 250 })
    const phones: Array<string> = []
    for await (const contact of client.contacts.list({ per_page: 100 })) phones.push(contact.phone)
    expect(phones).toHaveLength(250)
    expect(new Set(phones)).toEqual(new Set(contacts.map((contact) => contact.phone)))
    const pages = []
    for await (const page of client.contacts.list({ per_page: 100 }).pages()) pages.push(page.contacts.length)
    expect(pages).toEqual([100, 100, 50])

    // A real signed delivery passes verifyWebhook with the endpoint's secret; not with another.
    await until(() => received.length > 0, "a webhook delivery", 20_000, 50)
    const delivery = received[0]!
    const event = await verifyWebhook<{ type: string }>(delivery.body, delivery.headers, [endpoint.secret!])
    expect(event.type).toBe("contact.created")
    const other = `whsec_${Buffer.from("x".repeat(32)).toString("base64")}`
    await expect(verifyWebhook(delivery.body, delivery.headers, other)).rejects.toThrow("No webhook signature matches")
  }, 60_000)

  it("a send whose connection drops before the answer is retried with the same Idempotency-Key and sent once", async () => {
    // A TCP proxy before the server: it forwards the first send, and closes the client's
    // socket as soon as the server's answer starts, so the client never sees it.
    const target = new URL(server.baseUrl)
    const keys: Array<string> = []
    let dropped = 0
    let posts = 0
    const proxy: TcpServer = createTcpServer((socket: Socket) => {
      const upstream = connect(Number(target.port), target.hostname)
      let request = ""
      socket.on("data", (chunk: Buffer) => {
        if (request === "" && chunk.toString("latin1").startsWith("POST")) posts++
        request += chunk.toString("latin1")
        upstream.write(chunk)
      })
      upstream.on("data", (chunk: Buffer) => {
        const key = /idempotency-key: ([^\r\n]+)/i.exec(request)?.[1]
        if (key !== undefined && !keys.includes(key)) keys.push(key)
        if (request.startsWith("POST") && dropped === 0) {
          dropped++
          socket.destroy()
          upstream.destroy()
          return
        }
        socket.write(chunk)
      })
      socket.on("error", () => upstream.destroy())
      upstream.on("error", () => socket.destroy())
      socket.on("close", () => upstream.end())
      upstream.on("end", () => socket.end())
    })
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve))
    try {
      const viaProxy = createClient({
        baseUrl: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/api/v1/api`,
        apiKey,
        fetch: recordingFetch,
        timeoutMs: 20_000
      })
      const sent = await viaProxy.send.template({ phone: phone(900), template: orderUpdate })
      expect(dropped).toBe(1)
      expect(posts).toBe(2)
      expect(keys).toHaveLength(1)
      const chats = []
      for await (const chat of client.chats.list({ search: phone(900) })) chats.push(chat)
      expect(chats).toHaveLength(1)
      const messages = []
      for await (const message of client.chats.messages(chats[0]!.uuid, { limit: 10 })) messages.push(message)
      expect(messages.map((message) => message.uuid)).toEqual([sent.message_id])
    } finally {
      proxy.close()
    }
  }, 60_000)

  it("calls every other operation of the table through the client", async () => {
    // Sends and messages.
    // The customer writes first (Meta's signed webhook, from the simulator): the customer
    // service window is open for the free-form sends, the reaction and the read receipt.
    const customer = phone(1)
    await simulator.postInbound({ from: customer, profile_name: "Ann", message: textMessage("Is my order on its way?") })
    let customerChat: { uuid: string } | undefined
    await until(async () => {
      for await (const chat of client.chats.list({ search: customer })) customerChat = chat
      return customerChat !== undefined
    }, "the customer's chat", 20_000, 50)
    const inbound = []
    for await (const each of client.chats.messages(customerChat!.uuid, { limit: 10 })) inbound.push(each)
    expect(inbound).toMatchObject([{ direction: "inbound", text: "Is my order on its way?" }])
    expect(await refusal(client.send.text({ phone: customer, message: "Hello" }))).toBe("ok")
    const text = await client.send.template({ phone: phone(2), template: orderUpdate })
    expect(await refusal(client.send.media({ phone: customer, media: { type: "image", url: "https://example.com/a.png" } }))).toBe("ok")
    const interactive = { type: "button" as const, body: { text: "Pick" }, action: { buttons: [{ type: "reply" as const, reply: { id: "yes", title: "Yes" } }] } }
    expect(await refusal(client.send.interactive({ phone: customer, interactive }))).toBe("ok")
    const message = await client.messages.get(text.message_id)
    expect(message.uuid).toBe(text.message_id)
    expect(await refusal(client.messages.react(inbound[0]!.uuid, { emoji: "👍" }))).toBe("ok")
    // Meta refuses every send to this recipient for good (131026): the message fails, and a
    // failed message may be retried.
    simulator.script.refuseRecipient(phone(6), { code: 131026 })
    const refused = await client.send.template({ phone: phone(6), template: orderUpdate })
    await until(async () => (await client.messages.get(refused.message_id)).status === "failed", "the refused send to fail", 20_000, 50)
    expect(await refusal(client.messages.retry(refused.message_id))).toBe("ok")
    const later = await client.send.template({ phone: phone(5), template: orderUpdate, send_at: new Date(Date.now() + 3_600_000).toISOString() })
    expect(await refusal(client.messages.cancel(later.message_id))).toBe("ok")

    // Contacts, groups, labels, basic replies.
    let first: { uuid: string } | undefined
    for await (const contact of client.contacts.list({ per_page: 1 })) {
      first = contact
      break
    }
    const contact = await client.contacts.get(first!.uuid)
    await client.contacts.update(contact.uuid, { first_name: "Renamed" })
    const group = await client.groups.create({ name: "VIP" })
    await client.groups.update(group.uuid, { name: "Very important" })
    for await (const each of client.groups.list()) expect(each.uuid).toMatch(/\S/)
    const label = await client.labels.create({ name: "hot" })
    await client.labels.get(label.uuid)
    await client.labels.assign({ contact_uuids: [contact.uuid], tag_uuid: label.uuid })
    expect((await client.contacts.labels(contact.uuid)).labels.map((each) => each.uuid)).toContain(label.uuid)
    for await (const each of client.labels.list({ per_page: 100 })) expect(each.uuid).toMatch(/\S/)
    const other = await client.labels.create({ name: "cold" })
    await client.labels.bulkDelete({ tag_uuids: [other.uuid] })
    await client.labels.delete(label.uuid)
    await client.contacts.delete(contact.uuid)
    const reply = await client.basicReplies.create({ name: "Hours", trigger: "hours", response: "9 to 5" })
    await client.basicReplies.get(reply.uuid)
    for await (const each of client.basicReplies.list()) expect(each.uuid).toMatch(/\S/)

    // Templates and channels.
    const templates = []
    for await (const template of client.templates.list()) templates.push(template)
    const template = templates[0]!
    await client.templates.get(template.uuid)
    await client.templates.payload(template.uuid)
    const channels = []
    for await (const channel of client.channels.list()) channels.push(channel)
    const channel = await client.channels.get(channels[0]!.uuid)
    await client.channels.update(channel.uuid, { throughput_mps: 80 })
    expect(await refusal(client.channels.resume(channel.uuid))).toBe("ok")
    expect(await refusal(client.channels.syncTemplates(channel.uuid))).toBe("ok")
    expect(await refusal(client.templates.create({ channel_uuid: channel.uuid, name: "client_made", language: "en_US", category: "UTILITY", components: [{ type: "BODY", text: "Made by the client" }] }))).toBe("ok")
    const second = await client.channels.create({ phone_number_id: SECOND_PHONE_NUMBER_ID, waba_id: WABA_ID, access_token: SECOND_TOKEN })
    await client.channels.delete(second.uuid)

    // Chats.
    const chats = []
    for await (const chat of client.chats.list({ limit: 2 })) chats.push(chat)
    expect(new Set(chats.map((chat) => chat.uuid)).size).toBe(chats.length)
    const modes = []
    for await (const page of client.chats.list({ limit: 2 }).pages()) modes.push(page.pagination.mode)
    expect(modes.length).toBe(Math.ceil(chats.length / 2))
    expect(new Set(modes)).toEqual(new Set(["cursor"]))
    await client.chats.get(chats[0]!.uuid)
    await client.chats.update(chats[0]!.uuid, { status: "resolved" })
    expect(await refusal(client.chats.markRead(customerChat!.uuid))).toBe("ok")

    // Media.
    const form = new FormData()
    form.append("file", new Blob([pdfBytes(2048)], { type: "application/pdf" }), "invoice.pdf")
    const media = await client.media.upload(form)
    await client.media.get(media.uuid)
    for await (const each of client.media.list()) expect(each.uuid).toMatch(/\S/)
    const content = await client.media.content(media.uuid)
    expect(content.status).toBe(200)
    expect((await content.arrayBuffer()).byteLength).toBe(2048)
    await client.media.createLink(media.uuid, { expires_in: 60 })
    await client.media.delete(media.uuid)

    // Broadcasts.
    const groups = []
    for await (const each of client.groups.list({ per_page: 100 })) groups.push(each)
    const customers = groups.find((each) => each.name === "Customers")!
    const broadcast = await client.broadcasts.create({
      name: "Spring",
      template: { name: "order_update", language: { code: "en_US" }, components: [{ type: "body", parameters: [{ type: "text", text: "{{contact.first_name}}" }] }] },
      audience: { group_uuids: [customers.uuid] },
      send_at: new Date(Date.now() + 3_600_000).toISOString()
    })
    await client.broadcasts.get(broadcast.uuid)
    for await (const each of client.broadcasts.list()) expect(each.uuid).toMatch(/\S/)
    for await (const each of client.broadcasts.recipients(broadcast.uuid, { limit: 100 })) expect(each).toBeDefined()
    expect(await refusal(client.broadcasts.cancel(broadcast.uuid))).toBe("ok")

    // Webhook endpoints.
    const endpoints = []
    for await (const endpoint of client.webhookEndpoints.list()) endpoints.push(endpoint)
    const endpoint = await client.webhookEndpoints.get(endpoints[0]!.uuid)
    await client.webhookEndpoints.update(endpoint.uuid, { description: "the test receiver" })
    // A new secret, the old one signing beside it for 60 s; a second rotation inside that window is refused.
    const rotated = await client.webhookEndpoints.rotateSecret(endpoint.uuid, { previous_secret_expires_in: 60 })
    expect(rotated.secret).toMatch(/^whsec_/)
    expect(rotated.previous_secret_expires_at).toEqual(expect.any(String))
    const again = await client.webhookEndpoints.rotateSecret(endpoint.uuid, {}).catch((error: unknown) => error)
    expect(again).toBeInstanceOf(ConflictError)
    expect(again).toMatchObject({ status: 409, code: "rotation_in_progress", requestId: expect.any(String) })
    const deliveries = []
    for await (const delivery of client.webhookEndpoints.deliveries(endpoint.uuid, { limit: 50 })) deliveries.push(delivery)
    expect(deliveries.length).toBeGreaterThan(0)
    // A delivered delivery may be sent again (by its delivery_id; each row is one attempt).
    expect(await refusal(client.webhookEndpoints.retryDelivery(endpoint.uuid, deliveries[0]!.delivery_id))).toBe("ok")
    await client.webhookEndpoints.delete(endpoint.uuid)
    expect(await refusal(client.templates.delete(template.uuid))).toBe("ok")
  }, 120_000)

  it("called every operation of the method table", () => {
    const table = Object.values(METHODS).flatMap((methods) => Object.values(methods).map((method) => method.operationId as string))
    expect([...called].sort()).toEqual([...new Set(table)].sort())
  })
})

import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Effect, Layer } from "effect"
import { Registry } from "prom-client"
import { Core, MemoryStorage, type OutboxSummaryRow, Storage, StorageError, type StorageService, Templates } from "@switchboard/core"
import { createFetchHandler, type SwitchboardHandler } from "@switchboard/http-adapter"
import { prometheusMetrics } from "@switchboard/http-adapter/metrics"
import { inboundMessagePayload, sign, startSimulator, statusPayload, textMessage, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"
import { contactRows, importContacts, makeHandler, makeSharedStorage, makeTenant, phone, request, settledSend, UNKNOWN_UUID } from "./helpers.js"
import { orderUpdate, SECRET_KEY, SEND_QUEUE, template } from "./send-queue-helpers.js"

// The handler's metrics on prom-client (docs/http-adapter.md "Metrics"): real requests
// through handlers with `metrics: prometheusMetrics(new Registry())`, then the registry
// scraped and its counts checked exactly.

const APP_SECRET = "metrics-app-secret"
const TOKEN = "EAAGmetricstoken000000000000000001"

/** The value of `name`'s sample with exactly `labels` in the registry's current scrape; 0 when it has none. */
const sample = async (registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> => {
  const metric = (await registry.getMetricsAsJSON()).find((each) => each.name === name)
  if (metric === undefined) throw new Error(`no metric ${name}`)
  const found = (metric.values as ReadonlyArray<{ labels: Record<string, unknown>; value: number; metricName?: string }>).find(
    (value) =>
      (value.metricName ?? name) === name &&
      Object.keys(value.labels).length === Object.keys(labels).length &&
      Object.entries(labels).every(([key, expected]) => String(value.labels[key]) === expected)
  )
  return found?.value ?? 0
}

/** Every sample of `name` as `labels → value`, for whole-table comparisons. */
const samples = async (registry: Registry, name: string): Promise<Record<string, number>> => {
  const metric = (await registry.getMetricsAsJSON()).find((each) => each.name === name)
  const values = (metric?.values ?? []) as ReadonlyArray<{ labels: Record<string, unknown>; value: number }>
  return Object.fromEntries(values.map((value) => [Object.values(value.labels).join(","), value.value]))
}

/** POSTs `body` to the handler's WhatsApp webhook, signed under APP_SECRET unless `signature` is given. */
const postSigned = (handler: SwitchboardHandler, body: string, signature = sign(body, APP_SECRET)) =>
  request(handler, {
    method: "POST",
    url: "/api/v1/api/webhooks/whatsapp",
    headers: { "content-type": "application/json", "x-hub-signature-256": signature },
    payload: body
  })

const waitFor = async (condition: () => Promise<boolean>, what: string) => {
  const deadline = Date.now() + 5_000
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`never: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const handlers: Array<SwitchboardHandler> = []
afterAll(() => Promise.all(handlers.map((handler) => handler.dispose())))

describe("requests and 429s", () => {
  it("counts requests by route pattern, method and status (never a raw path), their durations, and 429s by bucket", async () => {
    const registry = new Registry()
    const storage = makeSharedStorage()
    const handler = makeHandler(storage, { metrics: prometheusMetrics(registry), rateLimit: { send: { max: 1, windowMs: 3_600_000 } } })
    handlers.push(handler)
    const { api } = await makeTenant(storage, handler)
    const other = "0190f6b4-7b7e-7c4e-8a5d-000000000001"
    expect((await api.get(`/contacts/${UNKNOWN_UUID}`)).status).toBe(404)
    expect((await api.get(`/contacts/${other}`)).status).toBe(404)
    expect((await api.get("/verify")).status).toBe(200)
    expect((await request(handler, { method: "GET", url: "/api/v1/api/no/such/route" })).statusCode).toBe(404)
    // The recording transport (no channel): sent at once; the second send is over the send bucket's limit.
    expect((await api.post("/send", { phone: phone(1), message: "hello" })).data.status).toBe("sent")
    expect((await api.post("/send", { phone: phone(2), message: "hello" })).status).toBe(429)

    expect(await samples(registry, "switchboard_http_requests_total")).toEqual({
      "/contacts/:uuid,GET,404": 2,
      "/verify,GET,200": 1,
      "(unmatched),GET,404": 1,
      "/send,POST,200": 1,
      "/send,POST,429": 1
    })
    const text = await registry.metrics()
    expect(text).toContain('switchboard_http_request_duration_seconds_count{route="/contacts/:uuid"} 2')
    expect(text).toContain('switchboard_http_request_duration_seconds_bucket{le="+Inf",route="/verify"} 1')
    expect(text).not.toContain(UNKNOWN_UUID)
    expect(text).not.toContain(other)
    expect(await samples(registry, "switchboard_rate_limited_total")).toEqual({ send: 1 })
    expect(await samples(registry, "switchboard_messages_total")).toEqual({ "outbound,sent": 1 })
  })

  it("createFetchHandler takes the same option; unknown methods count as OTHER", async () => {
    const registry = new Registry()
    const handler = createFetchHandler({ storage: MemoryStorage.layer, logger: false, metrics: prometheusMetrics(registry) })
    handlers.push(handler as unknown as SwitchboardHandler)
    expect((await handler(new Request("http://localhost/api/v1/api/verify"))).status).toBe(401)
    // A method of the client's invention is one label value, whatever its name.
    for (const method of ["BREW", "WHEN"]) expect((await handler(new Request("http://localhost/api/v1/api/verify", { method }))).status).toBe(405)
    expect(await samples(registry, "switchboard_http_requests_total")).toEqual({ "/verify,GET,401": 1, "(unmatched),OTHER,405": 2 })
  })
})

describe("messages, Meta's webhooks and the send queue", () => {
  let simulator: WhatsAppSimulator
  beforeAll(async () => {
    simulator = await startSimulator()
  })
  afterAll(() => simulator.close())

  it("counts sends, inbound messages and status reports once per change, Meta's POSTs by result, and broadcasts, cancels, retries and channel deletions, and reads the queue and paused channels at scrape", async () => {
    const registry = new Registry()
    const storage = makeSharedStorage()
    const handler = makeHandler(storage, {
      metrics: prometheusMetrics(registry),
      secretKey: SECRET_KEY,
      graphApi: { baseUrl: simulator.url, apiVersion: "v21.0" },
      whatsapp: { appSecret: APP_SECRET },
      sendQueue: SEND_QUEUE
    })
    handlers.push(handler)
    const { organization, api } = await makeTenant(storage, handler)
    const number = { phone_number_id: "106540352270001", display_phone_number: "+31 6 1234 5678", waba_id: "102290129340398", access_token: TOKEN }
    simulator.addNumber(number)
    const channel = await api.post("/channels", { ...number, throughput_mps: 1000 })
    expect(channel.status).toBe(200)
    const channelId = channel.data.uuid as string
    await Effect.runPromise(
      Effect.flatMap(Templates, (templates) => templates.create(organization.id, orderUpdate)).pipe(Effect.provide(Core.layer), Effect.provide(storage))
    )
    const postWebhook = (body: string, signature?: string) => postSigned(handler, body, signature)

    // A send through the channel: sent inline (or, when that attempt was late for its pacing
    // slot on a busy machine, handed back and sent by the dispatcher moments later).
    const sent = await settledSend(api, await api.post("/send/template", { phone: phone(10), template: template("#1") }))
    expect(sent.data.status).toBe("sent")
    // A customer writes: one inbound message.
    const inbound = JSON.stringify(inboundMessagePayload({ number, from: phone(11), profile_name: "Ana", message: textMessage("hi") }))
    expect((await postWebhook(inbound)).statusCode).toBe(200)
    // Its redelivery changes nothing.
    expect((await postWebhook(inbound)).statusCode).toBe(200)
    // Meta reports the send delivered, twice: one change.
    const delivered = JSON.stringify(
      statusPayload({ number, wamid: sent.data.provider_message_id, status: "delivered", recipient_id: phone(10).slice(1) })
    )
    expect((await postWebhook(delivered)).statusCode).toBe(200)
    expect((await postWebhook(delivered)).statusCode).toBe(200)
    // A forged POST: refused, nothing stored.
    expect((await postWebhook(delivered, sign(delivered, "not-the-app-secret"))).statusCode).toBe(401)
    // A part core refuses (an empty text): accepted, kept as refused.
    const refused = JSON.stringify(inboundMessagePayload({ number, from: phone(12), profile_name: "Bo", message: textMessage("") }))
    expect((await postWebhook(refused)).statusCode).toBe(200)

    expect(await samples(registry, "switchboard_provider_webhooks_total")).toEqual({
      accepted: 4,
      invalid_signature: 1,
      accepted_with_refusals: 1
    })

    // An account error pauses the channel: that message and the next one wait.
    simulator.script.enqueue([{ code: 131031 }])
    const held = await api.post("/send/template", { phone: phone(13), template: template("#2") })
    // Its attempt may have been handed back late for its pacing slot: the dispatcher's meets the error.
    await waitFor(async () => (await api.get(`/channels/${channelId}`)).data.status === "paused", "the channel paused")
    const later = await api.post("/send/template", { phone: phone(14), template: template("#3") })
    expect([held.data.status, later.data.status]).toEqual(["queued", "queued"])
    // A broadcast to two contacts: written queued behind the paused channel, then cancelled.
    await importContacts(api, contactRows(15, 2, { group: ["Metrics"] }))
    const group = ((await api.get("/contact-groups?per_page=100")).data.groups as Array<{ uuid: string }>)[0]!
    const broadcast = await api.post("/broadcasts", { name: "Metrics", template: template("#4"), audience: { group_uuids: [group.uuid] } })
    expect(broadcast.status).toBe(200)
    await waitFor(async () => (await api.get(`/broadcasts/${broadcast.data.uuid}`)).data.counts.queued === 2, "the broadcast's recipients written")
    expect((await api.post(`/broadcasts/${broadcast.data.uuid}/cancel`, {})).data.counts.failed).toBe(2)
    // One message cancelled, then retried.
    expect((await api.post(`/messages/${later.data.message_id}/cancel`, {})).data.status).toBe("failed")
    expect((await api.post(`/messages/${later.data.message_id}/retry`, {})).data.status).toBe("queued")

    // Each attempt handed back late for its pacing slot (a busy machine) enters queued once more.
    const messagesTotal = await samples(registry, "switchboard_messages_total")
    expect(messagesTotal).toEqual({
      "outbound,sent": 1,
      "inbound,delivered": 1,
      "outbound,delivered": 1,
      "outbound,queued": expect.any(Number),
      "outbound,failed": 3
    })
    expect(messagesTotal["outbound,queued"]).toBeGreaterThanOrEqual(5)
    expect(await samples(registry, "switchboard_outbox_messages")).toEqual({ [`${channelId},queued`]: 2, [`${channelId},sending`]: 0 })
    expect(await samples(registry, "switchboard_channel_paused")).toEqual({ [channelId]: 1 })

    // Deleting the channel fails its two waiting messages; the queue is empty and the channel gone.
    expect((await api.delete(`/channels/${channelId}`)).status).toBe(200)
    expect(await sample(registry, "switchboard_messages_total", { direction: "outbound", status: "failed" })).toBe(5)
    expect(await samples(registry, "switchboard_outbox_messages")).toEqual({})
    expect(await samples(registry, "switchboard_channel_paused")).toEqual({})
  })

  it("a POST the store fails (500, Meta retries) is counted as error", async () => {
    const registry = new Registry()
    const service = MemoryStorage.make()
    const failing = Layer.succeed(Storage, {
      ...service,
      channels: {
        ...service.channels,
        findByPhoneNumberId: () => Effect.fail(new StorageError({ operation: "findByPhoneNumberId", cause: new Error("down") }))
      }
    } satisfies StorageService)
    const handler = makeHandler(failing, { metrics: prometheusMetrics(registry), whatsapp: { appSecret: APP_SECRET } })
    handlers.push(handler)
    const number = { phone_number_id: "106540352270002", display_phone_number: "+31 6 1234 5679", waba_id: "102290129340398" }
    const body = JSON.stringify(inboundMessagePayload({ number, from: phone(30), profile_name: "Cy", message: textMessage("hi") }))
    expect((await postSigned(handler, body)).statusCode).toBe(500)
    expect(await samples(registry, "switchboard_provider_webhooks_total")).toEqual({ error: 1 })
  })
})

describe("outgoing webhook deliveries", () => {
  let server: Server
  let receiverUrl = ""
  let status = 500
  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume()
      req.on("end", () => res.writeHead(status).end())
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    receiverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`
  })
  afterAll(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  })

  it("counts each recorded attempt by result: retrying, failed (no attempt left), delivered", async () => {
    const registry = new Registry()
    const storage = makeSharedStorage()
    const handler = makeHandler(storage, {
      metrics: prometheusMetrics(registry),
      secretKey: SECRET_KEY,
      webhooks: { allowInsecureUrls: true, allowPrivateNetworks: true, retryDelaysMs: [10], pollIntervalMs: 20 }
    })
    handlers.push(handler)
    await handler.ready
    const { api } = await makeTenant(storage, handler)
    expect((await api.post("/webhook-endpoints", { url: receiverUrl, events: ["contact.created"] })).status).toBe(200)
    const deliveries = () => samples(registry, "switchboard_webhook_deliveries_total")
    expect((await api.post("/contacts/bulk", { contacts: contactRows(20, 1) })).status).toBe(200)
    await waitFor(async () => (await deliveries()).failed === 1, "the delivery failed for good")
    expect(await deliveries()).toEqual({ retrying: 1, failed: 1 })
    status = 204
    expect((await api.post("/contacts/bulk", { contacts: contactRows(21, 1) })).status).toBe(200)
    await waitFor(async () => (await deliveries()).delivered === 1, "the delivery was delivered")
    expect(await deliveries()).toEqual({ retrying: 1, failed: 1, delivered: 1 })
  })
})

describe("reading the send queue at scrape", () => {
  const row: OutboxSummaryRow = { channel_id: null, channel_status: null, queued: 3, sending: 1 }

  it("a store that does not answer: the scrape ends after the bound, keeps the last values, and one read at a time runs", async () => {
    const registry = new Registry()
    const metrics = prometheusMetrics(registry, { outboxReadTimeoutMs: 20 })
    metrics.readOutboxWith(async () => [row])
    expect(await samples(registry, "switchboard_outbox_messages")).toEqual({ "none,queued": 3, "none,sending": 1 })
    let reads = 0
    metrics.readOutboxWith(() => {
      reads += 1
      return new Promise(() => undefined)
    })
    expect(await samples(registry, "switchboard_outbox_messages")).toEqual({ "none,queued": 3, "none,sending": 1 })
    await registry.metrics()
    expect(reads).toBe(1)
  })

  it("a detached reader is not read; with none left, the last values stay", async () => {
    const registry = new Registry()
    const metrics = prometheusMetrics(registry)
    const detach = metrics.readOutboxWith(async () => [row])
    expect(await samples(registry, "switchboard_outbox_messages")).toEqual({ "none,queued": 3, "none,sending": 1 })
    const detachSecond = metrics.readOutboxWith(async () => [])
    expect(await samples(registry, "switchboard_outbox_messages")).toEqual({})
    detachSecond()
    expect(await samples(registry, "switchboard_outbox_messages")).toEqual({ "none,queued": 3, "none,sending": 1 })
    detach()
    let read = false
    metrics.readOutboxWith(async () => {
      read = true
      return []
    })()
    expect(await samples(registry, "switchboard_outbox_messages")).toEqual({ "none,queued": 3, "none,sending": 1 })
    expect(read).toBe(false)
  })

  it("defaultMetrics: true adds prom-client's process metrics; by default the registry gets only Switchboard's", async () => {
    const plain = new Registry()
    prometheusMetrics(plain)
    expect((await plain.getMetricsAsJSON()).every((metric) => metric.name.startsWith("switchboard_"))).toBe(true)
    const withDefaults = new Registry()
    prometheusMetrics(withDefaults, { defaultMetrics: true })
    expect((await withDefaults.getMetricsAsJSON()).map((metric) => metric.name)).toContain("process_cpu_seconds_total")
  })
})

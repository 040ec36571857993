import { randomBytes, randomUUID } from "node:crypto"
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { Effect, type Layer } from "effect"
import { Webhook } from "standardwebhooks"
import { generateSecretKey, sealSecret, Storage, type OrganizationId, type WebhookEndpointId } from "@switchboard/core"
import { createHandler, dispatchWebhooks } from "@switchboard/http-adapter"
import { contactRows, importContacts, makeSharedStorage, makeTenant } from "./helpers.js"

// The dispatcher in the handler's runtime (docs/webhooks.md "Delivery and the dispatcher"):
// a contact import's events reach a local receiver that verifies them with standardwebhooks;
// `dispatch: false` sends nothing; `dispatchWebhooks` sends them from elsewhere; `dispose()`
// waits for the attempt in flight. The endpoint is written to the store directly.

const KEY = generateSecretKey()
const SECRET = `whsec_${randomBytes(24).toString("base64")}`
/** The secret the receiver verifies with: {@link SECRET}, or one the API answered. */
let secret = SECRET
const received: Array<{ readonly headers: IncomingHttpHeaders; readonly verified: any }> = []
let delayMs = 0
/** Statuses the receiver answers, one per request, before it answers 204. */
let statuses: Array<number> = []
let server: Server
let receiverUrl: string

beforeAll(async () => {
  server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8")
      let verified: unknown
      try {
        verified = new Webhook(secret).verify(body, request.headers as Record<string, string>)
      } catch (error) {
        verified = error
      }
      received.push({ headers: request.headers, verified })
      const status = statuses.shift() ?? 204
      setTimeout(() => response.writeHead(status).end(), delayMs)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  receiverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

beforeEach(() => {
  received.length = 0
  delayMs = 0
  statuses = []
  secret = SECRET
})

const local = { allowInsecureUrls: true, allowPrivateNetworks: true, retryDelaysMs: [10, 10], pollIntervalMs: 20 }

/** Writes an endpoint receiving every event at the local receiver, its secret sealed under KEY. */
const addEndpoint = (storage: Layer.Layer<Storage>, organizationId: string) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const now = new Date().toISOString()
      const { webhooks } = yield* Storage
      yield* webhooks.insertEndpoint(
        organizationId as OrganizationId,
        {
          endpoint: {
            uuid: randomUUID() as WebhookEndpointId,
            url: receiverUrl,
            events: null,
            description: null,
            enabled: true,
            created_at: now,
            updated_at: now
          },
          secret_sealed: sealSecret(KEY, SECRET)
        },
        10
      )
    }).pipe(Effect.provide(storage))
  )

const waitFor = async (condition: () => boolean, timeoutMs = 5_000) => {
  const deadline = Date.now() + timeoutMs
  while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
  expect(condition()).toBe(true)
}

describe("the webhook dispatcher in the handler", () => {
  it("delivers contact.created events of POST /contacts/bulk, verified with standardwebhooks", async () => {
    const storage = makeSharedStorage()
    const handler = createHandler({ storage, logger: false, secretKey: KEY, webhooks: local })
    try {
      await handler.ready
      const { api, organization } = await makeTenant(storage, handler)
      await addEndpoint(storage, organization.id)
      const imported = await importContacts(api, contactRows(0, 3))
      await waitFor(() => received.length >= 3)
      expect(received.map((request) => request.verified.type)).toEqual(["contact.created", "contact.created", "contact.created"])
      expect(received.map((request) => request.verified.data.uuid).sort()).toEqual(
        imported.contacts.map((contact) => contact.uuid).sort()
      )
      expect(new Set(received.map((request) => request.headers["webhook-id"])).size).toBe(3)
    } finally {
      await handler.dispose()
    }
  })

  it("an endpoint created with POST /webhook-endpoints receives the events, signed with the secret shown then", async () => {
    const storage = makeSharedStorage()
    const handler = createHandler({ storage, logger: false, secretKey: KEY, webhooks: local })
    try {
      await handler.ready
      const { api } = await makeTenant(storage, handler)
      const created = await api.post("/webhook-endpoints", { url: receiverUrl, events: ["contact.created"] })
      expect(created.status).toBe(200)
      secret = created.data.secret
      await importContacts(api, contactRows(30, 2))
      await waitFor(() => received.length >= 2)
      expect(received.map((request) => request.verified.type)).toEqual(["contact.created", "contact.created"])
      // The attempts are recorded once the receiver has answered.
      let log = await api.get(`/webhook-endpoints/${created.data.uuid}/deliveries`)
      for (let wait = 0; wait < 100 && log.data.deliveries.length < 2; wait++) {
        await new Promise((resolve) => setTimeout(resolve, 20))
        log = await api.get(`/webhook-endpoints/${created.data.uuid}/deliveries`)
      }
      expect(log.data.deliveries).toHaveLength(2)
      expect(log.data.deliveries.every((attempt: { status: number }) => attempt.status === 204)).toBe(true)
    } finally {
      await handler.dispose()
    }
  })

  it("dispatch: false sends nothing; dispatchWebhooks sends from elsewhere", async () => {
    const storage = makeSharedStorage()
    const handler = createHandler({ storage, logger: false, secretKey: KEY, webhooks: { ...local, dispatch: false } })
    try {
      await handler.ready
      const { api, organization } = await makeTenant(storage, handler)
      await addEndpoint(storage, organization.id)
      await importContacts(api, contactRows(10, 2))
      await new Promise((resolve) => setTimeout(resolve, 150))
      expect(received).toHaveLength(0)
      const dispatcher = dispatchWebhooks({ storage, secretKey: KEY, webhooks: local, logger: false })
      await dispatcher.ready
      await waitFor(() => received.length >= 2)
      await dispatcher.stop()
      expect(received.every((request) => request.verified.type === "contact.created")).toBe(true)
    } finally {
      await handler.dispose()
    }
  })

  it("dispose() waits for the attempt in flight", async () => {
    const storage = makeSharedStorage()
    const handler = createHandler({ storage, logger: false, secretKey: KEY, webhooks: local })
    await handler.ready
    const { api, organization } = await makeTenant(storage, handler)
    await addEndpoint(storage, organization.id)
    delayMs = 300
    await importContacts(api, contactRows(20, 1))
    await waitFor(() => received.length === 1)
    const started = Date.now()
    await handler.dispose()
    expect(Date.now() - started).toBeGreaterThanOrEqual(200)
    const attempts = await Effect.runPromise(
      Effect.flatMap(Storage, ({ webhooks }) => webhooks.claimDue(new Date(Date.now() + 3_600_000).toISOString(), new Date().toISOString(), 10)).pipe(
        Effect.provide(storage)
      )
    )
    // Delivered: nothing is left to claim, even an hour later.
    expect(attempts).toHaveLength(0)
  })

  // A poll interval of an hour: only the wake of the write (and the retry time the loop
  // scheduled) can make these deliveries go out while the test waits.
  const wakeOnly = { ...local, pollIntervalMs: 3_600_000 }

  it("a delivery written by a request wakes the dispatcher at once, whatever its poll interval", async () => {
    const storage = makeSharedStorage()
    const handler = createHandler({ storage, logger: false, secretKey: KEY, webhooks: wakeOnly })
    try {
      await handler.ready
      const { api, organization } = await makeTenant(storage, handler)
      await addEndpoint(storage, organization.id)
      await importContacts(api, contactRows(40, 2))
      await waitFor(() => received.length >= 2)
      expect(received.map((request) => request.verified.type)).toEqual(["contact.created", "contact.created"])
    } finally {
      await handler.dispose()
    }
  })

  it("a failed attempt is retried when its retry is due, not after the poll interval", async () => {
    const storage = makeSharedStorage()
    const handler = createHandler({ storage, logger: false, secretKey: KEY, webhooks: wakeOnly })
    try {
      await handler.ready
      const { api, organization } = await makeTenant(storage, handler)
      await addEndpoint(storage, organization.id)
      statuses = [500, 503]
      await importContacts(api, contactRows(50, 1))
      await waitFor(() => received.length >= 3)
      expect(new Set(received.map((request) => request.headers["webhook-id"])).size).toBe(1)
    } finally {
      await handler.dispose()
    }
  })

  it("dispatchWebhooks tells when its loop last ended a pass (null before)", async () => {
    const storage = makeSharedStorage()
    const dispatcher = dispatchWebhooks({ storage, secretKey: KEY, webhooks: wakeOnly, logger: false })
    try {
      expect(dispatcher.lastPassEndedAt()).toBeNull()
      await dispatcher.ready
      await waitFor(() => dispatcher.lastPassEndedAt() !== null)
      expect(dispatcher.lastPassEndedAt()!.getTime()).toBeLessThanOrEqual(Date.now())
    } finally {
      await dispatcher.stop()
    }
  })

  it("refuses a malformed webhooks option at once", () => {
    const storage = makeSharedStorage()
    expect(() => createHandler({ storage, webhooks: { retryDelaysMs: [5, -1] } })).toThrow("webhooks.retryDelaysMs")
    expect(() => createHandler({ storage, webhooks: { pollIntervalMs: 0 } })).toThrow("webhooks.pollIntervalMs")
  })
})

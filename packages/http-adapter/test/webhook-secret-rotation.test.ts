import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { Webhook } from "standardwebhooks"
import { generateSecretKey } from "@switchboard/core"
import { createHandler } from "@switchboard/http-adapter"
import { type ApiClient, contactRows, importContacts, makeSharedStorage, makeTenant } from "./helpers.js"

// A signing secret rotated with an overlap (docs/webhooks.md "The secret"), through HTTP
// with the handler's real dispatcher and a local receiver: during the overlap every
// delivery (retries too) carries both signatures, one webhook-id and timestamp, so a
// receiver holding only the old secret and one holding only the new both verify it; after
// the overlap, only the new secret; `force` drops the older overlap secret at once. Runs on
// memory, SQLite (`http-adapter-sqlite`) and PostgreSQL (`http-adapter-postgres`).

const KEY = generateSecretKey()
/** What the receiver got: the raw body and the headers, verified afterwards with each secret. */
const received: Array<{ readonly body: string; readonly headers: IncomingHttpHeaders }> = []
/** Statuses the receiver answers, one per request, before it answers 204. */
let statuses: Array<number> = []
let server: Server
let receiverUrl: string

beforeAll(async () => {
  server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      received.push({ body: Buffer.concat(chunks).toString("utf8"), headers: request.headers })
      response.writeHead(statuses.shift() ?? 204).end()
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
  statuses = []
})

const local = { allowInsecureUrls: true, allowPrivateNetworks: true, retryDelaysMs: [10, 10], pollIntervalMs: 20 }

/** Waits, polling, until `condition` holds (generous: a loaded 2-core machine). */
const waitFor = async (condition: () => boolean, timeoutMs = 30_000) => {
  const deadline = Date.now() + timeoutMs
  while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
  expect(condition()).toBe(true)
}

/** Whether a receiver holding only `secret` accepts the delivery (Standard Webhooks verification). */
const verifies = (secret: string, delivery: { readonly body: string; readonly headers: IncomingHttpHeaders }): boolean => {
  try {
    new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>)
    return true
  } catch {
    return false
  }
}

/** The `v1,` entries of a delivery's signature header. */
const signaturesOf = (delivery: { readonly headers: IncomingHttpHeaders }) => String(delivery.headers["webhook-signature"]).split(" ")

/** Imports `count` contacts (from row `from`) and waits until the receiver has `total` requests. */
const deliver = async (api: ApiClient, from: number, count: number, total: number) => {
  await importContacts(api, contactRows(from, count))
  await waitFor(() => received.length >= total)
  return received.slice(total - count)
}

const setup = async () => {
  const storage = makeSharedStorage()
  const handler = createHandler({ storage, logger: false, secretKey: KEY, webhooks: local, dispatch: { templates: false } })
  await handler.ready
  const { api } = await makeTenant(storage, handler)
  const created = await api.post("/webhook-endpoints", { url: receiverUrl, events: ["contact.created"] })
  expect(created.status).toBe(200)
  return { handler, api, uuid: created.data.uuid as string, original: created.data.secret as string }
}

describe("webhook secret rotation with an overlap, through the dispatcher", () => {
  it("during the overlap the old and the new secret each verify every delivery; after it only the new; force drops the older overlap secret", async () => {
    const { handler, api, uuid, original } = await setup()
    try {
      const path = `/webhook-endpoints/${uuid}/rotate-secret`
      const before = await deliver(api, 0, 1, 1)
      expect(signaturesOf(before[0]!)).toHaveLength(1)
      expect(verifies(original, before[0]!)).toBe(true)

      // Rotation with the default overlap: both signatures, one id and timestamp.
      const rotated = await api.post(path, {})
      expect(rotated.status).toBe(200)
      const second: string = rotated.data.secret
      const during = await deliver(api, 10, 3, 4)
      for (const delivery of during) {
        const signatures = signaturesOf(delivery)
        expect(signatures).toHaveLength(2)
        expect(signatures.every((signature) => signature.startsWith("v1,"))).toBe(true)
        expect(typeof delivery.headers["webhook-id"]).toBe("string")
        expect(typeof delivery.headers["webhook-timestamp"]).toBe("string")
        expect(verifies(original, delivery)).toBe(true)
        expect(verifies(second, delivery)).toBe(true)
      }

      // A second rotation inside the window: refused, the signing unchanged.
      expect((await api.post(path, {})).status).toBe(409)

      // force with an overlap of one second: the original secret stops at once; the second
      // signs until the expiry the answer gives, and no longer.
      const forced = await api.post(path, { force: true, previous_secret_expires_in: 1 })
      expect(forced.status).toBe(200)
      const third: string = forced.data.secret
      const expiresAt = Date.parse(forced.data.previous_secret_expires_at)
      await waitFor(() => Date.now() > expiresAt + 50)
      const after = await deliver(api, 20, 2, 6)
      for (const delivery of after) {
        expect(signaturesOf(delivery)).toHaveLength(1)
        expect(verifies(third, delivery)).toBe(true)
        expect(verifies(second, delivery)).toBe(false)
        expect(verifies(original, delivery)).toBe(false)
      }

      // Once the overlap is over, a rotation needs no force; force then drops that overlap
      // secret at once: at most two secrets ever sign.
      const fourth = await api.post(path, {})
      expect(fourth.status).toBe(200)
      const fifth = await api.post(path, { force: true })
      expect(fifth.status).toBe(200)
      const last = await deliver(api, 30, 2, 8)
      for (const delivery of last) {
        expect(signaturesOf(delivery)).toHaveLength(2)
        expect(verifies(fifth.data.secret, delivery)).toBe(true)
        expect(verifies(fourth.data.secret, delivery)).toBe(true)
        expect(verifies(third, delivery)).toBe(false)
      }
    } finally {
      await handler.dispose()
    }
  }, 120_000)

  it("a delivery retried during the overlap carries both signatures on every attempt, with the same webhook-id", async () => {
    const { handler, api, uuid, original } = await setup()
    try {
      const rotated = await api.post(`/webhook-endpoints/${uuid}/rotate-secret`, { previous_secret_expires_in: 3600 })
      expect(rotated.status).toBe(200)
      statuses = [500, 503]
      const attempts = await deliver(api, 40, 1, 3)
      expect(received).toHaveLength(3)
      expect(new Set(received.map((delivery) => delivery.headers["webhook-id"])).size).toBe(1)
      for (const delivery of [...attempts, ...received]) {
        expect(signaturesOf(delivery)).toHaveLength(2)
        expect(verifies(original, delivery)).toBe(true)
        expect(verifies(rotated.data.secret, delivery)).toBe(true)
      }
    } finally {
      await handler.dispose()
    }
  }, 120_000)

  it("a rotation with previous_secret_expires_in 0 is in force at once: the old secret verifies nothing", async () => {
    const { handler, api, uuid, original } = await setup()
    try {
      const rotated = await api.post(`/webhook-endpoints/${uuid}/rotate-secret`, { previous_secret_expires_in: 0 })
      expect(rotated.status).toBe(200)
      expect(rotated.data.previous_secret_expires_at).toBeNull()
      const [delivery] = await deliver(api, 50, 1, 1)
      expect(signaturesOf(delivery!)).toHaveLength(1)
      expect(verifies(rotated.data.secret, delivery!)).toBe(true)
      expect(verifies(original, delivery!)).toBe(false)
    } finally {
      await handler.dispose()
    }
  }, 120_000)
})

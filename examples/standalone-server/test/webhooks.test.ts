import Database from "better-sqlite3"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { Webhook } from "standardwebhooks"
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest"
import {
  assertBuilt,
  killServers,
  removeTemporaryDirectories,
  createOrganization,
  runCliJson,
  startServer,
  databases,
  dropTemporarySchemas,
  temporaryDatabaseEnv,
  type TestStore,
  type RunningServer,
  type OrgCreated
} from "./helpers.js"

// Outgoing webhooks of the real server process on SQLite (docs/webhooks.md "Delivery and
// the dispatcher"), with SWITCHBOARD_WEBHOOKS_ALLOW_PRIVATE=1 so a local receiver can be
// the endpoint: a contact import's contact.created events are verified with
// standardwebhooks; deliveries pending when the server is SIGKILLed are delivered after a
// restart; two processes on one file deliver 20 events with no duplicate webhook-id; the
// endpoint secret appears in no log line.

interface Delivery {
  readonly id: string
  readonly type: string
  readonly data: Record<string, unknown>
  readonly answered: number
}

/** What the receiver got: every request, verified with the endpoint's secret. */
const deliveries: Array<Delivery> = []
const unverified: Array<string> = []
let secret = ""
/** The status the receiver answers, and how long it waits first (ms). */
let answerStatus = 204
let answerDelayMs = 0
let receiver: Server
let receiverUrl: string

beforeAll(async () => {
  assertBuilt()
  receiver = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8")
      const status = answerStatus
      try {
        const event = new Webhook(secret).verify(body, request.headers as Record<string, string>) as Omit<Delivery, "answered">
        deliveries.push({ id: event.id, type: event.type, data: event.data, answered: status })
      } catch (error) {
        unverified.push(String(error))
      }
      setTimeout(() => response.writeHead(status).end(), answerDelayMs)
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`
})

beforeEach(() => {
  deliveries.length = 0
  unverified.length = 0
  answerStatus = 204
  answerDelayMs = 0
})

afterEach(killServers)
afterAll(async () => {
  killServers()
  removeTemporaryDirectories()
  await dropTemporarySchemas()
  receiver.closeAllConnections()
  await new Promise((resolve) => receiver.close(resolve))
})

const call = async (server: RunningServer, apiKey: string, method: string, path: string, body?: unknown) => {
  const response = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${apiKey}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  return { status: response.status, body: (await response.json()) as { data: any; errors: Array<{ code: string }> } }
}

/** Creates an endpoint at the receiver through the API; the receiver verifies with its secret. */
const createEndpoint = async (server: RunningServer, apiKey: string) => {
  const created = await call(server, apiKey, "POST", "/webhook-endpoints", { url: receiverUrl })
  expect(created.status, JSON.stringify(created.body.errors)).toBe(200)
  secret = created.body.data.secret as string
  expect(secret).toMatch(/^whsec_/)
  return created.body.data.uuid as string
}

const importContacts = async (server: RunningServer, apiKey: string, from: number, count: number) => {
  const contacts = Array.from({ length: count }, (_, index) => ({
    first_name: `Person ${from + index}`,
    phone: `+3161${String(from + index).padStart(7, "0")}`
  }))
  const imported = await call(server, apiKey, "POST", "/contacts/bulk", { contacts })
  expect(imported.status, JSON.stringify(imported.body.errors)).toBe(200)
}

const waitFor = async (condition: () => boolean | Promise<boolean>, timeoutMs: number, what: string) => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await condition()) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`timed out waiting for ${what}`)
}

/** Whether any line the servers printed contains the endpoint secret (or its base64 part). */
const expectNoSecretIn = (servers: ReadonlyArray<RunningServer>) => {
  const base64 = secret.slice("whsec_".length)
  for (const server of servers) {
    const { stderr, stdout } = server.output()
    for (const text of [stdout, stderr]) {
      expect(text).not.toContain(secret)
      expect(text).not.toContain(base64)
    }
  }
}

const environment = (extra: Record<string, string> = {}, store: TestStore = "sqlite"): Record<string, string> => ({
  ...temporaryDatabaseEnv(store),
  SWITCHBOARD_WEBHOOKS_ALLOW_PRIVATE: "1",
  ...extra
})

describe("standalone server: outgoing webhooks", () => {
  it("delivers a contact.created event of POST /contacts/bulk, verified with standardwebhooks", async () => {
    const env = environment()
    const { api_key } = await createOrganization(env, "Acme")
    const server = await startServer(env)
    await createEndpoint(server, api_key)
    await importContacts(server, api_key, 1, 1)
    await waitFor(() => deliveries.length >= 1, 10_000, "the delivery")
    expect(unverified).toEqual([])
    expect(deliveries).toHaveLength(1)
    expect(deliveries[0]).toMatchObject({ type: "contact.created", data: { first_name: "Person 1", phone: "+31610000001" } })
    expectNoSecretIn([server])
  }, 30_000)

  it("seed writes no webhook events (synthetic data); the API's import of the same organization does", async () => {
    const env = environment()
    const { org_id, api_key } = await runCliJson<OrgCreated & { org_id: string }>(["org", "create", "--name", "Acme"], env)
    const server = await startServer(env)
    await createEndpoint(server, api_key)
    await runCliJson(["seed", "--org", org_id, "--contacts", "20", "--chats", "10", "--seed", "7"], env)
    const eventRows = () => {
      const db = new Database(env.DATABASE_URL!.slice("sqlite:".length), { readonly: true })
      try {
        return (db.prepare("SELECT COUNT(*) AS count FROM webhook_events").get() as { count: number }).count
      } finally {
        db.close()
      }
    }
    expect(eventRows()).toBe(0)
    // The control: the endpoint subscribes, and an API import writes and delivers its event.
    await importContacts(server, api_key, 900, 1)
    expect(eventRows()).toBeGreaterThanOrEqual(1)
    await waitFor(() => deliveries.length >= 1, 10_000, "the delivery")
    expect(deliveries.map((delivery) => delivery.type)).toEqual(["contact.created"])
  }, 60_000)

  it("delivers after a restart what was pending when the server was killed (SIGKILL)", async () => {
    const env = environment({ SWITCHBOARD_WEBHOOKS_RETRY_DELAYS_MS: "2000,2000" })
    const { api_key } = await createOrganization(env, "Acme")
    const first = await startServer(env)
    const endpoint = await createEndpoint(first, api_key)
    answerStatus = 503
    await importContacts(first, api_key, 10, 3)
    // Every first attempt answered 503 and recorded: the three deliveries are pending.
    await waitFor(
      async () => (await call(first, api_key, "GET", `/webhook-endpoints/${endpoint}/deliveries`)).body.data.deliveries.length >= 3,
      10_000,
      "three recorded attempts"
    )
    first.child.kill("SIGKILL")
    await first.exited
    answerStatus = 204
    const second = await startServer(env)
    await waitFor(() => deliveries.filter((delivery) => delivery.answered === 204).length >= 3, 15_000, "the deliveries after restart")
    const delivered = deliveries.filter((delivery) => delivery.answered === 204)
    expect(new Set(delivered.map((delivery) => delivery.id)).size).toBe(3)
    expect(new Set(deliveries.map((delivery) => delivery.id)).size).toBe(3)
    expect(unverified).toEqual([])
    expectNoSecretIn([first, second])
  }, 60_000)
})

describe.each(databases())("standalone server: outgoing webhooks from two processes (%s)", (store) => {
  it(`two server processes on one ${store} database deliver 20 events with no duplicate webhook-id`, async () => {
    const env = environment({}, store)
    const { api_key } = await createOrganization(env, "Acme")
    const [one, two] = await Promise.all([startServer(env), startServer(env)])
    await createEndpoint(one!, api_key)
    answerDelayMs = 50
    await Promise.all([importContacts(one!, api_key, 100, 10), importContacts(two!, api_key, 200, 10)])
    await waitFor(() => deliveries.length >= 20, 20_000, "20 deliveries")
    // Both dispatchers keep polling: nothing more may arrive.
    await new Promise((resolve) => setTimeout(resolve, 2_500))
    expect(unverified).toEqual([])
    expect(deliveries).toHaveLength(20)
    expect(new Set(deliveries.map((delivery) => delivery.id)).size).toBe(20)
    expect(deliveries.every((delivery) => delivery.type === "contact.created")).toBe(true)
    expectNoSecretIn([one!, two!])
  }, 60_000)
})

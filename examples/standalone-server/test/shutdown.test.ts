import Database from "better-sqlite3"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { Webhook } from "standardwebhooks"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { startSimulator, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"
import {
  assertBuilt,
  killServers,
  organizationWithChannel,
  removeTemporaryDirectories,
  startServer,
  type RunningServer
} from "./helpers.js"

// A clean shutdown of the built server (docs/standalone-server.md "Stopping it"): SIGTERM
// in the middle of a send-queue backlog, with sends to Meta (the WhatsApp simulator, which
// answers slowly) and webhook deliveries (a local receiver that answers slowly) in flight.
// The process exits 0 within the drain's bound, having recorded every attempt it made;
// after a restart on the same database every message reaches Meta exactly once and every
// webhook event reaches the receiver exactly once.

const TOKEN = "EAAGshutdownToken7Yu1Io3Pa5Sd9F"
const PHONE_NUMBER_ID = "106540352270077"
const MESSAGES = 200
/** The send timeout (the drain lasts at most this + 2 s); leases short enough that a lost record shows as a second send within the test. */
const QUEUE_ENV = {
  SWITCHBOARD_SEND_TIMEOUT_MS: "3000",
  SWITCHBOARD_SEND_LEASE_MS: "5000",
  SWITCHBOARD_SEND_SETTLE_MS: "500",
  DEVELOPER_API_SEND_RATE_LIMIT_MAX: "100000",
  SWITCHBOARD_WEBHOOKS_ALLOW_PRIVATE: "1"
}
/** The longest a SIGTERM may take: requests (10 s) and the drain (send timeout + 2 s) run side by side, plus the closing. */
const SHUTDOWN_BOUND_MS = 15_000

let simulator: WhatsAppSimulator
let receiver: Server
let receiverUrl = ""
let secret = ""
/** Every verified delivery's event id, in arrival order; how many requests are being answered now. */
const received: Array<string> = []
let answering = 0

beforeAll(async () => {
  assertBuilt()
  // Each Graph answer takes 300 ms: a paced channel keeps a few requests in flight.
  simulator = await startSimulator({
    numbers: [{ phone_number_id: PHONE_NUMBER_ID, display_phone_number: "+31 6 1234 5678", waba_id: "102290129340398", access_token: TOKEN }],
    statuses: [],
    delayMs: 300
  })
  // The webhook receiver answers after 400 ms, so deliveries are in flight too.
  receiver = createServer((request, response) => {
    answering++
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const event = new Webhook(secret).verify(Buffer.concat(chunks).toString("utf8"), request.headers as Record<string, string>) as { id: string }
      received.push(event.id)
      setTimeout(() => {
        answering--
        response.writeHead(204).end()
      }, 400)
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`
})
afterEach(killServers)
afterAll(async () => {
  removeTemporaryDirectories()
  await simulator.close()
  receiver.closeAllConnections()
  await new Promise((resolve) => receiver.close(resolve))
})

/** `method path` on `server` with the API key; the answer's status and data. */
const call = async (server: RunningServer, apiKey: string, method: string, path: string, body: unknown) => {
  const response = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  return { status: response.status, data: ((await response.json()) as { data: any }).data }
}

/** The template send of message `n` to its own recipient; its message uuid. */
const send = async (server: RunningServer, apiKey: string, n: number): Promise<string> => {
  const answer = await call(server, apiKey, "POST", "/send/template", {
    phone: `+3163${String(n).padStart(7, "0")}`,
    template: { name: "order_update", language: { code: "en_US" }, components: [{ type: "body", parameters: [{ type: "text", text: `#${n}` }] }] }
  })
  expect(answer.status).toBe(200)
  return answer.data.message_id as string
}

/** Reads the database file: outbound messages by uuid → status, webhook deliveries by event id → status. */
const stored = (filename: string) => {
  const db = new Database(filename, { readonly: true })
  try {
    const messages = db.prepare("SELECT uuid, status FROM messages WHERE direction = 'outbound'").all() as Array<{ uuid: string; status: string }>
    const deliveries = db.prepare("SELECT event_id, status FROM webhook_deliveries").all() as Array<{ event_id: string; status: string }>
    return {
      messages: new Map(messages.map((row) => [row.uuid, row.status])),
      deliveries: new Map(deliveries.map((row) => [row.event_id, row.status]))
    }
  } finally {
    db.close()
  }
}

/** The message uuid of each send the simulator received (its `biz_opaque_callback_data`), and whether it was answered. */
const simulatorSends = () =>
  simulator.sends(PHONE_NUMBER_ID).map((each) => ({
    id: (each.body as { biz_opaque_callback_data?: string }).biz_opaque_callback_data ?? "",
    answered: each.answer !== null
  }))

/** How many times each item of `items` occurs, for those occurring more than once. */
const repeated = (items: ReadonlyArray<string>): Array<[string, number]> => {
  const counts = new Map<string, number>()
  for (const item of items) counts.set(item, (counts.get(item) ?? 0) + 1)
  return [...counts].filter(([, count]) => count > 1)
}

const waitFor = async (condition: () => boolean, what: string, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

describe("standalone server: SIGTERM drains the dispatchers", () => {
  it("SIGTERM mid-backlog with sends and webhook deliveries in flight: exit 0, every attempt recorded; after a restart each message is sent once and each event delivered once", async () => {
    const { env, apiKey, filename } = await organizationWithChannel({
      simulatorUrl: simulator.url,
      phoneNumberId: PHONE_NUMBER_ID,
      token: TOKEN,
      throughputMps: 20,
      templates: [{ name: "order_update", language: "en_US", category: "UTILITY", status: "APPROVED", components: [{ type: "BODY", text: "Order {{1}} has shipped." }] }],
      extraEnv: QUEUE_ENV
    })
    const first = await startServer(env)
    const endpoint = await call(first, apiKey, "POST", "/webhook-endpoints", { url: receiverUrl, events: ["message.status_updated"] })
    expect(endpoint.status).toBe(200)
    secret = endpoint.data.secret as string
    const ids: Array<string> = []
    for (let n = 0; n < MESSAGES; n += 20) ids.push(...(await Promise.all(Array.from({ length: 20 }, (_, i) => send(first, apiKey, n + i)))))
    expect(new Set(ids).size).toBe(MESSAGES)

    // Mid-backlog, with requests to Meta and to the receiver unanswered at the signal.
    await waitFor(
      () => simulatorSends().length >= 40 && received.length >= 10 && answering > 0 && simulatorSends().some((each) => !each.answered),
      "sends and deliveries in flight",
      30_000
    )
    const inFlight = { sends: simulatorSends().filter((each) => !each.answered).length, deliveries: answering }
    const killer = setTimeout(() => first.child.kill("SIGKILL"), SHUTDOWN_BOUND_MS)
    const signalledAt = Date.now()
    first.child.kill("SIGTERM")
    const code = await first.exited
    clearTimeout(killer)
    console.log(`shutdown test: ${inFlight.sends} sends and ${inFlight.deliveries} deliveries in flight at SIGTERM; exited ${code} after ${Date.now() - signalledAt} ms`)
    expect(code, first.output().stderr.slice(-2_000)).toBe(0)

    // Every attempt the first process made is recorded: each message Meta received is `sent`,
    // each event the receiver got is `delivered` (nothing left for a lease to hand out again).
    const atStop = stored(filename)
    const sentBefore = new Set(simulatorSends().map((each) => each.id))
    expect(sentBefore.size).toBeLessThan(MESSAGES)
    expect([...sentBefore].filter((id) => atStop.messages.get(id) !== "sent")).toEqual([])
    expect([...new Set(received)].filter((id) => atStop.deliveries.get(id) !== "delivered")).toEqual([])

    // The second process sends the rest of the backlog and delivers the rest of the events.
    await startServer(env)
    const drained = () => {
      const now = stored(filename)
      return ids.every((id) => now.messages.get(id) === "sent") &&
        now.deliveries.size >= MESSAGES && [...now.deliveries.values()].every((status) => status === "delivered")
    }
    await waitFor(drained, "every message sent and every event delivered", 90_000)
    const after = stored(filename)
    const sends = simulatorSends().map((each) => each.id)
    expect(new Set(sends)).toEqual(new Set(ids))
    expect(repeated(sends)).toEqual([])
    expect(new Set(received)).toEqual(new Set(after.deliveries.keys()))
    expect(repeated(received)).toEqual([])
  }, 150_000)
})

import Database from "better-sqlite3"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { maxInWindow, startSimulator, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"
import {
  assertBuilt,
  killServers,
  organizationWithChannel,
  removeTemporaryDirectories,
  startServer,
  type RunningServer
} from "./helpers.js"

// The send queue across real processes (docs/messaging.md "The send queue"): the built
// server on a temporary SQLite file, Meta's Graph API played by the WhatsApp simulator.
// - SIGKILL during a backlog of 1 000 messages (written while the channel is paused, then
//   resumed; the kill 300 sends after the resume), then a restart: every message reaches the simulator, none twice but those in
//   flight at the kill and those whose attempt's outcome was unknown (logged), none left queued or sending;
// - two server processes on one file sharing one channel: the channel's pace holds across
//   both (no one-second window above its throughput_mps).

const TOKEN = "EAAGsendQueueToken4Rt7Yu1Io3Pa5"
const PHONE_NUMBER_ID = "106540352270001"
/** Short lease and settle time, so a killed process's messages are taken over within seconds. */
const QUEUE_ENV = {
  SWITCHBOARD_SEND_LEASE_MS: "3000",
  SWITCHBOARD_SEND_TIMEOUT_MS: "1000",
  SWITCHBOARD_SEND_SETTLE_MS: "500",
  DEVELOPER_API_SEND_RATE_LIMIT_MAX: "100000"
}

let simulator: WhatsAppSimulator
beforeAll(async () => {
  assertBuilt()
  // Each answer takes 20 ms, like a Graph round trip on a good day; no status notifications.
  simulator = await startSimulator({
    numbers: [{ phone_number_id: PHONE_NUMBER_ID, display_phone_number: "+31 6 1234 5678", waba_id: "102290129340398", access_token: TOKEN }],
    statuses: [],
    delayMs: 20
  })
})
afterEach(killServers)
afterAll(async () => {
  removeTemporaryDirectories()
  await simulator.close()
})

/** A distinct valid E.164 phone per `n` (Dutch mobile range). */
const phone = (n: number): string => `+3162${String(n).padStart(7, "0")}`

/**
 * A fresh database with one organization, its API key, one channel at `throughputMps` and
 * the approved template `order_update` (templates go whatever the customer service window:
 * docs/messaging.md "The customer service window").
 */
const freshOrganization = async (throughputMps: number) => {
  simulator.reset()
  return organizationWithChannel({
    simulatorUrl: simulator.url,
    phoneNumberId: PHONE_NUMBER_ID,
    token: TOKEN,
    throughputMps,
    templates: [{ name: "order_update", language: "en_US", category: "UTILITY", status: "APPROVED", components: [{ type: "BODY", text: "Order {{1}} has shipped." }] }],
    extraEnv: QUEUE_ENV
  })
}

/** `POST /send/template` of order_update with `text` as its parameter to `to` on `server`; the answer's data. */
const send = async (server: RunningServer, apiKey: string, to: string, text: string) => {
  const response = await fetch(`${server.baseUrl}/send/template`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({
      phone: to,
      template: { name: "order_update", language: { code: "en_US" }, components: [{ type: "body", parameters: [{ type: "text", text }] }] }
    })
  })
  const body = (await response.json()) as { data: { message_id: string; status: string } }
  expect(response.status).toBe(200)
  return body.data
}

/** The organization's one channel, paused by Meta's refusal, resumed through `server`'s API. */
const resumeOnlyChannel = async (server: RunningServer, apiKey: string) => {
  const channels = await fetch(`${server.baseUrl}/channels`, { headers: { authorization: `Bearer ${apiKey}` } })
  const [channel] = ((await channels.json()) as { data: { channels: Array<{ uuid: string; status: string }> } }).data.channels
  expect(channel?.status).toBe("paused")
  const resumed = await fetch(`${server.baseUrl}/channels/${channel!.uuid}/resume`, { method: "POST", headers: { authorization: `Bearer ${apiKey}` } })
  expect(resumed.status).toBe(200)
}

/** Runs `work` over `items`, `concurrency` at a time; the results in order. */
const pool = async <A, B>(items: ReadonlyArray<A>, concurrency: number, work: (item: A) => Promise<B>): Promise<Array<B>> => {
  const results: Array<B> = new Array(items.length)
  let next = 0
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < items.length) {
      const index = next++
      results[index] = await work(items[index]!)
    }
  }))
  return results
}

/** The message uuid each messages request to the simulator carried, in arrival order, with its arrival time. */
const sendRequests = () =>
  simulator.sends(PHONE_NUMBER_ID).map((each) => ({
    id: (each.body as { biz_opaque_callback_data?: string }).biz_opaque_callback_data ?? "",
    at: each.at_ms
  }))

/** The outbound messages' statuses in the database file, counted. */
const statusCounts = (filename: string): Record<string, number> => {
  const db = new Database(filename, { readonly: true })
  try {
    const rows = db.prepare("SELECT status, COUNT(*) AS count FROM messages WHERE direction = 'outbound' GROUP BY status").all() as Array<{ status: string; count: number }>
    return Object.fromEntries(rows.map((row) => [row.status, row.count]))
  } finally {
    db.close()
  }
}

/** The uuids of the outbound messages not recorded `sent` in the database file. */
const notSentIds = (filename: string): Set<string> => {
  const db = new Database(filename, { readonly: true })
  try {
    const rows = db.prepare("SELECT uuid FROM messages WHERE direction = 'outbound' AND status <> 'sent'").all() as Array<{ uuid: string }>
    return new Set(rows.map((row) => row.uuid))
  } finally {
    db.close()
  }
}

/** The outbound message `id`'s status, attempts and failure in the database file. */
const messageRow = (filename: string, id: string): unknown => {
  const db = new Database(filename, { readonly: true })
  try {
    return db.prepare("SELECT status, attempts, failure FROM messages WHERE uuid = ?").get(id)
  } finally {
    db.close()
  }
}

/** The log line of an attempt whose outcome is unknown (core's SendQueue). */
const UNKNOWN_OUTCOME_LOG_LINE = "Message send outcome unknown; waiting for Meta's status notification"

/** The JSON log entries in a server's stderr (`Logger.jsonLogger`'s lines; other lines skipped). */
const logEntries = (stderr: string): Array<{ message?: unknown; annotations?: Record<string, unknown> }> =>
  stderr.split("\n").flatMap((line) => {
    if (!line.startsWith("{")) return []
    try {
      return [JSON.parse(line) as { message?: unknown; annotations?: Record<string, unknown> }]
    } catch {
      return []
    }
  })

describe("the send queue across processes", () => {
  it("SIGKILL during a 1 000-message backlog, then a restart: every message reaches Meta, none twice but those in flight at the kill or of an unknown outcome", async () => {
    const { env, apiKey, filename } = await freshOrganization(100)
    const first = await startServer(env)
    // Meta refuses the first send for a reason of the account: the channel pauses, so the
    // whole backlog is written before any of it leaves; a resume then lets it go.
    simulator.script.enqueue([{ code: 131031 }])
    const sent = await pool(Array.from({ length: 1000 }, (_, index) => index), 25, (index) => send(first, apiKey, phone(index), `Message ${index}`))
    const ids = sent.map((each) => each.message_id)
    expect(new Set(ids).size).toBe(1000)
    // The refused attempt, and those claimed before the pause reached the dispatcher (a
    // channel it opened is kept up to 1 s: docs/messaging.md "The send queue"), have gone.
    const beforeResume = simulator.sends(PHONE_NUMBER_ID).length
    expect(beforeResume).toBeLessThan(700)
    await resumeOnlyChannel(first, apiKey)
    // Mid-backlog: another 300 handed to Meta, the rest waiting.
    await simulator.waitFor(() => simulator.sends(PHONE_NUMBER_ID).length >= beforeResume + 300, "300 more of the backlog sent", 30_000)
    first.child.kill("SIGKILL")
    await first.exited
    // Requests the killed process had written reach the simulator after its exit: the count
    // settles (no server runs now) before it is read.
    let count = -1
    while (count !== simulator.sends(PHONE_NUMBER_ID).length) {
      count = simulator.sends(PHONE_NUMBER_ID).length
      await new Promise((resolve) => setTimeout(resolve, 300))
    }
    // The refused attempt left nothing sent: the counts below start after it.
    const beforeKill = sendRequests().slice(1)
    // In flight at the kill: handed to Meta, its outcome not yet recorded (not `sent` in the
    // file the killed process left). Read from the file, not guessed from arrival times: on
    // a loaded machine an outcome may be recorded well after Meta's answer.
    const unrecorded = notSentIds(filename)
    expect(beforeKill.length).toBeLessThan(1000)

    const second = await startServer(env)
    await simulator.waitFor(() => {
      const seen = new Set(sendRequests().map((each) => each.id))
      return ids.every((id) => seen.has(id))
    }, "every message at the simulator", 60_000)
    const deadline = Date.now() + 30_000
    while (Date.now() < deadline) {
      const counts = statusCounts(filename)
      if ((counts.queued ?? 0) === 0 && (counts.sending ?? 0) === 0) break
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    expect(statusCounts(filename)).toEqual({ sent: 1000 })

    const arrivals = new Map<string, number>()
    for (const { id } of sendRequests().slice(1)) arrivals.set(id, (arrivals.get(id) ?? 0) + 1)
    const twice = [...arrivals].filter(([, count]) => count > 1).map(([id]) => id)
    const inFlight = new Set(beforeKill.filter((each) => unrecorded.has(each.id)).map((each) => each.id))
    // Sends recorded before the kill exist, so the rule below says something about them.
    expect(beforeKill.some((each) => !unrecorded.has(each.id))).toBe(true)
    // An attempt whose outcome was unknown (a timeout: 1 s here, on a machine that may be
    // loaded) is sent again once the settle time has passed, as docs/messaging.md "Unknown
    // outcomes" says: the one other case in which Meta may get a message twice. Each
    // process logs it, naming the message.
    const logs = [first, second].flatMap((server) => logEntries(server.output().stderr))
    const unknown = new Set(logs.filter((entry) => entry.message === UNKNOWN_OUTCOME_LOG_LINE).map((entry) => entry.annotations?.message_id))
    // The logs are read: the refused first send's pause names its message.
    expect(logs.some((entry) => typeof entry.annotations?.message_id === "string")).toBe(true)
    const unexplained = twice.filter((id) => !inFlight.has(id) && !unknown.has(id))
    console.log(`send queue crash test: ${beforeKill.length} sent before the kill, ${twice.length} sent twice (in flight at the kill: at most ${inFlight.size}; an unknown outcome: ${unknown.size})`)
    expect([...arrivals.values()].every((count) => count <= 2)).toBe(true)
    expect(
      unexplained,
      `sent twice, neither in flight at the kill nor after an unknown outcome: ${
        JSON.stringify(unexplained.map((id) => ({ id, arrivals: sendRequests().filter((each) => each.id === id), stored: messageRow(filename, id), logged: logs.filter((entry) => entry.annotations?.message_id === id) })))
      }`
    ).toEqual([])
  }, 120_000)

  it("two server processes on one SQLite file share one channel's pause and pace: no one-second window above its throughput_mps", async () => {
    const { env, apiKey } = await freshOrganization(20)
    const [one, two] = [await startServer(env), await startServer(env)]
    // Meta refuses the first send for a reason of the account: the channel pauses, and the
    // backlog builds up on both servers without a send (the stub measures a quiet machine).
    simulator.script.enqueue([{ code: 131031 }])
    const sent = []
    for (let index = 0; index < 60; index++) sent.push(await send(index % 2 === 0 ? one! : two!, apiKey, phone(5000 + index), `Paced ${index}`))
    expect(sent.map((each) => each.status)).toEqual(Array.from({ length: 60 }, () => "queued"))
    expect(simulator.sends(PHONE_NUMBER_ID)).toHaveLength(1)
    await resumeOnlyChannel(two!, apiKey)
    const ids = new Set(sent.map((each) => each.message_id))
    await simulator.waitFor(() => new Set(sendRequests().filter((each) => ids.has(each.id)).map((each) => each.id)).size >= 60, "all 60 at the simulator", 30_000)
    // The paused attempt, then each message once.
    const times = sendRequests().filter((each) => ids.has(each.id)).map((each) => each.at).slice(1)
    expect(times).toHaveLength(60)
    expect(maxInWindow(times, 1000)).toBeLessThanOrEqual(20)
    // Retried: the simulator stamps each arrival on this test process's event loop, and with
    // other test files on the machine's two cores a stamp can come late by more than pacing's
    // margin (1 / (0.95 × 20) s apart, hand-overs ≤ 25 ms late: 27 ms left for the way to the
    // stub), which reads as 21 in a second. Broken pacing fails every try.
  }, { timeout: 60_000, retry: 2 })
})

// Broadcasts (docs/benchmarks.md "Targets", docs/broadcasts.md): the BUILT standalone server
// with its defaults on a SQLite file, the WhatsApp simulator (in this process) as Meta's
// Graph API, answering each send in 20 ms.
// 1. Creating: `POST /broadcasts` to a group of BENCH_BROADCAST_AUDIENCE (default 100 000)
//    contacts: the time to the answer (target ≤ 5 s: the answer counts the audience, the
//    recipients are written afterwards) and the server's RSS growth from before the request
//    until every recipient is written (target ≤ 50 MB: the start reads and writes 100 at a
//    time). The broadcast is then cancelled on a fresh server over the same file, an
//    endpoint subscribed to its recipients' events: the RSS growth until the answer
//    (target ≤ 50 MB: the store fails the recipients in batches, SQLite 100 at a time).
// 2. Sending: a broadcast to BENCH_BROADCAST_RECIPIENTS (default 10 000) contacts through
//    one channel of throughput_mps 50: the time from `POST /broadcasts` to `completed`
//    (target ≤ 220 s; pacing alone needs 10 000 / 47.5 = 211 s) and the busiest sliding
//    one-second window at the simulator (target ≤ 50).
// BENCH_BROADCAST_CANCEL=0 leaves out (1)'s cancel, BENCH_BROADCAST_RECIPIENTS=0 all of (2):
// with both, the run is the start alone (~2 minutes on a 2-core machine).
// Checks: every recipient of (2) arrived exactly once and the broadcast counts them `sent`.
// The simulator runs in a process of its own (its CLI), so the arrival times it stamps
// are not delayed by this process's work: in the bench's own process, stamps came in
// clusters (a 30–60 ms silence, then three within 2 ms) that pacing cannot produce.
import { fork } from "node:child_process"
import { once } from "node:events"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, Layer } from "effect"
import { Channels, ChannelVerifier, Core, SecretKey, Storage, Templates } from "@switchboard/core"
import { SqliteStorage } from "@switchboard/storage-sqlite"
import { maxInWindow } from "@switchboard/whatsapp-simulator"
import {
  createOrganization,
  expectStatus,
  processMemory,
  recordTarget,
  resetPeakMemory,
  runIfMain,
  startServer,
  startSimulatorProcess,
  temporaryDirectory
} from "./lib.mjs"

const AUDIENCE = Number(process.env.BENCH_BROADCAST_AUDIENCE ?? 100_000)
const RECIPIENTS = Number(process.env.BENCH_BROADCAST_RECIPIENTS ?? 10_000)
// BENCH_BROADCAST_CANCEL=0: part 1 without its cancel (with BENCH_BROADCAST_RECIPIENTS=0, the start alone).
const CANCEL = process.env.BENCH_BROADCAST_CANCEL !== "0"
const THROUGHPUT_MPS = 50
const TOKEN = "EAAGbroadcastBenchToken000000001"
const SECRET_KEY = Buffer.alloc(32, 5).toString("base64")
const PHONE_NUMBER_ID = "106540352290001"
const SETUP = "--write-broadcast-setup"

/** Contact `n`'s phone: distinct, valid E.164 (US 415 range). */
const phoneOf = (n) => `+1415${String(4000000 + n).padStart(7, "0")}`

/**
 * Writes, through core and the SQLite store: an organization, a channel at 50 messages/s,
 * the MARKETING template spring_sale, and `size` contacts in the group "Everyone". Prints
 * `{apiKey, groupUuid}` as JSON on its last line.
 */
const writeSetup = async (filename, size) => {
  const storage = SqliteStorage.layer({ filename })
  const { organizationId, apiKey } = await createOrganization(storage)
  const services = Core.layer.pipe(
    Layer.provide(
      Layer.merge(
        SecretKey.layer(Buffer.from(SECRET_KEY, "base64")),
        Layer.succeed(ChannelVerifier, { verify: () => Effect.succeed({ display_phone_number: "+31 6 1234 5678" }) })
      )
    )
  )
  const groupUuid = await Effect.runPromise(
    Effect.gen(function* () {
      yield* (yield* Channels).add(organizationId, {
        phone_number_id: PHONE_NUMBER_ID,
        waba_id: "102290129340398",
        access_token: TOKEN,
        throughput_mps: THROUGHPUT_MPS
      })
      yield* (yield* Templates).create(organizationId, {
        name: "spring_sale",
        language: "en_US",
        category: "MARKETING",
        status: "APPROVED",
        components: [{ type: "BODY", text: "Hi {{1}}, our spring sale starts today." }]
      })
      const store = yield* Storage
      const now = new Date().toISOString()
      for (let start = 0; start < size; start += 1000) {
        const rows = Array.from({ length: Math.min(1000, size - start) }, (_, offset) => ({
          phone: phoneOf(start + offset),
          phone_valid: true,
          details: { first_name: `Person ${start + offset}` },
          groups: [{ _tag: "ByName", name: "Everyone" }]
        }))
        const ids = [...rows.map(() => crypto.randomUUID()), crypto.randomUUID()]
        const imported = yield* store.contacts.importBulk(organizationId, { rows, ids, contactsLimit: null, now, events: false })
        if (imported._tag !== "Imported") throw new Error(`import: ${imported._tag}`)
      }
      const [group] = yield* store.groups.findByNames(organizationId, ["Everyone"])
      return group.uuid
    }).pipe(Effect.provide(services), Effect.provide(storage))
  )
  console.log(JSON.stringify({ apiKey, groupUuid }))
}

/** {@link writeSetup} in a child process (this one hosts the simulator); its `{apiKey, groupUuid}`. */
const setUp = async (filename, size) => {
  const child = fork(fileURLToPath(import.meta.url), [SETUP, filename, String(size)], { stdio: ["ignore", "pipe", "inherit", "ipc"] })
  let output = ""
  child.stdout.setEncoding("utf8").on("data", (chunk) => (output += chunk))
  const [code] = await once(child, "exit")
  if (code !== 0) throw new Error(`writing the setup failed (exit code ${code})`)
  return JSON.parse(output.trim().split("\n").pop())
}

/** The process's resident set size and its peak, in MiB (what this bench calls MB), from /proc. */
const memoryOf = (pid) => {
  const { rss, peak } = processMemory(pid)
  return { rss: rss / 2 ** 20, peak: peak / 2 ** 20 }
}

/** A request's options: the API key, and a JSON body when given (then POST). */
const json = (apiKey, body) => ({
  method: body === undefined ? "GET" : "POST",
  headers: { authorization: `Bearer ${apiKey}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
  ...(body === undefined ? {} : { body: JSON.stringify(body) })
})

const sale = { name: "spring_sale", language: { code: "en_US" }, components: [{ type: "body", parameters: [{ type: "text", text: "{{contact.first_name|there}}" }] }] }

/** Polls the broadcast until `done`, every `everyMs`; the broadcast. */
const broadcastWhen = async (url, apiKey, uuid, done, everyMs = 250) => {
  for (;;) {
    const broadcast = JSON.parse(await expectStatus(`${url}/broadcasts/${uuid}`, json(apiKey))).data
    if (done(broadcast)) return broadcast
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}

/** Part 1: creating a broadcast to a large group. */
const creating = async (simulator) => {
  const directory = temporaryDirectory()
  const filename = join(directory, "broadcast-create.db")
  const { apiKey, groupUuid } = await setUp(filename, AUDIENCE)
  const server = await startServer("switchboard", filename, directory, { SWITCHBOARD_SECRET_KEY: SECRET_KEY, WHATSAPP_API_BASE_URL: simulator.url })
  try {
    await expectStatus(`${server.url}/verify`, json(apiKey))
    const before = memoryOf(server.pid)
    const asked = performance.now()
    const created = JSON.parse(await expectStatus(`${server.url}/broadcasts`, json(apiKey, { name: "Big", template: sale, audience: { group_uuids: [groupUuid] } }))).data
    const answerSeconds = (performance.now() - asked) / 1000
    const written = await broadcastWhen(server.url, apiKey, created.uuid, (b) => b.counts.total >= AUDIENCE, 500)
    const startSeconds = (performance.now() - asked) / 1000
    const after = memoryOf(server.pid)
    await server.stop()
    const growth = after.peak - before.rss
    const cancel = CANCEL ? await cancelling(simulator, filename, directory, apiKey, created.uuid) : null
    return [
      `Broadcasts: creating one to a group of ${AUDIENCE} contacts (SQLite, standalone server defaults)`,
      `  ${recordTarget(`POST /broadcasts to ${AUDIENCE} contacts, answer (≤ 5 s)`, answerSeconds * 1000, "most", 5000, "ms")} answered in ${(answerSeconds * 1000).toFixed(0)} ms (${created.status})`,
      `  all ${written.counts.total} recipients written ${startSeconds.toFixed(1)} s after the request`,
      `  ${recordTarget("broadcast start: server RSS growth (≤ 50 MB)", growth, "most", 50, "MB")} server RSS ${before.rss.toFixed(0)} MB before, ` +
        `peak ${after.peak.toFixed(0)} MB while writing: +${growth.toFixed(0)} MB`,
      ...(cancel === null ? [] : cancelLines(cancel))
    ].join("\n")
  } catch (error) {
    await server.stop().catch(() => undefined)
    throw error
  }
}

/** The lines of part 1's cancel. */
const cancelLines = (cancel) => [
  `  cancelling it (server restarted; an endpoint subscribed to message.status_updated, so each of the ${cancel.failed} queued recipients is failed with its event):`,
  `  ${recordTarget(`broadcast cancel of ${AUDIENCE}: server RSS growth (≤ 50 MB)`, cancel.growth, "most", 50, "MB")} answered in ${cancel.seconds.toFixed(1)} s; ` +
    `server RSS ${cancel.before.toFixed(0)} MB before, peak ${cancel.peak.toFixed(0)} MB until the answer: +${cancel.growth.toFixed(0)} MB`
]

/**
 * Part 1's cancel, on a fresh server over the same file (so its RSS starts from an idle
 * server's, not from the start's peak): an endpoint subscribed to `message.status_updated`
 * (private addresses allowed; nothing listens there, the bench stops the server before its
 * deliveries matter), then `POST /broadcasts/{uuid}/cancel`, which fails every queued
 * recipient with its event in one transaction. The peak RSS (VmHWM, reset just before)
 * until the answer, against the RSS before; `{before, peak, growth, seconds, failed}` (MB, s).
 */
const cancelling = async (simulator, filename, directory, apiKey, uuid) => {
  const server = await startServer("switchboard", filename, directory, {
    SWITCHBOARD_SECRET_KEY: SECRET_KEY,
    WHATSAPP_API_BASE_URL: simulator.url,
    SWITCHBOARD_WEBHOOKS_ALLOW_PRIVATE: "1"
  })
  try {
    await expectStatus(`${server.url}/verify`, json(apiKey))
    await expectStatus(`${server.url}/webhook-endpoints`, json(apiKey, { url: "http://127.0.0.1:9/switchboard-bench", events: ["message.status_updated"] }))
    await new Promise((resolve) => setTimeout(resolve, 2000))
    const before = memoryOf(server.pid).rss
    const reset = resetPeakMemory(server.pid)
    const asked = performance.now()
    const cancelled = JSON.parse(await expectStatus(`${server.url}/broadcasts/${uuid}/cancel`, json(apiKey, {}))).data
    const seconds = (performance.now() - asked) / 1000
    const peak = memoryOf(server.pid).peak
    await server.stop()
    if (!reset) throw new Error("the kernel's peak RSS could not be reset (/proc/<pid>/clear_refs)")
    if (cancelled.status !== "cancelled") throw new Error(`expected cancelled, got ${JSON.stringify(cancelled)}`)
    return { before, peak, growth: peak - before, seconds, failed: cancelled.counts.failed }
  } catch (error) {
    await server.stop().catch(() => undefined)
    throw error
  }
}

/** Part 2: a broadcast sent through one paced channel. */
const sending = async (simulator) => {
  const directory = temporaryDirectory()
  const filename = join(directory, "broadcast-send.db")
  const { apiKey, groupUuid } = await setUp(filename, RECIPIENTS)
  await simulator.reset()
  const server = await startServer("switchboard", filename, directory, { SWITCHBOARD_SECRET_KEY: SECRET_KEY, WHATSAPP_API_BASE_URL: simulator.url })
  try {
    const asked = performance.now()
    const created = JSON.parse(await expectStatus(`${server.url}/broadcasts`, json(apiKey, { name: "Paced", template: sale, audience: { group_uuids: [groupUuid] } }))).data
    const done = await broadcastWhen(server.url, apiKey, created.uuid, (b) => b.status !== "sending", 250)
    const seconds = (performance.now() - asked) / 1000
    await server.stop()
    if (done.status !== "completed" || done.counts.sent !== RECIPIENTS) throw new Error(`expected completed with ${RECIPIENTS} sent, got ${JSON.stringify(done)}`)
    const sends = await simulator.sends()
    const recipients = new Set(sends.map((each) => each.body?.to))
    if (sends.length !== RECIPIENTS || recipients.size !== RECIPIENTS) throw new Error(`expected ${RECIPIENTS} distinct recipients at the simulator, got ${sends.length} (${recipients.size} distinct)`)
    const times = sends.map((each) => each.at_ms).sort((a, b) => a - b)
    const busiest = maxInWindow(times, 1000)
    // BENCH_BROADCAST_SHOW_WINDOW=1: where the busiest second lies (seconds after the first arrival) and its gaps (ms).
    if (process.env.BENCH_BROADCAST_SHOW_WINDOW) console.log(`  busiest second: ${describeWindow(times, busiest)}`)
    return [
      `Broadcasts: sending one to ${RECIPIENTS} contacts through a channel of ${THROUGHPUT_MPS} messages/s (pacing alone: ${(RECIPIENTS / (0.95 * THROUGHPUT_MPS)).toFixed(0)} s)`,
      `  ${recordTarget(`broadcast of ${RECIPIENTS} at ${THROUGHPUT_MPS}/s: time to completed (≤ 220 s)`, seconds, "most", 220, "s")} completed ${seconds.toFixed(1)} s after POST /broadcasts`,
      `  ${recordTarget("broadcast: busiest 1 s window at the stub", busiest, "most", THROUGHPUT_MPS, "msg")} busiest sliding one-second window: ${busiest}`
    ].join("\n")
  } catch (error) {
    await server.stop().catch(() => undefined)
    throw error
  }
}

/** The first sliding second of sorted `times` holding `count` arrivals: its start after the first arrival (s) and its gaps (ms). */
const describeWindow = (times, count) => {
  let start = 0
  for (let end = 0; end < times.length; end++) {
    while (times[end] - times[start] >= 1000) start++
    if (end - start + 1 === count) {
      const gaps = times.slice(start + 1, end + 1).map((time, index) => Math.round(time - times[start + index]))
      return `${((times[start] - times[0]) / 1000).toFixed(2)} s in; gaps ${gaps.join(" ")}`
    }
  }
  return ""
}

/**
 * The WhatsApp simulator's CLI in a child process (lib.mjs `startSimulatorProcess`) with the
 * bench's number, no status notifications and 20 ms answers: `{url, reset(), sends(),
 * close()}`, `sends()` the messages requests it received (with `at_ms`, its arrival time).
 */
const startBroadcastSimulator = async (directory) => {
  const simulator = await startSimulatorProcess(
    directory,
    ["--phone-number-id", PHONE_NUMBER_ID, "--waba-id", "102290129340398", "--display-phone-number", "+31 6 1234 5678", "--statuses", "none", "--delay-ms", "20"],
    { SIMULATOR_ACCESS_TOKEN: TOKEN }
  )
  return {
    url: simulator.url,
    reset: () => simulator.client.reset(),
    sends: () => simulator.client.received({ route: "messages", phone_number_id: PHONE_NUMBER_ID }),
    close: simulator.close
  }
}

export const run = async () => {
  const simulator = await startBroadcastSimulator(temporaryDirectory())
  try {
    const parts = [await creating(simulator)]
    if (RECIPIENTS > 0) parts.push(await sending(simulator))
    return parts.join("\n")
  } finally {
    await simulator.close()
  }
}

if (process.argv[2] === SETUP) await writeSetup(process.argv[3], Number(process.argv[4]))
else runIfMain(import.meta.url, run)

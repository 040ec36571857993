// Outbound dispatch (docs/benchmarks.md "Outbound dispatch", docs/messaging.md "The send queue"):
// a SQLite file holding a backlog of BENCH_DISPATCH_MESSAGES (default 20 000) queued template
// messages, one per recipient, spread over BENCH_DISPATCH_CHANNELS (default 20) channels of
// throughput_mps 50, dispatched in the same run by two servers one after the other, each on
// its own byte-for-byte copy of the file: a hand-written dispatcher (servers/dispatch-baseline.mjs:
// node + better-sqlite3 + undici) and the BUILT standalone server with its defaults. The
// WhatsApp simulator, in its own process (its CLI), plays Meta's Graph API and answers every
// send after 20 ms; the bench polls its control API's count and reads the sends once at the end.
// Each clock starts when the server listens (its dispatcher starts then) and stops at the
// simulator's last arrival. Figures, Switchboard's beside the baseline's with the ratio:
// messages per second handed to Meta (pacing allows at most 950: see PACING_CEILING), the
// server's CPU time per message (targets ≤ 600 µs and ≤ 1.5× the baseline's), the busiest
// sliding one-second window of any channel (target ≤ its throughput_mps), and the lowest
// share of throughput_mps a channel reached while it had a backlog (its arrivals over the
// time from the first to the last, target ≥ 90%, at most 95%).
// Checks, of both: every message arrived exactly once, and the file ends with every message `sent`.
import { fork } from "node:child_process"
import { once } from "node:events"
import { copyFileSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import Database from "better-sqlite3"
import Pg from "pg"
import { Effect, Layer } from "effect"
import { Channels, ChannelVerifier, Core, SecretKey, Storage } from "@switchboard/core"
import { SqliteStorage } from "@switchboard/storage-sqlite"
import { maxInWindow } from "@switchboard/whatsapp-simulator"
import { createOrganization, processCpuSeconds, recordTarget, runIfMain, startServer, startSimulatorProcess, temporaryDirectory } from "./lib.mjs"

const MESSAGES = Number(process.env.BENCH_DISPATCH_MESSAGES ?? 20_000)
const CHANNELS = Number(process.env.BENCH_DISPATCH_CHANNELS ?? 20)
const THROUGHPUT_MPS = 50
/**
 * The most messages per second pacing lets through: each channel's slots are
 * 1 / (0.95 × throughput_mps) s apart (docs/messaging.md "Order and pacing"), so 20 channels of 50
 * hand over at most 950 a second (docs/benchmarks.md "Outbound dispatch").
 */
const PACING_CEILING = CHANNELS * THROUGHPUT_MPS * 0.95
const TOKEN = "EAAGdispatchBenchToken00000000001"
const SECRET_KEY = Buffer.alloc(32, 3).toString("base64")

/** Channel `index`'s Meta phone_number_id. */
const phoneNumberIdOf = (index) => String(106540352280000 + index)

/** Recipient `n`'s phone: distinct, valid E.164 (US 415 range). */
const phoneOf = (n) => `+1415${String(3000000 + n).padStart(7, "0")}`

/**
 * The backlog, written through core and the SQLite store before the server starts: an
 * organization, its channels, one contact per recipient and one queued template message
 * each (created in the send queue unclaimed, as an auto-reply is), channels taken in turn.
 * Templates, so the recipients (who never wrote) need no customer service window
 * (docs/messaging.md "The customer service window").
 */
const writeBacklog = async (filename) => {
  // `postgres:<schema>`: a fresh schema in the database of POSTGRES_URL (migrated by the store).
  const storage = filename.startsWith("postgres:")
    ? (await import("@switchboard/storage-postgres")).PostgresStorage.layer({ connectionString: process.env.POSTGRES_URL, schema: filename.slice("postgres:".length) })
    : SqliteStorage.layer({ filename })
  const { organizationId } = await createOrganization(storage)
  const services = Core.layer.pipe(
    Layer.provide(
      Layer.merge(
        SecretKey.layer(Buffer.from(SECRET_KEY, "base64")),
        Layer.succeed(ChannelVerifier, { verify: () => Effect.succeed({ display_phone_number: "+31 6 1234 5678" }) })
      )
    )
  )
  return Effect.runPromise(
    Effect.gen(function* () {
      const channels = yield* Channels
      const store = yield* Storage
      const channelIds = []
      for (let index = 0; index < CHANNELS; index++) {
        const channel = yield* channels.add(organizationId, {
          phone_number_id: phoneNumberIdOf(index),
          waba_id: "102290129340398",
          access_token: TOKEN,
          throughput_mps: THROUGHPUT_MPS
        })
        channelIds.push(channel.uuid)
      }
      const now = Date.now()
      for (let start = 0; start < MESSAGES; start += 1000) {
        const rows = Array.from({ length: Math.min(1000, MESSAGES - start) }, (_, offset) => ({
          phone: phoneOf(start + offset),
          phone_valid: true,
          details: { first_name: `Recipient ${start + offset}` },
          groups: []
        }))
        const ids = rows.map(() => crypto.randomUUID())
        const imported = yield* store.contacts.importBulk(organizationId, { rows, ids, contactsLimit: null, now: new Date(now).toISOString(), events: false })
        if (imported._tag !== "Imported") throw new Error(`import: ${imported._tag}`)
        for (const [offset, contact] of imported.result.contacts.entries()) {
          const n = start + offset
          const at = new Date(now).toISOString()
          yield* store.chats.appendMessage(organizationId, {
            contact: { _tag: "ById", uuid: contact.uuid },
            newChat: { uuid: crypto.randomUUID(), status: "open" },
            message: {
              uuid: crypto.randomUUID(), direction: "outbound", type: "template", text: `Backlog message ${n}`,
              template: { name: "order_update", language: { code: "en_US" }, components: [{ type: "body", parameters: [{ type: "text", text: `#${n}` }] }] },
              media: null,
              content: null, status: "queued", provider_message_id: null, failure: null, channel_uuid: channelIds[n % CHANNELS],
              attempts: 0, next_attempt_at: null, broadcast_uuid: null, created_at: at, updated_at: at
            },
            unreadIncrement: 0,
            reopen: { from: [], to: "open" },
            dedupe: false,
            now: at,
            outbox: { to: phoneOf(n), class: "single", expires_at: new Date(now + 4 * 3_600_000).toISOString(), claim: null }
          })
        }
      }
    }).pipe(Effect.provide(services), Effect.provide(storage))
  )
}

/**
 * {@link writeBacklog} in a child process, so that this process keeps a small heap while it
 * polls the simulator (when the simulator ran in this process, the backlog's 20 000 writes
 * here left a heap whose garbage collector paused it ~100 ms at a time, and the arrivals it
 * then stamped together showed as bursts).
 */
const writeBacklogInChildProcess = async (filename) => {
  const child = fork(fileURLToPath(import.meta.url), [WRITE_BACKLOG, filename], { stdio: "inherit" })
  const [code] = await once(child, "exit")
  if (code !== 0) throw new Error(`writing the backlog failed (exit code ${code})`)
}

const WRITE_BACKLOG = "--write-dispatch-backlog"

/**
 * For BENCH_DISPATCH_POSTGRES_TEMPLATE: writes the backlog into schema `schema` of database
 * `template` unless it is there already, then makes `<template>_run` afresh as a copy of it
 * and resolves its connection string (POSTGRES_URL's, another database).
 */
const copyOfTemplate = async (template, schema) => {
  const urlOf = (database) => {
    const url = new URL(process.env.POSTGRES_URL)
    url.pathname = `/${database}`
    return url.toString()
  }
  const admin = new Pg.Client({ connectionString: process.env.POSTGRES_URL })
  await admin.connect()
  try {
    const exists = (await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [template])).rowCount === 1
    if (!exists) {
      await admin.query(`CREATE DATABASE "${template}"`)
      const url = process.env.POSTGRES_URL
      process.env.POSTGRES_URL = urlOf(template)
      try {
        await writeBacklogInChildProcess(`postgres:${schema}`)
      } finally {
        process.env.POSTGRES_URL = url
      }
    }
    await admin.query(`DROP DATABASE IF EXISTS "${template}_run" WITH (FORCE)`)
    await admin.query(`CREATE DATABASE "${template}_run" TEMPLATE "${template}"`)
  } finally {
    await admin.end()
  }
  return urlOf(`${template}_run`)
}

/**
 * Where the first sliding second of sorted `times` that holds `count` of them starts (ms after
 * the channel's first arrival, of its whole span) and the gaps between its arrivals
 * (BENCH_DISPATCH_SHOW_WINDOW=1 prints them: bursts show as runs of small gaps).
 */
const gapsOfWindow = (times, count) => {
  let start = 0
  for (let end = 0; end < times.length; end++) {
    while (times[end] - times[start] >= 1000) start++
    if (end - start + 1 === count) return `at +${Math.round(times[start] - times[0])} ms of ${Math.round(times[times.length - 1] - times[0])}: ` + times.slice(start + 1, end + 1).map((time, index) => Math.round(time - times[start + index])).join(" ")
  }
  return ""
}

/** Each channel's arrivals (epoch ms), by phone_number_id, from the simulator's `received` records of sends. */
const arrivalsByChannel = (sends) => {
  const byChannel = new Map()
  for (const each of sends) {
    const list = byChannel.get(each.phone_number_id) ?? []
    list.push(each.at_ms)
    byChannel.set(each.phone_number_id, list)
  }
  return byChannel
}

/** Polls `check` (async, truthy when done) every 100 ms for at most `timeoutMs`; throws `what` past it. */
const waitUntil = async (check, what, timeoutMs) => {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/** The messages of the SQLite file `filename` by status: `[{status, count}]`. */
const statusesOf = (filename) => {
  const db = new Database(filename, { readonly: true, fileMustExist: true })
  try {
    return db.prepare("SELECT status, COUNT(*) AS count FROM messages GROUP BY status").all()
  } finally {
    db.close()
  }
}

/**
 * One dispatch of the backlog in `filename` by server `name` of lib.mjs (the standalone
 * server or the hand-written baseline), against the simulator (in its own process, reset
 * first). The clock starts when the server listens and stops at the simulator's last
 * arrival; the CPU is the server's from then until the last send arrived. Checks that every
 * message arrived exactly once and that the file ends with every message `sent`. Resolves
 * `{rate, cpuMicrosPerMessage, worstWindow, lowestShare, elapsedSeconds, gaps}`.
 */
const dispatchOnce = async (name, filename, directory, simulator, options = {}) => {
  // options.processes: how many servers share the backlog (PostgreSQL); options.statuses: reads the rows' statuses.
  const processes = options.processes ?? 1
  const readStatuses = options.statuses ?? (() => statusesOf(filename))
  await simulator.client.reset()
  // BENCH_DISPATCH_COUNT_LATE=1: the server logs at debug level, and the bench counts the
  // messages it handed back late for their pacing slot (the log costs CPU: not for figures).
  const countLate = process.env.BENCH_DISPATCH_COUNT_LATE === "1"
  const env = { SWITCHBOARD_SECRET_KEY: SECRET_KEY, WHATSAPP_API_BASE_URL: simulator.url, ...(countLate ? { LOG_LEVEL: "debug" } : {}) }
  const servers = await Promise.all(Array.from({ length: processes }, () => startServer(name, filename, directory, env)))
  const server = servers[0]
  const startedAt = Date.now()
  const cpuOfServers = () => servers.reduce((sum, each) => sum + processCpuSeconds(each.pid), 0)
  const cpuAtStart = cpuOfServers()
  let cpuSeconds
  try {
    // A count, not the list: the simulator answers it without copying 20 000 records.
    await waitUntil(async () => (await simulator.client.receivedCount({ route: "messages" })).count >= MESSAGES, `${name}: the whole backlog at the simulator`, 600_000)
    cpuSeconds = cpuOfServers() - cpuAtStart
    await waitUntil(async () => (await simulator.client.receivedCount({ route: "messages" })).answered >= MESSAGES, `${name}: every send answered`, 60_000)
    await waitUntil(async () => (await readStatuses()).every((row) => row.status === "sent"), `${name}: every message recorded sent`, 60_000)
  } finally {
    for (const each of servers) await each.stop()
  }
  if (process.env.BENCH_KEEP_LOG_TMP) copyFileSync(server.logFile, `/tmp/dispatch-${name}.log`)
  if (countLate) {
    const log = readFileSync(server.logFile, "utf8")
    const late = /(\d+) messages handed back late/.exec(log)?.[1] ?? log.split("late for its pacing slot").length - 1
    console.log(`  ${name}: ${late} messages handed back late for their slot`)
  }
  const sends = await simulator.client.received({ route: "messages" })
  const ids = sends.map((each) => each.body?.biz_opaque_callback_data)
  if (ids.length !== MESSAGES || new Set(ids).size !== MESSAGES) throw new Error(`${name}: expected ${MESSAGES} distinct messages at the simulator, got ${ids.length} (${new Set(ids).size} distinct)`)
  const statuses = await readStatuses()
  if (statuses.length !== 1 || statuses[0].status !== "sent") throw new Error(`${name}: expected every message sent, got ${JSON.stringify(statuses)}`)

  const elapsedSeconds = (sends.reduce((latest, each) => Math.max(latest, each.at_ms), 0) - startedAt) / 1000
  let worstWindow = 0
  let lowestShare = Infinity
  let gaps = ""
  for (const times of arrivalsByChannel(sends).values()) {
    times.sort((a, b) => a - b)
    const busiest = maxInWindow(times, 1000)
    if (busiest > worstWindow) gaps = gapsOfWindow(times, busiest)
    worstWindow = Math.max(worstWindow, busiest)
    const seconds = (times[times.length - 1] - times[0]) / 1000
    lowestShare = Math.min(lowestShare, (times.length - 1) / seconds / THROUGHPUT_MPS)
  }
  return { rate: MESSAGES / elapsedSeconds, cpuMicrosPerMessage: (cpuSeconds / MESSAGES) * 1e6, worstWindow, lowestShare, elapsedSeconds, gaps }
}

/**
 * Copies the SQLite file `from` to `to` byte for byte (the same pages, schema and
 * triggers), its WAL checkpointed into it first.
 */
const copyDatabase = (from, to) => {
  const db = new Database(from, { fileMustExist: true })
  db.pragma("wal_checkpoint(TRUNCATE)")
  db.close()
  copyFileSync(from, to)
}

export const run = async () => {
  const directory = temporaryDirectory()
  const filename = join(directory, "dispatch.db")
  const baselineFilename = join(directory, "dispatch-baseline.db")
  const numbersFile = join(directory, "numbers.json")
  writeFileSync(
    numbersFile,
    JSON.stringify(
      Array.from({ length: CHANNELS }, (_, index) => ({
        phone_number_id: phoneNumberIdOf(index),
        display_phone_number: "+31 6 1234 5678",
        waba_id: "102290129340398",
        access_token: TOKEN
      }))
    )
  )
  // BENCH_DISPATCH_SQLITE=0 leaves out the SQLite part (the baseline, Switchboard on SQLite
  // and the other build): only the PostgreSQL part runs, its CPU then given without SQLite's beside it.
  const sqlite = process.env.BENCH_DISPATCH_SQLITE !== "0"
  let writeSeconds = 0
  let baseline
  let switchboard
  let other
  if (sqlite) {
    const written = performance.now()
    await writeBacklogInChildProcess(filename)
    copyDatabase(filename, baselineFilename)
    writeSeconds = (performance.now() - written) / 1000
    // The simulator in its own process (answering every send after 20 ms, no status
    // notifications): its work and its garbage collector stay out of the figures' process.
    const simulator = await startSimulatorProcess(directory, ["--numbers-file", numbersFile, "--delay-ms", "20", "--statuses", "none"])
    // BENCH_OTHER_BUILD_MAIN: another build of the server (its dist/main.js) dispatches a third
    // copy of the backlog between the two (or last), for an A/B of a change in the same run.
    const otherFilename = join(directory, "dispatch-other.db")
    if (process.env.BENCH_OTHER_BUILD_MAIN) copyDatabase(filename, otherFilename)
    try {
      baseline = await dispatchOnce("dispatchBaseline", baselineFilename, directory, simulator)
      // BENCH_OTHER_BUILD_LAST=1: the other build after this one (alternate the order between runs).
      const otherLast = process.env.BENCH_OTHER_BUILD_LAST === "1"
      if (process.env.BENCH_OTHER_BUILD_MAIN && !otherLast) other = await dispatchOnce("switchboardOtherBuild", otherFilename, directory, simulator)
      switchboard = await dispatchOnce("switchboard", filename, directory, simulator)
      if (process.env.BENCH_OTHER_BUILD_MAIN && otherLast) other = await dispatchOnce("switchboardOtherBuild", otherFilename, directory, simulator)
    } finally {
      await simulator.close()
    }
  }
  // With POSTGRES_URL (BENCH_DISPATCH_POSTGRES=0 leaves it out): the same backlog in a fresh
  // PostgreSQL schema, dispatched by BENCH_DISPATCH_POSTGRES_PROCESSES (default 2) standalone
  // servers sharing it; CPU is the servers' (not PostgreSQL's).
  let postgres
  const postgresSkipped = process.env.POSTGRES_URL === undefined ? "POSTGRES_URL is not set" : process.env.BENCH_DISPATCH_POSTGRES === "0" ? "BENCH_DISPATCH_POSTGRES=0" : null
  if (postgresSkipped === null) {
    // BENCH_DISPATCH_POSTGRES_TEMPLATE=<database>, for repeated runs of this part while
    // measuring a change: the backlog is written once into that database (kept for the next
    // run), and each run dispatches a copy of it (CREATE DATABASE … TEMPLATE, a few seconds)
    // instead of writing it again (90–150 s on a 2-core machine). Its messages' expiry and
    // the channels' pacing are from when it was written: for a session's runs, not for figures.
    const template = process.env.BENCH_DISPATCH_POSTGRES_TEMPLATE
    const schema = template === undefined ? `switchboard_bench_dispatch_${process.pid}` : "switchboard_bench_dispatch"
    if (template !== undefined) process.env.POSTGRES_URL = await copyOfTemplate(template, schema)
    const pool = new Pg.Pool({ connectionString: process.env.POSTGRES_URL, max: 1 })
    try {
      if (template === undefined) {
        await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
        await writeBacklogInChildProcess(`postgres:${schema}`)
      }
      const pgSimulator = await startSimulatorProcess(directory, ["--numbers-file", numbersFile, "--delay-ms", "20", "--statuses", "none"])
      try {
        postgres = await dispatchOnce("switchboardPostgres", schema, directory, pgSimulator, {
          processes: Number(process.env.BENCH_DISPATCH_POSTGRES_PROCESSES ?? 2),
          statuses: async () => (await pool.query(`SELECT status, COUNT(*)::int AS count FROM "${schema}".messages GROUP BY status`)).rows
        })
      } finally {
        await pgSimulator.close()
      }
    } finally {
      if (template === undefined) await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
      await pool.end()
    }
  }
  const beside = (value, base, digits = 0) => `${value.toFixed(digits)} (baseline ${base.toFixed(digits)}, ${(value / base).toFixed(2)}×)`
  const postgresLines = postgres === undefined
    ? [`  PostgreSQL, two servers sharing the backlog: skipped (${postgresSkipped})`]
    : [
      `  PostgreSQL, two servers sharing the backlog: rate ${postgres.rate.toFixed(0)} messages/s, every message sent once`,
      switchboard === undefined
        ? `  CPU per message (both servers) ${postgres.cpuMicrosPerMessage.toFixed(0)} µs (SQLite's not measured: BENCH_DISPATCH_SQLITE=0)`
        : `  ${recordTarget("dispatch on PostgreSQL, 2 servers: CPU per message against SQLite's (≤ 2×)", postgres.cpuMicrosPerMessage / switchboard.cpuMicrosPerMessage, "most", 2)} ` +
          `CPU per message (both servers) ${postgres.cpuMicrosPerMessage.toFixed(0)} µs, ${(postgres.cpuMicrosPerMessage / switchboard.cpuMicrosPerMessage).toFixed(2)}× SQLite's`,
      `  ${recordTarget("dispatch on PostgreSQL, 2 servers: busiest 1 s window of any channel", postgres.worstWindow, "most", THROUGHPUT_MPS, "msg")} busiest sliding second of any channel across both ${postgres.worstWindow}`,
      ...(process.env.BENCH_DISPATCH_SHOW_WINDOW ? [`    gaps (ms) in the busiest second across both: ${postgres.gaps}`] : []),
      `  ${recordTarget("dispatch on PostgreSQL, 2 servers: lowest channel share", postgres.lowestShare, "least", 0.9)} lowest channel share ${(postgres.lowestShare * 100).toFixed(1)}%`
    ]
  if (!sqlite) {
    return [
      `Outbound dispatch: ${MESSAGES} queued messages, ${CHANNELS} channels × ${THROUGHPUT_MPS} messages/s, the simulator in its own process answering every send in 20 ms;`,
      `  SQLite part skipped (BENCH_DISPATCH_SQLITE=0)${postgres === undefined ? "" : `; dispatched in ${postgres.elapsedSeconds.toFixed(1)} s (pacing allows at most ${PACING_CEILING.toFixed(0)} messages/s)`}`,
      ...postgresLines
    ].join("\n")
  }
  const cpuRatio = switchboard.cpuMicrosPerMessage / baseline.cpuMicrosPerMessage
  return [
    `Outbound dispatch: ${MESSAGES} queued messages, ${CHANNELS} channels × ${THROUGHPUT_MPS} messages/s, the simulator in its own process answering every send in 20 ms;`,
    `  Switchboard against a hand-written dispatcher (node + better-sqlite3 + undici) on a copy of the same file, one after the other`,
    `  backlog written in ${writeSeconds.toFixed(1)} s; dispatched in ${switchboard.elapsedSeconds.toFixed(1)} s (baseline ${baseline.elapsedSeconds.toFixed(1)} s)`,
    `  rate ${beside(switchboard.rate, baseline.rate)} messages/s (pacing allows at most ${PACING_CEILING.toFixed(0)}: ${CHANNELS} × ${THROUGHPUT_MPS} × 0.95)`,
    `  ${recordTarget("dispatch: server CPU per message (≤ 600 µs)", switchboard.cpuMicrosPerMessage, "most", 600, "µs")} ` +
      `server CPU per message ${beside(switchboard.cpuMicrosPerMessage, baseline.cpuMicrosPerMessage)} µs`,
    `  ${recordTarget("dispatch: server CPU per message against the baseline (≤ 1.5×)", cpuRatio, "most", 1.5)} CPU ${cpuRatio.toFixed(2)}× the hand-written dispatcher's`,
    `  ${recordTarget("dispatch: busiest 1 s window of any channel", switchboard.worstWindow, "most", THROUGHPUT_MPS, "msg")} ` +
      `busiest sliding second of any channel ${beside(switchboard.worstWindow, baseline.worstWindow)} (throughput_mps ${THROUGHPUT_MPS})`,
    ...(process.env.BENCH_DISPATCH_SHOW_WINDOW ? [`    gaps (ms) in Switchboard's busiest second: ${switchboard.gaps}`, `    gaps (ms) in the baseline's busiest second: ${baseline.gaps}`] : []),
    `  ${recordTarget("dispatch: lowest channel share of throughput_mps", switchboard.lowestShare, "least", 0.9)} ` +
      `lowest share of throughput_mps a channel reached with a backlog ${(switchboard.lowestShare * 100).toFixed(1)}% ` +
      `(baseline ${(baseline.lowestShare * 100).toFixed(1)}%, ${(switchboard.lowestShare / baseline.lowestShare).toFixed(2)}×)`,
    ...postgresLines,
    ...(other === undefined
      ? []
      : [
        `  the other build (${process.env.BENCH_OTHER_BUILD_MAIN}): rate ${other.rate.toFixed(0)} messages/s, CPU ${other.cpuMicrosPerMessage.toFixed(0)} µs per message ` +
          `(${(other.cpuMicrosPerMessage / baseline.cpuMicrosPerMessage).toFixed(2)}× the baseline's), busiest second ${other.worstWindow}, lowest share ${(other.lowestShare * 100).toFixed(1)}%`
      ])
  ].join("\n")
}

if (process.argv[2] === WRITE_BACKLOG) await writeBacklog(process.argv[3])
else runIfMain(import.meta.url, run)

// Ingest of Meta's webhooks (docs/benchmarks.md "Ingest (Meta's webhooks)"): signed
// `POST /webhooks/whatsapp` notifications, one item each, to the BUILT standalone server
// with its defaults (WHATSAPP_APP_SECRET and SWITCHBOARD_SECRET_KEY set, SQLite storage,
// SQLite rate-limit counters, a JSON request log line per request into a file) beside the
// hand-written node:http + better-sqlite3 receiver of servers/ingest-baseline.mjs doing
// the same work (HMAC over the raw bytes in constant time before parsing, JSON.parse, the
// channel by phone_number_id, one BEGIN IMMEDIATE transaction with the same writes, the
// same envelope), each in its own child process, on copies of one SQLite file holding one
// organization, one channel, BENCH_INGEST_CONTACTS (300) contacts with a chat each and
// BENCH_INGEST_MESSAGES (20 000) outbound messages `sent` with distinct wamids, spread over
// those chats. Two loads, each on both servers, from autocannon in this process, bodies
// built and signed by the WhatsApp simulator's payload functions before the clock starts:
//   status notifications: each request moves one existing wamid forward, `delivered` for
//     every message first, then `read` for every message (2 × BENCH_INGEST_MESSAGES real
//     transitions; a load that uses them up ends early, and says so);
//   inbound texts: each request one text with a fresh wamid from one of the contacts.
// Before measuring, both servers must answer the same status and body to the same probes
// (a status, its duplicate, an inbound text, its redelivery, a wrong signature, an unknown
// number) and write the same rows for them. Each round starts both servers afresh on fresh
// copies, in alternating order, each first answering BENCH_INGEST_SERVER_WARMUP_SECONDS (10)
// of inbound texts and BENCH_INGEST_SERVER_STATUS_WARMUP_SECONDS (5) of statuses that change
// nothing (a JIT-compiled server's steady state), then running the status load and
// the inbound load (1 s of warm-up, then BENCH_INGEST_SECONDS); the median round is kept,
// the spread printed.
// Targets: Switchboard's req/s ≥ 0.5× the hand-written receiver's, its CPU per request
// ≤ 2×, its p99 ≤ 3×, for each load. Checks after each server stopped, on its file: every
// status answered 200 applied (each wamid at least at the furthest status answered for it,
// at most at the furthest sent), no pending status left, every inbound text answered 200
// stored exactly once (none twice, none not sent), each chat's unread count and last
// message consistent with its messages, no refused part, no non-2xx answer, and
// Switchboard's log holding a line per answered request. A failed check fails the bench.
// Then, when POSTGRES_URL is set, the same on PostgreSQL: the standalone server with
// DATABASE_URL=postgres://… beside servers/ingest-postgres-baseline.mjs (node:http + pg, one
// BEGIN … COMMIT per notification), the same seed written once through core and the
// PostgreSQL adapter into a template database of its own (schema `switchboard`), each
// server run (probes included) on its own `CREATE DATABASE … TEMPLATE … STRATEGY FILE_COPY`
// copy, dropped once checked (every database this bench made is dropped at its end, also on
// failure); the same probes, targets and checks (read through one small query interface).
// BENCH_INGEST_SECONDS (8), BENCH_INGEST_CONNECTIONS (50), BENCH_INGEST_ROUNDS (3),
// BENCH_INGEST_MESSAGES (20 000), BENCH_INGEST_CONTACTS (300); BENCH_INGEST_POSTGRES=0
// skips the PostgreSQL part, BENCH_INGEST_SQLITE=0 the SQLite part (for work on one store).
// BENCH_INGEST_KEEP_TEMPLATE=1 keeps the PostgreSQL template database between runs (seeding
// takes over a minute), named by the seed knobs, the schema version and SEED_DATA_VERSION
// (`switchboard_bench_ingest_m…_c…_schema…_data…`) and marked complete by its comment once
// seeded (one without the mark was interrupted and is seeded again); drop it by hand.
import { fork } from "node:child_process"
import { once } from "node:events"
import { copyFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import autocannon from "autocannon"
import Database from "better-sqlite3"
import {
  inboundMessagePayload,
  newWamid,
  sign,
  statusPayload,
  textMessage
} from "@switchboard/whatsapp-simulator"
import {
  BENCH_SECRET_KEY,
  median,
  medianRound,
  processCpuSeconds,
  recordTarget,
  runIfMain,
  send,
  startServer,
  temporaryDirectory
} from "./lib.mjs"

const SECONDS = Number(process.env.BENCH_INGEST_SECONDS ?? 8)
const CONNECTIONS = Number(process.env.BENCH_INGEST_CONNECTIONS ?? 50)
const ROUNDS = Number(process.env.BENCH_INGEST_ROUNDS ?? 3)
const MESSAGES = Number(process.env.BENCH_INGEST_MESSAGES ?? 20_000)
const CONTACTS = Number(process.env.BENCH_INGEST_CONTACTS ?? 300)
/** The version of the seed's data a kept template database holds (BENCH_INGEST_KEEP_TEMPLATE): bump it when the seed changes. */
const SEED_DATA_VERSION = 2
/** The comment of a kept template database once seeded. */
const SEEDED_MARK = "switchboard bench ingest: seeded"
/** Seconds of load before each measured figure (JIT, page cache), not counted. */
const WARMUP_SECONDS = 1
/**
 * Seconds of inbound texts each server answers once started, before the loads and their
 * own warm-ups (BENCH_INGEST_SERVER_WARMUP_SECONDS, 10): V8 keeps optimizing Switchboard's
 * larger code for about 20 s of load (docs/benchmarks.md "Warm-up").
 */
const SERVER_WARMUP_SECONDS = Number(process.env.BENCH_INGEST_SERVER_WARMUP_SECONDS ?? 10)
/**
 * Seconds of status notifications that change nothing (`sent` again for messages already
 * sent) each server answers after its inbound warm-up, so that the status path's own code
 * (the move by wamid, its row's decoding) is compiled before the status load too
 * (BENCH_INGEST_SERVER_STATUS_WARMUP_SECONDS, 5; docs/benchmarks.md "Warm-up").
 */
const SERVER_STATUS_WARMUP_SECONDS = Number(process.env.BENCH_INGEST_SERVER_STATUS_WARMUP_SECONDS ?? 5)
/** Inbound bodies built before the first load; more are built on demand. */
const INBOUND_PREBUILT = 60_000

/** The Meta app secret both servers check signatures with (never a real secret). */
const APP_SECRET = "bench-ingest-app-secret"
/** The bench's business number: its channel is the only one. */
const NUMBER = { phone_number_id: "106540352200001", display_phone_number: "+1 555-078-3881", waba_id: "102290129340398" }
const TOKEN = "EAAGingestBenchToken000000000001"
/** Contact `n`'s phone: distinct, valid E.164 (US 415 range). */
const phoneOf = (n) => `+1415${String(4000000 + n).padStart(7, "0")}`

/** The two servers, as lib.mjs `startServer` names them, and their environment here. */
const SWITCHBOARD = "switchboard"
const BASELINE = "ingestBaseline"
const SERVER_ENV = {
  WHATSAPP_APP_SECRET: APP_SECRET,
  SWITCHBOARD_SECRET_KEY: BENCH_SECRET_KEY,
  // Nothing is sent in this bench; were anything sent, it would reach no one.
  WHATSAPP_API_BASE_URL: "http://127.0.0.1:9"
}
/** The same on PostgreSQL: the standalone server on DATABASE_URL=postgres://…, and the pg receiver. */
const SWITCHBOARD_POSTGRES = "switchboardPostgres"
const BASELINE_POSTGRES = "ingestPostgresBaseline"
/** The schema the PostgreSQL seed lives in (the standalone server's default, set explicitly). */
const POSTGRES_SCHEMA = "switchboard"
const LABELS = {
  [SWITCHBOARD]: "Switchboard (standalone server, defaults)",
  [BASELINE]: "hand-written node:http + better-sqlite3",
  [SWITCHBOARD_POSTGRES]: "Switchboard (standalone server, PostgreSQL)",
  [BASELINE_POSTGRES]: "hand-written node:http + pg"
}
const WEBHOOK = "/webhooks/whatsapp"
const RANK = { sent: 0, delivered: 1, read: 2 }

// ---------------------------------------------------------------------------------------
// The seeded file (written in a child process: this process keeps a small heap for the load)

const WRITE_STORE = "--write-ingest-store"

/**
 * Writes, through core and the SQLite store, one organization, its channel, `CONTACTS`
 * contacts with a chat each and `MESSAGES` outbound text messages `sent` with distinct
 * wamids, message n in the chat of contact n mod `CONTACTS`, one second apart, the newest
 * a day old.
 */
const writeStore = async (storage) => {
  const { Effect, Layer } = await import("effect")
  const { Channels, ChannelVerifier, Core, SecretKey, Storage } = await import("@switchboard/core")
  const { createOrganization } = await import("./lib.mjs")
  const { organizationId } = await createOrganization(storage)
  const services = Core.layer.pipe(
    Layer.provide(
      Layer.merge(
        SecretKey.layer(Buffer.from(BENCH_SECRET_KEY, "hex")),
        Layer.succeed(ChannelVerifier, { verify: () => Effect.succeed({ display_phone_number: NUMBER.display_phone_number }) })
      )
    )
  )
  await Effect.runPromise(
    Effect.gen(function* () {
      const channels = yield* Channels
      const store = yield* Storage
      const channel = yield* channels.add(organizationId, {
        phone_number_id: NUMBER.phone_number_id,
        waba_id: NUMBER.waba_id,
        access_token: TOKEN
      })
      const now = new Date().toISOString()
      const rows = Array.from({ length: CONTACTS }, (_, n) => ({
        phone: phoneOf(n),
        phone_valid: true,
        details: { first_name: `Customer ${n}` },
        groups: []
      }))
      const imported = yield* store.contacts.importBulk(organizationId, {
        rows,
        ids: rows.map(() => crypto.randomUUID()),
        contactsLimit: null,
        now,
        events: false
      })
      if (imported._tag !== "Imported") throw new Error(`import: ${imported._tag}`)
      const contacts = imported.result.contacts
      const first = Date.now() - 86_400_000 - MESSAGES * 1000
      for (let n = 0; n < MESSAGES; n++) {
        const at = new Date(first + n * 1000).toISOString()
        yield* store.chats.appendMessage(organizationId, {
          contact: { _tag: "ById", uuid: contacts[n % CONTACTS].uuid },
          newChat: { uuid: crypto.randomUUID(), status: "open" },
          message: {
            uuid: crypto.randomUUID(), direction: "outbound", type: "text", text: `Your order #${n} has shipped.`, template: null,
            media: null, content: null, status: "sent", provider_message_id: newWamid(), failure: null, channel_uuid: channel.uuid,
            attempts: 1, next_attempt_at: null, broadcast_uuid: null, created_at: at, updated_at: at
          },
          unreadIncrement: 0,
          reopen: { from: [], to: "open" },
          dedupe: false,
          now: at
        })
      }
    }).pipe(Effect.provide(services), Effect.provide(storage))
  )
}

/** The storage layer {@link writeStore} writes through, from the child process's arguments. */
const storageOf = async (kind, target) => {
  if (kind === "postgres") {
    const { PostgresStorage } = await import("@switchboard/storage-postgres")
    return PostgresStorage.layer({ connectionString: target, schema: POSTGRES_SCHEMA })
  }
  const { SqliteStorage } = await import("@switchboard/storage-sqlite")
  return SqliteStorage.layer({ filename: target })
}

/** {@link writeStore} in a child process, into the SQLite file or the PostgreSQL database (URL) `target`. */
const writeStoreInChildProcess = async (kind, target) => {
  const child = fork(fileURLToPath(import.meta.url), [WRITE_STORE, kind, target], { stdio: "inherit" })
  const [code] = await once(child, "exit")
  if (code !== 0) throw new Error(`writing the ingest store failed (exit code ${code})`)
}

/** The seeded messages `{uuid, wamid, phone}` (oldest first) and contacts `{phone, name}`, read through `db` (see {@link sqliteQueries}). */
const readSeed = async (db) => {
  const messages = await db.all(`SELECT m.uuid, m.provider_message_id AS wamid, c.phone FROM messages AS m
    JOIN contacts AS c ON c.uuid = m.contact_uuid WHERE m.direction = 'outbound' ORDER BY m.created_at, m.uuid`)
  const contacts = await db.all("SELECT phone, first_name AS name FROM contacts ORDER BY phone")
  return { messages, contacts }
}

// ---------------------------------------------------------------------------------------
// Reading a store: the checks below run the same SQL on SQLite and on PostgreSQL

/**
 * The small query interface the probes and checks read a store through: `all(sql, params)`
 * (every row), `get` (the first row or undefined), `value` (the first column of the first
 * row). `?` marks each parameter; unqualified table names.
 */
const sqliteQueries = (db) => ({
  all: async (sql, params = []) => db.prepare(sql).all(...params),
  get: async (sql, params = []) => db.prepare(sql).get(...params),
  value: async (sql, params = []) => db.prepare(sql).pluck().get(...params),
  close: async () => db.close()
})

/**
 * {@link sqliteQueries} on one PostgreSQL connection to `url`, the tables in
 * {@link POSTGRES_SCHEMA} (its `search_path`); counts as numbers and timestamps as ISO
 * strings, as the adapter reads them.
 */
const postgresQueries = async (url) => {
  const { default: Pg } = await import("pg")
  const client = new Pg.Client({ connectionString: url, options: `-c search_path=${POSTGRES_SCHEMA}` })
  await client.connect()
  const types = {
    getTypeParser: (oid, format) =>
      oid === 20 ? Number : oid === 1184 ? (text) => new Date(text.replace(" ", "T").replace(/([+-]\d\d)$/, "$1:00")).toISOString() : Pg.types.getTypeParser(oid, format)
  }
  const rows = async (sql, params = []) => {
    let n = 0
    return (await client.query({ text: sql.replace(/\?/g, () => `$${++n}`), values: params, types })).rows
  }
  return {
    all: rows,
    get: async (sql, params) => (await rows(sql, params))[0],
    value: async (sql, params) => {
      const row = (await rows(sql, params))[0]
      return row === undefined ? undefined : Object.values(row)[0]
    },
    close: () => client.end()
  }
}

// ---------------------------------------------------------------------------------------
// Request bodies (built and signed here, before the clock starts)

/** A signed request: the exact body bytes and their `X-Hub-Signature-256`. */
const signed = (payload) => {
  const body = Buffer.from(JSON.stringify(payload))
  return { body, signature: sign(body, APP_SECRET) }
}

/** A signed status notification moving `message` to `status`, with its wamid and that status. */
const statusRequest = ({ uuid, wamid, phone }, status) =>
  // Meta echoes the send's biz_opaque_callback_data (Switchboard's sends name the message).
  ({ ...signed(statusPayload({ number: NUMBER, wamid, status, recipient_id: phone, biz_opaque_callback_data: uuid })), wamid, status })

/** Request k of the status load: `delivered` for message k, then (k ≥ N) `read` for message k − N. */
const statusRequests = (messages) =>
  Array.from({ length: 2 * messages.length }, (_, k) =>
    statusRequest(messages[k % messages.length], k < messages.length ? "delivered" : "read")
  )

/** Request k of the status warm-up: `sent` again for message k mod N, which every message already is (nothing changes). */
const repeatedStatusRequest = (messages, k) => statusRequest(messages[k % messages.length], "sent")

/** Request k of the inbound load: a text with a fresh wamid from contact k mod the contacts. */
const inboundRequest = (contacts, k) => {
  const { phone, name } = contacts[k % contacts.length]
  const wamid = newWamid()
  return { ...signed(inboundMessagePayload({ number: NUMBER, from: phone, profile_name: name, message: textMessage(`Hello, is order #${k} on its way?`), id: wamid })), wamid }
}

/**
 * The requests of one load on one server: `get(k)` for k from 0 up, `limit` of them at most
 * (Infinity: built on demand past the prebuilt ones), `next` the first not yet sent, and the
 * indices answered 200.
 */
const requestSource = (get, limit) => ({ get, limit, next: 0, answered: [] })

// ---------------------------------------------------------------------------------------
// Load

/**
 * autocannon against `server`'s webhook for `seconds` with the next requests of `source`
 * (at most those it has left); throws on any non-2xx answer, error or timeout. Resolves the
 * answers, req/s from the start to the last answer, p99 (ms), the server's CPU per answer
 * (µs) and CPU share, the load generator's CPU share, and whether the source ran out.
 */
const load = async (server, source, seconds) => {
  const left = source.limit - source.next
  if (left <= 0) throw new Error(`${server.name}: the warm-up used every request of the load: raise BENCH_INGEST_MESSAGES`)
  const connections = Math.min(CONNECTIONS, left)
  const serverCpu = processCpuSeconds(server.pid)
  const ownCpu = process.cpuUsage()
  const started = performance.now()
  let lastAnswer = started
  const result = await autocannon({
    url: `${server.url}${WEBHOOK}`,
    connections,
    duration: seconds,
    ...(Number.isFinite(left) ? { maxOverallRequests: left } : {}),
    requests: [
      {
        method: "POST",
        setupRequest: (request, context) => {
          const k = source.next++
          context.k = k
          const { body, signature } = source.get(k)
          return { ...request, method: "POST", body, headers: { "content-type": "application/json", "x-hub-signature-256": signature } }
        },
        onResponse: (status, _body, context) => {
          if (status === 200) source.answered.push(context.k)
          lastAnswer = performance.now()
        }
      }
    ]
  })
  // Up to the last answer: autocannon ends on its next one-second tick after the requests
  // run out, and that idle time is no part of the figure.
  const elapsed = (lastAnswer - started) / 1000
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) {
    throw new Error(
      `${server.name}: ${result.non2xx} non-2xx answers (${JSON.stringify(result.statusCodeStats)}), ${result.errors} errors, ${result.timeouts} timeouts under load`
    )
  }
  const own = process.cpuUsage(ownCpu)
  const answered = result.requests.total
  const cpuSeconds = processCpuSeconds(server.pid) - serverCpu
  return {
    answered,
    seconds: elapsed,
    rps: answered / elapsed,
    p99: result.latency.p99,
    cpuPerRequestUs: (cpuSeconds / answered) * 1e6,
    serverCpu: cpuSeconds / elapsed,
    loadCpu: (own.user + own.system) / 1e6 / elapsed,
    ranOut: source.next >= source.limit
  }
}

// ---------------------------------------------------------------------------------------
// Fairness: both answer and write alike

/**
 * The probes each server answers on a copy of the seeded file: a status, the same again, an
 * inbound text, its redelivery, a wrong signature, a number no channel has. Resolves
 * `[{status, body}]` and, read from the file after the server stopped, what it wrote.
 */
const probe = async (name, store, seed) => {
  const copy = await store.copy(`probe-${name}`)
  const server = await startServer(name, copy.target, store.directory, { ...SERVER_ENV, ...copy.env })
  const status = statusRequests(seed.messages.slice(0, 1))[0]
  const inbound = PROBE_INBOUND
  const stranger = signed(
    inboundMessagePayload({ number: { ...NUMBER, phone_number_id: "999999999999999" }, from: "14155550100", profile_name: "Nobody", message: textMessage("Hi"), id: "wamid.probe-stranger" })
  )
  const post = ({ body, signature }) =>
    send(`${server.url}${WEBHOOK}`, { method: "POST", headers: { "content-type": "application/json", "x-hub-signature-256": signature }, body })
  const answers = []
  try {
    for (const each of [status, status, inbound, inbound, { ...status, signature: sign(status.body, "not-the-app-secret") }, stranger]) {
      answers.push(await post(each))
    }
  } finally {
    await server.stop()
  }
  server.checkLogged(answers.length)
  const db = await copy.open()
  try {
    const contact = await db.value("SELECT uuid FROM contacts WHERE phone = ?", [seed.contacts[0].phone])
    const message = await db.get("SELECT * FROM messages WHERE direction = 'inbound' AND provider_message_id = ?", [inbound.wamid])
    const chat = await db.get("SELECT * FROM chats WHERE contact_uuid = ?", [contact])
    const written = {
      status: await db.get("SELECT status, failure, provider_message_id, updated_at > created_at AS moved FROM messages WHERE provider_message_id = ?", [status.wamid]),
      inbound: message === undefined ? null : withoutKeys(message, ["uuid", "created_at", "updated_at"]),
      inboundCount: await db.value("SELECT COUNT(*) FROM messages WHERE provider_message_id = ?", [inbound.wamid]),
      chat: {
        ...withoutKeys(chat, ["updated_at", "last_message_at"]),
        last_message_uuid: chat.last_message_uuid === message?.uuid ? "the inbound text" : chat.last_message_uuid,
        last_message_at: chat.last_message_at === message?.created_at ? "the inbound text's created_at" : chat.last_message_at
      },
      window: await db.all("SELECT channel_uuid, last_inbound_at FROM customer_service_windows WHERE contact_uuid = ?", [contact]),
      contacts: await db.value("SELECT COUNT(*) FROM contacts"),
      pending: await db.value("SELECT COUNT(*) FROM pending_message_statuses"),
      rejects: await db.value("SELECT COUNT(*) FROM webhook_rejects"),
      events: await db.value("SELECT COUNT(*) FROM webhook_events")
    }
    return { answers, written }
  } finally {
    await db.close()
    await copy.remove()
  }
}

/** The inbound text of the probes (its wamid is none of the load's). */
let PROBE_INBOUND

const withoutKeys = (row, keys) => Object.fromEntries(Object.entries(row).filter(([key]) => !keys.includes(key)))

/** Throws unless both servers answered the probes alike (status and body) and wrote alike. */
const checkAlike = (ours, theirs) => {
  const labels = ["status delivered", "the same status again", "inbound text", "its redelivery", "wrong signature", "unknown number"]
  const expected = [200, 200, 200, 200, 401, 200]
  ours.answers.forEach((answer, index) => {
    const other = theirs.answers[index]
    if (answer.status !== expected[index]) throw new Error(`Switchboard answered the probe "${labels[index]}" ${answer.status}: ${answer.body}`)
    if (answer.status !== other.status || answer.body !== other.body) {
      throw new Error(`the hand-written receiver answers the probe "${labels[index]}" otherwise: the comparison would be unfair\n  Switchboard:  ${answer.status} ${answer.body}\n  hand-written: ${other.status} ${other.body}`)
    }
  })
  const a = JSON.stringify(ours.written, null, 1)
  const b = JSON.stringify(theirs.written, null, 1)
  if (a !== b) throw new Error(`the hand-written receiver writes otherwise than Switchboard for the probes:\n  Switchboard:  ${a}\n  hand-written: ${b}`)
  return ours.answers
}

// ---------------------------------------------------------------------------------------
// Checks on a server's file after its loads

/** Throws unless the file shows every answered status applied and nothing beyond what was sent. */
const checkStatuses = async (db, name, source, messages) => {
  const answeredRank = new Uint8Array(messages.length)
  const sentRank = new Uint8Array(messages.length)
  const rankOf = (k) => (k < messages.length ? RANK.delivered : RANK.read)
  for (const k of source.answered) answeredRank[k % messages.length] = Math.max(answeredRank[k % messages.length], rankOf(k))
  for (let k = 0; k < source.next; k++) sentRank[k % messages.length] = Math.max(sentRank[k % messages.length], rankOf(k))
  const stored = new Map((await db.all("SELECT provider_message_id, status FROM messages WHERE direction = 'outbound'")).map((row) => [row.provider_message_id, row.status]))
  const counts = { sent: 0, delivered: 0, read: 0 }
  const wrong = []
  messages.forEach(({ wamid }, index) => {
    const status = stored.get(wamid)
    counts[status] = (counts[status] ?? 0) + 1
    const rank = RANK[status]
    if (rank === undefined || rank < answeredRank[index] || rank > sentRank[index]) wrong.push(`${wamid}: ${status}`)
  })
  const expected = { answeredDelivered: 0, answeredRead: 0 }
  for (const rank of answeredRank) {
    if (rank >= RANK.delivered) expected.answeredDelivered += 1
    if (rank === RANK.read) expected.answeredRead += 1
  }
  const pending = await db.value("SELECT COUNT(*) FROM pending_message_statuses")
  if (wrong.length > 0 || pending > 0) {
    throw new Error(`${name}: ${wrong.length} messages not at the status answered for them (${wrong.slice(0, 3).join(", ")}…), ${pending} pending statuses`)
  }
  return `${counts.delivered} delivered + ${counts.read} read (answered: ${expected.answeredDelivered} at least delivered, ${expected.answeredRead} read)`
}

/** Throws unless every inbound text answered was stored once, none twice, none unsent, and the chats agree. */
const checkInbound = async (db, name, source, wamidOf) => {
  const sent = new Set()
  for (let k = 0; k < source.next; k++) sent.add(wamidOf(k))
  const stored = new Map(
    (await db.all("SELECT provider_message_id, COUNT(*) AS count FROM messages WHERE direction = 'inbound' GROUP BY provider_message_id")).map((row) => [row.provider_message_id, row.count])
  )
  const twice = [...stored].filter(([, count]) => count !== 1)
  const unsent = [...stored.keys()].filter((wamid) => !sent.has(wamid))
  const missing = source.answered.filter((k) => stored.get(wamidOf(k)) !== 1)
  const chats = await db.all(`SELECT c.uuid, c.unread_count, c.last_message_at,
      (SELECT COUNT(*) FROM messages AS m WHERE m.chat_uuid = c.uuid AND m.direction = 'inbound') AS inbound,
      (SELECT MAX(created_at) FROM messages AS m WHERE m.chat_uuid = c.uuid) AS newest
    FROM chats AS c`)
  const badChats = chats.filter((chat) => chat.unread_count !== chat.inbound || chat.last_message_at !== chat.newest)
  const contacts = await db.value("SELECT COUNT(*) FROM contacts")
  const rejects = await db.value("SELECT COUNT(*) FROM webhook_rejects")
  if (twice.length + unsent.length + missing.length + badChats.length > 0 || contacts !== CONTACTS || chats.length !== CONTACTS || rejects > 0) {
    throw new Error(
      `${name}: ${missing.length} answered texts not stored once, ${twice.length} stored twice, ${unsent.length} never sent, ` +
        `${badChats.length} chats whose unread count or last message disagree with their messages (${JSON.stringify(badChats.slice(0, 2))}), ` +
        `${contacts} contacts and ${chats.length} chats (expected ${CONTACTS}), ${rejects} refused parts`
    )
  }
  return `${stored.size} stored once (answered ${source.answered.length}, sent ${source.next}); every chat's unread count and last message agree`
}

// ---------------------------------------------------------------------------------------
// The bench

const copyOf = (template, directory, tag) => {
  const filename = join(directory, `ingest-${tag}.db`)
  copyFileSync(template, filename)
  return filename
}

const removeCopy = (filename) => {
  for (const suffix of ["", "-wal", "-shm", "-rate-limits", "-rate-limits-wal", "-rate-limits-shm"]) rmSync(`${filename}${suffix}`, { force: true })
}

/**
 * The SQLite store: the seeded file written once (checkpointed whole, no -wal), each server
 * run on a copy of it. `copy(tag)` resolves `{target, env, open(), remove()}`: what
 * `startServer` takes, the extra environment, a {@link sqliteQueries} reader, the removal.
 */
const sqliteStore = async (directory) => {
  const template = join(directory, "ingest-template.db")
  await writeStoreInChildProcess("sqlite", template)
  const db = new Database(template)
  db.pragma("wal_checkpoint(TRUNCATE)")
  db.close()
  return {
    directory,
    switchboard: SWITCHBOARD,
    baseline: BASELINE,
    figure: "ingest",
    readSeed: async () => {
      const reader = sqliteQueries(new Database(template, { readonly: true }))
      try {
        return await readSeed(reader)
      } finally {
        await reader.close()
      }
    },
    copy: async (tag) => {
      const filename = copyOf(template, directory, tag)
      return {
        target: filename,
        env: {},
        open: async () => sqliteQueries(new Database(filename, { readonly: true })),
        remove: async () => removeCopy(filename)
      }
    },
    dispose: async () => {}
  }
}

/**
 * The PostgreSQL store (POSTGRES_URL's server): the seed written once, through core and the
 * PostgreSQL adapter, into a template DATABASE of its own (schema {@link POSTGRES_SCHEMA});
 * each server run on `CREATE DATABASE … TEMPLATE … STRATEGY FILE_COPY` of it (a file copy:
 * no connection may be open on the template meanwhile), dropped once read. `dispose` drops
 * every database this store created (run also when the bench fails).
 */
const postgresStore = async (directory) => {
  const { default: Pg } = await import("pg")
  const admin = new Pg.Client({ connectionString: process.env.POSTGRES_URL })
  await admin.connect()
  const prefix = `switchboard_bench_ingest_${Math.random().toString(36).slice(2, 10)}`
  const urlOf = (database) => {
    const url = new URL(process.env.POSTGRES_URL)
    url.pathname = `/${database}`
    return url.href
  }
  const created = new Set()
  const drop = async (database) => {
    await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`)
    created.delete(database)
  }
  const keep = process.env.BENCH_INGEST_KEEP_TEMPLATE === "1"
  const { PostgresStorage } = await import("@switchboard/storage-postgres")
  const template = keep
    ? `switchboard_bench_ingest_m${MESSAGES}_c${CONTACTS}_schema${PostgresStorage.SCHEMA_VERSION}_data${SEED_DATA_VERSION}`
    : `${prefix}_template`
  const store = {
    directory,
    switchboard: SWITCHBOARD_POSTGRES,
    baseline: BASELINE_POSTGRES,
    figure: "ingest on PostgreSQL",
    readSeed: async () => {
      const reader = await postgresQueries(urlOf(template))
      try {
        return await readSeed(reader)
      } finally {
        await reader.close()
      }
    },
    copy: async (tag) => {
      const database = `${prefix}_${tag.replace(/[^a-z0-9]/gi, "_").toLowerCase()}`
      created.add(database)
      for (let attempt = 1; ; attempt++) {
        try {
          await admin.query(`CREATE DATABASE "${database}" TEMPLATE "${template}" STRATEGY FILE_COPY`)
          break
        } catch (error) {
          // 55006: a connection on the template (an autovacuum worker): try again shortly.
          if (error.code !== "55006" || attempt === 50) throw error
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
      }
      const url = urlOf(database)
      return {
        target: POSTGRES_SCHEMA,
        env: { DATABASE_URL: url, POSTGRES_URL: url },
        open: () => postgresQueries(url),
        remove: () => drop(database)
      }
    },
    dispose: async () => {
      try {
        for (const database of [...created]) await drop(database)
      } finally {
        await admin.end()
      }
    }
  }
  if (!keep) created.add(template)
  try {
    const seeded = keep
      ? (await admin.query("SELECT shobj_description(oid, 'pg_database') AS mark FROM pg_database WHERE datname = $1", [template]))
          .rows[0]?.mark === SEEDED_MARK
      : false
    if (!seeded) {
      await admin.query(`DROP DATABASE IF EXISTS "${template}" WITH (FORCE)`)
      await admin.query(`CREATE DATABASE "${template}"`)
      await writeStoreInChildProcess("postgres", urlOf(template))
      // Statistics, as a database in service has them (autovacuum analyzes a table once a
      // tenth of it changed): without them the planner guesses, and the send queue's
      // due-head check scans every message instead of its partial index of heads. The copies
      // carry them (pg_statistic is in the database). VACUUM also sets the visibility map.
      const analyzer = new Pg.Client({ connectionString: urlOf(template) })
      await analyzer.connect()
      try {
        await analyzer.query("VACUUM ANALYZE")
      } finally {
        await analyzer.end()
      }
      if (keep) await admin.query(`COMMENT ON DATABASE "${template}" IS '${SEEDED_MARK}'`)
    }
  } catch (error) {
    await store.dispose()
    throw error
  }
  return store
}

/** The lines of one store's measurements: seed, probes, rounds, checks. */
const measure = async (store, writeSeconds, headline, describe) => {
  const seed = await store.readSeed()
  if (seed.messages.length !== MESSAGES || new Set(seed.messages.map((m) => m.wamid)).size !== MESSAGES) {
    throw new Error(`the seeded store holds ${seed.messages.length} outbound messages, expected ${MESSAGES} with distinct wamids`)
  }

  // Bodies, built and signed once: each server starts from the same seed, so the same
  // requests are fresh for each.
  const built = performance.now()
  const statuses = statusRequests(seed.messages)
  const inbound = Array.from({ length: INBOUND_PREBUILT }, (_, k) => inboundRequest(seed.contacts, k))
  const inboundAt = (k) => (inbound[k] ??= inboundRequest(seed.contacts, k))
  PROBE_INBOUND = inboundRequest(seed.contacts, 0)
  const buildSeconds = (performance.now() - built) / 1000

  // Fairness first: the same answers and the same rows for the same probes.
  const probeAnswers = checkAlike(await probe(store.switchboard, store, seed), await probe(store.baseline, store, seed))

  const names = [store.switchboard, store.baseline]
  const figures = Object.fromEntries(names.map((name) => [name, { status: [], inbound: [] }]))
  const checks = []
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of round % 2 === 0 ? names : [...names].reverse()) {
      const copy = await store.copy(`${name}-${round + 1}`)
      const server = await startServer(name, copy.target, store.directory, { ...SERVER_ENV, ...copy.env })
      const statusSource = requestSource((k) => statuses[k], statuses.length)
      const inboundSource = requestSource(inboundAt, Number.POSITIVE_INFINITY)
      let answered = 0
      try {
        // The server's warm-up: inbound texts (the heavier path, through every layer a status
        // also crosses), then statuses that change nothing (the status path's own code), so
        // that a JIT-compiled server is measured in its steady state.
        if (SERVER_WARMUP_SECONDS > 0) answered += (await load(server, inboundSource, SERVER_WARMUP_SECONDS)).answered
        if (SERVER_STATUS_WARMUP_SECONDS > 0) {
          const repeated = requestSource((k) => repeatedStatusRequest(seed.messages, k), Number.POSITIVE_INFINITY)
          answered += (await load(server, repeated, SERVER_STATUS_WARMUP_SECONDS)).answered
        }
        for (const [kind, source] of [["status", statusSource], ["inbound", inboundSource]]) {
          answered += (await load(server, source, WARMUP_SECONDS)).answered
          const figure = await load(server, source, SECONDS)
          answered += figure.answered
          figures[name][kind].push(figure)
        }
      } finally {
        await server.stop()
      }
      server.checkLogged(answered)
      const db = await copy.open()
      try {
        checks.push(
          `    round ${round + 1}, ${name === store.switchboard ? "Switchboard: " : "hand-written:"} statuses ${await checkStatuses(db, name, statusSource, seed.messages)}; ` +
            `inbound texts ${await checkInbound(db, name, inboundSource, (k) => inboundAt(k).wamid)}`
        )
      } finally {
        await db.close()
        await copy.remove()
      }
    }
  }

  return [
    headline,
    ...describe,
    `  ${store.figure === "ingest" ? "file" : "template database"} written in ${writeSeconds.toFixed(1)} s, bodies built and signed in ${buildSeconds.toFixed(1)} s; ` +
      `both answered the 6 probes alike (${probeAnswers.map((answer) => answer.status).join(", ")}) and wrote the same rows; no webhook endpoint subscribes (no event rows)`,
    ...section(store, "status notifications (delivered, then read: every request a real transition)", "status", figures),
    ...section(store, "inbound texts (a fresh wamid each, from the contacts' phones)", "inbound", figures),
    `  checks after each server stopped (every answer 2xx; Switchboard's log holding a line per answer):`,
    ...checks
  ].join("\n")
}

export const run = async () => {
  const directory = temporaryDirectory()
  if (process.env.BENCH_INGEST_SQLITE === "0") {
    return ["Ingest (Meta's webhooks) on SQLite: skipped (BENCH_INGEST_SQLITE=0)", await runPostgres(directory)].join("\n")
  }
  const written = performance.now()
  const sqlite = await sqliteStore(directory)
  const sqliteText = await measure(
    sqlite,
    (performance.now() - written) / 1000,
    `Ingest (Meta's webhooks): signed POST /webhooks/whatsapp, one item a request, SQLite holding ${number(MESSAGES)} sent messages ` +
      `to ${CONTACTS} contacts; ${CONNECTIONS} connections, each server warmed up by ${SERVER_WARMUP_SECONDS} s of inbound texts and ${SERVER_STATUS_WARMUP_SECONDS} s of statuses that change nothing, then ${SECONDS} s per load after ${WARMUP_SECONDS} s of warm-up, median of ${ROUNDS} round(s), ` +
      `each server in its own process, started afresh on a fresh copy each round, alternating`,
    [
      `  Switchboard: node dist/main.js with its defaults, WHATSAPP_APP_SECRET and SWITCHBOARD_SECRET_KEY set (a JSON log line per request to a file)`,
      `  hand-written: servers/ingest-baseline.mjs (HMAC before parsing, the channel look-up and the writes in one BEGIN IMMEDIATE transaction)`
    ]
  )
  return [sqliteText, await runPostgres(directory)].join("\n")
}

/** The same loads on PostgreSQL, or the line saying why they were skipped. */
const runPostgres = async (directory) => {
  if (!process.env.POSTGRES_URL) return "Ingest (Meta's webhooks) on PostgreSQL: skipped (POSTGRES_URL is not set)"
  if (process.env.BENCH_INGEST_POSTGRES === "0") return "Ingest (Meta's webhooks) on PostgreSQL: skipped (BENCH_INGEST_POSTGRES=0)"
  const written = performance.now()
  const postgres = await postgresStore(directory)
  try {
    return await measure(
      postgres,
      (performance.now() - written) / 1000,
      `Ingest (Meta's webhooks) on PostgreSQL: the same loads, PostgreSQL (POSTGRES_URL's server) holding ${number(MESSAGES)} sent messages ` +
        `to ${CONTACTS} contacts; ${CONNECTIONS} connections, each server warmed up by ${SERVER_WARMUP_SECONDS} s of inbound texts and ${SERVER_STATUS_WARMUP_SECONDS} s of statuses that change nothing, then ${SECONDS} s per load after ${WARMUP_SECONDS} s of warm-up, median of ${ROUNDS} round(s), ` +
        `each server in its own process, started afresh on a fresh copy of a template database each round, alternating`,
      [
        `  Switchboard: node dist/main.js with DATABASE_URL=postgres://… (a pool of 10), WHATSAPP_APP_SECRET and SWITCHBOARD_SECRET_KEY set (a JSON log line per request to a file)`,
        `  hand-written: servers/ingest-postgres-baseline.mjs (pg, a pool of 10; HMAC before parsing, one BEGIN … COMMIT per notification, row locks instead of the organization's)`
      ]
    )
  } finally {
    await postgres.dispose()
  }
}

const number = (value) => Math.round(value).toLocaleString("en").replace(/,/g, " ")

/** The median round of `figures[name][kind]`: throughput with its spread, p99, CPU. */
const keptOf = (figures, name, kind) => {
  const values = figures[name][kind]
  return {
    ...medianRound(values),
    p99: median(values.map((figure) => figure.p99)),
    cpuPerRequestUs: median(values.map((figure) => figure.cpuPerRequestUs)),
    seconds: values.map((figure) => figure.seconds),
    ranOut: values.some((figure) => figure.ranOut)
  }
}

/** The printed lines of one load: both servers, then the three ratios against their targets. */
const section = (store, title, kind, figures) => {
  const ours = keptOf(figures, store.switchboard, kind)
  const theirs = keptOf(figures, store.baseline, kind)
  const row = (name, kept) =>
    `    ${LABELS[name].padEnd(44)} ${number(kept.rps).padStart(7)} req/s (rounds ${number(kept.min)}–${number(kept.max)})  p99 ${kept.p99.toFixed(1).padStart(5)} ms` +
    `  server CPU ${(kept.serverCpu * 100).toFixed(0)}% (${number(kept.cpuPerRequestUs)} µs a request), autocannon CPU ${(kept.loadCpu * 100).toFixed(0)}%` +
    (kept.ranOut ? `  [ran out of transitions: measured ${kept.seconds.map((s) => s.toFixed(1)).join(", ")} s]` : "")
  const figure = `${store.figure}, ${kind === "status" ? "status notifications" : "inbound texts"}`
  const ratio = (label, value, at, target) => {
    const mark = recordTarget(`${figure}: ${label}`, value, at, target)
    return `    ${label.padEnd(44)} ${value.toFixed(2).padStart(7)}x   target ${at === "least" ? ">=" : "<="} ${target}x ${mark}`
  }
  return [
    `  ${title}`,
    row(store.switchboard, ours),
    row(store.baseline, theirs),
    ratio("req/s, Switchboard / hand-written", ours.rps / theirs.rps, "least", 0.5),
    ratio("CPU per request, Switchboard / hand-written", ours.cpuPerRequestUs / theirs.cpuPerRequestUs, "most", 2),
    ratio("p99, Switchboard / hand-written", ours.p99 / theirs.p99, "most", 3)
  ]
}

if (process.argv[2] === WRITE_STORE) await writeStore(await storageOf(process.argv[3], process.argv[4]))
else runIfMain(import.meta.url, run)

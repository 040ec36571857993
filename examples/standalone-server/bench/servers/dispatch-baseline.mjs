// Benchmark baseline of the outbound dispatch (bench/dispatch.mjs, docs/benchmarks.md
// "Outbound dispatch"): a hand-written send-queue dispatcher in one process, node +
// better-sqlite3 + undici, on a COPY of the SQLite file the Switchboard server dispatches
// (same schema, same triggers keeping each lane's `head`). Started by lib.mjs `startServer`
// with the file as argument, SWITCHBOARD_SECRET_KEY and WHATSAPP_API_BASE_URL; it listens
// on a port that answers nothing useful only so that it starts and stops like the servers.
//
// What it does, the work Switchboard's dispatcher does for the same backlog:
// - every 100 ms, ONE transaction: for each active channel with due heads, reserves its
//   pacing slots up to 500 ms ahead (slots 1 / (0.95 × throughput_mps) s apart, from the
//   later of the channel's `pacing_tat` and now), leases one due head per slot (`sending`,
//   lease, lease_until, next_attempt_at = lease end + settle time) and writes the channel's
//   new `pacing_tat`;
// - each leased message waits for its slot on a timer; one more than 25 ms late goes back to
//   the queue unattempted (pacing kept, as Switchboard does); the others are POSTed to the
//   Graph API's `/{phone_number_id}/messages` with `undici.request` (keep-alive), the
//   channel's token opened (AES-256-GCM) once per channel;
// - outcomes are written in grouped transactions (at most 64, or what came in 10 ms):
//   `sent` with the wamid, or back to `queued` (a network error or a 5xx), or `failed`
//   (another answer), each only while the message's lease is still this claim's.
// What it does not do: the customer service window, templates' approval, media, pending
// statuses, webhook events, metrics, logs, retries' back-off beyond "due again in 1 s",
// channel pauses and cool-downs.
import { createDecipheriv, randomUUID } from "node:crypto"
import { createServer } from "node:http"
import { request } from "undici"
import { listen, openDatabase } from "../lib.mjs"

const CLAIM_INTERVAL_MS = 100
const HORIZON_MS = 500
const LATENESS_MS = 25
const LEASE_MS = 60_000
const SETTLE_MS = 120_000
const TIMEOUT_MS = 15_000
const GROUP_MAX = 64
const GROUP_WAIT_MS = 10

const db = openDatabase(process.argv[2])
const secretKey = Buffer.from(process.env.SWITCHBOARD_SECRET_KEY.split(",")[0], "base64")
const graph = `${(process.env.WHATSAPP_API_BASE_URL ?? "https://graph.facebook.com").replace(/\/+$/, "")}/v21.0`

/** A token sealed as `v1.<iv>.<tag>.<ciphertext>` (base64url), AES-256-GCM. */
const openToken = (sealed) => {
  const [, iv, tag, ciphertext] = sealed.split(".").map((part) => Buffer.from(part, "base64url"))
  const decipher = createDecipheriv("aes-256-gcm", secretKey, iv, { authTagLength: 16 })
  decipher.setAuthTag(tag)
  return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString("utf8")
}

const iso = (millis) => new Date(millis).toISOString()

const statements = {
  channels: db.prepare("SELECT uuid, phone_number_id, throughput_mps, pacing_tat, access_token_sealed FROM channels WHERE status = 'active'"),
  // One range of messages_send_queue_due per channel and class (LIMIT a literal: cheaper than a parameter).
  due: db.prepare(`SELECT uuid, recipient, type, text, template FROM messages
    WHERE channel_uuid = ? AND send_class = ? AND head = 1 AND next_attempt_at <= ? AND (status = 'queued' OR lease_until <= ?)
    ORDER BY next_attempt_at, sequence LIMIT 32`),
  lease: db.prepare("UPDATE messages SET status = 'sending', lease = ?, lease_until = ?, next_attempt_at = ?, updated_at = ? WHERE uuid = ?"),
  pacing: db.prepare("UPDATE channels SET pacing_tat = ? WHERE uuid = ?"),
  sent: db.prepare(`UPDATE messages SET status = 'sent', provider_message_id = ?, failure = NULL, attempts = attempts + 1,
    next_attempt_at = NULL, pair_rate_waits = 0, lease = NULL, lease_until = NULL, updated_at = ? WHERE uuid = ? AND lease = ?`),
  failed: db.prepare(`UPDATE messages SET status = 'failed', failure = ?, attempts = attempts + 1,
    next_attempt_at = NULL, pair_rate_waits = 0, lease = NULL, lease_until = NULL, updated_at = ? WHERE uuid = ? AND lease = ?`),
  requeued: db.prepare(`UPDATE messages SET status = 'queued', attempts = attempts + ?, next_attempt_at = ?,
    pair_rate_waits = 0, lease = NULL, lease_until = NULL, updated_at = ? WHERE uuid = ? AND lease = ?`)
}

/** Each channel's Graph URL and opened token, by uuid (the token opened once). */
const channels = new Map()
const channelOf = (row) => {
  let channel = channels.get(row.uuid)
  if (channel === undefined) {
    channel = {
      url: `${graph}/${encodeURIComponent(row.phone_number_id)}/messages`,
      headers: { authorization: `Bearer ${openToken(row.access_token_sealed)}`, "content-type": "application/json" }
    }
    channels.set(row.uuid, channel)
  }
  return channel
}

/** Claims the due heads of every active channel for its slots up to HORIZON_MS ahead: one transaction. */
const claim = db.transaction((now) => {
  const lease = randomUUID()
  const nowIso = iso(now)
  const claimed = []
  for (const row of statements.channels.all()) {
    const interval = 1000 / (0.95 * row.throughput_mps)
    let slot = Math.max(row.pacing_tat, now)
    for (const sendClass of ["single", "broadcast"]) {
      if (slot > now + HORIZON_MS) break
      for (const message of statements.due.all(row.uuid, sendClass, nowIso, now)) {
        if (slot > now + HORIZON_MS) break
        statements.lease.run(lease, now + LEASE_MS, iso(now + LEASE_MS + SETTLE_MS), nowIso, message.uuid)
        claimed.push({ ...message, lease, slot, channel: channelOf(row) })
        slot += interval
      }
    }
    if (slot !== Math.max(row.pacing_tat, now)) statements.pacing.run(slot, row.uuid)
  }
  return claimed
})

/** The outcomes waiting for their grouped transaction. */
let outcomes = []
let flushTimer = null
const writeOutcomes = db.transaction((batch) => {
  const nowIso = iso(Date.now())
  for (const { message, kind, value } of batch) {
    if (kind === "sent") statements.sent.run(value, nowIso, message.uuid, message.lease)
    else if (kind === "failed") statements.failed.run(value, nowIso, message.uuid, message.lease)
    else statements.requeued.run(kind === "late" ? 0 : 1, value, nowIso, message.uuid, message.lease)
  }
})
const flush = () => {
  if (flushTimer !== null) clearTimeout(flushTimer)
  flushTimer = null
  const batch = outcomes
  outcomes = []
  writeOutcomes(batch)
}
const record = (message, kind, value) => {
  outcomes.push({ message, kind, value })
  if (outcomes.length >= GROUP_MAX) flush()
  else flushTimer ??= setTimeout(flush, GROUP_WAIT_MS)
}

const bodyOf = (message) =>
  JSON.stringify({
    messaging_product: "whatsapp",
    recipient_type: "individual",
    to: message.recipient.replace(/^\+/, ""),
    biz_opaque_callback_data: message.uuid,
    ...(message.type === "template" ? { type: "template", template: JSON.parse(message.template) } : { type: "text", text: { preview_url: false, body: message.text } })
  })

/** One attempt at the message's slot: the POST, its outcome recorded. */
let late = 0
const attempt = async (message) => {
  if (Date.now() - message.slot > LATENESS_MS) {
    late += 1
    return record(message, "late", iso(Date.now()))
  }
  try {
    const { statusCode, body } = await request(message.channel.url, {
      method: "POST",
      headers: message.channel.headers,
      body: bodyOf(message),
      headersTimeout: TIMEOUT_MS,
      bodyTimeout: TIMEOUT_MS
    })
    const answer = await body.json().catch(() => ({}))
    const wamid = answer?.messages?.[0]?.id
    if (statusCode >= 200 && statusCode < 300 && typeof wamid === "string") record(message, "sent", wamid)
    else if (statusCode >= 500) record(message, "retry", iso(Date.now() + 1000))
    else record(message, "failed", JSON.stringify({ code: String(answer?.error?.code ?? statusCode), reason: String(answer?.error?.message ?? `HTTP ${statusCode}`) }))
  } catch {
    record(message, "retry", iso(Date.now() + 1000))
  }
}

let inFlight = 0
const dispatch = () => {
  for (const message of claim(Date.now())) {
    inFlight += 1
    setTimeout(() => attempt(message).finally(() => (inFlight -= 1)), Math.max(0, message.slot - Date.now()))
  }
}
setInterval(dispatch, CLAIM_INTERVAL_MS)

await listen("Dispatch baseline", createServer((req, res) => res.end(JSON.stringify({ in_flight: inFlight }))))
process.once("SIGTERM", () => {
  if (outcomes.length > 0) flush()
  process.stderr.write(`dispatch baseline: ${late} messages handed back late for their slot\n`)
})
dispatch()

// Benchmark baseline: an expert's hand-written `POST …/webhooks/whatsapp` receiver, node:http,
// one process, on the SQLite file given as argument — a copy of a file Switchboard's adapter
// migrated and seeded, so the same schema, indexes and triggers (started by lib.mjs
// `startServer`; prints "Ingest baseline listening on …" on stderr). The app secret comes
// from WHATSAPP_APP_SECRET (several, comma-separated, as Switchboard takes them).
//
// What it does, per request:
// - reads the raw body (at most 1 MiB, else 413) and checks `X-Hub-Signature-256:
//   sha256=<hex>` BEFORE parsing: the hex decoded to its 32 bytes, compared with the
//   HMAC-SHA256 of the raw bytes in constant time (`timingSafeEqual`); missing, malformed or
//   wrong → 401 with Switchboard's `invalid_signature` envelope, nothing stored;
// - `JSON.parse`, then ONE better-sqlite3 `BEGIN IMMEDIATE` transaction for the whole
//   notification: per `messages` change, the channel by `metadata.phone_number_id` (one
//   prepared SELECT on its unique index, no cache, inside the write transaction, where
//   Switchboard reads it in one of its own; a number no channel has is acknowledged and not
//   counted), then
//   - per status (`sent`, `delivered`, `read`, `failed`), the outbound message by
//     (organization, direction, wamid) — the `messages_by_provider_id` index — moved only
//     forward, as Switchboard's rule (`MESSAGE_STATUS_PREDECESSORS`): sent → delivered → read,
//     steps may be skipped, `failed` only from queued/sending/sent with Meta's first error as
//     `{code, title}`, `updated_at` = now (the provider id is set only when it is recorded:
//     Switchboard sets it again unchanged); a message leaving queued/sending has its
//     send-queue state cleared. An unknown wamid is kept 10 minutes in `pending_message_statuses`
//     (expired ones pruned first), and, when `biz_opaque_callback_data` is the uuid of an
//     outbound message of the organization, that message is settled with it (status, and
//     the wamid recorded when it has none, which applies its pending reports);
//   - per text message, deduplicated by (organization, inbound, wamid); the sender's phone
//     `+<from>` read with libphonenumber-js/max as Switchboard does (E.164 when valid, else
//     kept as given and unverified when `+` and 1–20 digits); the contact found by phone or
//     created (named by the profile name); the chat found or created `open`; the message
//     inserted (`delivered`, `content` = `{timestamp, context?}`, uuid v7, the channel's
//     uuid); the chat's unread count + 1, reopened from resolved/closed, its last message
//     moved; the customer service window (per contact and channel, and on the chat row)
//     moved to the earlier of Meta's timestamp and now;
//   - outgoing events: the subscriber look-up Switchboard runs (`webhook_endpoints` of the
//     organization subscribed to the event type) for each change that writes one
//     (`message.status_updated` when a status moved, `message.received` per inbound); the
//     event and delivery rows are written only when an endpoint subscribes — none does in
//     the ingest bench;
//   - a part of unexpected shape (a status without id or of another value, a message
//     without id, from or type, an empty text, a sender that is not digits) is kept in
//     `webhook_rejects` (its id the SHA-256 of its organization, number, reason and JSON,
//     as Switchboard derives it), and the rest is stored;
// - after the commit, per stored inbound text, the basic reply whose trigger it is
//   (Switchboard's look-up: `trigger_key` = trimmed, lower-case text);
// - answers Switchboard's envelope `{received: n}` (n = the changes routed to a channel).
// What it does not do: message types other than text (acknowledged, not stored), template
// status updates, answering a matching basic reply (the bench has none), `chat.updated`
// events for a chat an inbound reopens (the bench's chats are open), a failed status's
// reactions on a broadcast (the bench sends none), pruning refused parts, logging,
// metrics.
import { createHash, createHmac, timingSafeEqual } from "node:crypto"
import { createServer } from "node:http"
import { parsePhoneNumberFromString } from "libphonenumber-js/max"
import { v7 as uuidv7 } from "uuid"
import { envelope, listen, openDatabase } from "../lib.mjs"

const BODY_LIMIT = 1024 * 1024
const PENDING_STATUS_TTL_MS = 10 * 60 * 1000
const MAX_NAME_LENGTH = 255
const MAX_MESSAGE_TEXT_LENGTH = 4096
const UNVERIFIED_PHONE = /^\+[0-9]{1,20}$/
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const SIGNATURE = /^sha256=([0-9a-fA-F]{64})$/
/** The statuses a provider report may move a message from (Switchboard's MESSAGE_STATUS_PREDECESSORS). */
const PREDECESSORS = {
  sent: ["queued", "sending"],
  delivered: ["queued", "sending", "sent"],
  read: ["queued", "sending", "sent", "delivered"],
  failed: ["queued", "sending", "sent"]
}

const secrets = (process.env.WHATSAPP_APP_SECRET ?? "")
  .split(",")
  .map((secret) => secret.trim())
  .filter((secret) => secret !== "")

const db = openDatabase(process.argv[2])
const MESSAGE_COLUMNS =
  "uuid, chat_uuid, contact_uuid, direction, type, text, template, media, content, status, provider_message_id, " +
  "failure, channel_uuid, created_at, updated_at, attempts, next_attempt_at, broadcast_uuid"
const sql = {
  channel: db.prepare("SELECT uuid, organization_id FROM channels WHERE phone_number_id = ?"),
  outboundByProviderId: db.prepare(`SELECT ${MESSAGE_COLUMNS} FROM messages
    WHERE organization_id = ? AND direction = 'outbound' AND provider_message_id = ? LIMIT 1`),
  outboundByUuid: db.prepare(`SELECT ${MESSAGE_COLUMNS} FROM messages WHERE organization_id = ? AND uuid = ? AND direction = 'outbound'`),
  // The provider id is set only when it is recorded: setting it again unchanged would rewrite its index entry.
  setStatus: db.prepare("UPDATE messages SET status = ?, failure = ?, updated_at = ? WHERE uuid = ?"),
  setStatusAndId: db.prepare("UPDATE messages SET status = ?, provider_message_id = ?, failure = ?, updated_at = ? WHERE uuid = ?"),
  endDispatch: db.prepare("UPDATE messages SET next_attempt_at = NULL, pair_rate_waits = 0, lease = NULL, lease_until = NULL WHERE uuid = ?"),
  prunePending: db.prepare("DELETE FROM pending_message_statuses WHERE pending_until <= ?"),
  insertPending: db.prepare(`INSERT INTO pending_message_statuses
      (organization_id, provider_message_id, status, from_statuses, failure, reported_at, pending_until) VALUES (?, ?, ?, ?, ?, ?, ?)`),
  pendingOf: db.prepare(`SELECT status, from_statuses, failure, pending_until FROM pending_message_statuses
    WHERE organization_id = ? AND provider_message_id = ? ORDER BY id`),
  deletePendingOf: db.prepare("DELETE FROM pending_message_statuses WHERE organization_id = ? AND provider_message_id = ?"),
  inboundByProviderId: db.prepare(`SELECT uuid FROM messages
    WHERE organization_id = ? AND direction = 'inbound' AND provider_message_id = ? LIMIT 1`),
  contactByPhone: db.prepare("SELECT uuid FROM contacts WHERE organization_id = ? AND phone = ?"),
  insertContact: db.prepare(`INSERT INTO contacts (uuid, organization_id, phone, phone_valid, first_name, last_name, created_at, updated_at)
    VALUES (?, ?, ?, ?, ?, NULL, ?, ?)`),
  chatOfContact: db.prepare("SELECT id, uuid FROM chats WHERE organization_id = ? AND contact_uuid = ?"),
  insertChat: db.prepare("INSERT INTO chats (uuid, organization_id, contact_uuid, status, created_at, updated_at) VALUES (?, ?, ?, 'open', ?, ?)"),
  insertMessage: db.prepare(`INSERT INTO messages (${MESSAGE_COLUMNS}, organization_id)
    VALUES (?, ?, ?, 'inbound', 'text', ?, NULL, NULL, ?, 'delivered', ?, NULL, ?, ?, ?, 0, NULL, NULL, ?)`),
  touchChat: db.prepare(`UPDATE chats SET
      unread_count = unread_count + 1,
      status = CASE WHEN status IN ('resolved', 'closed') THEN 'open' ELSE status END,
      last_message_uuid = CASE WHEN @now >= last_message_at THEN @uuid ELSE last_message_uuid END,
      last_message_at = CASE WHEN @now >= last_message_at THEN @now ELSE last_message_at END,
      updated_at = @now
    WHERE id = @id`),
  upsertWindow: db.prepare(`INSERT INTO customer_service_windows (contact_uuid, channel_uuid, last_inbound_at) VALUES (?, ?, ?)
    ON CONFLICT (contact_uuid, channel_uuid) DO UPDATE SET last_inbound_at = MAX(last_inbound_at, excluded.last_inbound_at)`),
  touchChatWindow: db.prepare(`UPDATE chats SET
      last_inbound_channel_uuid = CASE WHEN last_inbound_at IS NULL OR @at >= last_inbound_at THEN @channel ELSE last_inbound_channel_uuid END,
      last_inbound_at = CASE WHEN last_inbound_at IS NULL OR @at >= last_inbound_at THEN @at ELSE last_inbound_at END
    WHERE id = @id`),
  subscribers: db
    .prepare(`SELECT uuid FROM webhook_endpoints WHERE organization_id = ? AND enabled = 1
      AND (events IS NULL OR EXISTS (SELECT 1 FROM json_each(events) WHERE value = ?))`)
    .pluck(),
  insertEvent: db.prepare("INSERT INTO webhook_events (id, organization_id, type, data, created_at) VALUES (?, ?, ?, ?, ?)"),
  insertDelivery: db.prepare(`INSERT INTO webhook_deliveries
      (id, organization_id, endpoint_uuid, event_id, status, attempts, next_attempt_at, lease, lease_until, created_at)
    VALUES (?, ?, ?, ?, 'pending', 0, ?, NULL, NULL, ?)`),
  insertReject: db.prepare(`INSERT INTO webhook_rejects (id, received_at, organization_id, phone_number_id, reason, item)
    VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`),
  basicReply: db.prepare(`SELECT uuid, response FROM basic_replies WHERE organization_id = ? AND trigger_key = ?`)
}

/**
 * Stores one notification; run as `store.immediate(payload, now)`, one `BEGIN IMMEDIATE`
 * transaction. Returns `{received, texts}` (the stored texts, to match against basic replies).
 */
const store = db.transaction((payload, now) => {
  const texts = []
  let received = 0
  const refused = []
  if (!isRecord(payload) || payload.object !== "whatsapp_business_account" || !Array.isArray(payload.entry)) {
    refused.push([null, null, "not a WhatsApp Business Account notification", payload])
  } else {
    for (const entry of payload.entry) {
      if (!isRecord(entry) || !Array.isArray(entry.changes)) {
        refused.push([null, null, "entry without a changes array", entry])
        continue
      }
      for (const change of entry.changes) {
        if (!isRecord(change) || change.field !== "messages") continue // other fields: acknowledged, ignored here
        const value = isRecord(change.value) ? change.value : undefined
        const phoneNumberId = isRecord(value?.metadata) ? stringOf(value.metadata.phone_number_id) : undefined
        if (phoneNumberId === undefined) {
          refused.push([null, null, "messages change without metadata.phone_number_id", change])
          continue
        }
        const channel = sql.channel.get(phoneNumberId)
        if (channel === undefined) continue // another deployment's number: acknowledged, not counted
        received += 1
        const at = { organization: channel.organization_id, channel: channel.uuid, phoneNumberId, refused, now }
        const names = profileNames(value.contacts)
        for (const message of listOf(value.messages)) {
          const stored = receiveMessage(at, message, names)
          if (stored !== undefined) texts.push([channel.organization_id, stored])
        }
        for (const status of listOf(value.statuses)) applyReport(at, status)
      }
    }
  }
  for (const [organization, phoneNumberId, reason, item] of refused) {
    const json = JSON.stringify(item ?? null)
    const id = rejectIdOf(JSON.stringify([organization, phoneNumberId, reason, item ?? null]))
    sql.insertReject.run(id, now, organization, phoneNumberId, reason, json)
  }
  return { received, texts }
})

/** One status report of a `messages` change. */
const applyReport = (at, status) => {
  const id = isRecord(status) ? stringOf(status.id)?.trim() : undefined
  const value = isRecord(status) ? status.status : undefined
  if (!id || id.length > MAX_NAME_LENGTH || !Object.hasOwn(PREDECESSORS, value)) {
    at.refused.push([at.organization, at.phoneNumberId, "status without id, or not one of sent, delivered, read, failed", status])
    return
  }
  const error = Array.isArray(status.errors) ? status.errors[0] : undefined
  const failure =
    value === "failed"
      ? JSON.stringify({
          code: isRecord(error) && error.code !== undefined ? String(error.code) : "unknown",
          title: ((isRecord(error) ? (stringOf(error.title) ?? stringOf(error.message)) : undefined) ?? "Failed").trim().slice(0, 1024)
        })
      : null
  const row = sql.outboundByProviderId.get(at.organization, id)
  if (row !== undefined) {
    moveStatus(at, row, value, failure, undefined)
    return
  }
  // Meta answered faster than the send recorded its id: kept 10 minutes.
  sql.prunePending.run(at.now)
  const pendingUntil = new Date(Date.parse(at.now) + PENDING_STATUS_TTL_MS).toISOString()
  sql.insertPending.run(at.organization, id, value, JSON.stringify(PREDECESSORS[value]), failure, at.now, pendingUntil)
  // The message our send named in biz_opaque_callback_data settles an unknown outcome.
  const callback = stringOf(status.biz_opaque_callback_data)
  if (callback === undefined || !UUID_PATTERN.test(callback)) return
  const named = sql.outboundByUuid.get(at.organization, callback.toLowerCase())
  if (named === undefined) return
  const recordsId = named.provider_message_id === null
  const moved = moveStatus(at, named, value, failure, recordsId ? id : undefined, false)
  if (!recordsId) return
  let current = moved
  for (const pending of sql.pendingOf.all(at.organization, id)) {
    if (pending.pending_until > at.now) current = moveStatus(at, current, pending.status, pending.failure, undefined, false)
  }
  sql.deletePendingOf.run(at.organization, id)
  if (current.status !== named.status) recordEvent(at, "message.status_updated", () => messageRecord(current))
}

/**
 * Moves `row` to `status` when its status is a predecessor (recording `providerId` when
 * given), clears its send-queue state when it leaves queued/sending, and (unless `event`
 * is false) writes `message.status_updated` when the status moved. Returns the row as stored.
 */
const moveStatus = (at, row, status, failure, providerId, event = true) => {
  const written = PREDECESSORS[status].includes(row.status)
  const next = {
    ...row,
    status: written ? status : row.status,
    failure: written && failure !== null ? failure : row.failure,
    provider_message_id: providerId ?? row.provider_message_id
  }
  if (next.status === row.status && next.failure === row.failure && next.provider_message_id === row.provider_message_id) return row
  next.updated_at = at.now
  if (next.provider_message_id === row.provider_message_id) sql.setStatus.run(next.status, next.failure, at.now, row.uuid)
  else sql.setStatusAndId.run(next.status, next.provider_message_id, next.failure, at.now, row.uuid)
  if (next.status !== "queued" && next.status !== "sending" && row.next_attempt_at !== null) {
    sql.endDispatch.run(row.uuid)
    next.next_attempt_at = null
  }
  if (event && next.status !== row.status) recordEvent(at, "message.status_updated", () => messageRecord(next))
  return next
}

/** One customer message of a `messages` change: the stored text's `{uuid, text}`, or undefined. */
const receiveMessage = (at, message, names) => {
  const id = isRecord(message) ? stringOf(message.id) : undefined
  const from = isRecord(message) ? stringOf(message.from) : undefined
  const type = isRecord(message) ? stringOf(message.type) : undefined
  if (id === undefined || from === undefined || type === undefined) {
    at.refused.push([at.organization, at.phoneNumberId, "message without id, from or type", message])
    return undefined
  }
  if (type !== "text") return undefined // not handled by this receiver (the bench sends texts only)
  const body = isRecord(message.text) ? message.text.body : undefined
  const text = typeof body === "string" ? body : ""
  const wamid = id.trim()
  const phone = phoneOf(`+${from.replace(/^\+/, "")}`)
  if (text.trim() === "" || text.length > MAX_MESSAGE_TEXT_LENGTH || phone === undefined || wamid === "" || wamid.length > MAX_NAME_LENGTH) {
    at.refused.push([at.organization, at.phoneNumberId, "inbound message Switchboard cannot record", message])
    return undefined
  }
  if (sql.inboundByProviderId.get(at.organization, wamid) !== undefined) return undefined // Meta's redelivery
  const { now } = at
  let contact = sql.contactByPhone.get(at.organization, phone.phone)?.uuid
  if (contact === undefined) {
    contact = uuidv7()
    const name = names.get(from)?.trim().slice(0, MAX_NAME_LENGTH) || null
    sql.insertContact.run(contact, at.organization, phone.phone, phone.valid ? 1 : 0, name, now, now)
  }
  let chat = sql.chatOfContact.get(at.organization, contact)
  if (chat === undefined) {
    const uuid = uuidv7()
    chat = { id: Number(sql.insertChat.run(uuid, at.organization, contact, now, now).lastInsertRowid), uuid }
  }
  const uuid = uuidv7()
  const timestamp = stringOf(message.timestamp) ?? null
  const content = JSON.stringify(isRecord(message.context) ? { timestamp, context: message.context } : { timestamp })
  sql.insertMessage.run(uuid, chat.uuid, contact, text, content, wamid, at.channel, now, now, at.organization)
  sql.touchChat.run({ now, uuid, id: chat.id })
  const inboundAt = windowInstant(timestamp, Date.parse(now))
  sql.upsertWindow.run(contact, at.channel, inboundAt)
  sql.touchChatWindow.run({ at: inboundAt, channel: at.channel, id: chat.id })
  recordEvent(at, "message.received", () =>
    messageRecord({
      uuid, chat_uuid: chat.uuid, contact_uuid: contact, direction: "inbound", type: "text", text, template: null, media: null,
      content, status: "delivered", provider_message_id: wamid, failure: null, channel_uuid: at.channel,
      created_at: now, updated_at: now, attempts: 0, next_attempt_at: null, broadcast_uuid: null
    })
  )
  return { uuid, text }
}

/** The event and one delivery per subscribed endpoint, when any subscribes to `type`. */
const recordEvent = (at, type, record) => {
  const endpoints = sql.subscribers.all(at.organization, type)
  if (endpoints.length === 0) return
  const eventId = crypto.randomUUID()
  sql.insertEvent.run(eventId, at.organization, type, JSON.stringify(record()), at.now)
  for (const endpoint of endpoints) sql.insertDelivery.run(crypto.randomUUID(), at.organization, endpoint, eventId, at.now, at.now)
}

/** A message row as Switchboard's message record (JSON columns parsed). */
const messageRecord = (row) => ({
  uuid: row.uuid, chat_uuid: row.chat_uuid, contact_uuid: row.contact_uuid, direction: row.direction, type: row.type, text: row.text,
  template: parsed(row.template), media: parsed(row.media), content: parsed(row.content), status: row.status,
  provider_message_id: row.provider_message_id, failure: parsed(row.failure), channel_uuid: row.channel_uuid, attempts: row.attempts,
  next_attempt_at: row.next_attempt_at, broadcast_uuid: row.broadcast_uuid, created_at: row.created_at, updated_at: row.updated_at
})

const SIGNATURE_REFUSED = "X-Hub-Signature-256 is missing or is not the HMAC-SHA256 of the body under the app secret"
const INVALID_SIGNATURE = envelope(401, SIGNATURE_REFUSED, null, [{ code: "invalid_signature", message: SIGNATURE_REFUSED }])

/** Whether `header` is `sha256=<hex>` of the HMAC-SHA256 of `raw` under one of the secrets. */
const signed = (header, raw) => {
  const match = typeof header === "string" ? SIGNATURE.exec(header) : null
  if (match === null) return false
  const given = Buffer.from(match[1], "hex")
  let valid = false
  for (const secret of secrets) {
    if (timingSafeEqual(createHmac("sha256", secret).update(raw).digest(), given)) valid = true
  }
  return valid
}

const answer = (response, status, body) => {
  response.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(body) })
  response.end(body)
}

const server = createServer((request, response) => {
  if (request.method !== "POST" || !request.url.endsWith("/webhooks/whatsapp")) return answer(response, 404, envelope(404, "Not found", null))
  const chunks = []
  let size = 0
  request.on("data", (chunk) => {
    size += chunk.length
    if (size <= BODY_LIMIT) chunks.push(chunk)
  })
  request.on("end", () => {
    if (size > BODY_LIMIT) return answer(response, 413, envelope(413, "Payload too large", null))
    const raw = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)
    if (!signed(request.headers["x-hub-signature-256"], raw)) return answer(response, 401, INVALID_SIGNATURE)
    let payload
    try {
      payload = JSON.parse(raw.toString("utf8"))
    } catch {
      return answer(response, 400, envelope(400, "Malformed JSON", null))
    }
    let stored
    try {
      stored = store.immediate(payload, new Date().toISOString())
      // After the commit, as Switchboard: a stored text equal to a basic reply's trigger is answered.
      for (const [organization, { text }] of stored.texts) sql.basicReply.get(organization, text.trim().toLowerCase())
    } catch (error) {
      process.stderr.write(`${error.stack}\n`)
      return answer(response, 500, envelope(500, "Internal server error", null))
    }
    answer(response, 200, envelope(200, "Webhook received", { received: stored.received }))
  })
})
server.keepAliveTimeout = 60_000
await listen("Ingest baseline", server)

function isRecord(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value)
}
function listOf(value) {
  return Array.isArray(value) ? value : []
}
/** A non-empty string, or a number as its decimal text (as Switchboard reads WhatsApp's ids). */
function stringOf(value) {
  return typeof value === "string" && value !== "" ? value : typeof value === "number" ? String(value) : undefined
}
function parsed(text) {
  return text === null ? null : JSON.parse(text)
}
/** `wa_id` → profile name, from a change's `contacts`. */
function profileNames(contacts) {
  const names = new Map()
  for (const contact of listOf(contacts)) {
    const waId = isRecord(contact) ? stringOf(contact.wa_id) : undefined
    const name = isRecord(contact) && isRecord(contact.profile) ? stringOf(contact.profile.name) : undefined
    if (waId !== undefined && name !== undefined) names.set(waId, name)
  }
  return names
}
/** E.164 when libphonenumber-js validates it, else `+digits` kept unverified, else undefined. */
function phoneOf(value) {
  const parsedPhone = parsePhoneNumberFromString(value)
  if (parsedPhone !== undefined && parsedPhone.isValid()) return { phone: parsedPhone.number, valid: true }
  return UNVERIFIED_PHONE.test(value) ? { phone: value, valid: false } : undefined
}
/** The earlier of Meta's timestamp (seconds) and now, as an ISO instant (Switchboard's window rule). */
function windowInstant(timestamp, nowMs) {
  const seconds = typeof timestamp === "string" && /^\d{1,12}$/.test(timestamp.trim()) ? Number(timestamp.trim()) : Number.NaN
  return new Date(Math.min(Number.isFinite(seconds) ? seconds * 1000 : nowMs, nowMs)).toISOString()
}
/** A UUID (version 8) of the SHA-256 of a refused part's JSON, as Switchboard derives it. */
function rejectIdOf(json) {
  const hex = createHash("sha256").update(json).digest("hex")
  const variant = ((parseInt(hex[16], 16) & 0x3) | 0x8).toString(16)
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`
}

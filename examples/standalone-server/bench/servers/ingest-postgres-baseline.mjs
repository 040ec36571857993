// Benchmark baseline on PostgreSQL: an expert's hand-written `POST …/webhooks/whatsapp`
// receiver, node:http + pg, one process, on the schema given as argument in the database of
// POSTGRES_URL — a copy of a database Switchboard's PostgreSQL adapter migrated and seeded, so
// the same tables, indexes and triggers (started by lib.mjs `startServer`; prints "Ingest
// Postgres baseline listening on …" on stderr). The app secret comes from WHATSAPP_APP_SECRET
// (several, comma-separated). A pool of 10 connections, like postgres-baseline.mjs and the
// standalone server's default pool, with the same type parsers (counts as numbers,
// timestamps as ISO strings in UTC).
//
// What it does, per request (the rules of servers/ingest-baseline.mjs, on PostgreSQL):
// - reads the raw body (at most 1 MiB, else 413) and checks `X-Hub-Signature-256:
//   sha256=<hex>` BEFORE parsing, in constant time (`timingSafeEqual`); missing, malformed
//   or wrong → 401 with Switchboard's `invalid_signature` envelope, nothing stored;
// - `JSON.parse`, then ONE transaction (`BEGIN` … `COMMIT`, READ COMMITTED, on one pooled
//   client; rerun from the start, at most 5 times, on a serialization failure or deadlock,
//   as the adapter does) for the whole notification: per `messages` change, the channel by
//   `metadata.phone_number_id` (its unique index, no cache; a number no channel has is
//   acknowledged and not counted), then
//   - per status: ONE statement moves the outbound message of (organization, wamid) forward
//     — `UPDATE … WHERE uuid = (the message of the wamid) AND status = ANY(its
//     predecessors)`, which PostgreSQL re-checks on the newest row version when another
//     transaction moved it first, so a status never goes back and no check-then-write gap
//     exists — with its send-queue state cleared when it had one, `failure` set for
//     `failed`, `updated_at` = now, and, in the same statement, the subscriber look-up of
//     `message.status_updated`. When it moved nothing (a duplicate, a status behind the
//     stored one, or a wamid no message has yet), the organization's row is locked (`FOR NO
//     KEY UPDATE`, as every Switchboard transaction that records a provider id takes it
//     first) and the message read `FOR UPDATE`: a known message is left as it is (or moved,
//     had it changed since); an unknown wamid is kept 10 minutes in
//     `pending_message_statuses` (expired ones pruned first), and when
//     `biz_opaque_callback_data` is the uuid of an outbound message of the organization,
//     that message is settled with it (status, and the wamid recorded when it has none,
//     which applies its pending reports);
//   - per text message: the sender's phone `+<from>` read with libphonenumber-js/max as
//     Switchboard does; the contact's chat locked (`SELECT … FOR NO KEY UPDATE` of the chat
//     joined to the contact by phone: one sender's messages, and so every redelivery of one
//     wamid, are stored one at a time; the contact and its chat are inserted first when
//     missing, `ON CONFLICT DO NOTHING` on their unique keys, then locked); then ONE
//     statement, whose snapshot is taken after the lock: the message inserted unless
//     (organization, inbound, wamid) is stored already (Meta's redelivery), and only then
//     the window upserted (per contact and channel, forward only) and the chat row updated
//     once (unread count + 1, reopened from resolved/closed, last message, the window's
//     instant and channel), with the subscriber look-up of `message.received`;
//   - outgoing events: the event and delivery rows are written only when an endpoint
//     subscribes (none does in the ingest bench);
//   - a part of unexpected shape is kept in `webhook_rejects` (id the SHA-256 of its
//     organization, number, reason and JSON, as Switchboard derives it);
// - after the commit, per stored inbound text, the basic reply whose trigger it is
//   (`trigger_key` = trimmed, lower-case text), on the pool;
// - answers Switchboard's envelope `{received: n}`.
// Round trips for a notification of one status that moves: BEGIN, the channel, the move,
// COMMIT (4). For one new inbound text of a known contact: BEGIN, the channel, the chat's
// lock, the writes, COMMIT, the basic reply (6).
// What it does not do: message types other than text (acknowledged, not stored), template
// status updates, answering a matching basic reply (the bench has none), `chat.updated`
// events for a chat an inbound reopens (the bench's chats are open), a failed status's
// reactions on a broadcast (the bench sends none), pruning refused parts, logging, metrics.
import { createHash, createHmac, randomUUID, timingSafeEqual } from "node:crypto"
import { createServer } from "node:http"
import { parsePhoneNumberFromString } from "libphonenumber-js/max"
import Pg from "pg"
import { v7 as uuidv7 } from "uuid"
import { envelope, listen } from "../lib.mjs"

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
/** How many times a transaction runs before a serialization failure or deadlock is raised (the adapter's). */
const TRANSACTION_ATTEMPTS = 5
const RETRYABLE = new Set(["40001", "40P01"])

const secrets = (process.env.WHATSAPP_APP_SECRET ?? "")
  .split(",")
  .map((secret) => secret.trim())
  .filter((secret) => secret !== "")

const s = `"${process.argv[2]}"`
const pool = new Pg.Pool({ connectionString: process.env.POSTGRES_URL, max: 10 })
// Per query, as the adapter does: counts as numbers, timestamps as ISO strings in UTC.
const types = {
  getTypeParser: (oid, format) =>
    oid === 20 ? Number : oid === 1184 ? (text) => new Date(text.replace(" ", "T").replace(/([+-]\d\d)$/, "$1:00")).toISOString() : Pg.types.getTypeParser(oid, format)
}
const query = async (client, text, values) => (await client.query({ text, values, types })).rows

const MESSAGE_COLUMNS =
  "uuid, chat_uuid, contact_uuid, direction, type, text, template, media, content, status, provider_message_id, " +
  "failure, channel_uuid, created_at, updated_at, attempts, next_attempt_at, broadcast_uuid"
/** The organization's enabled endpoints subscribed to event type `$type` (Switchboard's look-up), as an array. */
const subscribersOf = (organization, type) => `ARRAY(SELECT uuid FROM ${s}.webhook_endpoints WHERE organization_id = ${organization} AND enabled
    AND (events IS NULL OR EXISTS (SELECT 1 FROM json_array_elements_text(events) AS e (value) WHERE e.value = ${type})))`
const SQL = {
  channel: `SELECT uuid, organization_id FROM ${s}.channels WHERE phone_number_id = $1`,
  // The status report's move: the message of the wamid, only from a predecessor; its
  // send-queue state cleared when it had one (every reported status leaves the queue).
  move: `WITH moved AS (
      UPDATE ${s}.messages SET status = $3, failure = COALESCE($4::json, failure), updated_at = $5::timestamptz,
        next_attempt_at = NULL,
        pair_rate_waits = CASE WHEN next_attempt_at IS NULL THEN pair_rate_waits ELSE 0 END,
        lease = CASE WHEN next_attempt_at IS NULL THEN lease ELSE NULL END,
        lease_until = CASE WHEN next_attempt_at IS NULL THEN lease_until ELSE NULL END
      WHERE uuid = (SELECT uuid FROM ${s}.messages WHERE organization_id = $1 AND direction = 'outbound' AND provider_message_id = $2 LIMIT 1)
        AND status = ANY($6::text[])
      RETURNING ${MESSAGE_COLUMNS})
    SELECT moved.*, ${subscribersOf("$1", "'message.status_updated'")} AS subscribers FROM moved`,
  lockOrganization: `SELECT 1 FROM ${s}.organizations WHERE id = $1 FOR NO KEY UPDATE`,
  outboundByProviderId: `SELECT ${MESSAGE_COLUMNS} FROM ${s}.messages
    WHERE organization_id = $1 AND direction = 'outbound' AND provider_message_id = $2 LIMIT 1 FOR UPDATE`,
  outboundByUuid: `SELECT ${MESSAGE_COLUMNS} FROM ${s}.messages WHERE organization_id = $1 AND uuid = $2 AND direction = 'outbound' FOR UPDATE`,
  // The provider id is set only when it is recorded.
  setStatus: `UPDATE ${s}.messages SET status = $1, failure = $2::json, updated_at = $3 WHERE uuid = $4`,
  setStatusAndId: `UPDATE ${s}.messages SET status = $1, provider_message_id = $2, failure = $3::json, updated_at = $4 WHERE uuid = $5`,
  endDispatch: `UPDATE ${s}.messages SET next_attempt_at = NULL, pair_rate_waits = 0, lease = NULL, lease_until = NULL WHERE uuid = $1`,
  prunePending: `DELETE FROM ${s}.pending_message_statuses WHERE pending_until <= $1`,
  insertPending: `INSERT INTO ${s}.pending_message_statuses
      (organization_id, provider_message_id, status, from_statuses, failure, reported_at, pending_until) VALUES ($1, $2, $3, $4::json, $5::json, $6, $7)`,
  pendingOf: `SELECT status, failure, pending_until FROM ${s}.pending_message_statuses
    WHERE organization_id = $1 AND provider_message_id = $2 ORDER BY id`,
  deletePendingOf: `DELETE FROM ${s}.pending_message_statuses WHERE organization_id = $1 AND provider_message_id = $2`,
  subscribers: `SELECT ${subscribersOf("$1", "$2")} AS subscribers`,
  // The sender's chat, locked: one sender's messages are stored one at a time.
  lockChat: `SELECT ct.uuid AS contact_uuid, ch.id, ch.uuid FROM ${s}.contacts AS ct JOIN ${s}.chats AS ch ON ch.contact_uuid = ct.uuid
    WHERE ct.organization_id = $1 AND ct.phone = $2 FOR NO KEY UPDATE OF ch`,
  insertContact: `INSERT INTO ${s}.contacts (uuid, organization_id, phone, phone_valid, first_name, last_name, created_at, updated_at)
    VALUES ($1, $2, $3, $4, $5, NULL, $6, $6) ON CONFLICT (organization_id, phone) DO NOTHING`,
  // search_text is filled from the contact by the trigger chats_before_insert.
  insertChat: `INSERT INTO ${s}.chats (uuid, organization_id, contact_uuid, status, created_at, updated_at)
    SELECT $1, $2, uuid, 'open', $4::timestamptz, $4::timestamptz FROM ${s}.contacts WHERE organization_id = $2 AND phone = $3
    ON CONFLICT (contact_uuid) DO NOTHING`,
  // After the chat's lock: the message unless already stored, then (only when it was) the
  // window and the chat row, each written once; and the subscriber look-up.
  receive: `WITH inserted AS (
      INSERT INTO ${s}.messages (${MESSAGE_COLUMNS}, organization_id)
      SELECT $1, $2, $3, 'inbound', 'text', $4, NULL, NULL, $5::json, 'delivered', $6, NULL, $7, $8::timestamptz, $8::timestamptz, 0, NULL, NULL, $9
      WHERE NOT EXISTS (SELECT 1 FROM ${s}.messages WHERE organization_id = $9 AND direction = 'inbound' AND provider_message_id = $6)
      RETURNING uuid),
    windowed AS (
      INSERT INTO ${s}.customer_service_windows (contact_uuid, channel_uuid, last_inbound_at) SELECT $3, $7, $10::timestamptz FROM inserted
      ON CONFLICT (contact_uuid, channel_uuid)
      DO UPDATE SET last_inbound_at = GREATEST(${s}.customer_service_windows.last_inbound_at, EXCLUDED.last_inbound_at)),
    touched AS (
      UPDATE ${s}.chats SET
        unread_count = unread_count + 1,
        status = CASE WHEN status IN ('resolved', 'closed') THEN 'open' ELSE status END,
        last_message_uuid = CASE WHEN $8::timestamptz >= last_message_at THEN $1 ELSE last_message_uuid END,
        last_message_at = GREATEST(last_message_at, $8::timestamptz),
        updated_at = $8::timestamptz,
        last_inbound_channel_uuid = CASE WHEN last_inbound_at IS NULL OR $10::timestamptz >= last_inbound_at THEN $7 ELSE last_inbound_channel_uuid END,
        last_inbound_at = GREATEST(last_inbound_at, $10::timestamptz)
      WHERE id = $11 AND EXISTS (SELECT 1 FROM inserted))
    SELECT EXISTS (SELECT 1 FROM inserted) AS stored, ${subscribersOf("$9", "'message.received'")} AS subscribers`,
  insertEvent: `INSERT INTO ${s}.webhook_events (id, organization_id, type, data, created_at) VALUES ($1, $2, $3, $4::json, $5)`,
  insertDeliveries: `INSERT INTO ${s}.webhook_deliveries
      (id, organization_id, endpoint_uuid, event_id, status, attempts, next_attempt_at, lease, lease_until, created_at)
    SELECT gen_random_uuid()::text, $1, endpoint, $2, 'pending', 0, $3, NULL, NULL, $3 FROM unnest($4::text[]) AS endpoint`,
  insertReject: `INSERT INTO ${s}.webhook_rejects (id, received_at, organization_id, phone_number_id, reason, item)
    VALUES ($1, $2, $3, $4, $5, $6::json) ON CONFLICT (id) DO NOTHING`,
  basicReply: `SELECT uuid, response FROM ${s}.basic_replies WHERE organization_id = $1 AND trigger_key = $2`
}

/** Runs `fn(client)` in one transaction on one pooled client, rerun on a serialization failure or deadlock. */
const inTransaction = async (fn) => {
  for (let attempt = 1; ; attempt++) {
    const client = await pool.connect()
    let broken = false
    try {
      await client.query("BEGIN")
      const result = await fn(client)
      await client.query("COMMIT")
      return result
    } catch (error) {
      try {
        await client.query("ROLLBACK")
      } catch {
        broken = true
      }
      if (RETRYABLE.has(error.code) && attempt < TRANSACTION_ATTEMPTS) continue
      throw error
    } finally {
      client.release(broken)
    }
  }
}

/** Stores one notification in one transaction. Resolves `{received, texts}` (the stored texts, to match against basic replies). */
const store = (payload, now) =>
  inTransaction(async (client) => {
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
          const [channel] = await query(client, SQL.channel, [phoneNumberId])
          if (channel === undefined) continue // another deployment's number: acknowledged, not counted
          received += 1
          const at = { client, organization: channel.organization_id, channel: channel.uuid, phoneNumberId, refused, now, organizationLocked: false }
          const names = profileNames(value.contacts)
          for (const message of listOf(value.messages)) {
            const stored = await receiveMessage(at, message, names)
            if (stored !== undefined) texts.push([channel.organization_id, stored])
          }
          for (const status of listOf(value.statuses)) await applyReport(at, status)
        }
      }
    }
    for (const [organization, phoneNumberId, reason, item] of refused) {
      const json = JSON.stringify(item ?? null)
      const id = rejectIdOf(JSON.stringify([organization, phoneNumberId, reason, item ?? null]))
      await query(client, SQL.insertReject, [id, now, organization, phoneNumberId, reason, json])
    }
    return { received, texts }
  })

/** One status report of a `messages` change. */
const applyReport = async (at, status) => {
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
  // The common case, one statement: a known message moved forward.
  const [moved] = await query(at.client, SQL.move, [at.organization, id, value, failure, at.now, PREDECESSORS[value]])
  if (moved !== undefined) {
    const { subscribers, ...row } = moved
    await writeEvent(at, "message.status_updated", subscribers, () => messageRecord(row))
    return
  }
  // Nothing moved: a duplicate, a status behind the stored one, or a wamid no message has
  // yet. Under the organization's lock (which a send recording its wamid takes too), read again.
  await lockOrganization(at)
  const row = (await query(at.client, SQL.outboundByProviderId, [at.organization, id]))[0]
  if (row !== undefined) {
    await moveStatus(at, row, value, failure, undefined)
    return
  }
  // Meta answered faster than the send recorded its id: kept 10 minutes.
  await query(at.client, SQL.prunePending, [at.now])
  const pendingUntil = new Date(Date.parse(at.now) + PENDING_STATUS_TTL_MS).toISOString()
  await query(at.client, SQL.insertPending, [at.organization, id, value, JSON.stringify(PREDECESSORS[value]), failure, at.now, pendingUntil])
  // The message our send named in biz_opaque_callback_data settles an unknown outcome.
  const callback = stringOf(status.biz_opaque_callback_data)
  if (callback === undefined || !UUID_PATTERN.test(callback)) return
  const named = (await query(at.client, SQL.outboundByUuid, [at.organization, callback.toLowerCase()]))[0]
  if (named === undefined) return
  const recordsId = named.provider_message_id === null
  const settled = await moveStatus(at, named, value, failure, recordsId ? id : undefined, false)
  if (!recordsId) return
  let current = settled
  for (const pending of await query(at.client, SQL.pendingOf, [at.organization, id])) {
    if (pending.pending_until > at.now) current = await moveStatus(at, current, pending.status, jsonOrNull(pending.failure), undefined, false)
  }
  await query(at.client, SQL.deletePendingOf, [at.organization, id])
  if (current.status !== named.status) await recordEvent(at, "message.status_updated", () => messageRecord(current))
}

/** Locks the organization's row once per transaction (every Switchboard write of the organization takes it first). */
const lockOrganization = async (at) => {
  if (at.organizationLocked) return
  await query(at.client, SQL.lockOrganization, [at.organization])
  at.organizationLocked = true
}

/**
 * Moves `row` (read `FOR UPDATE`) to `status` when its status is a predecessor (recording
 * `providerId` when given), clears its send-queue state when it leaves queued/sending, and
 * (unless `event` is false) writes `message.status_updated` when the status moved. Returns
 * the row as stored.
 */
const moveStatus = async (at, row, status, failure, providerId, event = true) => {
  const written = PREDECESSORS[status].includes(row.status)
  const rowFailure = jsonOrNull(row.failure)
  const next = {
    ...row,
    status: written ? status : row.status,
    failure: written && failure !== null ? failure : rowFailure,
    provider_message_id: providerId ?? row.provider_message_id
  }
  if (next.status === row.status && next.failure === rowFailure && next.provider_message_id === row.provider_message_id) return row
  next.updated_at = at.now
  if (next.provider_message_id === row.provider_message_id) await query(at.client, SQL.setStatus, [next.status, next.failure, at.now, row.uuid])
  else await query(at.client, SQL.setStatusAndId, [next.status, next.provider_message_id, next.failure, at.now, row.uuid])
  if (next.status !== "queued" && next.status !== "sending" && row.next_attempt_at !== null) {
    await query(at.client, SQL.endDispatch, [row.uuid])
    next.next_attempt_at = null
  }
  next.failure = next.failure === null ? null : JSON.parse(next.failure)
  if (event && next.status !== row.status) await recordEvent(at, "message.status_updated", () => messageRecord(next))
  return next
}

/** One customer message of a `messages` change: the stored text's `{uuid, text}`, or undefined. */
const receiveMessage = async (at, message, names) => {
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
  const { client, now } = at
  let [chat] = await query(client, SQL.lockChat, [at.organization, phone.phone])
  if (chat === undefined) {
    // A new sender: the contact (named by the profile name) and its chat, each unless another
    // transaction inserted it first; then locked as above.
    const name = names.get(from)?.trim().slice(0, MAX_NAME_LENGTH) || null
    await query(client, SQL.insertContact, [uuidv7(), at.organization, phone.phone, phone.valid, name, now])
    await query(client, SQL.insertChat, [uuidv7(), at.organization, phone.phone, now])
    ;[chat] = await query(client, SQL.lockChat, [at.organization, phone.phone])
  }
  const uuid = uuidv7()
  const timestamp = stringOf(message.timestamp) ?? null
  const content = JSON.stringify(isRecord(message.context) ? { timestamp, context: message.context } : { timestamp })
  const inboundAt = windowInstant(timestamp, Date.parse(now))
  const [written] = await query(client, SQL.receive, [
    uuid, chat.uuid, chat.contact_uuid, text, content, wamid, at.channel, now, at.organization, inboundAt, chat.id
  ])
  if (!written.stored) return undefined // Meta's redelivery
  await writeEvent(at, "message.received", written.subscribers, () => ({
    uuid, chat_uuid: chat.uuid, contact_uuid: chat.contact_uuid, direction: "inbound", type: "text", text, template: null, media: null,
    content: JSON.parse(content), status: "delivered", provider_message_id: wamid, failure: null, channel_uuid: at.channel,
    attempts: 0, next_attempt_at: null, broadcast_uuid: null, created_at: now, updated_at: now
  }))
  return { uuid, text }
}

/** The event and one delivery per subscribed endpoint, when any subscribes to `type` (looked up here). */
const recordEvent = async (at, type, record) => {
  const [{ subscribers }] = await query(at.client, SQL.subscribers, [at.organization, type])
  await writeEvent(at, type, subscribers, record)
}

/** The event and one delivery per endpoint of `subscribers` (none: nothing written). */
const writeEvent = async (at, type, subscribers, record) => {
  if (subscribers.length === 0) return
  const eventId = randomUUID()
  await query(at.client, SQL.insertEvent, [eventId, at.organization, type, JSON.stringify(record()), at.now])
  await query(at.client, SQL.insertDeliveries, [at.organization, eventId, at.now, subscribers])
}

/** A message row as Switchboard's message record (pg parsed its JSON columns). */
const messageRecord = (row) => ({
  uuid: row.uuid, chat_uuid: row.chat_uuid, contact_uuid: row.contact_uuid, direction: row.direction, type: row.type, text: row.text,
  template: row.template ?? null, media: row.media ?? null, content: row.content ?? null, status: row.status,
  provider_message_id: row.provider_message_id, failure: row.failure ?? null, channel_uuid: row.channel_uuid, attempts: row.attempts,
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
  request.on("end", async () => {
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
      stored = await store(payload, new Date().toISOString())
      // After the commit, as Switchboard: a stored text equal to a basic reply's trigger is answered.
      for (const [organization, { text }] of stored.texts) await query(pool, SQL.basicReply, [organization, text.trim().toLowerCase()])
    } catch (error) {
      process.stderr.write(`${error.stack}\n`)
      return answer(response, 500, envelope(500, "Internal server error", null))
    }
    answer(response, 200, envelope(200, "Webhook received", { received: stored.received }))
  })
})
server.keepAliveTimeout = 60_000
await listen("Ingest Postgres baseline", server)

function jsonOrNull(value) {
  return value === null || value === undefined ? null : JSON.stringify(value)
}
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

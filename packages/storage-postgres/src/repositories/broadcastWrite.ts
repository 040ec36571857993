import type { BroadcastId, BroadcastRecipientWrite, Message, OrganizationId } from "@switchboard/core"
import type { Sql } from "../internal/sql.js"
import { MESSAGE_VALUE_TYPES, messageInChat } from "@switchboard/storage-sql"
import { MESSAGE_COLUMNS, messageValues } from "./chatRows.js"
import { insertOutboxMessage } from "./outboxInsert.js"

// A batch of a broadcast's recipients written set-based: the writes `chats.appendMessage`
// makes for one message (chatAppend.ts `writeAppendedMessage`, outboxInsert.ts
// `insertOutboxMessage` without a claim), done for the whole batch in a fixed number of
// statements instead of several per recipient.

/** The columns of `messages` one batch insert writes: {@link MESSAGE_COLUMNS}, the organization and the dispatch state. */
const INSERT_COLUMNS = `${MESSAGE_COLUMNS}, organization_id, recipient, send_class, expires_at, sequence, head`

/** The SQL types of {@link INSERT_COLUMNS}, in order, as the arrays of `unnest` bind them (JSON as text). */
const INSERT_TYPES = [
  ...MESSAGE_VALUE_TYPES.map((type) => (type === "json" ? "text" : type)),
  "text", "text", "timestamptz", "bigint", "boolean"
] as const

/** The JSON columns of {@link INSERT_COLUMNS} (bound as text, cast to `json`). */
const JSON_COLUMNS = new Set(["template", "media", "content", "failure", "reactions"])

/** `INSERT INTO messages … SELECT … FROM unnest(…)` of {@link INSERT_COLUMNS}, `$1`, `$2`, … one array per column. */
const insertMessagesSql = (schema: string, onHeadConflict: boolean): string => {
  const columns = INSERT_COLUMNS.split(", ")
  const selected = columns.map((column) => (JSON_COLUMNS.has(column) ? `r.${column}::json` : `r.${column}`)).join(", ")
  const arrays = INSERT_TYPES.map((type, n) => `$${n + 1}::${type}[]`).join(", ")
  return `INSERT INTO ${schema}.messages (${INSERT_COLUMNS})
    SELECT ${selected} FROM unnest(${arrays}) WITH ORDINALITY AS r (${columns.join(", ")}, n) ORDER BY r.n
    ${onHeadConflict ? "ON CONFLICT (organization_id, (COALESCE(channel_uuid, '')), recipient, send_class) WHERE head DO NOTHING" : ""}
    RETURNING uuid`
}

/** The lane of a queued recipient, as the keys of `messages_send_queue_one_head` compare it. */
const laneKey = (channelUuid: string | null, to: string) => `${channelUuid ?? ""}\u0000${to}`

/**
 * Writes the recipients of one batch of a broadcast's start, inside `writeRecipients`'
 * transaction (the organization locked), with the effect of `chats.appendMessage`'s writes
 * for each (`writeAppendedMessage` with the contact by id, its chat created `open` as
 * `chat_uuid` when missing, unread count and status unchanged): a `queued` recipient enters
 * the send queue as class `broadcast`, due at `now`, never claimed here, the head of its
 * lane when no other message waits there (the lanes' heads locked `FOR SHARE` first, as
 * an append does); a `failed` one is written without dispatch state; each chat's last
 * message moves to it unless the chat has a newer one. A recipient whose contact is gone
 * is skipped. The batch is `recipients` already checked against the broadcast's existing
 * recipients (one per contact). A fixed number of statements whatever the batch's size:
 * the contacts, the chats (missing ones inserted), the lanes' heads, the sequence numbers,
 * the messages, the chats' last messages. A recipient that met a head written meanwhile
 * (the unique index of heads) is written again by `insertOutboxMessage`, alone.
 */
export const writeRecipientBatch = async (
  sql: Sql,
  schema: string,
  organizationId: OrganizationId,
  broadcastId: string,
  recipients: ReadonlyArray<BroadcastRecipientWrite>,
  now: string
): Promise<void> => {
  if (recipients.length === 0) return
  const existing = new Set(
    (await sql.rows<{ uuid: string }>(
      `SELECT uuid FROM ${schema}.contacts WHERE organization_id = $1 AND uuid = ANY($2::text[])`,
      [organizationId, recipients.map((recipient) => recipient.contact_uuid)]
    )).map((row) => row.uuid)
  )
  const batch = recipients.filter((recipient) => existing.has(recipient.contact_uuid))
  if (batch.length === 0) return
  // The contacts' chats: the missing ones inserted (`open`, the given uuid), then every one read.
  const chats = await sql.rows<{ id: number; uuid: string; contact_uuid: string }>(
    `WITH wanted AS (SELECT * FROM unnest($2::text[], $3::text[]) AS w (contact_uuid, chat_uuid)),
      inserted AS (
        INSERT INTO ${schema}.chats (uuid, organization_id, contact_uuid, status, created_at, updated_at)
          SELECT w.chat_uuid, $1, w.contact_uuid, 'open', $4, $4 FROM wanted AS w
          WHERE NOT EXISTS (SELECT 1 FROM ${schema}.chats AS c WHERE c.organization_id = $1 AND c.contact_uuid = w.contact_uuid)
          RETURNING id, uuid, contact_uuid)
    SELECT id, uuid, contact_uuid FROM inserted
    UNION ALL
    SELECT c.id, c.uuid, c.contact_uuid FROM ${schema}.chats AS c JOIN wanted AS w ON w.contact_uuid = c.contact_uuid
      WHERE c.organization_id = $1`,
    [organizationId, batch.map((recipient) => recipient.contact_uuid), batch.map((recipient) => recipient.chat_uuid), now]
  )
  const chatOf = new Map(chats.map((chat) => [chat.contact_uuid, chat]))
  const messages = batch.map((recipient) => {
    const chat = chatOf.get(recipient.contact_uuid)!
    const queued = recipient.message.status === "queued"
    // Keys messageInChat already has, replaced (a spread adding keys costs a hidden class per object).
    const message: Message = {
      ...messageInChat(recipient.message, chat.uuid, recipient.contact_uuid),
      broadcast_uuid: broadcastId as BroadcastId,
      next_attempt_at: queued ? now : recipient.message.next_attempt_at
    }
    return { recipient, chat, message, queued }
  })
  const queued = messages.filter((each) => each.queued)
  // The lanes that have a head already, each head locked FOR SHARE (a hand-over waits for this write and sees it).
  const headed = new Set<string>()
  if (queued.length > 0) {
    const heads = await sql.rows<{ channel: string; recipient: string }>(
      `SELECT COALESCE(m.channel_uuid, '') AS channel, m.recipient FROM ${schema}.messages AS m
        JOIN unnest($2::text[], $3::text[]) AS l (channel, recipient)
          ON COALESCE(m.channel_uuid, '') = l.channel AND m.recipient = l.recipient
        WHERE m.organization_id = $1 AND m.send_class = 'broadcast' AND m.head
        FOR SHARE OF m`,
      [organizationId, queued.map((each) => each.message.channel_uuid ?? ""), queued.map((each) => each.recipient.to)]
    )
    for (const head of heads) headed.add(laneKey(head.channel === "" ? null : head.channel, head.recipient))
  }
  const sequences = queued.length === 0
    ? []
    : (await sql.rows<{ sequence: number }>(
      `SELECT nextval('${schema}.send_queue_sequence') AS sequence FROM generate_series(1, $1::integer) ORDER BY 1`,
      [queued.length]
    )).map((row) => row.sequence)
  const columns: Array<Array<unknown>> = INSERT_TYPES.map(() => [])
  let next = 0
  for (const each of messages) {
    const lane = laneKey(each.message.channel_uuid, each.recipient.to)
    const head = each.queued && !headed.has(lane)
    if (head) headed.add(lane)
    const values = [
      ...messageValues(each.message, each.chat.uuid, each.recipient.contact_uuid, organizationId),
      each.queued ? each.recipient.to : null,
      each.queued ? "broadcast" : null,
      each.queued ? each.recipient.expires_at : null,
      each.queued ? sequences[next++] : null,
      head
    ]
    values.forEach((value, index) => columns[index]!.push(value))
  }
  const inserted = new Set(
    (await sql.rows<{ uuid: string }>(insertMessagesSql(schema, true), columns)).map((row) => row.uuid)
  )
  // A head another write made since the look: those recipients go through the one-message append.
  for (const each of messages) {
    if (inserted.has(each.message.uuid)) continue
    await insertOutboxMessage(sql, schema, organizationId, each.message, {
      to: each.recipient.to,
      class: "broadcast",
      expires_at: each.recipient.expires_at,
      claim: null
    }, now)
  }
  await sql.run(
    `UPDATE ${schema}.chats AS c SET
        last_message_uuid = CASE WHEN t.created_at >= c.last_message_at THEN t.uuid ELSE c.last_message_uuid END,
        last_message_at = GREATEST(c.last_message_at, t.created_at),
        updated_at = $4
      FROM unnest($1::bigint[], $2::text[], $3::timestamptz[]) AS t (id, uuid, created_at)
      WHERE c.id = t.id`,
    [
      messages.map((each) => each.chat.id),
      messages.map((each) => each.message.uuid),
      messages.map((each) => each.message.created_at),
      now
    ]
  )
}

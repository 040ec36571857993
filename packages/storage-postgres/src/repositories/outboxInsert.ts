import {
  CHANNEL_REMOVED_FAILURE,
  listedMessageType,
  type Message,
  type MessageFailure,
  type OrganizationId,
  type OutboxPlacement,
  pacingIntervalMs
} from "@switchboard/core"
import { MESSAGE_VALUE_COUNT, placedMessage, queuedInsertValues } from "@switchboard/storage-sql"
import type { Sql } from "../internal/sql.js"
import { decodeMessage, MESSAGE_COLUMNS, type MessageRow, messageValuesSql } from "./chatRows.js"
import { insertWebhookEvents, subscribedEndpoints } from "./webhookEvents.js"

/** How many parameters a message's values bind (`messageValues`, the organization last). */
const M = MESSAGE_VALUE_COUNT

// The send queue's writes made inside other repositories' transactions: a message entering
// the queue (`chats.appendMessage`, a broadcast's recipients) and the waiting messages the
// store fails itself (a deleted channel, a cancelled or stopped broadcast).

/** A channel's status and pacing state. */
export interface PacingRow {
  readonly status: string
  readonly throughput_mps: number
  readonly pacing_tat: number
  readonly cooldown_ms: number
}

/** The lane of a message: the terms of `messages_send_queue_one_head` (organization $1, channel $2, recipient $3, class $4). */
const LANE = "organization_id = $1 AND COALESCE(channel_uuid, '') = COALESCE($2::text, '') AND recipient = $3 AND send_class = $4"

/**
 * Inserts `message` (its chat and contact set) in the send queue with the dispatch state of
 * `placement`, inside the caller's transaction (the rules of `OutboxPlacement`): claimed at
 * once (`sending` under the placement's lease; a pacing slot at `now` reserved unless
 * `bypass`) when it may go now, else `queued` — due at `now` when never to be claimed here,
 * else at its channel's next pacing slot; the head of its lane when no other message waits
 * there (a scheduled one, `notBefore`, is stored `scheduled` and never a head: a claim
 * promotes it when due). The lane's head is locked `FOR SHARE` first, so a hand-over running at once waits
 * for this insert and sees it; two appends to an empty lane meet at the unique index of
 * heads, and the one that loses inserts as no head. Returns the message as stored.
 */
export const insertOutboxMessage = async (
  sql: Sql,
  schema: string,
  organizationId: OrganizationId | string,
  message: Message,
  placement: OutboxPlacement,
  now: string
): Promise<Message> => {
  const nowMillis = Date.parse(now)
  const channelUuid = message.channel_uuid
  const scheduled = placement.notBefore !== undefined
  const claim = scheduled ? null : placement.claim
  const lane = [organizationId, channelUuid, placement.to, placement.class]
  const mayClaim = claim !== null && !claim.bypass
  // The channel row is locked only when this append may reserve its pacing (as a claim does).
  const pacing =
    channelUuid === null
      ? undefined
      : await sql.row<PacingRow>(
        `SELECT status, throughput_mps, pacing_tat, cooldown_ms FROM ${schema}.channels WHERE uuid = $1
          ${mayClaim ? "FOR NO KEY UPDATE" : ""}`,
        [channelUuid]
      )
  const slot = pacing === undefined ? nowMillis : Math.max(pacing.pacing_tat, nowMillis)
  const { sequence } = (await sql.row<{ sequence: number }>(`SELECT nextval('${schema}.send_queue_sequence') AS sequence`))!
  for (let round = 0; ; round++) {
    // A scheduled message is in no lane until a claim promotes it (outboxClaim.ts): never a head.
    const waiting = scheduled ? null : await sql.row(`SELECT uuid FROM ${schema}.messages WHERE ${LANE} AND head FOR SHARE`, lane)
    const head = waiting === undefined
    const claimed = claim !== null && (claim.bypass || (pacing?.status !== "paused" && slot === nowMillis && head))
    const stored = placedMessage(message, claim, claimed, now, slot, placement.notBefore)
    const inserted = await sql.run(
      `INSERT INTO ${schema}.messages (${MESSAGE_COLUMNS}, organization_id, recipient, send_class, expires_at, sequence,
          pair_rate_waits, lease, lease_until, scheduled_at, head)
        VALUES (${messageValuesSql((k) => `$${k + 1}`)},
          $${M + 1}, $${M + 2}, $${M + 3}, $${M + 4}, 0, $${M + 5}, $${M + 6}, $${M + 7}, $${M + 8})
        ${head ? "ON CONFLICT (organization_id, (COALESCE(channel_uuid, '')), recipient, send_class) WHERE head DO NOTHING" : ""}`,
      queuedInsertValues(stored, String(organizationId), placement, sequence, claimed ? claim : null, head)
    )
    // Another append became the lane's head since the look: look again (its head is locked now).
    if (inserted === 0 && round < 3) continue
    if (inserted === 0) throw new Error("send queue: the lane's head kept changing during an append")
    if (claimed && !claim.bypass && pacing !== undefined && channelUuid !== null) {
      await sql.run(`UPDATE ${schema}.channels SET pacing_tat = $1 WHERE uuid = $2`, [
        nowMillis + pacingIntervalMs(pacing.throughput_mps),
        channelUuid
      ])
    }
    return stored
  }
}

/**
 * The `SET` of waiting messages the store fails itself: `failed` with the failure ($1, JSON
 * text) at `updated_at` ($2), their dispatch state ended.
 */
const FAILED_BY_STORE =
  "status = 'failed', failure = $1::json, next_attempt_at = NULL, pair_rate_waits = 0, lease = NULL, lease_until = NULL, updated_at = $2"

/** How many messages one statement fails when each needs its event (a batch read back). */
const FAIL_BATCH = 1_000

/**
 * Fails the messages `where` selects (terms on `messages`, parameters from $3 on: `values`)
 * with `failure` at `now`, each with its `message.status_updated` event (none for a reaction
 * row). Without a
 * subscribed endpoint, one statement that reads nothing back; with one, batches of
 * {@link FAIL_BATCH} read back for their events, so memory stays bounded however many
 * messages wait. The lanes' heads move by the triggers of schema/delivery.ts.
 */
const failMessages = async (
  sql: Sql,
  schema: string,
  organizationId: OrganizationId | string,
  where: string,
  values: ReadonlyArray<unknown>,
  failure: MessageFailure,
  now: string
): Promise<void> => {
  const params = [JSON.stringify(failure), now, ...values]
  const endpoints = await subscribedEndpoints(sql, schema, organizationId, "message.status_updated")
  if (endpoints.length === 0) {
    await sql.run(`UPDATE ${schema}.messages SET ${FAILED_BY_STORE} WHERE ${where}`, params)
    return
  }
  for (;;) {
    const rows = await sql.rows<MessageRow>(
      `UPDATE ${schema}.messages SET ${FAILED_BY_STORE}
        WHERE uuid IN (SELECT uuid FROM ${schema}.messages WHERE ${where} LIMIT ${FAIL_BATCH})
        RETURNING ${MESSAGE_COLUMNS}`,
      params
    )
    // A reaction row is never announced (core's listedMessageType).
    const announced = rows.map(decodeMessage).filter((message) => listedMessageType(message.type))
    if (announced.length > 0) {
      await insertWebhookEvents(sql, schema, organizationId, "message.status_updated", now, endpoints, announced)
    }
    if (rows.length < FAIL_BATCH) return
  }
}

/**
 * Fails the waiting send-queue messages of a channel being deleted with
 * `CHANNEL_REMOVED_FAILURE` at `now`, each with its `message.status_updated` event, inside
 * `channels.delete`'s transaction.
 */
export const failChannelMessages = (
  sql: Sql,
  schema: string,
  organizationId: OrganizationId | string,
  channelId: string,
  now: string
): Promise<void> =>
  failMessages(
    sql,
    schema,
    organizationId,
    "channel_uuid = $3 AND organization_id = $4 AND recipient IS NOT NULL AND status IN ('queued', 'sending', 'scheduled')",
    [channelId, organizationId],
    CHANNEL_REMOVED_FAILURE,
    now
  )

/**
 * Fails the `queued` send-queue messages of a broadcast being cancelled or stopped with
 * `failure` at `now` (those already `sending` finish their attempt), each with its
 * `message.status_updated` event, inside the transaction of `broadcasts.cancel` or
 * `broadcasts.stop`: a range of `messages_broadcast_statuses`.
 */
export const failQueuedBroadcastMessages = (
  sql: Sql,
  schema: string,
  organizationId: OrganizationId | string,
  broadcastId: string,
  failure: MessageFailure,
  now: string
): Promise<void> =>
  failMessages(
    sql,
    schema,
    organizationId,
    "broadcast_uuid = $3 AND status = 'queued' AND organization_id = $4 AND recipient IS NOT NULL",
    [broadcastId, organizationId],
    failure,
    now
  )

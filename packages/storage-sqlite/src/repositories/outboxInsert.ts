import { CHANNEL_REMOVED_FAILURE, listedMessageType, type Message, type MessageFailure, type OrganizationId, type OutboxPlacement, pacingIntervalMs } from "@switchboard/core"
import { placedMessage, queuedInsertValues } from "@switchboard/storage-sql"
import type { Statements } from "../internal/sql.js"
import { decodeMessage, type MessageRow } from "./chatRows.js"
import { FAIL_BATCH, type PacingRow, SQL } from "./outboxRows.js"
import { hasSubscriber, recordWebhookEvents } from "./webhookEvents.js"

// How messages enter the send queue and how the store fails waiting ones itself (a deleted
// channel, an ended broadcast), inside the transactions of the writes that cause them.

/**
 * Inserts `message` (its chat and contact set) in the send queue with the dispatch state of
 * `placement`, inside `appendMessage`'s transaction (the rules of `OutboxPlacement`):
 * claimed at once (`sending` under the placement's lease; a pacing slot at `now` reserved
 * unless `bypass`) when it may go now, else `queued` — due at `now` when never to be
 * claimed here, else at its channel's next pacing slot; the head of its lane when no other
 * message waits there. A scheduled one (`notBefore`) is stored `scheduled`, never a head
 * (a claim promotes it when due: outboxClaim.ts). Returns the message as stored.
 */
export const insertOutboxMessage = (
  statements: Statements,
  organizationId: OrganizationId,
  message: Message,
  placement: OutboxPlacement,
  now: string
): Message => {
  const nowMillis = Date.parse(now)
  const channelUuid = message.channel_uuid
  const pacing =
    channelUuid === null ? undefined : statements.prepare<PacingRow>(SQL.pacing).get(channelUuid)
  const slot = pacing === undefined ? nowMillis : Math.max(pacing.pacing_tat, nowMillis)
  const claim = placement.notBefore === undefined ? placement.claim : null
  const head = placement.notBefore === undefined &&
    statements.prepare(SQL.laneWaits).get(organizationId, channelUuid, placement.to, placement.class) === undefined
  const claimed = claim !== null && (claim.bypass || (pacing?.status !== "paused" && slot === nowMillis && head))
  if (claimed && !claim.bypass && pacing !== undefined) {
    statements.prepare(SQL.reservePacing).run(nowMillis + pacingIntervalMs(pacing.throughput_mps), channelUuid)
  }
  const { sequence } = statements.prepare<{ sequence: number }>(SQL.nextSequence).get()!
  const stored = placedMessage(message, claim, claimed, now, slot, placement.notBefore)
  statements.prepare(SQL.insert).run(...queuedInsertValues(stored, organizationId, placement, sequence, claimed ? claim : null, head ? 1 : 0))
  return stored
}

/**
 * Fails the waiting and scheduled send-queue messages of a channel being deleted with
 * `CHANNEL_REMOVED_FAILURE` at `now`, each with its `message.status_updated` event, inside
 * `channels.delete`'s transaction.
 */
export const failChannelMessages = (
  statements: Statements,
  organizationId: OrganizationId,
  channelId: string,
  now: string
): void => {
  failMessages(statements, organizationId, "failChannel", CHANNEL_REMOVED_FAILURE, now, channelId, organizationId)
  failMessages(statements, organizationId, "failChannelScheduled", CHANNEL_REMOVED_FAILURE, now, channelId, organizationId)
}

/**
 * Fails the `queued` send-queue messages of a broadcast being cancelled or stopped with
 * `failure` at `now` (those already `sending` finish their attempt), each with its
 * `message.status_updated` event, inside the transaction of `broadcasts.cancel` or
 * `broadcasts.stop` (broadcasts.ts).
 */
export const failQueuedBroadcastMessages = (
  statements: Statements,
  organizationId: OrganizationId,
  broadcastId: string,
  failure: MessageFailure,
  now: string
): void => failMessages(statements, organizationId, "failBroadcastQueued", failure, now, broadcastId, organizationId)

/**
 * Fails the messages of one of the store's failure ranges (`statement`: the key of its
 * plain `UPDATE` in outboxRows.ts `SQL`, whose `…Batch` twin reads rows back) with the
 * failure, `now` and then `where`, each with its `message.status_updated` event (none for
 * a reaction row). Without an endpoint subscribed to that event, one statement that reads
 * nothing back; with one, batches of {@link FAIL_BATCH} read back and announced until a
 * batch comes back short, so memory stays bounded however many messages wait (a cancel of
 * 100 000 recipients held every row and its decoded message at once). All inside the
 * caller's transaction, so the failures and their events commit together.
 */
const failMessages = (
  statements: Statements,
  organizationId: OrganizationId,
  statement: "failChannel" | "failChannelScheduled" | "failBroadcastQueued",
  failure: MessageFailure,
  now: string,
  ...where: ReadonlyArray<string>
): void => {
  const parameters = [JSON.stringify(failure), now, ...where]
  if (!hasSubscriber(statements, organizationId, "message.status_updated")) {
    statements.prepare(SQL[statement]).run(...parameters)
    return
  }
  const batch = statements.prepare<MessageRow>(SQL[`${statement}Batch`])
  for (;;) {
    const rows = batch.all(...parameters)
    // A reaction row is never announced (core's listedMessageType).
    recordWebhookEvents(statements, organizationId, "message.status_updated", now, () =>
      rows.map(decodeMessage).filter((message) => listedMessageType(message.type))
    )
    if (rows.length < FAIL_BATCH) return
  }
}

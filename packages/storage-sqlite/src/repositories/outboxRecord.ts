import {
  type Message,
  MESSAGE_STATUS_PREDECESSORS,
  type MessageFailure,
  type MessageStatus,
  nextCooldownMs,
  type OrganizationId,
  listedMessageType,
  type MessageType,
  outboundReactionOf,
  type OutboxOutcome,
  type SentOutcome
} from "@switchboard/core"
import { Option } from "effect"
import { outcomeRow } from "../dialect.js"
import type { Statements } from "../internal/sql.js"
import { type ChannelRow, decodeChannel } from "./channelRows.js"
import { decodeMessage } from "./chatRows.js"
import { foldReaction } from "./chats.js"
import { applyPending, applyStatus, hasPendingStatus } from "./messageStatus.js"
import { type PacingRow, type QueuedRow, SQL, writeRow } from "./outboxRows.js"
import { hasSubscriber, recordWebhookEvent } from "./webhookEvents.js"

// The outcome of a send attempt and a provider's settlement of a send-queue message,
// inside their transactions.

/**
 * What follows the write of a `Sent` outcome (`sent`, the row as written), inside its
 * transaction: the pending provider reports for its id applied, the channel's cool-down
 * ended, a business reaction shown on its target, else the `message.status_updated` event.
 * Returns the message as stored afterwards.
 */
const afterSent = (statements: Statements, sent: QueuedRow, outcome: SentOutcome, now: string): Message => {
  const organizationId = sent.organization_id as OrganizationId
  const final =
    outcome.provider_message_id === null
      ? sent
      : applyPending(statements, organizationId, sent, outcome.provider_message_id, now).row
  if (sent.channel_uuid !== null) statements.prepare(SQL.endCoolDown).run(sent.channel_uuid)
  const message = decodeMessage(final)
  const reaction = outboundReactionOf(message)
  // A business reaction shows on its target in the same step; its row is never announced.
  if (reaction !== undefined) foldReaction(statements, organizationId, "business", { message_id: reaction.message_id, emoji: reaction.emoji, at: now }, now)
  else if (listedMessageType(message.type)) recordWebhookEvent(statements, organizationId, "message.status_updated", now, () => message)
  return message
}

/** What {@link SQL.recordSent} reads back. */
interface SentRow {
  readonly organization_id: string
  readonly channel_uuid: string | null
  readonly type: MessageType
}

/**
 * The body of `recordSent`, inside its transaction: the `Sent` outcome written while `lease`
 * holds message `id` (else nothing, and `None`), then what {@link afterSent} does, reading
 * the whole message back only when something needs it (a pending provider report for its
 * id, a reaction, an endpoint subscribed to its event); else only the cool-down ends.
 * Returns the message's status afterwards.
 */
export const recordSentLean = (statements: Statements, id: string, lease: string, outcome: SentOutcome, now: string): Option.Option<MessageStatus> => {
  const written = statements.prepare<SentRow>(SQL.recordSent).get(outcome.provider_message_id, outcome.attempts, now, id, lease)
  if (written === undefined) return Option.none()
  const organizationId = written.organization_id as OrganizationId
  const wanted = written.type === "reaction" ||
    (outcome.provider_message_id !== null && hasPendingStatus(statements, organizationId, outcome.provider_message_id)) ||
    hasSubscriber(statements, organizationId, "message.status_updated")
  if (wanted) return Option.some(afterSent(statements, statements.prepare<QueuedRow>(SQL.queuedById).get(id)!, outcome, now).status)
  if (written.channel_uuid !== null) statements.prepare(SQL.endCoolDown).run(written.channel_uuid)
  return Option.some("sent")
}

/** The body of `record`, inside its transaction, for a message `lease` still holds. */
export const recordOutcome = (statements: Statements, row: QueuedRow, outcome: OutboxOutcome, now: string): Message => {
  const organizationId = row.organization_id as OrganizationId
  const nowMillis = Date.parse(now)
  const channelUuid = row.channel_uuid
  let message: Message
  switch (outcome._tag) {
    case "Sent":
      return afterSent(statements, writeRow(statements, outcomeRow(row, outcome, now)), outcome, now)
    case "Failed": {
      message = decodeMessage(
        writeRow(statements, outcomeRow(row, outcome, now))
      )
      if (listedMessageType(message.type)) recordWebhookEvent(statements, organizationId, "message.status_updated", now, () => message)
      return message
    }
    case "Requeued": {
      message = decodeMessage(
        writeRow(statements, outcomeRow(row, outcome, now))
      )
      if (outcome.throttled && channelUuid !== null) {
        const pacing = statements.prepare<PacingRow>(SQL.pacing).get(channelUuid)
        if (pacing !== undefined) {
          const cooldownMs = nextCooldownMs(pacing.cooldown_ms)
          statements.prepare(SQL.coolDown).run(cooldownMs, Math.max(pacing.pacing_tat, nowMillis + cooldownMs), channelUuid)
        }
      }
      if (outcome.attempts > 0 && listedMessageType(message.type)) recordWebhookEvent(statements, organizationId, "message.status_updated", now, () => message)
      return message
    }
    case "Unknown":
      return decodeMessage(
        writeRow(statements, outcomeRow(row, outcome, now))
      )
    case "Paused": {
      message = decodeMessage(
        writeRow(statements, outcomeRow(row, outcome, now))
      )
      if (channelUuid !== null) {
        const paused = statements
          .prepare<ChannelRow>(SQL.pause)
          .get(JSON.stringify(outcome.reason), now, now, channelUuid)
        if (paused !== undefined) {
          recordWebhookEvent(statements, organizationId, "channel.paused", now, () => decodeChannel(paused))
        }
      }
      return message
    }
  }
}

/** The body of `settle`, inside its transaction, for an outbox message of the organization. */
export const settleMessage = (
  statements: Statements,
  organizationId: OrganizationId,
  row: QueuedRow,
  settlement: { readonly provider_message_id: string; readonly status: MessageStatus; readonly failure?: MessageFailure | undefined; readonly now: string }
) => {
  const recordsId = row.provider_message_id === null
  const written = applyStatus(statements, row, {
    status: settlement.status,
    from: MESSAGE_STATUS_PREDECESSORS[settlement.status],
    failure: settlement.failure,
    provider_message_id: recordsId ? settlement.provider_message_id : undefined,
    now: settlement.now
  })
  const final = recordsId
    ? applyPending(statements, organizationId, written.row, settlement.provider_message_id, settlement.now)
    : { row: written.row, changed: false }
  const message = decodeMessage(final.row)
  if (final.row.status !== row.status && listedMessageType(message.type)) {
    recordWebhookEvent(statements, organizationId, "message.status_updated", settlement.now, () => message)
  }
  return { message, changed: written.changed || final.changed }
}

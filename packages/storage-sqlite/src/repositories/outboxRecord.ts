import {
  type Message,
  MESSAGE_STATUS_PREDECESSORS,
  type MessageFailure,
  type MessageStatus,
  nextCooldownMs,
  type OrganizationId,
  listedMessageType,
  outboundReactionOf,
  type OutboxOutcome
} from "@switchboard/core"
import { outcomeRow } from "../dialect.js"
import type { Statements } from "../internal/sql.js"
import { type ChannelRow, decodeChannel } from "./channelRows.js"
import { decodeMessage } from "./chatRows.js"
import { foldReaction } from "./chats.js"
import { applyPending, applyStatus } from "./messageStatus.js"
import { type PacingRow, type QueuedRow, SQL, writeRow } from "./outboxRows.js"
import { recordWebhookEvent } from "./webhookEvents.js"

// The outcome of a send attempt and a provider's settlement of a send-queue message,
// inside their transactions.

/** The body of `record`, inside its transaction, for a message `lease` still holds. */
export const recordOutcome = (statements: Statements, row: QueuedRow, outcome: OutboxOutcome, now: string): Message => {
  const organizationId = row.organization_id as OrganizationId
  const nowMillis = Date.parse(now)
  const channelUuid = row.channel_uuid
  let message: Message
  switch (outcome._tag) {
    case "Sent": {
      const sent = writeRow(statements, outcomeRow(row, outcome, now))
      const final =
        outcome.provider_message_id === null
          ? sent
          : applyPending(statements, organizationId, sent, outcome.provider_message_id, now).row
      if (channelUuid !== null) statements.prepare(SQL.endCoolDown).run(channelUuid)
      message = decodeMessage(final)
      const reaction = outboundReactionOf(message)
      // A business reaction shows on its target in the same step; its row is never announced.
      if (reaction !== undefined) foldReaction(statements, organizationId, "business", { message_id: reaction.message_id, emoji: reaction.emoji, at: now }, now)
      else if (listedMessageType(message.type)) recordWebhookEvent(statements, organizationId, "message.status_updated", now, () => message)
      return message
    }
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

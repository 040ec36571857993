import { listedMessageType, type Message, type MessageId, type MessageStatus, outboundReactionOf, withReaction } from "../model/messages.js"
import type { OrganizationId } from "../model/organizations.js"
import type { MessageStatusOutcome, MessageStatusUpdate } from "../storage/ChatRepository.js"
import type { MemoryState, MessageRow } from "./state.js"
import { recordWebhookEvent } from "./webhooks.js"

// Status writes of messages, shared by the chats repository and the send queue's.

/** The message record of a row. */
export const withoutOrganization = ({ organization_id: _, ...message }: MessageRow): Message => message

/** The key of `providerIds` and `pendingStatuses`. */
export const providerKey = (organizationId: OrganizationId, direction: string, providerId: string) =>
  `${organizationId} ${direction} ${providerId}`

/** The statuses whose arrival ends a message's dispatch state in the send queue. */
const SETTLED: ReadonlyArray<MessageStatus> = ["sent", "delivered", "read", "failed"]

/**
 * Writes one status update to a stored message per the rules of `MessageStatusUpdate`; a
 * move to a settled status also ends its dispatch state (lease, `next_attempt_at`,
 * `pair_rate_waits`).
 */
export const applyStatus = (
  state: MemoryState,
  organizationId: OrganizationId,
  message: MessageRow,
  update: Pick<MessageStatusUpdate, "status" | "from" | "failure" | "now" | "provider_message_id">
): Extract<MessageStatusOutcome, { _tag: "Updated" }> => {
  const written = update.from.includes(message.status)
  const status = written ? update.status : message.status
  const failure = written && update.failure !== undefined ? update.failure : message.failure
  const providerId = update.provider_message_id ?? message.provider_message_id
  const changed = status !== message.status || providerId !== message.provider_message_id || failure !== message.failure
  const settled = status !== message.status && SETTLED.includes(status)
  const stored: MessageRow = changed
    ? {
        ...message,
        status,
        failure,
        provider_message_id: providerId,
        next_attempt_at: settled ? null : message.next_attempt_at,
        updated_at: update.now
      }
    : message
  state.messages.set(message.uuid, stored)
  const dispatch = state.dispatch.get(message.uuid)
  if (settled && dispatch !== undefined) state.dispatch.set(message.uuid, { ...dispatch, lease: null, lease_until: null, pair_rate_waits: 0 })
  if (changed && providerId !== null) state.providerIds.set(providerKey(organizationId, stored.direction, providerId), message.uuid)
  return { _tag: "Updated", message: withoutOrganization(stored), changed }
}

/**
 * `updateMessageStatus` on a found message: the update, then, when it recorded a provider
 * id on an outbound message, the pending reports for that id that are still live (applied
 * in arrival order, then deleted), and `message.status_updated` when the status changed.
 */
export const writeStatus = (
  state: MemoryState,
  organizationId: OrganizationId,
  message: MessageRow,
  update: MessageStatusUpdate
): Extract<MessageStatusOutcome, { _tag: "Updated" }> => {
  let outcome = applyStatus(state, organizationId, message, update)
  const providerId = outcome.message.provider_message_id
  if (update.provider_message_id !== undefined && providerId !== null && message.direction === "outbound") {
    const key = providerKey(organizationId, "outbound", providerId)
    const pending = state.pendingStatuses.get(key) ?? []
    state.pendingStatuses.delete(key)
    for (const report of pending.filter((report) => report.pendingUntil > update.now)) {
      const next = applyStatus(state, organizationId, state.messages.get(message.uuid)!, { ...report, now: update.now })
      outcome = { ...next, changed: outcome.changed || next.changed }
    }
  }
  const written = outcome.message
  // A reaction row is never announced: its target's message.reactions_updated is.
  if (written.status !== message.status && listedMessageType(message.type)) {
    recordWebhookEvent(state, organizationId, "message.status_updated", update.now, () => written)
  }
  return outcome
}

/**
 * When `row` is an outbound reaction just recorded sent: the business's reaction written
 * into its target (the organization's message `target_uuid`: `reactions` by core's
 * `withReaction` and `updated_at`), with `message.reactions_updated` when they changed.
 * Anything else, or a target gone: nothing.
 */
export const foldBusinessReaction = (state: MemoryState, organizationId: OrganizationId, row: Message, now: string): void => {
  const reaction = outboundReactionOf(row)
  if (reaction === undefined) return
  const target = state.messages.get(reaction.target_uuid as MessageId)
  if (target === undefined || target.organization_id !== organizationId) return
  const reactions = withReaction(target.reactions, "business", reaction.emoji, now)
  if (reactions === target.reactions) return
  const written: MessageRow = { ...target, reactions, updated_at: now }
  state.messages.set(target.uuid, written)
  recordWebhookEvent(state, organizationId, "message.reactions_updated", now, () => withoutOrganization(written))
}

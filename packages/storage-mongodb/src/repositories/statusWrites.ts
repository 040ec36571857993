import { listedMessageType, type MessageStatusOutcome, type MessageStatusUpdate, type OrganizationId } from "@switchboard/core"
import { chatById, eq, ofOrganization, owned } from "../internal/queries.js"
import { messageRecord } from "../internal/records.js"
import type { Collections } from "../internal/schema.js"
import { pendingEvent, subscribersOf } from "./webhooks.js"

// The status writes the chat repository (`updateMessageStatus`, provider reports) and the
// send queue (outbox.ts: `record`, `settle`, failing waiting messages) share.

/** How many times a compare-and-set update is retried when another write came first. */
const CAS_ATTEMPTS = 10

/**
 * What {@link writeStatus} writes: a `MessageStatusUpdate`'s fields, and `keepProviderId`:
 * write `provider_message_id` only when the message has none (`OutboxRepository.settle`).
 */
export type StatusWrite = Pick<MessageStatusUpdate, "status" | "from" | "failure" | "provider_message_id" | "now"> & {
  readonly keepProviderId?: boolean
}

/**
 * Writes one status update to the message per the rules of `MessageStatusUpdate`,
 * compare-and-set on the status and provider id read, retried when another write came
 * first. A status change also ends the message's send-queue dispatch state
 * (`next_attempt_at`, and for a message of the send queue its lease and
 * `pair_rate_waits`) in the same write. `NotFound` when the organization has no such
 * message in a chat.
 */
export const writeStatus = async (
  collections: Collections,
  organizationId: string,
  id: string,
  update: StatusWrite
): Promise<MessageStatusOutcome> => {
  for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
    const document = await collections.messages.findOne(owned(organizationId, id))
    if (document === null || !(await chatExists(collections, organizationId, document.chat_uuid))) return { _tag: "NotFound" }
    const written = update.from.includes(document.status)
    const status = written ? update.status : document.status
    const providerId =
      update.keepProviderId === true
        ? (document.provider_message_id ?? update.provider_message_id ?? null)
        : (update.provider_message_id ?? document.provider_message_id)
    const current = messageRecord(document)
    const failure = written && update.failure !== undefined ? update.failure : current.failure
    if (status === document.status && providerId === document.provider_message_id && failure === current.failure) {
      return { _tag: "Updated", message: current, changed: false }
    }
    const moved = status !== document.status
    const message = {
      ...current,
      status,
      provider_message_id: providerId,
      failure,
      next_attempt_at: moved ? null : current.next_attempt_at,
      updated_at: update.now
    }
    // Leaving the send queue's waiting statuses ends its dispatch state in the same write.
    const ended = !moved ? {} : document.to === undefined ? { next_attempt_at: null } : { next_attempt_at: null, ...ENDED_LEASE }
    // A status change carries its message.status_updated event in the same update.
    // (A reaction row is never announced: its target's message.reactions_updated is.)
    const endpoints = !moved || !listedMessageType(current.type) ? [] : (await subscribersOf(collections, organizationId))("message.status_updated")
    const event = endpoints.length === 0 ? {} : { $push: { pending_events: pendingEvent("message.status_updated", update.now, endpoints, message) } }
    const result = await collections.messages.updateOne(
      { ...owned(organizationId, id), status: eq(document.status), provider_message_id: eq(document.provider_message_id) },
      { $set: { status, provider_message_id: providerId, failure, ...ended, updated_at: update.now }, ...event }
    )
    if (result.matchedCount === 0) continue
    return { _tag: "Updated", message, changed: true }
  }
  throw new Error("chats.updateMessageStatus: the message kept changing concurrently")
}

/**
 * Applies to the message of `outcome` the pending reports of its provider id not yet past
 * `pending_until` at `now`, in arrival order, each by {@link writeStatus} at `now`
 * (the time of the write that applies them). Each report is claimed by a `findOneAndDelete` first, so of two processes
 * applying them together (a send recording the id, a report arriving) each report is
 * applied by exactly one.
 */
export const applyPending = async (
  collections: Collections,
  organizationId: string,
  providerMessageId: string,
  now: string,
  outcome: Extract<MessageStatusOutcome, { _tag: "Updated" }>
): Promise<MessageStatusOutcome> => {
  let result = outcome
  for (;;) {
    const report = await collections.pendingMessageStatuses.findOneAndDelete(
      { ...ofOrganization(organizationId), provider_message_id: eq(providerMessageId), pending_until: { $gt: now } },
      { sort: { reported_at: 1, _id: 1 } }
    )
    if (report === null) return result
    const next = await writeStatus(collections, organizationId, result.message.uuid, {
      status: report.status,
      from: report.from,
      failure: report.failure ?? undefined,
      now
    })
    if (next._tag === "NotFound") return next
    result = { ...next, changed: result.changed || next.changed }
  }
}

/** A send-queue message's dispatch state once it no longer waits: no lease, no pair-rate refusals. */
export const ENDED_LEASE = { lease: null, lease_until: null, pair_rate_waits: 0 } as const

/** Whether the organization has a chat with this uuid. */
export const chatExists = async (collections: Collections, organizationId: OrganizationId | string, chatId: string) =>
  (await collections.contacts.countDocuments(chatById(organizationId, chatId), { limit: 1 })) > 0

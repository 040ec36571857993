import type {
  ClaimedMessage,
  Message,
  MessageStatus,
  MessageStatusUpdate,
  OrganizationId,
  OutboxClaimRequest,
  OutboxOutcome
} from "@switchboard/core"
import type { SqlValues } from "../SqlDialect.js"
import type { MessageRow } from "./messages.js"
import { type CandidateRow, ENDED, type QueuedRow } from "./outbox.js"

// The pure rules of a message's status moves (a provider's report, a send attempt's outcome,
// a claim) on rows as one engine holds them: the adapter reads the row, writes what these
// answer, and decodes it.

/**
 * Whether a message of this status waits in the send queue (`queued` or `sending`).
 *
 * @category send queue
 */
export const isWaiting = (status: string): boolean => status === "queued" || status === "sending"

/**
 * One status update of a message row per the rules of `MessageStatusUpdate`: the status
 * (with the failure given) only from one of `from`, the provider id when given. `row` is
 * the row as stored afterwards (`updated_at` = `now`); `ends` whether the message leaves the
 * send queue's waiting statuses with dispatch state to clear; `changed` whether anything
 * changed (when not, nothing is to be written and `row` is the row given).
 *
 * @category send queue
 */
export interface StatusMove<Row extends MessageRow> {
  readonly changed: boolean
  readonly status: string
  readonly providerId: string | null
  /** The failure as the row holds it (the dialect's `json`). */
  readonly failure: unknown
  readonly ends: boolean
  readonly row: Row
}

/**
 * The {@link StatusMove} of `update` on `row`, for one dialect's values.
 *
 * @category send queue
 */
export const statusMoveOf =
  (values: SqlValues) =>
  <Row extends MessageRow>(
    row: Row,
    update: Pick<MessageStatusUpdate, "status" | "from" | "failure" | "provider_message_id" | "now">
  ): StatusMove<Row> => {
    const written = update.from.includes(row.status as MessageStatus)
    const status = written ? update.status : row.status
    const failure = written && update.failure !== undefined ? values.json(update.failure) : (row.failure ?? null)
    const providerId = update.provider_message_id ?? row.provider_message_id
    const changed = status !== row.status || providerId !== row.provider_message_id || !values.sameJson(failure, row.failure)
    if (!changed) return { changed, status, providerId, failure, ends: false, row }
    const ends = !isWaiting(status) && row.next_attempt_at !== null
    return {
      changed,
      status,
      providerId,
      failure,
      ends,
      row: {
        ...row,
        status,
        provider_message_id: providerId,
        failure,
        updated_at: update.now,
        ...(ends ? { next_attempt_at: null } : {})
      }
    }
  }

/**
 * The row of a send-queue message after a send attempt's `outcome` at `now` (before a
 * `Sent` message's pending provider reports are applied), for one dialect's values. The
 * adapter writes it, then does what the outcome asks of the channel (end a cool-down,
 * start one, pause it).
 *
 * @category send queue
 */
export const outcomeRowOf =
  (values: SqlValues) =>
  <Row extends QueuedRow>(row: Row, outcome: OutboxOutcome, now: string): Row => {
    const base = { ...row, updated_at: now, pair_rate_waits: 0 }
    switch (outcome._tag) {
      case "Sent":
        return {
          ...base,
          ...ENDED,
          status: "sent",
          provider_message_id: outcome.provider_message_id ?? row.provider_message_id,
          failure: null,
          attempts: row.attempts + outcome.attempts
        }
      case "Failed":
        return {
          ...base,
          ...ENDED,
          status: "failed",
          failure: values.json(outcome.failure),
          attempts: row.attempts + outcome.attempts
        }
      case "Requeued":
        return {
          ...base,
          status: "queued",
          next_attempt_at: outcome.next_attempt_at,
          failure: values.json(outcome.failure),
          attempts: row.attempts + outcome.attempts,
          pair_rate_waits: outcome.pairRate ? row.pair_rate_waits + 1 : 0,
          lease: null,
          lease_until: null
        }
      case "Unknown":
        return {
          ...base,
          next_attempt_at: outcome.next_attempt_at,
          attempts: row.attempts + outcome.attempts,
          lease: null,
          lease_until: Date.parse(now)
        }
      case "Paused":
        return { ...base, status: "queued", next_attempt_at: now, lease: null, lease_until: null }
    }
  }

/**
 * The claimed message of a due head leased to a claim (`message` the head as leased).
 *
 * @category send queue
 */
export const claimedMessage = (
  row: CandidateRow,
  message: Message,
  request: Pick<OutboxClaimRequest, "lease">,
  notBefore: number
): ClaimedMessage => ({
  organization_id: row.organization_id as OrganizationId,
  message,
  lease: request.lease,
  to: row.recipient,
  class: row.send_class,
  expires_at: row.expires_at,
  pair_rate_waits: row.pair_rate_waits,
  not_before: notBefore,
  reclaimed: row.status === "sending",
  scheduled_at: row.scheduled_at ?? null
})

import { type GroupedCall, type Message, type OutboxOutcome, type OutboxPlacement, type OutboxRepository, type SendClass, type StorageError, withPromise } from "@switchboard/core"
import type { Option } from "effect"
import { type MessageRow, messageValues } from "./messages.js"
import { iso } from "./values.js"

// Rows of `messages` as the send queue reads them: message rows with the dispatch state
// beside them, and the pure rules of a claim's order.

/**
 * A message row with its organization and its dispatch state (a message in the send queue).
 *
 * @category rows
 */
export interface QueuedRow extends MessageRow {
  readonly organization_id: string
  readonly recipient: string
  readonly send_class: SendClass
  readonly expires_at: string
  readonly sequence: number
  readonly pair_rate_waits: number
  readonly lease: string | null
  readonly lease_until: number | null
}

/**
 * The columns of a {@link QueuedRow} after the message's, in `SELECT` order.
 *
 * @category statements
 */
export const QUEUED_STATE_COLUMNS = "organization_id, recipient, send_class, expires_at, sequence, pair_rate_waits, lease, lease_until"

/**
 * A due head as a claim reads it: what decides whether and how it is claimed.
 *
 * @category rows
 */
export interface CandidateRow {
  readonly uuid: string
  readonly organization_id: string
  readonly recipient: string
  readonly send_class: SendClass
  readonly expires_at: string
  readonly status: string
  readonly next_attempt_at: string
  readonly sequence: number
  readonly pair_rate_waits: number
  /** The `send_at` it was scheduled for, `null` (or absent from the row) for a message never scheduled. */
  readonly scheduled_at?: string | null
}

/**
 * The order of a claim's candidates: `single` first, then `next_attempt_at`, then `sequence`.
 *
 * @category send queue
 */
export const claimOrder = (a: CandidateRow, b: CandidateRow): number =>
  (a.send_class === b.send_class ? 0 : a.send_class === "single" ? -1 : 1) ||
  (a.next_attempt_at < b.next_attempt_at ? -1 : a.next_attempt_at > b.next_attempt_at ? 1 : 0) ||
  a.sequence - b.sequence

/**
 * The fields of a message leaving the queue's waiting statuses: no due time, no lease, no
 * pair-rate waits.
 *
 * @category send queue
 */
export const ENDED = { next_attempt_at: null, pair_rate_waits: 0, lease: null, lease_until: null } as const

/**
 * A failed message queued again (`outbox.retry`): due at `now`, no attempts yet, no failure,
 * expiring at `expiresAt`.
 *
 * @category send queue
 */
export const retried = <Row extends QueuedRow>(row: Row, now: string, expiresAt: string): Row => ({
  ...row,
  ...ENDED,
  status: "queued",
  next_attempt_at: now,
  attempts: 0,
  failure: null,
  expires_at: expiresAt,
  updated_at: now
})

/**
 * The parameters of the write of a queued row's moving fields, in order: status,
 * provider_message_id, failure (`failure` as bound: JSON text), attempts, next_attempt_at,
 * expires_at, pair_rate_waits, lease, lease_until, updated_at, then the uuid.
 *
 * @category parameters
 */
export const queuedRowValues = (row: QueuedRow, failure: string | null): Array<unknown> => [
  row.status,
  row.provider_message_id,
  failure,
  row.attempts,
  row.next_attempt_at,
  row.expires_at,
  row.pair_rate_waits,
  row.lease,
  row.lease_until,
  row.updated_at,
  row.uuid
]

/**
 * A message as it enters the send queue: `scheduled` until `notBefore` when given (a
 * scheduled send, never claimed here); else `sending` when `claimed` (due again after the
 * claim's settle time), else `queued` — due at `now` when never to be claimed here, else at
 * its channel's pacing `slot` (epoch ms).
 *
 * @category send queue
 */
export const placedMessage = (
  message: Message,
  claim: OutboxPlacement["claim"],
  claimed: boolean,
  now: string,
  slot: number,
  notBefore?: string | undefined
): Message =>
  notBefore !== undefined
    ? { ...message, status: "scheduled", next_attempt_at: notBefore }
    : {
      ...message,
      status: claimed ? "sending" : "queued",
      next_attempt_at: claimed && claim !== null ? iso(claim.leaseUntil + claim.settleMs) : claim === null ? now : iso(slot)
    }

/**
 * The parameters of a send-queue message's insert: {@link messageValues} (its columns and
 * `organization_id`), then recipient, send_class, expires_at, sequence, lease, lease_until
 * (`lease`: the claim when claimed at once, else `null`), scheduled_at (the placement's
 * `notBefore`, else `null`) and `head` (the dialect's boolean); `pair_rate_waits` is
 * written `0` by the statement.
 *
 * @category parameters
 */
export const queuedInsertValues = (
  stored: Message,
  organizationId: string,
  placement: OutboxPlacement,
  sequence: number,
  lease: { readonly lease: string; readonly leaseUntil: number } | null,
  head: unknown
): Array<unknown> => [
  ...messageValues(stored, stored.chat_uuid, stored.contact_uuid, organizationId),
  placement.to,
  placement.class,
  placement.expires_at,
  sequence,
  lease?.lease ?? null,
  lease?.leaseUntil ?? null,
  placement.notBefore ?? null,
  head
]

/**
 * How long a `record` waits for others to share its transaction, in ms (with
 * {@link RECORD_GROUP_SIZE}, the most that share one). Outcomes arrive one by one as Meta
 * answers; alone, each paid a whole transaction: on SQLite ~150 µs of CPU, most of it the
 * commit (grouped, about 40 µs); on PostgreSQL a connection, `BEGIN`, the organization's
 * lock and `COMMIT`, and with a few hundred outcomes a second they queued for the pool's
 * connections and the organization's lock, attempts waiting behind them missed their
 * pacing slots, and dispatch fell to a few messages a second (docs/benchmarks.md "Outbound
 * dispatch"). A send answered in the request waits up to this long more for its answer.
 *
 * @category send queue
 */
export const RECORD_GROUP_WINDOW_MS = 10

/**
 * The most `record`s that share one transaction (see {@link RECORD_GROUP_WINDOW_MS}).
 *
 * @category send queue
 */
export const RECORD_GROUP_SIZE = 64

/**
 * One `record` call of the send queue, as a store groups them: the message's id, its lease
 * token, the outcome and the time (ISO 8601).
 *
 * @category send queue
 */
export interface RecordRequest {
  readonly id: string
  readonly lease: string
  readonly outcome: OutboxOutcome
  readonly now: string
}

/**
 * A {@link RecordRequest} of `record` (`lean` unset: answered with the message) or of
 * `recordSent` (`lean`: a `Sent` outcome answered with the message's status only), as a
 * store's grouped queue takes both: each group holds requests of either form.
 *
 * @category send queue
 */
export interface LeanableRecord extends RecordRequest {
  readonly lean?: boolean
}

/**
 * `OutboxRepository.record` through a grouped queue of {@link RecordRequest}s
 * (`groupedQueue`), in both forms: the Effect and its promise form, joining the same groups.
 *
 * @category send queue
 */
export const recordThrough = (grouped: GroupedCall<RecordRequest, Option.Option<Message>, StorageError>): OutboxRepository["record"] =>
  withPromise(
    (id, lease, outcome, now) => grouped({ id, lease, outcome, now }),
    (id, lease, outcome, now) => grouped.promise({ id, lease, outcome, now })
  )

import type { Effect, Option } from "effect"
import type { Channel, ChannelId, ChannelStatus } from "../model/channels.js"
import type { Message, MessageFailure, MessageId, MessageStatus } from "../model/messages.js"
import type { OrganizationId } from "../model/organizations.js"
import type { StorageError } from "./errors.js"
import { tappedPromise, type WithPromiseForm } from "../internal/promiseForm.js"

// The send queue (docs/messaging.md "The send queue"). Every outbound message a send,
// an auto-reply or a broadcast creates is a message row WITH DISPATCH STATE: it is "in
// the outbox". Messages written any other way (inbound messages, chat imports, the seed)
// have none and are never claimed, whatever their status.
//
// DISPATCH STATE of an outbox message (beside the public record's `status`, `attempts`,
// `next_attempt_at`, `broadcast_uuid`): `to` (E.164 at creation), `class`, `expires_at`,
// `sequence` (a number the store assigns at creation, increasing across the whole store:
// the order of a lane), `pair_rate_waits` (pair-rate refusals in a row, 0 at creation),
// and the lease (`lease`, `lease_until`), set only while a dispatcher holds it.
//
// SCHEDULED messages (docs/messaging.md "Scheduled sends"): a message placed with
// `notBefore` is stored `scheduled`, `next_attempt_at` = `notBefore`, with `scheduled_at`
// (dispatch state, the same instant) kept for good. It is in no lane and never a head
// until it is due: every claim's atomic step FIRST promotes the scheduled messages with
// `next_attempt_at <= now` to `queued`, each with a fresh `sequence` (so it joins the
// tail of its lane), `next_attempt_at` unchanged, no event; then claims as below.
// `nextDueAt` includes scheduled messages (any channel); `cancel`, a deleted channel or
// contact, `channelQueue` and `summary` treat them as `queued`.
//
// LANES. A lane is (organization, `channel_uuid` or none, `to`, `class`). A message is
// WAITING when its status is `queued` or `sending`. The HEAD of a lane is its waiting
// message of lowest `sequence`; only heads are claimed, so one recipient's messages
// through one channel go out in creation order and one at a time, and a recipient that
// waits never holds up another. (A store may keep the head explicitly or find it from an
// index on waiting messages: the contract only sees the rule.)
//
// PACING (GCRA, docs/channels.md "Throughput"). Each channel keeps `pacing_tat` (epoch ms,
// its "theoretical arrival time", initially 0) and `cooldown_ms` (0 initially). Its
// interval is `pacingIntervalMs(channel.throughput_mps)`. Reserving one slot at `now`
// gives the slot `s = max(pacing_tat, now)` and sets `pacing_tat = s + interval`; a slot
// may be reserved only while `max(pacing_tat, now) <= now + horizonMs`. Messages without
// a channel are not paced. Pacing state lives with the outbox and is reserved in the same
// atomic step as the claim, so it is exact across processes sharing the store.
//
// A DUE message: waiting, a head, `next_attempt_at <= now`, its channel (when it has one)
// `active`, and either `queued`, or `sending` with `lease_until <= now` (its holder's
// lease ended: a crash or an unknown outcome).
//
// EVENTS (WebhookRepository's outbox, same atomic step): `message.status_updated` with the
// message as stored afterwards when a message enters `sent`, `delivered`, `read` or
// `failed`, and on a requeue that counts an attempt; never on a claim, a throttle or a
// pair-rate wait. `channel.paused` / `channel.resumed` with the channel when its status
// changes.

/**
 * Which traffic a message is: `single` (a send or an auto-reply) goes before `broadcast`
 * (a broadcast's recipients) on the same channel.
 *
 * @category storage
 */
export type SendClass = "single" | "broadcast"

/**
 * The dispatch state of a message created in the outbox by `ChatRepository.appendMessage`
 * (its `outbox` field; the message itself comes `queued`, `attempts` 0,
 * `next_attempt_at` null, `broadcast_uuid` as it should end):
 * - `to`, `class`, `expires_at` (ISO 8601) as stored;
 * - `claim`: the inline first attempt's try to claim the message in the same atomic step.
 *   `null`: never claimed here (auto-replies, broadcast recipients): stored `queued` with
 *   `next_attempt_at` = now. `bypass: true` (the recording transport): always claimed,
 *   lanes and pacing ignored. Otherwise claimed only when the message would be due at
 *   once — its channel (if any) `active`, no other waiting message in its lane, and a
 *   pacing slot at `now` itself (`max(pacing_tat, now) == now`, which it reserves).
 *   Claimed: stored `sending` under `lease` until `leaseUntil` (epoch ms), with
 *   `next_attempt_at` = `leaseUntil + settleMs`. Not claimed: stored `queued` with
 *   `next_attempt_at` = the channel's `max(pacing_tat, now)` (now when it has no channel).
 * - `notBefore` (ISO 8601, optional): a scheduled send's `send_at`, later than now. Then
 *   `claim` must be `null`, and the message is stored `scheduled` with `next_attempt_at` and
 *   `scheduled_at` = `notBefore`, outside its lane (rules at the top of this module).
 *
 * @category storage
 */
export interface OutboxPlacement {
  readonly to: string
  readonly class: SendClass
  readonly expires_at: string
  readonly notBefore?: string | undefined
  readonly claim: {
    readonly lease: string
    readonly leaseUntil: number
    readonly settleMs: number
    readonly bypass: boolean
  } | null
}

/**
 * Input of {@link OutboxRepository.claim}: `now` and `leaseUntil` in epoch ms; `lease`, a
 * new token that every claimed message is leased under; `settleMs`, the settle time (ms);
 * `limit`, the most messages to claim (≥ 1); `horizonMs`, how far ahead of `now` pacing
 * slots may be reserved (ms).
 *
 * @category storage
 */
export interface OutboxClaimRequest {
  readonly now: number
  readonly lease: string
  readonly leaseUntil: number
  readonly settleMs: number
  readonly limit: number
  readonly horizonMs: number
}

/**
 * A message a dispatcher holds: the record as stored after the claim (status `sending`),
 * its organization, the lease token, its dispatch state, `not_before` (epoch ms: its
 * reserved pacing slot, before which it must not be handed to Meta; the claim's `now` for
 * a message without a channel or already expired), `reclaimed`: it was `sending`
 * when claimed (its previous holder's outcome is unknown), and `scheduled_at`: the
 * `send_at` it was scheduled for (ISO 8601), `null` for a message never scheduled.
 *
 * @category storage
 */
export interface ClaimedMessage {
  readonly organization_id: OrganizationId
  readonly message: Message
  readonly lease: string
  readonly to: string
  readonly class: SendClass
  readonly expires_at: string
  readonly pair_rate_waits: number
  readonly not_before: number
  readonly reclaimed: boolean
  readonly scheduled_at: string | null
}

/**
 * The {@link OutboxOutcome} of a send Meta accepted: `provider_message_id` (its `wamid`, or
 * `null` when it gave none) and `attempts` (1: the attempt counted).
 *
 * @category storage
 */
export type SentOutcome = { readonly _tag: "Sent"; readonly provider_message_id: string | null; readonly attempts: number }

/**
 * What became of a claimed message, written by {@link OutboxRepository.record} (`now` is
 * the write's ISO 8601 time; `attempts` is added to the message's count, 0 or more):
 * - `Sent`: Meta accepted it: status `sent`, `provider_message_id` recorded (when not
 *   `null`; its pending provider reports applied as `updateMessageStatus` does), `failure`
 *   cleared; the channel's `cooldown_ms` back to 0.
 * - `Failed`: status `failed` with `failure`.
 * - `Requeued`: status `queued`, due at `next_attempt_at` (ISO), `failure` recorded (the
 *   last error, or `null`). `throttled`: the channel also cools down — `cooldown_ms` =
 *   {@link nextCooldownMs}(its `cooldown_ms`) and `pacing_tat` = max(`pacing_tat`, now +
 *   that). `pairRate`: `pair_rate_waits` + 1 (any other outcome resets it to 0).
 * - `Unknown`: the outcome of the attempt is unknown: status stays `sending`, the lease
 *   ends (`lease_until` = now), due again at `next_attempt_at` (ISO).
 * - `Paused`: an account error: status `queued` (due now), and the channel, when `active`,
 *   becomes `paused` with `paused_reason` and `paused_at` = now (event `channel.paused`).
 * Every outcome but `Unknown` clears the lease; `Sent` and `Failed` also clear
 * `next_attempt_at`.
 *
 * @category storage
 */
export type OutboxOutcome =
  | SentOutcome
  | { readonly _tag: "Failed"; readonly failure: MessageFailure; readonly attempts: number }
  | {
    readonly _tag: "Requeued"
    readonly next_attempt_at: string
    readonly failure: MessageFailure | null
    readonly attempts: number
    readonly throttled: boolean
    readonly pairRate: boolean
  }
  | { readonly _tag: "Unknown"; readonly next_attempt_at: string; readonly attempts: number }
  | { readonly _tag: "Paused"; readonly reason: MessageFailure }

/**
 * Input of {@link OutboxRepository.settle}: a status notification that names an outbox
 * message by its uuid (Meta's `biz_opaque_callback_data`), found no message by its
 * provider id.
 *
 * @category storage
 */
export interface OutboxSettlement {
  readonly provider_message_id: string
  readonly status: Exclude<MessageStatus, "scheduled" | "queued" | "sending">
  readonly failure?: MessageFailure | undefined
  readonly now: string
}

/**
 * Outcome of {@link OutboxRepository.retry} and {@link OutboxRepository.cancel}:
 * `NotFound` (no outbound message of the organization with that uuid), `Refused` (its
 * status does not allow it; the message as it stands), or `Done` (the message afterwards).
 *
 * @category storage
 */
export type OutboxMoveOutcome =
  | { readonly _tag: "NotFound" }
  | { readonly _tag: "Refused"; readonly message: Message }
  | { readonly _tag: "Done"; readonly message: Message }

/**
 * A channel's queue figures (`GET /channels/{uuid}`): its outbox messages `queued` (the
 * `scheduled` ones counted among them) and `sending`, and the `created_at` of its oldest
 * `queued` or `scheduled` one (`null` when none).
 *
 * @category storage
 */
export interface ChannelQueueFigures {
  readonly queued: number
  readonly sending: number
  readonly oldest_queued_at: string | null
}

/**
 * One row of {@link OutboxRepository.summary}: a channel (of any organization) with its
 * waiting outbox messages (`queued`, `scheduled` counted as `queued`, `sending`) and its `status`; `channel_id` and
 * `channel_status` are `null` for the messages that have no channel. What the metrics
 * `switchboard_outbox_messages` and `switchboard_channel_paused` read at each scrape
 * (docs/deployment.md "Metrics").
 *
 * @category storage
 */
export interface OutboxSummaryRow {
  readonly channel_id: ChannelId | null
  readonly channel_status: ChannelStatus | null
  readonly queued: number
  readonly sending: number
}

/**
 * The send queue's storage (rules at the top of this module; docs/messaging.md "The send
 * queue"). Messages enter it through `ChatRepository.appendMessage` with `outbox`. Every
 * method fails only with {@link StorageError}.
 *
 * @category storage
 */
export interface OutboxRepository {
  /**
   * Claims up to `limit` DUE messages of any organization in one atomic step, so of
   * several processes claiming together each message goes to one: per channel, heads in
   * order `single` before `broadcast`, then `next_attempt_at`, then `sequence`, each
   * reserving a pacing slot (a channel whose slot lies beyond `now + horizonMs` gives
   * none; an already expired message — `expires_at <= now` — is claimed without a slot);
   * channels take turns (round-robin, messages without a channel as one more channel), so
   * one busy channel never fills the claim while another has due heads. Each claimed
   * message becomes `sending` under `lease` until `leaseUntil`, with `next_attempt_at` =
   * `leaseUntil + settleMs`.
   */
  readonly claim: (request: OutboxClaimRequest) => Effect.Effect<ReadonlyArray<ClaimedMessage>, StorageError>
  /**
   * Writes `outcome` for the message `id` only while `lease` holds it (the token matches,
   * the status is `sending` and the lease was not ended by an `Unknown`): then the message
   * as stored afterwards; else nothing is written and `None`. It may carry `promise`, the
   * same write as a promise (`WithPromiseForm`): the send queue's dispatcher records a sent
   * message through it, without a fiber (docs/extending.md "A store of your own").
   */
  readonly record: WithPromiseForm<[id: MessageId, lease: string, outcome: OutboxOutcome, now: string], Option.Option<Message>, StorageError>
  /**
   * Optional: a `Sent` outcome recorded as a promise that answers only the message's status
   * afterwards (docs/extending.md "A store of your own"): the same write, pending provider
   * reports, cool-down and events as `record(id, lease, outcome, now)`, then `sent` (or the
   * status a pending report moved it to), `None` when `lease` no longer holds it; rejects
   * with a {@link StorageError}. A store that reads the whole message back for `record`
   * saves that read here: the send queue's dispatcher records each message it sends through
   * it when the store has it (else through `record.promise`).
   */
  readonly recordSent?: (id: MessageId, lease: string, outcome: SentOutcome, now: string) => Promise<Option.Option<MessageStatus>>
  /**
   * Settles the organization's outbox message `id` from a status notification that named
   * it: when it has no provider id, `provider_message_id` is recorded (and its pending
   * provider reports applied); its status moves to `status` when it is one of
   * `MESSAGE_STATUS_PREDECESSORS[status]` (so `queued` or `sending` too), with `failure`
   * for `failed`, clearing the lease, `next_attempt_at` and `pair_rate_waits`. A message
   * that already has another provider id keeps it. `None` when the organization has no
   * outbox message `id`; else the message afterwards and whether anything changed.
   */
  readonly settle: (
    organizationId: OrganizationId,
    id: MessageId,
    settlement: OutboxSettlement
  ) => Effect.Effect<Option.Option<{ readonly message: Message; readonly changed: boolean }>, StorageError>
  /**
   * `POST /messages/{uuid}/retry`: a `failed` outbox message becomes `queued`, due at
   * `now`, `attempts` 0, `failure` null, `expires_at` = `expiresAt` (a new lease of life);
   * any other status is `Refused`.
   */
  readonly retry: (
    organizationId: OrganizationId,
    id: MessageId,
    now: string,
    expiresAt: string
  ) => Effect.Effect<OutboxMoveOutcome, StorageError>
  /**
   * `POST /messages/{uuid}/cancel`: a `queued` or `scheduled` outbox message becomes
   * `failed` with `failure` (code `cancelled`); any other status is `Refused`.
   */
  readonly cancel: (
    organizationId: OrganizationId,
    id: MessageId,
    failure: MessageFailure,
    now: string
  ) => Effect.Effect<OutboxMoveOutcome, StorageError>
  /**
   * The earliest time (epoch ms) at which a waiting head of an active channel (or without
   * one) is due — the later of its `next_attempt_at` and, for a `sending` one, its
   * `lease_until` — or of a `scheduled` message's `next_attempt_at` (any channel), or
   * `null` when nothing waits. Pacing is not considered.
   */
  readonly nextDueAt: () => Effect.Effect<number | null, StorageError>
  /** The channel's queue figures; zeros and `null` when it has no outbox message. */
  readonly channelQueue: (
    organizationId: OrganizationId,
    channelId: ChannelId
  ) => Effect.Effect<ChannelQueueFigures, StorageError>
  /**
   * The send queue across every organization, for operators (docs/deployment.md
   * "Metrics"): one row per channel that has waiting or scheduled messages or is `paused` (a paused
   * channel without waiting messages has zeros), plus one row with `channel_id` `null`
   * when messages without a channel wait. In no particular order; an empty queue with no
   * paused channel is `[]`. Reads every organization, like `claim`, and only counts.
   */
  readonly summary: () => Effect.Effect<ReadonlyArray<OutboxSummaryRow>, StorageError>
  /**
   * Resumes a `paused` channel: `active`, `paused_reason` and `paused_at` null, its
   * waiting messages due now, event `channel.resumed` — all in one atomic step. The
   * channel afterwards and whether it changed; `None` when the organization has no such
   * channel. (A `PUT /channels/{uuid}` with a new token resumes through this too.)
   */
  readonly resumeChannel: (
    organizationId: OrganizationId,
    channelId: ChannelId,
    now: string
  ) => Effect.Effect<Option.Option<{ readonly channel: Channel; readonly changed: boolean }>, StorageError>
}

/**
 * `{ recordSent }` of `outbox` with `after(status, ...args)` run once each resolved, or `{}`
 * when the store has none. A wrapper of the store spreads it after `...outbox`, so that it
 * never passes the store's own `recordSent` through unwrapped (the metered store, the
 * waking one).
 *
 * @category storage
 */
export const tappedRecordSent = (
  outbox: OutboxRepository,
  after: (status: Option.Option<MessageStatus>, ...args: Parameters<NonNullable<OutboxRepository["recordSent"]>>) => void
): Pick<OutboxRepository, "recordSent"> => {
  const recordSent = tappedPromise(outbox.recordSent, after)
  return recordSent === undefined ? {} : { recordSent }
}

import type { Effect, Option } from "effect"
import type { Broadcast, BroadcastAudience, BroadcastId, BroadcastRecipient } from "../model/broadcasts.js"
import type { ChannelId } from "../model/channels.js"
import type { ChatId } from "../model/chats.js"
import type { Contact, ContactId } from "../model/contacts.js"
import type { MessageFailure, MessageStatus, TransportKind } from "../model/messages.js"
import type { OrganizationId } from "../model/organizations.js"
import type { TemplateSendObject } from "../model/templates.js"
import type { NewMessage } from "./ChatRepository.js"
import type { StorageError } from "./errors.js"

// Broadcasts (docs/broadcasts.md). A broadcast is a record of its own; its RECIPIENTS are
// messages (`broadcast_uuid` set) appended to each contact's chat like a single send, at
// most one per (broadcast, contact). `counts` are read from its recipients' current
// statuses, never stored.
//
// THE START of a `sending` broadcast is written by a leased starter: `claimStart` takes
// one broadcast under a lease (`start_lease`, `start_lease_until`), and `writeRecipients`
// appends its recipients in batches, each batch one atomic step that also stores the
// start's CURSOR (the uuid of the last contact it reached, in contact-uuid order) and, on
// the last batch, marks the start FINISHED. A start whose holder died is claimed again
// once its lease ends and resumes after the cursor; the one-per-contact rule skips what
// a batch had written.
//
// EVENTS (WebhookRepository's outbox, same atomic step): `broadcast.completed` with the
// broadcast as stored afterwards, when it becomes `completed`.

/**
 * Input of {@link BroadcastRepository.create}: the broadcast as core checked it. `status`
 * is `scheduled` (a future `send_at`) or `sending` (then `started_at` = `now`).
 *
 * @category storage
 */
export interface NewBroadcast {
  readonly uuid: BroadcastId
  readonly name: string
  readonly status: "scheduled" | "sending"
  readonly template: TemplateSendObject
  readonly audience: BroadcastAudience
  readonly channel_uuid: ChannelId | null
  readonly transport: TransportKind
  readonly send_at: string | null
  readonly now: string
}

/**
 * A broadcast whose start a starter holds ({@link BroadcastRepository.claimStart}): its
 * organization, the record, the lease token and the start's cursor (`null`: no batch
 * written yet).
 *
 * @category storage
 */
export interface BroadcastStart {
  readonly organization_id: OrganizationId
  readonly broadcast: Broadcast
  readonly lease: string
  readonly cursor: ContactId | null
}

/**
 * One recipient written by {@link BroadcastRepository.writeRecipients}: the contact, the
 * uuid its chat gets when it has none (created `open`), and its message — `outbound`,
 * `broadcast_uuid`, `channel_uuid` and `transport` (the broadcast's) set, status `queued` (it enters the send queue as
 * class `broadcast`, due at once, sent to `to` and expiring at `expires_at`) or `failed`
 * with its `failure` (a skipped recipient: written without dispatch state).
 *
 * @category storage
 */
export interface BroadcastRecipientWrite {
  readonly contact_uuid: ContactId
  readonly chat_uuid: ChatId
  readonly message: NewMessage
  readonly to: string
  readonly expires_at: string
}

/**
 * Input of {@link BroadcastRepository.writeRecipients}: the batch (contacts in ascending
 * uuid order), the new `cursor`, whether this batch `finished` the start, the lease's
 * new end (`leaseUntil`, epoch ms) and `now` (ISO 8601).
 *
 * @category storage
 */
export interface BroadcastBatch {
  readonly recipients: ReadonlyArray<BroadcastRecipientWrite>
  readonly cursor: ContactId | null
  readonly finished: boolean
  readonly leaseUntil: number
  readonly now: string
}

/**
 * Outcome of {@link BroadcastRepository.cancel}: `NotFound`, `Refused` (it already ended;
 * the broadcast as it stands) or `Done` (the broadcast afterwards).
 *
 * @category storage
 */
export type BroadcastCancelOutcome =
  | { readonly _tag: "NotFound" }
  | { readonly _tag: "Refused"; readonly broadcast: Broadcast }
  | { readonly _tag: "Done"; readonly broadcast: Broadcast }

/**
 * Broadcasts of one organization, and the starter's work across organizations (rules at
 * the top of this module; docs/broadcasts.md). Every method fails only with
 * {@link StorageError}.
 *
 * @category storage
 */
export interface BroadcastRepository {
  /**
   * Inserts a broadcast (counts all 0) and answers it as stored. When the organization
   * has a broadcast with that uuid already (a create under an Idempotency-Key whose claim
   * was taken over, the other attempt writing first: docs/messaging.md "Idempotency-Key"),
   * answers that one as stored, writing nothing.
   */
  readonly create: (organizationId: OrganizationId, broadcast: NewBroadcast) => Effect.Effect<Broadcast, StorageError>
  /** The broadcast with this uuid, with its counts. */
  readonly findById: (organizationId: OrganizationId, id: BroadcastId) => Effect.Effect<Option.Option<Broadcast>, StorageError>
  /**
   * Up to `limit` broadcasts newest first (`created_at desc, uuid desc`), strictly after
   * the position `after` in that order (`null`: from the newest).
   */
  readonly list: (
    organizationId: OrganizationId,
    request: { readonly limit: number; readonly after: { readonly created_at: string; readonly uuid: BroadcastId } | null }
  ) => Effect.Effect<ReadonlyArray<Broadcast>, StorageError>
  /**
   * Up to `limit` recipients of the broadcast in ascending `contact_uuid` order, after
   * `after` (a contact uuid, or `null`), only those whose message has `status` when it is
   * not `null`. A broadcast the organization does not have has none.
   */
  readonly recipients: (
    organizationId: OrganizationId,
    id: BroadcastId,
    request: { readonly status: MessageStatus | null; readonly limit: number; readonly after: ContactId | null }
  ) => Effect.Effect<ReadonlyArray<BroadcastRecipient>, StorageError>
  /** How many distinct contacts of the organization the audience holds now. */
  readonly countAudience: (organizationId: OrganizationId, audience: BroadcastAudience) => Effect.Effect<number, StorageError>
  /**
   * Up to `limit` contacts of the audience (each once) with a uuid greater than `after`
   * (`null`: from the first), in ascending uuid order: how a start reads its audience in
   * batches, never the whole of it at once.
   */
  readonly audiencePage: (
    organizationId: OrganizationId,
    audience: BroadcastAudience,
    after: ContactId | null,
    limit: number
  ) => Effect.Effect<ReadonlyArray<Contact>, StorageError>
  /**
   * Claims one broadcast of any organization whose start is due, in one atomic step: a
   * `scheduled` one whose `send_at <= now` (it becomes `sending`, `started_at` = now), or a
   * `sending` one whose start is not finished and whose start lease is free or ended
   * (`start_lease_until <= now`). It is leased under `lease` until `leaseUntil` (epoch ms).
   * `None` when none is due. `now` is epoch ms.
   */
  readonly claimStart: (request: {
    readonly now: number
    readonly lease: string
    readonly leaseUntil: number
  }) => Effect.Effect<Option.Option<BroadcastStart>, StorageError>
  /**
   * The earliest time (epoch ms) at which {@link BroadcastRepository.claimStart} finds a
   * start due, across organizations, by its two branches: the `send_at` of a `scheduled`
   * broadcast, and the `start_lease_until` of a `sending` one whose start is not finished
   * (0 when its start lease is free: due at once). `null` when neither has any: no start
   * is due until a broadcast is created. How long the starter may sleep.
   */
  readonly nextStartDueAt: () => Effect.Effect<number | null, StorageError>
  /**
   * Writes one batch of a start in one atomic step, only while the broadcast is `sending`
   * and `lease` holds its start (else nothing is written and `false`): each recipient
   * whose contact still exists and has no message of this broadcast yet is appended to the
   * contact's chat (created as `chat_uuid` when missing; the chat's `last_message_at` and
   * `updated_at` as for any appended message, its status and unread count unchanged); the
   * cursor, the lease's end and, when `finished`, the start's end are stored. `true` when
   * written.
   */
  readonly writeRecipients: (
    organizationId: OrganizationId,
    id: BroadcastId,
    lease: string,
    batch: BroadcastBatch
  ) => Effect.Effect<boolean, StorageError>
  /**
   * Cancels a `scheduled` or `sending` broadcast in one atomic step: `cancelled`,
   * `completed_at` = now, its start lease ended (a starter's next batch is refused), and
   * each of its `queued` recipients `failed` with `failure` (a `message.status_updated`
   * event each). Recipients already `sending` finish their attempt.
   */
  readonly cancel: (
    organizationId: OrganizationId,
    id: BroadcastId,
    failure: MessageFailure,
    now: string
  ) => Effect.Effect<BroadcastCancelOutcome, StorageError>
  /** The organization's `sending` broadcasts, oldest first (`created_at asc, uuid asc`). */
  readonly sending: (organizationId: OrganizationId) => Effect.Effect<ReadonlyArray<Broadcast>, StorageError>
  /**
   * Stops a `scheduled` or `sending` broadcast as `cancel` does, but as `stopped` with
   * `stopped_reason` = `reason`, its `queued` recipients failing with `reason`. The
   * broadcast afterwards; `None` when the organization has no such broadcast or it had
   * already ended (nothing written).
   */
  readonly stop: (
    organizationId: OrganizationId,
    id: BroadcastId,
    reason: MessageFailure,
    now: string
  ) => Effect.Effect<Option.Option<Broadcast>, StorageError>
  /**
   * Completes, across organizations, every `sending` broadcast whose start finished and
   * none of whose recipients is `queued` or `sending`: `completed`, `completed_at` = now,
   * event `broadcast.completed`, each in one atomic step. The broadcasts completed.
   */
  readonly completeFinished: (now: string) => Effect.Effect<ReadonlyArray<Broadcast>, StorageError>
}

import { Schema } from "effect"
import type { ChannelId } from "./channels.js"
import type { ContactId } from "./contacts.js"
import type { GroupId } from "./groups.js"
import type { LabelId } from "./labels.js"
import type { MessageFailure, MessageId, MessageStatus, TransportKind } from "./messages.js"
import type { TemplateSendObject } from "./templates.js"

/**
 * Identifier of a broadcast.
 *
 * @category models
 */
export const BroadcastId = Schema.UUID.pipe(Schema.brand("BroadcastId"))
/** @category models */
export type BroadcastId = typeof BroadcastId.Type

/**
 * The states of a broadcast (docs/broadcasts.md "States"): `scheduled` (its `send_at` is
 * in the future) → `sending` (its recipients are being written and sent) → `completed`
 * (none of its recipients is `queued` or `sending` any more); or `cancelled` (by
 * `POST /broadcasts/{uuid}/cancel`), or `stopped` (Meta paused or disabled its template,
 * or paused its channel for spam: `stopped_reason` says which).
 *
 * @category models
 */
export const BroadcastStatus = Schema.Literal("scheduled", "sending", "completed", "cancelled", "stopped")
/** @category models */
export type BroadcastStatus = typeof BroadcastStatus.Type

/**
 * Who a broadcast goes to: the union of the contacts of `group_uuids`, the contacts
 * carrying a label of `label_uuids` and the contacts of `contact_uuids`, each contact once
 * (docs/broadcasts.md "The audience").
 *
 * @category models
 */
export interface BroadcastAudience {
  readonly group_uuids: ReadonlyArray<GroupId>
  readonly label_uuids: ReadonlyArray<LabelId>
  readonly contact_uuids: ReadonlyArray<ContactId>
}

/**
 * A broadcast's recipients by the current status of their messages, a partition:
 * `total` = `queued` + `sending` + `sent` + `delivered` + `read` + `failed`
 * (docs/broadcasts.md "Counts"). Skipped recipients count in `total` and `failed`.
 *
 * @category models
 */
export interface BroadcastCounts {
  readonly total: number
  readonly queued: number
  readonly sending: number
  readonly sent: number
  readonly delivered: number
  readonly read: number
  readonly failed: number
}

/**
 * A broadcast record (`GET /broadcasts/{uuid}`, docs/broadcasts.md "Records"): `template`
 * is the send object as given (its parameters may hold `{{contact.…}}` placeholders);
 * `channel_uuid` the channel its messages go through (`null`: the organization had none,
 * so they go through the handler's transport without one); `transport` the kind of
 * transport its messages are handed to, settled at its creation from the channel and
 * stored on each recipient's message too (`recording`: no channel, nothing leaves the
 * server; `whatsapp`; `custom`; docs/broadcasts.md "Records"); `send_at` when it was asked to
 * start (`null`: at once); `started_at` when its sending started; `completed_at` when it
 * ended (`completed`, `cancelled` or `stopped`); `stopped_reason` Meta's refusal that
 * stopped it, else `null`. Timestamps are ISO 8601 UTC strings.
 *
 * @category models
 */
export interface Broadcast {
  readonly uuid: BroadcastId
  readonly name: string
  readonly status: BroadcastStatus
  readonly template: TemplateSendObject
  readonly audience: BroadcastAudience
  readonly channel_uuid: ChannelId | null
  readonly transport: TransportKind
  readonly send_at: string | null
  readonly created_at: string
  readonly started_at: string | null
  readonly completed_at: string | null
  readonly stopped_reason: MessageFailure | null
  readonly counts: BroadcastCounts
}

/**
 * One recipient of a broadcast (`GET /broadcasts/{uuid}/recipients`): the contact, the
 * phone the message went to (E.164, as it was when the recipient was written), its
 * message and that message's current status and failure.
 *
 * @category models
 */
export interface BroadcastRecipient {
  readonly contact_uuid: ContactId
  readonly phone: string
  readonly message_uuid: MessageId
  readonly status: MessageStatus
  readonly failure: MessageFailure | null
}

/**
 * Input of `POST /broadcasts` as the API takes it (docs/broadcasts.md "Sending one");
 * values are checked at run time, so they are typed loosely.
 *
 * @category models
 */
export interface BroadcastInput {
  readonly name?: unknown
  readonly template?: unknown
  readonly audience?: {
    readonly group_uuids?: unknown
    readonly label_uuids?: unknown
    readonly contact_uuids?: unknown
  }
  readonly channel_uuid?: unknown
  readonly send_at?: unknown
}

/**
 * The most contacts one broadcast may reach (docs/broadcasts.md "The audience"): a larger
 * audience is a 400 `audience_too_large`.
 *
 * @category models
 */
export const MAX_BROADCAST_AUDIENCE = 100_000

/**
 * The most recipients a broadcast's start writes in one atomic step
 * (docs/broadcasts.md "How a broadcast starts"): 100, so one batch holds SQLite's write
 * lock and the event loop for ~10–30 ms, not the ~50–140 ms of 500.
 *
 * @category models
 */
export const BROADCAST_START_BATCH = 100

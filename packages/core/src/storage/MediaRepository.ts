import type { Effect, Option } from "effect"
import type { MediaFailure, MediaFailureCode, MediaRecord, MediaSource, MediaStatus, MediaType } from "../model/media.js"
import type { Message } from "../model/messages.js"
import type { OrganizationId } from "../model/organizations.js"
import type { Page } from "../model/common.js"
import type { StorageError } from "./errors.js"

// The media repository (docs/media.md): the records of the files Switchboard keeps, the
// durable fetch jobs of inbound files, and the ids a provider gave our uploads per channel.
//
// EVENTS (WebhookRepository's outbox, same atomic step): every change of an inbound media's
// status (`recordFetch` settling it, `markDeleted`, `expireBefore`) rewrites the `media`
// object of its message (`media_uuid`, `status`, `failure`), bumps the message's
// `updated_at` and writes `message.media_updated` with the message record.
//
// CONTACTS: `ContactRepository.delete` marks the contact's media `deleted` in its own step
// (their blobs pending removal, their fetch jobs ended; no event: the messages go with the
// contact).
//
// TIMES are ISO 8601 UTC strings in `Date#toISOString` form, like every stored instant.

/**
 * The durable fetch job written with an inbound media (docs/media.md "Inbound"): the
 * provider's media id, the `channel_uuid` it came through, the SHA-256 the webhook declared
 * (base64 or hex, or `null`), when the provider's id lapses (`expires_at`: past it the fetch
 * ends `failed` `expired`) and when the first attempt is due (`next_fetch_at`).
 *
 * @category storage
 */
export interface NewMediaFetch {
  readonly channel_uuid: string
  readonly provider_media_id: string
  readonly declared_sha256: string | null
  readonly expires_at: string
  readonly next_fetch_at: string
}

/**
 * A media record as a store writes it: the {@link MediaRecord} fields, the `contact_uuid`
 * it belongs to (inbound; no foreign key: docs/media.md "Lifetime"), the `blob_key` its
 * bytes are stored under once `stored` (else `null`), and `fetch`, the job that brings an
 * inbound file (`null` for uploads and for inbound media that arrived `failed`).
 *
 * @category storage
 */
export interface NewMedia {
  readonly uuid: string
  readonly type: MediaType
  readonly mime_type: string
  readonly size: number | null
  readonly sha256: string | null
  readonly filename: string | null
  readonly status: MediaStatus
  readonly failure: MediaFailure | null
  readonly source: MediaSource
  readonly message_uuid: string | null
  readonly contact_uuid: string | null
  readonly blob_key: string | null
  readonly created_at: string
  readonly stored_at: string | null
  readonly fetch: NewMediaFetch | null
}

/**
 * An inbound media as `ChatAppendRequest.media` gives it: the store fills `message_uuid`
 * and `contact_uuid` from the message it appends.
 *
 * @category storage
 */
export type NewInboundMedia = Omit<NewMedia, "message_uuid" | "contact_uuid">

/**
 * A media record with what only the server reads: its organization, `contact_uuid`,
 * `channel_uuid` (inbound), and `blob_key` (set while its bytes are kept, and for a
 * `deleted` one whose blob is still to be removed: `blob_pending_removal`).
 *
 * @category storage
 */
export interface StoredMedia extends MediaRecord {
  readonly organization_id: OrganizationId
  readonly contact_uuid: string | null
  readonly channel_uuid: string | null
  readonly blob_key: string | null
  readonly blob_pending_removal: boolean
}

/**
 * A fetch job {@link MediaRepository.claimFetches} leased: the media, its job's fields, how
 * many attempts failed for a passing reason (`attempts`) and for a size or SHA-256 mismatch
 * (`integrity_failures`), and the `lease` token that alone may record its outcome.
 *
 * @category storage
 */
export interface MediaFetchJob {
  readonly media: StoredMedia
  readonly channel_uuid: string
  readonly provider_media_id: string
  readonly declared_sha256: string | null
  readonly expires_at: string
  readonly attempts: number
  readonly integrity_failures: number
  readonly lease: string
}

/**
 * How a fetch attempt is recorded by {@link MediaRepository.recordFetch}:
 * - `Stored`: the bytes are under `blob_key` (`size` bytes, `sha256` hex, the provider's
 *   `mime_type` when it gave one); when `bytesLimit` (the organization's
 *   `media_bytes_limit`, `null`: none) would be passed by them, the media ends `failed`
 *   `plan_limit` instead and the outcome says so (the caller removes the blob);
 * - `Retry`: a passing failure: the counts after it and when to try again;
 * - `Failed`: the media ends `failed` with `code`; the job ends.
 *
 * @category storage
 */
export type MediaFetchRecord =
  | {
    readonly _tag: "Stored"
    readonly blob_key: string
    readonly size: number
    readonly sha256: string
    readonly mime_type: string | null
    readonly bytesLimit: number | null
  }
  | { readonly _tag: "Retry"; readonly attempts: number; readonly integrity_failures: number; readonly next_fetch_at: string }
  | { readonly _tag: "Failed"; readonly code: MediaFailureCode }

/**
 * Outcome of {@link MediaRepository.recordFetch}: `Lost` (the lease had ended or the media
 * is no longer `pending`: nothing written), `Retrying`, or `Settled` with the media and the
 * message as written (`message` is `null` when the message is gone).
 *
 * @category storage
 */
export type MediaFetchRecorded =
  | { readonly _tag: "Lost" }
  | { readonly _tag: "Retrying" }
  | { readonly _tag: "Settled"; readonly media: StoredMedia; readonly message: Message | null }

/**
 * Outcome of {@link MediaRepository.insert}: `Inserted`; `Duplicate` with the record the
 * organization already has under that uuid (nothing written); or `LimitReached` when the
 * new media's `size` would take the organization's stored bytes past `bytesLimit`
 * (nothing written): `used` bytes stored now and the `limit`.
 *
 * @category storage
 */
export type MediaInsertOutcome =
  | { readonly _tag: "Inserted"; readonly media: StoredMedia }
  | { readonly _tag: "Duplicate"; readonly media: StoredMedia }
  | { readonly _tag: "LimitReached"; readonly used: number; readonly limit: number }

/**
 * Filters of {@link MediaRepository.list}: absent means any.
 *
 * @category storage
 */
export interface MediaListFilter {
  readonly source?: MediaSource
  readonly status?: MediaStatus
}

/**
 * One page of {@link MediaRepository.list}: newest first (`created_at desc, uuid desc`),
 * `per_page` records after the record `after` (a uuid of this organization's media; absent:
 * from the newest).
 *
 * @category storage
 */
export interface MediaPageRequest {
  readonly per_page: number
  readonly after?: string
}

/**
 * The media repository (docs/media.md). Every method is one atomic step.
 *
 * @category storage
 */
export interface MediaRepository {
  /**
   * Writes an uploaded media record (`NewMedia.fetch` null), refusing it with
   * `LimitReached` when its `size` plus the organization's stored bytes would pass
   * `bytesLimit` (`null`: no limit). When the organization has a record with that uuid
   * already (an upload under an Idempotency-Key whose claim was taken over, the other
   * attempt writing first: docs/messaging.md "Idempotency-Key") → `Duplicate` with that
   * record, checked before the limit, nothing written. Inbound media are written by
   * `ChatRepository.appendMessage` with their message (`ChatAppendRequest.media`).
   */
  readonly insert: (
    organizationId: OrganizationId,
    media: NewMedia,
    bytesLimit: number | null
  ) => Effect.Effect<MediaInsertOutcome, StorageError>
  /** The organization's media record with that uuid. */
  readonly get: (organizationId: OrganizationId, uuid: string) => Effect.Effect<Option.Option<StoredMedia>, StorageError>
  /** A media record by uuid alone, whatever its organization: for a signed link (docs/media.md "Links"). */
  readonly getForLink: (uuid: string) => Effect.Effect<Option.Option<StoredMedia>, StorageError>
  /** One page of the organization's media, per {@link MediaPageRequest}, and whether more follow. */
  readonly list: (
    organizationId: OrganizationId,
    filter: MediaListFilter,
    page: MediaPageRequest
  ) => Effect.Effect<{ readonly items: ReadonlyArray<StoredMedia>; readonly hasMore: boolean }, StorageError>
  /** The organization's stored bytes: the sum of the `size` of its `stored` media. */
  readonly bytesUsed: (organizationId: OrganizationId) => Effect.Effect<number, StorageError>
  /**
   * Marks the media `deleted` at `now` (its blob kept for removal: `blob_pending_removal`),
   * ending its fetch job; its message's `media` rewritten with the event (inbound). Answers
   * the media as it was before (its `blob_key` is the blob to remove), or `None` when the
   * organization has no such media. Deleting a `deleted` media changes nothing.
   */
  readonly markDeleted: (
    organizationId: OrganizationId,
    uuid: string,
    now: string
  ) => Effect.Effect<Option.Option<StoredMedia>, StorageError>
  /**
   * Marks `deleted` every `stored` media created before `before`, all
   * organizations, at most `limit` of them (oldest first), as {@link markDeleted} does, events
   * included (docs/media.md "Retention"). Answers how many changed.
   */
  readonly expireBefore: (before: string, now: string, limit: number) => Effect.Effect<number, StorageError>
  /** Up to `limit` blobs of `deleted` media still to be removed: `{uuid, blob_key}`. */
  readonly blobsToRemove: (limit: number) => Effect.Effect<ReadonlyArray<{ readonly uuid: string; readonly blob_key: string }>, StorageError>
  /** Forgets the blob of a `deleted` media once it was removed (`blob_key` null, `blob_pending_removal` false). */
  readonly blobRemoved: (uuid: string) => Effect.Effect<void, StorageError>
  /**
   * Leases up to `limit` fetch jobs due at `now` (`next_fetch_at` ≤ `now`, not leased or
   * with a lease ended before `now`), earliest due first, each until `leaseUntil` under a
   * new lease token, atomically: of several processes claiming at once, each job goes to one.
   */
  readonly claimFetches: (now: string, leaseUntil: string, limit: number) => Effect.Effect<ReadonlyArray<MediaFetchJob>, StorageError>
  /** Extends a job's lease to `leaseUntil` while `lease` still holds it: `true`, else `false`. */
  readonly renewFetch: (uuid: string, lease: string, leaseUntil: string) => Effect.Effect<boolean, StorageError>
  /**
   * Records a fetch attempt per {@link MediaFetchRecord}, only while `lease` still holds the
   * job and the media is `pending` (else `Lost`, nothing written); a settled media's message
   * is rewritten with the event (EVENTS above), and a `Stored` one counts in the
   * organization's stored bytes.
   */
  readonly recordFetch: (
    uuid: string,
    lease: string,
    record: MediaFetchRecord,
    now: string
  ) => Effect.Effect<MediaFetchRecorded, StorageError>
  /** The earliest `next_fetch_at` of a waiting fetch job (a leased one: its lease's end), or `None`. */
  readonly nextFetchDueAt: () => Effect.Effect<Option.Option<string>, StorageError>
  /** Moves every waiting fetch job of the channel to `until` at the earliest (its failed look-ups' budget is spent). */
  readonly postponeChannelFetches: (channelUuid: string, until: string) => Effect.Effect<number, StorageError>
  /** Keeps the provider's id of the media's upload through the channel, until `expires_at` (replacing an earlier one). */
  readonly rememberUpload: (
    mediaUuid: string,
    channelUuid: string,
    providerMediaId: string,
    expiresAt: string
  ) => Effect.Effect<void, StorageError>
  /** The provider's id of the media's upload through the channel while it has not expired at `now`, or `None`. */
  readonly uploadFor: (mediaUuid: string, channelUuid: string, now: string) => Effect.Effect<Option.Option<string>, StorageError>
}

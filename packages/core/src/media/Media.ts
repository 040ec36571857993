import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto"
import { Clock, Context, Effect, Layer, Option } from "effect"
import { decryptionKeysOf, SecretKey } from "../common/SecretKey.js"
import { IssueCollector } from "../internal/validation.js"
import { SecretKeyMissing } from "../model/channelErrors.js"
import { InvalidInput, PlanLimitExceeded, RecordNotFound } from "../model/commonErrors.js"
import {
  MEDIA_TYPES,
  mediaBlobKey,
  mediaMimeType,
  type MediaRecord,
  type MediaSource,
  type MediaStatus,
  type MediaType,
  mimeEssence,
  temporaryMediaBlobKey
} from "../model/media.js"
import {
  MediaLinkRefused,
  MediaNotReady,
  MediaTooLarge,
  MediaUnavailable,
  RangeNotSatisfiable,
  UnsupportedMediaType
} from "../model/mediaErrors.js"
import type { OrganizationId } from "../model/organizations.js"
import { SecureRandom } from "../random/SecureRandom.js"
import { type BlobContent, type BlobRange, BlobStore, type BlobStoreError } from "../storage/BlobStore.js"
import { StorageError } from "../storage/errors.js"
import { deletedMedia } from "../storage/mediaRecords.js"
import type { StoredMedia } from "../storage/MediaRepository.js"
import { Storage } from "../storage/Storage.js"
import { sniffedTypeMatches } from "./sniff.js"

// The media service (docs/media.md): uploads checked against their bytes, records, the
// bytes served by range, deletion, and signed links that need no API key.

/**
 * An upload as the HTTP edge hands it (docs/media.md "Uploading"): the part's bytes
 * (`source`, read once, never held whole), its declared `mime_type` (the part's
 * `Content-Type`) and `filename`, the optional `type` field, and `declaredBytes` (the
 * request's `Content-Length`, when known: checked against the plan limit before reading).
 *
 * @category media
 */
export interface MediaUploadInput {
  readonly source: AsyncIterable<Uint8Array>
  readonly mime_type: string
  readonly filename: string | null
  readonly type?: unknown
  readonly declaredBytes?: number
}

/**
 * An upload read into a temporary blob and checked, not yet a record
 * ({@link MediaService.stage}): the record is written by `commit`, or the blob removed by
 * `discard` (an Idempotency-Key replay, docs/media.md "Idempotency").
 *
 * @category media
 */
export interface StagedMedia {
  readonly uuid: string
  readonly temporaryKey: string
  readonly type: MediaType
  readonly mime_type: string
  readonly size: number
  readonly sha256: string
  readonly filename: string | null
}

/**
 * A signed link to a media's bytes (docs/media.md "Links"): the `path` and query to append
 * to the server's base URL (`/media/{uuid}/content?expires=…&signature=…`) and when it
 * stops working (`expires_at`, ISO 8601).
 *
 * @category media
 */
export interface MediaLink {
  readonly path: string
  readonly expires_at: string
}

/**
 * Filters and cursor of {@link MediaService.list}: `source`, `status`, `per_page` (1–100),
 * `cursor` (the last uuid of the previous page).
 *
 * @category media
 */
export interface MediaListInput {
  readonly source?: MediaSource
  readonly status?: MediaStatus
  readonly per_page: number
  readonly cursor?: string
}

/** Bytes of a file `file-type` reads to tell its type (and `text/plain` its UTF-8). */
const SNIFF_BYTES = 4_100

/** The longest link life, in seconds (1 hour); the default is 5 minutes. @category media */
export const MAX_MEDIA_LINK_SECONDS = 3_600
/** @category media */
export const DEFAULT_MEDIA_LINK_SECONDS = 300

/**
 * The media service (docs/media.md). Every method is scoped to an organization, except
 * {@link MediaServiceShape.openLink}, which a signed link authorizes.
 *
 * @category media
 */
export interface MediaServiceShape {
  /**
   * Reads an upload into a temporary blob while counting and hashing it, and checks it:
   * a MIME type media may have (else `UnsupportedMediaType`), the `type` field matching it
   * (`InvalidInput`), its size within the type's limit (`MediaTooLarge`, the read stopped
   * there), the bytes being what the MIME type says (`file-type`; `text/plain` must be
   * UTF-8 in its first 4 KB: `UnsupportedMediaType`), and `declaredBytes` within the
   * plan's `media_bytes_limit` (`PlanLimitExceeded`). Nothing is left after a refusal.
   */
  readonly stage: (
    organizationId: OrganizationId,
    input: MediaUploadInput
  ) => Effect.Effect<StagedMedia, InvalidInput | UnsupportedMediaType | MediaTooLarge | PlanLimitExceeded | StorageError>
  /**
   * Moves a staged upload into place and writes its record `stored`, the plan limit checked
   * in that step (`PlanLimitExceeded`, the blob removed). When a record with the staged
   * uuid is stored already (the same upload under an Idempotency-Key taken over, written
   * first by the other attempt), answers that record.
   */
  readonly commit: (organizationId: OrganizationId, staged: StagedMedia) => Effect.Effect<MediaRecord, PlanLimitExceeded | StorageError>
  /** Removes a staged upload's blob. */
  readonly discard: (staged: StagedMedia) => Effect.Effect<void>
  /** The organization's media record; `RecordNotFound` for another organization's or an unknown uuid. */
  readonly get: (organizationId: OrganizationId, uuid: string) => Effect.Effect<MediaRecord, RecordNotFound | StorageError>
  /** One page of the organization's media, newest first, and the cursor of the next (`null` at the end). */
  readonly list: (
    organizationId: OrganizationId,
    input: MediaListInput
  ) => Effect.Effect<{ readonly items: ReadonlyArray<MediaRecord>; readonly next_cursor: string | null }, StorageError>
  /**
   * The bytes of a `stored` media, all or `range` (checked against its size:
   * `RangeNotSatisfiable`), with its record; `MediaNotReady` while `pending`,
   * `MediaUnavailable` when `failed` or `deleted`.
   */
  readonly content: (
    organizationId: OrganizationId,
    uuid: string,
    range?: BlobRange
  ) => Effect.Effect<
    { readonly media: MediaRecord; readonly content: BlobContent },
    RecordNotFound | MediaNotReady | MediaUnavailable | RangeNotSatisfiable | StorageError
  >
  /** Marks the media `deleted` and removes its blob (the record stays); answers the record. */
  readonly remove: (organizationId: OrganizationId, uuid: string) => Effect.Effect<MediaRecord, RecordNotFound | StorageError>
  /** A signed link to the media's bytes, for `expiresInSeconds` (1–3600, default 300); `SecretKeyMissing` without a secret key. */
  readonly createLink: (
    organizationId: OrganizationId,
    uuid: string,
    expiresInSeconds?: unknown
  ) => Effect.Effect<MediaLink, InvalidInput | RecordNotFound | SecretKeyMissing | StorageError>
  /**
   * Checks a signed link (`expires` in seconds since the epoch, `signature`) and answers
   * the organization of its media: `MediaLinkRefused` `invalid_signature` or
   * `link_expired`, `RecordNotFound` when the media is gone. Constant-time comparison.
   */
  readonly openLink: (
    uuid: string,
    expires: string,
    signature: string
  ) => Effect.Effect<OrganizationId, MediaLinkRefused | RecordNotFound | SecretKeyMissing | StorageError>
}

/**
 * Tag of the {@link MediaServiceShape}. `Media.layer` needs `Storage`, `BlobStore` and
 * `SecureRandom`.
 *
 * @category media
 */
export class Media extends Context.Tag("@switchboard/core/Media")<Media, MediaServiceShape>() {
  static readonly layer: Layer.Layer<Media, never, Storage | BlobStore | SecureRandom> = Layer.effect(
    Media,
    Effect.gen(function*() {
      const storage = yield* Storage
      const blobs = yield* BlobStore
      const random = yield* SecureRandom
      return makeMedia(storage, blobs, random)
    })
  )
}

/** A blob store's failure as the storage failure the API answers 500 for. */
const blobFailure = (error: BlobStoreError) => new StorageError({ operation: error.operation, cause: error.cause })

/** The record the API answers of a stored media. */
export const mediaRecordOf = (
  { blob_key: _blob, blob_pending_removal: _pending, channel_uuid: _channel, contact_uuid: _contact, organization_id: _organization, ...record }: StoredMedia
): MediaRecord => record

/** The key links are signed with: HKDF-SHA256 of the secret key. */
const linkKeyOf = (secretKey: Uint8Array): Buffer => Buffer.from(hkdfSync("sha256", secretKey, "", "switchboard media links v1", 32))

const signatureOf = (key: Buffer, uuid: string, expires: string): string =>
  createHmac("sha256", key).update(`${uuid}.${expires}`).digest("base64url")

const makeMedia = (
  storage: Context.Tag.Service<Storage>,
  blobs: Context.Tag.Service<BlobStore>,
  random: Context.Tag.Service<SecureRandom>
): MediaServiceShape => {
  const found = (organizationId: OrganizationId, uuid: string) =>
    Effect.flatMap(
      typeof uuid === "string" && /^[0-9a-f-]{36}$/i.test(uuid) ? storage.media.get(organizationId, uuid.toLowerCase()) : Effect.succeed(Option.none()),
      Option.match({
        onNone: () => Effect.fail(new RecordNotFound({ missing: [{ resource: "media", uuid: String(uuid) }] })),
        onSome: Effect.succeed
      })
    )

  const bytesLimitOf = (organizationId: OrganizationId) =>
    Effect.map(storage.organizations.findById(organizationId), (organization) =>
      Option.match(organization, { onNone: () => null, onSome: (found) => found.plan.media_bytes_limit ?? null }))

  const limitExceeded = (limit: number, usage: number, requested: number) =>
    new PlanLimitExceeded({ plan_limit: "media_bytes_limit", limit, usage, requested })

  const stage: MediaServiceShape["stage"] = (organizationId, input) =>
    Effect.gen(function*() {
      const mimeType = mimeEssence(input.mime_type)
      const kind = mediaMimeType(mimeType)
      if (kind === undefined) {
        return yield* new UnsupportedMediaType({ reason: `Media may not have the type ${mimeType === "" ? "(none)" : mimeType}` })
      }
      if (input.type !== undefined && input.type !== null && input.type !== "" && input.type !== kind.type) {
        const collector = new IssueCollector()
        collector.add(
          "invalid_format",
          "type",
          (MEDIA_TYPES as ReadonlyArray<unknown>).includes(input.type) ? `type ${String(input.type)} does not match the file's MIME type ${mimeType} (${kind.type})` : `type must be one of ${MEDIA_TYPES.join(", ")}`
        )
        return yield* new InvalidInput({ issues: collector.issues })
      }
      const limit = yield* bytesLimitOf(organizationId)
      if (limit !== null && input.declaredBytes !== undefined) {
        const used = yield* storage.media.bytesUsed(organizationId)
        // The request's length holds the part and the multipart framing: a little more than the file.
        if (used + Math.max(0, input.declaredBytes - 1_024) > limit) return yield* limitExceeded(limit, used, input.declaredBytes)
      }
      const uuid = yield* random.uuid()
      const temporaryKey = temporaryMediaBlobKey(uuid, "upload")
      const head: Array<Uint8Array> = []
      let headBytes = 0
      async function* counted(): AsyncGenerator<Uint8Array> {
        for await (const chunk of input.source) {
          if (headBytes < SNIFF_BYTES) {
            head.push(chunk.subarray(0, SNIFF_BYTES - headBytes))
            headBytes += Math.min(chunk.length, SNIFF_BYTES - headBytes)
          }
          yield chunk
        }
      }
      const written = yield* blobs.put(temporaryKey, counted(), { contentType: mimeType, maxBytes: kind.maxBytes }).pipe(
        Effect.catchTags({
          BlobTooLarge: () => Effect.fail(new MediaTooLarge({ mime_type: mimeType, maxBytes: kind.maxBytes })),
          BlobStoreError: (error) => Effect.fail(blobFailure(error))
        })
      )
      const refusal = written.size === 0
        ? "The file is empty"
        : yield* Effect.promise(() => sniffedTypeMatches(mimeType, Buffer.concat(head)))
      if (refusal !== null) {
        yield* Effect.ignore(blobs.delete(temporaryKey))
        return yield* new UnsupportedMediaType({ reason: refusal })
      }
      const staged: StagedMedia = {
        uuid,
        temporaryKey,
        type: kind.type,
        mime_type: mimeType,
        size: written.size,
        sha256: written.sha256,
        filename: input.filename === null || input.filename.trim() === "" ? null : input.filename.trim().slice(0, 255)
      }
      return staged
    })

  const commit: MediaServiceShape["commit"] = (organizationId, staged) =>
    Effect.gen(function*() {
      const key = mediaBlobKey(organizationId, staged.uuid)
      yield* blobs.move(staged.temporaryKey, key).pipe(
        Effect.catchAll((error) => Effect.fail(new StorageError({ operation: "blobs.move", cause: error })))
      )
      const now = new Date(yield* Clock.currentTimeMillis).toISOString()
      const limit = yield* bytesLimitOf(organizationId)
      const outcome = yield* storage.media.insert(organizationId, {
        uuid: staged.uuid,
        type: staged.type,
        mime_type: staged.mime_type,
        size: staged.size,
        sha256: staged.sha256,
        filename: staged.filename,
        status: "stored",
        failure: null,
        source: "upload",
        message_uuid: null,
        contact_uuid: null,
        blob_key: key,
        created_at: now,
        stored_at: now,
        fetch: null
      }, limit)
      if (outcome._tag === "LimitReached") {
        yield* Effect.ignore(blobs.delete(key))
        return yield* limitExceeded(outcome.limit, outcome.used, staged.size)
      }
      // Duplicate: another attempt of this upload (same Idempotency-Key, so the same bytes,
      // just moved to the same key) stored the record first; it is the answer.
      return mediaRecordOf(outcome.media)
    })

  const discard: MediaServiceShape["discard"] = (staged) => Effect.ignore(blobs.delete(staged.temporaryKey))

  const get: MediaServiceShape["get"] = (organizationId, uuid) => Effect.map(found(organizationId, uuid), mediaRecordOf)

  const list: MediaServiceShape["list"] = (organizationId, input) =>
    Effect.map(
      storage.media.list(
        organizationId,
        { ...(input.source === undefined ? {} : { source: input.source }), ...(input.status === undefined ? {} : { status: input.status }) },
        { per_page: input.per_page, ...(input.cursor === undefined ? {} : { after: input.cursor }) }
      ),
      ({ hasMore, items }) => ({
        items: items.map(mediaRecordOf),
        next_cursor: hasMore && items.length > 0 ? items[items.length - 1]!.uuid : null
      })
    )

  const content: MediaServiceShape["content"] = (organizationId, uuid, range) =>
    Effect.gen(function*() {
      const media = yield* found(organizationId, uuid)
      if (media.status === "pending") return yield* new MediaNotReady({ uuid: media.uuid })
      if (media.status !== "stored" || media.blob_key === null) {
        return yield* new MediaUnavailable({ uuid: media.uuid, status: media.status === "failed" ? "failed" : "deleted" })
      }
      const size = media.size ?? 0
      if (range !== undefined && (range.start > range.end || range.start >= size)) return yield* new RangeNotSatisfiable({ size })
      const bounded = range === undefined ? undefined : { start: range.start, end: Math.min(range.end, size - 1) }
      const bytes = yield* blobs.get(media.blob_key, bounded === undefined ? {} : { range: bounded }).pipe(
        Effect.catchAll((error) => Effect.fail(new StorageError({ operation: "blobs.get", cause: error })))
      )
      return { media: mediaRecordOf(media), content: bytes }
    })

  const remove: MediaServiceShape["remove"] = (organizationId, uuid) =>
    Effect.gen(function*() {
      const now = new Date(yield* Clock.currentTimeMillis).toISOString()
      const before = yield* storage.media.markDeleted(organizationId, uuid.toLowerCase(), now)
      if (Option.isNone(before)) return yield* new RecordNotFound({ missing: [{ resource: "media", uuid }] })
      // The record as the store wrote it (deleting a deleted media changes nothing).
      const after = before.value.status === "deleted" ? before.value : deletedMedia(before.value)
      if (after.blob_key !== null) {
        // Removed now when it can be; else the housekeeping removes it (the record says so).
        const removed = yield* Effect.either(blobs.delete(after.blob_key))
        if (removed._tag === "Right") yield* storage.media.blobRemoved(after.uuid)
      }
      return mediaRecordOf(after)
    })

  const linkKey = Effect.flatMap(SecretKey, ({ key }) => key === undefined ? Effect.fail(new SecretKeyMissing()) : Effect.succeed(linkKeyOf(key)))

  const createLink: MediaServiceShape["createLink"] = (organizationId, uuid, expiresInSeconds) =>
    Effect.gen(function*() {
      const collector = new IssueCollector()
      const seconds = expiresInSeconds === undefined || expiresInSeconds === null ? DEFAULT_MEDIA_LINK_SECONDS : expiresInSeconds
      if (typeof seconds !== "number" || !Number.isInteger(seconds) || seconds < 1 || seconds > MAX_MEDIA_LINK_SECONDS) {
        collector.add("invalid_format", "expires_in", `expires_in must be a whole number of seconds from 1 to ${MAX_MEDIA_LINK_SECONDS}`)
        return yield* new InvalidInput({ issues: collector.issues })
      }
      const media = yield* found(organizationId, uuid)
      const key = yield* linkKey
      const expires = String(Math.floor((yield* Clock.currentTimeMillis) / 1000) + seconds)
      return {
        path: `/media/${media.uuid}/content?expires=${expires}&signature=${signatureOf(key, media.uuid, expires)}`,
        expires_at: new Date(Number(expires) * 1000).toISOString()
      }
    })

  const openLink: MediaServiceShape["openLink"] = (uuid, expires, signature) =>
    Effect.gen(function*() {
      yield* linkKey
      // Signed under any configured secret key (the first signs new links): a link made
      // before the keys were rotated stays good until it expires.
      const linkKeys = decryptionKeysOf(yield* SecretKey).map(linkKeyOf)
      const given = Buffer.from(signature)
      const signedByAny = linkKeys.some((each) => {
        const expected = Buffer.from(signatureOf(each, uuid.toLowerCase(), expires))
        return given.length === expected.length && timingSafeEqual(given, expected)
      })
      if (!/^\d{1,12}$/.test(expires) || !signedByAny) {
        return yield* new MediaLinkRefused({ code: "invalid_signature" })
      }
      if (Number(expires) * 1000 <= (yield* Clock.currentTimeMillis)) return yield* new MediaLinkRefused({ code: "link_expired" })
      const media = yield* storage.media.getForLink(uuid.toLowerCase())
      if (Option.isNone(media)) return yield* new RecordNotFound({ missing: [{ resource: "media", uuid }] })
      return media.value.organization_id
    })

  return { stage, commit, discard, get, list, content, remove, createLink, openLink }
}

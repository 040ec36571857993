import { mediaFailure } from "../model/media.js"
import type { Message } from "../model/messages.js"
import type { OrganizationId } from "../model/organizations.js"
import type { MediaFetchRecord, NewMedia, StoredMedia } from "./MediaRepository.js"

// The rules every store applies when a media's status changes (MediaRepository.ts), one
// piece of code for the memory store, the SQL stores and MongoDB.

/**
 * The media as a fetch attempt settles it (`Stored` or `Failed`, core's
 * `MediaFetchRecord`): `failed` with the code, `failed` `plan_limit` when the stored bytes
 * would pass `bytesLimit` (`used`: the organization's stored bytes now; its size, digest and
 * blob stay unset), else `stored` with the bytes' size, digest, blob and the provider's MIME
 * type when it gave one, at `now`.
 *
 * @category storage
 */
export const settledByFetch = (
  media: StoredMedia,
  record: Exclude<MediaFetchRecord, { readonly _tag: "Retry" }>,
  now: string,
  used: number
): StoredMedia => {
  if (record._tag === "Failed") return { ...media, status: "failed", failure: mediaFailure(record.code) }
  if (record.bytesLimit !== null && used + record.size > record.bytesLimit) {
    return { ...media, status: "failed", failure: mediaFailure("plan_limit") }
  }
  return {
    ...media,
    status: "stored",
    failure: null,
    blob_key: record.blob_key,
    size: record.size,
    sha256: record.sha256,
    mime_type: record.mime_type ?? media.mime_type,
    stored_at: now
  }
}

/**
 * The media marked `deleted`: its blob, when it has one, pending removal.
 *
 * @category storage
 */
export const deletedMedia = (media: StoredMedia): StoredMedia => ({
  ...media,
  status: "deleted",
  failure: null,
  blob_pending_removal: media.blob_key !== null
})

/**
 * The message of an inbound media after the media's status changed: its `media` with the
 * record's `media_uuid`, `status` and `failure`, `updated_at` = `now`.
 *
 * @category storage
 */
export const messageWithMedia = (message: Message, media: StoredMedia, now: string): Message => ({
  ...message,
  media: { ...message.media!, media_uuid: media.uuid, status: media.status, failure: media.failure },
  updated_at: now
})


/**
 * A new media as the organization's stored record: its fields, its fetch job's
 * `channel_uuid` (`null` without a job), no blob pending removal.
 *
 * @category storage
 */
export const newStoredMedia = (organizationId: OrganizationId, media: NewMedia): StoredMedia => ({
  organization_id: organizationId,
  uuid: media.uuid,
  type: media.type,
  mime_type: media.mime_type,
  size: media.size,
  sha256: media.sha256,
  filename: media.filename,
  status: media.status,
  failure: media.failure,
  source: media.source,
  message_uuid: media.message_uuid,
  contact_uuid: media.contact_uuid,
  channel_uuid: media.fetch?.channel_uuid ?? null,
  blob_key: media.blob_key,
  blob_pending_removal: false,
  created_at: media.created_at,
  stored_at: media.stored_at
})

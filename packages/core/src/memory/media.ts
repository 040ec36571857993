import { randomUUID } from "node:crypto"
import { Effect, Option } from "effect"
import type { Message, MessageId } from "../model/messages.js"
import type { OrganizationId } from "../model/organizations.js"
import type { MediaFetchJob, MediaRepository, NewInboundMedia, NewMedia, StoredMedia } from "../storage/MediaRepository.js"
import { deletedMedia, messageWithMedia, settledByFetch, newStoredMedia } from "../storage/mediaRecords.js"
import type { MemoryState } from "./state.js"
import { withoutOrganization } from "./messages.js"
import { recordWebhookEvent } from "./webhooks.js"

// The media repository of the memory store (MediaRepository.ts): synchronous, so each
// method is atomic.

/** A fetch job as the memory store keeps it beside its media. */
interface FetchRow {
  readonly channel_uuid: string
  readonly provider_media_id: string
  readonly declared_sha256: string | null
  readonly expires_at: string
  readonly next_fetch_at: string
  readonly attempts: number
  readonly integrity_failures: number
  readonly lease: string | null
  readonly lease_until: string | null
}

/** What the memory store holds for media, beside the {@link MemoryState}. */
interface MediaState {
  readonly media: Map<string, StoredMedia>
  /** Media uuid → its fetch job, while it has one. */
  readonly fetches: Map<string, FetchRow>
  /** `media channel` → the provider's id of its upload and when that lapses. */
  readonly uploads: Map<string, { readonly id: string; readonly expires_at: string }>
}

const mediaStates = new WeakMap<MemoryState, MediaState>()

const mediaStateOf = (state: MemoryState): MediaState => {
  let media = mediaStates.get(state)
  if (media === undefined) {
    media = { media: new Map(), fetches: new Map(), uploads: new Map() }
    mediaStates.set(state, media)
  }
  return media
}

const write = (state: MemoryState, organizationId: OrganizationId, media: NewMedia): StoredMedia => {
  const stored = newStoredMedia(organizationId, media)
  const { fetches, media: rows } = mediaStateOf(state)
  rows.set(media.uuid, stored)
  if (media.fetch !== null) {
    fetches.set(media.uuid, { ...media.fetch, attempts: 0, integrity_failures: 0, lease: null, lease_until: null })
  }
  return stored
}

/**
 * Writes the media of an inbound message inside `ChatRepository.appendMessage`'s
 * synchronous body (`ChatAppendRequest.media`), with the message's uuid and contact.
 */
export const insertInboundMedia = (
  state: MemoryState,
  organizationId: OrganizationId,
  media: NewInboundMedia,
  messageUuid: string,
  contactUuid: string
): void => {
  write(state, organizationId, { ...media, message_uuid: messageUuid, contact_uuid: contactUuid })
}

/**
 * Marks every media of a deleted contact `deleted` (blobs pending removal, fetch jobs
 * ended, no event), inside `ContactRepository.delete`'s synchronous body.
 */
export const markContactMediaDeleted = (state: MemoryState, organizationId: OrganizationId, contactUuid: string): void => {
  const now = new Date().toISOString()
  for (const media of [...mediaStateOf(state).media.values()]) {
    if (media.organization_id === organizationId && media.contact_uuid === contactUuid && media.status !== "deleted") {
      deleted(state, media, now, false)
    }
  }
}

const bytesUsedOf = (state: MemoryState, organizationId: OrganizationId): number => {
  let used = 0
  for (const media of mediaStateOf(state).media.values()) {
    if (media.organization_id === organizationId && media.status === "stored") used += media.size ?? 0
  }
  return used
}

/**
 * Writes a media's new state (`written`, by the rules of `mediaRecords.ts`), ends its fetch
 * job and, for an inbound one whose message is still there, rewrites the message's `media`
 * with the event.
 */
const settle = (
  state: MemoryState,
  written: StoredMedia,
  now: string,
  event: boolean
): { readonly media: StoredMedia; readonly message: Message | null } => {
  mediaStateOf(state).media.set(written.uuid, written)
  mediaStateOf(state).fetches.delete(written.uuid)
  const row = written.message_uuid === null ? undefined : state.messages.get(written.message_uuid as MessageId)
  if (row === undefined || row.organization_id !== written.organization_id || row.media === null) return { media: written, message: null }
  const message = { ...row, ...messageWithMedia(withoutOrganization(row), written, now) }
  state.messages.set(row.uuid, message)
  if (event) recordWebhookEvent(state, written.organization_id, "message.media_updated", now, () => withoutOrganization(message))
  return { media: written, message: withoutOrganization(message) }
}

const deleted = (state: MemoryState, media: StoredMedia, now: string, event: boolean): void => {
  settle(state, deletedMedia(media), now, event)
}

const due = (fetch: FetchRow, now: string): boolean =>
  fetch.next_fetch_at <= now && (fetch.lease_until === null || fetch.lease_until < now)

/** The memory store's {@link MediaRepository}. */
export const mediaRepository = (state: MemoryState): MediaRepository => {
  const owned = (organizationId: OrganizationId, uuid: string): StoredMedia | undefined => {
    const media = mediaStateOf(state).media.get(uuid)
    return media?.organization_id === organizationId ? media : undefined
  }
  return {
    insert: (organizationId, media, bytesLimit) =>
      Effect.sync(() => {
        // A held uuid (an Idempotency-Key's) whose other writer stored first: that record.
        const stored = owned(organizationId, media.uuid)
        if (stored !== undefined) return { _tag: "Duplicate", media: stored } as const
        if (bytesLimit !== null && media.size !== null) {
          const used = bytesUsedOf(state, organizationId)
          if (used + media.size > bytesLimit) return { _tag: "LimitReached", used, limit: bytesLimit } as const
        }
        return { _tag: "Inserted", media: write(state, organizationId, media) } as const
      }),
    get: (organizationId, uuid) => Effect.sync(() => Option.fromNullable(owned(organizationId, uuid))),
    getForLink: (uuid) => Effect.sync(() => Option.fromNullable(mediaStateOf(state).media.get(uuid))),
    list: (organizationId, filter, page) =>
      Effect.sync(() => {
        const after = page.after === undefined ? undefined : owned(organizationId, page.after)
        const rows = [...mediaStateOf(state).media.values()]
          .filter((media) =>
            media.organization_id === organizationId &&
            (filter.source === undefined || media.source === filter.source) &&
            (filter.status === undefined || media.status === filter.status) &&
            (after === undefined || newerFirst(media, after) > 0)
          )
          .sort(newerFirst)
        return { items: rows.slice(0, page.per_page), hasMore: rows.length > page.per_page }
      }),
    bytesUsed: (organizationId) => Effect.sync(() => bytesUsedOf(state, organizationId)),
    markDeleted: (organizationId, uuid, now) =>
      Effect.sync(() => {
        const media = owned(organizationId, uuid)
        if (media === undefined) return Option.none()
        if (media.status !== "deleted") deleted(state, media, now, true)
        return Option.some(media)
      }),
    expireBefore: (before, now, limit) =>
      Effect.sync(() => {
        const old = [...mediaStateOf(state).media.values()]
          .filter((media) => media.status === "stored" && media.created_at < before)
          .sort((a, b) => -newerFirst(a, b))
          .slice(0, limit)
        for (const media of old) deleted(state, media, now, true)
        return old.length
      }),
    blobsToRemove: (limit) =>
      Effect.sync(() =>
        [...mediaStateOf(state).media.values()]
          .filter((media) => media.blob_pending_removal && media.blob_key !== null)
          .slice(0, limit)
          .map((media) => ({ uuid: media.uuid, blob_key: media.blob_key! }))
      ),
    blobRemoved: (uuid) =>
      Effect.sync(() => {
        const media = mediaStateOf(state).media.get(uuid)
        if (media !== undefined && media.status === "deleted") {
          mediaStateOf(state).media.set(uuid, { ...media, blob_key: null, blob_pending_removal: false })
        }
      }),
    claimFetches: (now, leaseUntil, limit) =>
      Effect.sync(() => {
        const { fetches, media } = mediaStateOf(state)
        const claimed: Array<MediaFetchJob> = []
        const dueJobs = [...fetches.entries()]
          .filter(([, fetch]) => due(fetch, now))
          .sort(([a, x], [b, y]) => (x.next_fetch_at === y.next_fetch_at ? (a < b ? -1 : 1) : x.next_fetch_at < y.next_fetch_at ? -1 : 1))
          .slice(0, limit)
        for (const [uuid, fetch] of dueJobs) {
          const lease = randomUUID()
          fetches.set(uuid, { ...fetch, lease, lease_until: leaseUntil })
          claimed.push({
            media: media.get(uuid)!,
            channel_uuid: fetch.channel_uuid,
            provider_media_id: fetch.provider_media_id,
            declared_sha256: fetch.declared_sha256,
            expires_at: fetch.expires_at,
            attempts: fetch.attempts,
            integrity_failures: fetch.integrity_failures,
            lease
          })
        }
        return claimed
      }),
    renewFetch: (uuid, lease, leaseUntil) =>
      Effect.sync(() => {
        const { fetches } = mediaStateOf(state)
        const fetch = fetches.get(uuid)
        if (fetch === undefined || fetch.lease !== lease) return false
        fetches.set(uuid, { ...fetch, lease_until: leaseUntil })
        return true
      }),
    recordFetch: (uuid, lease, record, now) =>
      Effect.sync(() => {
        const { fetches, media: rows } = mediaStateOf(state)
        const fetch = fetches.get(uuid)
        const media = rows.get(uuid)
        if (fetch === undefined || fetch.lease !== lease || media === undefined || media.status !== "pending") return { _tag: "Lost" } as const
        if (record._tag === "Retry") {
          fetches.set(uuid, {
            ...fetch,
            attempts: record.attempts,
            integrity_failures: record.integrity_failures,
            next_fetch_at: record.next_fetch_at,
            lease: null,
            lease_until: null
          })
          return { _tag: "Retrying" } as const
        }
        const written = settledByFetch(media, record, now, bytesUsedOf(state, media.organization_id))
        return { _tag: "Settled", ...settle(state, written, now, true) } as const
      }),
    nextFetchDueAt: () =>
      Effect.sync(() => {
        let earliest: string | undefined
        for (const fetch of mediaStateOf(state).fetches.values()) {
          const at = fetch.lease_until !== null && fetch.lease_until > fetch.next_fetch_at ? fetch.lease_until : fetch.next_fetch_at
          if (earliest === undefined || at < earliest) earliest = at
        }
        return Option.fromNullable(earliest)
      }),
    postponeChannelFetches: (channelUuid, until) =>
      Effect.sync(() => {
        const { fetches } = mediaStateOf(state)
        let moved = 0
        for (const [uuid, fetch] of fetches) {
          if (fetch.channel_uuid !== channelUuid || fetch.next_fetch_at >= until) continue
          fetches.set(uuid, { ...fetch, next_fetch_at: until })
          moved++
        }
        return moved
      }),
    rememberUpload: (mediaUuid, channelUuid, providerMediaId, expiresAt) =>
      Effect.sync(() => {
        mediaStateOf(state).uploads.set(`${mediaUuid} ${channelUuid}`, { id: providerMediaId, expires_at: expiresAt })
      }),
    uploadFor: (mediaUuid, channelUuid, now) =>
      Effect.sync(() => {
        const upload = mediaStateOf(state).uploads.get(`${mediaUuid} ${channelUuid}`)
        return upload === undefined || upload.expires_at <= now ? Option.none() : Option.some(upload.id)
      })
  }
}

/** Newest first: `created_at desc, uuid desc` (negative when `a` comes first). */
const newerFirst = (a: StoredMedia, b: StoredMedia): number =>
  a.created_at === b.created_at ? (a.uuid < b.uuid ? 1 : a.uuid > b.uuid ? -1 : 0) : a.created_at < b.created_at ? 1 : -1

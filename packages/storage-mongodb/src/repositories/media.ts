import { randomUUID } from "node:crypto"
import { Option } from "effect"
import {
  mediaFailure,
  type MediaFetchJob,
  type MediaFetchRecorded,
  type MediaInsertOutcome,
  type MediaRepository,
  type MediaStatus,
  type Message,
  type StoredMedia
} from "@switchboard/core"
import type { MediaDocument, MediaMessageUpdate } from "../internal/documents.js"
import { attempt, isDuplicateKey, onDuplicateKey } from "../internal/driver.js"
import {
  byId,
  dueFetchFilter,
  eq,
  FETCH_ENDED,
  FETCH_ORDER,
  mediaPageFilter,
  NEWEST_FIRST,
  owned
} from "../internal/queries.js"
import { messageRecord, newMediaDocument, storedMediaOf } from "../internal/records.js"
import { type Collections, HAS_FETCH_JOB, HAS_MESSAGE_UPDATE, HAS_PENDING_MEDIA } from "../internal/schema.js"
import { storedBytes, type Usage } from "../internal/usage.js"
import { chatExists } from "./statusWrites.js"
import { pendingEvent, RELAY_BATCH, subscribersOf } from "./webhooks.js"

/** How many times a compare-and-set write is retried when another write came first. */
const CAS_ATTEMPTS = 10

/**
 * How far along its life a media status is: `pending`, then `stored` or `failed`, then
 * `deleted`; a media only ever moves forward. A message's `media` is rewritten only to a
 * later status than the one it shows, so of two rewrites racing (a fetch settling, a
 * delete) the later status is the one kept, and a repeated rewrite writes nothing.
 */
const STATUS_RANK: Readonly<Record<MediaStatus, number>> = { pending: 0, stored: 1, failed: 1, deleted: 2 }

const LOST = { _tag: "Lost" } as const

/**
 * Writes the `media` of an inbound media's message (`media_uuid`, `status`, `failure`
 * from the media document as written), its `updated_at` = `at`, and the
 * `message.media_updated` event with the message record in the same update
 * (compare-and-set on the `media` read, retried when another write came first). Writes
 * nothing when the message already shows that status or a later one. Answers the message
 * as it stands, or `null` when it is gone (or its chat is).
 */
const writeMessageMedia = async (collections: Collections, media: MediaDocument, at: string): Promise<Message | null> => {
  if (media.message_uuid === null) return null
  const organizationId = media.organization_id
  let endpoints: ReadonlyArray<string> | undefined
  for (let round = 0; round < CAS_ATTEMPTS; round++) {
    const document = await collections.messages.findOne(owned(organizationId, media.message_uuid))
    if (document === null || document.media === null || !(await chatExists(collections, organizationId, document.chat_uuid))) return null
    const current = messageRecord(document)
    const shown = current.media!
    if (STATUS_RANK[shown.status ?? "pending"] >= STATUS_RANK[media.status]) return current
    const failure = media.failure === null ? null : { code: media.failure.code, title: media.failure.title }
    const next = { ...shown, media_uuid: media._id, status: media.status, failure }
    const message: Message = { ...current, media: next, updated_at: at }
    endpoints ??= (await subscribersOf(collections, organizationId))("message.media_updated")
    const event = endpoints.length === 0 ? {} : { $push: { pending_events: pendingEvent("message.media_updated", at, endpoints, message) } }
    const result = await collections.messages.updateOne(
      { ...owned(organizationId, document._id), media: eq(document.media) },
      { $set: { media: JSON.stringify(next), updated_at: at }, ...event }
    )
    if (result.matchedCount > 0) return message
  }
  throw new Error("media: the message kept changing concurrently")
}

/**
 * The rewrite of a media's message that `update` (its `message_update`) stands for
 * ({@link writeMessageMedia} at `update.at`), then `message_update` cleared, only if it is
 * still this one. Answers the message as {@link writeMessageMedia} does.
 */
const rewriteMessage = async (collections: Collections, media: MediaDocument, update: MediaMessageUpdate): Promise<Message | null> => {
  const message = await writeMessageMedia(collections, media, update.at)
  await collections.media.updateOne({ _id: eq(media._id), "message_update.id": eq(update.id) }, { $set: { message_update: null } })
  return message
}

/**
 * {@link rewriteMessage} right after the media's change was written: the change is kept
 * whatever follows, so a failure here (the message kept changing, the connection broke)
 * does not fail the method that made it; `message_update` stays set for the repair of
 * {@link repairMedia}, and the answer is `null` (no message written).
 */
const rewriteAfterChange = (collections: Collections, media: MediaDocument, update: MediaMessageUpdate): Promise<Message | null> =>
  rewriteMessage(collections, media, update).catch(() => null)

/** A `message_update` for a change at `now` of a media with a message; `null` without one. */
const messageUpdateOf = (media: MediaDocument, now: string): MediaMessageUpdate | null =>
  media.message_uuid === null ? null : { id: randomUUID(), at: now }

/**
 * Marks one media `deleted` (its blob pending removal when it has one, its fetch job
 * ended) by a compare-and-set on its status as read in `before`: `false`, nothing
 * written, when the status changed meanwhile. A `stored` one stamps the usage document
 * first and gives its bytes back after. With `now`, its message is rewritten with the
 * event (`message_update` set in the same write, cleared after); without (a contact's
 * deletion, a message that is gone), no message is touched.
 */
const markOneDeleted = async (collections: Collections, usage: Usage, before: MediaDocument, now: string | null): Promise<boolean> => {
  const stored = before.status === "stored"
  if (stored) await usage.touch(before.organization_id)
  const update = now === null ? null : messageUpdateOf(before, now)
  const after = await collections.media.findOneAndUpdate(
    { _id: eq(before._id), status: eq(before.status) },
    {
      $set: {
        status: "deleted" as const,
        failure: null,
        blob_pending_removal: before.blob_key !== null,
        ...FETCH_ENDED,
        message_update: update
      }
    },
    { returnDocument: "after" }
  )
  if (after === null) return false
  if (stored && before.size !== null && before.size !== 0) await usage.add(before.organization_id, "media_bytes", -before.size)
  if (update !== null) await rewriteAfterChange(collections, after, update)
  return true
}

/** Marks the media `mediaId` `deleted` without touching a message (its message is gone), unless it is already. */
const endOrphanedMedia = async (collections: Collections, usage: Usage, mediaId: string): Promise<void> => {
  for (let round = 0; round < CAS_ATTEMPTS; round++) {
    const document = await collections.media.findOne(byId(mediaId))
    if (document === null || document.status === "deleted") return
    if (await markOneDeleted(collections, usage, document, null)) return
  }
  throw new Error("media: the media kept changing concurrently")
}

/**
 * Moves the media document an inbound message was inserted with (`pending_media`, written
 * in the message's own insert by `chats.appendMessage`, so only a message that is not a
 * duplicate carries one) to `media`, then removes it from the message. Idempotent: a media
 * already moved is left as it is (duplicate key), so `appendMessage` and the repair of
 * {@link repairMedia} may both run it. A `stored` one (never sent by core, which
 * writes inbound media `pending` or `failed`) is counted in `media_bytes` first. When the
 * message is gone by then (its contact was deleted meanwhile), the media is marked
 * `deleted` like a deleted contact's.
 */
export const moveInboundMedia = async (collections: Collections, usage: Usage, messageId: string, document: MediaDocument): Promise<void> => {
  const organizationId = document.organization_id
  const counted = document.status === "stored" && document.size !== null ? document.size : 0
  if (counted !== 0) {
    await usage.ensureMediaBytes(organizationId)
    await usage.add(organizationId, "media_bytes", counted)
  }
  const inserted = await onDuplicateKey(
    async () => {
      await collections.media.insertOne(document)
      return true
    },
    () => false
  )
  if (!inserted && counted !== 0) await usage.add(organizationId, "media_bytes", -counted)
  const result = await collections.messages.updateOne(
    { _id: eq(messageId), "pending_media._id": eq(document._id) },
    { $unset: { pending_media: "" } }
  )
  if (result.matchedCount > 0) return
  if ((await collections.messages.countDocuments(byId(messageId), { limit: 1 })) === 0) await endOrphanedMedia(collections, usage, document._id)
}

/**
 * What `chats.appendMessage` does when the contact of a message it inserted was deleted
 * before the chat's update (it deletes the message): the message's media, if it was moved
 * meanwhile by {@link repairMedia}, is marked `deleted`.
 */
export const endMediaOfDeletedMessage = (collections: Collections, usage: Usage, mediaId: string): Promise<void> =>
  endOrphanedMedia(collections, usage, mediaId)

/**
 * Marks every media of a deleted contact `deleted` inside `contacts.delete`, after its
 * messages were deleted (blobs pending removal, fetch jobs ended, stored bytes given back,
 * no event: the messages went with the contact). Each media by a compare-and-set on its
 * status; one that changed meanwhile (a fetch settling it) is read again.
 */
export const markContactMediaDeleted = async (
  collections: Collections,
  usage: Usage,
  organizationId: string,
  contactId: string
): Promise<void> => {
  for (let round = 0; round < CAS_ATTEMPTS; round++) {
    const live = await collections.media
      .find({ organization_id: eq(organizationId), contact_uuid: eq(contactId), status: { $ne: "deleted" } })
      .toArray()
    let raced = false
    for (const document of live) {
      if (!(await markOneDeleted(collections, usage, document, null))) raced = true
    }
    if (!raced) return
  }
  throw new Error("contacts.delete: the contact's media kept changing concurrently")
}

/**
 * The repair `claimFetches` runs first (as `claimDue` runs the webhook relay), for what a
 * crash between two writes leaves: up to {@link RELAY_BATCH} messages still carrying the
 * media document they were inserted with (moved by {@link moveInboundMedia}), and up to
 * {@link RELAY_BATCH} media whose message rewrite (with its event) was not done
 * (`message_update`; done now, at the change's own `now`). Both are idempotent, so a write
 * in flight elsewhere that it repeats changes nothing twice. A rewrite that fails is left
 * for the next repair rather than failing the claim.
 */
export const repairMedia = async (collections: Collections, usage: Usage): Promise<void> => {
  const carriers = await collections.messages.find(HAS_PENDING_MEDIA, { limit: RELAY_BATCH, projection: { pending_media: 1 } }).toArray()
  for (const carrier of carriers) {
    if (carrier.pending_media !== undefined) await moveInboundMedia(collections, usage, carrier._id, carrier.pending_media)
  }
  const outstanding = await collections.media.find(HAS_MESSAGE_UPDATE, { limit: RELAY_BATCH }).toArray()
  for (const document of outstanding) {
    if (document.message_update !== null) await rewriteAfterChange(collections, document, document.message_update)
  }
}

/** The job of a media document `claimFetches` just leased under `lease`. */
const fetchJobOf = (document: MediaDocument, lease: string): MediaFetchJob => ({
  media: storedMediaOf(document),
  channel_uuid: document.channel_uuid as string,
  provider_media_id: document.provider_media_id as string,
  declared_sha256: document.declared_sha256 ?? null,
  expires_at: document.expires_at as string,
  attempts: document.attempts ?? 0,
  integrity_failures: document.integrity_failures ?? 0,
  lease
})

/**
 * `Storage.media` on MongoDB (docs/media.md), without multi-document transactions
 * (docs/storage.md "Media without transactions"): collection `media`, one document per
 * media record holding its fetch job (`next_fetch_at` a string exactly while it has one),
 * and `media_uploads`, one document per (media, channel) upload id.
 * - STORED BYTES are the usage document's `media_bytes` counter (usage.ts): `insert` of a
 *   `stored` upload and `recordFetch` `Stored` reserve the size with one conditional `$inc`
 *   (`media_bytes + size <= bytesLimit`) before writing, and give it back when the write
 *   does not happen; moving a `stored` media to `deleted` (`markDeleted`, `expireBefore`,
 *   a contact's deletion) stamps the counter, writes, then decrements. `bytesUsed` reads
 *   the counter (the real sum for a document without it).
 * - JOBS are claimed with one `findOneAndUpdate` each (due, not leased or the lease ended;
 *   earliest due first) setting a new lease token: of two processes, one gets it.
 *   `renewFetch` and `recordFetch` are conditional on the token (and `recordFetch` on
 *   `pending`).
 * - A STATUS CHANGE of an inbound media (`recordFetch` settling it, `markDeleted`,
 *   `expireBefore`) is one write of the media document (a compare-and-set on its status,
 *   or on its lease) that also sets `message_update`; then the message's `media` is
 *   rewritten with its `message.media_updated` event in one update of the message
 *   (compare-and-set, forward only: {@link STATUS_RANK}), then `message_update` is
 *   cleared. A crash between leaves `message_update` for {@link repairMedia}, which
 *   `claimFetches` runs first; so does a failure of the rewrite itself, which does not fail
 *   the method (its change is written: `recordFetch` answers `Settled` with `message`
 *   `null`).
 * - An INBOUND media travels in its message's insert (`pending_media`, see
 *   {@link moveInboundMedia}), so a duplicate message writes none.
 *
 * @category repositories
 */
export const mediaRepository = (collections: Collections, usage: Usage): MediaRepository => {
  const { media, mediaUploads } = collections

  /** Settles a pending media held under `lease` with `change` at `now` (its job ended); `null` when the lease or the status no longer hold. */
  const settleFetch = async (
    before: MediaDocument,
    lease: string,
    change: Partial<MediaDocument> & { readonly status: MediaStatus },
    now: string
  ): Promise<MediaFetchRecorded | null> => {
    const update = messageUpdateOf(before, now)
    const after = await media.findOneAndUpdate(
      { _id: eq(before._id), lease: eq(lease), status: eq("pending") },
      { $set: { ...change, ...FETCH_ENDED, message_update: update } },
      { returnDocument: "after" }
    )
    if (after === null) return null
    const message = update === null ? null : await rewriteAfterChange(collections, after, update)
    return { _tag: "Settled", media: storedMediaOf(after), message }
  }

  return {
    insert: (organizationId, record, bytesLimit) =>
      attempt("media.insert", async (): Promise<MediaInsertOutcome> => {
        // A held uuid (an Idempotency-Key's) whose other writer stored first: that record.
        const stored = async () => {
          const found = await media.findOne(owned(organizationId, record.uuid))
          return found === null ? undefined : ({ _tag: "Duplicate", media: storedMediaOf(found) } as const)
        }
        const duplicate = await stored()
        if (duplicate !== undefined) return duplicate
        const document = newMediaDocument(organizationId, record)
        const counted = record.status === "stored" && record.size !== null ? record.size : null
        if (counted !== null) {
          await usage.ensureMediaBytes(organizationId)
          const reservation = await usage.reserve(organizationId, "media_bytes", counted, bytesLimit)
          if (!reservation.reserved) {
            if (bytesLimit === null) throw new Error("media.insert: a reservation without a limit was refused")
            return { _tag: "LimitReached", used: reservation.usage, limit: bytesLimit }
          }
        } else if (bytesLimit !== null && record.size !== null) {
          // Not stored: nothing to count, but a size over the limit is refused all the same.
          const used = await bytesUsedOf(organizationId)
          if (used + record.size > bytesLimit) return { _tag: "LimitReached", used, limit: bytesLimit }
        }
        try {
          await media.insertOne(document)
        } catch (error) {
          if (counted !== null && counted !== 0) await usage.add(organizationId, "media_bytes", -counted)
          if (!isDuplicateKey(error)) throw error
          const winner = await stored()
          if (winner === undefined) throw error
          return winner
        }
        return { _tag: "Inserted", media: storedMediaOf(document) }
      }),
    get: (organizationId, uuid) =>
      attempt("media.get", async () => Option.map(Option.fromNullable(await media.findOne(owned(organizationId, uuid))), storedMediaOf)),
    getForLink: (uuid) => attempt("media.getForLink", async () => Option.map(Option.fromNullable(await media.findOne(byId(uuid))), storedMediaOf)),
    list: (organizationId, filter, page) =>
      attempt("media.list", async () => {
        // A cursor that is not one of the organization's media starts from the newest.
        const after = page.after === undefined ? null : await media.findOne(owned(organizationId, page.after), { projection: { created_at: 1 } })
        const perPage = Math.max(0, page.per_page)
        const documents = await media.find(mediaPageFilter(organizationId, filter, after), { sort: NEWEST_FIRST, limit: perPage + 1 }).toArray()
        return { items: documents.slice(0, perPage).map(storedMediaOf), hasMore: documents.length > perPage }
      }),
    bytesUsed: (organizationId) => attempt("media.bytesUsed", () => bytesUsedOf(organizationId)),
    markDeleted: (organizationId, uuid, now) =>
      attempt("media.markDeleted", async (): Promise<Option.Option<StoredMedia>> => {
        for (let round = 0; round < CAS_ATTEMPTS; round++) {
          const before = await media.findOne(owned(organizationId, uuid))
          if (before === null) return Option.none()
          if (before.status === "deleted" || (await markOneDeleted(collections, usage, before, now))) return Option.some(storedMediaOf(before))
        }
        throw new Error("media.markDeleted: the media kept changing concurrently")
      }),
    expireBefore: (before, now, limit) =>
      attempt("media.expireBefore", async () => {
        if (limit <= 0) return 0
        // Oldest first on media_stored_by_created_at (partial: stored media only).
        const old = await media.find({ status: eq("stored"), created_at: { $lt: String(before) } }, { sort: { created_at: 1, _id: 1 }, limit }).toArray()
        let changed = 0
        for (const document of old) if (await markOneDeleted(collections, usage, document, now)) changed++
        return changed
      }),
    blobsToRemove: (limit) =>
      attempt("media.blobsToRemove", async () => {
        if (limit <= 0) return []
        const documents = await media
          .find({ blob_pending_removal: true, blob_key: { $type: "string" } }, { limit, projection: { blob_key: 1 } })
          .toArray()
        return documents.map((document) => ({ uuid: document._id, blob_key: document.blob_key as string }))
      }),
    blobRemoved: (uuid) =>
      attempt("media.blobRemoved", async () => {
        await media.updateOne({ _id: eq(uuid), status: eq("deleted") }, { $set: { blob_key: null, blob_pending_removal: false } })
      }),
    claimFetches: (now, leaseUntil, limit) =>
      attempt("media.claimFetches", async () => {
        await repairMedia(collections, usage)
        const claimed: Array<MediaFetchJob> = []
        while (claimed.length < limit) {
          const lease = randomUUID()
          const document = await media.findOneAndUpdate(
            dueFetchFilter(now),
            { $set: { lease, lease_until: leaseUntil } },
            { sort: FETCH_ORDER, returnDocument: "after" }
          )
          if (document === null) break
          claimed.push(fetchJobOf(document, lease))
        }
        return claimed
      }),
    renewFetch: (uuid, lease, leaseUntil) =>
      attempt("media.renewFetch", async () => {
        const result = await media.updateOne({ _id: eq(uuid), lease: eq(lease) }, { $set: { lease_until: leaseUntil } })
        return result.matchedCount > 0
      }),
    recordFetch: (uuid, lease, record, now) =>
      attempt("media.recordFetch", async (): Promise<MediaFetchRecorded> => {
        const before = await media.findOne(byId(uuid))
        if (before === null || before.lease !== lease || before.status !== "pending") return LOST
        switch (record._tag) {
          case "Retry": {
            const result = await media.updateOne(
              { _id: eq(uuid), lease: eq(lease), status: eq("pending") },
              {
                $set: {
                  attempts: record.attempts,
                  integrity_failures: record.integrity_failures,
                  next_fetch_at: record.next_fetch_at,
                  lease: null,
                  lease_until: null
                }
              }
            )
            return result.matchedCount > 0 ? { _tag: "Retrying" } : LOST
          }
          case "Failed":
            return (await settleFetch(before, lease, { status: "failed", failure: mediaFailure(record.code) }, now)) ?? LOST
          case "Stored": {
            const organizationId = before.organization_id
            await usage.ensureMediaBytes(organizationId)
            const reservation = await usage.reserve(organizationId, "media_bytes", record.size, record.bytesLimit)
            if (!reservation.reserved) {
              return (await settleFetch(before, lease, { status: "failed", failure: mediaFailure("plan_limit") }, now)) ?? LOST
            }
            const settled = await settleFetch(
              before,
              lease,
              {
                status: "stored",
                failure: null,
                blob_key: record.blob_key,
                size: record.size,
                sha256: record.sha256,
                mime_type: record.mime_type ?? before.mime_type,
                stored_at: now
              },
              now
            )
            if (settled !== null) return settled
            if (record.size !== 0) await usage.add(organizationId, "media_bytes", -record.size) // the lease was lost: nothing stored
            return LOST
          }
        }
      }),
    nextFetchDueAt: () =>
      attempt("media.nextFetchDueAt", async () => {
        // A job is due at its next_fetch_at, a leased one not before its lease ends: read in
        // next_fetch_at order until no later job can be earlier (the leased ones, few, are
        // all that is skipped).
        let earliest: string | undefined
        for await (const job of media.find(HAS_FETCH_JOB, { sort: FETCH_ORDER, projection: { next_fetch_at: 1, lease_until: 1 } })) {
          const due = job.next_fetch_at as string
          if (earliest !== undefined && due >= earliest) break
          const at = job.lease_until !== null && job.lease_until !== undefined && job.lease_until > due ? job.lease_until : due
          if (earliest === undefined || at < earliest) earliest = at
        }
        // A media still riding in its message (not moved yet: a crash between) is due too;
        // the claim's repair moves it.
        const [carrier] = await collections.messages
          .find(
            { ...HAS_PENDING_MEDIA, "pending_media.next_fetch_at": { $type: "string" } },
            { sort: { "pending_media.next_fetch_at": 1 }, limit: 1, projection: { "pending_media.next_fetch_at": 1 } }
          )
          .toArray()
        const waiting = carrier?.pending_media?.next_fetch_at ?? null
        if (waiting !== null && (earliest === undefined || waiting < earliest)) earliest = waiting
        return Option.fromNullable(earliest)
      }),
    postponeChannelFetches: (channelUuid, until) =>
      attempt("media.postponeChannelFetches", async () => {
        const result = await media.updateMany(
          { next_fetch_at: { ...HAS_FETCH_JOB.next_fetch_at, $lt: String(until) }, channel_uuid: eq(channelUuid) },
          { $set: { next_fetch_at: until } }
        )
        return result.modifiedCount
      }),
    rememberUpload: (mediaUuid, channelUuid, providerMediaId, expiresAt) =>
      attempt("media.rememberUpload", async () => {
        const write = () =>
          mediaUploads.updateOne(
            { _id: eq(uploadKey(mediaUuid, channelUuid)) },
            {
              $set: {
                media_uuid: mediaUuid,
                channel_uuid: channelUuid,
                provider_media_id: providerMediaId,
                expires_at: expiresAt,
                expire_at: new Date(expiresAt)
              }
            },
            { upsert: true }
          )
        // Two upserts of one new key at once: the loser's insert meets the winner's; it updates then.
        await onDuplicateKey(write, write)
      }),
    uploadFor: (mediaUuid, channelUuid, now) =>
      attempt("media.uploadFor", async () => {
        const upload = await mediaUploads.findOne({ _id: eq(uploadKey(mediaUuid, channelUuid)), expires_at: { $gt: String(now) } })
        return Option.fromNullable(upload?.provider_media_id)
      })
  }

  /** The organization's stored bytes: the `media_bytes` counter, or the real sum for a usage document without it. */
  async function bytesUsedOf(organizationId: string): Promise<number> {
    const counter = await collections.usage.findOne(byId(organizationId), { projection: { media_bytes: 1 } })
    return typeof counter?.media_bytes === "number" ? counter.media_bytes : storedBytes(collections, organizationId)
  }
}

/** The `_id` of a media's upload through a channel in `media_uploads`. */
const uploadKey = (mediaUuid: string, channelUuid: string): string => `${mediaUuid}:${channelUuid}`

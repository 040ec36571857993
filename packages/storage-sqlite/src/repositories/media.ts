import { randomUUID } from "node:crypto"
import { Option } from "effect"
import {
  deletedMedia,
  type MediaFetchRecorded,
  type MediaInsertOutcome,
  type MediaRepository,
  type Message,
  messageWithMedia,
  type NewInboundMedia,
  type OrganizationId,
  settledByFetch,
  type StoredMedia
} from "@switchboard/core"
import { type MediaJobRow, type MediaRow, mediaStatementsOf } from "@switchboard/storage-sql"
import { decoders, sqliteDialect } from "../dialect.js"
import { attempt, type RepositoryFactory, snapshot, type Statements, transaction } from "../internal/sql.js"
import { decodeMessage, type MessageRow } from "./chatRows.js"
import { recordWebhookEvent } from "./webhookEvents.js"

/**
 * `Storage.media` on SQLite: tables `media` (a record and its fetch job on one row) and
 * `media_uploads` (migration 19, schema/media.ts). Every write is one `BEGIN IMMEDIATE`
 * transaction: `insert` sums the organization's stored bytes and inserts in it, so a
 * `bytesLimit` cannot be passed by two writers at once; `claimFetches` selects the due
 * jobs and leases them in it, so two connections or processes on one file never lease
 * one job twice (a plain read first: nothing due takes no write lock); `recordFetch`,
 * `markDeleted` and `expireBefore` write the media, its message's `media` and the
 * `message.media_updated` event in it (`webhookEvents.ts`). An inbound media is written by
 * `chats.appendMessage` in its transaction ({@link insertInboundMedia}); a deleted contact's
 * media are marked by `contacts.delete` in its ({@link markContactMediaDeleted}).
 *
 * @category repositories
 */
export const mediaRepository: RepositoryFactory<MediaRepository> = (db, statements) => {
  /** The media record `sql` selects with `params`, or `undefined`. */
  const one = (sql: string, ...params: Array<unknown>): StoredMedia | undefined => {
    const row = statements.prepare<MediaRow>(sql).get(...params)
    return row === undefined ? undefined : codec.record(row)
  }
  return {
    insert: (organizationId, media, bytesLimit) =>
      attempt("media.insert", () =>
        transaction(db, (): MediaInsertOutcome => {
          // A held uuid (an Idempotency-Key's) whose other writer stored first: that record.
          const stored = one(SQL.find, organizationId, media.uuid)
          if (stored !== undefined) return { _tag: "Duplicate", media: stored }
          if (bytesLimit !== null && media.size !== null) {
            const used = bytesUsedOf(statements, organizationId)
            if (used + media.size > bytesLimit) return { _tag: "LimitReached", used, limit: bytesLimit }
          }
          return { _tag: "Inserted", media: one(SQL.insert, ...codec.values(organizationId, media))! }
        })
      ),
    get: (organizationId, uuid) => attempt("media.get", () => Option.fromNullable(one(SQL.find, organizationId, uuid))),
    getForLink: (uuid) => attempt("media.getForLink", () => Option.fromNullable(one(SQL.findForLink, uuid))),
    list: (organizationId, filter, page) =>
      attempt("media.list", () =>
        snapshot(db, () => {
          const cursor = page.after === undefined ? undefined : one(SQL.find, organizationId, page.after)
          const query = codec.pageQuery(organizationId, filter, page, cursor)
          return codec.page(statements.prepare<MediaRow>(SQL[query.statement]).all(...query.params), page.per_page)
        })
      ),
    bytesUsed: (organizationId) => attempt("media.bytesUsed", () => bytesUsedOf(statements, organizationId)),
    markDeleted: (organizationId, uuid, now) =>
      attempt("media.markDeleted", () =>
        transaction(db, () => {
          const media = one(SQL.find, organizationId, uuid)
          if (media === undefined) return Option.none()
          if (media.status !== "deleted") settle(statements, deletedMedia(media), now)
          return Option.some(media)
        })
      ),
    expireBefore: (before, now, limit) =>
      attempt("media.expireBefore", () =>
        transaction(db, () => {
          const expired = statements.prepare<MediaRow>(SQL.expiring).all(before, limit).map(codec.record)
          for (const media of expired) settle(statements, deletedMedia(media), now)
          return expired.length
        })
      ),
    blobsToRemove: (limit) =>
      attempt("media.blobsToRemove", () => statements.prepare<{ uuid: string; blob_key: string }>(SQL.blobsToRemove).all(limit)),
    blobRemoved: (uuid) =>
      attempt("media.blobRemoved", () => {
        statements.prepare(SQL.blobRemoved).run(sqliteDialect.boolean(false), uuid)
      }),
    claimFetches: (now, leaseUntil, limit) =>
      attempt("media.claimFetches", () =>
        limit <= 0 || statements.prepare(SQL.anyDue).get(now, now) === undefined
          ? []
          : transaction(db, () =>
              statements.prepare<MediaJobRow>(SQL.due).all(now, now, limit).map((row) => {
                const lease = randomUUID()
                statements.prepare(SQL.lease).run(lease, leaseUntil, row.uuid)
                return codec.fetchJob(row, lease)
              })
            )
      ),
    renewFetch: (uuid, lease, leaseUntil) =>
      attempt("media.renewFetch", () => statements.prepare(SQL.renew).run(leaseUntil, uuid, lease).changes > 0),
    recordFetch: (uuid, lease, record, now) =>
      attempt("media.recordFetch", () =>
        transaction(db, (): MediaFetchRecorded => {
          const media = one(SQL.leased, uuid, lease)
          if (media === undefined) return { _tag: "Lost" }
          if (record._tag === "Retry") {
            statements.prepare(SQL.retry).run(record.attempts, record.integrity_failures, record.next_fetch_at, uuid)
            return { _tag: "Retrying" }
          }
          const used = record._tag === "Stored" && record.bytesLimit !== null ? bytesUsedOf(statements, media.organization_id) : 0
          return { _tag: "Settled", ...settle(statements, settledByFetch(media, record, now, used), now) }
        })
      ),
    nextFetchDueAt: () =>
      attempt("media.nextFetchDueAt", () => Option.fromNullable(statements.prepare<{ at: string | null }>(SQL.nextDue).get()?.at)),
    postponeChannelFetches: (channelUuid, until) =>
      attempt("media.postponeChannelFetches", () => statements.prepare(SQL.postpone).run(until, channelUuid, until).changes),
    rememberUpload: (mediaUuid, channelUuid, providerMediaId, expiresAt) =>
      attempt("media.rememberUpload", () => {
        statements.prepare(SQL.rememberUpload).run(mediaUuid, channelUuid, providerMediaId, expiresAt)
      }),
    uploadFor: (mediaUuid, channelUuid, now) =>
      attempt("media.uploadFor", () =>
        Option.fromNullable(
          statements.prepare<{ provider_media_id: string }>(SQL.uploadFor).get(mediaUuid, channelUuid, now)?.provider_media_id
        )
      )
  }
}

/** The statements of this repository (exported for the query-plan test): @switchboard/storage-sql's. */
export const SQL = mediaStatementsOf(sqliteDialect)

/** The parameters and decoders of the media rows (@switchboard/storage-sql's). */
const codec = decoders.media

/**
 * Writes the media of an inbound message (`ChatAppendRequest.media`) with its message's
 * uuid and contact, inside `chats.appendMessage`'s transaction, after its duplicate check.
 */
export const insertInboundMedia = (
  statements: Statements,
  organizationId: OrganizationId,
  media: NewInboundMedia,
  messageUuid: string,
  contactUuid: string
): void => {
  statements.prepare(SQL.insert).get(...codec.values(organizationId, { ...media, message_uuid: messageUuid, contact_uuid: contactUuid }))
}

/**
 * Marks every media of a deleted contact `deleted` (blobs pending removal, fetch jobs
 * ended, no event: the messages go with the contact), inside `contacts.delete`'s transaction.
 */
export const markContactMediaDeleted = (statements: Statements, organizationId: OrganizationId, contactUuid: string): void => {
  statements.prepare(SQL.deleteOfContact).run(organizationId, contactUuid)
}

/** The organization's stored bytes: the sum of the `size` of its `stored` media (one range of `media_stored_bytes`). */
const bytesUsedOf = (statements: Statements, organizationId: string): number =>
  statements.prepare<{ used: number }>(SQL.bytesUsed).get(organizationId)!.used

/**
 * Writes a media's new status and fields (its fetch job ended) and, for an inbound one
 * whose message is still there, rewrites the message's `media` (`updated_at` = `now`) with
 * the `message.media_updated` event; answers both as written. Inside the caller's transaction.
 */
const settle = (statements: Statements, media: StoredMedia, now: string): { readonly media: StoredMedia; readonly message: Message | null } => {
  statements.prepare(SQL.settle).run(...codec.settledValues(media))
  const row = media.message_uuid === null ? undefined : statements.prepare<MessageRow>(SQL.messageOf).get(media.organization_id, media.message_uuid)
  if (row === undefined || row.media === null) return { media, message: null }
  const message = messageWithMedia(decodeMessage(row), media, now)
  statements.prepare(SQL.writeMessageMedia).run(...codec.messageValues(message))
  recordWebhookEvent(statements, media.organization_id, "message.media_updated", now, () => message)
  return { media, message }
}

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
import { MEDIA_INSERT_COLUMNS, MEDIA_VALUE_TYPES, type MediaJobRow, type MediaRow, mediaStatementsOf } from "@switchboard/storage-sql"
import { decoders, postgresDialect } from "../dialect.js"
import { attempt, isUniqueViolation, perSchema, type RepositoryFactory, type Sql } from "../internal/sql.js"
import { decodeMessage, type MessageRow } from "./chatRows.js"
import { recordWebhookEvent } from "./webhookEvents.js"

/**
 * `Storage.media` on PostgreSQL: tables `media` (a record and its fetch job on one row) and
 * `media_uploads` (schema/media.ts). `insert` with a `bytesLimit` sums the organization's
 * stored bytes and inserts in one transaction holding the organization's lock, as every
 * plan limit does, and so does `recordFetch` storing bytes under a limit: of two writers
 * of one organization, the second sums what the first stored. `claimFetches` is one
 * statement leasing the due jobs it locks `FOR UPDATE SKIP LOCKED` (a job another claim
 * holds is passed over, one leased since the statement's snapshot re-checked and dropped),
 * so of claims running together in any number of processes each job goes to one.
 * `recordFetch`, `markDeleted` and `expireBefore` lock the media's row (`expireBefore`
 * skipping rows another transaction holds), then its message's, and write the media, the
 * message's `media` and the `message.media_updated` event in one transaction
 * (`webhookEvents.ts`). An inbound media is written by `chats.appendMessage` with its
 * message (`chatAppend.ts`, {@link insertInboundMediaSql}); a deleted contact's media are
 * marked by `contacts.delete` in its transaction ({@link markContactMediaDeleted}).
 *
 * @category repositories
 */
export const mediaRepository: RepositoryFactory<MediaRepository> = (db) => {
  const s = db.schema
  const SQL = statementsOf(s)
  return {
    insert: (organizationId, media, bytesLimit) =>
      attempt("media.insert", async (): Promise<MediaInsertOutcome> => {
        const inserted = async (sql: Sql) => ({ _tag: "Inserted", media: (await one(sql, SQL.insert, codec.values(organizationId, media)))! }) as const
        // A held uuid (an Idempotency-Key's) whose other writer stored first: that record.
        const stored = async (sql: Sql) => {
          const found = await one(sql, SQL.find, [organizationId, media.uuid])
          return found === undefined ? undefined : ({ _tag: "Duplicate", media: found } as const)
        }
        const size = media.size
        if (bytesLimit === null || size === null) {
          return inserted(db.sql).catch(async (error: unknown) => {
            if (!isUniqueViolation(error, "media_pkey")) throw error
            const duplicate = await stored(db.sql)
            if (duplicate === undefined) throw error
            return duplicate
          })
        }
        // Under the organization's lock the record, if stored, is seen before the limit counts it.
        return db.transaction(
          async (sql): Promise<MediaInsertOutcome> => {
            const duplicate = await stored(sql)
            if (duplicate !== undefined) return duplicate
            const used = await bytesUsedOf(sql, s, organizationId)
            return used + size > bytesLimit ? { _tag: "LimitReached", used, limit: bytesLimit } : inserted(sql)
          },
          { lockOrganization: organizationId }
        )
      }),
    get: (organizationId, uuid) => attempt("media.get", async () => Option.fromNullable(await one(db.sql, SQL.find, [organizationId, uuid]))),
    getForLink: (uuid) => attempt("media.getForLink", async () => Option.fromNullable(await one(db.sql, SQL.findForLink, [uuid]))),
    list: (organizationId, filter, page) =>
      attempt("media.list", () =>
        db.snapshot(async (sql) => {
          const cursor = page.after === undefined ? undefined : await one(sql, SQL.find, [organizationId, page.after])
          const query = codec.pageQuery(organizationId, filter, page, cursor)
          return codec.page(await sql.rows<MediaRow>(SQL[query.statement], query.params), page.per_page)
        })
      ),
    bytesUsed: (organizationId) => attempt("media.bytesUsed", () => bytesUsedOf(db.sql, s, organizationId)),
    markDeleted: (organizationId, uuid, now) =>
      attempt("media.markDeleted", () =>
        db.transaction(async (sql) => {
          const media = await one(sql, SQL.findForUpdate, [organizationId, uuid])
          if (media !== undefined && media.status !== "deleted") await settle(sql, s, deletedMedia(media), now)
          return Option.fromNullable(media)
        })
      ),
    expireBefore: (before, now, limit) =>
      attempt("media.expireBefore", () =>
        db.transaction(async (sql) => {
          const expired = (await sql.rows<MediaRow>(SQL.expiringUnlocked, [before, limit])).map(codec.record)
          for (const media of expired) await settle(sql, s, deletedMedia(media), now)
          return expired.length
        })
      ),
    blobsToRemove: (limit) =>
      attempt("media.blobsToRemove", () => db.sql.rows<{ uuid: string; blob_key: string }>(SQL.blobsToRemove, [limit])),
    blobRemoved: (uuid) =>
      attempt("media.blobRemoved", async () => {
        await db.sql.run(SQL.blobRemoved, [false, uuid])
      }),
    claimFetches: (now, leaseUntil, limit) =>
      attempt("media.claimFetches", async () =>
        limit <= 0
          ? []
          : (await db.sql.rows<MediaJobRow & { lease: string }>(SQL.claim, [now, now, limit, leaseUntil])).map((row) =>
              codec.fetchJob(row, row.lease)
            )
      ),
    renewFetch: (uuid, lease, leaseUntil) =>
      attempt("media.renewFetch", async () => (await db.sql.run(SQL.renew, [leaseUntil, uuid, lease])) > 0),
    recordFetch: (uuid, lease, record, now) =>
      attempt("media.recordFetch", async () => {
        // Storing bytes under a limit takes the organization's lock first (as `insert`).
        const limited = record._tag === "Stored" && record.bytesLimit !== null
        const organization = limited ? (await db.sql.row<{ organization_id: string }>(SQL.organizationOf, [uuid]))?.organization_id : undefined
        if (limited && organization === undefined) return { _tag: "Lost" } as const
        return db.transaction(
          async (sql): Promise<MediaFetchRecorded> => {
            const media = await one(sql, SQL.leasedForUpdate, [uuid, lease])
            if (media === undefined) return { _tag: "Lost" }
            if (record._tag === "Retry") {
              await sql.run(SQL.retry, [record.attempts, record.integrity_failures, record.next_fetch_at, uuid])
              return { _tag: "Retrying" }
            }
            const used = limited ? await bytesUsedOf(sql, s, media.organization_id) : 0
            return { _tag: "Settled", ...(await settle(sql, s, settledByFetch(media, record, now, used), now)) }
          },
          organization === undefined ? undefined : { lockOrganization: organization }
        )
      }),
    nextFetchDueAt: () =>
      attempt("media.nextFetchDueAt", async () => Option.fromNullable((await db.sql.row<{ at: string | null }>(SQL.nextDue))?.at)),
    postponeChannelFetches: (channelUuid, until) =>
      attempt("media.postponeChannelFetches", () => db.sql.run(SQL.postpone, [until, channelUuid, until])),
    rememberUpload: (mediaUuid, channelUuid, providerMediaId, expiresAt) =>
      attempt("media.rememberUpload", async () => {
        await db.sql.run(SQL.rememberUpload, [mediaUuid, channelUuid, providerMediaId, expiresAt])
      }),
    uploadFor: (mediaUuid, channelUuid, now) =>
      attempt("media.uploadFor", async () =>
        Option.fromNullable((await db.sql.row<{ provider_media_id: string }>(SQL.uploadFor, [mediaUuid, channelUuid, now]))?.provider_media_id)
      )
  }
}

/**
 * The statements of this repository on `schema` (quoted): @switchboard/storage-sql's, its
 * locking reads (`… FOR UPDATE`), and the claim and the organization look-up of
 * PostgreSQL's own.
 */
const statementsFor = (schema: string) => {
  const shared = mediaStatementsOf(postgresDialect(schema))
  return {
    ...shared,
    findForUpdate: `${shared.find} FOR UPDATE`,
    leasedForUpdate: `${shared.leased} FOR UPDATE`,
    // Rows another transaction holds (deleted or expired meanwhile) are left to it.
    expiringUnlocked: `${shared.expiring} FOR UPDATE SKIP LOCKED`,
    messageForUpdate: `${shared.messageOf} FOR UPDATE`,
    organizationOf: `SELECT organization_id FROM ${schema}.media WHERE uuid = $1`,
    // One statement: the due jobs in due order (a range of media_fetch_due) locked FOR
    // UPDATE SKIP LOCKED, each leased under a new token ($4 its end), in due order.
    claim: `WITH due AS (${shared.due} FOR UPDATE SKIP LOCKED),
      leased AS (UPDATE ${schema}.media AS m SET lease = gen_random_uuid()::text, lease_until = $4 FROM due WHERE m.uuid = due.uuid
        RETURNING m.*)
      SELECT * FROM leased ORDER BY next_fetch_at, uuid`
  } as const
}

/** {@link statementsFor} `schema`, built once per schema. */
const statementsOf = perSchema(statementsFor)

/** The parameters and decoders of the media rows (@switchboard/storage-sql's). */
const codec = decoders.media

/** The media record `text` selects with `params`, or `undefined`. */
const one = async (sql: Sql, text: string, params: ReadonlyArray<unknown>): Promise<StoredMedia | undefined> => {
  const row = await sql.row<MediaRow>(text, params)
  return row === undefined ? undefined : codec.record(row)
}

/** The organization's stored bytes: the sum of the `size` of its `stored` media (an index-only scan of `media_stored_bytes`). */
const bytesUsedOf = async (sql: Sql, schema: string, organizationId: string): Promise<number> =>
  (await sql.row<{ used: number }>(statementsOf(schema).bytesUsed, [organizationId]))!.used

/**
 * Writes a media's new status and fields (its fetch job ended) and, for an inbound one
 * whose message is still there, rewrites the message's `media` (`updated_at` = `now`, the
 * message's row locked after the media's) with the `message.media_updated` event; answers
 * both as written. Inside the caller's transaction, which holds the media's row.
 */
const settle = async (
  sql: Sql,
  schema: string,
  media: StoredMedia,
  now: string
): Promise<{ readonly media: StoredMedia; readonly message: Message | null }> => {
  const SQL = statementsOf(schema)
  await sql.run(SQL.settle, codec.settledValues(media))
  const row = media.message_uuid === null ? undefined : await sql.row<MessageRow>(SQL.messageForUpdate, [media.organization_id, media.message_uuid])
  if (row === undefined || row.media === null) return { media, message: null }
  const message = messageWithMedia(decodeMessage(row), media, now)
  await sql.run(SQL.writeMessageMedia, codec.messageValues(message))
  await recordWebhookEvent(sql, schema, media.organization_id, "message.media_updated", now, () => message)
  return { media, message }
}

/**
 * `INSERT INTO media` of an inbound message's media for a statement that appends the
 * message in a `WITH` clause `inserted`: written only when that clause inserted the
 * message (a redelivery writes no second record or job). `value(k)` names the k-th of
 * {@link MEDIA_INSERT_COLUMNS} (a parameter or an expression), each cast to its column's type.
 */
export const insertInboundMediaSql = (schema: string, value: (k: number) => string): string =>
  `INSERT INTO ${schema}.media (${MEDIA_INSERT_COLUMNS})
        SELECT ${MEDIA_VALUE_TYPES.map((type, k) => `${value(k)}::${type}`).join(", ")} WHERE EXISTS (SELECT 1 FROM inserted)`

/**
 * The parameters of {@link insertInboundMediaSql} (as `decoders.media.values` orders them) for the
 * media of an appended message: `contactUuid` its contact's (`""` when the statement names
 * it by an expression).
 */
export const inboundMediaValues = (
  organizationId: OrganizationId,
  media: NewInboundMedia,
  messageUuid: string,
  contactUuid: string
): Array<string | number | null> => codec.values(organizationId, { ...media, message_uuid: messageUuid, contact_uuid: contactUuid })

/** The index of `contact_uuid` among {@link MEDIA_INSERT_COLUMNS} (a statement may name it by an expression). */
export const MEDIA_CONTACT_INDEX = MEDIA_INSERT_COLUMNS.split(", ").indexOf("contact_uuid")

/**
 * Writes the media of an inbound message (`ChatAppendRequest.media`) with its message's
 * uuid and contact, inside `chats.appendMessage`'s transaction, after its duplicate check.
 */
export const insertInboundMedia = async (
  sql: Sql,
  schema: string,
  organizationId: OrganizationId,
  media: NewInboundMedia,
  messageUuid: string,
  contactUuid: string
): Promise<void> => {
  await sql.run(statementsOf(schema).insert, inboundMediaValues(organizationId, media, messageUuid, contactUuid))
}

/**
 * Marks every media of a deleted contact `deleted` (blobs pending removal, fetch jobs
 * ended, no event: the messages go with the contact), inside `contacts.delete`'s
 * transaction; its rows locked as it goes.
 */
export const markContactMediaDeleted = async (sql: Sql, schema: string, organizationId: string, contactUuid: string): Promise<void> => {
  await sql.run(statementsOf(schema).deleteOfContact, [organizationId, contactUuid])
}

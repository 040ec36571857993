import {
  type MediaFailure,
  mediaFailure,
  type MediaFetchJob,
  type MediaFetchRecord,
  type MediaListFilter,
  type MediaPageRequest,
  type MediaSource,
  type MediaStatus,
  type MediaType,
  type Message,
  type NewMedia,
  type OrganizationId,
  type StoredMedia
} from "@switchboard/core"
import { compilerOf } from "../compile.js"
import type { SqlDialect, SqlValues } from "../SqlDialect.js"
import { MESSAGE_COLUMNS } from "./messages.js"
import { jsonOrNull, type SqlBoolean, type SqlJson } from "./values.js"

// Rows of `media` (a media record with its fetch job beside it) and `media_uploads`, their
// parameters, their decoding into core's records, the statements both engines write alike,
// and the pure rules of a settled fetch and of the message it rewrites (core's
// MediaRepository.ts). The casts are safe: every value was written from core's types, and
// the tables' CHECK constraints bound `type`, `status` and `source`.

/**
 * A row of `media` as the records read it (the fetch job's columns are not part of it).
 *
 * @category rows
 */
export interface MediaRow {
  readonly organization_id: string
  readonly uuid: string
  readonly type: string
  readonly mime_type: string
  readonly size: number | null
  readonly sha256: string | null
  readonly filename: string | null
  readonly status: string
  readonly failure: SqlJson
  readonly source: string
  readonly message_uuid: string | null
  readonly contact_uuid: string | null
  readonly channel_uuid: string | null
  readonly blob_key: string | null
  readonly blob_pending_removal: SqlBoolean
  readonly created_at: string
  readonly stored_at: string | null
}

/**
 * A row of `media` with its fetch job, as a claim reads it (the lease apart).
 *
 * @category rows
 */
export interface MediaJobRow extends MediaRow {
  readonly provider_media_id: string
  readonly declared_sha256: string | null
  readonly expires_at: string
  readonly attempts: number
  readonly integrity_failures: number
}

/**
 * The columns of a {@link MediaRow}, in `SELECT` order.
 *
 * @category statements
 */
export const MEDIA_COLUMNS =
  "organization_id, uuid, type, mime_type, size, sha256, filename, status, failure, source, message_uuid, " +
  "contact_uuid, channel_uuid, blob_key, blob_pending_removal, created_at, stored_at"

/**
 * The fetch job's columns of a {@link MediaJobRow} after {@link MEDIA_COLUMNS}, in `SELECT` order.
 *
 * @category statements
 */
export const MEDIA_JOB_COLUMNS = "provider_media_id, declared_sha256, expires_at, attempts, integrity_failures"

/**
 * The columns an insert of a media record writes, in the order of {@link MediaCodec.values};
 * the others take their defaults (no blob pending removal, no attempt yet, no lease).
 *
 * @category statements
 */
export const MEDIA_INSERT_COLUMNS =
  "organization_id, uuid, type, mime_type, size, sha256, filename, status, failure, source, message_uuid, " +
  "contact_uuid, channel_uuid, blob_key, created_at, stored_at, provider_media_id, declared_sha256, expires_at, next_fetch_at"

/**
 * The types of {@link MEDIA_INSERT_COLUMNS}, in that order: the casts of
 * {@link MediaCodec.values}'s parameters (`dialect.cast`).
 *
 * @category statements
 */
export const MEDIA_VALUE_TYPES = [
  "text", "text", "text", "text", "bigint", "text", "text", "text", "json", "text", "text",
  "text", "text", "text", "timestamptz", "timestamptz", "text", "text", "timestamptz", "timestamptz"
] as const

/** The parameters of a media record's insert ({@link MEDIA_INSERT_COLUMNS}). */
const insertValues = (organizationId: string, media: NewMedia): Array<string | number | null> => [
  organizationId,
  media.uuid,
  media.type,
  media.mime_type,
  media.size,
  media.sha256,
  media.filename,
  media.status,
  jsonOrNull(media.failure),
  media.source,
  media.message_uuid,
  media.contact_uuid,
  media.fetch?.channel_uuid ?? null,
  media.blob_key,
  media.created_at,
  media.stored_at,
  media.fetch?.provider_media_id ?? null,
  media.fetch?.declared_sha256 ?? null,
  media.fetch?.expires_at ?? null,
  media.fetch?.next_fetch_at ?? null
]

/**
 * The parameters and decoders of the media rows for one dialect's values (the statements'
 * parameters are listed at {@link mediaStatementsOf}).
 *
 * @category decoders
 */
export interface MediaCodec {
  /**
   * The parameters of `insert` ({@link MEDIA_INSERT_COLUMNS}): the record's fields,
   * `failure` as JSON text, the channel and job of `media.fetch` (all `null` without one: a
   * record with no fetch job has `next_fetch_at` `null`).
   */
  readonly values: (organizationId: string, media: NewMedia) => Array<string | number | null>
  /** The parameters of `settle`, writing `media`'s changing fields (its job ended). */
  readonly settledValues: (media: StoredMedia) => Array<unknown>
  /** The parameters of `writeMessageMedia` for a message as core's `messageWithMedia` made it. */
  readonly messageValues: (message: Message) => Array<unknown>
  /**
   * The statement of a page of the list (`pageAfter` after `cursor`, the record of
   * `page.after` when the organization has it, else `pageFirst`) and its parameters, read
   * with a limit of `per_page + 1` (see {@link MediaCodec.page}).
   */
  readonly pageQuery: (
    organizationId: string,
    filter: MediaListFilter,
    page: MediaPageRequest,
    cursor: StoredMedia | undefined
  ) => { readonly statement: "pageFirst" | "pageAfter"; readonly params: Array<unknown> }
  /** A media record from its row. */
  readonly record: (row: MediaRow) => StoredMedia
  /** A claimed fetch job from its row and the claim's lease token. */
  readonly fetchJob: (row: MediaJobRow, lease: string) => MediaFetchJob
  /**
   * One page of the list from the rows of `pageFirst` or `pageAfter` (read with a limit of
   * `perPage + 1`): the first `perPage`, and whether more follow.
   */
  readonly page: (
    rows: ReadonlyArray<MediaRow>,
    perPage: number
  ) => { readonly items: ReadonlyArray<StoredMedia>; readonly hasMore: boolean }
}

/**
 * The {@link MediaCodec} of `values`.
 *
 * @category decoders
 */
export const mediaCodecOf = ({ boolean, readBoolean, readJson }: SqlValues): MediaCodec => {
  const record = (row: MediaRow): StoredMedia => ({
    organization_id: row.organization_id as OrganizationId,
    uuid: row.uuid,
    type: row.type as MediaType,
    mime_type: row.mime_type,
    size: row.size,
    sha256: row.sha256,
    filename: row.filename,
    status: row.status as MediaStatus,
    failure: readJson(row.failure) as MediaFailure | null,
    source: row.source as MediaSource,
    message_uuid: row.message_uuid,
    contact_uuid: row.contact_uuid,
    channel_uuid: row.channel_uuid,
    blob_key: row.blob_key,
    blob_pending_removal: readBoolean(row.blob_pending_removal),
    created_at: row.created_at,
    stored_at: row.stored_at
  })
  return {
    values: insertValues,
    settledValues: (media) => [
      media.mime_type,
      media.size,
      media.sha256,
      media.status,
      jsonOrNull(media.failure),
      media.blob_key,
      boolean(media.blob_pending_removal),
      media.stored_at,
      media.uuid
    ],
    messageValues: (message) => [jsonOrNull(message.media), message.updated_at, message.uuid],
    pageQuery: (organizationId, filter, page, cursor) => {
      const filters = [organizationId, filter.source ?? null, filter.source ?? null, filter.status ?? null, filter.status ?? null]
      return cursor === undefined
        ? { statement: "pageFirst", params: [...filters, page.per_page + 1] }
        : { statement: "pageAfter", params: [...filters, cursor.created_at, cursor.uuid, page.per_page + 1] }
    },
    record,
    fetchJob: (row, lease) => ({
      media: record(row),
      channel_uuid: row.channel_uuid!,
      provider_media_id: row.provider_media_id,
      declared_sha256: row.declared_sha256,
      expires_at: row.expires_at,
      attempts: row.attempts,
      integrity_failures: row.integrity_failures,
      lease
    }),
    page: (rows, perPage) => ({ items: rows.slice(0, perPage).map(record), hasMore: rows.length > perPage })
  }
}

/**
 * The statements of the media repository both engines write alike, compiled for
 * `dialect` (an engine's locking reads append their clause to `find`, `leased`,
 * `expiring` and `messageOf`). Parameters, in order:
 * - `insert`: {@link MediaCodec.values} (answers the row as stored).
 * - `find`: organization, uuid. `findForLink`: uuid.
 * - `pageFirst`, `pageAfter`: {@link MediaCodec.pageQuery}.
 * - `bytesUsed`: organization (answers `used`).
 * - `leased`: uuid, lease: the media while that lease holds its job and it is `pending`.
 * - `retry`: attempts, integrity_failures, next_fetch_at, uuid (the lease released).
 * - `settle`: {@link MediaCodec.settledValues} (the job ended).
 * - `deleteOfContact`: organization, contact: its media not yet `deleted` marked so, their
 *   blobs pending removal, their jobs ended.
 * - `expiring`: before, limit: `stored` media created before, oldest first.
 * - `blobsToRemove`: limit. `blobRemoved`: `false` (the dialect's boolean), uuid.
 * - `anyDue`: now twice; `due`: now twice, limit: the due jobs, earliest first, with their
 *   job's columns; `lease`: lease, lease_until, uuid.
 * - `renew`: lease_until, uuid, lease. `nextDue`: none (answers `at`).
 * - `postpone`: until, channel, until.
 * - `rememberUpload`: media, channel, provider id, expires_at. `uploadFor`: media, channel, now.
 * - `messageOf`: organization, uuid. `writeMessageMedia`: {@link MediaCodec.messageValues}.
 *
 * @category statements
 */
export const mediaStatementsOf = (dialect: SqlDialect) => {
  const compile = compilerOf(dialect)
  const media = dialect.table("media")
  const uploads = dialect.table("media_uploads")
  const text = dialect.cast("text")
  const filters = `organization_id = ? AND (${text} IS NULL OR source = ?) AND (${text} IS NULL OR status = ?)`
  const newest = "ORDER BY created_at DESC, uuid DESC LIMIT ?"
  const due = `next_fetch_at IS NOT NULL AND next_fetch_at <= ? AND (lease_until IS NULL OR lease_until < ?)`
  const ended = "next_fetch_at = NULL, lease = NULL, lease_until = NULL"
  return {
    insert: compile(`INSERT INTO ${media} (${MEDIA_INSERT_COLUMNS}) VALUES (${MEDIA_VALUE_TYPES.map(dialect.cast).join(", ")})
      RETURNING ${MEDIA_COLUMNS}`),
    find: compile(`SELECT ${MEDIA_COLUMNS} FROM ${media} WHERE organization_id = ? AND uuid = ?`),
    findForLink: compile(`SELECT ${MEDIA_COLUMNS} FROM ${media} WHERE uuid = ?`),
    pageFirst: compile(`SELECT ${MEDIA_COLUMNS} FROM ${media} WHERE ${filters} ${newest}`),
    pageAfter: compile(`SELECT ${MEDIA_COLUMNS} FROM ${media} WHERE ${filters}
      AND (created_at, uuid) < (${dialect.cast("timestamptz")}, ${text}) ${newest}`),
    bytesUsed: compile(`SELECT COALESCE(SUM(size), 0) AS used FROM ${media} WHERE organization_id = ? AND status = 'stored'`),
    leased: compile(`SELECT ${MEDIA_COLUMNS} FROM ${media}
      WHERE uuid = ? AND lease = ? AND status = 'pending' AND next_fetch_at IS NOT NULL`),
    retry: compile(`UPDATE ${media} SET attempts = ?, integrity_failures = ?, next_fetch_at = ?, lease = NULL, lease_until = NULL
      WHERE uuid = ?`),
    settle: compile(`UPDATE ${media} SET mime_type = ?, size = ?, sha256 = ?, status = ?, failure = ${dialect.cast("json")},
      blob_key = ?, blob_pending_removal = ?, stored_at = ?, ${ended}
      WHERE uuid = ?`),
    deleteOfContact: compile(`UPDATE ${media} SET status = 'deleted', failure = NULL, blob_pending_removal = (blob_key IS NOT NULL), ${ended}
      WHERE organization_id = ? AND contact_uuid = ? AND status <> 'deleted'`),
    expiring: compile(`SELECT ${MEDIA_COLUMNS} FROM ${media} WHERE status = 'stored' AND created_at < ?
      ORDER BY created_at, uuid LIMIT ?`),
    blobsToRemove: compile(`SELECT uuid, blob_key FROM ${media} WHERE blob_pending_removal = ${dialect.true} AND blob_key IS NOT NULL
      ORDER BY uuid LIMIT ?`),
    blobRemoved: compile(`UPDATE ${media} SET blob_key = NULL, blob_pending_removal = ? WHERE uuid = ? AND status = 'deleted'`),
    anyDue: compile(`SELECT 1 AS found FROM ${media} WHERE ${due} LIMIT 1`),
    due: compile(`SELECT ${MEDIA_COLUMNS}, ${MEDIA_JOB_COLUMNS} FROM ${media} WHERE ${due}
      ORDER BY next_fetch_at, uuid LIMIT ?`),
    lease: compile(`UPDATE ${media} SET lease = ?, lease_until = ? WHERE uuid = ?`),
    renew: compile(`UPDATE ${media} SET lease_until = ? WHERE uuid = ? AND lease = ? AND next_fetch_at IS NOT NULL`),
    // A leased job is due again when its lease ends, not before.
    nextDue: compile(`SELECT MIN(CASE WHEN lease_until IS NOT NULL AND lease_until > next_fetch_at THEN lease_until
      ELSE next_fetch_at END) AS at FROM ${media} WHERE next_fetch_at IS NOT NULL`),
    postpone: compile(`UPDATE ${media} SET next_fetch_at = ?
      WHERE channel_uuid = ? AND next_fetch_at IS NOT NULL AND next_fetch_at < ?`),
    rememberUpload: compile(`INSERT INTO ${uploads} (media_uuid, channel_uuid, provider_media_id, expires_at) VALUES (?, ?, ?, ?)
      ON CONFLICT (media_uuid, channel_uuid)
      DO UPDATE SET provider_media_id = excluded.provider_media_id, expires_at = excluded.expires_at`),
    uploadFor: compile(`SELECT provider_media_id FROM ${uploads} WHERE media_uuid = ? AND channel_uuid = ? AND expires_at > ?`),
    messageOf: compile(`SELECT ${MESSAGE_COLUMNS} FROM ${dialect.table("messages")} WHERE organization_id = ? AND uuid = ?`),
    writeMessageMedia: compile(`UPDATE ${dialect.table("messages")} SET media = ${dialect.cast("json")}, updated_at = ?
      WHERE uuid = ?`)
  } as const
}

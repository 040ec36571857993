import { Schema } from "effect"

// Media: the record of a photo, voice note, video, document or sticker Switchboard keeps,
// and the pure rules of keeping it (docs/media.md): the types and their limits, when a
// fetch from the provider is tried again and when it gives up, the budget of failed
// look-ups per channel, and how a provider's digest is compared.

/**
 * The kinds of media WhatsApp carries (docs/media.md).
 *
 * @category media
 */
export const MediaType = Schema.Literal("image", "video", "audio", "document", "sticker")
/** @category media */
export type MediaType = typeof MediaType.Type

/** Every {@link MediaType}, in declaration order. @category media */
export const MEDIA_TYPES: ReadonlyArray<MediaType> = MediaType.literals

/**
 * Where a media record stands (docs/media.md "Records"): `pending` (an inbound file not
 * fetched yet), `stored` (its bytes kept), `failed` (they never will be: `failure` says
 * why), `deleted` (the bytes removed; the record stays).
 *
 * @category media
 */
export const MediaStatus = Schema.Literal("pending", "stored", "failed", "deleted")
/** @category media */
export type MediaStatus = typeof MediaStatus.Type

/**
 * How a media record came: `inbound` (a customer's file, fetched from the provider) or
 * `upload` (`POST /media`).
 *
 * @category media
 */
export const MediaSource = Schema.Literal("inbound", "upload")
/** @category media */
export type MediaSource = typeof MediaSource.Type

/**
 * Why a media record `failed` (docs/media.md "Failures"): `expired` (the provider's id
 * lapsed before a fetch succeeded), `not_found` (the provider does not know the id),
 * `too_large` (over the provider's 100 MiB, Meta's 131052), `plan_limit` (the
 * organization's `media_bytes_limit`), `integrity` (the bytes did not match the provider's
 * size or SHA-256, three times), `channel_removed` (its channel was deleted first).
 *
 * @category media
 */
export const MediaFailureCode = Schema.Literal("expired", "not_found", "too_large", "plan_limit", "integrity", "channel_removed")
/** @category media */
export type MediaFailureCode = typeof MediaFailureCode.Type

/**
 * A failed media record's `failure`: its `code` and a human `title`.
 *
 * @category media
 */
export const MediaFailure = Schema.Struct({ code: MediaFailureCode, title: Schema.String })
/** @category media */
export type MediaFailure = typeof MediaFailure.Type

/** The title of each {@link MediaFailureCode}. @category media */
export const MEDIA_FAILURE_TITLES: Readonly<Record<MediaFailureCode, string>> = {
  expired: "The provider's media id expired before the file could be fetched",
  not_found: "The provider does not know this media id",
  too_large: "The file is larger than the provider delivers (100 MiB)",
  plan_limit: "The organization's media storage limit is reached",
  integrity: "The fetched bytes did not match the provider's size or SHA-256",
  channel_removed: "The channel the file came through was removed"
}

/**
 * The {@link MediaFailure} of a code, with its title.
 *
 * @category media
 */
export const mediaFailure = (code: MediaFailureCode): MediaFailure => ({ code, title: MEDIA_FAILURE_TITLES[code] })

/**
 * A media record as the API answers it (docs/media.md "Records"): `size` in bytes and
 * `sha256` (lowercase hex) once known, `filename` when given, `failure` when `failed`,
 * `message_uuid` of the inbound message it came with, `created_at` and `stored_at` (ISO
 * 8601, UTC).
 *
 * @category media
 */
export const MediaRecord = Schema.Struct({
  uuid: Schema.String,
  type: MediaType,
  mime_type: Schema.String,
  size: Schema.NullOr(Schema.Number),
  sha256: Schema.NullOr(Schema.String),
  filename: Schema.NullOr(Schema.String),
  status: MediaStatus,
  failure: Schema.NullOr(MediaFailure),
  source: MediaSource,
  message_uuid: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  stored_at: Schema.NullOr(Schema.String)
})
/** @category media */
export type MediaRecord = typeof MediaRecord.Type

const KiB = 1024
const MiB = 1024 * KiB

/**
 * The MIME types a media record may have, with their {@link MediaType} and largest size in
 * bytes (Meta's limits): image `image/jpeg`, `image/png` 5 MiB; video `video/mp4`,
 * `video/3gpp` 16 MiB; audio `audio/aac`, `audio/amr`, `audio/mpeg`, `audio/mp4`,
 * `audio/ogg` 16 MiB; document `text/plain`, `application/pdf` and the Office formats
 * 100 MiB; sticker `image/webp` 500 KiB (Meta: 100 KiB static, 500 KiB animated).
 *
 * @category media
 */
export const MEDIA_MIME_TYPES: Readonly<Record<string, { readonly type: MediaType; readonly maxBytes: number }>> = {
  "image/jpeg": { type: "image", maxBytes: 5 * MiB },
  "image/png": { type: "image", maxBytes: 5 * MiB },
  "video/mp4": { type: "video", maxBytes: 16 * MiB },
  "video/3gpp": { type: "video", maxBytes: 16 * MiB },
  "audio/aac": { type: "audio", maxBytes: 16 * MiB },
  "audio/amr": { type: "audio", maxBytes: 16 * MiB },
  "audio/mpeg": { type: "audio", maxBytes: 16 * MiB },
  "audio/mp4": { type: "audio", maxBytes: 16 * MiB },
  "audio/ogg": { type: "audio", maxBytes: 16 * MiB },
  "text/plain": { type: "document", maxBytes: 100 * MiB },
  "application/pdf": { type: "document", maxBytes: 100 * MiB },
  "application/msword": { type: "document", maxBytes: 100 * MiB },
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": { type: "document", maxBytes: 100 * MiB },
  "application/vnd.ms-excel": { type: "document", maxBytes: 100 * MiB },
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": { type: "document", maxBytes: 100 * MiB },
  "application/vnd.ms-powerpoint": { type: "document", maxBytes: 100 * MiB },
  "application/vnd.openxmlformats-officedocument.presentationml.presentation": { type: "document", maxBytes: 100 * MiB },
  "image/webp": { type: "sticker", maxBytes: 500 * KiB }
}

/** The largest file a provider delivers, in bytes (Meta: 100 MiB; larger ones arrive as 131052). @category media */
export const MAX_MEDIA_BYTES = 100 * MiB

/**
 * A MIME type's essence: without parameters, lowercase (`"Image/JPEG; q=1"` → `"image/jpeg"`).
 *
 * @category media
 */
export const mimeEssence = (mimeType: string): string => (mimeType.split(";", 1)[0] ?? "").trim().toLowerCase()

/**
 * The type and size limit of a MIME type ({@link MEDIA_MIME_TYPES}, parameters ignored), or
 * `undefined` for one media records may not have.
 *
 * @category media
 */
export const mediaMimeType = (mimeType: string): { readonly type: MediaType; readonly maxBytes: number } | undefined =>
  MEDIA_MIME_TYPES[mimeEssence(mimeType)]

/** How long a provider keeps an inbound media id, in ms (Meta: 7 days). @category media */
export const INBOUND_MEDIA_ID_LIFETIME_MS = 7 * 24 * 3_600_000

/** The waits between fetch attempts of one media, in ms: 30 s, 2 min, 10 min, 1 h, then every 6 h. @category media */
export const MEDIA_FETCH_RETRY_DELAYS_MS: ReadonlyArray<number> = [30_000, 120_000, 600_000, 3_600_000, 21_600_000]

/**
 * When a media fetch that failed for a passing reason (a network error, 429, 5xx, a
 * lapsed download URL) runs again: `failedAt` (ms since the epoch) plus the wait after
 * its `attempts`-th failure ({@link MEDIA_FETCH_RETRY_DELAYS_MS}: 30 s after the first,
 * then 2 min, 10 min, 1 h, and 6 h after the fifth and every later one) — or `null`
 * when that is at or past `expiresAt` (the provider's id lapses first: the media ends
 * `failed` `expired`). `delays` replaces the schedule (its last wait repeats;
 * `SWITCHBOARD_MEDIA_RETRY_DELAYS_MS`).
 *
 * @category media
 */
export const nextMediaFetchAt = (
  attempts: number,
  failedAt: number,
  expiresAt: number,
  delays: ReadonlyArray<number> = MEDIA_FETCH_RETRY_DELAYS_MS
): number | null => {
  const next = failedAt + delays[Math.min(Math.max(attempts, 1), delays.length) - 1]!
  return next >= expiresAt ? null : next
}

/**
 * The budget of failed media look-ups per channel (Meta blocks partners that fail more):
 * after `failures` failed look-ups within `windowMs`, the channel's fetches wait `pauseMs`.
 *
 * @category media
 */
export const MEDIA_LOOKUP_BUDGET = { failures: 5, windowMs: 3_600_000, pauseMs: 3_600_000 } as const

/**
 * Until when a channel's media fetches wait, given the times (ms since the epoch) of its
 * failed look-ups: `null` while fewer than {@link MEDIA_LOOKUP_BUDGET}'s `failures` of them
 * fall within the window ending at `now`; else the last failure plus `pauseMs`, when that
 * is still ahead of `now`.
 *
 * @category media
 */
export const mediaLookupPausedUntil = (failedLookups: ReadonlyArray<number>, now: number): number | null => {
  const recent = failedLookups.filter((at) => at > now - MEDIA_LOOKUP_BUDGET.windowMs && at <= now)
  if (recent.length < MEDIA_LOOKUP_BUDGET.failures) return null
  const until = Math.max(...recent) + MEDIA_LOOKUP_BUDGET.pauseMs
  return until > now ? until : null
}

/** How many times a size or SHA-256 mismatch is fetched again before the media ends `failed` `integrity`. @category media */
export const MEDIA_INTEGRITY_RETRIES = 3

/**
 * Whether the SHA-256 a provider declares matches the digest of the bytes received
 * (`ours`, lowercase hex): Meta gives it in base64 in a message webhook and in hex in the
 * media look-up, so either form is accepted; anything else never matches.
 *
 * @category media
 */
export const sameSha256 = (ours: string, declared: string): boolean => {
  const trimmed = declared.trim()
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) return trimmed.toLowerCase() === ours
  if (!/^[A-Za-z0-9+/_-]{43}=?$/.test(trimmed)) return false
  return Buffer.from(trimmed.replace(/-/g, "+").replace(/_/g, "/"), "base64").toString("hex") === ours
}

/**
 * Where a media's bytes are kept once stored: `media/<organization>/<uuid>` (docs/media.md
 * "Blob stores").
 *
 * @category media
 */
export const mediaBlobKey = (organizationId: string, uuid: string): string => `media/${organizationId}/${uuid}`

/**
 * Where one attempt writes a media's bytes before they are complete and checked:
 * `tmp/<uuid>/<attempt>` (docs/media.md "Blob stores"); a crash leaves nothing visible under
 * {@link mediaBlobKey}.
 *
 * @category media
 */
export const temporaryMediaBlobKey = (uuid: string, attempt: string): string => `tmp/${uuid}/${attempt}`

import { Effect, Schema } from "effect"
import {
  type BlobRange,
  MAX_MEDIA_BYTES,
  MediaRecord as MediaRecordSchema,
  type MediaServiceShape,
  type MediaRecord as MediaRecordShape,
  type OrganizationId,
  RecordNotFound,
  type StagedMedia,
  StorageError
} from "@switchboard/core"
import { HttpFailure } from "../HttpFailure.js"
import type { MultipartBody, MultipartPart } from "../internal/multipart.js"
import { NO_AUTHENTICATION } from "../internal/unauthenticated.js"
import { HandlerMedia } from "../settings.js"
import { type BinaryContent, defineRoute, type RouteIdempotency } from "./route.js"
import { pageSize, uuidOf, uuidParams } from "./shared.js"

// The media routes (docs/media.md): upload, records, the bytes by range, deletion and
// signed links.

/** The media record as the API answers it. @category schemas */
export const MediaRecord = MediaRecordSchema.annotations({ identifier: "Media", description: "A photo, video, voice note, document or sticker Switchboard keeps" })

/** Data of `GET /media`: newest first, cursor pages. @category schemas */
export const MediaListData = Schema.Struct({
  media: Schema.Array(MediaRecord),
  pagination: Schema.Struct({ mode: Schema.Literal("cursor"), limit: Schema.Int, next_cursor: Schema.NullOr(Schema.String), has_more: Schema.Boolean })
})

/** Data of `POST /media/{uuid}/links`. @category schemas */
export const MediaLinkData = Schema.Struct({ url: Schema.String, expires_at: Schema.String })

/** The handler's media service, or 503 `media_not_configured`. */
const mediaService: Effect.Effect<MediaServiceShape, HttpFailure, HandlerMedia> = Effect.flatMap(HandlerMedia, ({ media }) =>
  media === undefined
    ? Effect.fail(new HttpFailure({ status: 503, code: "media_not_configured", message: "No blob store is configured for media on this server" }))
    : Effect.succeed(media))

/** Most bytes of a `POST /media` request: the largest type's limit plus room for the multipart framing and fields. */
const UPLOAD_MAX_BYTES = MAX_MEDIA_BYTES + 64 * 1024

/** `POST /media` (docs/media.md "Uploading"): multipart part `file` (+ optional `type`); data is the record, `stored`. */
export const uploadMediaRoute = defineRoute({
  method: "POST",
  path: "/media",
  tag: "Media",
  summary: "Upload a file",
  description:
    "`multipart/form-data` with the part `file` (its `Content-Type` is the file's MIME type) and, optionally, the field `type`. The bytes must be what the MIME type says and within its type's limit (docs/media.md).",
  data: MediaRecord,
  multipart: { maxBytes: UPLOAD_MAX_BYTES, maxFiles: 1, maxFields: 4, maxFieldBytes: 1_024 },
  multipartParts: [
    { name: "file", binary: true, required: true, description: "The file; its part's Content-Type is its MIME type, its filename kept" },
    { name: "type", binary: false, required: false, description: "image, video, audio, document or sticker: must match the MIME type when given" }
  ],
  errors: ["invalid_input", "unsupported_media_type", "payload_too_large", "media_bytes_limit_reached", "media_not_configured"],
  idempotent: true,
  handle: ({ auth, body, claimIdempotencyKey }) =>
    Effect.gen(function*() {
      const media = yield* mediaService
      let type: string | undefined
      const parts = (body as MultipartBody).parts[Symbol.asyncIterator]()
      for (;;) {
        const next = yield* nextPart(parts)
        if (next.done === true) break
        const part = next.value
        if (part.kind === "field") {
          if (part.name === "type") type = part.value.trim()
          continue
        }
        if (part.name !== "file") {
          part.stream.resume()
          continue
        }
        const declaredBytes = (body as MultipartBody).contentLength
        const staged = yield* media.stage(auth.organization.id, {
          source: part.stream,
          mime_type: part.mimeType,
          filename: part.filename,
          ...(type === undefined ? {} : { type }),
          ...(declaredBytes === undefined ? {} : { declaredBytes })
        }).pipe(Effect.catchAll(sourceFailure))
        if (claimIdempotencyKey === undefined) return uploaded(yield* media.commit(auth.organization.id, staged))
        // With an Idempotency-Key the claim comes after the upload (docs/media.md
        // "Uploading"): what identifies the request is the file's SHA-256, declared types
        // and name. The record takes the key's uuid; a replay, a 409 or a 422 runs nothing
        // and the staged blob is removed.
        let ran = false
        const fingerprint = { sha256: staged.sha256, mime_type: part.mimeType, type: type ?? null, filename: part.filename }
        return yield* claimIdempotencyKey(fingerprint, (claim) => {
          ran = true
          return commitUnderClaim(media, auth.organization.id, staged, claim)
        }).pipe(Effect.ensuring(Effect.suspend(() => (ran ? Effect.void : media.discard(staged)))))
      }
      return yield* new HttpFailure({
        status: 400,
        code: "invalid_input",
        message: "The multipart part file is required",
        errors: [{ code: "required", message: "file is required", field: "file" }]
      })
    })
})

/** The answer of an upload: its record, `stored`. */
const uploaded = (record: MediaRecordShape) => ({ message: "Media uploaded", data: record })

/**
 * Writes a staged upload's record under an Idempotency-Key's claim, with the key's uuid. A
 * takeover (the first attempt died after claiming) answers the record that attempt wrote,
 * if it did, and removes this upload's blob.
 */
const commitUnderClaim = (media: MediaServiceShape, organizationId: OrganizationId, staged: StagedMedia, claim: RouteIdempotency) =>
  Effect.gen(function*() {
    if (claim.takeover) {
      const earlier = yield* Effect.option(media.get(organizationId, claim.resourceUuid))
      if (earlier._tag === "Some") {
        yield* media.discard(staged)
        return uploaded(earlier.value)
      }
    }
    return uploaded(yield* media.commit(organizationId, { ...staged, uuid: claim.resourceUuid }))
  })

/** The next part of a multipart body; the parser's failure (a 400 or 413) is the route's. */
const nextPart = (parts: AsyncIterator<MultipartPart>) =>
  Effect.tryPromise({
    try: () => parts.next(),
    catch: (error) => (error instanceof HttpFailure ? error : new HttpFailure({ status: 400, code: "invalid_body", message: "The request body could not be read" }))
  })

/** A failure of the file's own stream (the body over its limit, a client gone) as the parser's answer, else as it was. */
const sourceFailure = <E>(error: E): Effect.Effect<never, E | HttpFailure> =>
  error instanceof StorageError && error.cause instanceof HttpFailure ? Effect.fail(error.cause) : Effect.fail(error)

/** `GET /media` (docs/media.md "Records"): newest first, `limit` 1–100 (default 50), `cursor`, filters `source` and `status`. */
export const listMediaRoute = defineRoute({
  method: "GET",
  path: "/media",
  tag: "Media",
  summary: "List media",
  data: MediaListData,
  errors: ["media_not_configured"],
  query: {
    limit: { ...pageSize },
    cursor: { type: "uuid", optional: true },
    source: { type: "enum", values: ["inbound", "upload"], optional: true },
    status: { type: "enum", values: ["pending", "stored", "failed", "deleted"], optional: true }
  },
  handle: ({ auth, query }) =>
    Effect.gen(function*() {
      const media = yield* mediaService
      const limit = typeof query.limit === "number" ? query.limit : 50
      const page = yield* media.list(auth.organization.id, {
        per_page: limit,
        ...(typeof query.cursor === "string" ? { cursor: query.cursor.toLowerCase() } : {}),
        ...(typeof query.source === "string" ? { source: query.source as "inbound" | "upload" } : {}),
        ...(typeof query.status === "string" ? { status: query.status as "pending" | "stored" | "failed" | "deleted" } : {})
      })
      return {
        message: "Media retrieved",
        data: { media: page.items, pagination: { mode: "cursor" as const, limit, next_cursor: page.next_cursor, has_more: page.next_cursor !== null } }
      }
    })
})

/** `GET /media/{uuid}` (docs/media.md "Records"). */
export const getMediaRoute = defineRoute({
  method: "GET",
  path: "/media/:uuid",
  tag: "Media",
  summary: "Read a media record",
  data: MediaRecord,
  params: uuidParams,
  errors: ["media_not_configured"],
  handle: ({ auth, params }) =>
    Effect.gen(function*() {
      const media = yield* mediaService
      return { message: "Media retrieved", data: yield* media.get(auth.organization.id, uuidOf(params.uuid)) }
    })
})

/**
 * Reads a `Range` header against a file of `size` bytes: `undefined` for none, a multiple
 * or an unreadable one (the whole file is answered, as RFC 9110 allows); `"unsatisfiable"`
 * for a range outside the file; else the bytes, both ends included.
 */
export const byteRangeOf = (header: string | undefined, size: number): BlobRange | "unsatisfiable" | undefined => {
  if (header === undefined) return undefined
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim())
  if (match === null) return undefined
  const [, first, last] = match
  if (first === "" && last === "") return undefined
  if (first === "") {
    const suffix = Number(last)
    if (suffix === 0 || size === 0) return "unsatisfiable"
    return { start: Math.max(0, size - suffix), end: size - 1 }
  }
  const start = Number(first)
  const end = last === "" ? size - 1 : Math.min(Number(last), size - 1)
  if (!Number.isSafeInteger(start) || start >= size || (last !== "" && Number(last) < start)) return "unsatisfiable"
  return { start, end }
}

/** `Content-Disposition` with the file's name (ASCII fallback and RFC 5987 UTF-8). */
const dispositionOf = (filename: string | null, uuid: string): string => {
  const name = filename ?? uuid
  const ascii = name.replace(/[^\x20-\x7e]/g, "_").replace(/["\\]/g, "_")
  return `inline; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`
}

/** `GET /media/{uuid}/content` (docs/media.md "Downloading"): the bytes, `Range` → 206; or a signed link without a key. */
export const mediaContentRoute = defineRoute({
  method: "GET",
  path: "/media/:uuid/content",
  tag: "Media",
  summary: "Download a file",
  description:
    "The bytes, streamed, with `ETag` (the SHA-256), `Content-Disposition` and `Accept-Ranges`; `Range: bytes=…` answers 206. Also answers a signed link (`expires`, `signature`) without an API key.",
  params: uuidParams,
  signedLink: true,
  query: { expires: { type: "string", optional: true, max: 20 }, signature: { type: "string", optional: true, max: 100 } },
  content: ["application/octet-stream"],
  binary: { ranges: true },
  errors: ["media_not_ready", "media_unavailable", "range_not_satisfiable", "403 invalid_signature", "link_expired", "media_not_configured"],
  handle: ({ auth, params, query, requestHeader }) =>
    Effect.gen(function*() {
      const media = yield* mediaService
      const uuid = uuidOf<string>(params.uuid)
      let organizationId: OrganizationId
      if (auth !== NO_AUTHENTICATION) organizationId = auth.organization.id
      else {
        if (typeof query.signature !== "string" || typeof query.expires !== "string") {
          return yield* new HttpFailure({
            status: 401,
            code: "missing_api_key",
            message: "Missing API key: send Authorization: Bearer <API_KEY>, or use a signed link",
            headers: { "www-authenticate": 'Bearer realm="api"' }
          })
        }
        organizationId = yield* media.openLink(uuid, query.expires, query.signature)
      }
      const record = yield* media.get(organizationId, uuid)
      const range = record.status === "stored" && record.size !== null ? byteRangeOf(requestHeader("range"), record.size) : undefined
      if (range === "unsatisfiable") {
        return yield* new HttpFailure({
          status: 416,
          code: "range_not_satisfiable",
          message: `The range is outside the file's ${record.size} bytes`,
          headers: { "content-range": `bytes */${record.size}` }
        })
      }
      const { content } = yield* media.content(organizationId, uuid, range)
      const headers: Record<string, string> = {
        etag: `"${record.sha256}"`,
        "content-disposition": dispositionOf(record.filename, record.uuid),
        "accept-ranges": "bytes",
        "cache-control": "private, max-age=0",
        "x-content-type-options": "nosniff"
      }
      if (range !== undefined) headers["content-range"] = `bytes ${range.start}-${range.start + content.length - 1}/${content.size}`
      const answer: BinaryContent = {
        _tag: "BinaryContent",
        status: range === undefined ? 200 : 206,
        contentType: record.mime_type,
        length: content.length,
        stream: content.stream,
        headers
      }
      return answer
    }).pipe(
      Effect.catchIf((error): error is RecordNotFound => error instanceof RecordNotFound && auth === NO_AUTHENTICATION, () =>
        Effect.fail(new HttpFailure({ status: 403, code: "invalid_signature", message: "The media link's signature is not valid" })))
    )
})

/** `DELETE /media/{uuid}` (docs/media.md "Deleting"): the blob removed, the record answered `deleted`. */
export const deleteMediaRoute = defineRoute({
  method: "DELETE",
  path: "/media/:uuid",
  tag: "Media",
  summary: "Delete a file (the record stays)",
  data: MediaRecord,
  params: uuidParams,
  errors: ["media_not_configured"],
  handle: ({ auth, params }) =>
    Effect.gen(function*() {
      const media = yield* mediaService
      return { message: "Media deleted", data: yield* media.remove(auth.organization.id, uuidOf(params.uuid)) }
    })
})

/** `POST /media/{uuid}/links` (docs/media.md "Links"): `{expires_in?}` (1–3600 s, default 300) → `{url, expires_at}`. */
export const createMediaLinkRoute = defineRoute({
  method: "POST",
  path: "/media/:uuid/links",
  tag: "Media",
  summary: "Create a signed link to a file",
  data: MediaLinkData,
  params: uuidParams,
  body: { expires_in: { type: "number", integer: true, min: 1, max: 3_600, optional: true } },
  errors: ["invalid_input", "secret_key_not_configured", "media_not_configured"],
  handle: ({ auth, params, body, requestHeader, basePath }) =>
    Effect.gen(function*() {
      const { media, publicBaseUrl } = yield* Effect.flatMap(mediaService, (media) => Effect.map(HandlerMedia, (settings) => ({ media, publicBaseUrl: settings.publicBaseUrl })))
      const link = yield* media.createLink(auth.organization.id, uuidOf(params.uuid), (body as { expires_in?: number } | undefined)?.expires_in)
      const origin = publicBaseUrl?.replace(/\/+$/, "") ?? originOf(requestHeader)
      return { message: "Link created", data: { url: `${origin}${basePath}${link.path}`, expires_at: link.expires_at } }
    })
})

/** The request's origin: `X-Forwarded-Proto` (else http) and `Host`. */
const originOf = (header: (name: string) => string | undefined): string => {
  const proto = header("x-forwarded-proto")?.split(",")[0]?.trim() === "https" ? "https" : "http"
  return `${proto}://${header("host") ?? "localhost"}`
}

/** The media routes, in the order the OpenAPI document lists them. */
export const mediaRoutes = [uploadMediaRoute, listMediaRoute, getMediaRoute, mediaContentRoute, deleteMediaRoute, createMediaLinkRoute] as const

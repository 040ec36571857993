import { Effect } from "effect"
import {
  DEFAULT_GRAPH_TIMEOUT_MS,
  graphAnsweredStatus,
  type GraphApiOptions,
  graphSignal,
  graphUnreachable,
  graphUrl
} from "../channels/graphApi.js"
import { sameSha256 } from "../model/media.js"
import { BlobStore } from "../storage/BlobStore.js"

// One attempt to bring a customer's file from Meta into the blob store (docs/media.md
// "Inbound"): the media look-up, the download streamed into the blob store while it is
// counted and hashed, and the checks of size and SHA-256 — answered as an outcome the fetch
// loop records, never as a failure.

/**
 * What one fetch attempt needs:
 * - `providerMediaId`: Meta's media id (from the message webhook);
 * - `channel`: the number the file came to and its access token (sent as
 *   `Authorization: Bearer`, never logged);
 * - `declaredSha256`: the SHA-256 the webhook declared (base64 or hex), or `null`;
 * - `maxBytes`: the most bytes to accept (100 MiB, or less under a plan limit);
 * - `blobKey`: where to write the bytes (a temporary key of this attempt: the caller moves
 *   the blob into place once it recorded the outcome);
 * - `downloadIdleMs`: how long the download may stall without a byte (default 30 000 ms).
 *
 * @category media
 */
export interface MediaFetchRequest {
  readonly providerMediaId: string
  readonly channel: { readonly phone_number_id: string; readonly access_token: string }
  readonly declaredSha256: string | null
  readonly maxBytes: number
  readonly blobKey: string
  readonly downloadIdleMs?: number
}

/**
 * How one fetch attempt ended (docs/media.md "Inbound"):
 * - `Fetched`: the bytes are under `blobKey`: `size` (bytes), `sha256` (hex) and Meta's
 *   `mimeType`;
 * - `Transient`: to be tried again later — a network error, a timeout, 429, 5xx, a refused
 *   token, a download URL that lapsed (404/410), a connection cut mid-way, a blob store that
 *   failed; `lookupFailed` when the look-up itself failed (it counts against the channel's
 *   budget of failed look-ups);
 * - `Integrity`: the bytes did not match Meta's size or SHA-256 (nothing kept; tried again
 *   a few times, then `failed` `integrity`);
 * - `NotFound`: Meta does not know the id (400 or 404 to the look-up): `failed` `not_found`;
 * - `TooLarge`: more than `maxBytes` (by Meta's `file_size`, or while downloading): `failed`
 *   `too_large` or `plan_limit`, as the caller's limit was.
 *
 * Each carries a `reason` for logs (never the token).
 *
 * @category media
 */
export type MediaFetchOutcome =
  | { readonly _tag: "Fetched"; readonly size: number; readonly sha256: string; readonly mimeType: string | null }
  | { readonly _tag: "Transient"; readonly reason: string; readonly lookupFailed: boolean }
  | { readonly _tag: "Integrity"; readonly reason: string }
  | { readonly _tag: "NotFound"; readonly reason: string }
  | { readonly _tag: "TooLarge"; readonly reason: string }

/** What Meta's media look-up answers (`GET /{media-id}`). */
interface MediaLookup {
  readonly url: string
  readonly mime_type: string | null
  readonly sha256: string | null
  readonly file_size: number | null
}

const transient = (reason: string, lookupFailed: boolean): MediaFetchOutcome => ({ _tag: "Transient", reason, lookupFailed })

/**
 * Runs one fetch attempt (docs/media.md "Inbound"): asks Meta for the media's URL, refuses
 * a `file_size` over `maxBytes` before downloading, downloads with the channel's token,
 * streaming into the {@link BlobStore} under `blobKey` (never the whole file in memory),
 * then compares the size with Meta's `file_size` and the SHA-256 with Meta's and the
 * webhook's (hex or base64). Whatever goes wrong is an outcome, never a failure; after any
 * outcome but `Fetched`, nothing is left under `blobKey`.
 *
 * @category media
 */
export const fetchMedia = (
  request: MediaFetchRequest,
  options: GraphApiOptions
): Effect.Effect<MediaFetchOutcome, never, BlobStore> =>
  Effect.flatMap(lookUp(request, options), (looked) => {
    if ("_tag" in looked) return Effect.succeed(looked)
    if (looked.file_size !== null && looked.file_size > request.maxBytes) {
      return Effect.succeed<MediaFetchOutcome>({ _tag: "TooLarge", reason: `Meta's file_size ${looked.file_size} is over ${request.maxBytes} bytes` })
    }
    return download(request, options, looked)
  })

/** The media look-up: its answer, or the outcome that ends the attempt. */
const lookUp = (request: MediaFetchRequest, options: GraphApiOptions): Effect.Effect<MediaLookup | MediaFetchOutcome> =>
  Effect.promise(async (signal): Promise<MediaLookup | MediaFetchOutcome> => {
    let response: Response
    try {
      response = await fetch(graphUrl(options, request.providerMediaId), {
        headers: { authorization: `Bearer ${request.channel.access_token}` },
        signal: graphSignal(options, signal)
      })
    } catch (error) {
      return transient(graphUnreachable(options, error), true)
    }
    const body = (await response.json().catch(() => ({}))) as Record<string, unknown>
    if (response.status === 400 || response.status === 404) {
      const error = body.error as { code?: unknown } | undefined
      // 100 is Meta's "unknown object"; 131052 and other codes on a 400 are the media's own refusals.
      return { _tag: "NotFound", reason: `${graphAnsweredStatus(options, response.status)} to the media look-up (code ${String(error?.code ?? "none")})` }
    }
    if (!response.ok) return transient(`${graphAnsweredStatus(options, response.status)} to the media look-up`, true)
    if (typeof body.url !== "string" || !/^https?:\/\//.test(body.url)) {
      return transient("Meta's media look-up answered no http(s) url", true)
    }
    const size = typeof body.file_size === "number" ? body.file_size : typeof body.file_size === "string" ? Number(body.file_size) : NaN
    return {
      url: body.url,
      mime_type: typeof body.mime_type === "string" ? body.mime_type : null,
      sha256: typeof body.sha256 === "string" ? body.sha256 : null,
      file_size: Number.isSafeInteger(size) && size >= 0 ? size : null
    }
  })

/** The download into the blob store, then the checks; removes what it wrote unless `Fetched`. */
const download = (
  request: MediaFetchRequest,
  options: GraphApiOptions,
  looked: MediaLookup
): Effect.Effect<MediaFetchOutcome, never, BlobStore> =>
  Effect.flatMap(BlobStore, (blobs) => {
    const idleMs = request.downloadIdleMs ?? Math.max(DEFAULT_GRAPH_TIMEOUT_MS, 30_000)
    const attempt = Effect.flatMap(
      Effect.promise(async (signal) => {
        const stall = new AbortController()
        let timer = setTimeout(() => stall.abort(), idleMs)
        const touch = () => {
          clearTimeout(timer)
          timer = setTimeout(() => stall.abort(), idleMs)
        }
        try {
          const response = await fetch(looked.url, {
            headers: { authorization: `Bearer ${request.channel.access_token}` },
            signal: AbortSignal.any([signal, stall.signal])
          })
          touch()
          return { response, touch, done: () => clearTimeout(timer) }
        } catch (error) {
          clearTimeout(timer)
          return { error }
        }
      }),
      (answered): Effect.Effect<MediaFetchOutcome> => {
        if ("error" in answered) return Effect.succeed(transient(`the media download could not be made (${graphUnreachable(options, answered.error)})`, false))
        const { response, touch, done } = answered
        if (!response.ok || response.body === null) {
          done()
          void response.body?.cancel().catch(() => undefined)
          // 404/410: the URL's 5 minutes are over (a new look-up gives a new one); others pass too.
          return Effect.succeed(transient(`the media download answered HTTP ${response.status}`, false))
        }
        const body = response.body
        async function* bytes(): AsyncGenerator<Uint8Array> {
          for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
            touch()
            yield chunk
          }
        }
        return blobs.put(request.blobKey, bytes(), { maxBytes: request.maxBytes, ...(looked.mime_type === null ? {} : { contentType: looked.mime_type }) }).pipe(
          Effect.ensuring(Effect.sync(done)),
          Effect.map((written): MediaFetchOutcome => checked(request, looked, written)),
          Effect.catchAll((error) =>
            Effect.succeed<MediaFetchOutcome>(
              error._tag === "BlobTooLarge"
                ? { _tag: "TooLarge", reason: `the download passed ${request.maxBytes} bytes` }
                : transient(`the media download was cut short or could not be stored (${describe(error.cause)})`, false)
            )
          )
        )
      }
    )
    return Effect.tap(attempt, (outcome) => (outcome._tag === "Fetched" ? Effect.void : Effect.ignore(blobs.delete(request.blobKey))))
  })

/** `Fetched`, or `Integrity` when the size or a declared SHA-256 disagrees with the bytes. */
const checked = (
  request: MediaFetchRequest,
  looked: MediaLookup,
  written: { readonly size: number; readonly sha256: string }
): MediaFetchOutcome => {
  if (looked.file_size !== null && looked.file_size !== written.size) {
    return { _tag: "Integrity", reason: `${written.size} bytes received, Meta's file_size is ${looked.file_size}` }
  }
  for (const [who, declared] of [["the look-up", looked.sha256], ["the webhook", request.declaredSha256]] as const) {
    if (declared !== null && !sameSha256(written.sha256, declared)) {
      return { _tag: "Integrity", reason: `the bytes' SHA-256 ${written.sha256} is not the one ${who} declared` }
    }
  }
  return { _tag: "Fetched", size: written.size, sha256: written.sha256, mimeType: looked.mime_type }
}

const describe = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

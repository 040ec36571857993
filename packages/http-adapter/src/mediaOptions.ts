import { Effect, Layer } from "effect"
import {
  BlobStore,
  BlobStoreError,
  type BlobStoreService,
  Media,
  MEDIA_FETCH_RETRY_DELAYS_MS,
  MediaFetchSettings,
  type GraphApiOptions
} from "@switchboard/core"
import { HandlerMedia } from "./settings.js"

/**
 * The media of a handler (docs/media.md, docs/http-adapter.md "Media"):
 * - `store`: the blob store's Layer (`FileBlobStore.layer({ directory })`,
 *   `S3BlobStore.layer(…)`, `MemoryBlobStore.layer`), built once per handler;
 * - `fetch`: the inbound fetches' `retryDelaysMs` (default 30 s, 2 min, 10 min, 1 h, 6 h),
 *   `retentionDays` (files stored longer ago are deleted; default: kept) and `leaseMs`
 *   (how long a fetch holds its job, renewed every third of it while it downloads; a fetch
 *   whose process died starts again elsewhere once it lapses; default 60 000, at least
 *   1 000);
 * - `publicBaseUrl`: the origin signed links are built on (`PUBLIC_BASE_URL`; default the
 *   request's `Host`).
 *
 * Without it the media routes answer 503 `media_not_configured` and inbound files stay
 * `pending` (a handler configured later fetches them while Meta keeps them: 7 days).
 *
 * @category media
 */
export interface HandlerMediaOptions {
  readonly store: Layer.Layer<BlobStore, unknown>
  readonly fetch?: { readonly retryDelaysMs?: ReadonlyArray<number>; readonly retentionDays?: number; readonly leaseMs?: number }
  readonly publicBaseUrl?: string
}

/** The shortest lease of a media fetch accepted, in ms (renewed every third of it). */
const MIN_FETCH_LEASE_MS = 1_000

/** The blob store when none is configured: never called (the routes answer 503 first, no fetch loop runs). */
const noBlobStore: BlobStoreService = (() => {
  const refused = (operation: string) => Effect.fail(new BlobStoreError({ operation, cause: new Error("no blob store is configured") }))
  return {
    put: () => refused("blobs.put"),
    get: () => refused("blobs.get"),
    head: () => refused("blobs.head"),
    delete: () => refused("blobs.delete"),
    move: () => refused("blobs.move")
  }
})()

/**
 * The Layers of a handler's media: the {@link BlobStore} (the given one, built once, or one
 * that is never called), the {@link HandlerMedia} of the routes, and the fetch settings.
 * Throws a `TypeError` on a malformed option.
 *
 * @internal
 */
export const mediaLayerOf = (options: HandlerMediaOptions | undefined, graphApi: GraphApiOptions | undefined) => {
  const delays = options?.fetch?.retryDelaysMs
  if (delays !== undefined && !(Array.isArray(delays) && delays.length > 0 && delays.every((delay) => typeof delay === "number" && Number.isFinite(delay) && delay >= 0))) {
    throw new TypeError("media.fetch.retryDelaysMs must be a non-empty list of delays in milliseconds (finite numbers ≥ 0)")
  }
  const retention = options?.fetch?.retentionDays
  if (retention !== undefined && !(typeof retention === "number" && Number.isFinite(retention) && retention > 0)) {
    throw new TypeError("media.fetch.retentionDays must be a positive number of days")
  }
  const leaseMs = options?.fetch?.leaseMs
  if (leaseMs !== undefined && !(typeof leaseMs === "number" && Number.isFinite(leaseMs) && leaseMs >= MIN_FETCH_LEASE_MS)) {
    throw new TypeError(`media.fetch.leaseMs must be a number of milliseconds of at least ${MIN_FETCH_LEASE_MS}`)
  }
  const blobs = options === undefined ? Layer.succeed(BlobStore, noBlobStore) : options.store
  const handlerMedia = options === undefined
    ? Layer.succeed(HandlerMedia, { media: undefined, publicBaseUrl: undefined })
    : Layer.effect(HandlerMedia, Effect.map(Media, (media) => ({ media, publicBaseUrl: options.publicBaseUrl }))).pipe(Layer.provide(Media.layer))
  const settings = MediaFetchSettings.layer({
    graphApi: graphApi ?? {},
    retryDelaysMs: delays ?? MEDIA_FETCH_RETRY_DELAYS_MS,
    ...(leaseMs === undefined ? {} : { leaseMs })
  })
  return Layer.merge(handlerMedia, settings).pipe(Layer.provideMerge(blobs))
}

import { Clock, Context, Effect, Layer, Option, Random } from "effect"
import { Channels } from "../channels/Channels.js"
import type { GraphApiOptions } from "../channels/graphApi.js"
import { describeCause } from "../internal/describeCause.js"
import { type DispatchWakeService, ignoringSendOutcomes } from "../dispatch/DispatchWake.js"
import { type LeasedLoopStatus, type LeasedQueue, runLeasedPass, runLeasedQueue } from "../dispatch/LeasedQueue.js"
import type { ChannelId } from "../model/channels.js"
import {
  MAX_MEDIA_BYTES,
  MEDIA_FETCH_RETRY_DELAYS_MS,
  MEDIA_INTEGRITY_RETRIES,
  mediaBlobKey,
  mediaLookupPausedUntil,
  nextMediaFetchAt,
  temporaryMediaBlobKey
} from "../model/media.js"
import type { OrganizationId } from "../model/organizations.js"
import { SecureRandom } from "../random/SecureRandom.js"
import { BlobStore } from "../storage/BlobStore.js"
import type { StorageError } from "../storage/errors.js"
import type { MediaFetchJob, MediaFetchRecord } from "../storage/MediaRepository.js"
import { Storage } from "../storage/Storage.js"
import { fetchMedia, type MediaFetchOutcome } from "./fetchMedia.js"

// The inbound media fetch loop (docs/media.md "Inbound"): the fetch jobs the webhook wrote
// with each media message, as a LeasedQueue run by the leased-dispatch loop — claimed under
// a 60 s lease renewed every 20 s while a download runs, one attempt each (fetchMedia), the
// bytes moved into place by the lease holder before it records, retried on the media
// schedule until the provider's id lapses.

/** How long a claim holds a fetch job, in ms (renewed every third of it while it runs): 60 000. @category media */
export const MEDIA_FETCH_LEASE_MS = 60_000

/** Most fetches the loop runs at once: 4. @category media */
export const MEDIA_FETCH_CONCURRENCY = 4

/** The longest sleep of the fetch loop when nothing is known to be due, in ms: 1 000. @category media */
export const MEDIA_FETCH_POLL_INTERVAL_MS = 1_000

/**
 * Settings of the media fetches (docs/media.md "Inbound"):
 * - `graphApi`: where Meta's Graph API is (the look-up; the download URL it answers is
 *   fetched whatever its host);
 * - `retryDelaysMs`: the waits after each passing failure (default 30 s, 2 min, 10 min,
 *   1 h, then every 6 h; `SWITCHBOARD_MEDIA_RETRY_DELAYS_MS`), each stretched by a jitter
 *   of ×0.9–1.1;
 * - `downloadIdleMs`: how long a download may stall without a byte (default 30 000 ms);
 * - `leaseMs`: how long a claim holds a fetch job, renewed every third of it while the
 *   download runs (default {@link MEDIA_FETCH_LEASE_MS}, 60 000;
 *   `SWITCHBOARD_MEDIA_FETCH_LEASE_MS`): the fetch of a process that died starts again in
 *   another process, or the restarted one, once its lease lapses.
 *
 * @category media
 */
export interface MediaFetchSettingsService {
  readonly graphApi: GraphApiOptions
  readonly retryDelaysMs: ReadonlyArray<number>
  readonly downloadIdleMs?: number
  readonly leaseMs?: number
}

/**
 * Tag of the {@link MediaFetchSettingsService}; its default is Meta's Graph API and the
 * default schedule.
 *
 * @category media
 */
export class MediaFetchSettings extends Context.Reference<MediaFetchSettings>()("@switchboard/core/MediaFetchSettings", {
  defaultValue: (): MediaFetchSettingsService => ({ graphApi: {}, retryDelaysMs: MEDIA_FETCH_RETRY_DELAYS_MS })
}) {
  /** A Layer of these settings. */
  static readonly layer = (settings: MediaFetchSettingsService): Layer.Layer<MediaFetchSettings> =>
    Layer.succeed(MediaFetchSettings, settings)
}

/**
 * What one attempt of a fetch job produced: the record to write, when it was made
 * (`attemptedAt`, ISO 8601), the blob it left (`blobKey`, under the media's own key when
 * `Stored`), whether its look-up failed (it counts against the channel's budget), and the
 * `reason` of a failure for the logs (never a token).
 *
 * @category media
 */
export interface MediaFetchAttempt {
  readonly record: MediaFetchRecord
  readonly attemptedAt: string
  readonly lookupFailed: boolean
  readonly reason: string | null
}

/** The failed look-ups of each channel in this process (epoch ms), for the budget of §"Inbound". */
const failedLookups = new Map<string, Array<number>>()

/** The attempt: the checks before any call, then one fetch, mapped to the record to write. */
const attemptFetch = (job: MediaFetchJob) =>
  Effect.gen(function*() {
    const settings = yield* MediaFetchSettings
    const nowMs = yield* Clock.currentTimeMillis
    const attemptedAt = new Date(nowMs).toISOString()
    const expiresAtMs = Date.parse(job.expires_at)
    const done = (record: MediaFetchRecord, reason: string | null = null, lookupFailed = false): MediaFetchAttempt => ({
      record,
      attemptedAt,
      lookupFailed,
      reason
    })
    if (nowMs >= expiresAtMs) return done({ _tag: "Failed", code: "expired" }, "the provider's media id lapsed")
    const retry = (reason: string, lookupFailed: boolean, integrity: boolean) =>
      Effect.map(Random.nextRange(0.9, 1.1), (jitter): MediaFetchAttempt => {
        const attempts = job.attempts + 1
        const integrityFailures = job.integrity_failures + (integrity ? 1 : 0)
        if (integrityFailures > MEDIA_INTEGRITY_RETRIES) return done({ _tag: "Failed", code: "integrity" }, reason)
        const next = nextMediaFetchAt(attempts, nowMs, expiresAtMs, settings.retryDelaysMs)
        if (next === null) return done({ _tag: "Failed", code: "expired" }, reason, lookupFailed)
        const at = Math.min(nowMs + Math.round((next - nowMs) * jitter), expiresAtMs)
        return done({ _tag: "Retry", attempts, integrity_failures: integrityFailures, next_fetch_at: new Date(at).toISOString() }, reason, lookupFailed)
      })
    const channels = yield* Channels
    const channel = yield* channels.getWithToken(job.media.organization_id, job.channel_uuid as ChannelId).pipe(Effect.either)
    if (channel._tag === "Left") {
      if (channel.left._tag === "RecordNotFound") return done({ _tag: "Failed", code: "channel_removed" }, "the channel was removed")
      return yield* retry(`the channel's token cannot be opened (${channel.left._tag})`, false, false)
    }
    const storage = yield* Storage
    const bytesLimit = yield* bytesLimitOf(job.media.organization_id)
    const room = bytesLimit === null ? MAX_MEDIA_BYTES : Math.max(0, bytesLimit - (yield* storage.media.bytesUsed(job.media.organization_id)))
    const maxBytes = Math.min(MAX_MEDIA_BYTES, room)
    const attempt = yield* (yield* SecureRandom).uuid()
    const temporaryKey = temporaryMediaBlobKey(job.media.uuid, attempt)
    const outcome: MediaFetchOutcome = yield* fetchMedia(
      {
        providerMediaId: job.provider_media_id,
        channel: { phone_number_id: channel.right.channel.phone_number_id, access_token: channel.right.access_token },
        declaredSha256: job.declared_sha256,
        maxBytes,
        blobKey: temporaryKey,
        ...(settings.downloadIdleMs === undefined ? {} : { downloadIdleMs: settings.downloadIdleMs })
      },
      settings.graphApi
    )
    switch (outcome._tag) {
      case "Fetched": {
        const blobs = yield* BlobStore
        const key = mediaBlobKey(job.media.organization_id, job.media.uuid)
        const moved = yield* Effect.either(blobs.move(temporaryKey, key))
        if (moved._tag === "Left") {
          yield* Effect.ignore(blobs.delete(temporaryKey))
          return yield* retry(`the fetched file could not be moved into place (${moved.left._tag})`, false, false)
        }
        return done({ _tag: "Stored", blob_key: key, size: outcome.size, sha256: outcome.sha256, mime_type: outcome.mimeType, bytesLimit })
      }
      case "Transient":
        return yield* retry(outcome.reason, outcome.lookupFailed, false)
      case "Integrity":
        return yield* retry(outcome.reason, false, true)
      case "NotFound":
        return done({ _tag: "Failed", code: "not_found" }, outcome.reason)
      case "TooLarge":
        return done({ _tag: "Failed", code: maxBytes < MAX_MEDIA_BYTES ? "plan_limit" : "too_large" }, outcome.reason)
    }
  })

/** The organization's `media_bytes_limit` (`null`: none, or no such organization). */
const bytesLimitOf = (organizationId: OrganizationId): Effect.Effect<number | null, StorageError, Storage> =>
  Effect.flatMap(Storage, (storage) =>
    Effect.map(storage.organizations.findById(organizationId), (found) =>
      Option.match(found, { onNone: () => null, onSome: (organization) => organization.plan.media_bytes_limit ?? null })))

/**
 * Records an attempt under the job's lease: a settled media's blob is removed when the
 * record was not kept (`plan_limit`, a lost lease) and the channel's look-up budget is
 * counted, postponing its fetches for an hour once spent.
 */
const recordFetchAttempt = (job: MediaFetchJob, attempt: MediaFetchAttempt) =>
  Effect.gen(function*() {
    const storage = yield* Storage
    const blobs = yield* BlobStore
    const recorded = yield* storage.media.recordFetch(job.media.uuid, job.lease, attempt.record, attempt.attemptedAt)
    const annotations = { organization_id: job.media.organization_id, media_uuid: job.media.uuid }
    const { record } = attempt
    if (record._tag === "Stored") {
      const kept = recorded._tag === "Settled" && recorded.media.status === "stored" && recorded.media.blob_key === record.blob_key
      if (!kept) {
        // Another holder may have stored the same bytes under the same key: remove them only
        // when the record does not name them.
        const now = yield* storage.media.getForLink(job.media.uuid)
        const named = Option.exists(now, (media) => media.status === "stored" && media.blob_key === record.blob_key)
        if (!named) yield* Effect.ignore(blobs.delete(record.blob_key))
      }
    }
    if (recorded._tag === "Lost") {
      yield* Effect.logWarning("media fetch not recorded: its lease was taken over or the media changed").pipe(Effect.annotateLogs(annotations))
      return false
    }
    if (attempt.reason !== null) {
      yield* Effect.logWarning("media fetch failed").pipe(
        Effect.annotateLogs({ ...annotations, outcome: attempt.record._tag, reason: attempt.reason })
      )
    }
    if (attempt.lookupFailed) {
      const nowMs = Date.parse(attempt.attemptedAt)
      const times = [...(failedLookups.get(job.channel_uuid) ?? []), nowMs].slice(-20)
      failedLookups.set(job.channel_uuid, times)
      const pausedUntil = mediaLookupPausedUntil(times, nowMs)
      if (pausedUntil !== null) {
        yield* storage.media.postponeChannelFetches(job.channel_uuid, new Date(pausedUntil).toISOString())
        yield* Effect.logWarning("media fetches of a channel paused for an hour: too many failed look-ups").pipe(
          Effect.annotateLogs({ channel_uuid: job.channel_uuid })
        )
      }
    }
    return true
  })

/**
 * The inbound media fetch jobs as a {@link LeasedQueue} (docs/media.md "Inbound"): `claim`
 * is `MediaRepository.claimFetches`, `run` one attempt (the look-up and the download into
 * a temporary blob, moved under the media's key when complete and checked), `record`
 * `recordFetch` under the claim's lease; the lease is renewed while a download runs.
 *
 * @category media
 */
export const mediaFetchQueue: LeasedQueue<
  MediaFetchJob,
  MediaFetchAttempt,
  StorageError,
  Storage | BlobStore | Channels | SecureRandom
> = {
  name: "media fetcher",
  claim: (now, leaseUntil, limit) =>
    Effect.flatMap(Storage, (storage) =>
      storage.media.claimFetches(new Date(now).toISOString(), new Date(leaseUntil).toISOString(), limit)),
  run: attemptFetch,
  record: recordFetchAttempt,
  renew: (job, leaseUntil) =>
    Effect.flatMap(Storage, (storage) => storage.media.renewFetch(job.media.uuid, job.lease, new Date(leaseUntil).toISOString())),
  dueAgainAt: ({ record }) => (record._tag === "Retry" ? Date.parse(record.next_fetch_at) : null),
  nextDueAt: () =>
    Effect.flatMap(Storage, (storage) =>
      Effect.map(storage.media.nextFetchDueAt(), Option.match({ onNone: () => null, onSome: (at) => Date.parse(at) }))),
  span: {
    name: "MediaFetcher.fetch",
    attributes: (job) => ({ "switchboard.organization_id": job.media.organization_id, "switchboard.media_id": job.media.uuid })
  }
}

/**
 * One pass of the fetch queue at `now`: claims up to `batchSize` (default 4) due fetches,
 * runs and records them. Answers how many ended in each state. For a host or a test that
 * fetches step by step; the loop is {@link runMediaFetcher}.
 *
 * @category media
 */
export const fetchMediaOnce = (now: Date, batchSize: number = MEDIA_FETCH_CONCURRENCY) =>
  Effect.flatMap(MediaFetchSettings, (settings) => runLeasedPass(mediaFetchQueue, now.getTime(), leaseMsOf(settings), batchSize)).pipe(
    Effect.map((ends) => ({
      claimed: ends.length,
      stored: ends.filter((end) => end._tag === "Recorded" && end.outcome.record._tag === "Stored").length,
      retrying: ends.filter((end) => end._tag === "Recorded" && end.outcome.record._tag === "Retry").length,
      failed: ends.filter((end) => end._tag === "Recorded" && end.outcome.record._tag === "Failed").length,
      lost: ends.filter((end) => end._tag !== "Recorded").length
    }))
  )

/** The lease of the fetch jobs: the settings' `leaseMs`, else {@link MEDIA_FETCH_LEASE_MS}. */
const leaseMsOf = (settings: MediaFetchSettingsService): number => settings.leaseMs ?? MEDIA_FETCH_LEASE_MS

/** How often the loop removes the blobs of deleted media: every minute (and at its start). */
export const BLOB_REMOVAL_INTERVAL_MS = 60_000

/**
 * Removes the blobs of `deleted` media (a `DELETE`, a contact's deletion, the retention),
 * 100 at a time, and forgets each once removed; a failure leaves it for the next pass.
 * Answers how many were removed.
 *
 * @category media
 */
export const removeDeletedBlobs: Effect.Effect<number, StorageError, Storage | BlobStore> = Effect.gen(function*() {
  const storage = yield* Storage
  const blobs = yield* BlobStore
  let removed = 0
  for (;;) {
    const batch = yield* storage.media.blobsToRemove(100)
    let progressed = 0
    for (const blob of batch) {
      const deleted = yield* Effect.either(blobs.delete(blob.blob_key))
      if (deleted._tag === "Left") continue
      yield* storage.media.blobRemoved(blob.uuid)
      progressed++
    }
    removed += progressed
    if (batch.length < 100 || progressed === 0) return removed
  }
})

/**
 * Options of {@link runMediaFetcher}: `retentionDays` (`MEDIA_RETENTION_DAYS`; absent:
 * keep every file), `wake` and `status` as the other loops', `pollIntervalMs` (default 1 s).
 *
 * @category media
 */
export interface MediaFetcherOptions {
  readonly retentionDays?: number
  readonly pollIntervalMs?: number
  readonly wake?: DispatchWakeService
  readonly status?: LeasedLoopStatus
}

/**
 * The media loop (docs/media.md "Inbound", "Lifetime"): {@link mediaFetchQueue} run by
 * `runLeasedQueue` (4 at once, leases of `MediaFetchSettings.leaseMs`, default 60 s,
 * renewed every third of it), and every minute the
 * retention (media stored more than `retentionDays` ago marked `deleted`) and the removal
 * of deleted media's blobs. Runs until interrupted and never fails (errors are logged).
 *
 * @category media
 */
export const runMediaFetcher = (
  options: MediaFetcherOptions = {}
): Effect.Effect<never, never, Storage | BlobStore | Channels | SecureRandom> =>
  Effect.scoped(
    Effect.zipRight(
      Effect.forkScoped(Effect.forever(Effect.zipRight(housekeeping(options.retentionDays), Effect.sleep(BLOB_REMOVAL_INTERVAL_MS)))),
      Effect.flatMap(MediaFetchSettings, (settings) =>
        runLeasedQueue(mediaFetchQueue, {
          leaseMs: leaseMsOf(settings),
          concurrency: MEDIA_FETCH_CONCURRENCY,
          pollIntervalMs: options.pollIntervalMs ?? MEDIA_FETCH_POLL_INTERVAL_MS,
          // Not woken by a send's recorded outcome: it never makes a fetch due.
          ...(options.wake === undefined ? {} : { wake: ignoringSendOutcomes(options.wake) }),
          ...(options.status === undefined ? {} : { status: options.status })
        }))
    )
  )

/** Most media the retention marks deleted in one pass. */
const RETENTION_BATCH = 1_000

/** The retention, then the removal of deleted blobs; failures logged. */
const housekeeping = (retentionDays: number | undefined): Effect.Effect<void, never, Storage | BlobStore> =>
  Effect.gen(function*() {
    const storage = yield* Storage
    const nowMs = yield* Clock.currentTimeMillis
    if (retentionDays !== undefined) {
      const before = new Date(nowMs - retentionDays * 86_400_000).toISOString()
      yield* storage.media.expireBefore(before, new Date(nowMs).toISOString(), RETENTION_BATCH)
    }
    yield* removeDeletedBlobs
  }).pipe(
    Effect.catchAllCause((cause) =>
      Effect.logWarning("media housekeeping failed").pipe(Effect.annotateLogs({ error: describeCause(cause) }))
    )
  )

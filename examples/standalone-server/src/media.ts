import { dirname, join, resolve } from "node:path"
import { Config, ConfigError, Either, Option } from "effect"
import { FileBlobStore, MemoryBlobStore } from "@switchboard/core"
import type { HandlerMediaOptions } from "@switchboard/http-adapter"
import { parseS3Url } from "@switchboard/blob-s3/url"
import type { DatabaseLocation } from "./config.js"
import { layerOnImport } from "./lazyLayer.js"
import { delayListConfig, millisecondsConfig } from "./webhooks.js"

/**
 * Where the standalone server keeps media (docs/media.md "Blob stores", docs/configuration.md):
 * - `MEDIA_URL=s3://bucket/prefix`: an S3-compatible bucket (the AWS SDK's own variables:
 *   `AWS_ENDPOINT_URL`, `AWS_REGION`, `AWS_ACCESS_KEY_ID`…; path-style) — the store for
 *   several instances;
 * - else `MEDIA_DIR`, a directory (default `media` beside the SQLite file, `./data/media`
 *   for PostgreSQL and MongoDB; the memory store with `DATABASE_URL=memory:`);
 * - `MEDIA_RETENTION_DAYS`: files stored longer ago are deleted (records stay `deleted`;
 *   default: kept);
 * - `SWITCHBOARD_MEDIA_RETRY_DELAYS_MS`: the waits between inbound fetch attempts, a
 *   comma-separated list of milliseconds (default `30000,120000,600000,3600000,21600000`);
 * - `SWITCHBOARD_MEDIA_FETCH_LEASE_MS`: how long a fetch holds its job, renewed every third
 *   of it while it downloads; the fetch of a process that died starts again in another
 *   process (or the restarted one) once it lapses (default `60000`, at least `1000`);
 * - `PUBLIC_BASE_URL`: the origin of signed links (default the request's `Host`).
 *
 * @category config
 */
export const mediaConfig = (database: DatabaseLocation): Config.Config<HandlerMediaOptions> =>
  Config.all({
    url: Config.option(Config.nonEmptyString("MEDIA_URL")),
    directory: Config.option(Config.nonEmptyString("MEDIA_DIR")),
    retentionDays: Config.option(Config.number("MEDIA_RETENTION_DAYS")),
    retryDelaysMs: delayListConfig("SWITCHBOARD_MEDIA_RETRY_DELAYS_MS"),
    leaseMs: millisecondsConfig("SWITCHBOARD_MEDIA_FETCH_LEASE_MS"),
    publicBaseUrl: Config.option(Config.nonEmptyString("PUBLIC_BASE_URL"))
  }).pipe(
    Config.mapOrFail(({ directory, leaseMs, publicBaseUrl, retentionDays, retryDelaysMs, url }) => {
      if (Option.isSome(retentionDays) && !(retentionDays.value > 0)) {
        return Either.left(ConfigError.InvalidData(["MEDIA_RETENTION_DAYS"], "MEDIA_RETENTION_DAYS must be a positive number of days"))
      }
      if (Option.isSome(leaseMs) && leaseMs.value < 1_000) {
        return Either.left(ConfigError.InvalidData(["SWITCHBOARD_MEDIA_FETCH_LEASE_MS"], "SWITCHBOARD_MEDIA_FETCH_LEASE_MS must be at least 1000 milliseconds"))
      }
      let store: HandlerMediaOptions["store"]
      if (Option.isSome(url)) {
        const location = Either.try(() => parseS3Url(url.value))
        if (Either.isLeft(location)) {
          return Either.left(ConfigError.InvalidData(["MEDIA_URL"], `MEDIA_URL must be s3://bucket/prefix (${String(location.left)})`))
        }
        // The AWS SDK (~0.35 s of CPU to load) only when a bucket is configured.
        const s3Url = url.value
        store = layerOnImport(() => import("@switchboard/blob-s3"), ({ S3BlobStore }) => S3BlobStore.layer({ url: s3Url }))
      } else if (Option.isNone(directory) && database._tag === "Memory") {
        store = MemoryBlobStore.layer
      } else {
        const chosen = Option.getOrElse(directory, () => (database._tag === "Sqlite" ? join(dirname(database.filename), "media") : "./data/media"))
        store = FileBlobStore.layer({ directory: resolve(chosen) })
      }
      const fetch = {
        ...Option.match(retryDelaysMs, { onNone: () => ({}), onSome: (value) => ({ retryDelaysMs: value }) }),
        ...Option.match(retentionDays, { onNone: () => ({}), onSome: (value) => ({ retentionDays: value }) }),
        ...Option.match(leaseMs, { onNone: () => ({}), onSome: (value) => ({ leaseMs: value }) })
      }
      return Either.right({
        store,
        fetch,
        ...Option.match(publicBaseUrl, { onNone: () => ({}), onSome: (value) => ({ publicBaseUrl: value }) })
      })
    })
  )

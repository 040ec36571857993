import { Config, type ConfigError, Effect, Layer, type Scope } from "effect"
import type { Collection, Db, MongoClient } from "mongodb"
import { RateLimitStore, type RateLimitIncrement, type RateLimitStoreService, type StorageError } from "@switchboard/core"
import { connect, DEFAULT_DATABASE, databaseFromUrl, databaseOfHandle } from "./internal/connection.js"
import type { RateBucketDocument } from "./internal/documents.js"
import { attempt, isDuplicateKey } from "./internal/driver.js"
import { rateBucketIncrement } from "./internal/queries.js"
import { RATE_BUCKET_INDEXES, RATE_BUCKETS } from "./internal/schema.js"

/**
 * Options of the MongoDB rate-limit store: `url` (a `mongodb://` connection string,
 * usually the storage's), `database` (default the one in `url`'s path, else
 * `"switchboard"`), `serverSelectionTimeoutMS` (default the URL's own, else 10 000 ms).
 *
 * @category models
 */
export interface MongoRateLimitStoreOptions {
  readonly url: string
  readonly database?: string
  readonly serverSelectionTimeoutMS?: number
}

/**
 * Connects to `options.url`, creates the TTL index of collection `rate_buckets` and
 * returns the {@link RateLimitStoreService}; the client belongs to the `Scope`. Fails with
 * `StorageError` (operation `"connect"` or `"indexes"`). See {@link fromDb}.
 *
 * @category constructors
 */
export const make = (options: MongoRateLimitStoreOptions): Effect.Effect<RateLimitStoreService, StorageError, Scope.Scope> =>
  connect(options.url, options.serverSelectionTimeoutMS).pipe(
    Effect.flatMap((client) => fromDb(client.db(options.database ?? databaseFromUrl(options.url) ?? DEFAULT_DATABASE)))
  )

/**
 * A Layer providing {@link RateLimitStore} on MongoDB (see {@link make}); releasing it
 * closes the client.
 *
 * @category layers
 * @example
 * import { Layer } from "effect"
 * import { RateLimiter } from "@switchboard/core"
 * import { MongoRateLimitStore } from "@switchboard/storage-mongodb"
 *
 * const RateLimiterLive = RateLimiter.layer().pipe(
 *   Layer.provide(MongoRateLimitStore.layer({ url: "mongodb://localhost:27017/switchboard" }))
 * )
 */
export const layer = (options: MongoRateLimitStoreOptions): Layer.Layer<RateLimitStore, StorageError> =>
  Layer.scoped(RateLimitStore, make(options))

/**
 * {@link layer} with options read from Effect's `Config`. Also fails with `ConfigError`.
 *
 * @category layers
 * @example
 * import { Config } from "effect"
 * import { MongoRateLimitStore } from "@switchboard/storage-mongodb"
 *
 * const StoreLive = MongoRateLimitStore.layerConfig({ url: Config.string("MONGODB_URL") })
 */
export const layerConfig = (
  config: Config.Config.Wrap<MongoRateLimitStoreOptions>
): Layer.Layer<RateLimitStore, StorageError | ConfigError.ConfigError> =>
  Layer.scoped(RateLimitStore, Effect.flatMap(Config.unwrap(config), make))

/**
 * A Layer providing {@link RateLimitStore} on the host's connected `MongoClient` or a `Db`
 * handle (never closed here); for a client, `database` defaults to its default database.
 *
 * @category layers
 * @example
 * import { MongoClient } from "mongodb"
 * import { MongoRateLimitStore } from "@switchboard/storage-mongodb"
 *
 * const client = await new MongoClient("mongodb://localhost:27017/app").connect()
 * const StoreLive = MongoRateLimitStore.layerFromClient(client)
 */
export const layerFromClient = (
  client: MongoClient | Db,
  options: { readonly database?: string } = {}
): Layer.Layer<RateLimitStore, StorageError> => Layer.effect(RateLimitStore, fromDb(databaseOfHandle(client, options.database)))

/**
 * The store on a database: creates the TTL index on `rate_buckets.expires_at` (MongoDB's
 * TTL monitor deletes a bucket once its window has ended, about once a minute), then each
 * increment is one `findOneAndUpdate` with `$inc` and `upsert` on the bucket `_id`
 * (`windowStart:key`), answering the count after it: MongoDB applies it atomically to the
 * one document, so concurrent requests of every instance get distinct counts. Two
 * concurrent upserts creating one bucket may meet the unique `_id` (duplicate key): the
 * loser retries, and then finds the bucket and increments it. Fails with `StorageError`
 * (operation `"indexes"`, then `"rateLimits.increment"`).
 *
 * @category constructors
 */
export const fromDb = (db: Db): Effect.Effect<RateLimitStoreService, StorageError> =>
  attempt("indexes", async () => {
    const buckets = db.collection<RateBucketDocument>(RATE_BUCKETS)
    await buckets.createIndexes([...RATE_BUCKET_INDEXES])
    return buckets
  }).pipe(
    Effect.map((buckets) => ({
      increment: (request: RateLimitIncrement) => attempt("rateLimits.increment", () => incrementOnce(buckets, request))
    }))
  )

/** The one atomic operation of an increment (retried only after a duplicate-key race). */
const incrementOnce = async (buckets: Collection<RateBucketDocument>, request: RateLimitIncrement): Promise<number> => {
  const { filter, update, options } = rateBucketIncrement(request)
  for (let attempt = 0; ; attempt++) {
    try {
      const bucket = await buckets.findOneAndUpdate(filter, update, { ...options })
      if (bucket === null) throw new Error("rate bucket missing after an upsert")
      return bucket.count
    } catch (error) {
      if (!isDuplicateKey(error) || attempt >= 2) throw error
    }
  }
}

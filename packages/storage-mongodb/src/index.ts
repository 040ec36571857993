/**
 * `@switchboard/storage-mongodb`: the `Storage` of `@switchboard/core` on the official
 * `mongodb` driver (docs/storage.md "MongoDB"), for deployments that run several instances against one
 * shared, replicated store: indexes created idempotently at start-up, plan limits kept
 * without multi-document transactions (a conditional `$inc` on a usage document), every
 * driver failure a `StorageError`; and `MongoRateLimitStore`, rate-limit counters shared
 * by every instance (one `findOneAndUpdate` per request, TTL-expired windows).
 *
 * @packageDocumentation
 */
export * as MongoRateLimitStore from "./MongoRateLimitStore.js"
export * as MongoStorage from "./MongoStorage.js"

/**
 * `@switchboard/storage-sqlite`: the `Storage` of `@switchboard/core` on better-sqlite3,
 * the embedded default (docs/storage.md "Choosing"): versioned migrations, WAL, prepared statements cached
 * per connection, every driver failure a `StorageError`; and `SqliteRateLimitStore`, the
 * rate-limit counters of processes sharing one database file.
 *
 * @packageDocumentation
 */
export * as SqliteRateLimitStore from "./SqliteRateLimitStore.js"
export * as SqliteStorage from "./SqliteStorage.js"

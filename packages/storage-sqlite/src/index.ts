/**
 * `@switchboard/storage-sqlite`: the `Storage` of `@switchboard/core` on better-sqlite3,
 * the embedded default (DESIGN §1): versioned migrations, WAL, prepared statements cached
 * per connection, every driver failure a `StorageError`.
 *
 * @packageDocumentation
 */
export * as SqliteStorage from "./SqliteStorage.js"

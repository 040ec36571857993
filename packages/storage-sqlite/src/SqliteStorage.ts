import type Sqlite from "better-sqlite3"
import { Config, type ConfigError, Effect, Layer, type Scope } from "effect"
import { Storage, type StorageError, type StorageService } from "@switchboard/core"
import { DEFAULT_BUSY_TIMEOUT_MS, openDatabase } from "./internal/connection.js"
import { attempt, statementsOf } from "./internal/sql.js"
import { migrate, schemaHealth } from "./migrations.js"
import { basicReplyRepository } from "./repositories/basicReplies.js"
import { broadcastRepository } from "./repositories/broadcasts.js"
import { channelRepository } from "./repositories/channels.js"
import { chatRepository } from "./repositories/chats.js"
import { contactRepository } from "./repositories/contacts.js"
import { groupRepository } from "./repositories/groups.js"
import { idempotencyRepository } from "./repositories/idempotency.js"
import { labelRepository } from "./repositories/labels.js"
import { mediaRepository } from "./repositories/media.js"
import { organizationRepository } from "./repositories/organizations.js"
import { outboxRepository } from "./repositories/outbox.js"
import { templateSyncRepository } from "./repositories/templateSyncs.js"
import { templateRepository } from "./repositories/templates.js"
import { webhookRejectRepository } from "./repositories/webhookRejects.js"
import { webhookRepository } from "./repositories/webhooks.js"

/**
 * Options of the SQLite storage.
 *
 * - `filename`: path of the database file, created when missing (its directory must
 *   exist); `":memory:"` for a private in-memory database, lost when it closes and never in
 *   WAL mode.
 * - `busyTimeoutMs`: how long a statement waits for a lock held by another connection or
 *   process before failing with `SQLITE_BUSY` (a `StorageError`), in milliseconds; a
 *   non-negative integer, default 5000.
 *
 * @category models
 */
export interface SqliteStorageOptions {
  readonly filename: string
  readonly busyTimeoutMs?: number
}

/**
 * Opens the database, sets it up (`busy_timeout`, `journal_mode = WAL` for files,
 * `synchronous = NORMAL`, `foreign_keys = ON`), applies pending migrations and returns the
 * {@link StorageService} (docs/storage.md). The connection belongs to the `Scope`: a finalizer
 * closes it. Fails with `StorageError` (operation `"open"` or `"migrate"`); after that,
 * each repository method fails only with `StorageError` whose `operation` names it.
 *
 * @category constructors
 */
export const make = (options: SqliteStorageOptions): Effect.Effect<StorageService, StorageError, Scope.Scope> =>
  Effect.acquireRelease(
    attempt("open", () => openDatabase(options.filename, options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS)),
    close
  ).pipe(Effect.flatMap(fromDatabase))

/**
 * A Layer providing {@link Storage} on the SQLite file `options.filename` (see
 * {@link make}). Each build opens its own connection; releasing the Layer closes it.
 *
 * @category layers
 * @example
 * import { Effect } from "effect"
 * import { Core, Organizations } from "@switchboard/core"
 * import { SqliteStorage } from "@switchboard/storage-sqlite"
 *
 * const program = Organizations.pipe(Effect.flatMap((orgs) => orgs.create({ name: "Acme" })))
 * Effect.runPromise(
 *   program.pipe(
 *     Effect.provide(Core.layer),
 *     Effect.provide(SqliteStorage.layer({ filename: "switchboard.db" }))
 *   )
 * )
 */
export const layer = (options: SqliteStorageOptions): Layer.Layer<Storage, StorageError> =>
  Layer.scoped(Storage, make(options))

/**
 * {@link layer} with options read from Effect's `Config`: either a whole
 * `Config<SqliteStorageOptions>` or a struct of configs per field. Also fails with
 * `ConfigError` when the configuration is missing or invalid.
 *
 * @category layers
 * @example
 * import { Config } from "effect"
 * import { SqliteStorage } from "@switchboard/storage-sqlite"
 *
 * const StorageLive = SqliteStorage.layerConfig({
 *   filename: Config.string("SQLITE_FILE").pipe(Config.withDefault("switchboard.db")),
 *   busyTimeoutMs: Config.integer("SQLITE_BUSY_TIMEOUT_MS").pipe(Config.withDefault(5000))
 * })
 */
export const layerConfig = (
  config: Config.Config.Wrap<SqliteStorageOptions>
): Layer.Layer<Storage, StorageError | ConfigError.ConfigError> =>
  Layer.scoped(Storage, Effect.flatMap(Config.unwrap(config), make))

/**
 * A Layer providing {@link Storage} on the host's own better-sqlite3 `Database`, which
 * stays the host's: it is never closed here. Building the Layer turns `foreign_keys` on for
 * that connection and applies pending migrations (tables `schema_migrations`,
 * `organizations`, `api_keys`, `contacts`, `contact_groups`, `labels`, …); `journal_mode`, `synchronous` and the busy timeout are
 * left as the host set them. Fails with `StorageError` (operation `"open"` or
 * `"migrate"`).
 *
 * @category layers
 * @example
 * import Database from "better-sqlite3"
 * import { SqliteStorage } from "@switchboard/storage-sqlite"
 *
 * const db = new Database("app.db")
 * db.pragma("journal_mode = WAL")
 * const StorageLive = SqliteStorage.layerFromClient(db)
 */
export const layerFromClient = (db: Sqlite.Database): Layer.Layer<Storage, StorageError> =>
  Layer.effect(
    Storage,
    attempt("open", () => db.pragma("foreign_keys = ON")).pipe(Effect.zipRight(fromDatabase(db)))
  )

/** Migrates `db` and assembles the service: one repository factory per domain. */
const fromDatabase = (db: Sqlite.Database): Effect.Effect<StorageService, StorageError> =>
  Effect.map(migrate(db), () => {
    const statements = statementsOf(db)
    return {
      organizations: organizationRepository(db, statements),
      contacts: contactRepository(db, statements),
      groups: groupRepository(db, statements),
      labels: labelRepository(db, statements),
      chats: chatRepository(db, statements),
      templates: templateRepository(db, statements),
      basicReplies: basicReplyRepository(db, statements),
      idempotency: idempotencyRepository(db, statements),
      channels: channelRepository(db, statements),
      webhooks: webhookRepository(db, statements),
      webhookRejects: webhookRejectRepository(db, statements),
      outbox: outboxRepository(db, statements),
      broadcasts: broadcastRepository(db, statements),
      media: mediaRepository(db, statements),
      templateSyncs: templateSyncRepository(db, statements),
      health: () => attempt("health", () => schemaHealth(db))
    }
  })

/** Closes a connection this package opened; a failure to close is logged, not raised. */
const close = (db: Sqlite.Database): Effect.Effect<void> =>
  attempt("close", () => db.close()).pipe(
    Effect.catchAll((error) => Effect.logWarning("Closing the SQLite database failed", error.cause))
  )

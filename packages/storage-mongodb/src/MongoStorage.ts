import { Config, type ConfigError, Effect, Layer, type Scope } from "effect"
import type { Db, MongoClient } from "mongodb"
import { Storage, type StorageError, type StorageService } from "@switchboard/core"
import {
  connect,
  databaseOfHandle,
  DEFAULT_DATABASE,
  databaseFromUrl,
  ensureIndexes,
  redactUrl as redact
} from "./internal/connection.js"
import { attempt } from "./internal/driver.js"
import type { Collections } from "./internal/schema.js"
import { DEFAULT_RECONCILE_QUIET_MS, makeUsage, reconcileUsage } from "./internal/usage.js"
import { basicReplyRepository } from "./repositories/basicReplies.js"
import { broadcastRepository } from "./repositories/broadcasts.js"
import { idempotencyRepository } from "./repositories/idempotency.js"
import { channelRepository } from "./repositories/channels.js"
import { chatRepository } from "./repositories/chats.js"
import { contactRepository } from "./repositories/contacts.js"
import { groupRepository } from "./repositories/groups.js"
import { labelRepository } from "./repositories/labels.js"
import { mediaRepository } from "./repositories/media.js"
import { organizationRepository } from "./repositories/organizations.js"
import { outboxRepository } from "./repositories/outbox.js"
import { templateSyncRepository } from "./repositories/templateSyncs.js"
import { templateRepository } from "./repositories/templates.js"
import { webhookRejectRepository } from "./repositories/webhookRejects.js"
import { webhookRepository } from "./repositories/webhooks.js"

/**
 * Options of the MongoDB storage.
 *
 * - `url`: a `mongodb://` or `mongodb+srv://` connection string.
 * - `database`: the database to use; default the one named in `url`'s path, else
 *   `"switchboard"`.
 * - `serverSelectionTimeoutMS`: how long connecting (and any operation) waits for a
 *   suitable server before failing, in milliseconds; default the URL's own
 *   `serverSelectionTimeoutMS`, else 10 000.
 * - `reconcileUsage`: lower plan-limit counters left high by a crash at start-up (see
 *   docs/storage.md); default `true`.
 * - `reconcileQuietMs`: the reconciliation leaves alone an organization whose counters
 *   changed within this many milliseconds (a write in flight elsewhere); default 60 000.
 *
 * @category models
 */
export interface MongoStorageOptions {
  readonly url: string
  readonly database?: string
  readonly serverSelectionTimeoutMS?: number
  readonly reconcileUsage?: boolean
  readonly reconcileQuietMs?: number
}

/**
 * Options of {@link layerFromClient} and {@link fromDb}: what {@link MongoStorageOptions}
 * has beside the connection.
 *
 * @category models
 */
export interface MongoStorageSetupOptions {
  readonly reconcileUsage?: boolean
  readonly reconcileQuietMs?: number
}

/**
 * Connects to `options.url` (waiting at most `serverSelectionTimeoutMS` for a server),
 * creates the collections' indexes (idempotent), reconciles the plan-limit counters and
 * returns the {@link StorageService} (docs/storage.md "MongoDB"). The client belongs to the `Scope`: a
 * finalizer closes it. Fails with `StorageError` (operation `"connect"`, `"indexes"` or
 * `"reconcile"`); after that, each repository method fails only with `StorageError` whose
 * `operation` names it.
 *
 * @category constructors
 */
export const make = (options: MongoStorageOptions): Effect.Effect<StorageService, StorageError, Scope.Scope> =>
  connect(options.url, options.serverSelectionTimeoutMS).pipe(
    Effect.flatMap((client) => fromDb(client.db(options.database ?? databaseFromUrl(options.url) ?? DEFAULT_DATABASE), options))
  )

/**
 * A Layer providing {@link Storage} on the MongoDB server at `options.url` (see
 * {@link make}). Each build opens its own client; releasing the Layer closes it.
 *
 * @category layers
 * @example
 * import { Effect } from "effect"
 * import { Core, Organizations } from "@switchboard/core"
 * import { MongoStorage } from "@switchboard/storage-mongodb"
 *
 * const program = Organizations.pipe(Effect.flatMap((orgs) => orgs.create({ name: "Acme" })))
 * Effect.runPromise(
 *   program.pipe(
 *     Effect.provide(Core.layer),
 *     Effect.provide(MongoStorage.layer({ url: "mongodb://localhost:27017/switchboard" }))
 *   )
 * )
 */
export const layer = (options: MongoStorageOptions): Layer.Layer<Storage, StorageError> => Layer.scoped(Storage, make(options))

/**
 * {@link layer} with options read from Effect's `Config`. Also fails with `ConfigError`.
 *
 * @category layers
 * @example
 * import { Config } from "effect"
 * import { MongoStorage } from "@switchboard/storage-mongodb"
 *
 * const StorageLive = MongoStorage.layerConfig({ url: Config.string("MONGODB_URL") })
 */
export const layerConfig = (
  config: Config.Config.Wrap<MongoStorageOptions>
): Layer.Layer<Storage, StorageError | ConfigError.ConfigError> =>
  Layer.scoped(Storage, Effect.flatMap(Config.unwrap(config), make))

/**
 * A Layer providing {@link Storage} on the host's own connected `MongoClient` (or a `Db`
 * handle of it), which stays the host's (never closed here). For a client, `database`
 * defaults to the client's own default database (the one of its connection string).
 * Building it creates the indexes and reconciles the counters like {@link make}.
 *
 * @category layers
 * @example
 * import { MongoClient } from "mongodb"
 * import { MongoStorage } from "@switchboard/storage-mongodb"
 *
 * const client = await new MongoClient("mongodb://localhost:27017/app").connect()
 * const StorageLive = MongoStorage.layerFromClient(client, { database: "app" })
 */
export const layerFromClient = (
  client: MongoClient | Db,
  options: MongoStorageSetupOptions & { readonly database?: string } = {}
): Layer.Layer<Storage, StorageError> => Layer.effect(Storage, fromDb(databaseOfHandle(client, options.database), options))

/**
 * The {@link StorageService} on a database handle: creates the indexes, reconciles the
 * plan-limit counters (unless `reconcileUsage` is `false`) and assembles one repository
 * per domain. Fails with `StorageError` (operation `"indexes"` or `"reconcile"`).
 *
 * @category constructors
 */
export const fromDb = (db: Db, options: MongoStorageSetupOptions = {}): Effect.Effect<StorageService, StorageError> =>
  ensureIndexes(db).pipe(
    Effect.tap((collections) =>
      options.reconcileUsage === false
        ? Effect.void
        : attempt("reconcile", () => reconcileUsage(collections, options.reconcileQuietMs ?? DEFAULT_RECONCILE_QUIET_MS))
    ),
    Effect.map(assemble)
  )

/**
 * A `mongodb://` connection string with its user and password removed, safe for logs and
 * error messages: `mongodb://admin:secret@db:27017/app` → `mongodb://db:27017/app`.
 *
 * @category utils
 */
export const redactUrl = (url: string): string => redact(url)

/**
 * The database a connection string names in its path (`mongodb://h/app?x=1` → `"app"`),
 * or `"switchboard"` when it names none: what {@link make} uses without `database`.
 *
 * @category utils
 */
export const databaseOf = (url: string): string => databaseFromUrl(url) ?? DEFAULT_DATABASE

const assemble = (collections: Collections): StorageService => {
  const usage = makeUsage(collections)
  return {
    organizations: organizationRepository(collections, usage),
    contacts: contactRepository(collections, usage),
    groups: groupRepository(collections),
    labels: labelRepository(collections, usage),
    chats: chatRepository(collections, usage),
    templates: templateRepository(collections),
    basicReplies: basicReplyRepository(collections),
    idempotency: idempotencyRepository(collections),
    channels: channelRepository(collections, usage),
    webhooks: webhookRepository(collections),
    webhookRejects: webhookRejectRepository(collections),
    outbox: outboxRepository(collections),
    broadcasts: broadcastRepository(collections, usage),
    media: mediaRepository(collections, usage),
    templateSyncs: templateSyncRepository(collections),
    // One read proves the server answers; the indexes, MongoDB's only schema, are created at start.
    health: () =>
      attempt("health", async () => {
        await collections.organizations.findOne({}, { projection: { _id: 1 } })
        return { migrations_current: true }
      })
  }
}

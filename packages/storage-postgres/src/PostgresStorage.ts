import type Pg from "pg"
import { Config, type ConfigError, Effect, Layer, type Scope } from "effect"
import { Storage, type StorageError, type StorageService } from "@switchboard/core"
import { acquirePool } from "./internal/connection.js"
import { type Database, databaseOf } from "./internal/sql.js"
import { checkCurrent, LATEST_VERSION, migrate as migrateSchema, schemaHealth } from "./migrations.js"
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
 * The schema version this code migrates to (the newest entry of `schema_migrations`).
 *
 * @category constants
 */
export const SCHEMA_VERSION: number = LATEST_VERSION

/** Default of `schema`: the PostgreSQL schema Switchboard's tables live in. */
export const DEFAULT_SCHEMA = "switchboard"

/**
 * Options of the PostgreSQL storage (docs/storage.md "PostgreSQL").
 *
 * - `connectionString`: `postgres://user:password@host:5432/database` (or `postgresql://`);
 *   a pool is opened on it and ended when the Layer is released. Or
 * - `pool`: the host's own `pg.Pool`, used as it is and never ended here (this package's
 *   type parsers go with each of its queries; the host's pool settings stay the host's).
 * - `schema`: the schema every table lives in, default `"switchboard"`; created when
 *   missing. Every statement names it: nothing depends on `search_path`.
 * - `migrate`: apply pending migrations when the Layer is built (default `true`); with
 *   `false` the Layer only checks that the schema is current and fails when it is not
 *   (migrate out of band with {@link migrate}).
 * - `applicationName` (default `"switchboard"`), `statementTimeoutMs` (default 30 000 ms),
 *   `connectTimeoutMs` (default 5 000 ms: the longest a query waits to open a connection or
 *   for a free one, then fails with `StorageError`), `poolSize` (default 10
 *   connections) and `idleTimeoutMs` (default 10 000 ms: how long an idle connection
 *   stays open, beyond those a store keeps open): settings of a pool opened from
 *   `connectionString`; ignored with `pool`.
 *
 * @category models
 */
export type PostgresStorageOptions = (
  | { readonly connectionString: string; readonly pool?: undefined }
  | { readonly pool: Pg.Pool; readonly connectionString?: undefined }
) & {
  readonly schema?: string
  readonly migrate?: boolean
  readonly applicationName?: string
  readonly statementTimeoutMs?: number
  readonly connectTimeoutMs?: number
  readonly poolSize?: number
  readonly idleTimeoutMs?: number
}

/**
 * Opens (or takes) the pool, applies pending migrations (or checks that none is pending
 * with `migrate: false`) and returns the {@link StorageService} (docs/storage.md). A pool
 * opened here belongs to the `Scope`: a finalizer ends it. Fails with `StorageError`
 * (operation `"migrate"`, whose cause says when the server cannot be reached, the schema
 * is newer than this code, or is not current with `migrate: false`); after that, each
 * repository method fails only with `StorageError` whose `operation` names it.
 *
 * @category constructors
 */
export const make = (options: PostgresStorageOptions): Effect.Effect<StorageService, StorageError, Scope.Scope> =>
  Effect.gen(function* () {
    const pool = yield* acquirePool(options)
    const schema = options.schema ?? DEFAULT_SCHEMA
    yield* options.migrate === false ? checkCurrent(pool, schema) : migrateSchema(pool, schema)
    return { ...fromDatabase(databaseOf(pool, schema)), health: () => schemaHealth(pool, schema) }
  })

/**
 * A Layer providing {@link Storage} on PostgreSQL (see {@link make}). Each build opens its
 * own pool (unless `pool` is given); releasing the Layer ends it.
 *
 * @category layers
 * @example
 * import { Effect } from "effect"
 * import { Core, Organizations } from "@switchboard/core"
 * import { PostgresStorage } from "@switchboard/storage-postgres"
 *
 * const program = Organizations.pipe(Effect.flatMap((orgs) => orgs.create({ name: "Acme" })))
 * Effect.runPromise(
 *   program.pipe(
 *     Effect.provide(Core.layer),
 *     Effect.provide(PostgresStorage.layer({ connectionString: "postgres://postgres@127.0.0.1:5432/app" }))
 *   )
 * )
 */
export const layer = (options: PostgresStorageOptions): Layer.Layer<Storage, StorageError> =>
  Layer.scoped(Storage, make(options))

/**
 * {@link layer} with options read from Effect's `Config`. Also fails with `ConfigError`
 * when the configuration is missing or invalid.
 *
 * @category layers
 * @example
 * import { Config } from "effect"
 * import { PostgresStorage } from "@switchboard/storage-postgres"
 *
 * const StorageLive = PostgresStorage.layerConfig({
 *   connectionString: Config.string("DATABASE_URL"),
 *   schema: Config.string("DATABASE_SCHEMA").pipe(Config.withDefault("switchboard"))
 * })
 */
export const layerConfig = (
  config: Config.Config.Wrap<{ readonly connectionString: string; readonly schema?: string; readonly migrate?: boolean }>
): Layer.Layer<Storage, StorageError | ConfigError.ConfigError> =>
  Layer.scoped(Storage, Effect.flatMap(Config.unwrap(config), make))

/**
 * Applies pending migrations to `schema` (default `"switchboard"`) through `pool`, out of
 * band (for a deployment that starts its servers with `migrate: false`); answers the
 * schema's version afterwards. Fails with `StorageError` (operation `"migrate"`).
 *
 * @category constructors
 */
export const migrate = (pool: Pg.Pool, schema: string = DEFAULT_SCHEMA): Effect.Effect<number, StorageError> =>
  migrateSchema(pool, schema)

/** Assembles the service: one repository factory per domain. */
const fromDatabase = (db: Database): Omit<StorageService, "health"> => ({
  organizations: organizationRepository(db),
  contacts: contactRepository(db),
  groups: groupRepository(db),
  labels: labelRepository(db),
  chats: chatRepository(db),
  templates: templateRepository(db),
  basicReplies: basicReplyRepository(db),
  idempotency: idempotencyRepository(db),
  channels: channelRepository(db),
  webhooks: webhookRepository(db),
  webhookRejects: webhookRejectRepository(db),
  outbox: outboxRepository(db),
  broadcasts: broadcastRepository(db),
  media: mediaRepository(db),
  templateSyncs: templateSyncRepository(db)
})

/**
 * A connection string (or a driver message quoting one) safe to show: the user and
 * password (`user:pass@`) and any `password=` parameter removed, for example
 * `postgres://app:secret@db:5432/app?sslmode=require&password=x` →
 * `postgres://db:5432/app?sslmode=require`.
 *
 * @category utils
 */
export const redactUrl = (text: string): string =>
  text
    .trim()
    .replace(/(postgres(?:ql)?:\/\/)[^@/?#\s]*@/gi, "$1")
    .replace(/([?&])password=[^&#\s]*&?/gi, "$1")
    .replace(/[?&]$/, "")

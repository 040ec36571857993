import type Pg from "pg"
import { Effect } from "effect"
import { StorageError, type StorageHealth } from "@switchboard/core"
import { attempt, databaseOf, quoteIdentifier, type Sql, sqlOf } from "./internal/sql.js"
import { catalogTables } from "./schema/catalog.js"
import { chatTables } from "./schema/chats.js"
import { deliveryTables, scheduledSendsChanges, sendQueueLanesByIndex, transportKindColumns, webhookSecretRotationColumns } from "./schema/delivery.js"
import { mediaTables } from "./schema/media.js"
import { apiKeyExpiryChanges, organizationTables } from "./schema/organizations.js"
import { rateLimitTables } from "./schema/rateLimits.js"
import { recordTables } from "./schema/records.js"
import { repliesAndReactionsChanges } from "./schema/repliesAndReactions.js"
import { templatesFromMetaChanges } from "./schema/templatesFromMeta.js"
import type { SchemaContext } from "./schema/context.js"

/**
 * One step of the schema: its version (1, 2, … in order, never reused), a name, and the
 * SQL it runs for a schema (every identifier qualified by `context.schema`).
 */
export interface Migration {
  readonly version: number
  readonly name: string
  readonly sql: (context: SchemaContext) => string
}

/**
 * Every migration, oldest first. A released migration is never edited: a change to the
 * schema is a new entry.
 */
export const migrations: ReadonlyArray<Migration> = [
  {
    version: 1,
    name: "initial schema",
    sql: (context) =>
      [organizationTables, recordTables, catalogTables, chatTables, deliveryTables, rateLimitTables]
        .map((tables) => tables(context))
        .join("\n")
  },
  {
    version: 2,
    name: "media",
    // Media records with their fetch jobs, and the provider ids of uploads (schema/media.ts).
    sql: mediaTables
  },
  {
    version: 3,
    name: "templates from Meta",
    // Templates keyed by their WhatsApp Business Account, with Meta's id and problems, and
    // Meta's list of statuses; the template sync records, one per existing account due
    // within the next 6 hours (schema/templatesFromMeta.ts).
    sql: templatesFromMetaChanges
  },
  {
    version: 4,
    name: "transport kind",
    // Which transport each message was handed to (recording, whatsapp, custom), on messages
    // and broadcasts; existing outbound rows and broadcasts filled from their channel
    // (schema/delivery.ts).
    sql: transportKindColumns
  },
  {
    version: 5,
    name: "scheduled sends",
    // Messages may be `scheduled` (the status CHECK replaced), with `scheduled_at` (the
    // send_at of a scheduled send) and an index of the scheduled messages by when they are
    // due (schema/delivery.ts).
    sql: scheduledSendsChanges
  },
  {
    version: 6,
    name: "replies and reactions",
    // messages.reply_to and messages.reactions; existing inbound reactions folded into
    // their targets, and chats whose last message was a reaction given their newest other
    // message (schema/repliesAndReactions.ts).
    sql: repliesAndReactionsChanges
  },
  {
    version: 7,
    name: "webhook secret rotation",
    // webhook_endpoints.previous_secret_sealed and previous_secret_expires_at: a rotated-out
    // signing secret keeps signing beside the new one until then (schema/delivery.ts).
    sql: webhookSecretRotationColumns
  },
  {
    version: 8,
    name: "api key expiry",
    // api_keys.expires_at, the instant a rotated key stops working (schema/organizations.ts).
    sql: apiKeyExpiryChanges
  },
  {
    version: 9,
    name: "send queue lanes by index",
    // The lane's next head found with every column of the lane an index condition
    // (schema/delivery.ts): a message leaving the queue no longer scans its organization's lanes.
    sql: sendQueueLanesByIndex
  }
]

/** The newest schema version this code knows. */
export const LATEST_VERSION = migrations[migrations.length - 1]!.version

/**
 * Key of the advisory lock every migrator takes (one for all schemas of a database:
 * `CREATE EXTENSION` is database-wide, so two schemas migrating at once must not race for
 * it either).
 */
const MIGRATION_LOCK_KEY = 0x5357_4244 // "SWBD"

/** The version a schema's `schema_migrations` table records, 0 when it has none. */
const currentVersion = async (sql: Sql, schemaName: string): Promise<number> => {
  const table = await sql.row<{ found: boolean }>("SELECT to_regclass($1) IS NOT NULL AS found", [
    `${quoteIdentifier(schemaName)}.schema_migrations`
  ])
  if (!table!.found) return 0
  const result = await sql.row<{ version: number | null }>(
    `SELECT MAX(version)::integer AS version FROM ${quoteIdentifier(schemaName)}.schema_migrations`
  )
  return result!.version ?? 0
}

/** Thrown (and raised as the `StorageError`'s cause) when the database is newer than this code. */
export class SchemaTooNewError extends Error {
  constructor(readonly schemaName: string, readonly version: number) {
    super(
      `PostgreSQL schema "${schemaName}" is at version ${version}, newer than this Switchboard (which knows up to ${LATEST_VERSION}): upgrade Switchboard, or use another schema`
    )
    this.name = "SchemaTooNewError"
  }
}

/** Thrown (and raised as the `StorageError`'s cause) when `migrate: false` finds pending migrations. */
export class SchemaNotCurrentError extends Error {
  constructor(readonly schemaName: string, readonly version: number) {
    super(
      `PostgreSQL schema "${schemaName}" is at version ${version}; this Switchboard needs version ${LATEST_VERSION}: run the migrations (PostgresStorage.migrate, or start once with migrate: true)`
    )
    this.name = "SchemaNotCurrentError"
  }
}

/**
 * Brings `schemaName` up to {@link LATEST_VERSION} (docs/storage.md "PostgreSQL"): in one
 * transaction under an advisory lock (two processes starting at once migrate once; the
 * second finds the work done), creates the schema, `pg_trgm` when missing, the
 * `schema_migrations` table and every pending step. A database newer than the code fails
 * with {@link SchemaTooNewError} and changes nothing. Fails with `StorageError` (operation
 * `"migrate"`).
 */
export const migrate = (pool: Pg.Pool, schemaName: string): Effect.Effect<number, StorageError> =>
  attempt("migrate", () =>
    databaseOf(pool, schemaName).transaction(async (sql) => {
      await sql.run("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK_KEY])
      const version = await currentVersion(sql, schemaName)
      if (version > LATEST_VERSION) throw new SchemaTooNewError(schemaName, version)
      if (version === LATEST_VERSION) return LATEST_VERSION
      const schema = quoteIdentifier(schemaName)
      await sql.run(`CREATE SCHEMA IF NOT EXISTS ${schema}`)
      await sql.run("CREATE EXTENSION IF NOT EXISTS pg_trgm")
      const trigram = await sql.row<{ schema: string }>(
        "SELECT n.nspname AS schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'"
      )
      const context: SchemaContext = { schema, trigramSchema: quoteIdentifier(trigram!.schema) }
      await sql.run(
        `CREATE TABLE IF NOT EXISTS ${schema}.schema_migrations (
          version integer PRIMARY KEY,
          name text NOT NULL,
          applied_at timestamptz NOT NULL DEFAULT now()
        )`
      )
      for (const migration of migrations) {
        if (migration.version <= version) continue
        await sql.run(migration.sql(context))
        await sql.run(`INSERT INTO ${schema}.schema_migrations (version, name) VALUES ($1, $2)`, [
          migration.version,
          migration.name
        ])
      }
      return LATEST_VERSION
    })
  )

/**
 * Checks, without changing anything, that `schemaName` is at {@link LATEST_VERSION}
 * (`migrate: false`): fails with `StorageError` (operation `"migrate"`) whose cause is
 * {@link SchemaNotCurrentError} or {@link SchemaTooNewError}.
 */
export const checkCurrent = (pool: Pg.Pool, schemaName: string): Effect.Effect<number, StorageError> =>
  attempt("migrate", async () => {
    const version = await currentVersion(sqlOf(pool), schemaName)
    if (version > LATEST_VERSION) throw new SchemaTooNewError(schemaName, version)
    if (version < LATEST_VERSION) throw new SchemaNotCurrentError(schemaName, version)
    return version
  })

/**
 * What `Storage.health()` reports of `schemaName` (docs/deployment.md "Health checks"):
 * one round trip reading its version; current at {@link LATEST_VERSION}. Fails with
 * `StorageError` (operation `"health"`) when the server does not answer.
 */
export const schemaHealth = (pool: Pg.Pool, schemaName: string): Effect.Effect<StorageHealth, StorageError> =>
  attempt("health", async (): Promise<StorageHealth> => {
    const version = await currentVersion(sqlOf(pool), schemaName)
    if (version === LATEST_VERSION) return { migrations_current: true }
    return {
      migrations_current: false,
      detail: version > LATEST_VERSION
        ? `schema version ${version} is newer than this code's ${LATEST_VERSION}`
        : `schema version ${version}, this code needs ${LATEST_VERSION}: migrations pending`
    }
  })

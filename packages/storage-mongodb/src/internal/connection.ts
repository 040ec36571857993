import { Effect, type Scope } from "effect"
import { type Db, MongoClient } from "mongodb"
import type { StorageError } from "@switchboard/core"
import { attempt } from "./driver.js"
import { type Collections, collectionsOf, INDEXES, RETIRED_INDEXES } from "./schema.js"
import { upgradeTemplates } from "../repositories/templateSyncs.js"
import { upgradeReactions } from "../repositories/chats.js"

/** The database of a host's handle: a `Db` as it is, a `MongoClient`'s `database` (default: its own). */
export const databaseOfHandle = (handle: MongoClient | Db, database: string | undefined): Db =>
  typeof (handle as Db).collection === "function" ? (handle as Db) : (handle as MongoClient).db(database)

/** Database used when the connection string names none. */
export const DEFAULT_DATABASE = "switchboard"

/** Default `serverSelectionTimeoutMS`: how long connecting waits for a server, in ms. */
export const DEFAULT_SERVER_SELECTION_TIMEOUT_MS = 10_000

/**
 * The database named by the path of a `mongodb://` or `mongodb+srv://` connection string
 * (`mongodb://host:27017/switchboard?…` → `"switchboard"`), or `undefined` when it has
 * none.
 */
export const databaseFromUrl = (url: string): string | undefined => {
  const match = /^mongodb(?:\+srv)?:\/\/[^/?#]*\/([^?#]*)/i.exec(url.trim())
  const name = match?.[1] === undefined || match[1] === "" ? undefined : decodeURIComponent(match[1])
  return name
}

/**
 * A connection string safe to show: the user and password (`user:pass@`) removed, for
 * example `mongodb://admin:secret@db:27017/app` → `mongodb://db:27017/app`.
 */
export const redactUrl = (url: string): string => url.trim().replace(/^(mongodb(?:\+srv)?:\/\/)[^@/?#]*@/i, "$1")

/**
 * The `serverSelectionTimeoutMS` to pass to the client: the one given, else none when the
 * URL sets its own, else {@link DEFAULT_SERVER_SELECTION_TIMEOUT_MS} (an option passed to
 * the client would override the URL's).
 */
export const selectionTimeout = (url: string, given: number | undefined): { readonly serverSelectionTimeoutMS?: number } =>
  given !== undefined
    ? { serverSelectionTimeoutMS: given }
    : /[?&]serverSelectionTimeoutMS=/i.test(url)
      ? {}
      : { serverSelectionTimeoutMS: DEFAULT_SERVER_SELECTION_TIMEOUT_MS }

/**
 * Opens a client on `url` and waits until a server answers (at most
 * `serverSelectionTimeoutMS`, see {@link selectionTimeout}); the Scope closes it.
 */
export const connect = (
  url: string,
  serverSelectionTimeoutMS: number | undefined
): Effect.Effect<MongoClient, StorageError, Scope.Scope> =>
  Effect.acquireRelease(
    attempt("connect", async () => {
      const client = new MongoClient(url, selectionTimeout(url, serverSelectionTimeoutMS))
      try {
        return await client.connect()
      } catch (error) {
        await client.close().catch(() => undefined)
        throw error
      }
    }),
    (client) =>
      attempt("close", () => client.close()).pipe(
        Effect.catchAll((error) => Effect.logWarning("Closing the MongoDB client failed", error.cause))
      )
  )

/**
 * Creates every collection's indexes (schema.ts `INDEXES`), then drops the retired ones
 * (`RETIRED_INDEXES`) and brings documents of earlier versions up to date
 * ({@link upgradeTemplates}); idempotent: indexes that exist with the same name and keys
 * are left as they are, and an up-to-date database is only read.
 */
export const ensureIndexes = (db: Db): Effect.Effect<Collections, StorageError> =>
  attempt("indexes", async () => {
    const collections = collectionsOf(db)
    for (const name of Object.keys(INDEXES) as Array<keyof Collections>) {
      const indexes = INDEXES[name]
      if (indexes.length > 0) await collections[name].createIndexes([...indexes])
    }
    for (const name of Object.keys(RETIRED_INDEXES) as Array<keyof Collections>) {
      const present = new Set((await collections[name].indexes()).map((index) => index.name))
      for (const retired of RETIRED_INDEXES[name] ?? []) {
        if (present.has(retired)) await collections[name].dropIndex(retired)
      }
    }
    await upgradeTemplates(collections, Date.now())
    await upgradeReactions(collections)
    return collections
  })

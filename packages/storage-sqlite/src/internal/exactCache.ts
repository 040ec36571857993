import type Sqlite from "better-sqlite3"
import { type Effect, Exit, Option } from "effect"
import { endOfTurnQueue, type StorageError } from "@switchboard/core"
import { attemptNow } from "./sql.js"

/**
 * An exact read cache of one connection (docs/benchmarks.md): `lookUp(key)` answers what
 * `find(key)` would read from the file now, from memory when it can.
 *
 * - The look-ups asked for during one turn of the event loop are answered together at its
 *   end ({@link endOfTurnQueue}), after one `PRAGMA data_version` reading taken once every
 *   request of the group was read: when that number changed (another connection, another
 *   process, committed to the file) the cache starts over first. So a commit made before a
 *   request arrived is always seen.
 * - This connection's own writes do not change `data_version`: each repository that writes
 *   what the cache holds calls `forget()` after the write.
 * - A key `find` does not find is never cached; at `maxSize` entries the cache starts over.
 *
 * `operation` names the `StorageError` of a failed look-up.
 */
export interface ExactCache<A> {
  readonly lookUp: (key: string) => Effect.Effect<Option.Option<A>, StorageError>
  readonly forget: () => void
}

/**
 * The {@link ExactCache} of `db` named `name`, made on first use (one per connection and
 * name: every repository built on the connection shares it, so each one's writes empty it).
 */
export const exactCacheOf = <A>(
  db: Sqlite.Database,
  name: string,
  options: { readonly operation: string; readonly maxSize: number; readonly find: (key: string) => A | undefined }
): ExactCache<A> => {
  let caches = exactCaches.get(db)
  if (caches === undefined) {
    caches = new Map()
    exactCaches.set(db, caches)
  }
  let cache = caches.get(name) as ExactCache<A> | undefined
  if (cache === undefined) {
    cache = makeExactCache(db, options)
    caches.set(name, cache)
  }
  return cache
}

/** Empties the cache `name` of `db`, when it has one: after this connection wrote what it holds. */
export const forgetExactCache = (db: Sqlite.Database, name: string): void => {
  exactCaches.get(db)?.get(name)?.forget()
}

const exactCaches = new WeakMap<Sqlite.Database, Map<string, ExactCache<unknown>>>()

const makeExactCache = <A>(
  db: Sqlite.Database,
  { operation, maxSize, find }: { readonly operation: string; readonly maxSize: number; readonly find: (key: string) => A | undefined }
): ExactCache<A> => {
  const entries = new Map<string, A>()
  const readDataVersion = db.prepare("PRAGMA data_version").pluck()
  let dataVersion: unknown
  const lookUpNow = (key: string): Exit.Exit<Option.Option<A>, StorageError> =>
    attemptNow(operation, () => {
      const cached = entries.get(key)
      if (cached !== undefined) return Option.some(cached)
      const found = find(key)
      if (found === undefined) return Option.none()
      if (entries.size >= maxSize) entries.clear()
      entries.set(key, found)
      return Option.some(found)
    })
  const lookUp = endOfTurnQueue((keys: ReadonlyArray<string>) => {
    const version = attemptNow(operation, () => readDataVersion.get())
    if (Exit.isFailure(version)) return keys.map(() => Exit.failCause(version.cause))
    if (version.value !== dataVersion) {
      entries.clear()
      dataVersion = version.value
    }
    return keys.map(lookUpNow)
  })
  return { lookUp, forget: () => entries.clear() }
}

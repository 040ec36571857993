import { describe, expect, it } from "@effect/vitest"
import { afterAll } from "vitest"
import Sqlite from "better-sqlite3"
import { Effect, Layer } from "effect"
import { RateLimitStore, type RateLimitIncrement } from "@switchboard/core"
import { runRateLimitStoreContract } from "@switchboard/storage-contract"
import { SqliteRateLimitStore } from "@switchboard/storage-sqlite"
import { countExecutions, tempFiles } from "./helpers.js"

const files = tempFiles()
afterAll(files.cleanup)

// A real file in a fresh temporary directory for every test.
runRateLimitStoreContract({ name: "sqlite", makeLayer: () => SqliteRateLimitStore.layer({ filename: files.file() }) })

/** The increment of `key` in the 1-second window containing `now`. */
const at = (key: string, now: number): RateLimitIncrement => {
  const windowStart = Math.floor(now / 1000) * 1000
  return { key, windowStart, expiresAt: windowStart + 1000, now }
}

/** The rows of `rate_buckets`, read with a connection of the test's own. */
const rows = (filename: string) => {
  const db = new Sqlite(filename, { readonly: true })
  try {
    return db.prepare("SELECT key, window_start, count FROM rate_buckets ORDER BY key, window_start").all()
  } finally {
    db.close()
  }
}

const increment = (request: RateLimitIncrement) => Effect.flatMap(RateLimitStore, (store) => store.increment(request))

describe("SqliteRateLimitStore", () => {
  it.scoped("is marked synchronous: the limiter calls it without its timer (docs/rate-limits.md)", () =>
    Effect.gen(function* () {
      const store = yield* SqliteRateLimitStore.make({ filename: files.file() })
      expect(store.synchronous).toBe(true)
    }))

  it.effect("shares counters between connections on one file: concurrent increments get 1..N once each", () =>
    Effect.gen(function* () {
      const filename = files.file()
      const first = yield* SqliteRateLimitStore.make({ filename })
      const second = yield* SqliteRateLimitStore.make({ filename })
      const request = at("general:org:shared", 10_000)
      const counts = yield* Effect.all(
        Array.from({ length: 100 }, (_, index) => (index % 2 === 0 ? first : second).increment(request)),
        { concurrency: "unbounded" }
      )
      expect([...counts].sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, index) => index + 1))
      expect(rows(filename)).toEqual([{ key: "general:org:shared", window_start: 10_000, count: 100 }])
    }).pipe(Effect.scoped))

  it.effect("commits the increments of one event-loop turn in one transaction (grouped commit)", () =>
    Effect.gen(function* () {
      const filename = files.file()
      const store = yield* SqliteRateLimitStore.make({ filename })
      expect(yield* store.increment(at("general:org:grouped", 10_000))).toBe(1)
      // Empty the WAL, then count the frames 50 concurrent increments append: one commit
      // writes the counter's page once (a frame or two), 50 commits would write 50.
      const observer = new Sqlite(filename)
      observer.pragma("wal_checkpoint(TRUNCATE)")
      const counts = yield* Effect.all(
        Array.from({ length: 50 }, () => store.increment(at("general:org:grouped", 10_000))),
        { concurrency: "unbounded" }
      )
      const frames = (observer.pragma("wal_checkpoint(PASSIVE)") as Array<{ log: number }>)[0]!.log
      observer.close()
      expect([...counts].sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, index) => index + 2))
      expect(frames).toBeGreaterThan(0)
      expect(frames).toBeLessThanOrEqual(3)
    }).pipe(Effect.scoped))

  it.effect("counts the increments of one key and window in a group with one statement pair, in the order asked", () =>
    Effect.gen(function* () {
      const db = new Sqlite(files.file())
      const increments = countExecutions(db, (sql) => sql.startsWith("INSERT INTO rate_buckets"))
      const store = yield* Effect.provide(RateLimitStore, SqliteRateLimitStore.layerFromClient(db))
      expect(yield* store.increment(at("general:org:a", 10_000))).toBe(1)
      increments.reset()
      // One turn: a, b, a, a (another window), a, b.
      const asked = [at("general:org:a", 10_000), at("general:org:b", 10_000), at("general:org:a", 10_100), at("general:org:a", 11_000), at("general:org:a", 10_900), at("general:org:b", 10_500)]
      const counts = yield* Effect.all(asked.map((request) => store.increment(request)), { concurrency: "unbounded" })
      expect(counts).toEqual([2, 1, 3, 1, 4, 2])
      expect(increments.count()).toBe(3)
      expect(rows(db.name)).toEqual([
        { key: "general:org:a", window_start: 10_000, count: 4 },
        { key: "general:org:a", window_start: 11_000, count: 1 },
        { key: "general:org:b", window_start: 10_000, count: 2 }
      ])
      db.close()
    }))

  it.effect("a failed commit fails every increment of its group and counts none of them", () =>
    Effect.gen(function* () {
      const filename = files.file()
      const store = yield* SqliteRateLimitStore.make({ filename, busyTimeoutMs: 50 })
      // Another connection holds the write lock: BEGIN IMMEDIATE of the group gives up.
      const holder = new Sqlite(filename)
      holder.exec("BEGIN IMMEDIATE")
      const outcomes = yield* Effect.all(
        Array.from({ length: 5 }, () => Effect.either(store.increment(at("general:org:busy", 10_000)))),
        { concurrency: "unbounded" }
      )
      holder.exec("ROLLBACK")
      holder.close()
      expect(outcomes.map((outcome) => (outcome._tag === "Left" ? outcome.left.operation : "counted"))).toEqual(
        Array.from({ length: 5 }, () => "rateLimits.increment")
      )
      expect(yield* store.increment(at("general:org:busy", 10_000))).toBe(1)
    }).pipe(Effect.scoped))

  it.effect("prunes ended windows at most once per pruneIntervalMs, never the current one", () =>
    Effect.gen(function* () {
      const filename = files.file()
      const store = yield* SqliteRateLimitStore.make({ filename, pruneIntervalMs: 5_000 })
      // The first increment prunes (nothing yet) and schedules the next pruning 5 s later.
      for (let org = 0; org < 20; org++) yield* store.increment(at(`general:org:${org}`, 10_500))
      expect(rows(filename)).toHaveLength(20)
      // Within the interval no pruning runs, even though window 10 s has ended ...
      yield* store.increment(at("general:org:later", 12_000))
      yield* store.increment(at("general:org:current", 15_200))
      expect(rows(filename)).toHaveLength(22)
      // ... after it, one does: every ended window goes, the current one stays.
      yield* store.increment(at("general:org:last", 15_600))
      expect(rows(filename)).toEqual([
        { key: "general:org:current", window_start: 15_000, count: 1 },
        { key: "general:org:last", window_start: 15_000, count: 1 }
      ])
    }).pipe(Effect.scoped))

  it.effect("layerFromClient migrates the host's Database and leaves it open", () =>
    Effect.gen(function* () {
      const filename = files.file()
      const db = new Sqlite(filename)
      expect(yield* increment(at("k", 1_000)).pipe(Effect.provide(SqliteRateLimitStore.layerFromClient(db)))).toBe(1)
      expect(db.open).toBe(true)
      expect(db.prepare("SELECT count FROM rate_buckets WHERE key = 'k'").pluck().get()).toBe(1)
      db.close()
    }))

  it.effect("fails with StorageError \"rateLimits.increment\" once its connection is closed", () =>
    Effect.gen(function* () {
      const store = yield* Effect.scoped(SqliteRateLimitStore.make({ filename: files.file() }))
      const error = yield* Effect.flip(store.increment(at("k", 1_000)))
      expect(error._tag).toBe("StorageError")
      expect(error.operation).toBe("rateLimits.increment")
    }))

  it.effect("layer fails with StorageError \"open\" when the file cannot be opened", () =>
    Effect.gen(function* () {
      const filename = `${files.file()}/missing/x.db`
      const error = yield* Effect.flip(Layer.build(SqliteRateLimitStore.layer({ filename })))
      expect(error.operation).toBe("open")
    }).pipe(Effect.scoped))
})

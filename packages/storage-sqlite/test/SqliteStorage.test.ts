import { describe, expect, it } from "@effect/vitest"
import { afterAll } from "vitest"
import Sqlite from "better-sqlite3"
import { join } from "node:path"
import { createHash } from "node:crypto"
import { Config, ConfigError, ConfigProvider, Effect, Fiber, Layer, Option, TestClock } from "effect"
import { Core, Organizations, Storage, type StorageError } from "@switchboard/core"
import { fixtures } from "@switchboard/storage-contract"
import { SqliteStorage } from "@switchboard/storage-sqlite"
import { statementsOf, transaction } from "../src/internal/sql.js"
import { migrations } from "../src/migrations.js"
import { countExecutions, tempFiles } from "./helpers.js"

const files = tempFiles()
afterAll(files.cleanup)

/** The stored form of a plain key: its SHA-256, lowercase hex. */
const hashOf = (apiKey: string): string => createHash("sha256").update(apiKey).digest("hex")

const driverCode = (error: StorageError): unknown => (error.cause as { code?: unknown }).code

describe("SqliteStorage.layerFromClient", () => {
  it.effect("uses the host's Database and leaves it open when released", () =>
    Effect.gen(function* () {
      const db = new Sqlite(files.file())
      const org = fixtures.organization()
      yield* Effect.flatMap(Storage, ({ organizations }) => organizations.insert(org)).pipe(
        Effect.provide(SqliteStorage.layerFromClient(db))
      )
      expect(db.open).toBe(true)
      expect(db.pragma("foreign_keys", { simple: true })).toBe(1)
      expect(db.prepare("SELECT id FROM organizations").pluck().all()).toEqual([org.id])
      db.close()
    }))
})

describe("SqliteStorage.make and layer", () => {
  it.effect("close their own connection when the scope ends", () =>
    Effect.gen(function* () {
      const storage = yield* Effect.scoped(SqliteStorage.make({ filename: files.file() }))
      const error = yield* Effect.flip(storage.organizations.list())
      expect(error._tag).toBe("StorageError")
      expect(error.operation).toBe("organizations.list")
      expect(String(error.cause)).toMatch(/not open/)
    }))

  it.effect("work on \":memory:\"", () =>
    Effect.gen(function* () {
      const { organizations } = yield* Storage
      const org = fixtures.organization()
      yield* organizations.insert(org)
      expect(yield* organizations.findById(org.id)).toEqual(Option.some(org))
    }).pipe(Effect.provide(SqliteStorage.layer({ filename: ":memory:" }))))

  it.effect("fail with StorageError \"open\" when the file cannot be opened", () =>
    Effect.gen(function* () {
      const filename = join(files.file(), "missing-directory", "x.db")
      const error = yield* Effect.flip(Effect.scoped(Layer.build(SqliteStorage.layer({ filename }))))
      expect(error._tag).toBe("StorageError")
      expect(error.operation).toBe("open")
    }))
})

describe("SqliteStorage.layerConfig", () => {
  const config = {
    filename: Config.string("SQLITE_FILE"),
    busyTimeoutMs: Config.integer("SQLITE_BUSY_TIMEOUT_MS").pipe(Config.withDefault(5000))
  }

  it.effect("reads its options from the ConfigProvider", () =>
    Effect.gen(function* () {
      const filename = files.file()
      yield* Effect.flatMap(Storage, ({ organizations }) => organizations.list()).pipe(
        Effect.provide(SqliteStorage.layerConfig(config)),
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["SQLITE_FILE", filename]])))
      )
      const db = new Sqlite(filename, { readonly: true })
      expect(db.prepare("SELECT version FROM schema_migrations").pluck().all()).toEqual(migrations.map((m) => m.version))
      db.close()
    }))

  it.effect("fails with a ConfigError when an option is missing", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        Effect.scoped(Layer.build(SqliteStorage.layerConfig(config))).pipe(
          Effect.withConfigProvider(ConfigProvider.fromMap(new Map()))
        )
      )
      expect(ConfigError.isConfigError(error)).toBe(true)
    }))
})

describe("driver failures", () => {
  it.effect("become a StorageError naming the repository method, whatever the call", () =>
    Effect.gen(function* () {
      const db = new Sqlite(files.file())
      const { organizations } = yield* Effect.provide(Storage, SqliteStorage.layerFromClient(db))
      const org = fixtures.organization()
      yield* organizations.insert(org)

      const orphan = yield* Effect.flip(organizations.insertApiKey(fixtures.apiKey(fixtures.organization().id)))
      expect([orphan.operation, driverCode(orphan)]).toEqual([
        "organizations.insertApiKey",
        "SQLITE_CONSTRAINT_FOREIGNKEY"
      ])
      const key = fixtures.apiKey(org.id)
      yield* organizations.insertApiKey(key)
      const sameHash = yield* Effect.flip(organizations.insertApiKey(fixtures.apiKey(org.id, { hash: key.hash })))
      expect([sameHash.operation, driverCode(sameHash)]).toEqual([
        "organizations.insertApiKey",
        "SQLITE_CONSTRAINT_UNIQUE"
      ])
      const sameId = yield* Effect.flip(organizations.insert(org))
      expect([sameId.operation, driverCode(sameId)]).toEqual(["organizations.insert", "SQLITE_CONSTRAINT_PRIMARYKEY"])

      db.close()
      const closed = [
        yield* Effect.flip(organizations.findById(org.id)),
        yield* Effect.flip(organizations.replace(org)),
        yield* Effect.flip(organizations.revokeApiKey(key.id, "2026-01-01T00:00:00.000Z")),
        yield* Effect.flip(organizations.findCredentialByHash(key.hash))
      ]
      expect(closed.map((error) => [error._tag, error.operation])).toEqual([
        ["StorageError", "organizations.findById"],
        ["StorageError", "organizations.replace"],
        ["StorageError", "organizations.revokeApiKey"],
        ["StorageError", "organizations.findCredentialByHash"]
      ])
    }))
})

describe("contacts, groups and labels", () => {
  it.effect("an import that fails midway rolls back every row and group it wrote", () =>
    Effect.gen(function* () {
      const { contacts, groups, organizations } = yield* Storage
      const org = fixtures.organization()
      yield* organizations.insert(org)
      const rows = [1, 2, 3].map((n) => fixtures.importRow(fixtures.phone(n), {}, [fixtures.groupNamed(`g${n}`)]))
      const request = fixtures.importRequest(rows)
      const error = yield* Effect.flip(contacts.importBulk(org.id, { ...request, ids: request.ids.slice(0, 4) }))
      expect([error._tag, error.operation]).toEqual(["StorageError", "contacts.importBulk"])
      expect((yield* contacts.list(org.id, { page: 1, per_page: 10 })).total).toBe(0)
      expect((yield* groups.list(org.id, { page: 1, per_page: 10 })).total).toBe(0)
      const unknownOrg = yield* Effect.flip(contacts.importBulk(fixtures.organization().id, request))
      expect([unknownOrg.operation, driverCode(unknownOrg)]).toEqual([
        "contacts.importBulk",
        "SQLITE_CONSTRAINT_FOREIGNKEY"
      ])
    }).pipe(Effect.provide(SqliteStorage.layer({ filename: files.file() }))))

  it.effect("fail with a StorageError naming the method once the connection is closed", () =>
    Effect.gen(function* () {
      const storage = yield* Effect.scoped(SqliteStorage.make({ filename: files.file() }))
      const org = fixtures.organization().id
      const id = fixtures.uuid() as never
      const page = { page: 1, per_page: 10 }
      const calls = {
        "contacts.importBulk": storage.contacts.importBulk(org, fixtures.importRequest([])),
        "contacts.list": storage.contacts.list(org, page),
        "contacts.findById": storage.contacts.findById(org, id),
        "contacts.update": storage.contacts.update(org, id, { details: {} }, "t"),
        "contacts.delete": storage.contacts.delete(org, id),
        "contacts.labelsOf": storage.contacts.labelsOf(org, id),
        "groups.create": storage.groups.create(org, { uuid: id, name: "g", now: "t" }),
        "groups.rename": storage.groups.rename(org, id, "g", "t"),
        "groups.findById": storage.groups.findById(org, id),
        "groups.findByNames": storage.groups.findByNames(org, ["g"]),
        "groups.list": storage.groups.list(org, page),
        "labels.create": storage.labels.create(org, { uuid: id, name: "l", color: "#fff", now: "t" }, null),
        "labels.findById": storage.labels.findById(org, id),
        "labels.findByNames": storage.labels.findByNames(org, ["l"]),
        "labels.list": storage.labels.list(org, page),
        "labels.deleteMany": storage.labels.deleteMany(org, [id]),
        "labels.assign": storage.labels.assign(org, id, [id], "t")
      }
      for (const [operation, call] of Object.entries(calls)) {
        const error = yield* Effect.flip(call as Effect.Effect<unknown, StorageError>)
        expect([error._tag, error.operation]).toEqual(["StorageError", operation])
      }
    }))
})

describe("internals", () => {
  it("prepares each statement once per Database", () => {
    const db = new Sqlite(":memory:")
    const other = new Sqlite(":memory:")
    const sql = "SELECT 1 AS one"
    const first = statementsOf(db).prepare(sql)
    expect(statementsOf(db).prepare(sql)).toBe(first)
    expect(statementsOf(other).prepare(sql)).not.toBe(first)
    db.close()
    other.close()
  })

  it("transaction commits what fn wrote, or rolls it all back when fn throws", () => {
    const db = new Sqlite(":memory:")
    db.exec("CREATE TABLE t (n INTEGER)")
    const insert = db.prepare("INSERT INTO t (n) VALUES (?)")
    expect(transaction(db, () => insert.run(1).changes)).toBe(1)
    expect(() =>
      transaction(db, () => {
        insert.run(2)
        throw new Error("midway")
      })
    ).toThrow("midway")
    expect(db.prepare("SELECT n FROM t").pluck().all()).toEqual([1])
    db.close()
  })
})

describe("the exact credential cache of findCredentialByHash", () => {
  it.effect("a revocation or deactivation through this connection, through another Layer on it, or by another connection shows on the next look-up", () =>
    Effect.gen(function* () {
      const filename = files.file()
      const db = new Sqlite(filename)
      // Two storages on one connection (a host's own Database), and one on its own connection (another process).
      const first = yield* Effect.provide(Storage, SqliteStorage.layerFromClient(db))
      const second = yield* Effect.provide(Storage, SqliteStorage.layerFromClient(db))
      const other = new Sqlite(filename)
      const elsewhere = yield* Effect.provide(Storage, SqliteStorage.layerFromClient(other))
      const look = (hash: string) => Effect.map(first.organizations.findCredentialByHash(hash), Option.getOrThrow)
      /** Looks every key up, so each is in the cache before the next write. */
      const cacheAll = Effect.suspend(() => Effect.forEach(keys, (key) => look(key.hash)))

      const org = fixtures.organization()
      yield* first.organizations.insert(org)
      const keys = [fixtures.apiKey(org.id), fixtures.apiKey(org.id), fixtures.apiKey(org.id)]
      for (const key of keys) yield* first.organizations.insertApiKey(key)
      for (const key of keys) expect((yield* look(key.hash)).api_key.revoked_at).toBeNull()

      // This connection, through the repository that caches.
      yield* cacheAll
      yield* first.organizations.revokeApiKey(keys[0]!.id, "2026-01-01T00:00:00.000Z")
      expect((yield* look(keys[0]!.hash)).api_key.revoked_at).toBe("2026-01-01T00:00:00.000Z")
      // This connection, through another Layer's repository: data_version does not change.
      yield* cacheAll
      yield* second.organizations.revokeApiKey(keys[1]!.id, "2026-01-02T00:00:00.000Z")
      expect((yield* look(keys[1]!.hash)).api_key.revoked_at).toBe("2026-01-02T00:00:00.000Z")
      // Another connection: data_version changes.
      yield* cacheAll
      yield* elsewhere.organizations.revokeApiKey(keys[2]!.id, "2026-01-03T00:00:00.000Z")
      expect((yield* look(keys[2]!.hash)).api_key.revoked_at).toBe("2026-01-03T00:00:00.000Z")
      yield* cacheAll
      yield* elsewhere.organizations.replace({ ...org, subscription: "inactive" })
      expect((yield* look(keys[0]!.hash)).organization.subscription).toBe("inactive")
      // A key unknown when first looked up is found once inserted (not-found is never cached).
      const late = fixtures.apiKey(org.id)
      expect(Option.isNone(yield* first.organizations.findCredentialByHash(late.hash))).toBe(true)
      yield* elsewhere.organizations.insertApiKey(late)
      expect(Option.isSome(yield* first.organizations.findCredentialByHash(late.hash))).toBe(true)
      other.close()
      db.close()
    }))

  it.effect("cannot serve an expired key: a key expiring between two requests, its credential cached, is refused on the second", () =>
    Effect.gen(function* () {
      const db = new Sqlite(files.file())
      const layer = Core.layer.pipe(Layer.provideMerge(SqliteStorage.layerFromClient(db)))
      yield* Effect.gen(function* () {
        const organizations = yield* Organizations
        const { organizations: repository } = yield* Storage
        yield* TestClock.setTime(Date.UTC(2026, 10, 29, 12))
        const org = yield* organizations.create({ name: "Acme" })
        const old = yield* organizations.issueApiKey(org.id)
        const { issued } = yield* organizations.rotateApiKey(old.key_id, { expiresInSeconds: 90 })
        const lookUps = countExecutions(db, (sql) => sql.includes("WHERE k.hash = ?"))
        // The first request caches the credential, the next ones are answered from the cache.
        expect((yield* organizations.authenticate(old.api_key)).api_key_id).toBe(old.key_id)
        yield* TestClock.adjust("89 seconds")
        expect((yield* organizations.authenticate(old.api_key)).api_key_id).toBe(old.key_id)
        yield* TestClock.adjust("1 second")
        expect((yield* Effect.flip(organizations.authenticate(old.api_key)))._tag).toBe("ApiKeyInvalid")
        expect((yield* organizations.authenticate(issued.api_key)).api_key_id).toBe(issued.key_id)
        expect(lookUps.count()).toBe(2)
        // The store still finds it, with its expiry: only core decides it is refused.
        expect(Option.map(yield* repository.findCredentialByHash(hashOf(old.api_key)), (found) => found.api_key.expires_at)).toEqual(
          Option.some("2026-11-29T12:01:30.000Z")
        )
      }).pipe(Effect.provide(layer))
      db.close()
    }))

  it.effect("answers the look-ups of one turn together, after one data_version reading taken once all were asked", () =>
    Effect.gen(function* () {
      const filename = files.file()
      const db = new Sqlite(filename)
      const readings = countExecutions(db, (sql) => sql === "PRAGMA data_version")
      const storage = yield* Effect.provide(Storage, SqliteStorage.layerFromClient(db))
      const other = new Sqlite(filename)
      const org = fixtures.organization()
      yield* storage.organizations.insert(org)
      const keys = [fixtures.apiKey(org.id), fixtures.apiKey(org.id), fixtures.apiKey(org.id)]
      for (const key of keys) yield* storage.organizations.insertApiKey(key)
      for (const key of keys) yield* storage.organizations.findCredentialByHash(key.hash)

      // Three requests ask in one turn; another process revokes every key after they asked,
      // before the end of the turn: all three are answered with the revocation.
      readings.reset()
      const asked = keys.map((key) => Effect.runFork(storage.organizations.findCredentialByHash(key.hash)))
      other.prepare("UPDATE api_keys SET revoked_at = '2026-02-01T00:00:00.000Z'").run()
      for (const fiber of asked) {
        expect(Option.getOrThrow(yield* Fiber.join(fiber)).api_key.revoked_at).toBe("2026-02-01T00:00:00.000Z")
      }
      expect(readings.count()).toBe(1)
      other.close()
      db.close()
    }))
})

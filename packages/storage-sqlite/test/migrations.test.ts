import { describe, expect, it } from "@effect/vitest"
import { afterAll } from "vitest"
import Sqlite from "better-sqlite3"
import { Effect, Option, TestClock } from "effect"
import { type BroadcastId, type ChatAppendRequest, type ChatId, type Contact, type ContactId, Storage } from "@switchboard/core"
import { fixtures } from "@switchboard/storage-contract"
import { SqliteStorage } from "@switchboard/storage-sqlite"
import { openDatabase } from "../src/internal/connection.js"
import { applyPending, migrate, migrations, type Migration } from "../src/migrations.js"
import { fixtureProcesses, tempFiles } from "./helpers.js"

const files = tempFiles()
afterAll(files.cleanup)
/** The database of the chat_counts test of the storage (opened by its Layer). */
const chatCountsFile = files.file()

/** Reads the file with a connection of its own, outside the Layer under test. */
const inspect = <A>(filename: string, read: (db: Sqlite.Database) => A): A => {
  const db = new Sqlite(filename, { readonly: true })
  try {
    return read(db)
  } finally {
    db.close()
  }
}
const appliedRows = (filename: string) =>
  inspect(filename, (db) =>
    db.prepare("SELECT version, name, applied_at FROM schema_migrations ORDER BY version").all()
  )
const tableNames = (db: Sqlite.Database) =>
  db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all()

/** Builds the Layer, runs `body` with its Storage, then releases it (closing the file). */
const withStorage = <A, E>(
  filename: string,
  body: Effect.Effect<A, E, Storage>,
  busyTimeoutMs?: number
) =>
  body.pipe(Effect.provide(SqliteStorage.layer({ filename, busyTimeoutMs })))

/**
 * A new file with the migrations before `version` applied and one organization (`org`),
 * its connection (`db`) left open to write what that version found there.
 */
const fileBefore = (version: number) => {
  const filename = files.file()
  const db = new Sqlite(filename)
  applyPending(db, migrations.filter((m) => m.version < version), "t1")
  const org = fixtures.organization()
  db.prepare(
    "INSERT INTO organizations (id, name, contacts_limit, label_limit, api_access, subscription, created_at, updated_at) VALUES (?, 'Org', NULL, NULL, 1, 'active', 't', 't')"
  ).run(org.id)
  return { filename, db, org }
}

describe("migrations", () => {
  it("are listed in ascending order with unique versions", () => {
    const versions = migrations.map((m) => m.version)
    expect(versions).toEqual([...new Set(versions)].sort((a, b) => a - b))
    expect(versions[0]).toBe(1)
  })

  it.effect("are applied once on a new file, recorded with the Clock's time, in WAL mode", () =>
    Effect.gen(function* () {
      const filename = files.file()
      yield* TestClock.setTime(Date.UTC(2026, 5, 1))
      yield* withStorage(filename, Effect.void)
      expect(appliedRows(filename)).toEqual(
        migrations.map((m) => ({ version: m.version, name: m.name, applied_at: "2026-06-01T00:00:00.000Z" }))
      )
      expect(inspect(filename, tableNames)).toEqual([
        "api_keys",
        "basic_replies",
        "broadcasts",
        "channels",
        "chat_counts",
        "chat_links",
        "chat_search",
        "chat_search_config",
        "chat_search_data",
        "chat_search_docsize",
        "chat_search_idx",
        "chats",
        "contact_counts",
        "contact_groups",
        "contact_labels",
        "contacts",
        "customer_service_windows",
        "group_members",
        "idempotency_keys",
        "labels",
        "media",
        "media_uploads",
        "messages",
        "organizations",
        "pending_message_statuses",
        "rate_buckets",
        "schema_migrations",
        "settings",
        "template_syncs",
        "templates",
        "webhook_attempts",
        "webhook_deliveries",
        "webhook_endpoints",
        "webhook_events",
        "webhook_rejects"
      ])
      expect(inspect(filename, (db) => db.pragma("journal_mode", { simple: true }))).toBe("wal")
    }))

  it.effect("re-opening the same file applies nothing and keeps the data", () =>
    Effect.gen(function* () {
      const filename = files.file()
      const org = fixtures.organization()
      yield* withStorage(filename, Effect.flatMap(Storage, ({ organizations }) => organizations.insert(org)))
      const before = appliedRows(filename)
      yield* TestClock.adjust("1 day")
      const listed = yield* withStorage(filename, Effect.flatMap(Storage, ({ organizations }) => organizations.list()))
      expect(listed).toEqual([org])
      expect(appliedRows(filename)).toEqual(before)
      const db = new Sqlite(filename)
      expect(yield* migrate(db)).toEqual([])
      db.close()
    }))

  it("applies only the pending migrations, in version order", () => {
    const db = new Sqlite(":memory:")
    const versions = migrations.map((m) => m.version)
    const extra: ReadonlyArray<Migration> = [
      { version: 101, name: "later", up: "CREATE TABLE later (id INTEGER PRIMARY KEY)" },
      { version: 100, name: "sooner", up: "CREATE TABLE sooner (id INTEGER PRIMARY KEY)" }
    ]
    expect(applyPending(db, migrations, "t1")).toEqual(versions)
    expect(applyPending(db, [...migrations, ...extra], "t2")).toEqual([100, 101])
    expect(applyPending(db, [...migrations, ...extra], "t3")).toEqual([])
    expect(db.prepare("SELECT version, applied_at FROM schema_migrations ORDER BY version").all()).toEqual([
      ...versions.map((version) => ({ version, applied_at: "t1" })),
      { version: 100, applied_at: "t2" },
      { version: 101, applied_at: "t2" }
    ])
    db.close()
  })

  it("accepts a gap in the versions: a version below the newest applied is applied when it arrives", () => {
    const db = new Sqlite(":memory:")
    const table = (version: number): Migration => ({ version, name: `m${version}`, up: `CREATE TABLE m${version} (id INTEGER PRIMARY KEY)` })
    expect(applyPending(db, [table(1), table(3)], "t1")).toEqual([1, 3])
    expect(applyPending(db, [table(1), table(2), table(3)], "t2")).toEqual([2])
    expect(db.prepare("SELECT version FROM schema_migrations ORDER BY version").pluck().all()).toEqual([1, 2, 3])
    db.close()
  })

  it("migration 6 counts the contacts already there, then its triggers keep contact_counts exact", () => {
    const db = new Sqlite(":memory:")
    applyPending(db, migrations.filter((m) => m.version < 6), "t1")
    const organization = (id: string) =>
      db
        .prepare("INSERT INTO organizations VALUES (?, 'Org', NULL, NULL, 1, 'active', 't', 't')")
        .run(id)
    const contact = (uuid: string, organizationId: string, phone: string) =>
      db
        .prepare(
          "INSERT INTO contacts (uuid, organization_id, phone, created_at, updated_at) VALUES (?, ?, ?, 't', 't')"
        )
        .run(uuid, organizationId, phone)
    organization("a")
    organization("b")
    organization("c")
    contact("a1", "a", "+14155550100")
    contact("a2", "a", "+14155550101")
    contact("b1", "b", "+14155550100")
    const counts = () =>
      Object.fromEntries(
        db.prepare("SELECT organization_id, count FROM contact_counts ORDER BY organization_id").all().map(
          (row) => [(row as { organization_id: string }).organization_id, (row as { count: number }).count]
        )
      )
    applyPending(db, migrations, "t2")
    expect(counts()).toEqual({ a: 2, b: 1 })
    contact("a3", "a", "+14155550102")
    contact("c1", "c", "+14155550100")
    db.prepare("DELETE FROM contacts WHERE uuid IN ('a1', 'b1')").run()
    expect(counts()).toEqual({ a: 2, b: 0, c: 1 })
    const actual = db
      .prepare("SELECT organization_id, COUNT(*) AS count FROM contacts GROUP BY organization_id")
      .all()
    expect(actual).toEqual([
      { organization_id: "a", count: 2 },
      { organization_id: "c", count: 1 }
    ])
    db.close()
  })

  it("migration 12 counts the chats already there, then its triggers keep chat_counts exact (cascades too), and the unfiltered chat total reads it", () => {
    const db = new Sqlite(":memory:")
    db.pragma("foreign_keys = ON")
    applyPending(db, migrations.filter((m) => m.version < 12), "t1")
    const organization = (id: string) =>
      db.prepare("INSERT INTO organizations VALUES (?, 'Org', NULL, NULL, 1, 'active', 't', 't')").run(id)
    const chat = (uuid: string, organizationId: string, phone: string) => {
      db.prepare("INSERT INTO contacts (uuid, organization_id, phone, created_at, updated_at) VALUES (?, ?, ?, 't', 't')").run(
        `contact-${uuid}`,
        organizationId,
        phone
      )
      db.prepare(
        "INSERT INTO chats (uuid, organization_id, contact_uuid, status, created_at, updated_at) VALUES (?, ?, ?, 'open', 't', 't')"
      ).run(uuid, organizationId, `contact-${uuid}`)
    }
    organization("a")
    organization("b")
    chat("a1", "a", "+14155550100")
    chat("a2", "a", "+14155550101")
    chat("b1", "b", "+14155550100")
    const counts = () =>
      Object.fromEntries(
        db.prepare("SELECT organization_id, count FROM chat_counts ORDER BY organization_id").all().map(
          (row) => [(row as { organization_id: string }).organization_id, (row as { count: number }).count]
        )
      )
    applyPending(db, migrations, "t2")
    expect(counts()).toEqual({ a: 2, b: 1 })
    chat("a3", "a", "+14155550102")
    // Deleting a contact deletes its chat by cascade: the trigger still counts it.
    db.prepare("DELETE FROM contacts WHERE uuid = 'contact-a1'").run()
    db.prepare("DELETE FROM chats WHERE uuid = 'b1'").run()
    expect(counts()).toEqual({ a: 2, b: 0 })
    expect(db.prepare("SELECT COUNT(*) FROM chats WHERE organization_id = 'a'").pluck().get()).toBe(2)
    db.close()
  })

  it.effect("migration 13 keeps every contact, each with phone_valid 1; then an unverified phone and a webhook reject round-trip", () =>
    Effect.gen(function* () {
      const { filename, db, org } = fileBefore(13)
      for (const [uuid, phone] of [[fixtures.uuid(), fixtures.phone(1)], [fixtures.uuid(), fixtures.phone(2)]]) {
        db.prepare("INSERT INTO contacts (uuid, organization_id, phone, first_name, created_at, updated_at) VALUES (?, ?, ?, 'Ada', 't', 't')").run(uuid, org.id, phone)
      }
      db.close()
      const { contacts, rejects } = yield* Effect.gen(function* () {
        const storage = yield* Storage
        const inbound = {
          contact: { _tag: "ByPhone", phone: "+999123", create: { uuid: fixtures.uuid() as ContactId, first_name: null, last_name: null, phone_valid: false } },
          newChat: { uuid: fixtures.uuid() as ChatId, status: "open" },
          message: { uuid: fixtures.uuid(), direction: "inbound", type: "text", text: "Hi", template: null, media: null, content: null, status: "delivered", provider_message_id: null, failure: null, channel_uuid: null, attempts: 0, next_attempt_at: null, broadcast_uuid: null, reply_to: null, reactions: [], created_at: "t", updated_at: "t" },
          unreadIncrement: 1,
          reopen: { from: [], to: "open" },
          dedupe: true,
          now: "t"
        } as unknown as ChatAppendRequest
        yield* storage.chats.appendMessage(org.id, inbound)
        const reject = { id: fixtures.uuid(), received_at: "t", organization_id: null, phone_number_id: "1", reason: "why", item: { a: [1] } }
        yield* storage.webhookRejects.insert([reject])
        return {
          contacts: (yield* storage.contacts.list(org.id, { page: 1, per_page: 10 })).items,
          rejects: yield* storage.webhookRejects.list({ limit: 5 })
        }
      }).pipe(Effect.provide(SqliteStorage.layer({ filename })))
      const byPhone = (a: Contact, b: Contact) => (a.phone < b.phone ? -1 : 1)
      expect([...contacts].sort(byPhone).map((contact) => [contact.phone, contact.first_name, contact.phone_valid])).toEqual([
        [fixtures.phone(1), "Ada", true],
        [fixtures.phone(2), "Ada", true],
        ["+999123", null, false]
      ])
      expect(rejects.map((reject) => reject.item)).toEqual([{ a: [1] }])
    }))

  it.effect("an unfiltered offset page of chats takes its total from chat_counts; a filtered one counts", () =>
    Effect.gen(function* () {
      const file = chatCountsFile
      const storage = yield* Storage
      const org = fixtures.organization()
      yield* storage.organizations.insert(org)
      yield* storage.contacts.importBulk(org.id, fixtures.importRequest([fixtures.importRow(fixtures.phone(1)), fixtures.importRow(fixtures.phone(2))]))
      const contacts = (yield* storage.contacts.list(org.id, { page: 1, per_page: 10 })).items
      for (const contact of contacts) {
        yield* storage.chats.ensure(org.id, contact.uuid, { uuid: fixtures.uuid() as ChatId, status: "open" }, fixtures.instant(1))
      }
      const sort = { by: "last_message_at", order: "desc" } as const
      const page = { page: 1, per_page: 20 }
      expect((yield* storage.chats.listPage(org.id, {}, sort, page)).total).toBe(2)
      // A counter that says otherwise shows which one the unfiltered total reads.
      const other = new Sqlite(file)
      other.prepare("UPDATE chat_counts SET count = 999 WHERE organization_id = ?").run(org.id)
      other.close()
      expect((yield* storage.chats.listPage(org.id, {}, sort, page)).total).toBe(999)
      expect((yield* storage.chats.listPage(org.id, { status: "open" }, sort, page)).total).toBe(2)
    }).pipe(Effect.provide(SqliteStorage.layer({ filename: chatCountsFile }))))

  it.effect("migration 7 rebuilds messages keeping every row and index; new types and fields then round-trip", () =>
    Effect.gen(function* () {
      const filename = files.file()
      const db = new Sqlite(filename)
      db.pragma("foreign_keys = ON")
      applyPending(db, migrations.filter((m) => m.version < 7), "t1")
      db.prepare("INSERT INTO organizations VALUES ('org', 'Org', NULL, NULL, 1, 'active', 't', 't')").run()
      db.prepare("INSERT INTO contacts (uuid, organization_id, phone, created_at, updated_at) VALUES ('c1', 'org', '+14155550100', 't', 't')").run()
      db.prepare("INSERT INTO chats (uuid, organization_id, contact_uuid, status, created_at, updated_at) VALUES ('chat1', 'org', 'c1', 'open', 't', 't')").run()
      const insert = db.prepare(
        `INSERT INTO messages (uuid, organization_id, chat_uuid, contact_uuid, direction, type, text, template, media, status,
          provider_message_id, created_at, updated_at) VALUES (?, 'org', 'chat1', 'c1', ?, ?, ?, ?, ?, ?, ?, ?, ?)`
      )
      const rows = [
        ["m1", "inbound", "text", "hi", null, null, "delivered", "wamid.1", "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z"],
        ["m2", "outbound", "template", "Hi Ada", '{"name":"welcome","language":{"code":"en_US"},"components":[]}', null, "sent", null, "2026-01-02T00:00:00.000Z", "2026-01-02T00:00:01.000Z"],
        ["m3", "outbound", "media", "Look", null, '{"type":"image","url":"https://example.com/a.png","caption":"Look"}', "failed", null, "2026-01-03T00:00:00.000Z", "2026-01-03T00:00:00.000Z"]
      ] as const
      for (const row of rows) insert.run(...row)
      expect(() => insert.run("m4", "inbound", "location", null, null, null, "delivered", null, "t", "t")).toThrow(/CHECK/)
      const before = db.prepare("SELECT * FROM messages ORDER BY uuid").all()
      // Up to 7 only: migration 15 rebuilds the table again (its own test below).
      applyPending(db, migrations.filter((m) => m.version <= 7), "t2")
      expect(db.prepare("SELECT * FROM messages ORDER BY uuid").all()).toEqual(
        before.map((row) => ({ ...(row as object), content: null, failure: null, channel_uuid: null }))
      )
      const indexes = db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'messages' AND sql IS NOT NULL ORDER BY name").pluck().all()
      expect(indexes).toEqual(["messages_by_chat", "messages_by_provider_id"])
      expect(db.prepare("PRAGMA foreign_key_check").all()).toEqual([])
      db.close()
      // Through the adapter: the old rows read as records, a new inbound type is accepted.
      const read = yield* withStorage(
        filename,
        Effect.flatMap(Storage, ({ chats }) =>
          Effect.map(chats.findMessage("org" as never, "m3" as never), (found) => found)
        )
      )
      expect(read).toMatchObject({ value: { type: "media", status: "failed", media: { type: "image", url: "https://example.com/a.png", caption: "Look" }, content: null, failure: null, channel_uuid: null } })
      const after = new Sqlite(filename)
      after.pragma("foreign_keys = ON")
      after.prepare(
        `INSERT INTO messages (uuid, organization_id, chat_uuid, contact_uuid, direction, type, content, status, created_at, updated_at)
          VALUES ('m4', 'org', 'chat1', 'c1', 'inbound', 'location', '{"latitude":1,"longitude":2}', 'delivered', 't', 't')`
      ).run()
      after.prepare("DELETE FROM contacts WHERE uuid = 'c1'").run()
      expect(after.prepare("SELECT COUNT(*) FROM messages").pluck().get()).toBe(0)
      after.close()
    }))

  it.effect("migration 10 rebuilds templates keeping every row, index and constraint; rejected_reason is null", () =>
    Effect.gen(function* () {
      const filename = files.file()
      const db = new Sqlite(filename)
      db.pragma("foreign_keys = ON")
      applyPending(db, migrations.filter((m) => m.version < 10), "t1")
      db.prepare("INSERT INTO organizations VALUES ('org', 'Org', NULL, NULL, 1, 'active', 't', 't')").run()
      const insert = db.prepare(
        `INSERT INTO templates (uuid, organization_id, name, name_key, language, category, status, components, created_at, updated_at)
          VALUES (?, 'org', ?, ?, ?, ?, ?, ?, ?, ?)`
      )
      const components = '[{"type":"BODY","text":"Hi {{1}}","example":{"body_text":[["Ada"]]}},{"type":"FOOTER","text":"Bye"}]'
      const rows = [
        ["t1", "order_update", "order_update", "en_US", "UTILITY", "APPROVED", components, "2026-01-01T00:00:00.000Z", "2026-01-02T00:00:00.000Z"],
        ["t2", "Welcome", "welcome", "es", "MARKETING", "PENDING", "[]", "2026-01-03T00:00:00.000Z", "2026-01-03T00:00:00.000Z"],
        ["t3", "code", "code", "en", "AUTHENTICATION", "REJECTED", '[{"type":"BODY","text":"{{1}}"}]', "2026-01-04T00:00:00.000Z", "2026-01-05T00:00:00.000Z"]
      ] as const
      for (const row of rows) insert.run(...row)
      expect(() => insert.run("t4", "paused", "paused", "en", "UTILITY", "PAUSED", "[]", "t", "t")).toThrow(/CHECK/)
      const before = db.prepare("SELECT * FROM templates ORDER BY uuid").all()
      const indexesOf = () =>
        db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'templates' ORDER BY name").all()
      const indexes = indexesOf()
      applyPending(db, migrations.filter((m) => m.version <= 10), "t2")
      expect(db.prepare("SELECT * FROM templates ORDER BY uuid").all()).toEqual(
        before.map((row) => ({ ...(row as object), rejected_reason: null }))
      )
      expect(indexesOf()).toEqual(indexes)
      expect(() => insert.run("t5", "Order_Update", "order_update", "en_US", "UTILITY", "PAUSED", "[]", "t", "t")).toThrow(/UNIQUE/)
      expect(() => insert.run("t5", "other", "other", "en_US", "UTILITY", "UNKNOWN", "[]", "t", "t")).toThrow(/CHECK/)
      insert.run("t5", "paused", "paused", "en", "UTILITY", "PAUSED", "[]", "t", "t")
      expect(db.prepare("PRAGMA foreign_key_check").all()).toEqual([])
      db.close()
      // Through the adapter: the old rows read as records, with rejected_reason null.
      const read = yield* withStorage(
        filename,
        Effect.flatMap(Storage, ({ templates }) => templates.findById("org" as never, "t1" as never))
      )
      expect(read).toMatchObject({
        value: { uuid: "t1", name: "order_update", status: "APPROVED", rejected_reason: null, components: JSON.parse(components), updated_at: "2026-01-02T00:00:00.000Z" }
      })
    }))

  it.effect("migration 11 adds the webhook tables to a version-10 file: its organizations get endpoints and events", () =>
    Effect.gen(function* () {
      const filename = files.file()
      const db = new Sqlite(filename)
      db.pragma("foreign_keys = ON")
      applyPending(db, migrations.filter((m) => m.version < 11), "t1")
      db.prepare("INSERT INTO organizations VALUES ('org', 'Org', NULL, NULL, 1, 'active', 't', 't')").run()
      db.close()
      const claimed = yield* withStorage(
        filename,
        Effect.gen(function* () {
          const { contacts, webhooks } = yield* Storage
          const endpoint = { uuid: fixtures.uuid() as never, url: "https://example.com/hooks", events: null, description: null, enabled: true, created_at: "t", updated_at: "t" }
          yield* webhooks.insertEndpoint("org" as never, { endpoint, secret_sealed: "sealed" }, 10)
          yield* contacts.importBulk("org" as never, fixtures.importRequest([fixtures.importRow("+14155550100")], { now: fixtures.instant(1) }))
          return yield* webhooks.claimDue(fixtures.instant(2), fixtures.instant(3), 10)
        })
      )
      expect(claimed.map((delivery) => [delivery.organization_id, delivery.event.type, delivery.attempt])).toEqual([["org", "contact.created", 1]])
      expect(appliedRows(filename).map((row) => (row as { version: number }).version)).toContain(11)
    }))

  it.effect("migration 24 keeps every webhook endpoint with no previous secret; a rotation then stores one", () =>
    Effect.gen(function* () {
      const { filename, db, org } = fileBefore(24)
      db.prepare(
        `INSERT INTO webhook_endpoints (uuid, organization_id, url, events, description, enabled, secret_sealed, created_at, updated_at)
          VALUES ('e1', ?, 'https://hooks.example.com/a', NULL, NULL, 1, 'sealed-1', ?, ?)`
      ).run(org.id, fixtures.instant(0), fixtures.instant(0))
      db.close()
      const [found, rotated] = yield* withStorage(
        filename,
        Effect.gen(function* () {
          const { webhooks } = yield* Storage
          const before = Option.getOrThrow(yield* webhooks.findEndpoint(org.id, "e1" as never))
          const rotation = { expected_secret_sealed: "sealed-1", secret_sealed: "sealed-2", previous_secret_sealed: "sealed-1", previous_secret_expires_at: fixtures.instant(9) }
          expect((yield* webhooks.rotateSecret(org.id, "e1" as never, rotation, fixtures.instant(1)))._tag).toBe("Rotated")
          return [before, Option.getOrThrow(yield* webhooks.findEndpoint(org.id, "e1" as never))] as const
        })
      )
      expect([found.secret_sealed, found.previous_secret_sealed, found.previous_secret_expires_at]).toEqual(["sealed-1", null, null])
      expect([rotated.secret_sealed, rotated.previous_secret_sealed, rotated.previous_secret_expires_at]).toEqual(["sealed-2", "sealed-1", fixtures.instant(9)])
      expect(appliedRows(filename).map((row) => (row as { version: number }).version)).toContain(24)
    }))

  it.effect("migration 14 keeps every channel, each with throughput_mps 50; the column refuses a value outside 1–1 000", () =>
    Effect.gen(function* () {
      const filename = files.file()
      const db = new Sqlite(filename)
      applyPending(db, migrations.filter((m) => m.version < 14), "t1")
      db.prepare("INSERT INTO organizations VALUES ('org', 'Org', NULL, NULL, 1, 'active', 't', 't')").run()
      const insert = db.prepare(
        "INSERT INTO channels (uuid, organization_id, provider, phone_number_id, display_phone_number, waba_id, access_token_sealed, access_token_last4, created_at, updated_at) VALUES (?, 'org', 'whatsapp_cloud', ?, '+31612345678', '1', 'sealed', 'abcd', ?, 't')"
      )
      const uuids = [fixtures.uuid(), fixtures.uuid()]
      uuids.forEach((uuid, index) => insert.run(uuid, `10${index}`, fixtures.instant(index)))
      db.close()
      const listed = yield* withStorage(
        filename,
        Effect.flatMap(Storage, ({ channels }) => channels.list("org" as never))
      )
      expect(listed.map((channel) => [channel.uuid, channel.phone_number_id, channel.access_token_last4, channel.throughput_mps])).toEqual([
        [uuids[0], "100", "abcd", 50],
        [uuids[1], "101", "abcd", 50]
      ])
      const check = new Sqlite(filename)
      try {
        for (const bad of [0, 1001]) {
          expect(() => check.prepare("UPDATE channels SET throughput_mps = ?").run(bad)).toThrow(/CHECK constraint/)
        }
      } finally {
        check.close()
      }
    }))

  it.effect("migration 16 backfills each contact's window per channel from its inbound messages, and the chat's latest one", () =>
    Effect.gen(function* () {
      const filename = files.file()
      const db = new Sqlite(filename)
      db.pragma("foreign_keys = ON")
      applyPending(db, migrations.filter((m) => m.version < 16), "t1")
      db.prepare("INSERT INTO organizations VALUES ('org', 'Org', NULL, NULL, 1, 'active', 't', 't')").run()
      for (const n of [1, 2, 3]) {
        db.prepare(`INSERT INTO contacts (uuid, organization_id, phone, created_at, updated_at) VALUES ('c${n}', 'org', '+1415555010${n}', 't', 't')`).run()
        db.prepare(`INSERT INTO chats (uuid, organization_id, contact_uuid, status, created_at, updated_at) VALUES ('chat${n}', 'org', 'c${n}', 'open', 't', 't')`).run()
      }
      const insert = db.prepare(
        `INSERT INTO messages (uuid, organization_id, chat_uuid, contact_uuid, direction, type, text, content, status, channel_uuid, created_at, updated_at)
          VALUES (?, 'org', ?, ?, ?, 'text', 'hi', ?, ?, ?, ?, ?)`
      )
      const [channelA, channelB] = ["chan-a", "chan-b"]
      const row = (uuid: string, contact: number, direction: string, content: string | null, channel: string | null, createdAt: string) =>
        insert.run(uuid, `chat${contact}`, `c${contact}`, direction, content, direction === "inbound" ? "delivered" : "sent", channel, createdAt, createdAt)
      // Meta's timestamp 2026-01-01T10:00:00Z, received a minute later: the timestamp counts.
      row("m1", 1, "inbound", '{"timestamp":"1767261600"}', channelA, "2026-01-01T10:01:00.000Z")
      // A timestamp after the receipt (a clock ahead): the receipt counts.
      row("m2", 1, "inbound", '{"timestamp":"1767265200"}', channelA, "2026-01-01T10:30:00.000Z")
      // No timestamp: created_at.
      row("m3", 1, "inbound", null, channelB, "2026-01-01T09:00:00.000Z")
      // Outbound, channel-less and unreadable timestamps are ignored or fall back to created_at.
      row("m4", 1, "outbound", null, channelB, "2026-01-02T00:00:00.000Z")
      row("m5", 1, "inbound", null, null, "2026-01-03T00:00:00.000Z")
      row("m6", 2, "inbound", '{"timestamp":"soon"}', channelB, "2026-01-04T00:00:00.000Z")
      row("m7", 3, "outbound", null, channelA, "2026-01-05T00:00:00.000Z")
      db.close()
      const read = yield* withStorage(
        filename,
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const windows = yield* Effect.all([
            chats.lastInboundAt("org" as never, "c1" as never, channelA),
            chats.lastInboundAt("org" as never, "c1" as never, channelB),
            chats.lastInboundAt("org" as never, "c2" as never, channelB),
            chats.lastInboundAt("org" as never, "c3" as never, channelA)
          ])
          const records = yield* Effect.all(["chat1", "chat2", "chat3"].map((id) => chats.findById("org" as never, id as never)))
          return { windows, records }
        })
      )
      expect(read.windows.map((window) => window._tag === "Some" ? window.value : null)).toEqual([
        "2026-01-01T10:30:00.000Z",
        "2026-01-01T09:00:00.000Z",
        "2026-01-04T00:00:00.000Z",
        null
      ])
      expect(read.records.map((record) => record._tag === "Some" ? [record.value.last_inbound_channel_uuid, record.value.window_expires_at] : null)).toEqual([
        [channelA, "2026-01-02T10:30:00.000Z"],
        [channelB, "2026-01-05T00:00:00.000Z"],
        [null, null]
      ])
      // The window goes with its contact.
      const after = new Sqlite(filename)
      after.pragma("foreign_keys = ON")
      after.prepare("DELETE FROM contacts WHERE uuid = 'c1'").run()
      expect(after.prepare("SELECT contact_uuid FROM customer_service_windows ORDER BY contact_uuid").pluck().all()).toEqual(["c2"])
      after.close()
    }))

  it.effect("migration 17 keeps every idempotency record, without a resource_uuid; a takeover of one then stores and answers its own", () =>
    Effect.gen(function* () {
      const filename = files.file()
      const db = new Sqlite(filename)
      applyPending(db, migrations.filter((m) => m.version < 17), "t1")
      db.prepare("INSERT INTO organizations VALUES ('org', 'Org', NULL, NULL, 1, 'active', 't', 't')").run()
      const insert = db.prepare(
        "INSERT INTO idempotency_keys (organization_id, idempotency_key, fingerprint, locked_until, expires_at, response_status, response_body, created_at) VALUES ('org', ?, 'fp', ?, ?, ?, ?, ?)"
      )
      insert.run("crashed", fixtures.instant(1), fixtures.instant(1440), null, null, fixtures.instant(0))
      insert.run("done", fixtures.instant(1), fixtures.instant(1440), 200, "{}", fixtures.instant(0))
      db.close()
      const at = (minutes: number, resourceUuid: string) => ({
        fingerprint: "fp",
        resourceUuid,
        now: fixtures.instant(minutes),
        lockedUntil: fixtures.instant(minutes + 1),
        expiresAt: fixtures.instant(minutes + 1440)
      })
      const outcomes = yield* withStorage(
        filename,
        Effect.flatMap(Storage, ({ idempotency }) =>
          Effect.all([
            idempotency.claim("org" as never, { key: "done", ...at(2, "uuid-a") }),
            idempotency.claim("org" as never, { key: "crashed", ...at(2, "uuid-b") }),
            idempotency.claim("org" as never, { key: "crashed", ...at(4, "uuid-c") })
          ])
        )
      )
      expect(outcomes).toEqual([
        { _tag: "Completed", status: 200, body: "{}" },
        { _tag: "Claimed", resourceUuid: "uuid-b", takeover: true },
        { _tag: "Claimed", resourceUuid: "uuid-b", takeover: true }
      ])
    }))

  it.effect("migration 18 keeps every contact, each without a marketing opt-out; then an opt-out and a broadcast round-trip", () =>
    Effect.gen(function* () {
      const { filename, db, org } = fileBefore(18)
      const ids = [fixtures.uuid(), fixtures.uuid()].sort() as Array<ContactId>
      ids.forEach((uuid, i) => {
        db.prepare("INSERT INTO contacts (uuid, organization_id, phone, first_name, created_at, updated_at) VALUES (?, ?, ?, 'Ada', 't', 't')").run(uuid, org.id, fixtures.phone(i))
      })
      db.close()
      const { before, after, broadcast } = yield* withStorage(
        filename,
        Effect.gen(function* () {
          const { broadcasts, contacts } = yield* Storage
          const before = (yield* contacts.list(org.id, { page: 1, per_page: 10 })).items
          yield* contacts.markMarketingOptOut(org.id, ids[0]!, "2026-06-01T00:00:00.000Z")
          const after = (yield* contacts.list(org.id, { page: 1, per_page: 10 })).items
          const broadcast = yield* broadcasts.create(org.id, {
            uuid: fixtures.uuid() as BroadcastId,
            name: "Spring sale",
            status: "sending",
            template: { name: "sale", language: { code: "en_US" }, components: [] },
            audience: { group_uuids: [], label_uuids: [], contact_uuids: ids },
            channel_uuid: null,
            transport: "recording",
            send_at: null,
            now: "2026-06-01T00:00:00.000Z"
          })
          return { before, after, broadcast: { created: broadcast, found: yield* broadcasts.findById(org.id, broadcast.uuid) } }
        })
      )
      expect(before.map((contact) => contact.marketing_opt_out_at)).toEqual([null, null])
      expect(after.find((contact) => contact.uuid === ids[0])?.marketing_opt_out_at).toBe("2026-06-01T00:00:00.000Z")
      expect(broadcast.found).toEqual(Option.some(broadcast.created))
      expect(broadcast.created.counts.total).toBe(0)
    }))

  it.effect("migration 19 adds the media tables and the plan's media_bytes_limit (NULL) to a version-18 file, its data kept; then an upload and an inbound image round-trip", () =>
    Effect.gen(function* () {
      const { filename, db, org } = fileBefore(19)
      db.close()
      const channel = fixtures.uuid()
      const file = fixtures.mediaUpload(1, { size: 5_000_000_123 })
      const image = fixtures.inboundMedia(channel, 1)
      const { inserted, found, jobs } = yield* withStorage(
        filename,
        Effect.gen(function* () {
          const { chats, media } = yield* Storage
          const inserted = yield* media.insert(org.id, file, null)
          const request: ChatAppendRequest = {
            contact: { _tag: "ByPhone", phone: fixtures.phone(1), create: { uuid: fixtures.uuid() as ContactId, first_name: null, last_name: null } },
            newChat: { uuid: fixtures.uuid() as ChatId, status: "open" },
            message: {
              uuid: fixtures.uuid() as never,
              direction: "inbound",
              type: "image",
              text: null,
              template: null,
              media: { type: "image", id: image.fetch!.provider_media_id, media_uuid: image.uuid, status: "pending", failure: null },
              content: null,
              status: "delivered",
              provider_message_id: "wamid.image",
              failure: null,
              channel_uuid: channel,
              transport: null,
              attempts: 0,
              next_attempt_at: null,
              broadcast_uuid: null,
              reply_to: null,
              reactions: [],
              created_at: fixtures.instant(1),
              updated_at: fixtures.instant(1)
            },
            unreadIncrement: 1,
            reopen: { from: [], to: "open" },
            dedupe: true,
            now: fixtures.instant(1),
            media: image
          }
          yield* chats.appendMessage(org.id, request)
          const jobs = yield* media.claimFetches(fixtures.instant(2), fixtures.instant(3), 10)
          const plan = Option.map(yield* (yield* Storage).organizations.findById(org.id), (found) => found.plan.media_bytes_limit)
          expect(plan).toEqual(Option.some(null))
          return { inserted, found: yield* media.get(org.id, file.uuid), jobs }
        })
      )
      expect(inserted._tag === "Inserted" && Option.some(inserted.media)).toEqual(found)
      expect(jobs.map((job) => [job.media.uuid, job.channel_uuid, job.media.status])).toEqual([[image.uuid, channel, "pending"]])
    }))

  it.effect("migration 21 fills transport: outbound whatsapp with a channel, else recording; inbound NULL; broadcasts by their channel", () =>
    Effect.gen(function* () {
      const { filename, db, org } = fileBefore(21)
      db.prepare("INSERT INTO contacts (uuid, organization_id, phone, created_at, updated_at) VALUES ('c1', ?, '+14155550101', 't', 't')").run(org.id)
      db.prepare("INSERT INTO chats (uuid, organization_id, contact_uuid, status, created_at, updated_at) VALUES ('chat1', ?, 'c1', 'open', 't', 't')").run(org.id)
      const insert = db.prepare(
        `INSERT INTO messages (uuid, organization_id, chat_uuid, contact_uuid, direction, type, text, status, channel_uuid, created_at, updated_at)
          VALUES (?, ?, 'chat1', 'c1', ?, 'text', 'hi', ?, ?, ?, ?)`
      )
      const channel = fixtures.uuid()
      const rows = [
        ["m1", "outbound", channel],
        ["m2", "outbound", null],
        ["m3", "inbound", channel],
        ["m4", "inbound", null]
      ] as const
      rows.forEach(([uuid, direction, channelUuid], n) =>
        insert.run(uuid, org.id, direction, direction === "inbound" ? "delivered" : "sent", channelUuid, fixtures.instant(n), fixtures.instant(n))
      )
      const broadcast = db.prepare(
        `INSERT INTO broadcasts (uuid, organization_id, name, status, template, audience, channel_uuid, created_at)
          VALUES (?, ?, 'Sale', 'completed', '{"name":"sale","language":{"code":"en_US"},"components":[]}',
            '{"group_uuids":[],"label_uuids":[],"contact_uuids":[]}', ?, ?)`
      )
      const [viaChannel, recorded] = [fixtures.uuid(), fixtures.uuid()]
      broadcast.run(viaChannel, org.id, channel, fixtures.instant(1))
      broadcast.run(recorded, org.id, null, fixtures.instant(2))
      db.close()
      const read = yield* withStorage(
        filename,
        Effect.gen(function* () {
          const { broadcasts, chats } = yield* Storage
          const messages = yield* Effect.all(rows.map(([uuid]) => chats.findMessage(org.id, uuid as never)))
          const found = yield* Effect.all([viaChannel, recorded].map((id) => broadcasts.findById(org.id, id as BroadcastId)))
          return { messages, found }
        })
      )
      expect(read.messages.map((message) => Option.map(message, (m) => m.transport))).toEqual(
        [Option.some("whatsapp"), Option.some("recording"), Option.some(null), Option.some(null)]
      )
      expect(read.found.map((found) => Option.map(found, (b) => b.transport))).toEqual([Option.some("whatsapp"), Option.some("recording")])
      // The column refuses a kind it does not know.
      const after = new Sqlite(filename)
      expect(() => after.prepare("UPDATE messages SET transport = 'carrier-pigeon' WHERE uuid = 'm1'").run()).toThrow(/CHECK/)
      after.close()
    }))

  it.effect("migration 23 folds inbound reactions into their targets (the newest per target; a removal leaves none) and gives chats whose last message was a reaction their newest other message", () =>
    Effect.gen(function* () {
      const { filename, db, org } = fileBefore(23)
      db.prepare("INSERT INTO contacts (uuid, organization_id, phone, created_at, updated_at) VALUES ('c1', ?, '+14155550101', 't', 't')").run(org.id)
      db.prepare("INSERT INTO contacts (uuid, organization_id, phone, created_at, updated_at) VALUES ('c2', ?, '+14155550102', 't', 't')").run(org.id)
      const chat = db.prepare("INSERT INTO chats (uuid, organization_id, contact_uuid, status, created_at, updated_at) VALUES (?, ?, ?, 'open', 't', 't')")
      chat.run("chat1", org.id, "c1")
      chat.run("chat2", org.id, "c2")
      const insert = db.prepare(
        `INSERT INTO messages (uuid, organization_id, chat_uuid, contact_uuid, direction, type, text, content, status, provider_message_id, created_at, updated_at)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
      )
      const reaction = (target: string, emoji: string) => JSON.stringify({ timestamp: "1", reaction: { message_id: target, emoji } })
      const rows = [
        ["m1", "chat1", "c1", "outbound", "text", "Hello", null, "sent", "wamid.out"],
        ["m2", "chat1", "c1", "inbound", "text", "Hi", null, "delivered", "wamid.in"],
        ["r1", "chat1", "c1", "inbound", "reaction", "😀", reaction("wamid.in", "😀"), "delivered", "wamid.r1"],
        ["r2", "chat1", "c1", "inbound", "reaction", "👍", reaction("wamid.out", "👍"), "delivered", "wamid.r2"],
        ["r3", "chat1", "c1", "inbound", "reaction", "❤️", reaction("wamid.out", "❤️"), "delivered", "wamid.r3"],
        ["r4", "chat1", "c1", "inbound", "reaction", null, reaction("wamid.in", ""), "delivered", "wamid.r4"],
        ["r5", "chat2", "c2", "inbound", "reaction", "👍", reaction("wamid.nobody", "👍"), "delivered", "wamid.r5"]
      ] as const
      rows.forEach((row, n) => insert.run(row[0], org.id, ...row.slice(1), fixtures.instant(n), fixtures.instant(n)))
      db.prepare("UPDATE chats SET last_message_uuid = 'r4', last_message_at = ? WHERE uuid = 'chat1'").run(fixtures.instant(5))
      db.prepare("UPDATE chats SET last_message_uuid = 'r5', last_message_at = ? WHERE uuid = 'chat2'").run(fixtures.instant(6))
      db.close()
      const read = yield* withStorage(
        filename,
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const messages = yield* Effect.all(["m1", "m2", "r3"].map((uuid) => chats.findMessage(org.id, uuid as never)))
          const chatRecords = yield* Effect.all(["chat1", "chat2"].map((uuid) => chats.findById(org.id, uuid as never)))
          return { messages: messages.map(Option.getOrThrow), chats: chatRecords.map(Option.getOrThrow) }
        })
      )
      expect(read.messages.map((m) => [m.uuid, m.reactions, m.reply_to])).toEqual([
        ["m1", [{ emoji: "❤️", by: "contact", at: fixtures.instant(4) }], null],
        ["m2", [], null],
        ["r3", [], null]
      ])
      expect(read.chats.map((c) => [c.uuid, c.last_message?.uuid ?? null, c.last_message_at])).toEqual([
        ["chat1", "m2", fixtures.instant(1)],
        ["chat2", null, null]
      ])
    }))

  it.effect("migration 25 gives every existing API key expires_at NULL: it keeps working and can be rotated", () =>
    Effect.gen(function* () {
      const { filename, db, org } = fileBefore(25)
      const key = fixtures.apiKey(org.id)
      db.prepare("INSERT INTO api_keys (id, organization_id, prefix, hash, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, NULL)").run(
        key.id,
        org.id,
        key.prefix,
        key.hash,
        key.created_at
      )
      db.close()
      const read = yield* withStorage(
        filename,
        Effect.gen(function* () {
          const { organizations } = yield* Storage
          const before = yield* organizations.findCredentialByHash(key.hash)
          const rotated = yield* organizations.rotateApiKey(key.id, fixtures.apiKey(org.id), fixtures.instant(1))
          return { before: Option.map(before, (found) => found.api_key), rotated }
        })
      )
      expect(read.before).toEqual(Option.some(key))
      expect(read.rotated).toEqual(Option.some({ ...key, expires_at: fixtures.instant(1) }))
    }))

  it.effect("migration 20 rebuilds templates keeping every row (FLAGGED and REINSTATED become APPROVED), keyed by account; one sync record per channel account, due within 6 hours", () =>
    Effect.gen(function* () {
      const { filename, db, org } = fileBefore(20)
      db.pragma("foreign_keys = ON")
      const other = fixtures.organization()
      db.prepare("INSERT INTO organizations (id, name, contacts_limit, label_limit, api_access, subscription, created_at, updated_at) VALUES (?, 'Other', NULL, NULL, 1, 'active', 't', 't')").run(other.id)
      const insertTemplate = db.prepare(
        `INSERT INTO templates (uuid, organization_id, name, name_key, language, category, status, rejected_reason, components, created_at, updated_at)
          VALUES (?, ?, ?, ?, 'en_US', 'UTILITY', ?, ?, ?, ?, ?)`
      )
      const components = '[{"type":"BODY","text":"Hi {{1}}","example":{"body_text":[["Ada"]]}}]'
      const rows = [
        ["t1", org.id, "Order_Update", "order_update", "APPROVED", null, components, "2026-01-01T00:00:00.000Z", "2026-01-02T00:00:00.000Z"],
        ["t2", org.id, "flagged", "flagged", "FLAGGED", null, "[]", "2026-01-03T00:00:00.000Z", "2026-01-03T00:00:00.000Z"],
        ["t3", org.id, "reinstated", "reinstated", "REINSTATED", null, "[]", "2026-01-04T00:00:00.000Z", "2026-01-04T00:00:00.000Z"],
        ["t4", org.id, "rejected", "rejected", "REJECTED", "INVALID_FORMAT", "[]", "2026-01-05T00:00:00.000Z", "2026-01-06T00:00:00.000Z"],
        ["t5", other.id, "order_update", "order_update", "PAUSED", null, "[]", "2026-01-07T00:00:00.000Z", "2026-01-07T00:00:00.000Z"]
      ] as const
      for (const row of rows) insertTemplate.run(...row)
      expect(() => insertTemplate.run("t6", org.id, "archived", "archived", "ARCHIVED", null, "[]", "t", "t")).toThrow(/CHECK/)
      const insertChannel = db.prepare(
        `INSERT INTO channels (uuid, organization_id, provider, phone_number_id, display_phone_number, waba_id, access_token_sealed,
          access_token_last4, created_at, updated_at) VALUES (?, ?, 'whatsapp_cloud', ?, '+31612345678', ?, 'sealed', 'abcd', 't', 't')`
      )
      insertChannel.run(fixtures.uuid(), org.id, "100", "111")
      insertChannel.run(fixtures.uuid(), org.id, "101", "111")
      insertChannel.run(fixtures.uuid(), org.id, "102", "222")
      insertChannel.run(fixtures.uuid(), other.id, "103", "111")
      const before = db.prepare("SELECT * FROM templates ORDER BY uuid").all() as Array<Record<string, unknown>>
      const startedAt = Date.now()
      applyPending(db, migrations, "t2")
      const endedAt = Date.now()
      const migrated = (row: Record<string, unknown>) => ({
        ...row,
        status: row.status === "FLAGGED" || row.status === "REINSTATED" ? "APPROVED" : row.status,
        waba_id: null,
        provider_template_id: null,
        problems: "[]"
      })
      expect(db.prepare("SELECT * FROM templates ORDER BY uuid").all()).toEqual(before.map(migrated))
      expect(
        db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'templates' ORDER BY name").pluck().all()
      ).toEqual(["sqlite_autoindex_templates_1", "templates_by_provider_id", "templates_identity", "templates_newest"])
      // Meta's list of statuses; the identity per account, no account one group of its own.
      const insertNew = db.prepare(
        `INSERT INTO templates (uuid, organization_id, waba_id, name, name_key, language, category, status, components, created_at, updated_at)
          VALUES (?, ?, ?, ?, ?, 'en_US', 'UTILITY', ?, '[]', 't', 't')`
      )
      expect(() => insertNew.run("n1", org.id, null, "flagged_again", "flagged_again", "FLAGGED")).toThrow(/CHECK/)
      expect(() => insertNew.run("n1", org.id, null, "x", "order_update", "APPROVED")).toThrow(/UNIQUE/)
      insertNew.run("n1", org.id, "111", "order_update", "order_update", "ARCHIVED")
      insertNew.run("n2", org.id, "222", "order_update", "order_update", "LOCKED")
      expect(() => insertNew.run("n3", org.id, "111", "Order_Update", "order_update", "APPROVED")).toThrow(/UNIQUE/)
      expect(() => db.prepare("UPDATE templates SET problems = 'not json' WHERE uuid = 'n1'").run()).toThrow(/CHECK/)
      // One sync record per (organization, account) of the channels, due at a time spread
      // over the next 6 hours, never run, not leased.
      const syncs = db.prepare("SELECT * FROM template_syncs ORDER BY organization_id, waba_id").all() as Array<Record<string, unknown>>
      expect(syncs.map((sync) => [sync.organization_id, sync.waba_id]).sort()).toEqual([[org.id, "111"], [org.id, "222"], [other.id, "111"]].sort())
      for (const sync of syncs) {
        expect(sync).toMatchObject({ lease: null, lease_until: null, last_run_at: null, last_outcome: null, last_error: null })
        expect(sync.next_due_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
        const due = Date.parse(sync.next_due_at as string)
        expect(due).toBeGreaterThanOrEqual(startedAt - 1000)
        expect(due).toBeLessThan(endedAt + 21_600_000)
      }
      expect(db.prepare("PRAGMA foreign_key_check").all()).toEqual([])
      db.close()
      // Through the adapter: the old rows read as templates with no account, the records are claimable once due.
      const [read, claimed] = yield* withStorage(
        filename,
        Effect.gen(function* () {
          const { templateSyncs, templates } = yield* Storage
          const template = yield* templates.findByIdentity(org.id, "order_update", "en_US", "333")
          const due = new Date(endedAt + 21_600_000).toISOString()
          return [template, yield* templateSyncs.claim({ now: due, lease: "l", leaseUntil: due, limit: 10 })] as const
        })
      )
      expect(read).toEqual(
        Option.some({
          uuid: "t1",
          waba_id: null,
          provider_template_id: null,
          name: "Order_Update",
          language: "en_US",
          category: "UTILITY",
          status: "APPROVED",
          rejected_reason: null,
          components: JSON.parse(components),
          problems: [],
          created_at: "2026-01-01T00:00:00.000Z",
          updated_at: "2026-01-02T00:00:00.000Z"
        })
      )
      expect(claimed).toHaveLength(3)
    }))

  it.effect("a failing migration rolls the whole run back and fails with StorageError", () =>
    Effect.gen(function* () {
      const db = new Sqlite(":memory:")
      const broken: Migration = { version: 100, name: "broken", up: "CREATE TABLE oops (" }
      const error = yield* Effect.flip(migrate(db, [...migrations, broken]))
      expect(error._tag).toBe("StorageError")
      expect(error.operation).toBe("migrate")
      expect(tableNames(db)).toEqual([])
      db.close()
    }))
})

describe("health: the schema's version", () => {
  it.effect("current on a migrated file; not current, saying why, with a version newer than the code's or a known one missing", () =>
    Effect.gen(function* () {
      const db = new Sqlite(":memory:")
      const storage = yield* Effect.provide(Storage, SqliteStorage.layerFromClient(db))
      const newest = Math.max(...migrations.map((m) => m.version))
      expect(yield* storage.health()).toEqual({ migrations_current: true })
      db.prepare("INSERT INTO schema_migrations VALUES (?, 'from the future', 't')").run(newest + 1)
      expect(yield* storage.health()).toEqual({
        migrations_current: false,
        detail: `schema version ${newest + 1} is newer than this code's ${newest}`
      })
      db.prepare("DELETE FROM schema_migrations WHERE version IN (?, 5)").run(newest + 1)
      expect(yield* storage.health()).toEqual({ migrations_current: false, detail: "migrations pending: 5" })
      db.close()
      expect((yield* Effect.flip(storage.health())).operation).toBe("health")
    }))
})

describe("connection set-up", () => {
  it("turns on WAL, the busy timeout, synchronous NORMAL and foreign keys", () => {
    const db = openDatabase(files.file(), 5000)
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal")
    expect(db.pragma("busy_timeout", { simple: true })).toBe(5000)
    expect(db.pragma("synchronous", { simple: true })).toBe(1)
    expect(db.pragma("foreign_keys", { simple: true })).toBe(1)
    db.close()
    const custom = openDatabase(files.file(), 250)
    expect(custom.pragma("busy_timeout", { simple: true })).toBe(250)
    custom.close()
  })

  it("leaves an in-memory database out of WAL mode", () => {
    const db = openDatabase(":memory:", 5000)
    expect(db.pragma("journal_mode", { simple: true })).toBe("memory")
    db.close()
  })

  it.live("waits busyTimeoutMs for another connection's write lock, then fails with StorageError", () =>
    Effect.gen(function* () {
      const filename = files.file()
      yield* withStorage(filename, Effect.void)
      const holder = new Sqlite(filename)
      holder.exec("BEGIN IMMEDIATE")
      const started = Date.now()
      const error = yield* Effect.flip(withStorage(filename, Effect.void, 200)).pipe(
        Effect.ensuring(Effect.sync(() => holder.close()))
      )
      expect(Date.now() - started).toBeGreaterThanOrEqual(150)
      expect(error._tag).toBe("StorageError")
      expect(error.operation).toBe("migrate")
      expect((error.cause as { code?: unknown }).code).toBe("SQLITE_BUSY")
    }))
})

describe("two processes opening one new file together", () => {
  const { available, startChild } = fixtureProcesses("open-storage.ts")

  it.skipIf(!available)(
    "both succeed and each migration is applied exactly once",
    async () => {
      for (let round = 0; round < 2; round++) {
        const filename = files.file()
        const children = [startChild(filename), startChild(filename)]
        await Promise.all(children.map((child) => child.ready))
        for (const child of children) child.go()
        const results = await Promise.all(children.map((child) => child.exited))
        for (const result of results) expect(result).toEqual({ code: 0, output: "ready\ndone\n" })
        expect(appliedRows(filename).map((row) => (row as { version: number }).version)).toEqual(
          migrations.map((m) => m.version)
        )
      }
    },
    60_000
  )
})

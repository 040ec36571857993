import { describe, expect, it } from "@effect/vitest"
import Pg from "pg"
import { Cause, Effect, Exit, Option } from "effect"
import { afterAll } from "vitest"
import { fixtures } from "@switchboard/storage-contract"
import { PostgresStorage, SchemaNotCurrentError, SchemaTooNewError } from "@switchboard/storage-postgres"
import { parseTimestamp } from "../src/internal/connection.js"
import { LATEST_VERSION, migrations } from "../src/migrations.js"
import { quoteIdentifier } from "../src/internal/sql.js"
import { postgresUrl, skipWithoutPostgres, testSchemas } from "./support.js"

const schemas = testSchemas()

/** The versions `schema_migrations` of `schema` records, oldest first. */
const versionsOf = async (schema: string) =>
  (await schemas.pool().query<{ version: number }>(`SELECT version FROM "${schema}".schema_migrations ORDER BY version`)).rows.map(
    (row) => row.version
  )

/** The `StorageError` cause a failed exit carries. */
const causeOf = (exit: Exit.Exit<unknown, { readonly cause?: unknown }>) =>
  Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause))?.cause : undefined

describe("parseTimestamp (type parser of timestamptz)", () => {
  it("reads the offset, whatever the session's time zone, into an ISO string in UTC with ms", () => {
    expect(parseTimestamp("2026-11-27 04:39:11.123+00")).toBe("2026-11-27T04:39:11.123Z")
    expect(parseTimestamp("2026-11-27 06:39:11.123456+02")).toBe("2026-11-27T04:39:11.123Z")
    expect(parseTimestamp("2026-11-26 23:09:11-05:30")).toBe("2026-11-27T04:39:11.000Z")
    expect(parseTimestamp("2026-11-27 04:39:11.1+00")).toBe("2026-11-27T04:39:11.100Z")
    expect(parseTimestamp("2026-11-27 04:39:11+00")).toBe("2026-11-27T04:39:11.000Z")
    expect(parseTimestamp("2026-11-27 04:39:11.12+00:00")).toBe("2026-11-27T04:39:11.120Z")
    expect(parseTimestamp("0999-01-02 03:04:05.999999+00")).toBe("0999-01-02T03:04:05.999Z")
  })

  it("answers as Date would for every shape of UTC text (the text-only path against the Date path)", () => {
    for (let index = 0; index < 2_000; index++) {
      const instant = new Date(Date.UTC(1970, 0, 1) + Math.floor(Math.random() * 4_000_000_000_000))
      const iso = instant.toISOString()
      const digits = index % 7
      const micro = String(Math.floor(Math.random() * 1_000_000)).padStart(6, "0").slice(0, digits)
      const text = `${iso.slice(0, 10)} ${iso.slice(11, 19)}${digits === 0 ? "" : `.${micro}`}+00`
      const expected = new Date(`${iso.slice(0, 19)}${digits === 0 ? "" : `.${micro.padEnd(3, "0").slice(0, 3)}`}Z`).toISOString()
      expect(parseTimestamp(text)).toBe(expected)
    }
  })
})

describe("PostgresStorage.redactUrl", () => {
  it("removes the user, the password and a password= parameter", () => {
    expect(PostgresStorage.redactUrl("postgres://app:s3cret@db:5432/app?sslmode=require&password=x")).toBe(
      "postgres://db:5432/app?sslmode=require"
    )
    expect(PostgresStorage.redactUrl("connect ECONNREFUSED postgresql://u:p@h/d")).toBe("connect ECONNREFUSED postgresql://h/d")
  })
})

/** A new schema, migrated, and a pool of its own (ended with the test's scope). */
const migratedSchema = Effect.gen(function* () {
  const schema = schemas.fresh()
  const pool = new Pg.Pool({ connectionString: postgresUrl! })
  yield* Effect.addFinalizer(() => Effect.promise(() => pool.end()))
  yield* PostgresStorage.migrate(pool, schema)
  return { schema, pool }
})

/**
 * A new schema with the migrations up to `version` applied (as a store migrated by an
 * earlier Switchboard holds it), and a pool of its own (ended with the test's scope).
 */
const schemaAt = (version: number) =>
  Effect.gen(function* () {
    const schema = schemas.fresh()
    const pool = new Pg.Pool({ connectionString: postgresUrl! })
    yield* Effect.addFinalizer(() => Effect.promise(() => pool.end()))
    yield* Effect.promise(async () => {
      const client = await pool.connect()
      try {
        await client.query("BEGIN")
        // The migrator's lock: CREATE EXTENSION is database-wide.
        await client.query("SELECT pg_advisory_xact_lock($1)", [0x5357_4244])
        await client.query(`CREATE SCHEMA ${quoteIdentifier(schema)}`)
        await client.query("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        const trigram = await client.query<{ schema: string }>(
          "SELECT n.nspname AS schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'"
        )
        const context = { schema: quoteIdentifier(schema), trigramSchema: quoteIdentifier(trigram.rows[0]!.schema) }
        await client.query(
          `CREATE TABLE ${context.schema}.schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`
        )
        for (const migration of migrations.filter((each) => each.version <= version)) {
          await client.query(migration.sql(context))
          await client.query(`INSERT INTO ${context.schema}.schema_migrations (version, name) VALUES ($1, $2)`, [migration.version, migration.name])
        }
        await client.query("COMMIT")
      } catch (error) {
        await client.query("ROLLBACK")
        throw error
      } finally {
        client.release()
      }
    })
    return { schema, pool }
  })

describe.skipIf(skipWithoutPostgres)("migrations on the PostgreSQL server at POSTGRES_URL", () => {
  afterAll(schemas.drop)

  it.effect("two migrators at once (two pools, as two processes) migrate once; a third start finds nothing to do", () =>
    Effect.gen(function* () {
      const schema = schemas.fresh()
      const pools = [new Pg.Pool({ connectionString: postgresUrl! }), new Pg.Pool({ connectionString: postgresUrl! })]
      yield* Effect.addFinalizer(() => Effect.promise(() => Promise.all(pools.map((pool) => pool.end()))))
      const versions = yield* Effect.all(
        pools.map((pool) => PostgresStorage.migrate(pool, schema)),
        { concurrency: "unbounded" }
      )
      expect(versions).toEqual([LATEST_VERSION, LATEST_VERSION])
      expect(yield* Effect.promise(() => versionsOf(schema))).toEqual(migrations.map((migration) => migration.version))
      expect(yield* PostgresStorage.migrate(pools[0]!, schema)).toBe(LATEST_VERSION)
      expect(yield* Effect.promise(() => versionsOf(schema))).toHaveLength(migrations.length)
    }).pipe(Effect.scoped)
  )

  it.effect("a schema at version 1 (before media) migrates to the latest keeping its data; media then round-trip", () =>
    Effect.gen(function* () {
      // Version 1: what a store migrated before media holds.
      const { schema, pool } = yield* schemaAt(1)
      const org = fixtures.organization()
      const before = yield* Effect.flip(Effect.scoped(PostgresStorage.make({ pool, schema, migrate: false })))
      expect(before.cause).toBeInstanceOf(SchemaNotCurrentError)
      yield* Effect.promise(() =>
        pool.query(
          `INSERT INTO "${schema}".organizations (id, name, api_access, subscription, created_at, updated_at)
            VALUES ($1, 'Org', true, 'active', now(), now())`,
          [org.id]
        )
      )
      expect(yield* PostgresStorage.migrate(pool, schema)).toBe(LATEST_VERSION)
      expect(yield* Effect.promise(() => versionsOf(schema))).toEqual(migrations.map((migration) => migration.version))
      const storage = yield* Effect.scoped(PostgresStorage.make({ pool, schema, migrate: false }))
      expect((yield* storage.organizations.list()).map((each) => [each.id, each.plan.media_bytes_limit])).toEqual([[org.id, null]])
      const file = fixtures.mediaUpload(1, { size: 5_000_000_123 })
      const inserted = yield* storage.media.insert(org.id, file, null)
      expect(inserted._tag === "Inserted" && Option.some(inserted.media)).toEqual(yield* storage.media.get(org.id, file.uuid))
      expect(yield* storage.media.bytesUsed(org.id)).toBe(5_000_000_123)
    }).pipe(Effect.scoped)
  )

  it.effect("the transport kind migration fills transport: outbound whatsapp with a channel, else recording; inbound NULL; broadcasts by their channel", () =>
    Effect.gen(function* () {
      const { schema, pool } = yield* migratedSchema
      const q = `"${schema}"`
      const transportMigration = migrations.find((migration) => migration.name === "transport kind")!
      // Back to the version before: what a store migrated before the transport kind holds.
      // Migrations 5 (scheduled sends), 6 (replies and reactions), 7 (webhook secret
      // rotation) and 8 (API key expiry) undone first.
      yield* Effect.promise(() =>
        pool.query(`DROP INDEX ${q}.messages_send_queue_scheduled; ALTER TABLE ${q}.messages DROP COLUMN scheduled_at;
          ALTER TABLE ${q}.messages DROP CONSTRAINT messages_status_check;
          ALTER TABLE ${q}.messages ADD CONSTRAINT messages_status_check
            CHECK (status IN ('queued', 'sending', 'sent', 'delivered', 'read', 'failed'));
          ALTER TABLE ${q}.messages DROP COLUMN transport; ALTER TABLE ${q}.broadcasts DROP COLUMN transport;
          ALTER TABLE ${q}.messages DROP COLUMN reply_to, DROP COLUMN reactions;
          ALTER TABLE ${q}.api_keys DROP COLUMN expires_at;
          ALTER TABLE ${q}.webhook_endpoints DROP COLUMN previous_secret_sealed, DROP COLUMN previous_secret_expires_at;
          DELETE FROM ${q}.schema_migrations WHERE version >= ${transportMigration.version}`)
      )
      const org = fixtures.organization()
      const channel = fixtures.uuid()
      const [viaChannel, recorded] = [fixtures.uuid(), fixtures.uuid()]
      const rows = [
        ["m1", "outbound", channel],
        ["m2", "outbound", null],
        ["m3", "inbound", channel],
        ["m4", "inbound", null]
      ] as const
      yield* Effect.promise(async () => {
        await pool.query(`INSERT INTO ${q}.organizations (id, name, api_access, subscription, created_at, updated_at) VALUES ($1, 'Org', true, 'active', now(), now())`, [org.id])
        await pool.query(`INSERT INTO ${q}.contacts (uuid, organization_id, phone, created_at, updated_at) VALUES ('c1', $1, '+14155550101', now(), now())`, [org.id])
        await pool.query(`INSERT INTO ${q}.chats (uuid, organization_id, contact_uuid, status, created_at, updated_at) VALUES ('chat1', $1, 'c1', 'open', now(), now())`, [org.id])
        for (const [n, [uuid, direction, channelUuid]] of rows.entries()) {
          await pool.query(
            `INSERT INTO ${q}.messages (uuid, organization_id, chat_uuid, contact_uuid, direction, type, text, status, channel_uuid, created_at, updated_at)
              VALUES ($1, $2, 'chat1', 'c1', $3, 'text', 'hi', $4, $5, $6, $6)`,
            [uuid, org.id, direction, direction === "inbound" ? "delivered" : "sent", channelUuid, fixtures.instant(n)]
          )
        }
        for (const [uuid, channelUuid] of [[viaChannel, channel], [recorded, null]] as const) {
          await pool.query(
            `INSERT INTO ${q}.broadcasts (uuid, organization_id, name, status, template, audience, channel_uuid, created_at)
              VALUES ($1, $2, 'Sale', 'completed', '{"name":"sale","language":{"code":"en_US"},"components":[]}',
                '{"group_uuids":[],"label_uuids":[],"contact_uuids":[]}', $3, now())`,
            [uuid, org.id, channelUuid]
          )
        }
      })
      expect(yield* PostgresStorage.migrate(pool, schema)).toBe(LATEST_VERSION)
      const storage = yield* Effect.scoped(PostgresStorage.make({ pool, schema, migrate: false }))
      const messages = yield* Effect.all(rows.map(([uuid]) => storage.chats.findMessage(org.id, uuid as never)))
      expect(messages.map((message) => Option.map(message, (m) => m.transport))).toEqual(
        [Option.some("whatsapp"), Option.some("recording"), Option.some(null), Option.some(null)]
      )
      const broadcasts = yield* Effect.all([viaChannel, recorded].map((id) => storage.broadcasts.findById(org.id, id as never)))
      expect(broadcasts.map((found) => Option.map(found, (b) => b.transport))).toEqual([Option.some("whatsapp"), Option.some("recording")])
      // The broadcast's column is NOT NULL, and both refuse a kind they do not know.
      const refused = yield* Effect.promise(() =>
        pool.query(`UPDATE ${q}.messages SET transport = 'carrier-pigeon' WHERE uuid = 'm1'`).then(() => "written", (error: Error) => error.message)
      )
      expect(refused).toMatch(/check constraint/)
      const nullBroadcast = yield* Effect.promise(() =>
        pool.query(`UPDATE ${q}.broadcasts SET transport = NULL WHERE uuid = $1`, [recorded]).then(() => "written", (error: Error) => error.message)
      )
      expect(nullBroadcast).toMatch(/null value/)
    }).pipe(Effect.scoped)
  )

  it.effect("migration 5 lets a message be scheduled: existing rows kept with scheduled_at NULL; the status refused before it", () =>
    Effect.gen(function* () {
      const { schema, pool } = yield* schemaAt(4)
      const q = `"${schema}"`
      const org = fixtures.organization()
      const insert = (uuid: string, status: string) =>
        pool.query(
          `INSERT INTO ${q}.messages (uuid, organization_id, chat_uuid, contact_uuid, direction, type, text, status, created_at, updated_at)
            VALUES ($1, $2, 'chat1', 'c1', 'outbound', 'text', 'hi', $3, now(), now())`,
          [uuid, org.id, status]
        ).then(() => "written", (error: Error) => error.message)
      yield* Effect.promise(async () => {
        await pool.query(`INSERT INTO ${q}.organizations (id, name, api_access, subscription, created_at, updated_at) VALUES ($1, 'Org', true, 'active', now(), now())`, [org.id])
        await pool.query(`INSERT INTO ${q}.contacts (uuid, organization_id, phone, created_at, updated_at) VALUES ('c1', $1, '+14155550101', now(), now())`, [org.id])
        await pool.query(`INSERT INTO ${q}.chats (uuid, organization_id, contact_uuid, status, created_at, updated_at) VALUES ('chat1', $1, 'c1', 'open', now(), now())`, [org.id])
      })
      expect(yield* Effect.promise(() => insert("m1", "queued"))).toBe("written")
      expect(yield* Effect.promise(() => insert("m2", "scheduled"))).toMatch(/check constraint/)
      expect(yield* PostgresStorage.migrate(pool, schema)).toBe(LATEST_VERSION)
      expect(yield* Effect.promise(() => insert("m2", "scheduled"))).toBe("written")
      expect(yield* Effect.promise(() => insert("m3", "postponed"))).toMatch(/check constraint/)
      const rows = yield* Effect.promise(() => pool.query(`SELECT uuid, status, scheduled_at FROM ${q}.messages ORDER BY uuid`))
      expect(rows.rows).toEqual([
        { uuid: "m1", status: "queued", scheduled_at: null },
        { uuid: "m2", status: "scheduled", scheduled_at: null }
      ])
      const indexes = yield* Effect.promise(() =>
        pool.query("SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND indexname = 'messages_send_queue_scheduled'", [schema])
      )
      expect(indexes.rows).toHaveLength(1)
    }).pipe(Effect.scoped)
  )

  it.effect("migration 6 folds inbound reactions into their targets (the newest per target; a removal leaves none) and gives chats whose last message was a reaction their newest other message", () =>
    Effect.gen(function* () {
      const { schema, pool } = yield* schemaAt(4)
      const q = `"${schema}"`
      const org = fixtures.organization()
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
      yield* Effect.promise(async () => {
        await pool.query(`INSERT INTO ${q}.organizations (id, name, api_access, subscription, created_at, updated_at) VALUES ($1, 'Org', true, 'active', now(), now())`, [org.id])
        for (const [contact, chat, phone] of [["c1", "chat1", "+14155550101"], ["c2", "chat2", "+14155550102"]]) {
          await pool.query(`INSERT INTO ${q}.contacts (uuid, organization_id, phone, created_at, updated_at) VALUES ($1, $2, $3, now(), now())`, [contact, org.id, phone])
          await pool.query(`INSERT INTO ${q}.chats (uuid, organization_id, contact_uuid, status, created_at, updated_at) VALUES ($1, $2, $3, 'open', now(), now())`, [chat, org.id, contact])
        }
        for (const [n, row] of rows.entries()) {
          await pool.query(
            `INSERT INTO ${q}.messages (uuid, organization_id, chat_uuid, contact_uuid, direction, type, text, content, status, provider_message_id, created_at, updated_at)
              VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)`,
            [row[0], org.id, ...row.slice(1), fixtures.instant(n)]
          )
        }
        await pool.query(`UPDATE ${q}.chats SET last_message_uuid = 'r4', last_message_at = $1 WHERE uuid = 'chat1'`, [fixtures.instant(5)])
        await pool.query(`UPDATE ${q}.chats SET last_message_uuid = 'r5', last_message_at = $1 WHERE uuid = 'chat2'`, [fixtures.instant(6)])
      })
      expect(yield* PostgresStorage.migrate(pool, schema)).toBe(LATEST_VERSION)
      const storage = yield* Effect.scoped(PostgresStorage.make({ pool, schema, migrate: false }))
      const messages = yield* Effect.all(["m1", "m2", "r3"].map((uuid) => storage.chats.findMessage(org.id, uuid as never)))
      expect(messages.map((m) => Option.map(m, (found) => [found.uuid, found.reactions, found.reply_to]))).toEqual([
        Option.some(["m1", [{ emoji: "❤️", by: "contact", at: fixtures.instant(4) }], null]),
        Option.some(["m2", [], null]),
        Option.some(["r3", [], null])
      ])
      const chats = yield* Effect.all(["chat1", "chat2"].map((uuid) => storage.chats.findById(org.id, uuid as never)))
      expect(chats.map((c) => Option.map(c, (found) => [found.uuid, found.last_message?.uuid ?? null, found.last_message_at]))).toEqual([
        Option.some(["chat1", "m2", fixtures.instant(1)]),
        Option.some(["chat2", null, null])
      ])
    }).pipe(Effect.scoped)
  )

  it.effect("migration 3 keeps every template (FLAGGED and REINSTATED become APPROVED), keys them by account, and makes one sync record per channel account, due within 6 hours", () =>
    Effect.gen(function* () {
      const { schema, pool } = yield* schemaAt(2)
      const s = `"${schema}"`
      const org = fixtures.organization()
      const other = fixtures.organization()
      const run = (text: string, values: ReadonlyArray<unknown> = []) => Effect.promise(() => pool.query(text, [...values]))
      for (const organization of [org, other]) {
        yield* run(`INSERT INTO ${s}.organizations (id, name, api_access, subscription, created_at, updated_at) VALUES ($1, 'Org', true, 'active', now(), now())`, [organization.id])
      }
      const components = [{ type: "BODY", text: "Hi {{1}}", example: { body_text: [["Ada"]] } }]
      const templates = [
        ["t1", org.id, "Order_Update", "order_update", "APPROVED", null, JSON.stringify(components)],
        ["t2", org.id, "flagged", "flagged", "FLAGGED", null, "[]"],
        ["t3", org.id, "reinstated", "reinstated", "REINSTATED", null, "[]"],
        ["t4", org.id, "rejected", "rejected", "REJECTED", "INVALID_FORMAT", "[]"],
        ["t5", other.id, "order_update", "order_update", "PAUSED", null, "[]"]
      ] as const
      for (const [index, row] of templates.entries()) {
        yield* run(
          `INSERT INTO ${s}.templates (uuid, organization_id, name, name_key, language, category, status, rejected_reason, components, created_at, updated_at)
            VALUES ($1, $2, $3, $4, 'en_US', 'UTILITY', $5, $6, $7, $8, $8)`,
          [...row, fixtures.instant(index)]
        )
      }
      const channel = (organizationId: string, phoneNumberId: string, wabaId: string) =>
        run(
          `INSERT INTO ${s}.channels (uuid, organization_id, provider, phone_number_id, display_phone_number, waba_id, access_token_sealed,
            access_token_last4, created_at, updated_at) VALUES ($1, $2, 'whatsapp_cloud', $3, '+31612345678', $4, 'sealed', 'abcd', now(), now())`,
          [fixtures.uuid(), organizationId, phoneNumberId, wabaId]
        )
      yield* channel(org.id, "100", "111")
      yield* channel(org.id, "101", "111")
      yield* channel(org.id, "102", "222")
      yield* channel(other.id, "103", "111")
      const startedAt = Date.now()
      expect(yield* PostgresStorage.migrate(pool, schema)).toBe(LATEST_VERSION)
      const endedAt = Date.now()
      const rows = (yield* run(`SELECT uuid, status, rejected_reason, waba_id, provider_template_id, problems, components FROM ${s}.templates ORDER BY uuid`)).rows
      expect(rows).toEqual([
        { uuid: "t1", status: "APPROVED", rejected_reason: null, waba_id: null, provider_template_id: null, problems: [], components },
        { uuid: "t2", status: "APPROVED", rejected_reason: null, waba_id: null, provider_template_id: null, problems: [], components: [] },
        { uuid: "t3", status: "APPROVED", rejected_reason: null, waba_id: null, provider_template_id: null, problems: [], components: [] },
        { uuid: "t4", status: "REJECTED", rejected_reason: "INVALID_FORMAT", waba_id: null, provider_template_id: null, problems: [], components: [] },
        { uuid: "t5", status: "PAUSED", rejected_reason: null, waba_id: null, provider_template_id: null, problems: [], components: [] }
      ])
      // Meta's list of statuses; the identity per account, no account one group of its own.
      const insert = (uuid: string, wabaId: string | null, nameKey: string, status: string) =>
        Effect.exit(
          run(
            `INSERT INTO ${s}.templates (uuid, organization_id, waba_id, name, name_key, language, category, status, components, created_at, updated_at)
              VALUES ($1, $2, $3, $4, $4, 'en_US', 'UTILITY', $5, '[]', now(), now())`,
            [uuid, org.id, wabaId, nameKey, status]
          ).pipe(Effect.orDie)
        )
      const refusal = (exit: Exit.Exit<unknown, unknown>) => (Exit.isFailure(exit) ? String(Cause.squash(exit.cause)) : "none")
      expect(refusal(yield* insert("n0", null, "flagged_again", "FLAGGED"))).toMatch(/templates_status_check/)
      expect(refusal(yield* insert("n0", null, "order_update", "APPROVED"))).toMatch(/templates_identity/)
      expect(refusal(yield* insert("n1", "111", "order_update", "ARCHIVED"))).toBe("none")
      expect(refusal(yield* insert("n2", "222", "order_update", "LOCKED"))).toBe("none")
      expect(refusal(yield* insert("n3", "111", "order_update", "APPROVED"))).toMatch(/templates_identity/)
      const syncs = (yield* run(`SELECT * FROM ${s}.template_syncs ORDER BY organization_id, waba_id`)).rows as Array<Record<string, unknown>>
      expect(syncs.map((sync) => [sync.organization_id, sync.waba_id]).sort()).toEqual([[org.id, "111"], [org.id, "222"], [other.id, "111"]].sort())
      for (const sync of syncs) {
        expect(sync).toMatchObject({ lease: null, lease_until: null, last_run_at: null, last_outcome: null, last_error: null })
        const due = (sync.next_due_at as Date).getTime()
        expect(due).toBeGreaterThanOrEqual(startedAt - 1000)
        expect(due).toBeLessThan(endedAt + 21_600_000)
      }
      // Through the store: the old rows read as templates with no account; the records are claimable once due.
      const storage = yield* Effect.scoped(PostgresStorage.make({ pool, schema, migrate: false }))
      expect(yield* storage.templates.findByIdentity(org.id, "order_update", "en_US", "333")).toMatchObject({
        value: { uuid: "t1", name: "Order_Update", waba_id: null, provider_template_id: null, problems: [], components, created_at: fixtures.instant(0) }
      })
      expect(yield* storage.templates.findByIdentity(org.id, "order_update", "en_US", "111")).toMatchObject({ value: { uuid: "n1", status: "ARCHIVED" } })
      const due = new Date(endedAt + 21_600_000).toISOString()
      expect(yield* storage.templateSyncs.claim({ now: due, lease: "l", leaseUntil: due, limit: 10 })).toHaveLength(3)
    }).pipe(Effect.scoped)
  )

  it.effect("migration 7 keeps every webhook endpoint with no previous secret; a rotation then stores one", () =>
    Effect.gen(function* () {
      const { schema, pool } = yield* schemaAt(6)
      const q = `"${schema}"`
      const org = fixtures.organization()
      yield* Effect.promise(async () => {
        await pool.query(`INSERT INTO ${q}.organizations (id, name, api_access, subscription, created_at, updated_at) VALUES ($1, 'Org', true, 'active', now(), now())`, [org.id])
        await pool.query(
          `INSERT INTO ${q}.webhook_endpoints (uuid, organization_id, url, events, description, enabled, secret_sealed, created_at, updated_at)
            VALUES ('e1', $1, 'https://hooks.example.com/a', NULL, NULL, true, 'sealed-1', $2, $2)`,
          [org.id, fixtures.instant(0)]
        )
      })
      expect(yield* PostgresStorage.migrate(pool, schema)).toBe(LATEST_VERSION)
      const storage = yield* Effect.scoped(PostgresStorage.make({ pool, schema, migrate: false }))
      const found = Option.getOrThrow(yield* storage.webhooks.findEndpoint(org.id, "e1" as never))
      expect([found.secret_sealed, found.previous_secret_sealed, found.previous_secret_expires_at]).toEqual(["sealed-1", null, null])
      const rotation = { expected_secret_sealed: "sealed-1", secret_sealed: "sealed-2", previous_secret_sealed: "sealed-1", previous_secret_expires_at: fixtures.instant(9) }
      expect((yield* storage.webhooks.rotateSecret(org.id, "e1" as never, rotation, fixtures.instant(1)))._tag).toBe("Rotated")
      const rotated = Option.getOrThrow(yield* storage.webhooks.findEndpoint(org.id, "e1" as never))
      expect([rotated.secret_sealed, rotated.previous_secret_sealed, rotated.previous_secret_expires_at]).toEqual(["sealed-2", "sealed-1", fixtures.instant(9)])
    }).pipe(Effect.scoped)
  )

  it.effect("refuses to start on a schema newer than the code, changing nothing", () =>
    Effect.gen(function* () {
      const { schema, pool } = yield* migratedSchema
      yield* Effect.promise(() =>
        pool.query(`INSERT INTO "${schema}".schema_migrations (version, name) VALUES ($1, 'from the future')`, [
          LATEST_VERSION + 1
        ])
      )
      const exit = yield* Effect.exit(Effect.scoped(PostgresStorage.make({ pool, schema })))
      const cause = causeOf(exit)
      expect(cause).toBeInstanceOf(SchemaTooNewError)
      expect(String((cause as Error).message)).toContain(`version ${LATEST_VERSION + 1}, newer than this Switchboard`)
      expect(yield* Effect.promise(() => versionsOf(schema))).toHaveLength(migrations.length + 1)
    }).pipe(Effect.scoped)
  )

  it.effect("migrate: false checks without migrating: an empty schema fails naming the way out, a migrated one opens", () =>
    Effect.gen(function* () {
      const schema = schemas.fresh()
      const pool = new Pg.Pool({ connectionString: postgresUrl! })
      yield* Effect.addFinalizer(() => Effect.promise(() => pool.end()))
      const exit = yield* Effect.exit(Effect.scoped(PostgresStorage.make({ pool, schema, migrate: false })))
      expect(causeOf(exit)).toBeInstanceOf(SchemaNotCurrentError)
      const created = yield* Effect.promise(() =>
        pool.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema])
      )
      expect(created.rowCount).toBe(0)
      yield* PostgresStorage.migrate(pool, schema)
      const storage = yield* Effect.scoped(PostgresStorage.make({ pool, schema, migrate: false }))
      expect(yield* storage.organizations.list()).toEqual([])
    }).pipe(Effect.scoped)
  )

  it.effect("a pool passed in stays the host's: never ended, its global type parsers untouched", () =>
    Effect.gen(function* () {
      const schema = schemas.fresh()
      const pool = new Pg.Pool({ connectionString: postgresUrl! })
      yield* Effect.addFinalizer(() => Effect.promise(() => pool.end()))
      yield* Effect.scoped(PostgresStorage.make({ pool, schema }))
      // Released: the host's pool still answers, with pg's own parsers (bigint as text).
      const count = yield* Effect.promise(() => pool.query("SELECT COUNT(*) AS count FROM pg_namespace"))
      expect(typeof count.rows[0].count).toBe("string")
      expect(pool.ended).toBe(false)
    }).pipe(Effect.scoped)
  )

  it.effect("a server that cannot be reached fails with StorageError (migrate), its URL's password nowhere in it", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(
        Effect.scoped(
          PostgresStorage.make({ connectionString: "postgres://admin:s3cret@127.0.0.1:9/switchboard", statementTimeoutMs: 1000 })
        )
      )
      expect(Exit.isFailure(exit)).toBe(true)
      if (Exit.isFailure(exit)) {
        const failure = Option.getOrThrow(Cause.failureOption(exit.cause))
        expect(failure.operation).toBe("migrate")
        expect(JSON.stringify(failure)).not.toContain("s3cret")
        expect(String(failure.cause)).not.toContain("s3cret")
      }
    })
  )
})

import { afterAll, describe, expect, it } from "vitest"
import Sqlite from "better-sqlite3"
import { applyPending, migrations } from "../src/migrations.js"
import { tempFiles } from "./helpers.js"

// Migration 22 (scheduled sends) rebuilds `messages` so its status may be `scheduled`:
// proven on a file of messages at version 21, built with one recursive CTE insert
// (inbound and outbound, in and out of the send queue, heads, broadcast recipients, every
// transport), that every row, index and trigger is kept, and that the new status is
// accepted only after it. The suite runs it on 200 000 messages (a few seconds);
// SWITCHBOARD_MIGRATION_TEST_ROWS=1000000 runs it on a million (about a minute and a half
// on a busy 2-core machine: the insert and the rebuild each block the worker).

const files = tempFiles()
afterAll(files.cleanup)

const ROWS = Number(process.env.SWITCHBOARD_MIGRATION_TEST_ROWS ?? 200_000)

/** Every column of `messages` at version 21, in order. */
const V21_COLUMNS = [
  "uuid", "organization_id", "chat_uuid", "contact_uuid", "direction", "type", "text", "template", "media", "content",
  "status", "provider_message_id", "failure", "channel_uuid", "created_at", "updated_at", "attempts", "next_attempt_at",
  "broadcast_uuid", "recipient", "send_class", "expires_at", "sequence", "pair_rate_waits", "lease", "lease_until", "head",
  "transport"
]

/** A digest of the rows of `messages` over `columns`: the count and one hash-like sum per column. */
const digest = (db: Sqlite.Database, columns: ReadonlyArray<string>) =>
  db
    .prepare(
      `SELECT COUNT(*) AS rows, ${columns
        .map((column) => `SUM(length(COALESCE(CAST(${column} AS TEXT), '~')) * (rowid % 7919 + 1)) AS "${column}"`)
        .join(", ")} FROM messages`
    )
    .get()

const schemaOf = (db: Sqlite.Database, type: "index" | "trigger") =>
  db.prepare("SELECT name, sql FROM sqlite_master WHERE type = ? AND tbl_name = 'messages' ORDER BY name").all(type) as Array<{
    name: string
    sql: string
  }>

describe(`migration 22 on a file of ${ROWS} messages`, () => {
  it("keeps every row, index and trigger; adds scheduled_at (NULL) and the scheduled indexes; accepts status scheduled", () => {
    const db = new Sqlite(files.file())
    db.pragma("journal_mode = WAL")
    db.pragma("synchronous = OFF")
    db.pragma("foreign_keys = ON")
    applyPending(db, migrations.filter((m) => m.version <= 21), "t1")
    db.exec(`
      INSERT INTO organizations (id, name, contacts_limit, label_limit, api_access, subscription, created_at, updated_at)
        VALUES ('org', 'Org', NULL, NULL, 1, 'active', 't', 't');
      INSERT INTO contacts (uuid, organization_id, phone, created_at, updated_at) VALUES ('c1', 'org', '+14155550100', 't', 't');
      INSERT INTO chats (uuid, organization_id, contact_uuid, status, created_at, updated_at) VALUES ('chat1', 'org', 'c1', 'open', 't', 't');
    `)
    const started = performance.now()
    // Every 4th row inbound; the outbound ones: 1 in 8 waiting in the send queue (queued,
    // one head per 100), the others sent or failed; 1 in 1 000 a broadcast recipient.
    db.exec(`
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${ROWS})
      INSERT INTO messages (${V21_COLUMNS.join(", ")})
      SELECT printf('m%07d', i), 'org', 'chat1', 'c1',
        CASE WHEN i % 4 = 0 THEN 'inbound' ELSE 'outbound' END,
        CASE WHEN i % 3 = 0 THEN 'template' ELSE 'text' END,
        'message ' || i,
        CASE WHEN i % 3 = 0 THEN '{"name":"order_update","language":{"code":"en_US"},"components":[]}' END,
        NULL, NULL,
        CASE WHEN i % 4 = 0 THEN 'delivered' WHEN i % 8 = 1 THEN 'queued' WHEN i % 8 = 3 THEN 'failed' ELSE 'sent' END,
        CASE WHEN i % 8 NOT IN (1, 3) THEN 'wamid.' || i END,
        CASE WHEN i % 8 = 3 THEN '{"code":"131026","title":"x"}' END,
        CASE WHEN i % 2 = 0 THEN 'channel-' || (i % 5) END,
        printf('2026-01-01T00:%02d:%02d.%03dZ', (i / 60000) % 60, (i / 1000) % 60, i % 1000),
        printf('2026-01-02T00:%02d:%02d.%03dZ', (i / 60000) % 60, (i / 1000) % 60, i % 1000),
        i % 3,
        CASE WHEN i % 8 = 1 AND i % 4 <> 0 THEN '2026-01-03T00:00:00.000Z' END,
        CASE WHEN i % 1000 = 5 THEN 'broadcast-' || i END,
        CASE WHEN i % 4 <> 0 THEN '+1415555' || printf('%04d', i % 10000) END,
        CASE WHEN i % 4 <> 0 THEN CASE WHEN i % 1000 = 5 THEN 'broadcast' ELSE 'single' END END,
        CASE WHEN i % 4 <> 0 THEN '2026-01-04T00:00:00.000Z' END,
        CASE WHEN i % 4 <> 0 THEN i END,
        0, NULL, NULL,
        CASE WHEN i % 8 = 1 AND i % 100 = 1 THEN 1 ELSE 0 END,
        CASE WHEN i % 4 = 0 THEN NULL WHEN i % 2 = 0 THEN 'whatsapp' WHEN i % 7 = 0 THEN 'custom' ELSE 'recording' END
      FROM n;
    `)
    const built = performance.now()
    const before = digest(db, V21_COLUMNS)
    const indexesBefore = schemaOf(db, "index")
    const triggersBefore = schemaOf(db, "trigger")
    const sample = db.prepare("SELECT * FROM messages WHERE rowid % 19997 = 0 ORDER BY uuid").all() as Array<Record<string, unknown>>
    expect(sample.length).toBeGreaterThan(5)
    const insertScheduled = db.prepare(
      `INSERT INTO messages (uuid, organization_id, chat_uuid, contact_uuid, direction, type, text, status, created_at, updated_at,
        next_attempt_at, recipient, send_class, expires_at, sequence) VALUES (?, 'org', 'chat1', 'c1', 'outbound', 'text', 'later',
        'scheduled', 't', 't', '2026-02-01T00:00:00.000Z', '+14155550100', 'single', '2026-02-01T04:00:00.000Z', ?)`
    )
    expect(() => insertScheduled.run("s1", ROWS + 1)).toThrow(/CHECK/)

    applyPending(db, migrations.filter((m) => m.version <= 22), "t2")
    const migrated = performance.now()
    console.info(
      `migration 22: ${ROWS} messages built in ${Math.round(built - started)} ms, rebuilt in ${Math.round(migrated - built)} ms`
    )

    expect(db.prepare("SELECT MAX(version) FROM schema_migrations").pluck().get()).toBe(22)
    expect(digest(db, V21_COLUMNS)).toEqual(before)
    expect((before as { rows: number }).rows).toBe(ROWS)
    expect(db.prepare("SELECT COUNT(*) FROM messages WHERE scheduled_at IS NOT NULL").pluck().get()).toBe(0)
    const sampleAfter = db.prepare("SELECT * FROM messages WHERE uuid IN (SELECT value FROM json_each(?)) ORDER BY uuid")
      .all(JSON.stringify(sample.map((row) => row.uuid)))
    expect(sampleAfter).toEqual(sample.map((row) => ({ ...row, scheduled_at: null })))
    const columns = (db.prepare("SELECT name FROM pragma_table_info('messages')").pluck().all() as Array<string>)
    expect(columns).toEqual([...V21_COLUMNS, "scheduled_at"])

    const indexesAfter = schemaOf(db, "index")
    const added = ["messages_send_queue_scheduled", "messages_send_queue_scheduled_by_channel"]
    expect(indexesAfter.filter((index) => !added.includes(index.name))).toEqual(indexesBefore)
    expect(indexesAfter.map((index) => index.name)).toEqual([...indexesBefore.map((index) => index.name), ...added].sort())
    expect(schemaOf(db, "trigger")).toEqual(triggersBefore)
    expect(triggersBefore.map((trigger) => trigger.name)).toEqual([
      "messages_send_queue_head_deleted",
      "messages_send_queue_head_left",
      "messages_send_queue_returned"
    ])
    // The heads and the lanes index read as before.
    expect(db.prepare("SELECT COUNT(*) FROM messages WHERE head = 1").pluck().get()).toBe(
      db.prepare("SELECT COUNT(*) FROM messages INDEXED BY messages_send_queue_due WHERE head = 1").pluck().get()
    )
    expect(db.prepare("PRAGMA foreign_key_check").all()).toEqual([])
    expect(db.prepare("PRAGMA quick_check").pluck().get()).toBe("ok")

    // The rebuilt table takes a scheduled message, in its index and not a head.
    insertScheduled.run("s1", ROWS + 1)
    expect(db.prepare("SELECT uuid FROM messages INDEXED BY messages_send_queue_scheduled WHERE status = 'scheduled' AND next_attempt_at <= ?").pluck().all("2026-03-01")).toEqual(["s1"])
    // The triggers still work on the new table: a queued head that is sent hands its lane on.
    const lane = db.prepare("SELECT uuid FROM messages WHERE head = 1 ORDER BY uuid LIMIT 1").pluck().get() as string
    db.prepare("UPDATE messages SET status = 'sent' WHERE uuid = ?").run(lane)
    expect(db.prepare("SELECT head FROM messages WHERE uuid = ?").pluck().get(lane)).toBe(0)
    db.close()
  }, 300_000)
})

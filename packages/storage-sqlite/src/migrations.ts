import type Sqlite from "better-sqlite3"
import { Clock, Effect } from "effect"
import type { StorageError, StorageHealth } from "@switchboard/core"
import { attempt, transaction } from "./internal/sql.js"
import {
  CHANNEL_THROUGHPUT_MIGRATION,
  CHANNELS_MIGRATION,
  IDEMPOTENCY_RESOURCE_UUID_MIGRATION,
  TEMPLATES_FROM_META_MIGRATION,
  TEMPLATES_WIDENED_MIGRATION,
  WEBHOOK_REJECTS_MIGRATION
} from "./schema/catalog.js"
import {
  CHATS_MIGRATION,
  CUSTOMER_SERVICE_WINDOW_MIGRATION,
  MESSAGES_WIDENED_MIGRATION,
  PENDING_MESSAGE_STATUSES_MIGRATION,
  REPLIES_AND_REACTIONS_MIGRATION
} from "./schema/chats.js"
import {
  BROADCASTS_MIGRATION,
  SCHEDULED_SENDS_MIGRATION,
  SEND_QUEUE_MIGRATION,
  TRANSPORT_KIND_MIGRATION,
  WEBHOOK_SECRET_ROTATION_MIGRATION,
  WEBHOOKS_MIGRATION
} from "./schema/delivery.js"
import { MEDIA_MIGRATION } from "./schema/media.js"

/**
 * One schema change. `version` orders migrations and is recorded in `schema_migrations`
 * once applied; `up` is the SQL run to apply it (one or more statements, run inside the
 * migration transaction, so it must not contain `BEGIN`/`COMMIT` or pragmas that are
 * no-ops inside a transaction, such as `foreign_keys`). Never edit an applied migration:
 * add a new one.
 *
 * @category migrations
 */
export interface Migration {
  readonly version: number
  readonly name: string
  readonly up: string
}

/**
 * Every migration of the SQLite schema, in ascending `version` order. Timestamps are ISO
 * 8601 UTC strings (they sort as text); booleans are `0`/`1`; ids are UUID strings.
 *
 * @category migrations
 */
export const migrations: ReadonlyArray<Migration> = [
  {
    version: 1,
    name: "organizations_and_api_keys",
    up: `
      CREATE TABLE organizations (
        id TEXT PRIMARY KEY NOT NULL,
        name TEXT NOT NULL,
        contacts_limit INTEGER CHECK (contacts_limit IS NULL OR contacts_limit >= 0),
        label_limit INTEGER CHECK (label_limit IS NULL OR label_limit >= 0),
        api_access INTEGER NOT NULL CHECK (api_access IN (0, 1)),
        subscription TEXT NOT NULL CHECK (subscription IN ('active', 'inactive')),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      ) STRICT;
      CREATE INDEX organizations_created_at ON organizations (created_at, id);

      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY NOT NULL,
        organization_id TEXT NOT NULL REFERENCES organizations (id),
        prefix TEXT NOT NULL,
        hash TEXT NOT NULL,
        created_at TEXT NOT NULL,
        revoked_at TEXT
      ) STRICT;
      CREATE UNIQUE INDEX api_keys_hash ON api_keys (hash);
      CREATE INDEX api_keys_organization_id ON api_keys (organization_id);
    `
  },
  {
    version: 2,
    name: "contacts_groups_and_labels",
    // `name_key` is core's `nameKey(name)` (trimmed, lowercase): the uniqueness key of names.
    // Memberships and assignments cascade when their contact, group or label is deleted.
    up: `
      CREATE TABLE contacts (
        uuid TEXT PRIMARY KEY NOT NULL,
        organization_id TEXT NOT NULL REFERENCES organizations (id),
        phone TEXT NOT NULL,
        first_name TEXT,
        last_name TEXT,
        email TEXT,
        street TEXT,
        city TEXT,
        state TEXT,
        zip TEXT,
        country TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (organization_id, phone)
      ) STRICT;
      CREATE INDEX contacts_newest ON contacts (organization_id, created_at DESC, uuid DESC);

      CREATE TABLE contact_groups (
        uuid TEXT PRIMARY KEY NOT NULL,
        organization_id TEXT NOT NULL REFERENCES organizations (id),
        name TEXT NOT NULL,
        name_key TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (organization_id, name_key)
      ) STRICT;
      CREATE INDEX contact_groups_newest ON contact_groups (organization_id, created_at DESC, uuid DESC);

      CREATE TABLE group_members (
        group_uuid TEXT NOT NULL REFERENCES contact_groups (uuid) ON DELETE CASCADE,
        contact_uuid TEXT NOT NULL REFERENCES contacts (uuid) ON DELETE CASCADE,
        added_at TEXT NOT NULL,
        PRIMARY KEY (group_uuid, contact_uuid)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX group_members_contact_uuid ON group_members (contact_uuid);

      CREATE TABLE labels (
        uuid TEXT PRIMARY KEY NOT NULL,
        organization_id TEXT NOT NULL REFERENCES organizations (id),
        name TEXT NOT NULL,
        name_key TEXT NOT NULL,
        color TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (organization_id, name_key)
      ) STRICT;
      CREATE INDEX labels_newest ON labels (organization_id, created_at DESC, uuid DESC);

      CREATE TABLE contact_labels (
        label_uuid TEXT NOT NULL REFERENCES labels (uuid) ON DELETE CASCADE,
        contact_uuid TEXT NOT NULL REFERENCES contacts (uuid) ON DELETE CASCADE,
        assigned_at TEXT NOT NULL,
        PRIMARY KEY (label_uuid, contact_uuid)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX contact_labels_contact_uuid ON contact_labels (contact_uuid);
    `
  },
  {
    version: 3,
    name: "templates_and_basic_replies",
    // Template identity: core's `nameKey(name)` plus the exact language code. A reply's
    // `trigger_key` is `nameKey(trigger)`. `components` is JSON text.
    up: `
      CREATE TABLE templates (
        uuid TEXT PRIMARY KEY NOT NULL,
        organization_id TEXT NOT NULL REFERENCES organizations (id),
        name TEXT NOT NULL,
        name_key TEXT NOT NULL,
        language TEXT NOT NULL,
        category TEXT NOT NULL CHECK (category IN ('MARKETING', 'UTILITY', 'AUTHENTICATION')),
        status TEXT NOT NULL CHECK (status IN ('APPROVED', 'PENDING', 'REJECTED')),
        components TEXT NOT NULL CHECK (json_valid(components)),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (organization_id, name_key, language)
      ) STRICT;
      CREATE INDEX templates_newest ON templates (organization_id, created_at DESC, uuid DESC);

      CREATE TABLE basic_replies (
        uuid TEXT PRIMARY KEY NOT NULL,
        organization_id TEXT NOT NULL REFERENCES organizations (id),
        name TEXT NOT NULL,
        "trigger" TEXT NOT NULL,
        trigger_key TEXT NOT NULL,
        response TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (organization_id, trigger_key)
      ) STRICT;
      CREATE INDEX basic_replies_newest ON basic_replies (organization_id, created_at DESC, uuid DESC);
    `
  },
  {
    version: 4,
    name: "chats_and_messages",
    // Chats, messages and the chat search index: see schema/chats.ts.
    up: CHATS_MIGRATION
  },
  {
    version: 5,
    name: "rate_buckets",
    // Rate-limit counters (SqliteRateLimitStore): one row per key and fixed window, times in
    // ms since the epoch; rows whose window has ended are pruned through the expires_at index.
    up: `
      CREATE TABLE rate_buckets (
        key TEXT NOT NULL,
        window_start INTEGER NOT NULL,
        count INTEGER NOT NULL CHECK (count > 0),
        expires_at INTEGER NOT NULL,
        PRIMARY KEY (key, window_start)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX rate_buckets_expires_at ON rate_buckets (expires_at);
    `
  },
  {
    version: 6,
    name: "contact_counts",
    // The number of contacts per organization, kept by triggers on every insert and delete
    // (API, import, sends, inbound messages, seed, cascades), so the plan-limit check and
    // the total of GET /contacts read one row instead of counting the index: COUNT(*) over
    // 100 000 contacts took about 10 ms.
    up: organizationCounterMigration("contact_counts", "contacts")
  },
  {
    version: 7,
    name: "messages_widened",
    // Every inbound message type, content, failure and channel_uuid: see
    // schema/chats.ts (the table is rebuilt, every row kept).
    up: MESSAGES_WIDENED_MIGRATION
  },
  {
    version: 8,
    name: "channels",
    // Channels (organizations' WhatsApp numbers) and the store's settings: see
    // schema/catalog.ts. Versions need not be consecutive: the runner applies every
    // version not yet recorded, in ascending order.
    up: CHANNELS_MIGRATION
  },
  {
    version: 9,
    name: "idempotency_keys",
    // Idempotency-Key records (docs/messaging.md "Idempotency-Key"): the primary key is the
    // claim (insert-if-absent inside BEGIN IMMEDIATE); a response is stored once the request
    // finished with a 200; rows past expires_at are pruned through its index.
    up: `
      CREATE TABLE idempotency_keys (
        organization_id TEXT NOT NULL REFERENCES organizations (id),
        idempotency_key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        locked_until TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        response_status INTEGER,
        response_body TEXT,
        created_at TEXT NOT NULL,
        PRIMARY KEY (organization_id, idempotency_key)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);
    `
  },
  {
    version: 10,
    name: "provider_webhooks",
    // What provider webhooks write: Meta's template statuses and rejected_reason (the
    // templates table is rebuilt, every row kept: repositories/templates.ts) and the status
    // reports waiting for their message (schema/chats.ts).
    up: TEMPLATES_WIDENED_MIGRATION + PENDING_MESSAGE_STATUSES_MIGRATION
  },
  {
    version: 11,
    name: "outgoing_webhooks",
    // Endpoints, the outbox's events, their deliveries and attempts (schema/delivery.ts).
    up: WEBHOOKS_MIGRATION
  },
  {
    version: 12,
    name: "chat_counts",
    // The number of chats per organization, kept by triggers on every insert and delete
    // (inbound and outbound messages, imports, seed, cascades from deleted contacts), so the
    // total of an unfiltered offset page of GET /chats reads one row instead of counting the
    // index (COUNT(*) grew with the table: about 37 ms at 300 000 chats).
    up: organizationCounterMigration("chat_counts", "chats")
  },
  {
    version: 13,
    name: "inbound_never_dropped",
    // A contact created by an inbound message whose sender libphonenumber-js calls invalid
    // keeps WhatsApp's id as its phone, unverified (phone_valid 0; every existing row was
    // validated: 1, no row lost); parts of provider webhooks that were refused, kept 30
    // days for inspection (repositories/webhookRejects.ts).
    up:
      "ALTER TABLE contacts ADD COLUMN phone_valid INTEGER NOT NULL DEFAULT 1 CHECK (phone_valid IN (0, 1));" +
      WEBHOOK_REJECTS_MIGRATION
  },
  {
    version: 14,
    name: "channel_throughput",
    // A channel's throughput_mps, every existing channel kept with the default 50
    // (schema/catalog.ts).
    up: CHANNEL_THROUGHPUT_MIGRATION
  },
  {
    version: 15,
    name: "send_queue",
    // The send queue: messages rebuilt to allow the status `sending`, every row and index
    // kept, with their attempts and dispatch state; channels' status and pacing state
    // (schema/delivery.ts).
    up: SEND_QUEUE_MIGRATION
  },
  {
    version: 16,
    name: "customer_service_window",
    // Each contact's last inbound instant per channel, and the latest one on its chat row,
    // backfilled from the inbound messages present (schema/chats.ts).
    up: CUSTOMER_SERVICE_WINDOW_MIGRATION
  },
  {
    version: 17,
    name: "idempotency_resource_uuid",
    // The uuid of what an Idempotency-Key's request creates (its message), chosen at the
    // claim, so a takeover answers that message instead of sending again. Existing records
    // keep NULL: "none", a takeover of one stores its own (repositories/idempotency.ts).
    up: IDEMPOTENCY_RESOURCE_UUID_MIGRATION
  },
  {
    version: 18,
    name: "broadcasts",
    // Broadcasts, their recipients' indexes on messages (rows with broadcast_uuid set) and
    // the contacts' marketing_opt_out_at, every existing contact NULL
    // (schema/delivery.ts).
    up: BROADCASTS_MIGRATION
  },
  {
    version: 19,
    name: "media",
    // Media records with their fetch jobs, and the provider ids of uploads per channel
    // (schema/media.ts).
    up: MEDIA_MIGRATION
  },
  {
    version: 20,
    name: "templates_from_meta",
    // Templates keyed by their WhatsApp Business Account, with Meta's id and problems, and
    // Meta's list of statuses (the table is rebuilt, every row kept); the template sync
    // records, one per existing account due within the next 6 hours (schema/catalog.ts).
    up: TEMPLATES_FROM_META_MIGRATION
  },
  {
    version: 21,
    name: "transport_kind",
    // Which transport each message was handed to (recording, whatsapp, custom), on messages
    // and broadcasts; existing outbound rows and broadcasts filled from their channel
    // (schema/delivery.ts).
    up: TRANSPORT_KIND_MIGRATION
  },
  {
    version: 22,
    name: "scheduled_sends",
    // Messages rebuilt so their status may be `scheduled`, every row, index and trigger
    // kept, with `scheduled_at` (the send_at of a scheduled send) and an index of the
    // scheduled messages by when they are due (schema/delivery.ts).
    up: SCHEDULED_SENDS_MIGRATION
  },
  {
    version: 23,
    name: "replies_and_reactions",
    // messages.reply_to and messages.reactions; existing inbound reactions folded into
    // their targets, and chats whose last message was a reaction given their newest other
    // message (schema/chats.ts).
    up: REPLIES_AND_REACTIONS_MIGRATION
  },
  {
    version: 24,
    name: "webhook_secret_rotation",
    // webhook_endpoints.previous_secret_sealed and previous_secret_expires_at: a rotated-out
    // signing secret keeps signing beside the new one until then (schema/delivery.ts).
    up: WEBHOOK_SECRET_ROTATION_MIGRATION
  },
  {
    version: 25,
    name: "api_key_expiry",
    // api_keys.expires_at: the instant a rotated key stops working (NULL: never).
    up: "ALTER TABLE api_keys ADD COLUMN expires_at TEXT;"
  }
]

/**
 * The SQL of a per-organization row counter: table `counter` (one row per organization,
 * filled from `table` as it is) kept exact by triggers on every insert into and delete
 * from `table` (cascades included), so a total reads one row instead of counting an index.
 */
function organizationCounterMigration(counter: string, table: string): string {
  return `
    CREATE TABLE ${counter} (
      organization_id TEXT PRIMARY KEY NOT NULL REFERENCES organizations (id),
      count INTEGER NOT NULL CHECK (count >= 0)
    ) STRICT, WITHOUT ROWID;
    INSERT INTO ${counter} (organization_id, count)
      SELECT organization_id, COUNT(*) FROM ${table} GROUP BY organization_id;
    CREATE TRIGGER ${counter}_insert AFTER INSERT ON ${table} BEGIN
      INSERT INTO ${counter} (organization_id, count) VALUES (NEW.organization_id, 1)
        ON CONFLICT (organization_id) DO UPDATE SET count = count + 1;
    END;
    CREATE TRIGGER ${counter}_delete AFTER DELETE ON ${table} BEGIN
      UPDATE ${counter} SET count = count - 1 WHERE organization_id = OLD.organization_id;
    END;
  `
}

/**
 * Applies the migrations of `list` (default {@link migrations}) that `db` has not applied
 * yet, in ascending version order, and returns the versions it applied (empty when the
 * schema was current). `applied_at` is the current time from Effect's `Clock`. Fails with
 * `StorageError` (operation `"migrate"`) when a migration fails; that run is rolled back
 * entirely.
 *
 * @category migrations
 */
export const migrate = (
  db: Sqlite.Database,
  list: ReadonlyArray<Migration> = migrations
): Effect.Effect<ReadonlyArray<number>, StorageError> =>
  Effect.gen(function* () {
    const appliedAt = new Date(yield* Clock.currentTimeMillis).toISOString()
    const applied = yield* attempt("migrate", () => applyPending(db, list, appliedAt))
    if (applied.length > 0) {
      yield* Effect.logDebug("SQLite migrations applied").pipe(Effect.annotateLogs({ versions: applied }))
    }
    return applied
  })

/**
 * The synchronous core of {@link migrate}: creates `schema_migrations` when missing, then,
 * inside one `BEGIN IMMEDIATE` transaction, reads the applied versions and applies the
 * rest. The write lock is taken before the versions are read, so two processes opening one
 * file together cannot both apply a migration: the second waits (up to `busy_timeout`)
 * and then finds it applied. Throws the driver's error.
 *
 * @category migrations
 */
export const applyPending = (
  db: Sqlite.Database,
  list: ReadonlyArray<Migration>,
  appliedAt: string
): ReadonlyArray<number> =>
  transaction(db, () => {
    db.exec(
      "CREATE TABLE IF NOT EXISTS schema_migrations " +
        "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT"
    )
    const done = new Set(db.prepare<[], number>("SELECT version FROM schema_migrations").pluck().all())
    const record = db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)")
    const pending = list.filter((migration) => !done.has(migration.version)).sort((a, b) => a.version - b.version)
    for (const migration of pending) {
      db.exec(migration.up)
      record.run(migration.version, migration.name, appliedAt)
    }
    return pending.map((migration) => migration.version)
  })

/**
 * What `Storage.health()` reports of `db` (docs/deployment.md "Health checks"): one read
 * of `schema_migrations` (WAL mode never blocks it behind a writer), current when every
 * version of `list` is applied and none beyond it. Throws the driver's error.
 *
 * @category migrations
 */
export const schemaHealth = (
  db: Sqlite.Database,
  list: ReadonlyArray<Migration> = migrations
): StorageHealth => {
  const applied = db.prepare<[], number>("SELECT version FROM schema_migrations ORDER BY version").pluck().all()
  const expected = list.map((migration) => migration.version).sort((a, b) => a - b)
  const newest = applied.at(-1) ?? 0
  const highest = expected.at(-1) ?? 0
  if (newest > highest) return { migrations_current: false, detail: `schema version ${newest} is newer than this code's ${highest}` }
  const known = new Set(applied)
  const pending = expected.filter((version) => !known.has(version))
  return pending.length === 0
    ? { migrations_current: true }
    : { migrations_current: false, detail: `migrations pending: ${pending.join(", ")}` }
}

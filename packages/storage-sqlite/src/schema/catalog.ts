// The catalog's migrations (channels, templates, idempotency keys, webhook rejects), listed
// by migrations.ts. Never edit this text once released: add a migration instead.

/**
 * Migration 8: `channels` (one row per connected WhatsApp number; `phone_number_id`
 * unique across every organization by a UNIQUE index; the access token only as the
 * sealed AES-256-GCM text `access_token_sealed`) and `settings`, the store's own
 * key–value rows (the secret-key check value lives there, key `secret_key_check`).
 */
export const CHANNELS_MIGRATION = `
  CREATE TABLE channels (
    uuid TEXT PRIMARY KEY NOT NULL,
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    provider TEXT NOT NULL CHECK (provider IN ('whatsapp_cloud')),
    phone_number_id TEXT NOT NULL,
    display_phone_number TEXT NOT NULL,
    waba_id TEXT NOT NULL,
    access_token_sealed TEXT NOT NULL,
    access_token_last4 TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  ) STRICT;
  CREATE UNIQUE INDEX channels_phone_number_id ON channels (phone_number_id);
  CREATE INDEX channels_oldest ON channels (organization_id, created_at, uuid);
  CREATE INDEX channels_waba_id ON channels (waba_id, created_at, uuid);

  CREATE TABLE settings (
    key TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
  ) STRICT, WITHOUT ROWID;
`

/**
 * Migration 14: a channel's `throughput_mps` (messages per second, 1–1 000), every
 * existing row given the default 50.
 */
export const CHANNEL_THROUGHPUT_MIGRATION = `
  ALTER TABLE channels ADD COLUMN throughput_mps INTEGER NOT NULL DEFAULT 50
    CHECK (throughput_mps BETWEEN 1 AND 1000);
`

/**
 * Part of migration 10: `templates` takes Meta's eleven review statuses and
 * `rejected_reason` (Meta's reason, `NULL` when none). A CHECK cannot be altered in SQLite,
 * so the table is rebuilt the documented way (ALTER TABLE, "making other kinds of table
 * schema changes"): create the new table, copy every row, drop the old one, rename it,
 * recreate the index. Nothing references `templates` and no trigger or view reads it, so
 * foreign keys can stay on; the UNIQUE identity and the primary key come back with the
 * table (their automatic indexes are renamed with it), and the whole migration runs in
 * the migration transaction, so a failure leaves version 9 as it was.
 */
export const TEMPLATES_WIDENED_MIGRATION = `
  CREATE TABLE templates_v10 (
    uuid TEXT PRIMARY KEY NOT NULL,
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    name TEXT NOT NULL,
    name_key TEXT NOT NULL,
    language TEXT NOT NULL,
    category TEXT NOT NULL CHECK (category IN ('MARKETING', 'UTILITY', 'AUTHENTICATION')),
    status TEXT NOT NULL CHECK (status IN ('APPROVED', 'PENDING', 'REJECTED', 'PAUSED', 'DISABLED', 'IN_APPEAL',
      'PENDING_DELETION', 'DELETED', 'FLAGGED', 'REINSTATED', 'LIMIT_EXCEEDED')),
    rejected_reason TEXT,
    components TEXT NOT NULL CHECK (json_valid(components)),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (organization_id, name_key, language)
  ) STRICT;
  INSERT INTO templates_v10 (uuid, organization_id, name, name_key, language, category, status, components,
      created_at, updated_at)
    SELECT uuid, organization_id, name, name_key, language, category, status, components, created_at, updated_at
    FROM templates;
  DROP TABLE templates;
  ALTER TABLE templates_v10 RENAME TO templates;
  CREATE INDEX templates_newest ON templates (organization_id, created_at DESC, uuid DESC);
`

/**
 * Migration 17: `resource_uuid` on `idempotency_keys`, the uuid of what the key's request
 * creates (its message), chosen at the claim. Rows written before keep NULL ("none").
 */
export const IDEMPOTENCY_RESOURCE_UUID_MIGRATION = "ALTER TABLE idempotency_keys ADD COLUMN resource_uuid TEXT;"

/** The table and its indexes (migration 13). */
export const WEBHOOK_REJECTS_MIGRATION = `
  CREATE TABLE webhook_rejects (
    id TEXT PRIMARY KEY NOT NULL,
    received_at TEXT NOT NULL,
    organization_id TEXT,
    phone_number_id TEXT,
    reason TEXT NOT NULL,
    item TEXT NOT NULL
  ) STRICT, WITHOUT ROWID;
  CREATE INDEX webhook_rejects_newest ON webhook_rejects (received_at DESC, id DESC);
  CREATE INDEX webhook_rejects_of_organization ON webhook_rejects (organization_id, received_at DESC, id DESC);
`

/**
 * Migration 20: templates from Meta and their sync records.
 *
 * - `templates` is rebuilt (a CHECK cannot be altered in SQLite; the documented way, as
 *   migration 10): `waba_id` (the WhatsApp Business Account a template came from, `NULL`
 *   for one written by hand or imported), `provider_template_id` (Meta's id), `problems`
 *   (JSON, `[]` when none); `status` takes exactly the statuses of Meta's template list
 *   (`ARCHIVED` and `LOCKED` added; `FLAGGED` and `REINSTATED`, webhook events rather than
 *   statuses, stored before as `APPROVED`, which Meta's list answers for them). Every row
 *   is kept with `waba_id` `NULL`. The identity becomes (`organization_id`, `name_key`,
 *   `language`, `COALESCE(waba_id, '')`): a UNIQUE expression index, so the templates
 *   with no account are one group (`NULL` never equals `NULL` in a UNIQUE index, `''` does);
 *   it also answers a send's look-up (the account's template, else the one with no
 *   account) in its order. `templates_by_provider_id` finds a template by Meta's id,
 *   oldest first.
 * - `template_syncs`: one row per organization and account, `next_due_at`, the lease
 *   (`lease`, `lease_until`), the last run's time, outcome (JSON) and error; due times in
 *   ISO 8601 text, read in due order through `template_syncs_due`. One row is created per
 *   (organization, `waba_id`) of the existing channels, due at a time jittered over the
 *   6-hour interval with SQLite's `random()` (a uniform second in [now, now + 6 h)), so
 *   the first syncs of an upgraded install do not all run at once.
 */
export const TEMPLATES_FROM_META_MIGRATION = `
  CREATE TABLE templates_v20 (
    uuid TEXT PRIMARY KEY NOT NULL,
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    waba_id TEXT,
    provider_template_id TEXT,
    name TEXT NOT NULL,
    name_key TEXT NOT NULL,
    language TEXT NOT NULL,
    category TEXT NOT NULL CHECK (category IN ('MARKETING', 'UTILITY', 'AUTHENTICATION')),
    status TEXT NOT NULL CHECK (status IN ('APPROVED', 'PENDING', 'REJECTED', 'PAUSED', 'DISABLED', 'IN_APPEAL',
      'PENDING_DELETION', 'DELETED', 'LIMIT_EXCEEDED', 'ARCHIVED', 'LOCKED')),
    rejected_reason TEXT,
    components TEXT NOT NULL CHECK (json_valid(components)),
    problems TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(problems)),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  ) STRICT;
  INSERT INTO templates_v20 (uuid, organization_id, name, name_key, language, category, status, rejected_reason,
      components, created_at, updated_at)
    SELECT uuid, organization_id, name, name_key, language, category,
      CASE WHEN status IN ('FLAGGED', 'REINSTATED') THEN 'APPROVED' ELSE status END,
      rejected_reason, components, created_at, updated_at
    FROM templates;
  DROP TABLE templates;
  ALTER TABLE templates_v20 RENAME TO templates;
  CREATE UNIQUE INDEX templates_identity ON templates (organization_id, name_key, language, COALESCE(waba_id, ''));
  CREATE INDEX templates_newest ON templates (organization_id, created_at DESC, uuid DESC);
  CREATE INDEX templates_by_provider_id ON templates (organization_id, provider_template_id, created_at, uuid)
    WHERE provider_template_id IS NOT NULL;

  CREATE TABLE template_syncs (
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    waba_id TEXT NOT NULL,
    next_due_at TEXT NOT NULL,
    lease TEXT,
    lease_until TEXT,
    last_run_at TEXT,
    last_outcome TEXT CHECK (last_outcome IS NULL OR json_valid(last_outcome)),
    last_error TEXT,
    PRIMARY KEY (organization_id, waba_id)
  ) STRICT, WITHOUT ROWID;
  CREATE INDEX template_syncs_due ON template_syncs (next_due_at);
  INSERT INTO template_syncs (organization_id, waba_id, next_due_at)
    SELECT organization_id, waba_id,
      strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || (abs(random()) % 21600) || ' seconds')
    FROM channels GROUP BY organization_id, waba_id;
`

import type { SchemaArea } from "./context.js"

/**
 * The catalog: an organization's message templates and basic replies, its idempotency
 * keys, its channels (connected WhatsApp numbers), the store's own `settings` (the
 * secret-key check value of the channels' sealed tokens, the send queue's sequence) and the
 * webhook parts refused at the door (`webhook_rejects`). Columns as SQLite's final schema
 * names them; ids and text sort keys `COLLATE "C"` (byte order, as SQLite compares),
 * instants `timestamptz`, JSON `json` (returned as written, key order kept).
 *
 * - `templates`: the identity (`organization_id`, `name_key`, `language`) UNIQUE,
 *   `name_key` being core's `nameKey(name)`; `components` JSON.
 * - `basic_replies`: `trigger_key` (core's `nameKey` of `trigger`) UNIQUE per organization.
 * - `idempotency_keys`: primary key (`organization_id`, `idempotency_key`), pruned through
 *   `expires_at`.
 * - `channels`: `phone_number_id` unique across every organization; the access token only
 *   as the sealed AES-256-GCM text `access_token_sealed`; `pacing_tat` and `cooldown_ms`
 *   are the send queue's pacing state, never part of the record.
 * - `webhook_rejects`: no foreign key (a reject may name an organization that is gone or
 *   never was), read newest first through `(received_at, id)`.
 */
export const catalogTables: SchemaArea = ({ schema }) => `
CREATE TABLE ${schema}.templates (
  uuid text COLLATE "C" PRIMARY KEY,
  organization_id text COLLATE "C" NOT NULL REFERENCES ${schema}.organizations (id),
  name text NOT NULL,
  name_key text COLLATE "C" NOT NULL,
  language text COLLATE "C" NOT NULL,
  category text NOT NULL CHECK (category IN ('MARKETING', 'UTILITY', 'AUTHENTICATION')),
  status text NOT NULL CHECK (status IN ('APPROVED', 'PENDING', 'REJECTED', 'PAUSED', 'DISABLED', 'IN_APPEAL',
    'PENDING_DELETION', 'DELETED', 'FLAGGED', 'REINSTATED', 'LIMIT_EXCEEDED')),
  rejected_reason text,
  components json NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  UNIQUE (organization_id, name_key, language)
);
CREATE INDEX templates_newest ON ${schema}.templates (organization_id, created_at DESC, uuid DESC);

CREATE TABLE ${schema}.basic_replies (
  uuid text COLLATE "C" PRIMARY KEY,
  organization_id text COLLATE "C" NOT NULL REFERENCES ${schema}.organizations (id),
  name text NOT NULL,
  "trigger" text NOT NULL,
  trigger_key text COLLATE "C" NOT NULL,
  response text NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  UNIQUE (organization_id, trigger_key)
);
CREATE INDEX basic_replies_newest ON ${schema}.basic_replies (organization_id, created_at DESC, uuid DESC);

CREATE TABLE ${schema}.idempotency_keys (
  organization_id text COLLATE "C" NOT NULL REFERENCES ${schema}.organizations (id),
  idempotency_key text COLLATE "C" NOT NULL,
  fingerprint text COLLATE "C" NOT NULL,
  locked_until timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  response_status integer,
  response_body text,
  created_at timestamptz NOT NULL,
  resource_uuid text COLLATE "C",
  PRIMARY KEY (organization_id, idempotency_key)
);
CREATE INDEX idempotency_keys_expires_at ON ${schema}.idempotency_keys (expires_at);

CREATE TABLE ${schema}.channels (
  uuid text COLLATE "C" PRIMARY KEY,
  organization_id text COLLATE "C" NOT NULL REFERENCES ${schema}.organizations (id),
  provider text NOT NULL CHECK (provider IN ('whatsapp_cloud')),
  phone_number_id text COLLATE "C" NOT NULL,
  display_phone_number text NOT NULL,
  waba_id text COLLATE "C" NOT NULL,
  access_token_sealed text NOT NULL,
  access_token_last4 text NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  throughput_mps integer NOT NULL DEFAULT 50 CHECK (throughput_mps BETWEEN 1 AND 1000),
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused')),
  paused_reason json,
  paused_at timestamptz,
  pacing_tat double precision NOT NULL DEFAULT 0,
  cooldown_ms bigint NOT NULL DEFAULT 0 CHECK (cooldown_ms >= 0)
);
CREATE UNIQUE INDEX channels_phone_number_id ON ${schema}.channels (phone_number_id);
CREATE INDEX channels_oldest ON ${schema}.channels (organization_id, created_at, uuid);
CREATE INDEX channels_waba_id ON ${schema}.channels (waba_id, created_at, uuid);

CREATE TABLE ${schema}.settings (
  key text COLLATE "C" PRIMARY KEY,
  value text NOT NULL
);

CREATE TABLE ${schema}.webhook_rejects (
  id text COLLATE "C" PRIMARY KEY,
  received_at timestamptz NOT NULL,
  organization_id text COLLATE "C",
  phone_number_id text,
  reason text NOT NULL,
  item json NOT NULL
);
CREATE INDEX webhook_rejects_newest ON ${schema}.webhook_rejects (received_at DESC, id DESC);
CREATE INDEX webhook_rejects_of_organization ON ${schema}.webhook_rejects (organization_id, received_at DESC, id DESC);
`

import type { SchemaArea } from "./context.js"

/**
 * Organizations and their API keys (SQLite migration 1): the plan flattened into
 * `contacts_limit`, `label_limit` and `api_access`; a key found by its `hash` through a
 * unique index (`findCredentialByHash`, one exact indexed join per request). The store's
 * `settings` are not here: they belong to the channels (catalog area).
 */
export const organizationTables: SchemaArea = ({ schema }) => `
CREATE TABLE ${schema}.organizations (
  id text COLLATE "C" PRIMARY KEY,
  name text NOT NULL,
  contacts_limit integer CHECK (contacts_limit IS NULL OR contacts_limit >= 0),
  label_limit integer CHECK (label_limit IS NULL OR label_limit >= 0),
  api_access boolean NOT NULL,
  subscription text NOT NULL CHECK (subscription IN ('active', 'inactive')),
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE INDEX organizations_created_at ON ${schema}.organizations (created_at, id);

CREATE TABLE ${schema}.api_keys (
  id text COLLATE "C" PRIMARY KEY,
  organization_id text COLLATE "C" NOT NULL REFERENCES ${schema}.organizations (id),
  prefix text NOT NULL,
  hash text COLLATE "C" NOT NULL,
  created_at timestamptz NOT NULL,
  revoked_at timestamptz
);
CREATE UNIQUE INDEX api_keys_hash ON ${schema}.api_keys (hash);
CREATE INDEX api_keys_organization_id ON ${schema}.api_keys (organization_id);
`

/**
 * API key expiry (SQLite migration 25 translated): `api_keys.expires_at`, the instant a
 * rotated key stops working (`NULL`: never). Core compares it with its clock on every
 * request; no statement filters on it, so it needs no index.
 */
export const apiKeyExpiryChanges: SchemaArea = ({ schema }) => `
ALTER TABLE ${schema}.api_keys ADD COLUMN expires_at timestamptz;
`

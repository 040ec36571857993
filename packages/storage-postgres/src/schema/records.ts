import type { SchemaArea } from "./context.js"

/**
 * Contacts, groups and labels (SQLite migrations 2, 6, 13 and 18): `contacts` unique by
 * `(organization_id, phone)`; `contact_groups` and `labels` unique by
 * `(organization_id, name_key)` (core's `nameKey`); their links `group_members` and
 * `contact_labels` go with a deleted contact, group or label (`ON DELETE CASCADE`).
 *
 * `contact_counts` holds the number of contacts of each organization (the plan limit and
 * the total of a contact list read one row, never count every contact). Statement-level
 * triggers keep it inside the transaction of every insert and delete of contacts,
 * whichever repository writes them (an import, an inbound message's new contact): one
 * counter update per statement and organization, however many rows the statement wrote.
 */
export const recordTables: SchemaArea = ({ schema }) => `
CREATE TABLE ${schema}.contacts (
  uuid text COLLATE "C" PRIMARY KEY,
  organization_id text COLLATE "C" NOT NULL REFERENCES ${schema}.organizations (id),
  phone text COLLATE "C" NOT NULL,
  phone_valid boolean NOT NULL DEFAULT true,
  first_name text,
  last_name text,
  email text,
  street text,
  city text,
  state text,
  zip text,
  country text,
  marketing_opt_out_at timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  UNIQUE (organization_id, phone)
);
CREATE INDEX contacts_newest ON ${schema}.contacts (organization_id, created_at DESC, uuid DESC);

CREATE TABLE ${schema}.contact_groups (
  uuid text COLLATE "C" PRIMARY KEY,
  organization_id text COLLATE "C" NOT NULL REFERENCES ${schema}.organizations (id),
  name text COLLATE "C" NOT NULL,
  name_key text COLLATE "C" NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  UNIQUE (organization_id, name_key)
);
CREATE INDEX contact_groups_newest ON ${schema}.contact_groups (organization_id, created_at DESC, uuid DESC);

CREATE TABLE ${schema}.group_members (
  group_uuid text COLLATE "C" NOT NULL REFERENCES ${schema}.contact_groups (uuid) ON DELETE CASCADE,
  contact_uuid text COLLATE "C" NOT NULL REFERENCES ${schema}.contacts (uuid) ON DELETE CASCADE,
  added_at timestamptz NOT NULL,
  PRIMARY KEY (group_uuid, contact_uuid)
);
CREATE INDEX group_members_contact_uuid ON ${schema}.group_members (contact_uuid);

CREATE TABLE ${schema}.labels (
  uuid text COLLATE "C" PRIMARY KEY,
  organization_id text COLLATE "C" NOT NULL REFERENCES ${schema}.organizations (id),
  name text COLLATE "C" NOT NULL,
  name_key text COLLATE "C" NOT NULL,
  color text NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  UNIQUE (organization_id, name_key)
);
CREATE INDEX labels_newest ON ${schema}.labels (organization_id, created_at DESC, uuid DESC);

CREATE TABLE ${schema}.contact_labels (
  label_uuid text COLLATE "C" NOT NULL REFERENCES ${schema}.labels (uuid) ON DELETE CASCADE,
  contact_uuid text COLLATE "C" NOT NULL REFERENCES ${schema}.contacts (uuid) ON DELETE CASCADE,
  assigned_at timestamptz NOT NULL,
  PRIMARY KEY (label_uuid, contact_uuid)
);
CREATE INDEX contact_labels_contact_uuid ON ${schema}.contact_labels (contact_uuid);

CREATE TABLE ${schema}.contact_counts (
  organization_id text COLLATE "C" PRIMARY KEY REFERENCES ${schema}.organizations (id),
  count integer NOT NULL CHECK (count >= 0)
);

CREATE FUNCTION ${schema}.contact_counts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ${schema}.contact_counts AS counts (organization_id, count)
    SELECT organization_id, COUNT(*) FROM inserted GROUP BY organization_id
    ON CONFLICT (organization_id) DO UPDATE SET count = counts.count + EXCLUDED.count;
  RETURN NULL;
END
$$;
CREATE TRIGGER contact_counts_insert AFTER INSERT ON ${schema}.contacts
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION ${schema}.contact_counts_inserted();

CREATE FUNCTION ${schema}.contact_counts_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE ${schema}.contact_counts AS counts SET count = counts.count - gone.count
    FROM (SELECT organization_id, COUNT(*) AS count FROM deleted GROUP BY organization_id) AS gone
    WHERE counts.organization_id = gone.organization_id;
  RETURN NULL;
END
$$;
CREATE TRIGGER contact_counts_delete AFTER DELETE ON ${schema}.contacts
  REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION ${schema}.contact_counts_deleted();
`

import type { SchemaArea } from "./context.js"

/**
 * Media records, their fetch jobs and the provider ids of uploads (docs/media.md, core's
 * MediaRepository.ts; SQLite migration 19 translated): ids `text COLLATE "C"`, instants
 * `timestamptz`, `failure` `json`, `size` `bigint` (files pass 2^32 bytes; read back as a
 * number), `blob_pending_removal` `boolean`.
 *
 * - `media`: one row per record, its fetch job on the same row (`provider_media_id`,
 *   `declared_sha256`, `expires_at`, `next_fetch_at` — `NULL` when the media has no job —,
 *   `attempts`, `integrity_failures`, the claim's `lease` and `lease_until`). No foreign key
 *   on `contact_uuid` (the record outlives its contact), `message_uuid` or `channel_uuid`.
 * - Indexes: `media_newest` the organization's list and its cursor; `media_fetch_due`,
 *   partial on the rows with a job, the claims in due order (locked `FOR UPDATE SKIP
 *   LOCKED`) and the next due time; `media_fetch_channel` a channel's waiting jobs;
 *   `media_of_contact` a deleted contact's media; `media_blobs_to_remove` the blobs pending
 *   removal; `media_stored_bytes` (organization, size), partial on `stored`, the stored
 *   bytes a plan limit sums (an index-only scan); `media_stored_oldest` the retention's
 *   oldest stored media.
 * - `media_uploads`: per media and channel, the provider's id of its upload and when it
 *   lapses.
 * - `organizations.media_bytes_limit` (`bigint`): the plan limit of stored bytes (`NULL`:
 *   none; every existing organization `NULL`).
 */
export const mediaTables: SchemaArea = ({ schema }) => `
ALTER TABLE ${schema}.organizations ADD COLUMN media_bytes_limit bigint CHECK (media_bytes_limit IS NULL OR media_bytes_limit >= 0);
CREATE TABLE ${schema}.media (
  organization_id text COLLATE "C" NOT NULL REFERENCES ${schema}.organizations (id),
  uuid text COLLATE "C" PRIMARY KEY,
  type text NOT NULL CHECK (type IN ('image', 'video', 'audio', 'document', 'sticker')),
  mime_type text NOT NULL,
  size bigint CHECK (size IS NULL OR size >= 0),
  sha256 text,
  filename text,
  status text COLLATE "C" NOT NULL CHECK (status IN ('pending', 'stored', 'failed', 'deleted')),
  failure json,
  source text COLLATE "C" NOT NULL CHECK (source IN ('inbound', 'upload')),
  message_uuid text COLLATE "C",
  contact_uuid text COLLATE "C",
  channel_uuid text COLLATE "C",
  blob_key text,
  blob_pending_removal boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL,
  stored_at timestamptz,
  provider_media_id text COLLATE "C",
  declared_sha256 text,
  expires_at timestamptz,
  next_fetch_at timestamptz,
  attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  integrity_failures integer NOT NULL DEFAULT 0 CHECK (integrity_failures >= 0),
  lease text COLLATE "C",
  lease_until timestamptz,
  CHECK (next_fetch_at IS NULL OR (provider_media_id IS NOT NULL AND expires_at IS NOT NULL AND channel_uuid IS NOT NULL))
);
CREATE INDEX media_newest ON ${schema}.media (organization_id, created_at DESC, uuid DESC);
CREATE INDEX media_fetch_due ON ${schema}.media (next_fetch_at, uuid) WHERE next_fetch_at IS NOT NULL;
CREATE INDEX media_fetch_channel ON ${schema}.media (channel_uuid, next_fetch_at) WHERE next_fetch_at IS NOT NULL;
CREATE INDEX media_of_contact ON ${schema}.media (organization_id, contact_uuid) WHERE contact_uuid IS NOT NULL;
CREATE INDEX media_blobs_to_remove ON ${schema}.media (uuid) WHERE blob_pending_removal;
CREATE INDEX media_stored_bytes ON ${schema}.media (organization_id, size) WHERE status = 'stored';
CREATE INDEX media_stored_oldest ON ${schema}.media (created_at, uuid) WHERE status = 'stored';

CREATE TABLE ${schema}.media_uploads (
  media_uuid text COLLATE "C" NOT NULL,
  channel_uuid text COLLATE "C" NOT NULL,
  provider_media_id text NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (media_uuid, channel_uuid)
);
`

// Media (migration 19), listed by migrations.ts. Never edit this text once released: add a
// migration instead.

/**
 * Migration 19: media records, their fetch jobs and the provider ids of uploads
 * (docs/media.md, core's MediaRepository.ts).
 * - `media`: one row per record, `failure` JSON text, `size` in bytes (an INTEGER holds
 *   every size), `blob_pending_removal` 0/1. `contact_uuid` has no foreign key (the
 *   record outlives its contact: a contact's deletion marks its media `deleted`), nor have
 *   `message_uuid` and `channel_uuid`. The fetch job of an inbound file lives on its row:
 *   `provider_media_id`, `declared_sha256`, `expires_at`, `next_fetch_at` (`NULL` when the
 *   media has no job: an upload, or a job that ended), `attempts`, `integrity_failures`,
 *   and the claim's `lease` token and `lease_until`.
 * - Indexes: `media_newest` (organization, created_at DESC, uuid DESC) serves the list and
 *   its cursor; `media_fetch_due` (next_fetch_at, uuid), partial on the rows with a job,
 *   the claims in due order and the next due time; `media_fetch_channel` a channel's
 *   waiting jobs (postponed together); `media_of_contact` a deleted contact's media;
 *   `media_blobs_to_remove`, partial on `blob_pending_removal`, the blobs to remove;
 *   `media_stored_bytes` (organization, size), partial on `stored`, the stored bytes (a
 *   plan limit's sum, read from the index alone); `media_stored_oldest`, partial on
 *   `stored`, the retention's oldest first.
 * - `media_uploads`: per media and channel, the provider's id of its upload and when it
 *   lapses (replaced by a later upload).
 * - `organizations.media_bytes_limit`: the plan limit of stored bytes (`NULL`: none; every
 *   existing organization `NULL`).
 */
export const MEDIA_MIGRATION = `
  ALTER TABLE organizations ADD COLUMN media_bytes_limit INTEGER CHECK (media_bytes_limit IS NULL OR media_bytes_limit >= 0);
  CREATE TABLE media (
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    uuid TEXT PRIMARY KEY NOT NULL,
    type TEXT NOT NULL CHECK (type IN ('image', 'video', 'audio', 'document', 'sticker')),
    mime_type TEXT NOT NULL,
    size INTEGER CHECK (size IS NULL OR size >= 0),
    sha256 TEXT,
    filename TEXT,
    status TEXT NOT NULL CHECK (status IN ('pending', 'stored', 'failed', 'deleted')),
    failure TEXT CHECK (failure IS NULL OR json_valid(failure)),
    source TEXT NOT NULL CHECK (source IN ('inbound', 'upload')),
    message_uuid TEXT,
    contact_uuid TEXT,
    channel_uuid TEXT,
    blob_key TEXT,
    blob_pending_removal INTEGER NOT NULL DEFAULT 0 CHECK (blob_pending_removal IN (0, 1)),
    created_at TEXT NOT NULL,
    stored_at TEXT,
    provider_media_id TEXT,
    declared_sha256 TEXT,
    expires_at TEXT,
    next_fetch_at TEXT,
    attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    integrity_failures INTEGER NOT NULL DEFAULT 0 CHECK (integrity_failures >= 0),
    lease TEXT,
    lease_until TEXT,
    CHECK (next_fetch_at IS NULL OR (provider_media_id IS NOT NULL AND expires_at IS NOT NULL AND channel_uuid IS NOT NULL))
  ) STRICT;
  CREATE INDEX media_newest ON media (organization_id, created_at DESC, uuid DESC);
  CREATE INDEX media_fetch_due ON media (next_fetch_at, uuid) WHERE next_fetch_at IS NOT NULL;
  CREATE INDEX media_fetch_channel ON media (channel_uuid, next_fetch_at) WHERE next_fetch_at IS NOT NULL;
  CREATE INDEX media_of_contact ON media (organization_id, contact_uuid) WHERE contact_uuid IS NOT NULL;
  CREATE INDEX media_blobs_to_remove ON media (uuid) WHERE blob_pending_removal = 1;
  CREATE INDEX media_stored_bytes ON media (organization_id, size) WHERE status = 'stored';
  CREATE INDEX media_stored_oldest ON media (created_at, uuid) WHERE status = 'stored';

  CREATE TABLE media_uploads (
    media_uuid TEXT NOT NULL,
    channel_uuid TEXT NOT NULL,
    provider_media_id TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    PRIMARY KEY (media_uuid, channel_uuid)
  ) STRICT, WITHOUT ROWID;
`

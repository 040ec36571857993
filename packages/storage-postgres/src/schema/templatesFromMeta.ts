import type { SchemaArea } from "./context.js"

/**
 * Templates from Meta and their sync records (SQLite migration 20 translated; core's
 * TemplateRepository.ts and TemplateSyncRepository.ts).
 *
 * - `templates` gains `waba_id` (the WhatsApp Business Account a template came from,
 *   `NULL` for one written by hand or imported: every existing row), `provider_template_id`
 *   (Meta's id) and `problems` (`json`, `[]` when none). `status` takes exactly the
 *   statuses of Meta's template list: the CHECK is replaced, `ARCHIVED` and `LOCKED` added,
 *   and rows holding `FLAGGED` or `REINSTATED` (webhook events rather than statuses) become
 *   `APPROVED`, which Meta's list answers for them. The identity becomes the UNIQUE
 *   expression index `templates_identity` on (`organization_id`, `name_key`, `language`,
 *   `COALESCE(waba_id, '')`), so the templates with no account are one group (`NULL`
 *   never equals `NULL` in a UNIQUE index, `''` does); `templates_by_provider_id` finds a
 *   template by Meta's id.
 * - `template_syncs`: one row per organization and account: `next_due_at`, the lease
 *   (`lease`, `lease_until`), the last run's time, outcome (`json`) and error; claims read
 *   `template_syncs_due` in due order. One row is created per (organization, `waba_id`) of
 *   the existing channels, due at `now()` plus `random()` times the 6-hour interval (a
 *   uniform instant in [now, now + 6 h)), so the first syncs of an upgraded install do not
 *   all run at once.
 */
export const templatesFromMetaChanges: SchemaArea = ({ schema }) => `
UPDATE ${schema}.templates SET status = 'APPROVED' WHERE status IN ('FLAGGED', 'REINSTATED');
ALTER TABLE ${schema}.templates DROP CONSTRAINT templates_status_check;
ALTER TABLE ${schema}.templates ADD CONSTRAINT templates_status_check CHECK (status IN ('APPROVED', 'PENDING', 'REJECTED',
  'PAUSED', 'DISABLED', 'IN_APPEAL', 'PENDING_DELETION', 'DELETED', 'LIMIT_EXCEEDED', 'ARCHIVED', 'LOCKED'));
ALTER TABLE ${schema}.templates
  ADD COLUMN waba_id text COLLATE "C",
  ADD COLUMN provider_template_id text COLLATE "C",
  ADD COLUMN problems json NOT NULL DEFAULT '[]';
ALTER TABLE ${schema}.templates DROP CONSTRAINT templates_organization_id_name_key_language_key;
CREATE UNIQUE INDEX templates_identity ON ${schema}.templates (organization_id, name_key, language, (COALESCE(waba_id, '')));
CREATE INDEX templates_by_provider_id ON ${schema}.templates (organization_id, provider_template_id, created_at, uuid)
  WHERE provider_template_id IS NOT NULL;

CREATE TABLE ${schema}.template_syncs (
  organization_id text COLLATE "C" NOT NULL REFERENCES ${schema}.organizations (id),
  waba_id text COLLATE "C" NOT NULL,
  next_due_at timestamptz NOT NULL,
  lease text COLLATE "C",
  lease_until timestamptz,
  last_run_at timestamptz,
  last_outcome json,
  last_error text,
  PRIMARY KEY (organization_id, waba_id)
);
CREATE INDEX template_syncs_due ON ${schema}.template_syncs (next_due_at);
INSERT INTO ${schema}.template_syncs (organization_id, waba_id, next_due_at)
  SELECT organization_id, waba_id, now() + random() * interval '21600 seconds'
  FROM ${schema}.channels GROUP BY organization_id, waba_id;
`

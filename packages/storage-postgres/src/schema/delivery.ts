import type { SchemaArea } from "./context.js"

/**
 * What leaves the store: outgoing webhooks (docs/webhooks.md), the send queue's parts of
 * `messages` (docs/messaging.md "The send queue") and broadcasts (docs/broadcasts.md).
 * Columns as SQLite's final schema names them; ids `text COLLATE "C"`, instants
 * `timestamptz`, JSON `json`, flags `boolean`.
 *
 * - `webhook_endpoints`, `webhook_events`, `webhook_deliveries`, `webhook_attempts`: as on
 *   SQLite, plus `webhook_deliveries.seq`, an insertion counter standing for SQLite's rowid
 *   (deliveries due at one instant are claimed in creation order). `webhook_deliveries_due`
 *   is partial on `pending` (the only rows a claim reads), ordered by (`next_attempt_at`,
 *   `seq`); claims lock its rows `FOR UPDATE SKIP LOCKED`.
 * - `send_queue_sequence`: the store-wide order of the send queue's lanes (SQLite keeps it
 *   in `settings`); a sequence never blocks two appends on each other.
 * - Indexes of the send queue on `messages` (helper B's table): the lanes
 *   (`messages_send_queue_lanes`, partial on waiting messages), the heads in claim order
 *   (`messages_send_queue_due`, `messages_send_queue_expiry`, partial on `head`), and
 *   `messages_send_queue_one_head`, UNIQUE on the lane where `head`: a lane never has two
 *   heads, whoever writes at once (an append that loses the race inserts as no head).
 * - The triggers that keep `head`, as SQLite's do: a head leaving the waiting statuses
 *   (`queued`, `sending`) stops being one (BEFORE, no second write of the row) and hands it
 *   to its lane's next waiting message (AFTER); a deleted head too; a message coming back
 *   to the waiting statuses (a retry) makes the lane's lowest sequence the head. An append
 *   to a lane locks the lane's head `FOR SHARE` first (outboxInsert.ts), so a hand-over
 *   waits for it and sees the appended message.
 * - `broadcasts` and the recipients' indexes on `messages`, as on SQLite
 *   (`start_lease_until` epoch ms, as the interface counts it).
 */
export const deliveryTables: SchemaArea = ({ schema }) => `
CREATE TABLE ${schema}.webhook_endpoints (
  uuid text COLLATE "C" PRIMARY KEY,
  organization_id text COLLATE "C" NOT NULL REFERENCES ${schema}.organizations (id),
  url text NOT NULL,
  events json,
  description text,
  enabled boolean NOT NULL,
  secret_sealed text NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE INDEX webhook_endpoints_newest ON ${schema}.webhook_endpoints (organization_id, created_at DESC, uuid DESC);
CREATE INDEX webhook_endpoints_enabled ON ${schema}.webhook_endpoints (organization_id) WHERE enabled;

CREATE TABLE ${schema}.webhook_events (
  id text COLLATE "C" PRIMARY KEY,
  organization_id text COLLATE "C" NOT NULL REFERENCES ${schema}.organizations (id),
  type text COLLATE "C" NOT NULL,
  data json NOT NULL,
  created_at timestamptz NOT NULL
);

CREATE TABLE ${schema}.webhook_deliveries (
  id text COLLATE "C" PRIMARY KEY,
  organization_id text COLLATE "C" NOT NULL REFERENCES ${schema}.organizations (id),
  endpoint_uuid text COLLATE "C" NOT NULL REFERENCES ${schema}.webhook_endpoints (uuid),
  event_id text COLLATE "C" NOT NULL REFERENCES ${schema}.webhook_events (id),
  status text NOT NULL CHECK (status IN ('pending', 'delivered', 'failed', 'cancelled')),
  attempts integer NOT NULL CHECK (attempts >= 0),
  next_attempt_at timestamptz,
  lease text COLLATE "C",
  lease_until timestamptz,
  created_at timestamptz NOT NULL,
  seq bigserial NOT NULL
);
CREATE INDEX webhook_deliveries_due ON ${schema}.webhook_deliveries (next_attempt_at, seq) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_endpoint ON ${schema}.webhook_deliveries (endpoint_uuid, status);
CREATE INDEX webhook_deliveries_event ON ${schema}.webhook_deliveries (event_id);
CREATE INDEX webhook_deliveries_created_at ON ${schema}.webhook_deliveries (created_at);

CREATE TABLE ${schema}.webhook_attempts (
  id text COLLATE "C" PRIMARY KEY,
  delivery_id text COLLATE "C" NOT NULL REFERENCES ${schema}.webhook_deliveries (id),
  endpoint_uuid text COLLATE "C" NOT NULL,
  event_id text COLLATE "C" NOT NULL,
  event_type text NOT NULL,
  attempt integer NOT NULL,
  status integer,
  error text,
  duration_ms double precision NOT NULL,
  response_body text,
  attempted_at timestamptz NOT NULL,
  delivery_status text NOT NULL CHECK (delivery_status IN ('pending', 'delivered', 'failed')),
  next_attempt_at timestamptz
);
CREATE INDEX webhook_attempts_newest ON ${schema}.webhook_attempts (endpoint_uuid, attempted_at DESC, id DESC);
CREATE INDEX webhook_attempts_delivery ON ${schema}.webhook_attempts (delivery_id);

CREATE SEQUENCE ${schema}.send_queue_sequence;

CREATE INDEX messages_send_queue_lanes ON ${schema}.messages (organization_id, channel_uuid, recipient, send_class, sequence)
  WHERE recipient IS NOT NULL AND status IN ('queued', 'sending');
CREATE UNIQUE INDEX messages_send_queue_one_head ON ${schema}.messages
  (organization_id, (COALESCE(channel_uuid, '')), recipient, send_class) WHERE head;
CREATE INDEX messages_send_queue_due ON ${schema}.messages (channel_uuid, send_class, next_attempt_at, sequence)
  WHERE head;
CREATE INDEX messages_send_queue_expiry ON ${schema}.messages (channel_uuid, expires_at) WHERE head;

CREATE FUNCTION ${schema}.send_queue_next_head(
  p_organization text, p_channel text, p_recipient text, p_class text
) RETURNS void LANGUAGE sql VOLATILE AS $fn$
  UPDATE ${schema}.messages SET head = true
  WHERE uuid = (SELECT uuid FROM ${schema}.messages
    WHERE organization_id = p_organization AND channel_uuid IS NOT DISTINCT FROM p_channel
      AND recipient = p_recipient AND send_class = p_class
      AND recipient IS NOT NULL AND status IN ('queued', 'sending')
    ORDER BY sequence LIMIT 1)
$fn$;

CREATE FUNCTION ${schema}.messages_send_queue_head_leaving() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF OLD.head AND NEW.status NOT IN ('queued', 'sending') THEN
    NEW.head := false;
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER messages_send_queue_head_leaving BEFORE UPDATE OF status ON ${schema}.messages
  FOR EACH ROW EXECUTE FUNCTION ${schema}.messages_send_queue_head_leaving();

CREATE FUNCTION ${schema}.messages_send_queue_head_left() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM ${schema}.send_queue_next_head(NEW.organization_id, NEW.channel_uuid, NEW.recipient, NEW.send_class);
  RETURN NULL;
END
$fn$;
CREATE TRIGGER messages_send_queue_head_left AFTER UPDATE OF status ON ${schema}.messages
  FOR EACH ROW WHEN (OLD.head AND NEW.status NOT IN ('queued', 'sending'))
  EXECUTE FUNCTION ${schema}.messages_send_queue_head_left();

CREATE FUNCTION ${schema}.messages_send_queue_head_deleted() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM ${schema}.send_queue_next_head(OLD.organization_id, OLD.channel_uuid, OLD.recipient, OLD.send_class);
  RETURN NULL;
END
$fn$;
CREATE TRIGGER messages_send_queue_head_deleted AFTER DELETE ON ${schema}.messages
  FOR EACH ROW WHEN (OLD.head) EXECUTE FUNCTION ${schema}.messages_send_queue_head_deleted();

CREATE FUNCTION ${schema}.messages_send_queue_returned() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  UPDATE ${schema}.messages SET head = false
    WHERE organization_id = NEW.organization_id AND channel_uuid IS NOT DISTINCT FROM NEW.channel_uuid
      AND recipient = NEW.recipient AND send_class = NEW.send_class AND head;
  PERFORM ${schema}.send_queue_next_head(NEW.organization_id, NEW.channel_uuid, NEW.recipient, NEW.send_class);
  RETURN NULL;
END
$fn$;
CREATE TRIGGER messages_send_queue_returned AFTER UPDATE OF status ON ${schema}.messages
  FOR EACH ROW WHEN (NEW.recipient IS NOT NULL AND OLD.status NOT IN ('queued', 'sending')
    AND NEW.status IN ('queued', 'sending'))
  EXECUTE FUNCTION ${schema}.messages_send_queue_returned();

CREATE TABLE ${schema}.broadcasts (
  uuid text COLLATE "C" PRIMARY KEY,
  organization_id text COLLATE "C" NOT NULL REFERENCES ${schema}.organizations (id),
  name text NOT NULL,
  status text NOT NULL CHECK (status IN ('scheduled', 'sending', 'completed', 'cancelled', 'stopped')),
  template json NOT NULL,
  audience json NOT NULL,
  channel_uuid text COLLATE "C",
  send_at timestamptz,
  created_at timestamptz NOT NULL,
  started_at timestamptz,
  completed_at timestamptz,
  stopped_reason json,
  start_cursor text COLLATE "C",
  start_finished boolean NOT NULL DEFAULT false,
  start_lease text COLLATE "C",
  start_lease_until bigint
);
CREATE INDEX broadcasts_newest ON ${schema}.broadcasts (organization_id, created_at DESC, uuid DESC);
CREATE INDEX broadcasts_scheduled ON ${schema}.broadcasts (send_at) WHERE status = 'scheduled';
CREATE INDEX broadcasts_sending ON ${schema}.broadcasts (start_finished, start_lease_until) WHERE status = 'sending';

CREATE UNIQUE INDEX messages_broadcast_recipients ON ${schema}.messages (broadcast_uuid, contact_uuid)
  WHERE broadcast_uuid IS NOT NULL;
CREATE INDEX messages_broadcast_statuses ON ${schema}.messages (broadcast_uuid, status, contact_uuid)
  WHERE broadcast_uuid IS NOT NULL;
`

/**
 * Which transport a message was handed to (core's `TransportKind`: `recording`,
 * `whatsapp`, `custom`), stored at its creation (migration "transport kind").
 * - `messages.transport`: `NULL` for inbound and imported messages. Existing outbound rows
 *   are filled as the transports built in answer: `whatsapp` with a channel, else
 *   `recording` (rows imported before included: nothing of theirs left this server
 *   either). A host that ran a transport of its own may correct its rows to `custom`.
 * - `broadcasts.transport`: the kind its recipients' messages are handed to, settled at its
 *   creation from its channel; existing rows filled by the same rule, then NOT NULL.
 * No index reads the columns, and the send queue's triggers fire on `status` only.
 */
export const transportKindColumns: SchemaArea = ({ schema }) => `
ALTER TABLE ${schema}.messages ADD COLUMN transport text CHECK (transport IN ('recording', 'whatsapp', 'custom'));
UPDATE ${schema}.messages SET transport = CASE WHEN channel_uuid IS NULL THEN 'recording' ELSE 'whatsapp' END
  WHERE direction = 'outbound';
ALTER TABLE ${schema}.broadcasts ADD COLUMN transport text CHECK (transport IN ('recording', 'whatsapp', 'custom'));
UPDATE ${schema}.broadcasts SET transport = CASE WHEN channel_uuid IS NULL THEN 'recording' ELSE 'whatsapp' END;
ALTER TABLE ${schema}.broadcasts ALTER COLUMN transport SET NOT NULL;
`

/**
 * Migration 5: scheduled sends (docs/messaging.md "Scheduled sends").
 * - `messages.status` may be `scheduled`: the column's CHECK is replaced (PostgreSQL alters
 *   it in place; no row is rewritten, existing rows are checked once).
 * - `messages.scheduled_at`: the `send_at` of a send stored `scheduled` (`NULL` for every
 *   other message, every existing row among them), kept once it leaves, so only those
 *   messages have their template's approval checked again.
 * - A `scheduled` message is in the send queue (`recipient` set) but not waiting: never a
 *   head, in no lane, until a claim promotes it to `queued` with a fresh sequence (the
 *   `messages_send_queue_returned` trigger then makes it its lane's head when the lane is
 *   empty). `messages_send_queue_scheduled` (next_attempt_at), partial on `scheduled`,
 *   serves that promotion, `nextDueAt` and the queue figures.
 */
export const scheduledSendsChanges: SchemaArea = ({ schema }) => `
ALTER TABLE ${schema}.messages DROP CONSTRAINT messages_status_check;
ALTER TABLE ${schema}.messages ADD CONSTRAINT messages_status_check
  CHECK (status IN ('scheduled', 'queued', 'sending', 'sent', 'delivered', 'read', 'failed'));
ALTER TABLE ${schema}.messages ADD COLUMN scheduled_at timestamptz;
CREATE INDEX messages_send_queue_scheduled ON ${schema}.messages (next_attempt_at) WHERE status = 'scheduled';
`

/**
 * Migration 7: webhook secret rotation with an overlap (docs/webhooks.md "The secret"), as
 * SQLite's migration 24: `webhook_endpoints.previous_secret_sealed` and
 * `previous_secret_expires_at`, both `NULL` on existing rows.
 */
export const webhookSecretRotationColumns: SchemaArea = ({ schema }) => `
ALTER TABLE ${schema}.webhook_endpoints ADD COLUMN previous_secret_sealed text;
ALTER TABLE ${schema}.webhook_endpoints ADD COLUMN previous_secret_expires_at timestamptz;
`

/**
 * Migration 9: a lane's next head found through `messages_send_queue_lanes` with every
 * column of the lane in the index condition. The functions of migration 2 matched the
 * channel with `channel_uuid IS NOT DISTINCT FROM p_channel`, which PostgreSQL cannot use
 * as an index condition: each message leaving the queue scanned the lanes index over every
 * channel of its organization (~15 ms a message with 20 000 waiting), inside the record's
 * transaction and under the organization's lock, and two dispatchers' records queued
 * behind it (docs/benchmarks.md "Dispatch on PostgreSQL: a lane's next head by its index").
 * Now a message with a channel matches `channel_uuid = p_channel`, one without
 * `channel_uuid IS NULL`: both index conditions.
 */
export const sendQueueLanesByIndex: SchemaArea = ({ schema }) => `
CREATE OR REPLACE FUNCTION ${schema}.send_queue_next_head(
  p_organization text, p_channel text, p_recipient text, p_class text
) RETURNS void LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  IF p_channel IS NULL THEN
    UPDATE ${schema}.messages SET head = true
    WHERE uuid = (SELECT uuid FROM ${schema}.messages
      WHERE organization_id = p_organization AND channel_uuid IS NULL
        AND recipient = p_recipient AND send_class = p_class
        AND recipient IS NOT NULL AND status IN ('queued', 'sending')
      ORDER BY sequence LIMIT 1);
  ELSE
    UPDATE ${schema}.messages SET head = true
    WHERE uuid = (SELECT uuid FROM ${schema}.messages
      WHERE organization_id = p_organization AND channel_uuid = p_channel
        AND recipient = p_recipient AND send_class = p_class
        AND recipient IS NOT NULL AND status IN ('queued', 'sending')
      ORDER BY sequence LIMIT 1);
  END IF;
END
$fn$;

CREATE OR REPLACE FUNCTION ${schema}.messages_send_queue_returned() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF NEW.channel_uuid IS NULL THEN
    UPDATE ${schema}.messages SET head = false
      WHERE organization_id = NEW.organization_id AND channel_uuid IS NULL
        AND recipient = NEW.recipient AND send_class = NEW.send_class AND head;
  ELSE
    UPDATE ${schema}.messages SET head = false
      WHERE organization_id = NEW.organization_id AND channel_uuid = NEW.channel_uuid
        AND recipient = NEW.recipient AND send_class = NEW.send_class AND head;
  END IF;
  PERFORM ${schema}.send_queue_next_head(NEW.organization_id, NEW.channel_uuid, NEW.recipient, NEW.send_class);
  RETURN NULL;
END
$fn$;
`

// What leaves the store: the send queue (migration 15), outgoing webhooks (migration 11) and
// broadcasts, listed by migrations.ts. Never edit this text once released: add a migration
// instead.

/**
 * The uuid of the head of the lane of `p` (`new` or `old` in a trigger): its waiting message
 * of lowest sequence, one probe of messages_send_queue_lanes.
 */
const laneHead = (p: string): string =>
  `SELECT uuid FROM messages WHERE organization_id = ${p}.organization_id AND channel_uuid IS ${p}.channel_uuid
      AND recipient = ${p}.recipient AND send_class = ${p}.send_class
      AND recipient IS NOT NULL AND status IN ('queued', 'sending') ORDER BY sequence LIMIT 1`

/**
 * Migration 15: the send queue (docs/messaging.md "The send queue", docs/storage.md "The
 * send queue on SQLite").
 * - `messages` is rebuilt, every row and both indexes kept, because its status CHECK must
 *   allow `sending` and SQLite cannot alter a CHECK: the documented way, as migration 7 did
 *   (schema/chats.ts). Nothing references `messages` (no foreign key, trigger or view
 *   names it), so foreign keys stay on; the whole migration runs in the migration
 *   transaction, so a failure leaves version 14 as it was.
 * - New columns of every message: `attempts` (0), `next_attempt_at`, `broadcast_uuid`
 *   (public); and the dispatch state of a message created in the send queue: `recipient`
 *   (the `to` of its placement: `NULL` for every message not in the queue, every existing
 *   row among them), `send_class`, `expires_at`, `sequence` (a store-wide counter,
 *   `settings` key `send_queue_sequence`), `pair_rate_waits`, and the lease (`lease`
 *   token, `lease_until` in epoch ms). A CHECK keeps the dispatch state whole.
 * - `head` (1 or 0): the message is the HEAD of its lane, its waiting message (in the queue,
 *   `queued` or `sending`) of lowest sequence. An append sets it (no other waiting message
 *   in the lane); three triggers keep it whoever writes the status: a head leaving the
 *   waiting statuses (an outcome, a provider report, a cancel, a deleted channel) hands it
 *   to its lane's next waiting message, a deleted head (a deleted contact) too, and a
 *   message coming back to the waiting statuses (a retry) makes the lane's lowest sequence
 *   the head again. A claim never changes it.
 * - `messages_send_queue_lanes` (organization, channel, recipient, class, sequence),
 *   partial on the waiting messages: a lane's next head is the first entry of its range.
 *   `messages_send_queue_due` (channel, class, next_attempt_at, sequence) and
 *   `messages_send_queue_expiry` (channel, expires_at), partial on the heads: a channel's
 *   due heads, in claim order, are a range of the first; its expired heads (claimed even
 *   when its pacing allows no slot) a range of the second; the channels with waiting
 *   messages, one probe per channel of either. However many messages wait behind a head,
 *   a claim never reads them.
 * - `channels` gains `status` (`active` or `paused`), `paused_reason` (JSON `{code,
 *   title}`), `paused_at`, and its pacing state: `pacing_tat` (epoch ms, fractional) and
 *   `cooldown_ms`. Every existing channel is `active`, never paced yet.
 */
export const SEND_QUEUE_MIGRATION = `
  CREATE TABLE messages_v15 (
    uuid TEXT PRIMARY KEY NOT NULL,
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    chat_uuid TEXT NOT NULL REFERENCES chats (uuid) ON DELETE CASCADE,
    contact_uuid TEXT NOT NULL,
    direction TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound')),
    type TEXT NOT NULL CHECK (type IN ('text', 'template', 'media', 'image', 'audio', 'video', 'document',
      'sticker', 'location', 'contacts', 'interactive', 'button', 'reaction', 'unsupported')),
    text TEXT,
    template TEXT CHECK (template IS NULL OR json_valid(template)),
    media TEXT CHECK (media IS NULL OR json_valid(media)),
    content TEXT CHECK (content IS NULL OR json_valid(content)),
    status TEXT NOT NULL CHECK (status IN ('queued', 'sending', 'sent', 'delivered', 'read', 'failed')),
    provider_message_id TEXT,
    failure TEXT CHECK (failure IS NULL OR json_valid(failure)),
    channel_uuid TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at TEXT,
    broadcast_uuid TEXT,
    recipient TEXT,
    send_class TEXT CHECK (send_class IN ('single', 'broadcast')),
    expires_at TEXT,
    sequence INTEGER,
    pair_rate_waits INTEGER NOT NULL DEFAULT 0 CHECK (pair_rate_waits >= 0),
    lease TEXT,
    lease_until INTEGER,
    head INTEGER NOT NULL DEFAULT 0 CHECK (head IN (0, 1)),
    CHECK ((recipient IS NULL) = (send_class IS NULL) AND (recipient IS NULL) = (expires_at IS NULL)
      AND (recipient IS NULL) = (sequence IS NULL))
  ) STRICT;
  INSERT INTO messages_v15 (uuid, organization_id, chat_uuid, contact_uuid, direction, type, text, template, media,
      content, status, provider_message_id, failure, channel_uuid, created_at, updated_at)
    SELECT uuid, organization_id, chat_uuid, contact_uuid, direction, type, text, template, media,
      content, status, provider_message_id, failure, channel_uuid, created_at, updated_at
    FROM messages;
  DROP TABLE messages;
  ALTER TABLE messages_v15 RENAME TO messages;
  CREATE INDEX messages_by_chat ON messages (chat_uuid, created_at DESC, uuid DESC);
  CREATE INDEX messages_by_provider_id ON messages (organization_id, direction, provider_message_id)
    WHERE provider_message_id IS NOT NULL;
  CREATE INDEX messages_send_queue_lanes ON messages (organization_id, channel_uuid, recipient, send_class, sequence)
    WHERE recipient IS NOT NULL AND status IN ('queued', 'sending');
  CREATE INDEX messages_send_queue_due ON messages (channel_uuid, send_class, next_attempt_at, sequence)
    WHERE head = 1;
  CREATE INDEX messages_send_queue_expiry ON messages (channel_uuid, expires_at)
    WHERE head = 1;
  CREATE TRIGGER messages_send_queue_head_left AFTER UPDATE OF status ON messages
    WHEN old.head = 1 AND new.status NOT IN ('queued', 'sending') BEGIN
    UPDATE messages SET head = 0 WHERE uuid = new.uuid;
    UPDATE messages SET head = 1 WHERE uuid = (${laneHead("new")});
  END;
  CREATE TRIGGER messages_send_queue_head_deleted AFTER DELETE ON messages WHEN old.head = 1 BEGIN
    UPDATE messages SET head = 1 WHERE uuid = (${laneHead("old")});
  END;
  CREATE TRIGGER messages_send_queue_returned AFTER UPDATE OF status ON messages
    WHEN new.recipient IS NOT NULL AND old.status NOT IN ('queued', 'sending') AND new.status IN ('queued', 'sending') BEGIN
    UPDATE messages SET head = (uuid = (${laneHead("new")}))
      WHERE organization_id = new.organization_id AND channel_uuid IS new.channel_uuid AND recipient = new.recipient
        AND send_class = new.send_class AND recipient IS NOT NULL AND status IN ('queued', 'sending');
  END;

  ALTER TABLE channels ADD COLUMN status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused'));
  ALTER TABLE channels ADD COLUMN paused_reason TEXT CHECK (paused_reason IS NULL OR json_valid(paused_reason));
  ALTER TABLE channels ADD COLUMN paused_at TEXT;
  ALTER TABLE channels ADD COLUMN pacing_tat REAL NOT NULL DEFAULT 0;
  ALTER TABLE channels ADD COLUMN cooldown_ms INTEGER NOT NULL DEFAULT 0 CHECK (cooldown_ms >= 0);
`

/**
 * Migration 11: outgoing webhooks (docs/webhooks.md, docs/storage.md "Outgoing webhook
 * events").
 * - `webhook_endpoints`: an organization's endpoints; `events` a JSON array of event types
 *   or `NULL` (every type), `secret_sealed` the sealed signing secret. The partial index
 *   `webhook_endpoints_enabled` makes the outbox's look-up of an organization's enabled
 *   endpoints one index probe, on every write that may record an event.
 * - `webhook_events`: the outbox's events, `data` the record as JSON text.
 * - `webhook_deliveries`: one per event and subscribed endpoint; `status`, the number of
 *   `attempts` recorded, `next_attempt_at` (`NULL` unless `pending`), and the claim's
 *   `lease` token and `lease_until`. `webhook_deliveries_due` (status, next_attempt_at)
 *   serves the claims.
 * - `webhook_attempts`: one per attempt; `webhook_attempts_newest` (endpoint_uuid,
 *   attempted_at DESC, id DESC) serves the endpoint's attempt list and its cursor.
 */
export const WEBHOOKS_MIGRATION = `
  CREATE TABLE webhook_endpoints (
    uuid TEXT PRIMARY KEY NOT NULL,
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    url TEXT NOT NULL,
    events TEXT CHECK (events IS NULL OR json_valid(events)),
    description TEXT,
    enabled INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    secret_sealed TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  ) STRICT;
  CREATE INDEX webhook_endpoints_newest ON webhook_endpoints (organization_id, created_at DESC, uuid DESC);
  CREATE INDEX webhook_endpoints_enabled ON webhook_endpoints (organization_id) WHERE enabled = 1;

  CREATE TABLE webhook_events (
    id TEXT PRIMARY KEY NOT NULL,
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    type TEXT NOT NULL,
    data TEXT NOT NULL CHECK (json_valid(data)),
    created_at TEXT NOT NULL
  ) STRICT;

  CREATE TABLE webhook_deliveries (
    id TEXT PRIMARY KEY NOT NULL,
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    endpoint_uuid TEXT NOT NULL REFERENCES webhook_endpoints (uuid),
    event_id TEXT NOT NULL REFERENCES webhook_events (id),
    status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed', 'cancelled')),
    attempts INTEGER NOT NULL CHECK (attempts >= 0),
    next_attempt_at TEXT,
    lease TEXT,
    lease_until TEXT,
    created_at TEXT NOT NULL
  ) STRICT;
  CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
  CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_uuid, status);
  CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);
  CREATE INDEX webhook_deliveries_created_at ON webhook_deliveries (created_at);

  CREATE TABLE webhook_attempts (
    id TEXT PRIMARY KEY NOT NULL,
    delivery_id TEXT NOT NULL REFERENCES webhook_deliveries (id),
    endpoint_uuid TEXT NOT NULL,
    event_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    status INTEGER,
    error TEXT,
    duration_ms REAL NOT NULL,
    response_body TEXT,
    attempted_at TEXT NOT NULL,
    delivery_status TEXT NOT NULL CHECK (delivery_status IN ('pending', 'delivered', 'failed')),
    next_attempt_at TEXT
  ) STRICT;
  CREATE INDEX webhook_attempts_newest ON webhook_attempts (endpoint_uuid, attempted_at DESC, id DESC);
  CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id);
`

/**
 * Migration 18: broadcasts and the contacts' marketing opt-out (docs/broadcasts.md).
 * - `contacts.marketing_opt_out_at`: when the contact's number refused marketing messages
 *   (Meta's 131050), else `NULL`; every existing contact `NULL`.
 * - `broadcasts`: the record without its counts (`template`, `audience` and
 *   `stopped_reason` as JSON text) and the state of its START (core's BroadcastRepository
 *   "THE START"): `start_cursor` (the uuid of the last contact a batch reached),
 *   `start_finished` (0/1), the starter's lease `start_lease` and its end
 *   `start_lease_until` (epoch ms). `broadcasts_newest` serves the list's keyset pages;
 *   `broadcasts_scheduled` (partial on `scheduled`) the due scheduled ones of a claim;
 *   `broadcasts_sending` (partial on `sending`) the starts to resume of a claim
 *   (`start_finished = 0`) and the finished ones `completeFinished` checks
 *   (`start_finished = 1`). No foreign key to `channels`: the channel may go, the record stays.
 * - A broadcast's RECIPIENTS are rows of `messages` with `broadcast_uuid` set (migration
 *   15's column): `messages_broadcast_recipients` (broadcast_uuid, contact_uuid), UNIQUE,
 *   holds the one-message-per-contact rule and serves the recipients list in contact-uuid
 *   order; `messages_broadcast_statuses` (broadcast_uuid, status, contact_uuid) serves the
 *   counts (one GROUP BY over a range, the index covers it), a list filtered by status and
 *   the queued recipients a cancel fails. Both are partial on `broadcast_uuid IS NOT NULL`,
 *   so single sends never enter them. A deleted contact's chat and messages go with it
 *   (migration 4), its recipient among them: counts are read from the messages present.
 */
export const BROADCASTS_MIGRATION = `
  ALTER TABLE contacts ADD COLUMN marketing_opt_out_at TEXT;

  CREATE TABLE broadcasts (
    uuid TEXT PRIMARY KEY NOT NULL,
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    name TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('scheduled', 'sending', 'completed', 'cancelled', 'stopped')),
    template TEXT NOT NULL CHECK (json_valid(template)),
    audience TEXT NOT NULL CHECK (json_valid(audience)),
    channel_uuid TEXT,
    send_at TEXT,
    created_at TEXT NOT NULL,
    started_at TEXT,
    completed_at TEXT,
    stopped_reason TEXT CHECK (stopped_reason IS NULL OR json_valid(stopped_reason)),
    start_cursor TEXT,
    start_finished INTEGER NOT NULL DEFAULT 0 CHECK (start_finished IN (0, 1)),
    start_lease TEXT,
    start_lease_until INTEGER
  ) STRICT;
  CREATE INDEX broadcasts_newest ON broadcasts (organization_id, created_at DESC, uuid DESC);
  CREATE INDEX broadcasts_scheduled ON broadcasts (send_at) WHERE status = 'scheduled';
  CREATE INDEX broadcasts_sending ON broadcasts (start_finished, start_lease_until) WHERE status = 'sending';

  CREATE UNIQUE INDEX messages_broadcast_recipients ON messages (broadcast_uuid, contact_uuid)
    WHERE broadcast_uuid IS NOT NULL;
  CREATE INDEX messages_broadcast_statuses ON messages (broadcast_uuid, status, contact_uuid)
    WHERE broadcast_uuid IS NOT NULL;
`

/**
 * Migration 21: which transport a message was handed to (core's `TransportKind`:
 * `recording`, `whatsapp`, `custom`), stored at its creation.
 * - `messages.transport`: `NULL` for inbound and imported messages. Existing outbound rows
 *   are filled as the transports built in answer: `whatsapp` with a channel, else
 *   `recording` (rows imported before this migration included: nothing of theirs left this
 *   server either). A host that ran a transport of its own may correct its rows to `custom`.
 * - `broadcasts.transport`: the kind its recipients' messages are handed to, settled at its
 *   creation from its channel; existing rows filled by the same rule. The column's default
 *   exists only because SQLite adds a NOT NULL column with one: every insert gives it.
 * No index reads the column, and no trigger watches it (they fire on `status`).
 */
export const TRANSPORT_KIND_MIGRATION = `
  ALTER TABLE messages ADD COLUMN transport TEXT CHECK (transport IN ('recording', 'whatsapp', 'custom'));
  UPDATE messages SET transport = CASE WHEN channel_uuid IS NULL THEN 'recording' ELSE 'whatsapp' END
    WHERE direction = 'outbound';

  ALTER TABLE broadcasts ADD COLUMN transport TEXT NOT NULL DEFAULT 'recording'
    CHECK (transport IN ('recording', 'whatsapp', 'custom'));
  UPDATE broadcasts SET transport = 'whatsapp' WHERE channel_uuid IS NOT NULL;
`

/**
 * Migration 22: scheduled sends (docs/messaging.md "Scheduled sends", docs/storage.md "The
 * send queue on SQLite").
 * - `messages` is rebuilt, every row, index and trigger kept, because its status CHECK must
 *   allow `scheduled` and SQLite cannot alter a CHECK (as migration 15 did). The columns
 *   are today's, in today's order, plus `scheduled_at`: the `send_at` of a send stored
 *   `scheduled` (`NULL` for every other message, every existing row among them), kept once
 *   it leaves, so only those messages have their template's approval checked again.
 * - A `scheduled` message is in the send queue (`recipient` set) but not waiting: it is
 *   never a head and is in no lane until a claim promotes it to `queued` with a fresh
 *   sequence (the `messages_send_queue_returned` trigger then makes it its lane's head
 *   when its lane is empty). `messages_send_queue_scheduled` (next_attempt_at), partial on
 *   `scheduled`, serves that promotion, `nextDueAt` and the summary;
 *   `messages_send_queue_scheduled_by_channel` (channel_uuid, organization_id), partial on
 *   `scheduled` too, a channel's figures and its delete. Plain messages enter neither.
 * Nothing but the three send-queue triggers names `messages` (they go with the old table
 * and are created again); foreign keys stay on; the migration runs in the migration
 * transaction, so a failure leaves version 21 as it was.
 */
export const SCHEDULED_SENDS_MIGRATION = `
  CREATE TABLE messages_v22 (
    uuid TEXT PRIMARY KEY NOT NULL,
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    chat_uuid TEXT NOT NULL REFERENCES chats (uuid) ON DELETE CASCADE,
    contact_uuid TEXT NOT NULL,
    direction TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound')),
    type TEXT NOT NULL CHECK (type IN ('text', 'template', 'media', 'image', 'audio', 'video', 'document',
      'sticker', 'location', 'contacts', 'interactive', 'button', 'reaction', 'unsupported')),
    text TEXT,
    template TEXT CHECK (template IS NULL OR json_valid(template)),
    media TEXT CHECK (media IS NULL OR json_valid(media)),
    content TEXT CHECK (content IS NULL OR json_valid(content)),
    status TEXT NOT NULL CHECK (status IN ('scheduled', 'queued', 'sending', 'sent', 'delivered', 'read', 'failed')),
    provider_message_id TEXT,
    failure TEXT CHECK (failure IS NULL OR json_valid(failure)),
    channel_uuid TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at TEXT,
    broadcast_uuid TEXT,
    recipient TEXT,
    send_class TEXT CHECK (send_class IN ('single', 'broadcast')),
    expires_at TEXT,
    sequence INTEGER,
    pair_rate_waits INTEGER NOT NULL DEFAULT 0 CHECK (pair_rate_waits >= 0),
    lease TEXT,
    lease_until INTEGER,
    head INTEGER NOT NULL DEFAULT 0 CHECK (head IN (0, 1)),
    transport TEXT CHECK (transport IN ('recording', 'whatsapp', 'custom')),
    scheduled_at TEXT,
    CHECK ((recipient IS NULL) = (send_class IS NULL) AND (recipient IS NULL) = (expires_at IS NULL)
      AND (recipient IS NULL) = (sequence IS NULL))
  ) STRICT;
  INSERT INTO messages_v22 (uuid, organization_id, chat_uuid, contact_uuid, direction, type, text, template, media,
      content, status, provider_message_id, failure, channel_uuid, created_at, updated_at, attempts, next_attempt_at,
      broadcast_uuid, recipient, send_class, expires_at, sequence, pair_rate_waits, lease, lease_until, head, transport)
    SELECT uuid, organization_id, chat_uuid, contact_uuid, direction, type, text, template, media,
      content, status, provider_message_id, failure, channel_uuid, created_at, updated_at, attempts, next_attempt_at,
      broadcast_uuid, recipient, send_class, expires_at, sequence, pair_rate_waits, lease, lease_until, head, transport
    FROM messages;
  DROP TABLE messages;
  ALTER TABLE messages_v22 RENAME TO messages;
  CREATE INDEX messages_by_chat ON messages (chat_uuid, created_at DESC, uuid DESC);
  CREATE INDEX messages_by_provider_id ON messages (organization_id, direction, provider_message_id)
    WHERE provider_message_id IS NOT NULL;
  CREATE INDEX messages_send_queue_lanes ON messages (organization_id, channel_uuid, recipient, send_class, sequence)
    WHERE recipient IS NOT NULL AND status IN ('queued', 'sending');
  CREATE INDEX messages_send_queue_due ON messages (channel_uuid, send_class, next_attempt_at, sequence)
    WHERE head = 1;
  CREATE INDEX messages_send_queue_expiry ON messages (channel_uuid, expires_at)
    WHERE head = 1;
  CREATE INDEX messages_send_queue_scheduled ON messages (next_attempt_at)
    WHERE status = 'scheduled';
  CREATE INDEX messages_send_queue_scheduled_by_channel ON messages (channel_uuid, organization_id)
    WHERE status = 'scheduled';
  CREATE UNIQUE INDEX messages_broadcast_recipients ON messages (broadcast_uuid, contact_uuid)
    WHERE broadcast_uuid IS NOT NULL;
  CREATE INDEX messages_broadcast_statuses ON messages (broadcast_uuid, status, contact_uuid)
    WHERE broadcast_uuid IS NOT NULL;
  CREATE TRIGGER messages_send_queue_head_left AFTER UPDATE OF status ON messages
    WHEN old.head = 1 AND new.status NOT IN ('queued', 'sending') BEGIN
    UPDATE messages SET head = 0 WHERE uuid = new.uuid;
    UPDATE messages SET head = 1 WHERE uuid = (${laneHead("new")});
  END;
  CREATE TRIGGER messages_send_queue_head_deleted AFTER DELETE ON messages WHEN old.head = 1 BEGIN
    UPDATE messages SET head = 1 WHERE uuid = (${laneHead("old")});
  END;
  CREATE TRIGGER messages_send_queue_returned AFTER UPDATE OF status ON messages
    WHEN new.recipient IS NOT NULL AND old.status NOT IN ('queued', 'sending') AND new.status IN ('queued', 'sending') BEGIN
    UPDATE messages SET head = (uuid = (${laneHead("new")}))
      WHERE organization_id = new.organization_id AND channel_uuid IS new.channel_uuid AND recipient = new.recipient
        AND send_class = new.send_class AND recipient IS NOT NULL AND status IN ('queued', 'sending');
  END;
`

/**
 * Migration 24: webhook secret rotation with an overlap (docs/webhooks.md "The secret").
 * `webhook_endpoints.previous_secret_sealed`, the rotated-out signing secret (sealed like
 * `secret_sealed`), and `previous_secret_expires_at`, the instant it stops signing; both
 * `NULL` on existing rows (no overlap). No index or trigger reads them.
 */
export const WEBHOOK_SECRET_ROTATION_MIGRATION = `
  ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_sealed TEXT;
  ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_expires_at TEXT;
`

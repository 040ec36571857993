// Migrations 4 (chats and messages), 7 (messages widened) and the pending statuses of
// migration 10, listed by migrations.ts. Never edit this text once released: add a
// migration instead.

/**
 * The search text of a contact (core's `chatSearchText`, same fields, same order): first
 * name, last name, full name, email and the phone's digits, one per line. `p` is the table
 * alias or `new`.
 */
const searchText = (p: string): string =>
  `coalesce(${p}.first_name, '') || char(10) || coalesce(${p}.last_name, '') || char(10) || ` +
  `trim(coalesce(${p}.first_name, '') || ' ' || coalesce(${p}.last_name, '')) || char(10) || ` +
  `coalesce(${p}.email, '') || char(10) || replace(${p}.phone, '+', '')`

/**
 * Migration 4. Design (docs/benchmarks.md: 1 000 000 chats, any single filter p99 ≤ 20 ms, the
 * 500th cursor page as cheap as the first):
 * - `chats` keeps what the list filters and sorts on, denormalised on the row:
 *   `status`, `assigned_to`, `favorite`, `unread_count` (and `unread`, stored),
 *   `last_message_at` (`''` when there is no message: it sorts before every timestamp and
 *   keeps the column NOT NULL for keyset comparisons), `last_message_uuid`, and
 *   `search_text` (kept from the contact by triggers, whoever writes the contact).
 * - one index per sort key `(organization_id, key, uuid)` and one per equality filter
 *   `(organization_id, column, last_message_at, uuid)`: a page is a range of one index,
 *   positioned by a row-value comparison `(key, uuid) < (?, ?)` (keyset pagination).
 * - `chat_search`: FTS5 trigram index of `search_text` (external content, rowid = `id`),
 *   for substring searches of 3 characters or more; case folded by FTS5.
 * - `chat_links`: one row per group or label of a chat's contact, with the chat's
 *   `last_message_at` and uuid, kept by triggers on `group_members`, `contact_labels` and
 *   `chats` (so the contacts and labels code need not know): a `group_uuid` or `tag_uuid`
 *   page sorted by last_message_at is one range of its primary key
 *   `(kind, link_uuid, last_message_at, uuid)`, per uuid of the list.
 * - deleting a contact deletes its chat (and so its messages): ON DELETE CASCADE.
 */
export const CHATS_MIGRATION = `
  CREATE TABLE chats (
    id INTEGER PRIMARY KEY,
    uuid TEXT NOT NULL UNIQUE,
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    contact_uuid TEXT NOT NULL UNIQUE REFERENCES contacts (uuid) ON DELETE CASCADE,
    status TEXT NOT NULL CHECK (status IN ('open', 'pending', 'resolved', 'closed')),
    assigned_to TEXT,
    favorite INTEGER NOT NULL DEFAULT 0 CHECK (favorite IN (0, 1)),
    unread_count INTEGER NOT NULL DEFAULT 0 CHECK (unread_count >= 0),
    unread INTEGER GENERATED ALWAYS AS (unread_count > 0) STORED,
    last_message_at TEXT NOT NULL DEFAULT '',
    last_message_uuid TEXT,
    search_text TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  ) STRICT;
  CREATE INDEX chats_by_last_message_at ON chats (organization_id, last_message_at, uuid);
  CREATE INDEX chats_by_created_at ON chats (organization_id, created_at, uuid);
  CREATE INDEX chats_by_updated_at ON chats (organization_id, updated_at, uuid);
  CREATE INDEX chats_by_status ON chats (organization_id, status, last_message_at, uuid);
  CREATE INDEX chats_by_assigned_to ON chats (organization_id, assigned_to, last_message_at, uuid);
  CREATE INDEX chats_by_favorite ON chats (organization_id, favorite, last_message_at, uuid);
  CREATE INDEX chats_by_unread ON chats (organization_id, unread, last_message_at, uuid);

  CREATE TABLE messages (
    uuid TEXT PRIMARY KEY NOT NULL,
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    chat_uuid TEXT NOT NULL REFERENCES chats (uuid) ON DELETE CASCADE,
    contact_uuid TEXT NOT NULL,
    direction TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound')),
    type TEXT NOT NULL CHECK (type IN ('text', 'template', 'media')),
    text TEXT,
    template TEXT CHECK (template IS NULL OR json_valid(template)),
    media TEXT CHECK (media IS NULL OR json_valid(media)),
    status TEXT NOT NULL CHECK (status IN ('queued', 'sent', 'delivered', 'read', 'failed')),
    provider_message_id TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  ) STRICT;
  CREATE INDEX messages_by_chat ON messages (chat_uuid, created_at DESC, uuid DESC);
  CREATE INDEX messages_by_provider_id ON messages (organization_id, direction, provider_message_id)
    WHERE provider_message_id IS NOT NULL;

  CREATE TABLE chat_links (
    kind TEXT NOT NULL CHECK (kind IN ('group', 'label')),
    link_uuid TEXT NOT NULL,
    last_message_at TEXT NOT NULL,
    uuid TEXT NOT NULL,
    chat_id INTEGER NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    PRIMARY KEY (kind, link_uuid, last_message_at, uuid)
  ) STRICT, WITHOUT ROWID;
  CREATE INDEX chat_links_by_chat ON chat_links (chat_id);

  CREATE VIRTUAL TABLE chat_search USING fts5 (
    search_text, content = 'chats', content_rowid = 'id', tokenize = 'trigram'
  );
  CREATE TRIGGER chats_after_insert AFTER INSERT ON chats BEGIN
    INSERT INTO chat_search (rowid, search_text) VALUES (new.id, new.search_text);
    UPDATE chats SET search_text = (SELECT ${searchText("c")} FROM contacts AS c WHERE c.uuid = new.contact_uuid)
      WHERE id = new.id;
    INSERT OR IGNORE INTO chat_links (kind, link_uuid, last_message_at, uuid, chat_id)
      SELECT 'group', group_uuid, new.last_message_at, new.uuid, new.id FROM group_members WHERE contact_uuid = new.contact_uuid
      UNION ALL
      SELECT 'label', label_uuid, new.last_message_at, new.uuid, new.id FROM contact_labels WHERE contact_uuid = new.contact_uuid;
  END;
  CREATE TRIGGER chats_after_last_message AFTER UPDATE OF last_message_at ON chats
    WHEN old.last_message_at IS NOT new.last_message_at BEGIN
    UPDATE chat_links SET last_message_at = new.last_message_at WHERE chat_id = new.id;
  END;
  CREATE TRIGGER group_members_after_insert_chat_links AFTER INSERT ON group_members BEGIN
    INSERT OR IGNORE INTO chat_links (kind, link_uuid, last_message_at, uuid, chat_id)
      SELECT 'group', new.group_uuid, last_message_at, uuid, id FROM chats WHERE contact_uuid = new.contact_uuid;
  END;
  CREATE TRIGGER group_members_after_delete_chat_links AFTER DELETE ON group_members BEGIN
    DELETE FROM chat_links
      WHERE chat_id = (SELECT id FROM chats WHERE contact_uuid = old.contact_uuid)
        AND kind = 'group' AND link_uuid = old.group_uuid;
  END;
  CREATE TRIGGER contact_labels_after_insert_chat_links AFTER INSERT ON contact_labels BEGIN
    INSERT OR IGNORE INTO chat_links (kind, link_uuid, last_message_at, uuid, chat_id)
      SELECT 'label', new.label_uuid, last_message_at, uuid, id FROM chats WHERE contact_uuid = new.contact_uuid;
  END;
  CREATE TRIGGER contact_labels_after_delete_chat_links AFTER DELETE ON contact_labels BEGIN
    DELETE FROM chat_links
      WHERE chat_id = (SELECT id FROM chats WHERE contact_uuid = old.contact_uuid)
        AND kind = 'label' AND link_uuid = old.label_uuid;
  END;
  CREATE TRIGGER chats_after_search_text AFTER UPDATE OF search_text ON chats
    WHEN old.search_text IS NOT new.search_text BEGIN
    INSERT INTO chat_search (chat_search, rowid, search_text) VALUES ('delete', old.id, old.search_text);
    INSERT INTO chat_search (rowid, search_text) VALUES (new.id, new.search_text);
  END;
  CREATE TRIGGER chats_after_delete AFTER DELETE ON chats BEGIN
    INSERT INTO chat_search (chat_search, rowid, search_text) VALUES ('delete', old.id, old.search_text);
  END;
  CREATE TRIGGER contacts_after_update_chat_search AFTER UPDATE OF first_name, last_name, email, phone ON contacts BEGIN
    UPDATE chats SET search_text = ${searchText("new")}
      WHERE contact_uuid = new.uuid AND search_text IS NOT ${searchText("new")};
  END;
`

/**
 * Migration 7: messages carry every inbound type and three new columns (docs/chats.md
 * "Records"): `content` (JSON object text of the other inbound types' fields), `failure`
 * (JSON `{code, title}` text of a refused send) and `channel_uuid` (no foreign key: the
 * channel may go, the message stays). A CHECK cannot be altered in SQLite, so the table is
 * rebuilt the documented way (ALTER TABLE, "making other kinds of table schema changes"):
 * create the new table, copy every row, drop the old one, rename, recreate the indexes.
 * Nothing references `messages` (chats keep `last_message_uuid` without a foreign key) and
 * no trigger or view reads it, so foreign keys can stay on; the whole migration runs in the
 * migration transaction, so a failure leaves version 6 as it was. `messages_by_chat`
 * `(chat_uuid, created_at DESC, uuid DESC)` serves a chat's keyset pages.
 */
export const MESSAGES_WIDENED_MIGRATION = `
  CREATE TABLE messages_v7 (
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
    status TEXT NOT NULL CHECK (status IN ('queued', 'sent', 'delivered', 'read', 'failed')),
    provider_message_id TEXT,
    failure TEXT CHECK (failure IS NULL OR json_valid(failure)),
    channel_uuid TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  ) STRICT;
  INSERT INTO messages_v7 (uuid, organization_id, chat_uuid, contact_uuid, direction, type, text, template, media,
      status, provider_message_id, created_at, updated_at)
    SELECT uuid, organization_id, chat_uuid, contact_uuid, direction, type, text, template, media,
      status, provider_message_id, created_at, updated_at
    FROM messages;
  DROP TABLE messages;
  ALTER TABLE messages_v7 RENAME TO messages;
  CREATE INDEX messages_by_chat ON messages (chat_uuid, created_at DESC, uuid DESC);
  CREATE INDEX messages_by_provider_id ON messages (organization_id, direction, provider_message_id)
    WHERE provider_message_id IS NOT NULL;
`

/**
 * Part of migration 10: `pending_message_statuses`, the provider's status reports whose
 * provider message id no outbound message has yet (`ChatRepository.updateMessageStatusByProviderId`).
 * `id` (the rowid) is the arrival order: a new row's rowid is above every row present.
 * `from_statuses` is the JSON array of the statuses the report may move a message from,
 * `failure` the JSON `{code, title}` text it writes with a `failed` status, `reported_at`
 * the report's `now` (the message's `updated_at` when it is applied). Rows are found by
 * `(organization_id, provider_message_id)` when a send records the id, and pruned through
 * the `pending_until` index. No foreign key to `messages`: the message does not exist yet.
 */
export const PENDING_MESSAGE_STATUSES_MIGRATION = `
  CREATE TABLE pending_message_statuses (
    id INTEGER PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    provider_message_id TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('queued', 'sent', 'delivered', 'read', 'failed')),
    from_statuses TEXT NOT NULL CHECK (json_valid(from_statuses)),
    failure TEXT CHECK (failure IS NULL OR json_valid(failure)),
    reported_at TEXT NOT NULL,
    pending_until TEXT NOT NULL
  ) STRICT;
  CREATE INDEX pending_message_statuses_by_provider_id ON pending_message_statuses (organization_id, provider_message_id);
  CREATE INDEX pending_message_statuses_by_pending_until ON pending_message_statuses (pending_until);
`

/**
 * Migration 16: the customer service window (docs/messaging.md "The customer service
 * window"). `customer_service_windows` keeps, per contact and channel, `last_inbound_at`:
 * the latest instant an inbound message through that channel opened the window at (the
 * earlier of the provider's timestamp and the receipt time, chosen by core), deleted with
 * its contact. No foreign key to `channels`: a removed channel's window is simply never
 * used. The chat row keeps the latest of those instants over every channel and its channel
 * (`last_inbound_at`, `last_inbound_channel_uuid`), so the chat list reads them from the
 * row, never from a join. Both are backfilled from the inbound messages present: the
 * earlier of their `content.timestamp` (seconds since the epoch) and their `created_at`,
 * else `created_at`.
 */
export const CUSTOMER_SERVICE_WINDOW_MIGRATION = `
  CREATE TABLE customer_service_windows (
    contact_uuid TEXT NOT NULL REFERENCES contacts (uuid) ON DELETE CASCADE,
    channel_uuid TEXT NOT NULL,
    last_inbound_at TEXT NOT NULL,
    PRIMARY KEY (contact_uuid, channel_uuid)
  ) STRICT, WITHOUT ROWID;
  ALTER TABLE chats ADD COLUMN last_inbound_at TEXT;
  ALTER TABLE chats ADD COLUMN last_inbound_channel_uuid TEXT;
  INSERT INTO customer_service_windows (contact_uuid, channel_uuid, last_inbound_at)
    SELECT contact_uuid, channel_uuid, MAX(instant) FROM (
      SELECT contact_uuid, channel_uuid,
        CASE
          WHEN json_valid(content)
            AND CAST(json_extract(content, '$.timestamp') AS TEXT) GLOB '[0-9]*'
            AND CAST(json_extract(content, '$.timestamp') AS TEXT) NOT GLOB '*[^0-9]*'
            AND length(CAST(json_extract(content, '$.timestamp') AS TEXT)) <= 11
          THEN MIN(created_at, strftime('%Y-%m-%dT%H:%M:%fZ', CAST(json_extract(content, '$.timestamp') AS INTEGER), 'unixepoch'))
          ELSE created_at
        END AS instant
      FROM messages
      WHERE direction = 'inbound' AND channel_uuid IS NOT NULL
    )
    GROUP BY contact_uuid, channel_uuid;
  UPDATE chats SET (last_inbound_at, last_inbound_channel_uuid) = (
    SELECT last_inbound_at, channel_uuid FROM customer_service_windows AS w
    WHERE w.contact_uuid = chats.contact_uuid
    ORDER BY last_inbound_at DESC, channel_uuid DESC LIMIT 1
  );
`

/**
 * Replies and reactions (migration 23): `messages.reply_to` (the uuid of the message an
 * inbound message replies to, `NULL` for every existing row: it is resolved at receipt
 * only) and `messages.reactions` (JSON, `[]`). Each existing inbound reaction row is
 * folded into its target (the organization's message whose provider id is the reaction's
 * `message_id`, outbound first, then inbound): the newest reaction per target, unless its
 * emoji is empty (a removal), becomes the target's contact reaction, at the row's
 * `created_at`. Chats whose last message is a reaction row get their newest other message
 * as last (`''` and `NULL` when none), which the trigger `chats_after_last_message` copies
 * to `chat_links`.
 */
export const REPLIES_AND_REACTIONS_MIGRATION = `
  ALTER TABLE messages ADD COLUMN reply_to TEXT;
  ALTER TABLE messages ADD COLUMN reactions TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(reactions));

  CREATE TEMP TABLE reaction_folds AS
    SELECT organization_id, target_id, emoji, created_at FROM (
      SELECT organization_id,
        COALESCE(json_extract(content, '$.reaction.message_id'), json_extract(content, '$.message_id')) AS target_id,
        COALESCE(json_extract(content, '$.reaction.emoji'), json_extract(content, '$.emoji'), '') AS emoji,
        created_at,
        ROW_NUMBER() OVER (
          PARTITION BY organization_id, COALESCE(json_extract(content, '$.reaction.message_id'), json_extract(content, '$.message_id'))
          ORDER BY created_at DESC, uuid DESC) AS n
      FROM messages WHERE type = 'reaction' AND direction = 'inbound' AND content IS NOT NULL
    ) WHERE n = 1 AND target_id IS NOT NULL AND emoji <> '';
  UPDATE messages SET reactions = (
      SELECT json_array(json_object('emoji', f.emoji, 'by', 'contact', 'at', f.created_at)) FROM reaction_folds AS f
      WHERE f.organization_id = messages.organization_id AND f.target_id = messages.provider_message_id)
    WHERE uuid IN (
      SELECT (SELECT m.uuid FROM messages AS m
          WHERE m.organization_id = f.organization_id AND m.provider_message_id = f.target_id AND m.type <> 'reaction'
          ORDER BY m.direction = 'outbound' DESC LIMIT 1)
      FROM reaction_folds AS f);
  DROP TABLE reaction_folds;

  UPDATE chats SET
      last_message_uuid = (SELECT m.uuid FROM messages AS m WHERE m.chat_uuid = chats.uuid AND m.type <> 'reaction'
        ORDER BY m.created_at DESC, m.uuid DESC LIMIT 1),
      last_message_at = COALESCE((SELECT m.created_at FROM messages AS m WHERE m.chat_uuid = chats.uuid AND m.type <> 'reaction'
        ORDER BY m.created_at DESC, m.uuid DESC LIMIT 1), '')
    WHERE last_message_uuid IN (SELECT uuid FROM messages WHERE type = 'reaction');
`

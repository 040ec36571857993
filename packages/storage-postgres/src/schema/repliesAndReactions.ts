import type { SchemaArea } from "./context.js"

/**
 * Replies and reactions (SQLite migration 23 translated): `messages.reply_to` (the uuid of
 * the message an inbound message replies to, `NULL` for every existing row: it is
 * resolved at receipt only) and `messages.reactions` (`json`, `[]`). Each existing inbound
 * reaction row is folded into its target (the organization's message whose provider id is
 * the reaction's `message_id`, outbound first, then inbound): the newest reaction per
 * target, unless its emoji is empty (a removal), becomes the target's contact reaction, at
 * the row's `created_at`. Chats whose last message is a reaction row get their newest
 * other message as last (`-infinity` and `NULL` when none), which the chats' triggers copy
 * to `chat_links`.
 */
export const repliesAndReactionsChanges: SchemaArea = ({ schema }) => `
ALTER TABLE ${schema}.messages ADD COLUMN reply_to text COLLATE "C", ADD COLUMN reactions json NOT NULL DEFAULT '[]';

WITH reactions AS (
  SELECT organization_id,
    COALESCE(content -> 'reaction' ->> 'message_id', content ->> 'message_id') AS target_id,
    COALESCE(content -> 'reaction' ->> 'emoji', content ->> 'emoji', '') AS emoji,
    created_at, uuid
  FROM ${schema}.messages WHERE type = 'reaction' AND direction = 'inbound' AND content IS NOT NULL
), latest AS (
  SELECT DISTINCT ON (organization_id, target_id) organization_id, target_id, emoji, created_at
  FROM reactions WHERE target_id IS NOT NULL
  ORDER BY organization_id, target_id, created_at DESC, uuid DESC
), targets AS (
  SELECT l.*, (SELECT m.uuid FROM ${schema}.messages AS m
      WHERE m.organization_id = l.organization_id AND m.provider_message_id = l.target_id AND m.type <> 'reaction'
      ORDER BY m.direction = 'outbound' DESC LIMIT 1) AS target_uuid
  FROM latest AS l WHERE l.emoji <> ''
)
UPDATE ${schema}.messages AS m
  SET reactions = json_build_array(json_build_object('emoji', t.emoji, 'by', 'contact',
    'at', to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')))
  FROM targets AS t WHERE m.uuid = t.target_uuid;

UPDATE ${schema}.chats AS c SET
    last_message_uuid = n.uuid,
    last_message_at = COALESCE(n.created_at, '-infinity')
  FROM ${schema}.chats AS c2
  LEFT JOIN LATERAL (SELECT m.uuid, m.created_at FROM ${schema}.messages AS m
    WHERE m.chat_uuid = c2.uuid AND m.type <> 'reaction' ORDER BY m.created_at DESC, m.uuid DESC LIMIT 1) AS n ON true
  WHERE c2.id = c.id
    AND c.last_message_uuid IN (SELECT uuid FROM ${schema}.messages WHERE type = 'reaction');
`

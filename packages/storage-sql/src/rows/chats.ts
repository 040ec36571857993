import {
  type Chat,
  type ChatId,
  type ChatStatus,
  type ContactId,
  type MessageDirection,
  type MessageId,
  type MessageStatus,
  type MessageType,
  windowExpiresAt
} from "@switchboard/core"
import type { SqlValues } from "../SqlDialect.js"
import type { SqlBoolean } from "./values.js"

// Rows of a chat record (the chat joined with its contact and its last message) and their
// decoding into core's records. The casts to branded ids are safe: every id was written
// from a branded value.

/**
 * A chat joined with its contact and its last message (`m_*`, null without one).
 *
 * @category rows
 */
export interface ChatJoinRow {
  readonly id: number
  readonly uuid: string
  readonly status: string
  readonly assigned_to: string | null
  readonly favorite: SqlBoolean
  readonly unread_count: number
  /** `null`, or the engine's value for a chat without messages (`''`). */
  readonly last_message_at: string | null
  readonly last_inbound_at: string | null
  readonly last_inbound_channel_uuid: string | null
  readonly created_at: string
  readonly updated_at: string
  readonly contact_uuid: string
  readonly first_name: string | null
  readonly last_name: string | null
  readonly phone: string
  readonly m_uuid: string | null
  readonly m_direction: string | null
  readonly m_type: string | null
  readonly m_text: string | null
  readonly m_status: string | null
  readonly m_created_at: string | null
}

/**
 * The chat record of a row with its contact's (sorted) groups and labels, for one
 * dialect's values.
 *
 * @category decoders
 */
export const chatDecoderOf =
  ({ readBoolean }: SqlValues) =>
  (row: ChatJoinRow, groups: Chat["groups"], labels: Chat["labels"]): Chat => ({
    uuid: row.uuid as ChatId,
    contact: { uuid: row.contact_uuid as ContactId, first_name: row.first_name, last_name: row.last_name, phone: row.phone },
    status: row.status as ChatStatus,
    assigned_to: row.assigned_to,
    groups,
    labels,
    favorite: readBoolean(row.favorite),
    unread: row.unread_count > 0,
    unread_count: row.unread_count,
    // No instant is empty: `''` is a store's value for a chat without messages.
    last_message_at: row.last_message_at || null,
    last_message:
      row.m_uuid === null
        ? null
        : {
            uuid: row.m_uuid as MessageId,
            direction: row.m_direction as MessageDirection,
            type: row.m_type as MessageType,
            text: row.m_text,
            status: row.m_status as MessageStatus,
            created_at: row.m_created_at!
          },
    last_inbound_channel_uuid: row.last_inbound_channel_uuid,
    window_expires_at: windowExpiresAt(row.last_inbound_at),
    created_at: row.created_at,
    updated_at: row.updated_at
  })

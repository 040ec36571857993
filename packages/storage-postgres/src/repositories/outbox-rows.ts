import type { MessageFailure, SendClass } from "@switchboard/core"
import type { MessageRow } from "./chat-rows.js"

// Rows of `messages` as the send queue reads them: the chats area's message rows
// (chat-rows.ts) with the dispatch state beside them.

/** A message row with its organization and its dispatch state (a message in the send queue). */
export interface QueuedRow extends MessageRow {
  readonly failure: MessageFailure | null
  readonly organization_id: string
  readonly recipient: string
  readonly send_class: SendClass
  readonly expires_at: string
  readonly sequence: number
  readonly pair_rate_waits: number
  readonly lease: string | null
  readonly lease_until: number | null
}

/** The columns of a {@link QueuedRow}, in `SELECT` order. */
export const QUEUED_COLUMNS = `uuid, chat_uuid, contact_uuid, direction, type, text, template, media, content, status,
  provider_message_id, failure, channel_uuid, created_at, updated_at, attempts, next_attempt_at, broadcast_uuid,
  organization_id, recipient, send_class, expires_at, sequence, pair_rate_waits, lease, lease_until`

/** ISO 8601 of epoch ms. */
export const iso = (millis: number): string => new Date(millis).toISOString()

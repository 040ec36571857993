import type {
  ChatId,
  ContactId,
  Message,
  MessageDirection,
  MessageFailure,
  MessageId,
  MessageStatus,
  MessageType,
  SendClass
} from "@switchboard/core"

// Rows of `messages` as the send queue and broadcasts read and write them. (The chats
// area has the same needs; these could be shared with its message rows.) JSON columns are
// `json`: written as text, answered parsed by the driver; instants as ISO strings.

/** A row of `messages` (its public columns). */
export interface MessageRow {
  readonly uuid: string
  readonly chat_uuid: string
  readonly contact_uuid: string
  readonly direction: string
  readonly type: string
  readonly text: string | null
  readonly template: unknown
  readonly media: unknown
  readonly content: unknown
  readonly status: string
  readonly provider_message_id: string | null
  readonly failure: MessageFailure | null
  readonly channel_uuid: string | null
  readonly created_at: string
  readonly updated_at: string
  readonly attempts: number
  readonly next_attempt_at: string | null
  readonly broadcast_uuid: string | null
}

/** The columns of a {@link MessageRow}, in `SELECT` order. */
export const MESSAGE_COLUMNS =
  "uuid, chat_uuid, contact_uuid, direction, type, text, template, media, content, status, provider_message_id, " +
  "failure, channel_uuid, created_at, updated_at, attempts, next_attempt_at, broadcast_uuid"

/** {@link MESSAGE_COLUMNS} of `messages AS m`. */
export const M_MESSAGE_COLUMNS = MESSAGE_COLUMNS.split(", ").map((column) => `m.${column}`).join(", ")

/** A message row with its organization and its dispatch state (a message in the send queue). */
export interface QueuedRow extends MessageRow {
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
export const QUEUED_COLUMNS =
  `${MESSAGE_COLUMNS}, organization_id, recipient, send_class, expires_at, sequence, pair_rate_waits, lease, lease_until`

const jsonOrNull = (value: unknown): string | null => (value === null || value === undefined ? null : JSON.stringify(value))

/** The values of {@link MESSAGE_COLUMNS} then `organization_id` for an insert (JSON as text). */
export const messageValues = (message: Message, organizationId: string): Array<unknown> => [
  message.uuid,
  message.chat_uuid,
  message.contact_uuid,
  message.direction,
  message.type,
  message.text,
  jsonOrNull(message.template),
  jsonOrNull(message.media),
  jsonOrNull(message.content),
  message.status,
  message.provider_message_id,
  jsonOrNull(message.failure),
  message.channel_uuid,
  message.created_at,
  message.updated_at,
  message.attempts,
  message.next_attempt_at,
  message.broadcast_uuid,
  organizationId
]

/** A message record from its row. */
export const decodeMessage = (row: MessageRow): Message => ({
  uuid: row.uuid as MessageId,
  chat_uuid: row.chat_uuid as ChatId,
  contact_uuid: row.contact_uuid as ContactId,
  direction: row.direction as MessageDirection,
  type: row.type as MessageType,
  text: row.text,
  template: (row.template ?? null) as Message["template"],
  media: (row.media ?? null) as Message["media"],
  content: (row.content ?? null) as Message["content"],
  status: row.status as MessageStatus,
  provider_message_id: row.provider_message_id,
  failure: row.failure,
  channel_uuid: row.channel_uuid as Message["channel_uuid"],
  attempts: row.attempts,
  next_attempt_at: row.next_attempt_at,
  broadcast_uuid: row.broadcast_uuid as Message["broadcast_uuid"],
  created_at: row.created_at,
  updated_at: row.updated_at
})

/** ISO 8601 of epoch ms. */
export const iso = (millis: number): string => new Date(millis).toISOString()

/** Whether a message of this status waits in the send queue (`queued` or `sending`). */
export const isWaiting = (status: string): boolean => status === "queued" || status === "sending"

import type { ChannelId } from "../model/channels.js"
import type { ChatId, ChatStatus } from "../model/chats.js"
import type { ContactDetails, ContactId } from "../model/contacts.js"
import type { GroupId } from "../model/groups.js"
import type { LabelId } from "../model/labels.js"
import type { Message, MessageId } from "../model/messages.js"
import type { ApiKey, ApiKeyId, Organization, OrganizationId } from "../model/organizations.js"
import type { Page, PageRequest } from "../model/common.js"
import type { StoredChannel } from "../storage/ChannelRepository.js"
import type { ProviderStatusUpdate } from "../storage/ChatRepository.js"
import type { SendClass } from "../storage/OutboxRepository.js"
import type { Broadcast, BroadcastId } from "../model/broadcasts.js"
import type { TemplateSync } from "../model/templateSyncs.js"

/** A contact as the memory store keeps it: scalar fields only. */
export interface ContactRow extends ContactDetails {
  readonly organization_id: OrganizationId
  readonly uuid: ContactId
  readonly phone: string
  readonly phone_valid: boolean
  readonly marketing_opt_out_at: string | null
  readonly created_at: string
  readonly updated_at: string
}

/** A group or label as the memory store keeps it (labels also have a color). */
export interface NamedRow<Id> {
  readonly organization_id: OrganizationId
  readonly uuid: Id
  readonly name: string
  readonly name_key: string
  readonly color: string
  readonly created_at: string
  readonly updated_at: string
}

/** A chat as the memory store keeps it: its own fields, the rest is read from the contact. */
export interface ChatRow {
  readonly organization_id: OrganizationId
  readonly uuid: ChatId
  readonly contact_uuid: ContactId
  readonly status: ChatStatus
  readonly assigned_to: string | null
  readonly favorite: boolean
  readonly unread_count: number
  readonly last_message_at: string | null
  readonly last_message_uuid: MessageId | null
  /** The latest customer service window instant over every channel, and its channel. */
  readonly last_inbound_at: string | null
  readonly last_inbound_channel_uuid: string | null
  readonly created_at: string
  readonly updated_at: string
}

/** A message as the memory store keeps it: the record and its organization. */
export type MessageRow = Message & { readonly organization_id: OrganizationId }

/**
 * The dispatch state of a message in the send queue (OutboxRepository.ts): kept beside
 * the message record, only for messages created with `outbox`. `lease` and `lease_until`
 * (epoch ms) are set while a dispatcher holds the message; an unknown outcome ends the
 * lease (`lease` null, `lease_until` its time).
 */
export interface DispatchRow {
  readonly to: string
  readonly class: SendClass
  readonly expires_at: string
  readonly sequence: number
  readonly pair_rate_waits: number
  readonly lease: string | null
  readonly lease_until: number | null
  /** The `send_at` of a scheduled send (ISO 8601), `null` for a message never scheduled. */
  readonly scheduled_at: string | null
}

/** A channel's pacing state (OutboxRepository.ts "PACING"): epoch ms and ms. */
export interface PacingRow {
  readonly pacing_tat: number
  readonly cooldown_ms: number
}

/**
 * A broadcast as the memory store keeps it: the record without its counts, and its start's
 * state (BroadcastRepository.ts "THE START").
 */
export interface BroadcastRow extends Omit<Broadcast, "counts"> {
  readonly organization_id: OrganizationId
  readonly start_cursor: ContactId | null
  readonly start_finished: boolean
  readonly start_lease: string | null
  readonly start_lease_until: number | null
}

/** Everything one memory store holds. Maps keep insertion order. */
export interface MemoryState {
  readonly organizations: Map<OrganizationId, Organization>
  readonly apiKeys: Map<ApiKeyId, ApiKey>
  readonly apiKeyIdsByHash: Map<string, ApiKeyId>
  readonly contacts: Map<ContactId, ContactRow>
  /** `organizationId + " " + phone` → contact uuid. */
  readonly contactIdsByPhone: Map<string, ContactId>
  readonly groups: Map<GroupId, NamedRow<GroupId>>
  readonly groupMembers: Map<GroupId, Set<ContactId>>
  readonly labels: Map<LabelId, NamedRow<LabelId>>
  readonly labelledContacts: Map<LabelId, Set<ContactId>>
  readonly chats: Map<ChatId, ChatRow>
  readonly chatIdsByContact: Map<ContactId, ChatId>
  readonly messages: Map<MessageId, MessageRow>
  readonly messageIdsByChat: Map<ChatId, Array<MessageId>>
  /** `contactId channelId` → the contact's `last_inbound_at` on that channel (its customer service window). */
  readonly lastInboundAt: Map<string, string>
  /** `organizationId direction providerMessageId` → message uuid, for deduplication. */
  readonly providerIds: Map<string, MessageId>
  /** `organizationId outbound providerMessageId` → status reports waiting for that id, in arrival order. */
  readonly pendingStatuses: Map<string, Array<ProviderStatusUpdate>>
  /** The dispatch state of the messages in the send queue. */
  readonly dispatch: Map<MessageId, DispatchRow>
  /** The last `sequence` given to a message of the send queue. */
  outboxSequence: number
  /** Channels, oldest first by insertion, with their pacing state when they have one. */
  readonly channels: Map<ChannelId, StoredChannel>
  readonly pacing: Map<ChannelId, PacingRow>
  /** The secret-key check value, once claimed. */
  secretKeyCheck: string | undefined
  readonly broadcasts: Map<BroadcastId, BroadcastRow>
  /** A broadcast's recipients: contact uuid → its message uuid. */
  readonly broadcastRecipients: Map<BroadcastId, Map<ContactId, MessageId>>
  /** Template sync records, by `organizationId + " " + wabaId` ({@link templateSyncKey}). */
  readonly templateSyncs: Map<string, TemplateSync>
}

export const makeState = (): MemoryState => ({
  organizations: new Map(),
  apiKeys: new Map(),
  apiKeyIdsByHash: new Map(),
  contacts: new Map(),
  contactIdsByPhone: new Map(),
  groups: new Map(),
  groupMembers: new Map(),
  labels: new Map(),
  labelledContacts: new Map(),
  chats: new Map(),
  chatIdsByContact: new Map(),
  messages: new Map(),
  messageIdsByChat: new Map(),
  lastInboundAt: new Map(),
  providerIds: new Map(),
  pendingStatuses: new Map(),
  dispatch: new Map(),
  outboxSequence: 0,
  channels: new Map(),
  pacing: new Map(),
  secretKeyCheck: undefined,
  broadcasts: new Map(),
  broadcastRecipients: new Map(),
  templateSyncs: new Map()
})

/** The key of `templateSyncs`. */
export const templateSyncKey = (organizationId: string, wabaId: string): string => `${organizationId} ${wabaId}`

/** The key of `contactIdsByPhone`. */
export const phoneKey = (organizationId: OrganizationId, phone: string): string => `${organizationId} ${phone}`

/** Rows of one organization, newest first (`created_at desc, uuid desc`), one page of them. */
export const pageOf = <Row extends { readonly organization_id: string; readonly created_at: string; readonly uuid: string }>(
  rows: Iterable<Row>,
  organizationId: OrganizationId,
  request: PageRequest
): Page<Row> => {
  const owned = [...rows].filter((row) => row.organization_id === organizationId).sort(newestFirst)
  const start = (request.page - 1) * request.per_page
  return { items: owned.slice(start, start + request.per_page), total: owned.length }
}

const newestFirst = (a: { created_at: string; uuid: string }, b: { created_at: string; uuid: string }): number =>
  a.created_at === b.created_at ? (a.uuid < b.uuid ? 1 : -1) : a.created_at < b.created_at ? 1 : -1

/** Sorts records by name, in place, and returns them. */
export const byName = <A extends { readonly name: string }>(records: Array<A>): Array<A> =>
  records.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))

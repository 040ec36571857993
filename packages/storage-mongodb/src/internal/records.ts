import type { Document } from "mongodb"
import {
  type Channel,
  type ChannelId,
  type Chat,
  type ChatId,
  type Contact,
  type ContactId,
  DEFAULT_THROUGHPUT_MPS,
  type Group,
  type GroupId,
  type Label,
  type LabelId,
  type Message,
  type MessageId,
  type NewMedia,
  type OrganizationId,
  type StoredMedia,
  type TransportKind,
  newStoredMedia,
  windowExpiresAt
} from "@switchboard/core"
import type { ChannelDocument, ContactDocument, GroupDocument, LabelDocument, MediaDocument, MessageDocument } from "./documents.js"
import { anyOf, eq, ownedAmong } from "./queries.js"
import type { Collections } from "./schema.js"

// Documents → API records (docs/http-api.md "Records and identifiers"): reads that several repositories share.

/** Sorts records by name (code-unit order, like every adapter), in place. */
export const byName = <A extends { readonly name: string }>(records: Array<A>): Array<A> =>
  records.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))

/** The pipeline counting, per id among `ids`, the organization's contacts whose `field` holds it. */
export const membershipCountPipeline = (
  organizationId: string,
  field: "group_ids" | "label_ids",
  ids: ReadonlyArray<string>
): Array<Document> => [
  { $match: { organization_id: eq(organizationId), [field]: anyOf(ids) } },
  { $unwind: `$${field}` },
  { $match: { [field]: anyOf(ids) } },
  { $group: { _id: `$${field}`, count: { $sum: 1 } } }
]

/** How many of the organization's contacts are in each group / carry each label of `ids`. */
export const membershipCounts = async (
  collections: Collections,
  organizationId: string,
  field: "group_ids" | "label_ids",
  ids: ReadonlyArray<string>
): Promise<Map<string, number>> => {
  if (ids.length === 0) return new Map()
  const rows = await collections.contacts
    .aggregate<{ _id: string; count: number }>(membershipCountPipeline(organizationId, field, ids))
    .toArray()
  return new Map(rows.map((row) => [row._id, row.count]))
}

/** The group records of `documents`, with their `contacts_count`. */
export const groupRecords = async (
  collections: Collections,
  organizationId: string,
  documents: ReadonlyArray<GroupDocument>
): Promise<Array<Group>> => {
  const counts = await membershipCounts(collections, organizationId, "group_ids", documents.map((d) => d._id))
  return documents.map((d) => ({
    uuid: d._id as GroupId,
    name: d.name,
    contacts_count: counts.get(d._id) ?? 0,
    created_at: d.created_at,
    updated_at: d.updated_at
  }))
}

/** The label records of `documents`, with their `contacts_count`. */
export const labelRecords = async (
  collections: Collections,
  organizationId: string,
  documents: ReadonlyArray<LabelDocument>
): Promise<Array<Label>> => {
  const counts = await membershipCounts(collections, organizationId, "label_ids", documents.map((d) => d._id))
  return documents.map((d) => ({
    uuid: d._id as LabelId,
    name: d.name,
    color: d.color,
    contacts_count: counts.get(d._id) ?? 0,
    created_at: d.created_at,
    updated_at: d.updated_at
  }))
}

/** Group and label summaries of the contacts in `documents` (ids of deleted ones are skipped). */
const summariesOf = async (collections: Collections, organizationId: string, documents: ReadonlyArray<ContactDocument>) => {
  const groupIds = documents.flatMap((d) => d.group_ids ?? [])
  const labelIds = documents.flatMap((d) => d.label_ids ?? [])
  const [groups, labels] = await Promise.all([
    groupIds.length === 0 ? [] : collections.groups.find(ownedAmong(organizationId, groupIds), { projection: { name: 1 } }).toArray(),
    labelIds.length === 0
      ? []
      : collections.labels.find(ownedAmong(organizationId, labelIds), { projection: { name: 1, color: 1 } }).toArray()
  ])
  return {
    groups: new Map(groups.map((g) => [g._id, { uuid: g._id as GroupId, name: g.name }])),
    labels: new Map(labels.map((l) => [l._id, { uuid: l._id as LabelId, name: l.name, color: l.color }]))
  }
}

type Summaries = Awaited<ReturnType<typeof summariesOf>>

const present = <A>(value: A | undefined): value is A => value !== undefined

const contactGroups = (summaries: Summaries, document: ContactDocument) =>
  byName((document.group_ids ?? []).map((id) => summaries.groups.get(id)).filter(present))

const contactLabels = (summaries: Summaries, document: ContactDocument) =>
  byName((document.label_ids ?? []).map((id) => summaries.labels.get(id)).filter(present))

/** The contact records of `documents`, in the same order, groups and labels by name. */
export const contactRecords = async (
  collections: Collections,
  organizationId: string,
  documents: ReadonlyArray<ContactDocument>
): Promise<Array<Contact>> => {
  const summaries = await summariesOf(collections, organizationId, documents)
  return documents.map((d) => ({
    uuid: d._id as ContactId,
    phone: d.phone,
    phone_valid: d.phone_valid !== false,
    first_name: d.first_name ?? null,
    last_name: d.last_name ?? null,
    email: d.email ?? null,
    street: d.street ?? null,
    city: d.city ?? null,
    state: d.state ?? null,
    zip: d.zip ?? null,
    country: d.country ?? null,
    groups: contactGroups(summaries, d),
    labels: contactLabels(summaries, d),
    marketing_opt_out_at: d.marketing_opt_out_at ?? null,
    created_at: d.created_at,
    updated_at: d.updated_at
  }))
}

/** The message record of a document. */
export const messageRecord = (d: MessageDocument): Message => ({
  uuid: d._id as MessageId,
  chat_uuid: d.chat_uuid as Message["chat_uuid"],
  contact_uuid: d.contact_uuid as ContactId,
  direction: d.direction,
  type: d.type,
  text: d.text,
  template: d.template === null ? null : JSON.parse(d.template),
  media: d.media === null ? null : JSON.parse(d.media),
  content: d.content === undefined || d.content === null ? null : JSON.parse(d.content),
  status: d.status,
  provider_message_id: d.provider_message_id,
  failure: d.failure === undefined || d.failure === null ? null : { code: d.failure.code, title: d.failure.title },
  channel_uuid: d.channel_uuid ?? null,
  attempts: d.attempts ?? 0,
  next_attempt_at: d.next_attempt_at ?? null,
  broadcast_uuid: (d.broadcast_uuid ?? null) as Message["broadcast_uuid"],
  transport: d.transport === undefined ? (d.direction === "outbound" ? transportOfOlder(d.channel_uuid ?? null) : null) : d.transport,
  reply_to: (d.reply_to ?? null) as Message["reply_to"],
  reactions: (d.reactions ?? []).map(({ emoji, by, at }) => ({ emoji, by, at })),
  created_at: d.created_at,
  updated_at: d.updated_at
})

/**
 * The transport of an outbound message or a broadcast written before the field existed:
 * as the transports built in answer, `whatsapp` with a channel, else `recording` (the rule
 * the SQL stores' migrations fill their older rows with).
 */
export const transportOfOlder = (channelUuid: string | null): TransportKind => (channelUuid === null ? "recording" : "whatsapp")

/**
 * The fields of a message document, from a record (without dispatch state: a message of
 * the send queue gets its own in `chats.appendMessage`).
 */
export const messageDocument = (organizationId: string, message: Message, dedupeKey: string | undefined): MessageDocument => ({
  _id: message.uuid,
  organization_id: organizationId,
  chat_uuid: message.chat_uuid,
  contact_uuid: message.contact_uuid,
  direction: message.direction,
  type: message.type,
  text: message.text,
  template: message.template === null ? null : JSON.stringify(message.template),
  media: message.media === null ? null : JSON.stringify(message.media),
  content: message.content === null ? null : JSON.stringify(message.content),
  status: message.status,
  provider_message_id: message.provider_message_id,
  failure: message.failure,
  channel_uuid: message.channel_uuid,
  attempts: message.attempts,
  next_attempt_at: message.next_attempt_at,
  broadcast_uuid: message.broadcast_uuid,
  transport: message.transport,
  reply_to: message.reply_to,
  reactions: message.reactions,
  ...(dedupeKey === undefined ? {} : { dedupe_key: dedupeKey }),
  created_at: message.created_at,
  updated_at: message.updated_at
})

/**
 * The chat records of contacts holding a chat, in the same order: the contact, its groups
 * and labels by name, and the last message (one query each for the whole list).
 */
export const chatRecords = async (
  collections: Collections,
  organizationId: string,
  documents: ReadonlyArray<ContactDocument>
): Promise<Array<Chat>> => {
  const withChat = documents.filter((d) => d.chat !== undefined)
  const lastIds = withChat.map((d) => d.chat!.last_message_uuid).filter((id): id is string => id !== null)
  const [summaries, lastMessages] = await Promise.all([
    summariesOf(collections, organizationId, withChat),
    lastIds.length === 0
      ? []
      : collections.messages.find({ organization_id: eq(organizationId), _id: anyOf(lastIds) }).toArray()
  ])
  const messages = new Map(lastMessages.map((m) => [m._id, m]))
  return withChat.map((d) => {
    const chat = d.chat!
    const last = chat.last_message_uuid === null ? undefined : messages.get(chat.last_message_uuid)
    return {
      uuid: chat.uuid as ChatId,
      contact: { uuid: d._id as ContactId, first_name: d.first_name ?? null, last_name: d.last_name ?? null, phone: d.phone },
      status: chat.status,
      assigned_to: chat.assigned_to,
      groups: contactGroups(summaries, d),
      labels: contactLabels(summaries, d),
      favorite: chat.favorite,
      unread: chat.unread_count > 0,
      unread_count: chat.unread_count,
      last_message_at: chat.last_message_at === "" ? null : chat.last_message_at,
      last_message:
        last === undefined
          ? null
          : { uuid: last._id as MessageId, direction: last.direction, type: last.type, text: last.text, status: last.status, created_at: last.created_at },
      last_inbound_channel_uuid: chat.last_inbound_channel_uuid ?? null,
      window_expires_at: windowExpiresAt(chat.last_inbound_at ?? null),
      created_at: chat.created_at,
      updated_at: chat.updated_at
    }
  })
}

/**
 * The channel record of a document: `throughput_mps` 50, `status` `active`,
 * `paused_reason` and `paused_at` `null` when absent (documents written before them); the
 * pacing state (`pacing_tat`, `cooldown_ms`) stays out.
 */
export const channelOf = (document: ChannelDocument): Channel => ({
  uuid: document._id as ChannelId,
  provider: "whatsapp_cloud",
  phone_number_id: document.phone_number_id,
  display_phone_number: document.display_phone_number,
  waba_id: document.waba_id,
  access_token_set: true,
  access_token_last4: document.access_token_last4,
  throughput_mps: document.throughput_mps ?? DEFAULT_THROUGHPUT_MPS,
  status: document.status ?? "active",
  paused_reason:
    document.paused_reason === undefined || document.paused_reason === null
      ? null
      : { code: document.paused_reason.code, title: document.paused_reason.title },
  paused_at: document.paused_at ?? null,
  created_at: document.created_at,
  updated_at: document.updated_at
})

/**
 * The media document of a new media record (`media.insert`, or an inbound message's
 * `ChatAppendRequest.media` with its message and contact): its fetch job's fields from
 * `media.fetch` (`null` without one: no `next_fetch_at`), no lease, no message rewrite due.
 */
export const newMediaDocument = (organizationId: string, media: NewMedia): MediaDocument => ({
  ..._idOf(newStoredMedia(organizationId as OrganizationId, media)),
  provider_media_id: media.fetch?.provider_media_id ?? null,
  declared_sha256: media.fetch?.declared_sha256 ?? null,
  expires_at: media.fetch?.expires_at ?? null,
  next_fetch_at: media.fetch?.next_fetch_at ?? null,
  attempts: 0,
  integrity_failures: 0,
  lease: null,
  lease_until: null,
  message_update: null
})

/** A stored media's fields with its uuid as `_id`. */
const _idOf = ({ uuid, failure, ...fields }: StoredMedia) => ({
  _id: uuid,
  ...fields,
  failure: failure === null ? null : { code: failure.code, title: failure.title }
})

/**
 * The media record of a document, with what only the server reads (`organization_id`,
 * `contact_uuid`, `channel_uuid`, `blob_key`, `blob_pending_removal`); the fetch job's
 * fields and `_id` stay out.
 */
export const storedMediaOf = (d: MediaDocument): StoredMedia => ({
  organization_id: d.organization_id as OrganizationId,
  uuid: d._id,
  type: d.type,
  mime_type: d.mime_type,
  size: d.size ?? null,
  sha256: d.sha256 ?? null,
  filename: d.filename ?? null,
  status: d.status,
  failure: d.failure === undefined || d.failure === null ? null : { code: d.failure.code, title: d.failure.title },
  source: d.source,
  message_uuid: d.message_uuid ?? null,
  contact_uuid: d.contact_uuid ?? null,
  channel_uuid: d.channel_uuid ?? null,
  blob_key: d.blob_key ?? null,
  blob_pending_removal: d.blob_pending_removal === true,
  created_at: d.created_at,
  stored_at: d.stored_at ?? null
})

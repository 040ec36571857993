import type { Collection, Db, IndexDescription } from "mongodb"
import type {
  ApiKeyDocument,
  BasicReplyDocument,
  BroadcastDocument,
  ChannelDocument,
  ContactDocument,
  CounterDocument,
  GroupDocument,
  IdempotencyKeyDocument,
  LabelDocument,
  MediaDocument,
  MediaUploadDocument,
  MessageDocument,
  OrganizationDocument,
  PendingMessageStatusDocument,
  SettingDocument,
  TemplateDocument,
  TemplateSyncDocument,
  UsageDocument,
  WebhookAttemptDocument,
  WebhookDeliveryDocument,
  WebhookEndpointDocument,
  WebhookEventDocument,
  WebhookRejectDocument
} from "./documents.js"

/** The collection names this adapter uses, in the database it is given. */
export const COLLECTION_NAMES = {
  organizations: "organizations",
  apiKeys: "api_keys",
  usage: "usage",
  contacts: "contacts",
  groups: "groups",
  labels: "labels",
  templates: "templates",
  basicReplies: "basic_replies",
  messages: "messages",
  pendingMessageStatuses: "pending_message_statuses",
  idempotencyKeys: "idempotency_keys",
  channels: "channels",
  settings: "settings",
  webhookEndpoints: "webhook_endpoints",
  webhookEvents: "webhook_events",
  webhookDeliveries: "webhook_deliveries",
  webhookAttempts: "webhook_attempts",
  webhookRejects: "webhook_rejects",
  counters: "counters",
  broadcasts: "broadcasts",
  media: "media",
  mediaUploads: "media_uploads",
  templateSyncs: "template_syncs"
} as const

/** The rate-limit buckets' collection (created by `MongoRateLimitStore`). */
export const RATE_BUCKETS = "rate_buckets"

/** Typed handles on every collection of the storage. */
export interface Collections {
  readonly organizations: Collection<OrganizationDocument>
  readonly apiKeys: Collection<ApiKeyDocument>
  readonly usage: Collection<UsageDocument>
  readonly contacts: Collection<ContactDocument>
  readonly groups: Collection<GroupDocument>
  readonly labels: Collection<LabelDocument>
  readonly templates: Collection<TemplateDocument>
  readonly basicReplies: Collection<BasicReplyDocument>
  readonly messages: Collection<MessageDocument>
  readonly pendingMessageStatuses: Collection<PendingMessageStatusDocument>
  readonly idempotencyKeys: Collection<IdempotencyKeyDocument>
  readonly channels: Collection<ChannelDocument>
  readonly settings: Collection<SettingDocument>
  readonly webhookEndpoints: Collection<WebhookEndpointDocument>
  readonly webhookEvents: Collection<WebhookEventDocument>
  readonly webhookDeliveries: Collection<WebhookDeliveryDocument>
  readonly webhookAttempts: Collection<WebhookAttemptDocument>
  readonly webhookRejects: Collection<WebhookRejectDocument>
  readonly counters: Collection<CounterDocument>
  readonly broadcasts: Collection<BroadcastDocument>
  readonly media: Collection<MediaDocument>
  readonly mediaUploads: Collection<MediaUploadDocument>
  readonly templateSyncs: Collection<TemplateSyncDocument>
}

/** The {@link Collections} of `db`. */
export const collectionsOf = (db: Db): Collections => ({
  organizations: db.collection(COLLECTION_NAMES.organizations),
  apiKeys: db.collection(COLLECTION_NAMES.apiKeys),
  usage: db.collection(COLLECTION_NAMES.usage),
  contacts: db.collection(COLLECTION_NAMES.contacts),
  groups: db.collection(COLLECTION_NAMES.groups),
  labels: db.collection(COLLECTION_NAMES.labels),
  templates: db.collection(COLLECTION_NAMES.templates),
  basicReplies: db.collection(COLLECTION_NAMES.basicReplies),
  messages: db.collection(COLLECTION_NAMES.messages),
  pendingMessageStatuses: db.collection(COLLECTION_NAMES.pendingMessageStatuses),
  idempotencyKeys: db.collection(COLLECTION_NAMES.idempotencyKeys),
  channels: db.collection(COLLECTION_NAMES.channels),
  settings: db.collection(COLLECTION_NAMES.settings),
  webhookEndpoints: db.collection(COLLECTION_NAMES.webhookEndpoints),
  webhookEvents: db.collection(COLLECTION_NAMES.webhookEvents),
  webhookDeliveries: db.collection(COLLECTION_NAMES.webhookDeliveries),
  webhookAttempts: db.collection(COLLECTION_NAMES.webhookAttempts),
  webhookRejects: db.collection(COLLECTION_NAMES.webhookRejects),
  counters: db.collection(COLLECTION_NAMES.counters),
  broadcasts: db.collection(COLLECTION_NAMES.broadcasts),
  media: db.collection(COLLECTION_NAMES.media),
  mediaUploads: db.collection(COLLECTION_NAMES.mediaUploads),
  templateSyncs: db.collection(COLLECTION_NAMES.templateSyncs)
})

/** Only documents holding webhook events for the relay enter its indexes. */
export const HAS_PENDING_EVENTS = { "pending_events.id": { $exists: true } } as const

/** The relay's index on a collection whose documents may carry `pending_events`. */
const pendingEventsIndex = (collection: string): IndexDescription => ({
  name: `${collection}_pending_events`,
  key: { "pending_events.id": 1 },
  partialFilterExpression: HAS_PENDING_EVENTS
})

/**
 * Only messages waiting in the send queue enter its indexes: outbox messages (they have
 * `to`) whose `next_attempt_at` is a string, which it is exactly while they are `queued`
 * or `sending` (a partial filter on `status` would need `$in`, which MongoDB accepts in
 * partial indexes only from 6.0). Every send-queue query carries this condition so the
 * planner may use them.
 */
export const WAITING = { to: { $exists: true }, next_attempt_at: { $type: "string" } } as const

/** The messages of the send queue stored `scheduled` (a send with a `send_at` ahead), not yet in their lane. */
export const SCHEDULED = { status: { $eq: "scheduled" } } as const

/**
 * Only reaction rows enter the index of the start-up reaction fold (chats.ts
 * `upgradeReactions`): its query carries this condition, and `reactions_folded: {$exists:
 * false}` is the index's `null` range, so each start reads only the rows still to fold.
 */
export const IS_REACTION = { type: { $eq: "reaction" } } as const

/**
 * Only broadcast recipients enter the broadcast indexes of `messages`: messages whose
 * `broadcast_uuid` is a string (every other message has it `null` or absent, so a partial
 * filter on `$exists` would take them all). Every recipient query carries this condition
 * (queries.ts `recipientsOf`) so the planner may use them.
 */
export const IS_RECIPIENT = { broadcast_uuid: { $type: "string" } } as const

/**
 * Only media with a fetch job enter the due index: `next_fetch_at` is a string exactly
 * while a media has one. Every query of jobs carries this condition so the planner may use
 * it.
 */
export const HAS_FETCH_JOB = { next_fetch_at: { $type: "string" } } as const

/**
 * Only messages still carrying the media document they were inserted with
 * (`pending_media`, moved to `media` right after the insert) enter its index.
 */
export const HAS_PENDING_MEDIA = { "pending_media._id": { $exists: true } } as const

/** Only media whose message rewrite is still to be done (`message_update`) enter its index. */
export const HAS_MESSAGE_UPDATE = { "message_update.id": { $exists: true } } as const

/** Only contacts that have a chat enter the chat indexes. */
export const HAS_CHAT = { "chat.uuid": { $exists: true } } as const

/**
 * The chat list's sort keys, by core's `ChatSortBy` (a fixed table: no field name is ever
 * built from a request).
 */
export const CHAT_SORT_FIELDS = {
  last_message_at: "chat.last_message_at",
  created_at: "chat.created_at",
  updated_at: "chat.updated_at"
} as const

/** The field of each equality filter of the chat list (`ChatFilters` key → field). */
export const CHAT_FILTER_FIELDS = {
  status: "chat.status",
  assignedTo: "chat.assigned_to",
  favorite: "chat.favorite",
  unread: "chat.unread",
  groupIds: "group_ids",
  labelIds: "label_ids"
} as const

const chatIndex = (name: string, fields: ReadonlyArray<string>): IndexDescription => ({
  name,
  key: Object.fromEntries([["organization_id", 1], ...fields.map((field) => [field, 1] as const), ["chat.uuid", 1]]),
  partialFilterExpression: HAS_CHAT
})

/**
 * Every index, by collection, created idempotently at start-up (`createIndexes` with the
 * same names and keys is a no-op). Uniqueness rules (docs/storage.md "What each guarantees") live here:
 * one E.164 phone per organization, label and group names per organization by their
 * normalised `name_key` (trimmed, lowercased: case-insensitive), template identity,
 * basic-reply triggers, API-key hashes, one chat uuid, a channel's `phone_number_id` across
 * every organization. Chat indexes: one per sort key, and
 * one per equality filter followed by the default sort key, each ending with `chat.uuid`
 * (the keyset tie-break) and holding only contacts with a chat. Pending status reports are
 * read by provider id in arrival order; they and idempotency keys expire through a TTL
 * index on their `expire_at` Date. Contacts, messages and templates carrying webhook
 * events for the relay are found by a partial index on `pending_events.id`; an
 * organization's enabled endpoints by `webhook_endpoints_enabled`; due deliveries by
 * `webhook_deliveries_due` (status, next_attempt_at); an endpoint's attempts, newest first,
 * by `webhook_attempts_newest`. Refused webhook parts are listed newest first, of every
 * organization or of one, and pruned by `received_at`. The send queue finds a lane's head
 * and a channel's waiting messages on `messages_waiting_by_lane` (organization, channel,
 * `to`, `class`, `sequence`) and a channel's due messages in claim order on
 * `messages_waiting_due` (channel, `class` descending: `single` first, `next_attempt_at`,
 * `sequence`), both holding only
 * waiting messages ({@link WAITING}); channels carrying `channel.paused`/`channel.resumed`
 * events by their `pending_events.id`. Broadcasts (broadcasts.ts): an organization's
 * newest first on `broadcasts_by_created_at`; due starts (claimStart's two branches, and
 * the first of each that nextStartDueAt reads) on
 * `broadcasts_scheduled_by_send_at` and `broadcasts_by_start` (`sending`, unfinished, by
 * lease end; also the finished ones `completeFinished` reads), those carrying
 * `broadcast.completed` by `pending_events.id`. Recipients ({@link IS_RECIPIENT} only):
 * one per (broadcast, contact) by the unique `messages_by_broadcast_contact`, which also
 * lists them in contact order; by status (counts, the queued ones a cancel fails, a status
 * filter in contact order) on `messages_by_broadcast_status`. A broadcast's audience is
 * read in contact-uuid order from `after` on `contacts_audience_by_group` and
 * `contacts_audience_by_label` (one `$or` branch each; listed contacts on `_id`).
 * Media (repositories/media.ts): an organization's newest first on `media_by_created_at`;
 * due fetch jobs in claim order on `media_fetch_due` (only media with a job:
 * {@link HAS_FETCH_JOB}); a contact's on `media_by_contact`; the blobs to remove on
 * `media_blobs_pending_removal` (only those); the retention's `stored` media oldest first
 * on `media_stored_by_created_at` (only `stored` ones); the repairs' documents by
 * `media_message_updates` ({@link HAS_MESSAGE_UPDATE}) and `messages_pending_media`
 * ({@link HAS_PENDING_MEDIA}). A provider's upload id is one per (media, channel) by its
 * `_id`, and expires through a TTL index on `expire_at`. Templates: an organization's
 * identity (name key, language, `waba_id`: `null` or missing for no account, one group)
 * unique on `templates_by_account_identity`, Meta's ids on `templates_by_provider_id`;
 * template sync records in due order on `template_syncs_due`.
 */
export const INDEXES: { readonly [C in keyof Collections]: ReadonlyArray<IndexDescription> } = {
  organizations: [{ name: "organizations_by_created_at", key: { created_at: 1, _id: 1 } }],
  apiKeys: [
    { name: "api_keys_by_hash", key: { hash: 1 }, unique: true },
    { name: "api_keys_by_organization", key: { organization_id: 1 } }
  ],
  usage: [],
  contacts: [
    { name: "contacts_by_phone", key: { organization_id: 1, phone: 1 }, unique: true },
    { name: "contacts_by_created_at", key: { organization_id: 1, created_at: -1, _id: -1 } },
    { name: "contacts_by_group", key: { organization_id: 1, group_ids: 1 } },
    { name: "contacts_by_label", key: { organization_id: 1, label_ids: 1 } },
    { name: "contacts_audience_by_group", key: { organization_id: 1, group_ids: 1, _id: 1 } },
    { name: "contacts_audience_by_label", key: { organization_id: 1, label_ids: 1, _id: 1 } },
    { name: "chats_by_uuid", key: { "chat.uuid": 1 }, unique: true, partialFilterExpression: HAS_CHAT },
    chatIndex("chats_by_last_message_at", [CHAT_SORT_FIELDS.last_message_at]),
    chatIndex("chats_by_created_at", [CHAT_SORT_FIELDS.created_at]),
    chatIndex("chats_by_updated_at", [CHAT_SORT_FIELDS.updated_at]),
    ...(Object.entries(CHAT_FILTER_FIELDS) as ReadonlyArray<[string, string]>).map(([filter, field]) =>
      chatIndex(`chats_by_${filter}`, [field, CHAT_SORT_FIELDS.last_message_at])
    ),
    pendingEventsIndex("contacts")
  ],
  groups: [
    { name: "groups_by_name", key: { organization_id: 1, name_key: 1 }, unique: true },
    { name: "groups_by_created_at", key: { organization_id: 1, created_at: -1, _id: -1 } }
  ],
  labels: [
    { name: "labels_by_name", key: { organization_id: 1, name_key: 1 }, unique: true },
    { name: "labels_by_created_at", key: { organization_id: 1, created_at: -1, _id: -1 } }
  ],
  templates: [
    { name: "templates_by_account_identity", key: { organization_id: 1, name_key: 1, language: 1, waba_id: 1 }, unique: true },
    { name: "templates_by_created_at", key: { organization_id: 1, created_at: -1, _id: -1 } },
    {
      name: "templates_by_provider_id",
      key: { organization_id: 1, provider_template_id: 1, created_at: 1, _id: 1 },
      partialFilterExpression: { provider_template_id: { $type: "string" } }
    },
    pendingEventsIndex("templates")
  ],
  basicReplies: [
    { name: "basic_replies_by_trigger", key: { organization_id: 1, trigger_key: 1 }, unique: true },
    { name: "basic_replies_by_created_at", key: { organization_id: 1, created_at: -1, _id: -1 } }
  ],
  messages: [
    { name: "messages_by_chat", key: { chat_uuid: 1, created_at: -1, _id: -1 } },
    { name: "messages_by_provider_id", key: { organization_id: 1, direction: 1, provider_message_id: 1 } },
    {
      name: "messages_by_dedupe_key",
      key: { organization_id: 1, dedupe_key: 1 },
      unique: true,
      partialFilterExpression: { dedupe_key: { $exists: true } }
    },
    pendingEventsIndex("messages"),
    { name: "messages_pending_media", key: { "pending_media._id": 1 }, partialFilterExpression: HAS_PENDING_MEDIA },
    {
      name: "messages_waiting_by_lane",
      key: { organization_id: 1, channel_uuid: 1, to: 1, class: 1, sequence: 1 },
      partialFilterExpression: WAITING
    },
    { name: "messages_waiting_due", key: { channel_uuid: 1, class: -1, next_attempt_at: 1, sequence: 1 }, partialFilterExpression: WAITING },
    // Scheduled sends: each claim's promotion of the due ones and nextDueAt (outbox.ts).
    { name: "messages_scheduled_due", key: { next_attempt_at: 1, sequence: 1 }, partialFilterExpression: SCHEDULED },
    // The start-up reaction fold (chats.ts upgradeReactions): the rows not folded yet, oldest first.
    { name: "messages_reactions_to_fold", key: { reactions_folded: 1, created_at: 1, _id: 1 }, partialFilterExpression: IS_REACTION },
    {
      name: "messages_by_broadcast_contact",
      key: { organization_id: 1, broadcast_uuid: 1, contact_uuid: 1 },
      unique: true,
      partialFilterExpression: IS_RECIPIENT
    },
    {
      name: "messages_by_broadcast_status",
      key: { organization_id: 1, broadcast_uuid: 1, status: 1, contact_uuid: 1 },
      partialFilterExpression: IS_RECIPIENT
    }
  ],
  pendingMessageStatuses: [
    {
      name: "pending_message_statuses_by_provider_id",
      key: { organization_id: 1, provider_message_id: 1, reported_at: 1, _id: 1 }
    },
    { name: "pending_message_statuses_expiry", key: { expire_at: 1 }, expireAfterSeconds: 0 }
  ],
  idempotencyKeys: [
    { name: "idempotency_keys_expiry", key: { expire_at: 1 }, expireAfterSeconds: 0 },
    { name: "idempotency_keys_by_expires_at", key: { expires_at: 1 } }
  ],
  channels: [
    { name: "channels_by_phone_number_id", key: { phone_number_id: 1 }, unique: true },
    { name: "channels_by_organization", key: { organization_id: 1, created_at: 1, _id: 1 } },
    { name: "channels_by_waba_id", key: { waba_id: 1, created_at: 1, _id: 1 } },
    pendingEventsIndex("channels")
  ],
  settings: [],
  webhookEndpoints: [
    { name: "webhook_endpoints_by_created_at", key: { organization_id: 1, created_at: -1, _id: -1 } },
    { name: "webhook_endpoints_enabled", key: { organization_id: 1, enabled: 1 } }
  ],
  webhookEvents: [{ name: "webhook_events_by_created_at", key: { created_at: 1 } }],
  webhookDeliveries: [
    { name: "webhook_deliveries_due", key: { status: 1, next_attempt_at: 1 } },
    { name: "webhook_deliveries_by_endpoint", key: { endpoint_uuid: 1, status: 1 } },
    { name: "webhook_deliveries_by_event", key: { event_id: 1 } },
    { name: "webhook_deliveries_by_created_at", key: { created_at: 1 } }
  ],
  webhookAttempts: [
    { name: "webhook_attempts_newest", key: { endpoint_uuid: 1, attempted_at: -1, _id: -1 } },
    { name: "webhook_attempts_by_delivery", key: { delivery_id: 1 } }
  ],
  webhookRejects: [
    { name: "webhook_rejects_newest", key: { received_at: -1, _id: -1 } },
    { name: "webhook_rejects_of_organization", key: { organization_id: 1, received_at: -1, _id: -1 } }
  ],
  counters: [],
  broadcasts: [
    { name: "broadcasts_by_created_at", key: { organization_id: 1, created_at: -1, _id: -1 } },
    { name: "broadcasts_scheduled_by_send_at", key: { status: 1, send_at: 1 } },
    { name: "broadcasts_by_start", key: { status: 1, start_finished: 1, start_lease_until: 1 } },
    pendingEventsIndex("broadcasts")
  ],
  media: [
    { name: "media_by_created_at", key: { organization_id: 1, created_at: -1, _id: -1 } },
    { name: "media_fetch_due", key: { next_fetch_at: 1, _id: 1 }, partialFilterExpression: HAS_FETCH_JOB },
    { name: "media_by_contact", key: { organization_id: 1, contact_uuid: 1 } },
    { name: "media_blobs_pending_removal", key: { blob_pending_removal: 1 }, partialFilterExpression: { blob_pending_removal: true } },
    { name: "media_stored_by_created_at", key: { created_at: 1, _id: 1 }, partialFilterExpression: { status: "stored" } },
    { name: "media_message_updates", key: { "message_update.id": 1 }, partialFilterExpression: HAS_MESSAGE_UPDATE }
  ],
  mediaUploads: [{ name: "media_uploads_expiry", key: { expire_at: 1 }, expireAfterSeconds: 0 }],
  templateSyncs: [{ name: "template_syncs_due", key: { next_due_at: 1, _id: 1 } }]
}

/**
 * Indexes an earlier version created that this one replaced, by collection: dropped at
 * start-up when present (`templates_by_identity`, the identity before templates had an
 * account: replaced by `templates_by_account_identity`).
 */
export const RETIRED_INDEXES: { readonly [C in keyof Collections]?: ReadonlyArray<string> } = {
  templates: ["templates_by_identity"]
}

/** The index of the rate-limit buckets: documents expire once `expires_at` has passed. */
export const RATE_BUCKET_INDEXES: ReadonlyArray<IndexDescription> = [
  { name: "rate_buckets_expiry", key: { expires_at: 1 }, expireAfterSeconds: 0 }
]

import type {
  BroadcastStatus,
  ChannelStatus,
  ChatStatus,
  MediaFailureCode,
  MediaSource,
  MediaStatus,
  MediaType,
  MessageDirection,
  MessageStatus,
  MessageType,
  Plan,
  SendClass,
  SubscriptionStatus,
  TransportKind
} from "@switchboard/core"

// The documents this adapter stores, one interface per collection. Ids are the uuids core
// generates (v7), stored as strings in `_id`. Timestamps are the ISO 8601 UTC strings of
// the API in `Date#toISOString` form (fixed width, so string order is time order and
// they round-trip exactly); only the rate-limit buckets store a BSON Date, for the TTL
// index.

/** `organizations`: one per organization. */
export interface OrganizationDocument {
  readonly _id: string
  readonly name: string
  readonly plan: Plan
  readonly subscription: SubscriptionStatus
  readonly created_at: string
  readonly updated_at: string
}

/** `api_keys`: the SHA-256 hash of a key, never the key. */
export interface ApiKeyDocument {
  readonly _id: string
  readonly organization_id: string
  readonly prefix: string
  readonly hash: string
  readonly created_at: string
  readonly revoked_at: string | null
  /** Since key rotation; a document written before has none (read as `null`). */
  readonly expires_at?: string | null
}

/**
 * `usage`: the plan-limit counters of one organization (`_id` = its id): how many contacts
 * and labels it has, plus the slots reserved by writes in flight. `touched_at` is the
 * server time of the last change, which the start-up reconciliation reads (see
 * `usage.ts`). `channels` (the channel limit's counter) is added to a document the first
 * time its organization connects a channel, from the real count. `media_bytes` (the
 * `media_bytes_limit`'s counter: the sizes of its `stored` media, plus the bytes reserved
 * by writes in flight) is written by `create` for a new organization, and added from the
 * real sum to an older document the first time a media write needs it.
 */
export interface UsageDocument {
  readonly _id: string
  readonly contacts: number
  readonly labels: number
  readonly channels?: number
  readonly media_bytes?: number
  readonly touched_at: Date
}

/**
 * `contacts`: a contact with its group and label memberships (uuid arrays, so one
 * contact's memberships change atomically) and, once it has one, its chat: one chat per
 * contact, embedded so that the chat list filters on the contact's groups, labels and
 * search text within one document. `search_text` is core's `chatSearchText` of the contact.
 */
export interface ContactDocument {
  readonly _id: string
  readonly organization_id: string
  readonly phone: string
  /** `false` for an unverified phone; absent (documents written before it) means `true`. */
  readonly phone_valid?: boolean
  readonly first_name: string | null
  readonly last_name: string | null
  readonly email: string | null
  readonly street: string | null
  readonly city: string | null
  readonly state: string | null
  readonly zip: string | null
  readonly country: string | null
  readonly group_ids: ReadonlyArray<string>
  readonly label_ids: ReadonlyArray<string>
  readonly search_text: string
  /**
   * When the contact's number refused marketing messages (Meta's 131050), ISO 8601; absent
   * (documents written before it) or `null`: it has not.
   */
  readonly marketing_opt_out_at?: string | null
  readonly created_at: string
  readonly updated_at: string
  readonly chat?: ChatDocument
  /**
   * The contact's customer service windows: channel uuid → `last_inbound_at`, the latest
   * instant an inbound message through that channel opened the window at (written by the
   * inbound's chat update; absent until the contact writes through a channel).
   */
  readonly last_inbound_at?: Readonly<Record<string, string>>
  /** Webhook events of writes to this contact or its chat, waiting for the relay (webhooks.ts). */
  readonly pending_events?: ReadonlyArray<PendingWebhookEvent>
}

/**
 * The chat embedded in its contact. `last_message_at` is `""` for a chat without messages
 * (below every timestamp, so it sorts first ascending and last descending, like core's
 * rule); the API shows `null`. `unread` is `unread_count > 0`, kept for its index.
 */
export interface ChatDocument {
  readonly uuid: string
  readonly status: ChatStatus
  readonly assigned_to: string | null
  readonly favorite: boolean
  readonly unread_count: number
  readonly unread: boolean
  readonly last_message_at: string
  readonly last_message_uuid: string | null
  /** The latest of the contact's `last_inbound_at` over every channel, and that channel; absent or `null` until it writes through one. */
  readonly last_inbound_at?: string | null
  readonly last_inbound_channel_uuid?: string | null
  readonly created_at: string
  readonly updated_at: string
}

/** `groups`: `name_key` is core's `nameKey(name)`, unique per organization. */
export interface GroupDocument {
  readonly _id: string
  readonly organization_id: string
  readonly name: string
  readonly name_key: string
  readonly created_at: string
  readonly updated_at: string
}

/** `labels`: like groups, with a color. */
export interface LabelDocument extends GroupDocument {
  readonly color: string
}

/**
 * `templates`: `components` and `problems` are the JSON text of what was given, so keys
 * that MongoDB treats specially (`$…`, dotted: Meta's raw components may hold anything)
 * are stored verbatim and never interpreted. `rejected_reason`, `waba_id`,
 * `provider_template_id` and `problems` are absent from documents written before they
 * existed and read as `null` (`[]` for `problems`); a missing `waba_id` is indexed as
 * `null`, so such templates are in the group of templates with no account.
 */
export interface TemplateDocument {
  readonly _id: string
  readonly organization_id: string
  readonly waba_id?: string | null
  readonly provider_template_id?: string | null
  readonly name: string
  readonly name_key: string
  readonly language: string
  readonly category: string
  readonly status: string
  readonly rejected_reason?: string | null
  readonly components: string
  readonly problems?: string
  readonly created_at: string
  readonly updated_at: string
  /** Webhook events of writes to this template, waiting for the relay (webhooks.ts). */
  readonly pending_events?: ReadonlyArray<PendingWebhookEvent>
}

/** `basic_replies`: `trigger_key` is `nameKey(trigger)`, unique per organization. */
export interface BasicReplyDocument {
  readonly _id: string
  readonly organization_id: string
  readonly name: string
  readonly trigger: string
  readonly trigger_key: string
  readonly response: string
  readonly created_at: string
  readonly updated_at: string
}

/**
 * `messages`: `template`, `media` and `content` are JSON text (like template components:
 * a free-form `content` may hold keys MongoDB would refuse, such as `$…`); `failure` is
 * `{code, title}`. `content`, `failure` and `channel_uuid` are absent from documents
 * written before they existed and read as `null`.
 * `dedupe_key` (`direction provider_message_id`) is set only on messages appended with
 * deduplication; a unique partial index on it makes two concurrent deliveries of one
 * provider message store it once. `attempts`, `next_attempt_at` and `broadcast_uuid` are
 * absent from documents written before the send queue and read as 0, `null`, `null`.
 *
 * A RECIPIENT of a broadcast is a message whose `broadcast_uuid` is a string (the
 * broadcast's uuid); the unique partial index `messages_by_broadcast_contact` keeps one per
 * (broadcast, contact).
 *
 * A message of the send queue (docs/messaging.md "The send queue") also holds its dispatch
 * state, and only such a message has `to`: `to` (E.164), `class`, `expires_at` (ISO 8601),
 * `sequence` (from the `counters` document `message_sequence`: the order of its lane),
 * `pair_rate_waits`, and the lease: `lease` (the token of the dispatcher holding it, else
 * `null`) and `lease_until` (epoch ms, else `null`). `next_attempt_at` is a string exactly
 * while such a message waits (`queued` or `sending`): the send queue's indexes hold only
 * those.
 */
export interface MessageDocument {
  readonly _id: string
  readonly organization_id: string
  readonly chat_uuid: string
  readonly contact_uuid: string
  readonly direction: MessageDirection
  readonly type: MessageType
  readonly text: string | null
  readonly template: string | null
  readonly media: string | null
  readonly content?: string | null
  readonly status: MessageStatus
  readonly provider_message_id: string | null
  readonly failure?: { readonly code: string; readonly title: string } | null
  readonly channel_uuid?: string | null
  readonly attempts?: number
  readonly next_attempt_at?: string | null
  readonly broadcast_uuid?: string | null
  /**
   * The transport the message was handed to (core's `TransportKind`), `null` for inbound and
   * imported messages; absent on documents written before it existed, read by the rule the
   * SQL stores' migrations fill older rows with (`transportOfOlder` in records.ts).
   */
  readonly transport?: TransportKind | null
  /** The uuid of the message an inbound message replies to; absent on documents written before replies were resolved. */
  readonly reply_to?: string | null
  /** The reactions on the message (core's `MessageReaction`); absent (none) on older documents. */
  readonly reactions?: ReadonlyArray<{ readonly emoji: string; readonly by: "business" | "contact"; readonly at: string }>
  /** On a `reaction` row: its reaction was folded into its target (absent on rows written before, folded at start-up). */
  readonly reactions_folded?: true
  readonly to?: string
  readonly class?: SendClass
  readonly expires_at?: string
  readonly sequence?: number
  readonly pair_rate_waits?: number
  readonly lease?: string | null
  readonly lease_until?: number | null
  /** The `send_at` of a scheduled send (ISO 8601); absent or `null` for a message never scheduled. */
  readonly scheduled_at?: string | null
  readonly dedupe_key?: string
  readonly created_at: string
  readonly updated_at: string
  /** Webhook events of writes to this message, waiting for the relay (webhooks.ts). */
  readonly pending_events?: ReadonlyArray<PendingWebhookEvent>
  /**
   * The media document of an inbound media message (`ChatAppendRequest.media`), inserted
   * with the message and moved to `media` right after (repositories/media.ts
   * `moveInboundMedia`); present only until it was moved.
   */
  readonly pending_media?: MediaDocument
}

/**
 * `media`: a media record (docs/media.md; `_id` its uuid) with what only the server reads
 * (`contact_uuid`, `channel_uuid`, `blob_key`, `blob_pending_removal`) and the fetch job
 * of an inbound file: `provider_media_id`, `declared_sha256`, `expires_at` (`null` for a
 * media that never had a job), `next_fetch_at` (a string exactly while it has a job: the
 * due index holds only those), the counts `attempts` and `integrity_failures`, and the
 * lease: `lease` (the claimer's token, else `null`) and `lease_until` (ISO 8601, else
 * `null`). `size` is a plain number (a double past 2^31, exact to 2^53). `message_update`
 * (`{id, at}`) is set by the write that changes an inbound media's status while the
 * rewrite of its message (with the `message.media_updated` event, at `at`) is still to be
 * done; the writer clears it after, and a crash between leaves it for the repair of
 * `claimFetches` (repositories/media.ts).
 */
export interface MediaDocument {
  readonly _id: string
  readonly organization_id: string
  readonly type: MediaType
  readonly mime_type: string
  readonly size: number | null
  readonly sha256: string | null
  readonly filename: string | null
  readonly status: MediaStatus
  readonly failure: { readonly code: MediaFailureCode; readonly title: string } | null
  readonly source: MediaSource
  readonly message_uuid: string | null
  readonly contact_uuid: string | null
  readonly channel_uuid: string | null
  readonly blob_key: string | null
  readonly blob_pending_removal: boolean
  readonly created_at: string
  readonly stored_at: string | null
  readonly provider_media_id: string | null
  readonly declared_sha256: string | null
  readonly expires_at: string | null
  readonly next_fetch_at: string | null
  readonly attempts: number
  readonly integrity_failures: number
  readonly lease: string | null
  readonly lease_until: string | null
  readonly message_update: MediaMessageUpdate | null
}

/** A message rewrite still to be done for a media's status change: its token and the change's `now`. */
export interface MediaMessageUpdate {
  readonly id: string
  readonly at: string
}

/**
 * `media_uploads`: the provider's id of a media's upload through a channel (`_id` =
 * `<media uuid>:<channel uuid>`, so one per pair and a later upload replaces it), valid
 * until `expires_at` (ISO 8601); `expire_at` (a Date, for the TTL index) mirrors it.
 */
export interface MediaUploadDocument {
  readonly _id: string
  readonly media_uuid: string
  readonly channel_uuid: string
  readonly provider_media_id: string
  readonly expires_at: string
  readonly expire_at: Date
}

/**
 * `pending_message_statuses`: a provider's status report waiting for an outbound message
 * of the organization to record `provider_message_id` (`_id` a random uuid). `from` are the
 * statuses it may move the message from, `failure` what it writes with a `failed` status,
 * `reported_at` the report's `now` (the message's `updated_at` when it is applied; reports
 * apply in `reported_at` order, then `_id`). `expire_at` (a Date, for the TTL index) mirrors
 * `pending_until`; reads also skip documents past `pending_until`, the TTL monitor being
 * lazy.
 */
export interface PendingMessageStatusDocument {
  readonly _id: string
  readonly organization_id: string
  readonly provider_message_id: string
  readonly status: MessageStatus
  readonly from: ReadonlyArray<MessageStatus>
  readonly failure: { readonly code: string; readonly title: string } | null
  readonly reported_at: string
  readonly pending_until: string
  readonly expire_at: Date
}

/**
 * `channels`: an organization's WhatsApp number; `phone_number_id` unique across every
 * organization (a unique index); the access token only sealed (AES-256-GCM text).
 * `throughput_mps` is absent from documents written before it existed: read as 50.
 * `status`, `paused_reason` and `paused_at` (absent before the send queue: read as
 * `active`, `null`, `null`) are part of the record; `pacing_tat` (epoch ms) and
 * `cooldown_ms` are the send queue's pacing state (absent: 0), never shown.
 */
export interface ChannelDocument {
  readonly _id: string
  readonly organization_id: string
  readonly provider: "whatsapp_cloud"
  readonly phone_number_id: string
  readonly display_phone_number: string
  readonly waba_id: string
  readonly access_token_sealed: string
  readonly access_token_last4: string
  readonly throughput_mps?: number
  readonly status?: ChannelStatus
  readonly paused_reason?: { readonly code: string; readonly title: string } | null
  readonly paused_at?: string | null
  readonly pacing_tat?: number
  readonly cooldown_ms?: number
  readonly created_at: string
  readonly updated_at: string
  /** Webhook events of writes to this channel (`channel.paused`, `channel.resumed`), waiting for the relay (webhooks.ts). */
  readonly pending_events?: ReadonlyArray<PendingWebhookEvent>
}

/**
 * `broadcasts`: a broadcast (docs/broadcasts.md) without its counts, which are read from its
 * recipients (the messages whose `broadcast_uuid` is its uuid). `template` is the send
 * object as JSON text (like a message's: a parameter may hold keys MongoDB would refuse);
 * `stopped_reason` is `{code, title}`; `recipients_failure` is the failure its `queued`
 * recipients were given when it was cancelled or stopped, `null` before (a batch written
 * concurrently with the cancel fails its own with it: broadcasts.ts). The start's state:
 * `start_cursor` (the uuid of the last contact a batch reached, `null` before the first),
 * `start_finished`, and the starter's lease, `start_lease` (its token, else `null`) and
 * `start_lease_until` (epoch ms, else `null`).
 */
export interface BroadcastDocument {
  readonly _id: string
  readonly organization_id: string
  readonly name: string
  readonly status: BroadcastStatus
  readonly template: string
  readonly audience: {
    readonly group_uuids: ReadonlyArray<string>
    readonly label_uuids: ReadonlyArray<string>
    readonly contact_uuids: ReadonlyArray<string>
  }
  readonly channel_uuid: string | null
  /** The kind of transport its recipients are handed to; absent on documents written before it existed (read as `transportOfOlder`). */
  readonly transport?: TransportKind
  readonly send_at: string | null
  readonly created_at: string
  readonly started_at: string | null
  readonly completed_at: string | null
  readonly stopped_reason: { readonly code: string; readonly title: string } | null
  readonly recipients_failure: { readonly code: string; readonly title: string } | null
  readonly start_cursor: string | null
  readonly start_finished: boolean
  readonly start_lease: string | null
  readonly start_lease_until: number | null
  /** Webhook events of writes to this broadcast (`broadcast.completed`), waiting for the relay (webhooks.ts). */
  readonly pending_events?: ReadonlyArray<PendingWebhookEvent>
}

/** `counters`: a number the store hands out in increasing order (`_id` = its name, such as `message_sequence`). */
export interface CounterDocument {
  readonly _id: string
  readonly value: number
}

/** `settings`: the store's own key–value documents (`_id` = the key), such as the secret-key check value. */
export interface SettingDocument {
  readonly _id: string
  readonly value: string
}

/** `rate_buckets`: one fixed-window counter; `_id` is `windowStart:key`. */
export interface RateBucketDocument {
  readonly _id: string
  readonly count: number
  readonly expires_at: Date
}

/**
 * `idempotency_keys`: one Idempotency-Key of one organization (`_id` =
 * `<organization id>:<key>`); `resource_uuid` the uuid of what its request creates (its
 * message), chosen at the claim — absent on documents written before it was kept, which
 * count as none; `response_status`/`response_body` set once the request finished with a
 * 200; `expire_at` (a Date, for the TTL index) mirrors `expires_at`.
 */
export interface IdempotencyKeyDocument {
  readonly _id: string
  readonly organization_id: string
  readonly fingerprint: string
  readonly resource_uuid?: string | null
  readonly locked_until: string
  readonly expires_at: string
  readonly expire_at: Date
  readonly response_status: number | null
  readonly response_body: string | null
  readonly created_at: string
}

/**
 * A webhook event embedded in the document whose write caused it, in that same
 * single-document write (docs/storage.md "Outgoing webhook events"): `id` (a new uuid),
 * `type`, `created_at` (the write's `now`), `data` the record as JSON text (`null` for a
 * `chat.updated` event written by the pipeline of `appendMessage`, filled by the next
 * write; the relay reads the chat itself when that one never came), and `endpoints`, the
 * uuids of the organization's enabled endpoints subscribed to `type` at the write. The
 * relay moves it to `webhook_events` and `webhook_deliveries`, then pulls it.
 */
export interface PendingWebhookEvent {
  readonly id: string
  readonly type: string
  readonly created_at: string
  readonly data: string | null
  readonly endpoints: ReadonlyArray<string>
}

/**
 * `webhook_endpoints`: an organization's endpoint; `events` `null` for every type; the
 * secret only sealed. `enabled_since` is when it was last enabled (`null` while disabled):
 * the relay gives it deliveries only of events written since, so an event written before a
 * disable (whose deliveries the disable would have cancelled) never reaches it after it is
 * enabled again.
 */
export interface WebhookEndpointDocument {
  readonly _id: string
  readonly organization_id: string
  readonly url: string
  readonly events: ReadonlyArray<string> | null
  readonly description: string | null
  readonly enabled: boolean
  readonly enabled_since: string | null
  readonly secret_sealed: string
  /** After a rotation with an overlap: the rotated-out secret (sealed) and when it stops signing; absent on older documents (none). */
  readonly previous_secret_sealed?: string | null
  readonly previous_secret_expires_at?: string | null
  readonly created_at: string
  readonly updated_at: string
}

/** `webhook_events`: an event moved out of its document by the relay (`_id` = the event id); `data` JSON text. */
export interface WebhookEventDocument {
  readonly _id: string
  readonly organization_id: string
  readonly type: string
  readonly data: string
  readonly created_at: string
}

/**
 * `webhook_deliveries`: one event to one endpoint (`_id` = `<event id>:<endpoint uuid>`, so
 * the relay's upserts are idempotent); `attempts` recorded so far, `next_attempt_at`
 * (`null` unless `pending`), the claim's `lease` token and `lease_until`.
 */
export interface WebhookDeliveryDocument {
  readonly _id: string
  readonly organization_id: string
  readonly endpoint_uuid: string
  readonly event_id: string
  readonly event_type: string
  readonly status: "pending" | "delivered" | "failed" | "cancelled"
  readonly attempts: number
  readonly next_attempt_at: string | null
  readonly lease: string | null
  readonly lease_until: string | null
  readonly created_at: string
}

/** `webhook_attempts`: one attempt (`_id` = its id), with its endpoint for the newest-first list. */
export interface WebhookAttemptDocument {
  readonly _id: string
  readonly organization_id: string
  readonly endpoint_uuid: string
  readonly delivery_id: string
  readonly event_id: string
  readonly event_type: string
  readonly attempt: number
  readonly status: number | null
  readonly error: string | null
  readonly duration_ms: number
  readonly response_body: string | null
  readonly attempted_at: string
  readonly delivery_status: "pending" | "delivered" | "failed"
  readonly next_attempt_at: string | null
}

/**
 * `webhook_rejects`: a refused part of a provider webhook (core's `WebhookReject`), its
 * raw part kept as JSON text (`item_json`: a part may hold keys MongoDB refuses, such as
 * ones starting with `$`).
 */
export interface WebhookRejectDocument {
  readonly _id: string
  readonly received_at: string
  readonly organization_id: string | null
  readonly phone_number_id: string | null
  readonly reason: string
  readonly item_json: string
}

/**
 * `template_syncs`: the sync record of one organization's WhatsApp Business Account
 * (core's `TemplateSync`), `_id` = `organization_id + "/" + waba_id`; instants are ISO
 * 8601 strings (they sort as text), `last_outcome` the counts as a subdocument.
 */
export interface TemplateSyncDocument {
  readonly _id: string
  readonly organization_id: string
  readonly waba_id: string
  readonly next_due_at: string
  readonly lease: string | null
  readonly lease_until: string | null
  readonly last_run_at: string | null
  readonly last_outcome: { readonly added: number; readonly updated: number; readonly deleted: number; readonly unchanged: number } | null
  readonly last_error: string | null
}

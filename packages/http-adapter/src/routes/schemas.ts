import { Schema } from "effect"
import {
  BasicReply,
  Channel,
  ChannelTemplateSync,
  Chat,
  ChatId,
  ContactId,
  Group,
  GroupId,
  Label,
  LabelId,
  Message,
  MessageFailure,
  MessageId,
  MessageStatus,
  OrganizationId,
  Template,
  TemplatePayload,
  TemplateSendObject,
  TransportKind,
  WebhookDeliveryAttempt,
  WebhookEndpoint,
  type Broadcast,
  type BroadcastList,
  type BroadcastRecipientList,
  type ChatList,
  type Contact,
  type ContactImportResult,
  type LabelAssignResult,
  type LabelBulkDeleteResult,
  type MessageList,
  type Pagination,
  type SendResult,
  type WebhookDeliveryList
} from "@switchboard/core"

// The `data` schemas of the routes' success envelopes (docs/http-api.md
// "Endpoints", "Records and identifiers"). Records core declares as effect/Schema values (Label, Group, BasicReply,
// Template, TemplatePayload, Chat) are used as they are, given an `identifier` so the
// OpenAPI document names them once under `components.schemas`. Shapes core declares as
// TypeScript interfaces (Contact, the import, send, assign and bulk-delete results, the
// paginations) are written here as schemas typed with that interface: a field added to or
// changed in core fails to compile here until the schema follows. The compiler cannot see
// a handler answering more fields than its schema (a subtype is assignable), so
// test/openapi-parity.test.ts decodes real responses with `onExcessProperty: "error"`.

/**
 * A contact group (docs/contacts.md "Records").
 *
 * @category schemas
 */
export const GroupRecord = Group.annotations({ identifier: "Group", description: "A contact group (audience)" })

/**
 * A label (docs/contacts.md "Records").
 *
 * @category schemas
 */
export const LabelRecord = Label.annotations({
  identifier: "Label",
  description: "A label (contact tag); `color` is a lowercase CSS hex color"
})

/**
 * A basic reply (docs/templates-and-replies.md "Records").
 *
 * @category schemas
 */
export const BasicReplyRecord = BasicReply.annotations({ identifier: "BasicReply", description: "A basic (canned) reply" })

/**
 * A message template in WhatsApp's management shape (docs/templates-and-replies.md "Records").
 *
 * @category schemas
 */
export const TemplateRecord = Template.annotations({ identifier: "Template", description: "A message template" })

/**
 * A channel: one of the organization's WhatsApp numbers (docs/channels.md). The access
 * token is never part of it; `access_token_last4` tells which token is stored.
 *
 * @category schemas
 */
export const ChannelRecord = Channel.annotations({
  identifier: "Channel",
  description: "An organization's WhatsApp number; the access token is stored encrypted and never returned"
})

/**
 * A channel with its send queue figures and its last template sync: data of `GET
 * /channels/{uuid}`, `PUT /channels/{uuid}` and `POST /channels/{uuid}/resume`
 * (docs/channels.md "Pause and resume", "Template sync"): `queue.queued` and
 * `queue.sending` count its messages in those statuses, `queue.oldest_queued_at` is when
 * the oldest queued one was created (`null` when none); `template_sync` is the last sync
 * of its WhatsApp Business Account's templates from Meta (`last_run_at`, `outcome`
 * `{added, updated, deleted, unchanged}`, `error`; all `null` before the first run).
 *
 * @category schemas
 */
export const ChannelDetailsRecord = Schema.extend(
  Channel,
  Schema.Struct({
    queue: Schema.Struct({
      queued: Schema.Int,
      sending: Schema.Int,
      oldest_queued_at: Schema.NullOr(Schema.String)
    }),
    template_sync: ChannelTemplateSync.annotations({
      description:
        "The last sync of the templates of the channel's WhatsApp Business Account from Meta: when it ran, its counts " +
        "(null when it failed) and its error (null when it succeeded); every field null before the first run"
    })
  })
).annotations({
  identifier: "ChannelDetails",
  description: "A channel with its send queue figures and its last template sync; the access token is never returned"
})

/**
 * Data of `GET /channels`: oldest first, the first is the default.
 *
 * @category schemas
 */
export const ChannelListData = Schema.Struct({ channels: Schema.Array(ChannelRecord) })

/**
 * A chat (docs/chats.md "Records").
 *
 * @category schemas
 */
export const ChatRecord = Chat.annotations({ identifier: "Chat", description: "The conversation with one contact" })

/**
 * Data of `POST /chats/{uuid}/read` (docs/chats.md "Read receipts"): the chat and what
 * became of the read receipt of its latest inbound message.
 *
 * @category schemas
 */
export const ChatReadData = Schema.extend(
  Chat,
  Schema.Struct({
    read_receipt: Schema.Struct({
      status: Schema.Literal("sent", "skipped", "failed").annotations({
        description: "sent: Meta accepted it; skipped: nothing to send (see reason); failed: Meta refused it or could not be reached twice (see failure)"
      }),
      message_uuid: Schema.NullOr(Schema.UUID).annotations({ description: "The latest inbound message the receipt is about; null when the chat has none" }),
      reason: Schema.NullOr(
        Schema.Literal("no_inbound_message", "already_read", "no_provider_id", "no_channel", "channel_removed", "transport_unsupported")
      ).annotations({ description: "Why it was skipped; null otherwise" }),
      failure: Schema.NullOr(MessageFailure).annotations({ description: "Meta's error code (or network_error) and its text when it failed; null otherwise" })
    }).annotations({ identifier: "ReadReceipt", description: "What became of the read receipt sent to Meta" })
  })
).annotations({ identifier: "ChatRead", description: "A chat marked read, with its read receipt" })

/**
 * A message of a chat (docs/chats.md "Records").
 *
 * @category schemas
 */
export const MessageRecord = Message.annotations({
  identifier: "Message",
  description: "One message of a chat; `content` holds the other inbound types' fields, `failure` a refused send's reason"
})

/**
 * A group as embedded in a contact record.
 *
 * @category schemas
 */
export const GroupSummaryRecord = Schema.Struct({ uuid: GroupId, name: Schema.String }).annotations({
  identifier: "GroupSummary"
})

/**
 * A label as embedded in a contact record.
 *
 * @category schemas
 */
export const LabelSummaryRecord = Schema.Struct({ uuid: LabelId, name: Schema.String, color: Schema.String }).annotations({
  identifier: "LabelSummary"
})

const nullableText = Schema.NullOr(Schema.String)

/**
 * A contact (docs/contacts.md "Records"): `phone` in E.164, or, with `phone_valid` false,
 * a WhatsApp sender id libphonenumber-js calls invalid (docs/contacts.md "Unverified
 * phones"); groups and labels sorted by name.
 *
 * @category schemas
 */
export const ContactRecord: Schema.Schema<Contact, any> = Schema.Struct({
  uuid: ContactId,
  first_name: nullableText,
  last_name: nullableText,
  phone: Schema.String,
  phone_valid: Schema.Boolean.annotations({
    description:
      "false only for a contact created by an inbound message whose sender number libphonenumber-js calls invalid: `phone` is then `+` and WhatsApp's id as given (unverified)"
  }),
  email: nullableText,
  street: nullableText,
  city: nullableText,
  state: nullableText,
  zip: nullableText,
  country: nullableText,
  groups: Schema.Array(GroupSummaryRecord),
  labels: Schema.Array(LabelSummaryRecord),
  marketing_opt_out_at: Schema.NullOr(Schema.String).annotations({
    description:
      "When the contact's number refused marketing messages (Meta's 131050): broadcasts of MARKETING templates skip it; `PUT` with null clears it"
  }),
  created_at: Schema.String,
  updated_at: Schema.String
}).annotations({ identifier: "Contact", description: "A contact; `phone` in E.164 unless `phone_valid` is false" })

/**
 * The `pagination` object of the offset-paginated lists (docs/http-api.md "Pagination").
 *
 * @category schemas
 */
export const PaginationData: Schema.Schema<Pagination, any> = Schema.Struct({
  page: Schema.Int,
  per_page: Schema.Int,
  total: Schema.Int,
  total_pages: Schema.Int
}).annotations({ identifier: "Pagination" })

/**
 * Data of `GET /contacts`.
 *
 * @category schemas
 */
export const ContactListData = Schema.Struct({ contacts: Schema.Array(ContactRecord), pagination: PaginationData })

/**
 * Data of `GET /contact-groups`.
 *
 * @category schemas
 */
export const GroupListData = Schema.Struct({ groups: Schema.Array(GroupRecord), pagination: PaginationData })

/**
 * Data of `GET /labels`.
 *
 * @category schemas
 */
export const LabelListData = Schema.Struct({ labels: Schema.Array(LabelRecord), pagination: PaginationData })

/**
 * Data of `GET /basic-replies`.
 *
 * @category schemas
 */
export const BasicReplyListData = Schema.Struct({
  basic_replies: Schema.Array(BasicReplyRecord),
  pagination: PaginationData
})

/**
 * Data of `GET /templates`.
 *
 * @category schemas
 */
export const TemplateListData = Schema.Struct({ templates: Schema.Array(TemplateRecord), pagination: PaginationData })

/** The cursor `pagination` object of `GET /chats` and `GET /chats/{uuid}/messages`. */
const ChatCursorPagination = Schema.Struct({
  mode: Schema.Literal("cursor"),
  limit: Schema.Int,
  next_cursor: Schema.NullOr(Schema.String),
  has_more: Schema.Boolean
}).annotations({ identifier: "ChatCursorPagination" })

/**
 * Data of `GET /chats` (docs/chats.md "`GET /chats`"): `pagination` is the offset object with
 * `mode: "offset"` or the cursor object with `mode: "cursor"`.
 *
 * @category schemas
 */
export const ChatListData: Schema.Schema<ChatList, any> = Schema.Struct({
  chats: Schema.Array(ChatRecord),
  pagination: Schema.Union(
    Schema.Struct({
      mode: Schema.Literal("offset"),
      page: Schema.Int,
      per_page: Schema.Int,
      total: Schema.Int,
      total_pages: Schema.Int
    }).annotations({ identifier: "ChatOffsetPagination" }),
    ChatCursorPagination
  )
})

/**
 * Data of `GET /chats/{uuid}/messages`: newest first, `pagination` the cursor object of
 * `GET /chats`.
 *
 * @category schemas
 */
export const MessageListData: Schema.Schema<MessageList, any> = Schema.Struct({
  messages: Schema.Array(MessageRecord),
  pagination: ChatCursorPagination
})

/**
 * A webhook endpoint (docs/webhooks.md "Endpoints"). Its signing secret is never part of it.
 *
 * @category schemas
 */
export const WebhookEndpointRecord = WebhookEndpoint.annotations({
  identifier: "WebhookEndpoint",
  description: "An organization's URL receiving its events; `events` null means every type. The signing secret is never returned here"
})

/**
 * Data of `POST /webhook-endpoints`: the endpoint and its signing `secret` (`whsec_` and
 * base64), shown only there and, with the rotation's expiry, by rotate-secret.
 *
 * @category schemas
 */
export const WebhookEndpointWithSecretData = Schema.Struct({ ...WebhookEndpoint.fields, secret: Schema.String }).annotations({
  identifier: "WebhookEndpointWithSecret",
  description: "A webhook endpoint with its signing secret, shown once: store it now"
})

/**
 * Data of `POST /webhook-endpoints/{uuid}/rotate-secret`: the endpoint, its new signing
 * `secret` (shown only here) and `previous_secret_expires_at`, when the old secret stops
 * signing (`null`: it stopped at once).
 *
 * @category schemas
 */
export const WebhookSecretRotatedData = Schema.Struct({
  ...WebhookEndpoint.fields,
  secret: Schema.String,
  previous_secret_expires_at: Schema.NullOr(Schema.String)
}).annotations({
  identifier: "WebhookSecretRotated",
  description:
    "A webhook endpoint with its new signing secret, shown once: store it now. The old secret signs beside it until previous_secret_expires_at (null: not at all)"
})

/**
 * Data of `GET /webhook-endpoints`: newest first, without secrets.
 *
 * @category schemas
 */
export const WebhookEndpointListData = Schema.Struct({ webhook_endpoints: Schema.Array(WebhookEndpointRecord) })

/**
 * Data of `GET /webhook-endpoints/{uuid}/deliveries` (docs/webhooks.md "The deliveries
 * log"): attempts newest first, `pagination` the cursor object of `GET /chats`.
 *
 * @category schemas
 */
export const WebhookDeliveryListData: Schema.Schema<WebhookDeliveryList, any> = Schema.Struct({
  deliveries: Schema.Array(
    WebhookDeliveryAttempt.annotations({
      identifier: "WebhookDeliveryAttempt",
      description: "One attempt to deliver an event: the receiver's HTTP status or the error, and the delivery's state after it"
    })
  ),
  pagination: ChatCursorPagination
})

/**
 * Data of `POST /webhook-endpoints/{uuid}/deliveries/{id}/retry`: the delivery, due again now.
 *
 * @category schemas
 */
export const WebhookDeliveryRetryData = Schema.Struct({
  endpoint_uuid: Schema.UUID,
  delivery_id: Schema.String,
  delivery_status: Schema.Literal("pending")
})

/**
 * The `{id, message}` data carrying the record (docs/http-api.md "Endpoints"): `id` is the record's uuid.
 *
 * @category schemas
 */
export const withIdAndMessageData = <Fields extends Schema.Struct.Fields>(record: Schema.Struct<Fields>) =>
  Schema.Struct({ id: Schema.UUID, message: Schema.String, ...record.fields })

/**
 * Data of `PUT /contacts/{uuid}`: `{id, message}` and the contact.
 *
 * @category schemas
 */
export const UpdatedContactData: Schema.Schema<{ readonly id: string; readonly message: string } & Contact, any> =
  Schema.extend(Schema.Struct({ id: Schema.UUID, message: Schema.String }), ContactRecord)

/**
 * Data of a delete: `{uuid, deleted: true}` (docs/contacts.md "Endpoints").
 *
 * @category schemas
 */
export const DeletedData = Schema.Struct({ uuid: Schema.UUID, deleted: Schema.Literal(true) })

/**
 * Data of `POST /channels/{uuid}/templates/sync` (docs/templates-and-replies.md "Templates
 * from Meta"): how many templates the sync `added`, `updated`, marked `deleted` and left
 * `unchanged`.
 *
 * @category schemas
 */
export const TemplateSyncData = Schema.Struct({
  added: Schema.Int,
  updated: Schema.Int,
  deleted: Schema.Int,
  unchanged: Schema.Int
})

/**
 * Data of `POST /contacts/bulk` (docs/contacts.md "Endpoints"): one entry per distinct phone, in
 * first-seen order.
 *
 * @category schemas
 */
export const ContactImportData: Schema.Schema<ContactImportResult, any> = Schema.Struct({
  created: Schema.Int,
  updated: Schema.Int,
  contacts: Schema.Array(
    Schema.Struct({ uuid: ContactId, phone: Schema.String, status: Schema.Literal("created", "updated") })
  )
})

/**
 * Data of `GET /contacts/{uuid}/labels`: the label records the contact carries.
 *
 * @category schemas
 */
export const ContactLabelsData = Schema.Struct({ labels: Schema.Array(LabelRecord) })

/**
 * Data of `POST /contacts/labels/assign` (docs/contacts.md "Rules").
 *
 * @category schemas
 */
export const LabelAssignData: Schema.Schema<LabelAssignResult, any> = Schema.Struct({
  tag_uuid: LabelId,
  assigned: Schema.Int,
  contact_uuids: Schema.Array(ContactId)
})

/**
 * Data of `POST /labels/bulk-delete` (docs/contacts.md "Rules").
 *
 * @category schemas
 */
export const LabelBulkDeleteData: Schema.Schema<LabelBulkDeleteResult, any> = Schema.Struct({
  deleted: Schema.Int,
  tag_uuids: Schema.Array(LabelId),
  not_found: Schema.Array(LabelId)
})

/**
 * Data of the sends (docs/messaging.md "Endpoints"): `message_id` is the message's uuid;
 * `status` what its first attempt left it (`sent`, `failed`, `queued`, `sending`; `scheduled`
 * for a `send_at` ahead, due at `next_attempt_at`), with
 * Meta's `provider_message_id`, the send queue's `next_attempt_at` and the `failure`;
 * `transport` the transport it was handed to (`recording` without a channel: nothing left
 * the server).
 *
 * @category schemas
 */
export const SendData: Schema.Schema<SendResult, any> = Schema.Struct({
  message_id: MessageId,
  chat_uuid: ChatId,
  contact_uuid: ContactId,
  status: MessageStatus,
  provider_message_id: Schema.NullOr(Schema.String),
  next_attempt_at: Schema.NullOr(Schema.String),
  failure: Schema.NullOr(MessageFailure),
  transport: TransportKind
}).annotations({ identifier: "SendResult" })

/**
 * Data of `GET /templates/{uuid}/payload` (docs/templates-and-replies.md "The payload: `GET /templates/{uuid}/payload`").
 *
 * @category schemas
 */
export const TemplatePayloadData = TemplatePayload.annotations({ identifier: "TemplatePayload" })

/**
 * Data of `GET /verify` (docs/http-api.md "Endpoints").
 *
 * @category schemas
 */
export const VerifyData = Schema.Struct({
  message: Schema.String,
  organization: Schema.Struct({ id: OrganizationId, name: Schema.String })
})

const BroadcastCounts = Schema.Struct({
  total: Schema.Int,
  queued: Schema.Int,
  sending: Schema.Int,
  sent: Schema.Int,
  delivered: Schema.Int,
  read: Schema.Int,
  failed: Schema.Int
}).annotations({ identifier: "BroadcastCounts", description: "Recipients by their message's current status; the six sum to total" })

/**
 * A broadcast (docs/broadcasts.md "Records").
 *
 * @category schemas
 */
export const BroadcastRecord: Schema.Schema<Broadcast, any> = Schema.Struct({
  uuid: Schema.UUID,
  name: Schema.String,
  status: Schema.Literal("scheduled", "sending", "completed", "cancelled", "stopped"),
  template: TemplateSendObject,
  audience: Schema.Struct({
    group_uuids: Schema.Array(Schema.UUID),
    label_uuids: Schema.Array(Schema.UUID),
    contact_uuids: Schema.Array(Schema.UUID)
  }),
  channel_uuid: Schema.NullOr(Schema.UUID),
  transport: TransportKind.annotations({
    description:
      "The transport its messages are handed to, settled at its creation from the channel: `recording` (no channel: " +
      "nothing leaves the server), `whatsapp` or `custom`; each recipient's message says the same"
  }),
  send_at: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  started_at: Schema.NullOr(Schema.String),
  completed_at: Schema.NullOr(Schema.String),
  stopped_reason: Schema.NullOr(MessageFailure),
  counts: BroadcastCounts
}).annotations({ identifier: "Broadcast", description: "One approved template sent to an audience" }) as any

/**
 * Data of `GET /broadcasts`: newest first, cursor pagination.
 *
 * @category schemas
 */
export const BroadcastListData: Schema.Schema<BroadcastList, any> = Schema.Struct({
  broadcasts: Schema.Array(BroadcastRecord),
  pagination: ChatCursorPagination
})

/**
 * Data of `GET /broadcasts/{uuid}/recipients`: in contact uuid order, cursor pagination.
 *
 * @category schemas
 */
export const BroadcastRecipientListData: Schema.Schema<BroadcastRecipientList, any> = Schema.Struct({
  recipients: Schema.Array(
    Schema.Struct({
      contact_uuid: ContactId,
      phone: Schema.String,
      message_uuid: MessageId,
      status: MessageStatus,
      failure: Schema.NullOr(MessageFailure)
    }).annotations({ identifier: "BroadcastRecipient" })
  ),
  pagination: ChatCursorPagination
})

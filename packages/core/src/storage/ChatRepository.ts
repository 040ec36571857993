import type { Effect, Option } from "effect"
import type { Chat, ChatId, ChatSortBy, ChatSortOrder, ChatStatus } from "../model/chats.js"
import type { ContactId } from "../model/contacts.js"
import type { GroupId } from "../model/groups.js"
import type { LabelId } from "../model/labels.js"
import type { Message, MessageFailure, MessageId, MessageStatus } from "../model/messages.js"
import type { OrganizationId } from "../model/organizations.js"
import type { Page, PageRequest } from "../model/common.js"
import type { NewInboundMedia } from "./MediaRepository.js"
import type { OutboxPlacement } from "./OutboxRepository.js"
import type { StorageError } from "./errors.js"

/**
 * How {@link ChatRepository.appendMessage} finds the contact of a message: by E.164 phone,
 * creating the contact with `create` when the organization has none (inbound messages are
 * never dropped, not even over `contacts_limit`: docs/chats.md), or by uuid
 * (it must exist).
 *
 * @category storage
 */
export type ChatContactReference =
  | {
      readonly _tag: "ByPhone"
      readonly phone: string
      readonly create: {
        readonly uuid: ContactId
        readonly first_name: string | null
        readonly last_name: string | null
        /** The created contact's `phone_valid` (docs/contacts.md "Unverified phones"); absent means `true`. */
        readonly phone_valid?: boolean
      }
    }
  | { readonly _tag: "ById"; readonly uuid: ContactId }

/**
 * A new message as the store writes it; `chat_uuid` and `contact_uuid` are the store's to
 * fill.
 *
 * @category storage
 */
export type NewMessage = Omit<Message, "chat_uuid" | "contact_uuid">

/**
 * Input of {@link ChatRepository.appendMessage}. Core decides every rule; the store applies
 * them in one atomic step:
 * - the organization already has a message with `message.uuid` (a send under an
 *   Idempotency-Key whose claim was taken over, writing second: docs/messaging.md
 *   "Idempotency-Key") → `Duplicate` with that message, nothing written (no contact, chat,
 *   send-queue placement, pacing slot, media or event), whatever `dedupe` says;
 * - `dedupe`: when `message.provider_message_id` is set and the organization already has a
 *   message with that id and direction → `Duplicate`, nothing written;
 * - the contact per `contact`; the chat of the contact, created as `newChat` when missing;
 * - the message appended; the chat's `unread_count` increased by `unreadIncrement`;
 * - the chat's status set to `reopen.to` when it is one of `reopen.from`;
 * - `last_message_at`/last message set to this message unless the chat has a newer one
 *   (a later `created_at`); `updated_at` = `now`;
 * - `outbox` (outbound messages of the send queue only): the message is created in the
 *   outbox with that dispatch state, claimed or `queued` as `OutboxPlacement` says
 *   (OutboxRepository.ts); the outcome's `message` shows the status it got;
 * - `inboundAt` (inbound messages with a `channel_uuid` only; an ISO 8601 UTC instant in
 *   `Date#toISOString` form, chosen by core: the earlier of the provider's timestamp and
 *   the receipt time): the contact's `last_inbound_at` on that channel becomes the later of
 *   its stored value and `inboundAt`, and when `inboundAt` is at least the chat's latest
 *   such instant over every channel, the chat's `last_inbound_channel_uuid` becomes this
 *   channel (docs/messaging.md "The customer service window"). Absent → no window write;
 *   a `Duplicate` writes nothing.
 * - `media` (inbound media messages): the media record and its fetch job
 *   (MediaRepository.ts), written with the message, its `message_uuid` and `contact_uuid`
 *   this message's; a `Duplicate` writes none (a redelivered webhook makes one job).
 * - `replyTo` (inbound messages replying to another: WhatsApp's `context.id`): the
 *   message's `reply_to` is the uuid of the organization's message with that
 *   `provider_message_id`, outbound first, then inbound, read in the same atomic step;
 *   `null` when it has none (the request's `message.reply_to` is ignored then).
 * - `reaction` (inbound `reaction` messages): the reaction is folded into its target, the
 *   organization's message with `reaction.message_id` as `provider_message_id` (outbound
 *   first, then inbound), in the same atomic step: the target's `reactions` become
 *   `withReaction(reactions, "contact", emoji, at)` and its `updated_at` = `now`, and the
 *   event `message.reactions_updated` (data: the target) is written instead of
 *   `message.received`. Unknown target: the reaction row is kept, nothing else written.
 * A message of a type `listedMessageType` refuses (a reaction row) never becomes the
 * chat's last message nor moves `last_message_at` (the chat's other writes apply).
 *
 * @category storage
 */
export interface ChatAppendRequest {
  readonly contact: ChatContactReference
  readonly newChat: { readonly uuid: ChatId; readonly status: ChatStatus }
  readonly message: NewMessage
  readonly unreadIncrement: number
  readonly reopen: { readonly from: ReadonlyArray<ChatStatus>; readonly to: ChatStatus }
  readonly dedupe: boolean
  readonly now: string
  readonly outbox?: OutboxPlacement
  readonly inboundAt?: string
  readonly media?: NewInboundMedia
  readonly replyTo?: string
  readonly reaction?: InboundReaction
}

/**
 * An inbound reaction to fold into its target ({@link ChatAppendRequest}): the target's
 * provider message id, the emoji (`""` removes the contact's reaction) and when the
 * contact reacted (ISO 8601 UTC).
 *
 * @category storage
 */
export interface InboundReaction {
  readonly message_id: string
  readonly emoji: string
  readonly at: string
}

/**
 * Outcome of {@link ChatRepository.appendMessage}. `Duplicate` (a message with that uuid,
 * or with that provider id under `dedupe`, is stored: it and its chat) and
 * `ContactNotFound` wrote nothing.
 *
 * @category storage
 */
export type ChatAppendOutcome =
  | {
      readonly _tag: "Appended"
      readonly chat: Chat
      readonly message: Message
      readonly contactCreated: boolean
      readonly chatCreated: boolean
    }
  | { readonly _tag: "Duplicate"; readonly chat: Chat; readonly message: Message }
  | { readonly _tag: "ContactNotFound" }

/**
 * Outcome of {@link ChatRepository.ensure}: the contact's chat and whether it was created.
 *
 * @category storage
 */
export type ChatEnsureOutcome =
  | { readonly _tag: "Ensured"; readonly chat: Chat; readonly created: boolean }
  | { readonly _tag: "ContactNotFound" }

/**
 * Fields {@link ChatRepository.update} may set; absent fields are kept.
 *
 * @category storage
 */
export interface ChatPatch {
  readonly status?: ChatStatus
  readonly assigned_to?: string | null
  readonly favorite?: boolean
  readonly unread_count?: number
}

/**
 * Outcome of {@link ChatRepository.update}: `changed` is false when every field of the
 * patch already had its value (then nothing was written, `updated_at` included).
 *
 * @category storage
 */
export type ChatUpdateOutcome =
  | { readonly _tag: "Updated"; readonly chat: Chat; readonly changed: boolean }
  | { readonly _tag: "NotFound" }

/**
 * Input of {@link ChatRepository.updateMessageStatus}: `status` is written only when the
 * stored status is one of `from` (core's rule, applied atomically); `failure`, when given,
 * is written with it (only when the status is written); `provider_message_id` is written
 * when given; `updated_at` = `now` when anything changed. A move to `sent`, `delivered`,
 * `read` or `failed` also ends an outbox message's dispatch state (lease,
 * `next_attempt_at` and `pair_rate_waits` cleared) in the same write, by this method and
 * {@link ChatRepository.updateMessageStatusByProviderId} alike. Core never passes `queued`
 * or `sending` as `status` (the send queue's moves are OutboxRepository's).
 *
 * @category storage
 */
export interface MessageStatusUpdate {
  readonly status: MessageStatus
  readonly from: ReadonlyArray<MessageStatus>
  readonly failure?: MessageFailure | undefined
  readonly provider_message_id?: string | undefined
  readonly now: string
}

/**
 * Input of {@link ChatRepository.updateMessageStatusByProviderId}: a status reported by the
 * provider for the outbound message it knows as `provider_message_id`
 * (docs/whatsapp-webhooks.md "Statuses"). `status` is written only when the stored status
 * is one of `from`; `failure`, when given, with it; `updated_at` = `now` when anything
 * changed. When no outbound message of the organization has that provider id yet (the
 * provider can be faster than the send recording its id), the status is kept as pending
 * until `pendingUntil` (an ISO 8601 instant): see {@link MessageStatusUpdate}.
 *
 * @category storage
 */
export interface ProviderStatusUpdate {
  readonly status: MessageStatus
  readonly from: ReadonlyArray<MessageStatus>
  readonly failure?: MessageFailure | undefined
  readonly now: string
  readonly pendingUntil: string
}

/**
 * Outcome of {@link ChatRepository.updateMessageStatusByProviderId}: the message as stored
 * afterwards and whether anything changed, or `Pending` when no outbound message has the
 * provider id yet (the status was kept as pending).
 *
 * @category storage
 */
export type ProviderStatusOutcome =
  | { readonly _tag: "Updated"; readonly message: Message; readonly changed: boolean }
  | { readonly _tag: "Pending" }

/**
 * A position in a chat's messages, newest first: the `created_at` and uuid of a message.
 * {@link ChatRepository.listMessagesAfter} answers the messages strictly after it, that is
 * older, or as old with a smaller uuid.
 *
 * @category storage
 */
export interface MessagePosition {
  readonly created_at: string
  readonly uuid: MessageId
}

/**
 * Outcome of {@link ChatRepository.updateMessageStatus}: the message as stored afterwards,
 * and whether anything changed.
 *
 * @category storage
 */
export type MessageStatusOutcome =
  | { readonly _tag: "Updated"; readonly message: Message; readonly changed: boolean }
  | { readonly _tag: "NotFound" }

/**
 * Filters of the chat list, already validated and normalised by core (docs/chats.md "`GET /chats`"); every one given must
 * hold (AND):
 * - `search`: lowercase, non-empty; matches when {@link chatSearchMatches} says so for the
 *   contact's {@link chatSearchText};
 * - `assignedTo`: a user id, or `null` for unassigned chats;
 * - `groupIds`, `labelIds`: non-empty; the contact is in any of the groups / carries any of
 *   the labels;
 * - `unread`: `unread_count > 0` when true, `= 0` when false;
 * - `lastMessageFrom`, `lastMessageTo`: inclusive bounds of `last_message_at`, ISO 8601 UTC
 *   instants in `Date#toISOString` form; a chat without messages matches neither.
 *
 * @category storage
 */
export interface ChatFilters {
  readonly search?: string
  readonly status?: ChatStatus
  readonly assignedTo?: string | null
  readonly groupIds?: ReadonlyArray<GroupId>
  readonly labelIds?: ReadonlyArray<LabelId>
  readonly favorite?: boolean
  readonly unread?: boolean
  readonly lastMessageFrom?: string
  readonly lastMessageTo?: string
}

/**
 * Order of the chat list: by `by`, then by `uuid`, both in `order`. A `null`
 * `last_message_at` sorts before every timestamp: last in `desc`, first in `asc`.
 *
 * @category storage
 */
export interface ChatSort {
  readonly by: ChatSortBy
  readonly order: ChatSortOrder
}

/**
 * A position in the chat list: the sort value of a chat (`null` for a chat without
 * messages sorted by `last_message_at`) and its uuid. {@link ChatRepository.listAfter}
 * answers the chats strictly after it.
 *
 * @category storage
 */
export interface ChatPosition {
  readonly value: string | null
  readonly uuid: ChatId
}

/**
 * One chat of {@link ChatRepository.importChats}: the chat of contact `contactId` (a
 * contact of the organization), with the attributes of `attributes` and the messages of
 * `messages` (`chat_uuid` and `contact_uuid` are the store's to fill). `chatId` and
 * `created_at` are used only when the chat is created.
 *
 * @category storage
 */
export interface ChatImportEntry {
  readonly contactId: ContactId
  readonly chatId: ChatId
  readonly created_at: string
  readonly attributes: ChatPatch
  readonly messages: ReadonlyArray<NewMessage>
}

/**
 * Input of {@link ChatRepository.importChats}: at most one entry per contact (core merges
 * the entries of one phone); `now` is the `updated_at` of an existing chat that changes.
 *
 * @category storage
 */
export interface ChatImportRequest {
  readonly chats: ReadonlyArray<ChatImportEntry>
  readonly now: string
}

/**
 * Outcome of {@link ChatRepository.importChats}: per entry, in the order given, the
 * chat's uuid, whether it was created, and how many of its messages were added.
 * `ContactsNotFound` (every `contactId` that is not a contact of the organization, in the
 * order given) wrote nothing.
 *
 * @category storage
 */
export type ChatImportOutcome =
  | {
      readonly _tag: "Imported"
      readonly chats: ReadonlyArray<{ readonly uuid: ChatId; readonly created: boolean; readonly messagesAdded: number }>
    }
  | { readonly _tag: "ContactsNotFound"; readonly contactIds: ReadonlyArray<ContactId> }

/**
 * Chats and their messages, of one organization. One chat per contact; deleting
 * a contact deletes its chat and messages.
 *
 * @category storage
 */
export interface ChatRepository {
  /** Appends a message per {@link ChatAppendRequest}, atomically. */
  readonly appendMessage: (
    organizationId: OrganizationId,
    request: ChatAppendRequest
  ) => Effect.Effect<ChatAppendOutcome, StorageError>
  /**
   * The chat of the contact, created as `newChat` (no messages: `last_message_at` null,
   * `unread_count` 0, `created_at` = `updated_at` = `now`) when it has none.
   */
  readonly ensure: (
    organizationId: OrganizationId,
    contactId: ContactId,
    newChat: { readonly uuid: ChatId; readonly status: ChatStatus },
    now: string
  ) => Effect.Effect<ChatEnsureOutcome, StorageError>
  /** Sets the fields of `patch` that differ, and `updated_at` = `now` when any does. */
  readonly update: (
    organizationId: OrganizationId,
    id: ChatId,
    patch: ChatPatch,
    now: string
  ) => Effect.Effect<ChatUpdateOutcome, StorageError>
  /** The chat with this uuid. */
  readonly findById: (organizationId: OrganizationId, id: ChatId) => Effect.Effect<Option.Option<Chat>, StorageError>
  /** The chat of this contact. */
  readonly findByContact: (
    organizationId: OrganizationId,
    contactId: ContactId
  ) => Effect.Effect<Option.Option<Chat>, StorageError>
  /**
   * Up to `limit` chats matching `filters`, in `sort` order, strictly after `after` (from
   * the start when `null`): keyset pagination, whose cost does not grow with the depth.
   */
  readonly listAfter: (
    organizationId: OrganizationId,
    filters: ChatFilters,
    sort: ChatSort,
    after: ChatPosition | null,
    limit: number
  ) => Effect.Effect<ReadonlyArray<Chat>, StorageError>
  /** Offset page of the chats matching `filters` in `sort` order, with their total. */
  readonly listPage: (
    organizationId: OrganizationId,
    filters: ChatFilters,
    sort: ChatSort,
    page: PageRequest
  ) => Effect.Effect<Page<Chat>, StorageError>
  /** The message with this uuid. */
  readonly findMessage: (
    organizationId: OrganizationId,
    id: MessageId
  ) => Effect.Effect<Option.Option<Message>, StorageError>
  /** One page of a chat's messages, newest first (`created_at desc, uuid desc`); `None` without such chat. */
  readonly listMessages: (
    organizationId: OrganizationId,
    chatId: ChatId,
    page: PageRequest
  ) => Effect.Effect<Option.Option<Page<Message>>, StorageError>
  /**
   * Up to `limit` messages of the chat, newest first (`created_at desc, uuid desc`),
   * strictly after `after` (from the newest when `null`): keyset pagination, whose cost
   * does not grow with the depth. `None` when the organization has no such chat.
   */
  readonly listMessagesAfter: (
    organizationId: OrganizationId,
    chatId: ChatId,
    after: MessagePosition | null,
    limit: number
  ) => Effect.Effect<Option.Option<ReadonlyArray<Message>>, StorageError>
  /**
   * Writes many chats with their messages in one atomic step (the admin import and `seed`,
   * docs/import.md), all or nothing: when a `contactId` is not a contact of the organization →
   * `ContactsNotFound`, nothing written. Per entry:
   * - no chat for the contact yet: the chat is created with uuid `chatId`, `created_at`,
   *   the defaults of a new chat (`open`, unassigned, not favorite, `unread_count` 0)
   *   overridden by `attributes`, and every message; `last_message_at`/last message are
   *   the newest message (by `created_at`; on a tie the later one in `messages`), and
   *   `updated_at` is the latest of `created_at` and the messages' `created_at` (an
   *   imported chat was last changed by its newest event);
   * - the contact has a chat: its `uuid` and `created_at` are kept, the fields of
   *   `attributes` that differ are set, and only the messages it does not hold yet are
   *   appended — a message is already there when the chat has one with the same
   *   `direction`, `type`, `text` and `created_at` (so importing one file twice adds
   *   nothing); an added message newer than (or as new as) the last one becomes the last
   *   one; `updated_at` = `now` when anything changed;
   * - within one entry, a message equal (same four fields) to an earlier one is skipped.
   * Message records are stored as given (`status`, `provider_message_id`, timestamps).
   * Meant for large batches (`seed` passes 10 000 chats per call; SQLite writes one call
   * in one transaction with cached prepared statements); `unread_count` is never derived
   * from the messages.
   */
  readonly importChats: (
    organizationId: OrganizationId,
    request: ChatImportRequest
  ) => Effect.Effect<ChatImportOutcome, StorageError>
  /**
   * Applies a {@link MessageStatusUpdate} atomically. When the update records a
   * `provider_message_id` on an outbound message, the pending statuses of that id (kept by
   * {@link updateMessageStatusByProviderId}, not yet past their `pendingUntil` at `now`)
   * are applied in the same atomic step, in the order they arrived, each only when the
   * message's status is then one of its `from` (with its `failure`); they are deleted,
   * and the outcome's message shows their effect (`updated_at` = this update's `now`).
   */
  readonly updateMessageStatus: (
    organizationId: OrganizationId,
    id: MessageId,
    update: MessageStatusUpdate
  ) => Effect.Effect<MessageStatusOutcome, StorageError>
  /**
   * Applies a provider's status report to the organization's outbound message with this
   * `provider_message_id` ({@link ProviderStatusUpdate}), atomically. No such message →
   * the report is kept as pending until `update.pendingUntil` (`Pending`), and applied by
   * {@link updateMessageStatus} when a send records that id; pending reports past their
   * `pendingUntil` are ignored and may be deleted at any write.
   */
  readonly updateMessageStatusByProviderId: (
    organizationId: OrganizationId,
    providerMessageId: string,
    update: ProviderStatusUpdate
  ) => Effect.Effect<ProviderStatusOutcome, StorageError>
  /**
   * The `channel_uuid` of the newest inbound message (by `created_at`, then uuid) of the
   * contact's chat that has one: the channel the contact last wrote to. `None` when the
   * contact has no chat or never wrote through a channel.
   */
  readonly lastInboundChannel: (
    organizationId: OrganizationId,
    contactId: ContactId
  ) => Effect.Effect<Option.Option<string>, StorageError>
  /**
   * The newest inbound message (by `created_at`, then uuid) of the chat that is not a
   * reaction: the message a read receipt names (docs/chats.md "Read receipts"). `None` when
   * the chat has none, or the organization has no such chat.
   */
  readonly latestInboundMessage: (
    organizationId: OrganizationId,
    chatId: ChatId
  ) => Effect.Effect<Option.Option<Message>, StorageError>
  /**
   * The contact's `last_inbound_at` on the channel (written by {@link appendMessage} from
   * `ChatAppendRequest.inboundAt`): the opening instant of its latest customer service
   * window there, an ISO 8601 UTC instant. `None` when the contact (of this organization)
   * never wrote through that channel, or does not exist (docs/messaging.md "The customer
   * service window").
   */
  readonly lastInboundAt: (
    organizationId: OrganizationId,
    contactId: ContactId,
    channelId: string
  ) => Effect.Effect<Option.Option<string>, StorageError>
}

import type { Effect } from "effect"
import type { ContactId } from "../model/contacts.js"
import type { InvalidInput, RecordNotFound } from "../model/commonErrors.js"
import type { Message, MessageFailure, MessageId, MessageStatus, PENDING_STATUS_TTL_MS } from "../model/messages.js"
import type { OrganizationId } from "../model/organizations.js"
import type { Page, PageRequest } from "../model/common.js"
import type { ProviderStatusOutcome } from "../storage/ChatRepository.js"
import type { OutboxPlacement } from "../storage/OutboxRepository.js"
import type { StorageError } from "../storage/errors.js"
import type { ChatStatusUnchanged } from "../model/chatErrors.js"
import type {
  Chat,
  ChatId,
  ChatList,
  ChatListParams,
  ChatStatus,
  ChatUpdateInput,
  InboundMessageInput,
  InboundReceipt,
  MessageList,
  MessageListParams,
  OutboundAppend,
  OutboundMessageInput
} from "../model/chats.js"

/**
 * Chats and messages of an organization: what a dashboard does with its inbox
 * (docs/chats.md). One chat per contact; a chat starts `open`.
 *
 * @category services
 */
export interface ChatsService {
  /**
   * Records an inbound message (a provider webhook): finds the contact by phone (E.164; a
   * `+` and 1–20 digits libphonenumber-js calls invalid is kept as given, and a contact it
   * creates has `phone_valid: false`, docs/contacts.md "Unverified phones") or
   * creates it — never refused, not even over `contacts_limit` (docs/chats.md "The `Chats` service (programmatic API)") —
   * creates its chat when missing, appends the message (status `delivered`, any inbound
   * type of {@link InboundMessageInput}, with its `channel_uuid`), adds 1 to
   * `unread_count`, sets `last_message_at`, and reopens a `resolved` or `closed` chat
   * (`open`) — except a `reaction`, which neither counts as unread nor reopens
   * (docs/chats.md "Message types"). A `provider_message_id` already received is a
   * duplicate: nothing changes and the stored message is returned. `InvalidInput` names
   * each bad field.
   */
  readonly receiveInbound: (
    organizationId: OrganizationId,
    input: InboundMessageInput
  ) => Effect.Effect<InboundReceipt, InvalidInput | StorageError>
  /**
   * Appends an outbound message (status `queued`) to the contact's chat, created `open`
   * when missing; sets `last_message_at`; never changes the status or `unread_count`.
   * With `outbox`, the message enters the send queue in the same atomic step (claimed
   * at once, status `sending`, when `outbox.claim` allows: `OutboxPlacement`): the
   * Messaging service then makes its first attempt. The message's uuid is `input.uuid`
   * when given (a send under an Idempotency-Key), else a fresh one; when a message with
   * `input.uuid` is stored already (another attempt of that send wrote it first), it is
   * answered as stored with `duplicate: true`, nothing written. An unknown contact →
   * `RecordNotFound`.
   */
  readonly appendOutbound: (
    organizationId: OrganizationId,
    contactId: ContactId,
    input: OutboundMessageInput,
    outbox?: OutboxPlacement
  ) => Effect.Effect<OutboundAppend, InvalidInput | RecordNotFound | StorageError>
  /**
   * The contact's chat, created `open` without messages when it has none (a dashboard
   * starting a conversation; an import of chats). `created` tells which. An unknown
   * contact → `RecordNotFound`.
   */
  readonly ensure: (
    organizationId: OrganizationId,
    contactId: ContactId
  ) => Effect.Effect<{ readonly chat: Chat; readonly created: boolean }, RecordNotFound | StorageError>
  /**
   * Moves a message's status forward (`MESSAGE_STATUS_PREDECESSORS`: queued → sent →
   * delivered → read, `failed` from queued or sent); an update that would move it back is
   * ignored. `providerMessageId`, when given, is recorded. `failure` (the provider's
   * refusal, docs/messaging.md "Failure reasons") is allowed with `failed` only and
   * recorded with that status: `code` 1–255 characters, `title` non-empty, cut to 1024
   * characters. Returns the message as stored.
   */
  readonly updateMessageStatus: (
    organizationId: OrganizationId,
    id: MessageId,
    status: MessageStatus,
    providerMessageId?: string,
    failure?: MessageFailure
  ) => Effect.Effect<Message, InvalidInput | RecordNotFound | StorageError>
  /**
   * Applies a status the provider reported for the outbound message it knows as
   * `providerMessageId` (docs/whatsapp-webhooks.md "Statuses"), with the rules of
   * {@link ChatsService.updateMessageStatus} (never moves back; `failure` with `failed`
   * only, cut like there). No such message yet → the report is kept for
   * {@link PENDING_STATUS_TTL_MS} and applied when a send records that id (`Pending`);
   * then, when the report names a message (`callbackData`, Meta's echo of
   * `biz_opaque_callback_data`: an outbox message's uuid of this organization), that
   * message is settled by it (`OutboxRepository.settle`: an attempt whose outcome was
   * unknown reached Meta; docs/messaging.md "Unknown outcomes") and `Updated` answered.
   * `status` is `sent`, `delivered`, `read` or `failed` (`InvalidInput` otherwise).
   */
  readonly applyProviderStatus: (
    organizationId: OrganizationId,
    providerMessageId: string,
    status: MessageStatus,
    failure?: MessageFailure,
    callbackData?: string
  ) => Effect.Effect<ProviderStatusOutcome, InvalidInput | StorageError>
  /**
   * Sets any of `status`, `assigned_to` and `favorite` in one atomic store write
   * (`PUT /chats/{uuid}`, docs/chats.md "Inbox routes"): every field is checked first (each
   * problem an `InvalidInput` issue, nothing written), then the fields that differ are
   * written together with `updated_at`, and one `chat.updated` event when anything changed.
   * A field given its current value changes nothing and is no error; nothing given changes
   * nothing. Returns the chat as stored.
   */
  readonly update: (
    organizationId: OrganizationId,
    id: ChatId,
    changes: ChatUpdateInput
  ) => Effect.Effect<Chat, InvalidInput | RecordNotFound | StorageError>
  /**
   * Assigns the chat to a user id (trimmed, 1–255 characters, not the reserved
   * `unassigned`), or unassigns it with `null`. Idempotent.
   */
  readonly assign: (
    organizationId: OrganizationId,
    id: ChatId,
    userId: string | null
  ) => Effect.Effect<Chat, InvalidInput | RecordNotFound | StorageError>
  /**
   * Sets the status: any status to any other (docs/chats.md "Status transitions"); the
   * status the chat already has → `ChatStatusUnchanged`.
   */
  readonly setStatus: (
    organizationId: OrganizationId,
    id: ChatId,
    status: ChatStatus
  ) => Effect.Effect<Chat, InvalidInput | ChatStatusUnchanged | RecordNotFound | StorageError>
  /** Marks or unmarks the chat as favorite. Idempotent. */
  readonly setFavorite: (
    organizationId: OrganizationId,
    id: ChatId,
    favorite: boolean
  ) => Effect.Effect<Chat, InvalidInput | RecordNotFound | StorageError>
  /** Sets `unread_count` to 0. Idempotent. */
  readonly markRead: (organizationId: OrganizationId, id: ChatId) => Effect.Effect<Chat, RecordNotFound | StorageError>
  /** One chat. */
  readonly get: (organizationId: OrganizationId, id: ChatId) => Effect.Effect<Chat, RecordNotFound | StorageError>
  /** The chat of a contact; `RecordNotFound` (resource `chat`) when it has none yet. */
  readonly getByContact: (
    organizationId: OrganizationId,
    contactId: ContactId
  ) => Effect.Effect<Chat, RecordNotFound | StorageError>
  /**
   * One message of the organization, inbound or outbound, by uuid (`GET /messages/{uuid}`,
   * docs/chats.md "Inbox routes"): the record `listMessages` shows. An unknown uuid, or
   * another organization's message → `RecordNotFound` (resource `message`).
   */
  readonly getMessage: (organizationId: OrganizationId, id: MessageId) => Effect.Effect<Message, RecordNotFound | StorageError>
  /** One page of a chat's messages, newest first. */
  readonly messages: (
    organizationId: OrganizationId,
    id: ChatId,
    page: PageRequest
  ) => Effect.Effect<Page<Message>, RecordNotFound | StorageError>
  /**
   * One cursor page of a chat's messages, newest first (`created_at desc, uuid desc`;
   * `GET /chats/{uuid}/messages`, docs/chats.md): `limit` 1–100 (default 20), `cursor` the
   * `next_cursor` of the previous page. A bad parameter is an `InvalidInput` issue naming
   * it (`invalid_cursor` for a cursor of another chat); an unknown chat → `RecordNotFound`.
   */
  readonly listMessages: (
    organizationId: OrganizationId,
    id: ChatId,
    params: MessageListParams
  ) => Effect.Effect<MessageList, InvalidInput | RecordNotFound | StorageError>
  /**
   * One page of the chat list (`GET /chats`): filters, sort and both pagination modes of
   * `ChatListParams`. Every bad parameter is an `InvalidInput` issue naming it; a cursor made
   * for another sort, filters or organization is `invalid_cursor`.
   */
  readonly list: (
    organizationId: OrganizationId,
    params: ChatListParams
  ) => Effect.Effect<ChatList, InvalidInput | StorageError>
}

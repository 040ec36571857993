import { expect } from "@effect/vitest"
import { Effect, Option } from "effect"
import {
  type Chat,
  type ChatAppendRequest,
  type ChatId,
  type ChatPatch,
  type ContactId,
  type MessageId,
  type OrganizationId,
  type TransportKind,
  Storage
} from "@switchboard/core"
import * as fixtures from "./fixtures.js"

// Effectful helpers of the chat topic modules (not exported from the package).

/** Options of {@link inboundRequest} and {@link outboundRequest}. */
export interface MessageOptions {
  readonly now?: string
  readonly createdAt?: string
  readonly text?: string
  readonly providerId?: string | null
  readonly channelUuid?: string | null
  /** The message's `transport`; default: `null` inbound, outbound `whatsapp` with a channel, else `recording`. */
  readonly transport?: TransportKind | null
  readonly firstName?: string | null
  readonly lastName?: string | null
  /** The created contact's `phone_valid`; default `true`. */
  readonly phoneValid?: boolean
  /** `ChatAppendRequest.inboundAt` (inbound only): the instant the message opens its channel's customer service window at. */
  readonly inboundAt?: string
}

/**
 * The request core makes for an inbound text message from `phone` (Chats.receiveInbound):
 * contact by phone (created when missing), chat created `open`, unread + 1, a `resolved` or
 * `closed` chat reopened, deduplicated by provider id. `now` default `instant(0)`.
 */
export const inboundRequest = (phone: string, options: MessageOptions = {}): ChatAppendRequest => {
  const now = options.now ?? fixtures.instant(0)
  return {
    contact: {
      _tag: "ByPhone",
      phone,
      create: {
        uuid: fixtures.uuid() as ContactId,
        first_name: options.firstName ?? null,
        last_name: options.lastName ?? null,
        phone_valid: options.phoneValid ?? true
      }
    },
    newChat: { uuid: fixtures.uuid() as ChatId, status: "open" },
    message: message("inbound", "delivered", now, options),
    unreadIncrement: 1,
    reopen: { from: ["resolved", "closed"], to: "open" },
    dedupe: true,
    now,
    ...(options.inboundAt === undefined ? {} : { inboundAt: options.inboundAt })
  }
}

/** The request core makes for an outbound text message to a contact (Chats.appendOutbound). */
export const outboundRequest = (contactId: ContactId, options: MessageOptions = {}): ChatAppendRequest => {
  const now = options.now ?? fixtures.instant(0)
  return {
    contact: { _tag: "ById", uuid: contactId },
    newChat: { uuid: fixtures.uuid() as ChatId, status: "open" },
    message: message("outbound", "queued", now, options),
    unreadIncrement: 0,
    reopen: { from: [], to: "open" },
    dedupe: false,
    now
  }
}

const message = (
  direction: "inbound" | "outbound",
  status: "delivered" | "queued",
  now: string,
  options: MessageOptions
): ChatAppendRequest["message"] => ({
  uuid: fixtures.uuid() as MessageId,
  direction,
  type: "text",
  text: options.text ?? `${direction} at ${now}`,
  template: null,
  media: null,
  content: null,
  status,
  provider_message_id: options.providerId ?? null,
  failure: null,
  channel_uuid: options.channelUuid ?? null,
  transport:
    options.transport !== undefined
      ? options.transport
      : direction === "inbound" ? null : options.channelUuid === undefined || options.channelUuid === null ? "recording" : "whatsapp",
  attempts: 0,
  next_attempt_at: null,
  broadcast_uuid: null,
  reply_to: null,
  reactions: [],
  created_at: options.createdAt ?? now,
  updated_at: options.createdAt ?? now
})

/** Appends and expects `Appended`; returns the outcome. */
export const append = (organizationId: OrganizationId, request: ChatAppendRequest) =>
  Effect.gen(function* () {
    const { chats } = yield* Storage
    const outcome = yield* chats.appendMessage(organizationId, request)
    if (outcome._tag !== "Appended") return expect.fail(`expected Appended, got ${outcome._tag}`)
    return outcome
  })

/** An inbound message from `phone` at `minutes`; returns the chat after it. */
export const receive = (organizationId: OrganizationId, phone: string, minutes: number, options: MessageOptions = {}) =>
  Effect.map(append(organizationId, inboundRequest(phone, { now: fixtures.instant(minutes), ...options })), (outcome) => outcome.chat)

/** Updates a chat and expects it found; returns the outcome. */
export const patchChat = (organizationId: OrganizationId, id: ChatId, patch: ChatPatch, now = fixtures.instant(500)) =>
  Effect.gen(function* () {
    const { chats } = yield* Storage
    const outcome = yield* chats.update(organizationId, id, patch, now)
    if (outcome._tag !== "Updated") return expect.fail(`expected Updated, got ${outcome._tag}`)
    return outcome
  })

/** The stored chat, which must exist. */
export const chatOf = (organizationId: OrganizationId, id: ChatId) =>
  Effect.flatMap(Storage, ({ chats }) => chats.findById(organizationId, id)).pipe(
    Effect.map((found): Chat => Option.getOrThrowWith(found, () => new Error(`chat ${id} is missing`)))
  )

/** The uuids of `chats`, in order. */
export const uuidsOf = (chats: ReadonlyArray<Chat>): Array<ChatId> => chats.map((chat) => chat.uuid)

import { Effect, Option } from "effect"
import { nowIso } from "../internal/time.js"
import type { ChannelId } from "../model/channels.js"
import type { Chat, ChatId } from "../model/chats.js"
import { InvalidInput } from "../model/commonErrors.js"
import { classifyFailure } from "../model/failureClasses.js"
import type { Message, MessageFailure } from "../model/messages.js"
import type { ChatReadResult, MarkChatReadInput, ReadReceipt, ReadReceiptSkipReason } from "../model/messaging.js"
import type { OrganizationId } from "../model/organizations.js"
import { type OutboundChannel, TransportFailed, transportKindOf } from "./MessageTransport.js"
import { failureOfTransport, SendQueueSettings } from "./SendQueue.js"
import type { SendServices } from "./sendSteps.js"

// `POST /chats/{uuid}/read` (docs/chats.md "Read receipts"): the local read, then the read
// receipt of the chat's latest inbound message, sent inline (never through the send queue).

/**
 * Marks the chat read and tells the provider (`Messaging.markChatRead`, docs/chats.md
 * "Read receipts"), in this order:
 * 1. `typing` must be a boolean when given (else `InvalidInput` naming it, nothing written);
 * 2. the chat's `unread_count` becomes 0 (`RecordNotFound` without such chat): this always
 *    commits, whatever becomes of the receipt;
 * 3. the latest inbound message (by `created_at`, reactions left out) decides the receipt:
 *    none, already `read`, no provider id, no channel, its channel removed, or a transport
 *    that sends no receipts for it → `skipped` with that reason;
 * 4. else the transport's `markRead` through the message's channel, within the send
 *    timeout (`SendQueueSettings.timeoutMs`), retried once at once on a `transient` or
 *    `unknown` failure (a receipt may be repeated): `sent`, or `failed` with the failure;
 * 5. the message moves `delivered → read` unless the receipt `failed` (a later call then
 *    tries again) or it was already `read`; the chat is answered as it then is.
 */
export const markChatRead = Effect.fn("Messaging.markChatRead")(function* (
  services: SendServices,
  organizationId: OrganizationId,
  chatId: ChatId,
  input: MarkChatReadInput | undefined
) {
  const typing = input?.typing ?? false
  if (typeof typing !== "boolean") {
    return yield* new InvalidInput({ issues: [{ code: "invalid_type", field: "typing", message: "typing must be true or false" }] })
  }
  const { storage } = services
  const chat = yield* services.chats.markRead(organizationId, chatId)
  const latest = yield* storage.chats.latestInboundMessage(organizationId, chatId)
  if (Option.isNone(latest)) return answer(chat, skipped(null, "no_inbound_message"))
  const message = latest.value
  if (message.status === "read") return answer(chat, skipped(message, "already_read"))
  const receipt = yield* sendReceipt(services, organizationId, message, typing)
  if (receipt.status === "failed") return answer(chat, receipt)
  const outcome = yield* storage.chats.updateMessageStatus(organizationId, message.uuid, { status: "read", from: ["delivered"], now: yield* nowIso })
  const changed = outcome._tag === "Updated" && outcome.changed
  // The message's new status shows in the chat's last message when it is that message.
  const current = changed ? Option.getOrElse(yield* storage.chats.findById(organizationId, chatId), () => chat) : chat
  return answer(current, receipt)
})

/** The receipt of `message`, `skipped`, `sent` or `failed` (steps 3–4 of {@link markChatRead}). */
const sendReceipt = (services: SendServices, organizationId: OrganizationId, message: Message, typing: boolean) =>
  Effect.gen(function* () {
    const providerId = message.provider_message_id
    if (providerId === null) return skipped(message, "no_provider_id")
    const channelId = message.channel_uuid
    if (channelId === null) return skipped(message, "no_channel")
    const { transport } = services
    const markRead = transport.markRead
    if (markRead === undefined || transportKindOf(transport, { channel: { uuid: channelId } }) === "recording") {
      return skipped(message, "transport_unsupported")
    }
    const opened = yield* services.channels.getWithToken(organizationId, channelId as ChannelId).pipe(
      Effect.map(({ access_token, channel }): OutboundChannel | ReadReceipt => ({ uuid: channel.uuid, phone_number_id: channel.phone_number_id, access_token })),
      Effect.catchTags({
        RecordNotFound: () => Effect.succeed(skipped(message, "channel_removed")),
        SecretKeyMissing: (error) => Effect.succeed(failed(message, { code: "secret_key_not_configured", title: error.message })),
        SecretKeyMismatch: (error) => Effect.succeed(failed(message, { code: "secret_key_mismatch", title: error.message }))
      })
    )
    if ("status" in opened) return opened
    const { timeoutMs } = yield* SendQueueSettings
    const attempt = markRead(opened, providerId, { typing }).pipe(
      Effect.timeoutFail({
        duration: timeoutMs,
        onTimeout: () => new TransportFailed({ reason: `No answer within ${timeoutMs} ms`, provider_code: null, network_error: "TimeoutError" })
      })
    )
    return yield* attempt.pipe(
      Effect.catchAll((error) => (isRepeatable(error) ? attempt : Effect.fail(error))),
      Effect.as(sent(message)),
      Effect.catchAll((error) =>
        Effect.as(
          Effect.logWarning("Read receipt not sent").pipe(
            Effect.annotateLogs({ organization_id: organizationId, message_id: message.uuid, reason: error.reason })
          ),
          failed(message, failureOfTransport(error))
        )
      )
    )
  })

/** A failure worth one more attempt: `transient`, or `unknown` (a read receipt may be repeated). */
const isRepeatable = (error: TransportFailed): boolean => {
  const kind = classifyFailure(error)
  return kind === "transient" || kind === "unknown"
}

const answer = (chat: Chat, read_receipt: ReadReceipt): ChatReadResult => ({ ...chat, read_receipt })

const skipped = (message: Message | null, reason: ReadReceiptSkipReason): ReadReceipt => ({
  status: "skipped",
  message_uuid: message?.uuid ?? null,
  reason,
  failure: null
})

const sent = (message: Message): ReadReceipt => ({ status: "sent", message_uuid: message.uuid, reason: null, failure: null })

const failed = (message: Message, failure: MessageFailure): ReadReceipt => ({ status: "failed", message_uuid: message.uuid, reason: null, failure })

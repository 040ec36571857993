import { Effect } from "effect"
import { Chats, type MessageId, Messaging, type ReactInput, type ReactResult } from "@switchboard/core"
import { defineRoute, type RouteResult } from "./route.js"
import { MessageRecord } from "./schemas.js"
import { uuidOf, uuidParams } from "./shared.js"

/**
 * `GET /messages/{uuid}` (extension, docs/chats.md "Inbox routes"): one message of the
 * organization, inbound or outbound, exactly as `GET /chats/{uuid}/messages` shows it
 * (`Chats.getMessage`). An unknown uuid or another organization's message → 404
 * `not_found`; a malformed uuid → 400 naming `uuid`.
 */
export const getMessageRoute = defineRoute({
  method: "GET",
  path: "/messages/:uuid",
  tag: "Chats",
  summary: "Read a message, inbound or outbound (extension)",
  data: MessageRecord,
  params: uuidParams,
  handle: ({ auth, params }) =>
    Effect.map(
      Effect.flatMap(Chats, (chats) => chats.getMessage(auth.organization.id, uuidOf<MessageId>(params.uuid))),
      (message) => ({ message: "Message retrieved", data: message })
    )
})

/**
 * `POST /messages/{uuid}/retry` (docs/messaging.md "Retry and cancel"): a `failed`
 * outbound message goes back to `queued` with its attempts reset; 409
 * `message_not_retryable` for any other status, and for a message that failed
 * `outside_customer_service_window` while the window is still closed; data is the message.
 */
export const retryMessageRoute = defineRoute({
  method: "POST",
  path: "/messages/:uuid/retry",
  tag: "Messages",
  summary: "Send a failed message again",
  description:
    "A `failed` outbound message goes back to the send queue (`queued`, attempts reset, a new expiry): a real new " +
    "attempt. Any other status is a 409 `message_not_retryable`, as is a message that failed " +
    "`outside_customer_service_window` while the contact's customer service window is still closed; inbound and " +
    "imported messages are 404 `not_found`.",
  data: MessageRecord,
  errors: ["message_not_retryable"],
  params: uuidParams,
  handle: ({ auth, params }) =>
    Effect.map(
      Effect.flatMap(Messaging, (messaging) => messaging.retryMessage(auth.organization.id, uuidOf<MessageId>(params.uuid))),
      (message) => ({ message: "Message queued again", data: message })
    )
})

/**
 * `POST /messages/{uuid}/cancel`: a `queued` message becomes `failed` with code
 * `cancelled`; 409 `message_not_cancellable` for any other status; data is the message.
 */
export const cancelMessageRoute = defineRoute({
  method: "POST",
  path: "/messages/:uuid/cancel",
  tag: "Messages",
  summary: "Cancel a queued message",
  description:
    "A `queued` message is not sent: it becomes `failed` with `failure.code` `cancelled`. A message being sent, " +
    "sent or failed is a 409 `message_not_cancellable`; inbound and imported messages are 404 `not_found`.",
  data: MessageRecord,
  errors: ["message_not_cancellable"],
  params: uuidParams,
  handle: ({ auth, params }) =>
    Effect.map(
      Effect.flatMap(Messaging, (messaging) => messaging.cancelMessage(auth.organization.id, uuidOf<MessageId>(params.uuid))),
      (message) => ({ message: "Message cancelled", data: message })
    )
})

/** The envelope's `message` of a reaction, by the status its reaction row's first attempt left it in. */
const REACTION_MESSAGES: { readonly [S in ReactResult["reaction"]["status"]]: string } = {
  scheduled: "Reaction queued",
  queued: "Reaction queued",
  sending: "Reaction queued",
  sent: "Reaction sent",
  delivered: "Reaction sent",
  read: "Reaction sent",
  failed: "Reaction not sent: the provider did not accept it"
}

/** The envelope of a reaction: the message reacted to, the message saying whether the reaction left. */
const reactionResult = (result: ReactResult): RouteResult<ReactResult["message"]> => ({
  message: REACTION_MESSAGES[result.reaction.status],
  data: result.message
})

/**
 * `POST /messages/{uuid}/reaction` (docs/messaging.md "Reactions"): body `{emoji}`, one
 * emoji or `""` (removes the business's reaction); it leaves through the send queue like
 * `POST /send` (the `send` rate-limit bucket, an `Idempotency-Key` accepted) through the
 * message's channel. Data is the message reacted to, its `reactions` showing the business's
 * once the provider accepted it ("Reaction sent"; "Reaction queued" while it waits). 400
 * naming `emoji`; 404 for an unknown message; 409 `message_not_reactable` with its reason;
 * 400 `outside_customer_service_window` as for text.
 */
export const reactToMessageRoute = defineRoute({
  method: "POST",
  path: "/messages/:uuid/reaction",
  tag: "Messages",
  summary: "React to a message with an emoji",
  description:
    "`emoji` is one emoji (a single grapheme of Unicode's RGI_Emoji: a skin tone, a flag or a family sequence counts as " +
    "one), or `\"\"` to take the business's reaction back. The reaction goes to WhatsApp through the send queue (paced, " +
    "retried) by the message's channel, else the channel a send to its contact would use; the customer service window " +
    "applies as for text. `data` is the message reacted to: its `reactions` show the business's reaction once WhatsApp " +
    "accepted it (the envelope says \"Reaction sent\"; \"Reaction queued\" while it waits), replacing the earlier one. " +
    "A message that is itself a reaction, has no provider message id, is more than 30 days old, or has no channel to " +
    "send through is a 409 `message_not_reactable` with `reason` `not_a_message`, `no_provider_id`, `too_old` or `no_channel`.",
  data: MessageRecord,
  errors: ["invalid_input", "not_found", "message_not_reactable", "outside_customer_service_window", "secret_key_not_configured"],
  bucket: "send",
  idempotent: true,
  params: uuidParams,
  body: { emoji: { type: "string" } },
  bodyExamples: {
    react: { summary: "A thumbs up", value: { emoji: "👍" } },
    remove: { summary: "Take the reaction back", value: { emoji: "" } }
  },
  handle: ({ auth, params, body, idempotency }) =>
    Effect.map(
      Effect.flatMap(Messaging, (messaging) =>
        messaging.react(
          auth.organization.id,
          uuidOf<MessageId>(params.uuid),
          body as ReactInput,
          idempotency === undefined ? {} : { messageUuid: idempotency.resourceUuid as MessageId }
        )),
      reactionResult
    )
})

import { Effect } from "effect"
import { Chats, type MessageId, Messaging } from "@switchboard/core"
import { defineRoute } from "./route.js"
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

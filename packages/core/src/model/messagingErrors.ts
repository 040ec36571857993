import { Schema } from "effect"
import { MessageStatus } from "./messages.js"

/**
 * `POST /messages/{uuid}/retry` of a message that cannot be retried (docs/messaging.md
 * "Retry and cancel"): only a `failed` outbound message of the send queue can; `status` is
 * the message's. `window_closed` is true for a message that failed
 * `outside_customer_service_window` while the contact's customer service window on its
 * channel is still closed. HTTP 409 `message_not_retryable`.
 *
 * @category errors
 */
export class MessageNotRetryable extends Schema.TaggedError<MessageNotRetryable>()("MessageNotRetryable", {
  message_uuid: Schema.String,
  status: MessageStatus,
  window_closed: Schema.optional(Schema.Boolean)
}) {
  override get message(): string {
    return this.window_closed === true
      ? `Message ${this.message_uuid} failed outside the customer service window, which is still closed: send a template message instead`
      : `Message ${this.message_uuid} is ${this.status}: only a failed outbound message can be retried`
  }
}

/**
 * `POST /messages/{uuid}/cancel` of a message that cannot be cancelled (docs/messaging.md
 * "Retry and cancel"): only a `queued` or `scheduled` outbound message of the send queue can; `status` is
 * the message's. HTTP 409 `message_not_cancellable`.
 *
 * @category errors
 */
export class MessageNotCancellable extends Schema.TaggedError<MessageNotCancellable>()("MessageNotCancellable", {
  message_uuid: Schema.String,
  status: MessageStatus
}) {
  override get message(): string {
    return `Message ${this.message_uuid} is ${this.status}: only a queued or scheduled message can be cancelled`
  }
}

/**
 * A free-form send (`text` or `media`) through a channel to a contact whose customer
 * service window there is closed (docs/messaging.md "The customer service window"): the
 * contact never wrote through `channel_uuid` (`window_expires_at` `null`) or last did more
 * than 24 hours ago (`window_expires_at`, an ISO 8601 instant in the past). Nothing was
 * written. HTTP 400 `outside_customer_service_window`.
 *
 * @category errors
 */
export class OutsideCustomerServiceWindow extends Schema.TaggedError<OutsideCustomerServiceWindow>()(
  "OutsideCustomerServiceWindow",
  {
    channel_uuid: Schema.String,
    window_expires_at: Schema.NullOr(Schema.String)
  }
) {
  override get message(): string {
    return this.window_expires_at === null
      ? "The contact has never written to this channel: only a template message can be sent"
      : `The customer service window closed at ${this.window_expires_at}: only a template message can be sent`
  }
}

/**
 * Why a message cannot be reacted to (`POST /messages/{uuid}/reaction`, docs/messaging.md
 * "Reactions"):
 * - `no_provider_id`: it has no provider message id (imported, or not sent yet), so the
 *   provider cannot name it;
 * - `too_old`: it was created more than 30 days ago (the provider refuses older targets);
 * - `not_a_message`: it is itself a reaction;
 * - `no_channel`: there is no channel to send the reaction through (the message's, else the
 *   one a send to its contact would use).
 *
 * @category errors
 */
export const MessageNotReactableReason = Schema.Literal("no_provider_id", "too_old", "not_a_message", "no_channel")

/**
 * @category errors
 */
export type MessageNotReactableReason = typeof MessageNotReactableReason.Type

/**
 * `POST /messages/{uuid}/reaction` to a message that cannot carry one, `reason` saying why
 * ({@link MessageNotReactableReason}). Nothing was written. HTTP 409 `message_not_reactable`.
 *
 * @category errors
 */
export class MessageNotReactable extends Schema.TaggedError<MessageNotReactable>()("MessageNotReactable", {
  message_uuid: Schema.String,
  reason: MessageNotReactableReason
}) {
  override get message(): string {
    return `Message ${this.message_uuid} cannot be reacted to: ${REACTABLE_REASONS[this.reason]}`
  }
}

const REACTABLE_REASONS: { readonly [R in MessageNotReactableReason]: string } = {
  no_provider_id: "it has no provider message id",
  too_old: "it is more than 30 days old",
  not_a_message: "it is itself a reaction",
  no_channel: "there is no channel to send the reaction through"
}

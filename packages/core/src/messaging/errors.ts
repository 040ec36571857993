import { Schema } from "effect"
import { MessageStatus } from "../messages/model.js"

/**
 * `POST /messages/{uuid}/retry` of a message that cannot be retried (docs/messaging.md
 * "Retry and cancel"): only a `failed` outbound message of the send queue can; `status` is
 * the message's. HTTP 409 `message_not_retryable`.
 *
 * @category errors
 */
export class MessageNotRetryable extends Schema.TaggedError<MessageNotRetryable>()("MessageNotRetryable", {
  message_uuid: Schema.String,
  status: MessageStatus
}) {
  override get message(): string {
    return `Message ${this.message_uuid} is ${this.status}: only a failed outbound message can be retried`
  }
}

/**
 * `POST /messages/{uuid}/cancel` of a message that cannot be cancelled (docs/messaging.md
 * "Retry and cancel"): only a `queued` outbound message of the send queue can; `status` is
 * the message's. HTTP 409 `message_not_cancellable`.
 *
 * @category errors
 */
export class MessageNotCancellable extends Schema.TaggedError<MessageNotCancellable>()("MessageNotCancellable", {
  message_uuid: Schema.String,
  status: MessageStatus
}) {
  override get message(): string {
    return `Message ${this.message_uuid} is ${this.status}: only a queued message can be cancelled`
  }
}

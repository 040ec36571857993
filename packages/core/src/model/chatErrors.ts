import { Schema } from "effect"
import { ChatStatus } from "./chats.js"

/**
 * `Chats.setStatus` was asked to set the status the chat already has: a transition is
 * between two different statuses (docs/chats.md "Status
 * transitions"). HTTP 400 `chat_status_unchanged`, naming the field `status`.
 *
 * @category errors
 */
export class ChatStatusUnchanged extends Schema.TaggedError<ChatStatusUnchanged>()("ChatStatusUnchanged", {
  chat_uuid: Schema.String,
  status: ChatStatus
}) {
  override get message(): string {
    return `Chat ${this.chat_uuid} is already ${this.status}`
  }
}

import type { BroadcastRecipientWrite, OrganizationId } from "@switchboard/core"
import type { Statements } from "../internal/sql.js"
import { SQL } from "./broadcastRows.js"
import { writeAppendedMessage } from "./chats.js"

// The write of a broadcast's recipients: each a chat message like any single send.

/**
 * Appends one recipient to its contact's chat through `chats.appendMessage`'s own writes
 * (chats.ts `writeAppendedMessage`): the chat created `open` as `chat_uuid` when missing,
 * its status and unread count unchanged; a `queued` message enters the send queue as class
 * `broadcast`, due at once (no claim), a `failed` one is written without dispatch state.
 * The message's `broadcast_uuid` is the broadcast's. Nothing when the contact is gone or
 * already has a message of this broadcast.
 */
export const writeRecipient = (
  statements: Statements,
  organizationId: OrganizationId,
  broadcastId: string,
  recipient: BroadcastRecipientWrite,
  now: string
): void => {
  if (statements.prepare(SQL.hasRecipient).get(broadcastId, recipient.contact_uuid) !== undefined) return
  const message = { ...recipient.message, broadcast_uuid: broadcastId }
  writeAppendedMessage(statements, organizationId, {
    contact: { _tag: "ById", uuid: recipient.contact_uuid },
    newChat: { uuid: recipient.chat_uuid, status: "open" },
    message,
    unreadIncrement: 0,
    reopen: { from: [], to: "open" },
    dedupe: false,
    now,
    ...(message.status === "queued"
      ? { outbox: { to: recipient.to, class: "broadcast", expires_at: recipient.expires_at, claim: null } }
      : {})
  })
}

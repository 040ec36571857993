import { describe, expect, it } from "vitest"
import type { MessageId, NewMessage } from "@switchboard/core"
import { messageInChat } from "@switchboard/storage-sql"
import { shareOneHiddenClass } from "../../../vitest.hidden-class.js"

// messageInChat: the record of a message appended to a chat, built by the SQL stores for
// every appended message (each recipient of a broadcast's start among them).

const newMessage = (n: number): NewMessage => ({
  uuid: `0190f6b4-7b7e-7c4e-8a5d-${String(n).padStart(12, "0")}` as MessageId,
  direction: "outbound",
  type: "text",
  text: `hello ${n}`,
  template: null,
  media: null,
  content: null,
  status: "queued",
  provider_message_id: null,
  failure: null,
  channel_uuid: null,
  transport: null,
  attempts: 0,
  next_attempt_at: null,
  broadcast_uuid: null,
  reply_to: null,
  reactions: [],
  created_at: "2026-11-29T09:00:00.000Z",
  updated_at: "2026-11-29T09:00:00.000Z"
})

describe("messageInChat", () => {
  it("is the message with the chat's and the contact's uuids", () => {
    const message = newMessage(1)
    expect(messageInChat(message, "chat-1", "contact-1")).toEqual({ ...message, chat_uuid: "chat-1", contact_uuid: "contact-1" })
  })

  it("gives every record one hidden class (no spread adding keys: a class per record on Node 20)", () => {
    const records = Array.from({ length: 200 }, (_, n) => messageInChat(newMessage(n), `chat-${n}`, `contact-${n}`))
    expect(shareOneHiddenClass(records)).toBe(true)
  })
})

import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import {
  type ChatAppendRequest,
  type ChatId,
  type Message,
  type MessagePosition,
  type OrganizationId,
  Storage
} from "@switchboard/core"
import { append, inboundRequest, outboundRequest, receive } from "./chat-support.js"
import { claimAt, enqueue, recipient } from "./outbox-support.js"
import type { StorageContractOptions } from "./options.js"
import * as fixtures from "./fixtures.js"
import { importContact, insertChannel, insertOrganization, runner } from "./support.js"

const { instant, phone } = fixtures

/** An inbound request from `phone` whose message has the fields of `message`. */
const inboundWith = (phoneNumber: string, minutes: number, message: Partial<ChatAppendRequest["message"]>): ChatAppendRequest => {
  const base = inboundRequest(phoneNumber, { now: instant(minutes) })
  return { ...base, message: { ...base.message, ...message } }
}

/** Every message of a chat, walked with `listMessagesAfter` pages of `limit`. */
const walk = (organizationId: OrganizationId, chatId: ChatId, limit: number) =>
  Effect.gen(function* () {
    const { chats } = yield* Storage
    const pages: Array<ReadonlyArray<Message>> = []
    let after: MessagePosition | null = null
    for (let guard = 0; guard < 100; guard++) {
      const page: ReadonlyArray<Message> = Option.getOrThrow(yield* chats.listMessagesAfter(organizationId, chatId, after, limit))
      if (page.length === 0) break
      pages.push(page)
      const last: Message = page[page.length - 1]!
      after = { created_at: last.created_at, uuid: last.uuid }
    }
    return pages
  })

/** Newest first: `created_at desc, uuid desc`. */
const newestFirst = (messages: ReadonlyArray<Message>): Array<Message> =>
  [...messages].sort((a, b) =>
    a.created_at === b.created_at ? (a.uuid < b.uuid ? 1 : -1) : a.created_at < b.created_at ? 1 : -1
  )

/**
 * Contract of the message record's fields (every inbound type, `content`, `media` of
 * inbound media, `failure`, `channel_uuid`) and of a chat's keyset pages
 * (`listMessagesAfter`), docs/chats.md "Records".
 */
export const messagesContract = (options: StorageContractOptions): void => {
  const run = runner(options)

  describe("messages", () => {
    it.effect("every inbound type round-trips with its content, media, failure and channel_uuid as given; all but the reaction listed", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const channel = fixtures.uuid()
          const written: Array<Message> = []
          const kinds: ReadonlyArray<Partial<ChatAppendRequest["message"]>> = [
            { type: "image", text: "A cat", media: { type: "image", id: "media-1", mime_type: "image/jpeg", caption: "A cat" } },
            { type: "document", text: null, media: { type: "document", id: "media-2", mime_type: "application/pdf", filename: "a.pdf" } },
            { type: "sticker", text: null, media: { type: "sticker", id: "media-3", mime_type: "image/webp" } },
            { type: "location", text: null, content: { latitude: 52.37, longitude: 4.89, name: "Dam", address: "Dam 1", timestamp: "1767225600" } },
            { type: "contacts", text: null, content: { contacts: [{ name: { formatted_name: "Ada" }, phones: [{ phone: "+14155550100" }] }] } },
            { type: "interactive", text: "Yes", content: { type: "button_reply", button_reply: { id: "yes", title: "Yes" } } },
            { type: "button", text: "Stop", content: { payload: "STOP", $weird: { "dotted.key": true } } },
            { type: "reaction", text: null, content: { message_id: "wamid.1", emoji: "👍" } },
            { type: "unsupported", text: null, content: { original_type: "order", nested: [1, [2, { deep: null }]] } },
            { type: "audio", text: null, media: { type: "audio", id: "media-4", mime_type: "audio/ogg" }, channel_uuid: channel }
          ]
          for (const [n, message] of kinds.entries()) {
            written.push((yield* append(org.id, inboundWith(phone(1), n, message))).message)
          }
          for (const message of written) {
            expect(yield* chats.findMessage(org.id, message.uuid)).toEqual(Option.some(message))
          }
          expect(written.map((m) => m.type)).toEqual(kinds.map((k) => k.type))
          expect(written[9]).toMatchObject({ channel_uuid: channel, failure: null, template: null })
          const listed = Option.getOrThrow(yield* chats.listMessagesAfter(org.id, written[0]!.chat_uuid, null, 100))
          // A reaction row is kept but not listed (replies-and-reactions.ts).
          expect(listed).toEqual([...written].reverse().filter((message) => message.type !== "reaction"))
        })
      ))

    it.effect("transport round-trips as written: each kind on an outbound message, plain or through the send queue (queued, claimed), null inbound; status moves keep it", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id)
          const contactId = yield* importContact(org.id, phone(1))
          const written: Array<Message> = []
          for (const [n, transport] of (["recording", "whatsapp", "custom"] as const).entries()) {
            written.push((yield* append(org.id, outboundRequest(contactId, { now: instant(n), transport }))).message)
          }
          const to = yield* recipient(org.id, 2)
          written.push(yield* enqueue(org.id, to, { transport: "custom" }))
          written.push(yield* enqueue(org.id, to, { channel, transport: "whatsapp", at: 1, claim: "lease-1" }))
          const inbound = (yield* append(org.id, inboundRequest(phone(3), { now: instant(5), channelUuid: channel.uuid }))).message
          expect([...written, inbound].map((message) => message.transport)).toEqual(["recording", "whatsapp", "custom", "custom", "whatsapp", null])
          expect(written[4]!.status).toBe("sending")
          for (const message of [...written, inbound]) {
            expect(yield* chats.findMessage(org.id, message.uuid)).toEqual(Option.some(message))
          }
          const listed = Option.getOrThrow(yield* chats.listMessagesAfter(org.id, written[0]!.chat_uuid, null, 100))
          expect(listed.map((message) => message.transport)).toEqual(["custom", "whatsapp", "recording"])
          // The send queue's claim reads it; a status report keeps it.
          const claimed = yield* claimAt(10, { limit: 10 })
          expect(claimed.map((each) => [each.message.uuid, each.message.transport])).toEqual([[written[3]!.uuid, "custom"]])
          const moved = yield* chats.updateMessageStatus(org.id, written[1]!.uuid, { status: "read", from: ["queued"], now: instant(6) })
          expect(moved._tag === "Updated" && moved.message.transport).toBe("whatsapp")
        })
      ))

    it.effect("updateMessageStatus writes failure with the failed status only, and keeps it", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const contactId = yield* importContact(org.id, phone(1))
          const { message } = yield* append(org.id, outboundRequest(contactId))
          expect(message.failure).toBeNull()
          const failure = { code: "131047", title: "Re-engagement message" }
          const failed = yield* chats.updateMessageStatus(org.id, message.uuid, { status: "failed", from: ["queued", "sent"], failure, now: instant(1) })
          expect(failed).toEqual({ _tag: "Updated", changed: true, message: { ...message, status: "failed", failure, updated_at: instant(1) } })
          const again = yield* chats.updateMessageStatus(org.id, message.uuid, {
            status: "failed",
            from: ["queued", "sent"],
            failure: { code: "network_error", title: "other" },
            now: instant(2)
          })
          expect(again).toEqual({ ...failed, changed: false })
          expect(Option.map(yield* chats.findMessage(org.id, message.uuid), (m) => m.failure)).toEqual(Option.some(failure))

          const { message: delivered } = yield* append(org.id, outboundRequest(contactId, { now: instant(3) }))
          yield* chats.updateMessageStatus(org.id, delivered.uuid, { status: "read", from: ["queued"], now: instant(4) })
          const late = yield* chats.updateMessageStatus(org.id, delivered.uuid, { status: "failed", from: ["queued", "sent"], failure, now: instant(5) })
          expect(late._tag === "Updated" && [late.changed, late.message.status, late.message.failure]).toEqual([false, "read", null])
        })
      ))

    it.effect("listMessagesAfter pages newest first through equal created_at, with no duplicate and no gap", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const chat = yield* receive(org.id, phone(1), 1)
          const minutes = [2, 5, 5, 5, 5, 3, 5, 9, 0]
          for (const at of minutes) {
            yield* append(org.id, inboundRequest(phone(1), { now: instant(at) }))
            yield* append(org.id, outboundRequest(chat.contact.uuid, { now: instant(at) }))
          }
          yield* receive(org.id, phone(2), 5) // another chat's messages never appear
          const all = Option.getOrThrow(yield* Effect.flatMap(Storage, ({ chats }) => chats.listMessagesAfter(org.id, chat.uuid, null, 100)))
          expect(all).toHaveLength(1 + minutes.length * 2)
          expect(all).toEqual(newestFirst(all))
          for (const limit of [1, 3, 4, 19, 20]) {
            const pages = yield* walk(org.id, chat.uuid, limit)
            expect(pages.flat()).toEqual(all)
            expect(pages.slice(0, -1).every((page) => page.length === limit)).toBe(true)
          }
        })
      ))

    it.effect("a page after a position stays put when newer messages arrive", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const chat = yield* receive(org.id, phone(1), 1)
          for (const at of [2, 3, 4]) yield* receive(org.id, phone(1), at)
          const first = Option.getOrThrow(yield* chats.listMessagesAfter(org.id, chat.uuid, null, 2))
          yield* receive(org.id, phone(1), 10)
          const last = first[1]!
          const next = Option.getOrThrow(yield* chats.listMessagesAfter(org.id, chat.uuid, { created_at: last.created_at, uuid: last.uuid }, 2))
          expect(next.map((m) => m.created_at)).toEqual([instant(2), instant(1)])
        })
      ))

    it.effect("listMessagesAfter never reaches another organization's chat; an unknown chat is None", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const chat = yield* receive(other.id, phone(1), 0)
          expect(yield* chats.listMessagesAfter(org.id, chat.uuid, null, 10)).toEqual(Option.none())
          expect(yield* chats.listMessagesAfter(org.id, fixtures.uuid() as ChatId, null, 10)).toEqual(Option.none())
          expect(Option.map(yield* chats.listMessagesAfter(other.id, chat.uuid, null, 10), (m) => m.length)).toEqual(Option.some(1))
        })
      ))
  })
}

import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { type ChatId, type ContactId, Storage } from "@switchboard/core"
import { append, inboundRequest, outboundRequest } from "./chat-support.js"
import type { StorageContractOptions } from "./options.js"
import * as fixtures from "./fixtures.js"
import { importContact, insertOrganization, runner } from "./support.js"

const { instant, phone } = fixtures

/** `instant(minutes)` plus 24 hours: the end of a window opened then. */
const windowEnd = (minutes: number): string => instant(minutes + 24 * 60)

/**
 * Contract of the customer service window's data (docs/messaging.md "The customer service
 * window"): `appendMessage` with `inboundAt` writes the contact's `last_inbound_at` per
 * channel in the inbound's atomic step (the latest wins, a duplicate writes nothing),
 * `lastInboundAt` reads it, and the chat record carries `last_inbound_channel_uuid` and
 * `window_expires_at`.
 */
export const customerServiceWindowContract = (options: StorageContractOptions): void => {
  const run = runner(options)

  describe("customer service window", () => {
    it.effect("an inbound message with inboundAt opens its channel's window; the chat shows the channel and the window's end", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const channel = fixtures.uuid()
          const outcome = yield* append(org.id, inboundRequest(phone(1), { now: instant(5), channelUuid: channel, inboundAt: instant(4) }))
          const contactId = outcome.chat.contact.uuid
          expect(yield* chats.lastInboundAt(org.id, contactId, channel)).toEqual(Option.some(instant(4)))
          expect(yield* chats.lastInboundAt(org.id, contactId, fixtures.uuid())).toEqual(Option.none())
          expect([outcome.chat.last_inbound_channel_uuid, outcome.chat.window_expires_at]).toEqual([channel, windowEnd(4)])
          const found = Option.getOrThrow(yield* chats.findById(org.id, outcome.chat.uuid))
          expect([found.last_inbound_channel_uuid, found.window_expires_at]).toEqual([channel, windowEnd(4)])
          const listed = yield* chats.listAfter(org.id, {}, { by: "last_message_at", order: "desc" }, null, 10)
          expect(listed.map((chat) => [chat.last_inbound_channel_uuid, chat.window_expires_at])).toEqual([[channel, windowEnd(4)]])
          const page = yield* chats.listPage(org.id, {}, { by: "created_at", order: "asc" }, { page: 1, per_page: 10 })
          expect(page.items.map((chat) => chat.window_expires_at)).toEqual([windowEnd(4)])
        })
      ))

    it.effect("no window without inboundAt, without a channel, or for outbound messages; a new chat shows null", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const channel = fixtures.uuid()
          const plain = yield* append(org.id, inboundRequest(phone(1), { now: instant(1), channelUuid: channel }))
          const contactId = plain.chat.contact.uuid
          expect([plain.chat.last_inbound_channel_uuid, plain.chat.window_expires_at]).toEqual([null, null])
          yield* append(org.id, inboundRequest(phone(1), { now: instant(2), channelUuid: null, inboundAt: instant(2) }))
          const reply = yield* append(org.id, outboundRequest(contactId, { now: instant(3), channelUuid: channel }))
          expect([reply.chat.last_inbound_channel_uuid, reply.chat.window_expires_at]).toEqual([null, null])
          expect(yield* chats.lastInboundAt(org.id, contactId, channel)).toEqual(Option.none())
          const imported = yield* importContact(org.id, phone(2))
          const ensured = yield* chats.ensure(org.id, imported, { uuid: fixtures.uuid() as ChatId, status: "open" }, instant(4))
          expect(ensured._tag === "Ensured" && [ensured.chat.last_inbound_channel_uuid, ensured.chat.window_expires_at]).toEqual([null, null])
        })
      ))

    it.effect("per channel the latest instant wins; the chat follows the channel with the latest instant over all", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const [first, second] = [fixtures.uuid(), fixtures.uuid()]
          const { chat } = yield* append(org.id, inboundRequest(phone(1), { now: instant(10), channelUuid: first, inboundAt: instant(10) }))
          const contactId = chat.contact.uuid
          // An older instant (a late delivery of an earlier message) never moves the window back.
          const late = yield* append(org.id, inboundRequest(phone(1), { now: instant(11), channelUuid: first, inboundAt: instant(3) }))
          expect(yield* chats.lastInboundAt(org.id, contactId, first)).toEqual(Option.some(instant(10)))
          expect([late.chat.last_inbound_channel_uuid, late.chat.window_expires_at]).toEqual([first, windowEnd(10)])
          // Another channel, earlier: its own window, the chat keeps the first channel.
          const earlier = yield* append(org.id, inboundRequest(phone(1), { now: instant(12), channelUuid: second, inboundAt: instant(8) }))
          expect(yield* chats.lastInboundAt(org.id, contactId, second)).toEqual(Option.some(instant(8)))
          expect([earlier.chat.last_inbound_channel_uuid, earlier.chat.window_expires_at]).toEqual([first, windowEnd(10)])
          // Then later on the second channel: the chat moves to it.
          const later = yield* append(org.id, inboundRequest(phone(1), { now: instant(13), channelUuid: second, inboundAt: instant(13) }))
          expect([later.chat.last_inbound_channel_uuid, later.chat.window_expires_at]).toEqual([second, windowEnd(13)])
          expect(yield* chats.lastInboundAt(org.id, contactId, second)).toEqual(Option.some(instant(13)))
          expect(yield* chats.lastInboundAt(org.id, contactId, first)).toEqual(Option.some(instant(10)))
        })
      ))

    it.effect("a duplicate inbound message writes nothing to the window", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const channel = fixtures.uuid()
          const { chat } = yield* append(org.id, inboundRequest(phone(1), { now: instant(1), channelUuid: channel, providerId: "wamid.1", inboundAt: instant(1) }))
          const again = yield* chats.appendMessage(
            org.id,
            inboundRequest(phone(1), { now: instant(9), channelUuid: channel, providerId: "wamid.1", inboundAt: instant(9) })
          )
          expect(again._tag).toBe("Duplicate")
          expect(yield* chats.lastInboundAt(org.id, chat.contact.uuid, channel)).toEqual(Option.some(instant(1)))
          const found = Option.getOrThrow(yield* chats.findById(org.id, chat.uuid))
          expect(found.window_expires_at).toBe(windowEnd(1))
        })
      ))

    it.effect("None for an unknown contact, another organization's contact, or a deleted contact", () =>
      run(
        Effect.gen(function* () {
          const storage = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const channel = fixtures.uuid()
          const { chat } = yield* append(org.id, inboundRequest(phone(1), { now: instant(1), channelUuid: channel, inboundAt: instant(1) }))
          const contactId = chat.contact.uuid
          expect(yield* storage.chats.lastInboundAt(other.id, contactId, channel)).toEqual(Option.none())
          expect(yield* storage.chats.lastInboundAt(org.id, fixtures.uuid() as ContactId, channel)).toEqual(Option.none())
          expect(yield* storage.contacts.delete(org.id, contactId)).toBe(true)
          expect(yield* storage.chats.lastInboundAt(org.id, contactId, channel)).toEqual(Option.none())
          // The same phone again is a new contact that never wrote.
          const again = yield* append(org.id, inboundRequest(phone(1), { now: instant(2), channelUuid: channel }))
          expect(again.chat.window_expires_at).toBeNull()
          expect(yield* storage.chats.lastInboundAt(org.id, again.chat.contact.uuid, channel)).toEqual(Option.none())
        })
      ))
  })
}

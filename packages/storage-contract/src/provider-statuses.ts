import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import {
  type ChatId,
  type ContactId,
  MESSAGE_STATUS_PREDECESSORS,
  type Message,
  type MessageFailure,
  type MessageId,
  type MessageStatus,
  type OrganizationId,
  Storage
} from "@switchboard/core"
import { append, inboundRequest, outboundRequest } from "./chat-support.js"
import type { StorageContractOptions } from "./options.js"
import * as fixtures from "./fixtures.js"
import { importContact, insertOrganization, runner } from "./support.js"

const { instant, phone } = fixtures

/** A queued outbound message to a new contact of the organization, created at `instant(0)`. */
const queuedMessage = (organizationId: OrganizationId, contactPhone: string = phone(1)) =>
  Effect.gen(function* () {
    const contactId = yield* importContact(organizationId, contactPhone)
    return (yield* append(organizationId, outboundRequest(contactId))).message
  })

/**
 * What a send does once the provider accepted the message: `sent`, recording `providerId`.
 * Expects `Updated`; returns the outcome.
 */
const recordProviderId = (organizationId: OrganizationId, id: MessageId, providerId: string, now: string) =>
  Effect.gen(function* () {
    const { chats } = yield* Storage
    const outcome = yield* chats.updateMessageStatus(organizationId, id, {
      status: "sent",
      from: MESSAGE_STATUS_PREDECESSORS.sent,
      provider_message_id: providerId,
      now
    })
    if (outcome._tag !== "Updated") return expect.fail(`expected Updated, got ${outcome._tag}`)
    return outcome
  })

/**
 * A provider's status report for `providerId` as core makes it: `from` core's predecessors
 * of `status`, pending until `pendingUntil` (default `instant(60)`).
 */
const report = (
  organizationId: OrganizationId,
  providerId: string,
  status: MessageStatus,
  now: string,
  options: { readonly failure?: MessageFailure; readonly pendingUntil?: string } = {}
) =>
  Effect.flatMap(Storage, ({ chats }) =>
    chats.updateMessageStatusByProviderId(organizationId, providerId, {
      status,
      from: MESSAGE_STATUS_PREDECESSORS[status],
      failure: options.failure,
      now,
      pendingUntil: options.pendingUntil ?? instant(60)
    })
  )

/** The stored message, which must exist. */
const messageOf = (organizationId: OrganizationId, id: MessageId) =>
  Effect.flatMap(Storage, ({ chats }) => chats.findMessage(organizationId, id)).pipe(
    Effect.map((found): Message => Option.getOrThrowWith(found, () => new Error(`message ${id} is missing`)))
  )

const failure: MessageFailure = { code: "131047", title: "Re-engagement message" }

/**
 * Contract of the provider's status reports (`updateMessageStatusByProviderId`, the
 * pending reports `updateMessageStatus` applies when it records their provider id), of
 * `lastInboundChannel` (docs/whatsapp-webhooks.md "Statuses") and of `latestInboundMessage`
 * (docs/chats.md "Read receipts").
 */
export const providerStatusesContract = (options: StorageContractOptions): void => {
  const run = runner(options)

  describe("provider status reports", () => {
    it.effect("a report applies to the outbound message with that provider id, never moving it back", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const message = yield* queuedMessage(org.id)
          yield* recordProviderId(org.id, message.uuid, "wamid.1", instant(1))
          const read: Message = { ...message, status: "read", provider_message_id: "wamid.1", updated_at: instant(2) }
          expect(yield* report(org.id, "wamid.1", "read", instant(2))).toEqual({ _tag: "Updated", message: read, changed: true })
          expect(yield* report(org.id, "wamid.1", "delivered", instant(3))).toEqual({ _tag: "Updated", message: read, changed: false })
          expect(yield* messageOf(org.id, message.uuid)).toEqual(read)
        })
      ))

    it.effect("a failed report writes its failure from sent; after delivered it changes nothing", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const message = yield* queuedMessage(org.id)
          yield* recordProviderId(org.id, message.uuid, "wamid.1", instant(1))
          const failed: Message = { ...message, status: "failed", provider_message_id: "wamid.1", failure, updated_at: instant(2) }
          expect(yield* report(org.id, "wamid.1", "failed", instant(2), { failure })).toEqual({ _tag: "Updated", message: failed, changed: true })
          expect(yield* messageOf(org.id, message.uuid)).toEqual(failed)

          const other = yield* queuedMessage(org.id, phone(2))
          yield* recordProviderId(org.id, other.uuid, "wamid.2", instant(1))
          yield* report(org.id, "wamid.2", "delivered", instant(2))
          const late = yield* report(org.id, "wamid.2", "failed", instant(3), { failure })
          expect(late._tag === "Updated" && [late.changed, late.message.status, late.message.failure]).toEqual([false, "delivered", null])
        })
      ))

    it.effect("a report for a provider id no outbound message of the organization has is Pending, nothing changed", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const message = yield* queuedMessage(org.id)
          const { message: sent } = yield* recordProviderId(org.id, message.uuid, "wamid.1", instant(1))
          const inbound = (yield* append(org.id, inboundRequest(phone(2), { providerId: "wamid.2" }))).message
          expect(yield* report(org.id, "wamid.9", "read", instant(2))).toEqual({ _tag: "Pending" })
          expect(yield* report(other.id, "wamid.1", "read", instant(2))).toEqual({ _tag: "Pending" })
          expect(yield* report(org.id, "wamid.2", "read", instant(2))).toEqual({ _tag: "Pending" })
          expect(yield* messageOf(org.id, message.uuid)).toEqual(sent)
          expect(yield* messageOf(org.id, inbound.uuid)).toEqual(inbound)
        })
      ))

    it.effect("pending reports are applied when a send records their provider id, whatever their order, then deleted", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const orders: ReadonlyArray<ReadonlyArray<MessageStatus>> = [["delivered", "read"], ["read", "delivered"]]
          for (const [n, order] of orders.entries()) {
            const providerId = `wamid.${n}`
            const message = yield* queuedMessage(org.id, phone(n))
            for (const [minute, status] of order.entries()) {
              expect(yield* report(org.id, providerId, status, instant(1 + minute))).toEqual({ _tag: "Pending" })
            }
            // Applied by the send's write: updated_at is its time, never an earlier report's.
            const expected: Message = { ...message, status: "read", provider_message_id: providerId, updated_at: instant(5) }
            expect(yield* recordProviderId(org.id, message.uuid, providerId, instant(5))).toEqual({ _tag: "Updated", message: expected, changed: true })
            expect(yield* messageOf(org.id, message.uuid)).toEqual(expected)
            // Applied once: a later message recording the same provider id finds none left.
            const later = yield* queuedMessage(org.id, phone(10 + n))
            expect((yield* recordProviderId(org.id, later.uuid, providerId, instant(6))).message.status).toBe("sent")
          }
        })
      ))

    it.effect("a pending failed report takes effect with its failure, at the time of the send's write", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const message = yield* queuedMessage(org.id)
          yield* report(org.id, "wamid.1", "failed", instant(2), { failure })
          const failed: Message = { ...message, status: "failed", provider_message_id: "wamid.1", failure, updated_at: instant(5) }
          expect(yield* recordProviderId(org.id, message.uuid, "wamid.1", instant(5))).toEqual({ _tag: "Updated", message: failed, changed: true })
          expect(yield* messageOf(org.id, message.uuid)).toEqual(failed)
        })
      ))

    it.effect("a pending report past its pendingUntil is not applied; one still pending survives other reports' writes", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const expired = yield* queuedMessage(org.id, phone(1))
          const live = yield* queuedMessage(org.id, phone(2))
          yield* report(org.id, "wamid.1", "delivered", instant(1), { pendingUntil: instant(5) })
          yield* report(org.id, "wamid.2", "delivered", instant(1), { pendingUntil: instant(6) })
          expect((yield* recordProviderId(org.id, expired.uuid, "wamid.1", instant(5))).message.status).toBe("sent")
          expect((yield* recordProviderId(org.id, live.uuid, "wamid.2", instant(5))).message.status).toBe("delivered")
          expect((yield* messageOf(org.id, expired.uuid)).status).toBe("sent")

          const later = yield* queuedMessage(org.id, phone(3))
          yield* report(org.id, "wamid.3", "delivered", instant(1), { pendingUntil: instant(8) })
          yield* report(org.id, "wamid.4", "read", instant(7)) // a later write, free to delete expired reports
          expect((yield* recordProviderId(org.id, later.uuid, "wamid.3", instant(7))).message.status).toBe("delivered")
        })
      ))

    it.effect("pending reports of another organization, or recorded on an inbound message, are not applied", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          yield* report(org.id, "wamid.1", "delivered", instant(1))
          const theirs = yield* queuedMessage(other.id)
          expect((yield* recordProviderId(other.id, theirs.uuid, "wamid.1", instant(2))).message.status).toBe("sent")

          yield* report(org.id, "wamid.2", "read", instant(1))
          const inbound = (yield* append(org.id, inboundRequest(phone(5)))).message
          const { chats } = yield* Storage
          const recordedInbound = yield* chats.updateMessageStatus(org.id, inbound.uuid, { status: "delivered", from: [], provider_message_id: "wamid.2", now: instant(2) })
          expect(recordedInbound._tag === "Updated" && recordedInbound.message.status).toBe("delivered")

          // Both reports are still pending for the organization's own outbound messages.
          const first = yield* queuedMessage(org.id, phone(1))
          const second = yield* queuedMessage(org.id, phone(2))
          expect((yield* recordProviderId(org.id, first.uuid, "wamid.1", instant(3))).message.status).toBe("delivered")
          expect((yield* recordProviderId(org.id, second.uuid, "wamid.2", instant(3))).message.status).toBe("read")
        })
      ))
  })

  describe("lastInboundChannel", () => {
    it.effect("None for a contact without a chat, an unknown contact, or another organization's contact", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const contactId = yield* importContact(org.id, phone(1))
          expect(yield* chats.lastInboundChannel(org.id, contactId)).toEqual(Option.none())
          expect(yield* chats.lastInboundChannel(org.id, fixtures.uuid() as ContactId)).toEqual(Option.none())
          const chat = (yield* append(org.id, inboundRequest(phone(2), { channelUuid: fixtures.uuid() }))).chat
          expect(yield* chats.lastInboundChannel(other.id, chat.contact.uuid)).toEqual(Option.none())
        })
      ))

    it.effect("the channel of the newest inbound message that has one; outbound and channel-less inbound messages are ignored", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const [older, newest, tiedLower, tiedHigher, outbound] = [fixtures.uuid(), fixtures.uuid(), fixtures.uuid(), fixtures.uuid(), fixtures.uuid()]
          const { chat } = yield* append(org.id, inboundRequest(phone(1), { now: instant(1), channelUuid: older }))
          const contactId = chat.contact.uuid
          expect(yield* chats.lastInboundChannel(org.id, contactId)).toEqual(Option.some(older))
          yield* append(org.id, inboundRequest(phone(1), { now: instant(3), channelUuid: newest }))
          yield* append(org.id, inboundRequest(phone(1), { now: instant(2), channelUuid: fixtures.uuid() }))
          yield* append(org.id, inboundRequest(phone(1), { now: instant(4), channelUuid: null }))
          yield* append(org.id, outboundRequest(contactId, { now: instant(5), channelUuid: outbound }))
          expect(yield* chats.lastInboundChannel(org.id, contactId)).toEqual(Option.some(newest))
          // As new as another: the larger uuid is the newer, whatever the order of arrival.
          const lower = inboundRequest(phone(1), { now: instant(6), channelUuid: tiedLower })
          const higher = inboundRequest(phone(1), { now: instant(6), channelUuid: tiedHigher })
          yield* append(org.id, higher)
          yield* append(org.id, lower)
          expect(yield* chats.lastInboundChannel(org.id, contactId)).toEqual(Option.some(tiedHigher))
          const onlyOutbound = yield* importContact(org.id, phone(2))
          yield* append(org.id, outboundRequest(onlyOutbound, { channelUuid: outbound }))
          expect(yield* chats.lastInboundChannel(org.id, onlyOutbound)).toEqual(Option.none())
        })
      ))
  })

  describe("latestInboundMessage", () => {
    it.effect("the newest inbound message of the chat by created_at then uuid; outbound messages and reactions are left out", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const first = yield* append(org.id, inboundRequest(phone(1), { now: instant(1), providerId: "wamid.1" }))
          const chatId = first.chat.uuid
          expect((yield* chats.latestInboundMessage(org.id, chatId)).pipe(Option.map((message) => message.uuid))).toEqual(Option.some(first.message.uuid))
          const newest = yield* append(org.id, inboundRequest(phone(1), { now: instant(3), providerId: "wamid.3" }))
          yield* append(org.id, inboundRequest(phone(1), { now: instant(2), providerId: "wamid.2" }))
          yield* append(org.id, outboundRequest(first.chat.contact.uuid, { now: instant(5) }))
          const reaction = inboundRequest(phone(1), { now: instant(6), providerId: "wamid.reaction" })
          yield* append(org.id, {
            ...reaction,
            message: { ...reaction.message, type: "reaction", text: "👍", content: { reaction: { message_id: "wamid.3", emoji: "👍" } } },
            unreadIncrement: 0
          })
          const latest = yield* chats.latestInboundMessage(org.id, chatId)
          expect(Option.getOrThrow(latest)).toMatchObject({ uuid: newest.message.uuid, direction: "inbound", provider_message_id: "wamid.3", status: "delivered" })
          // As new as another: the larger uuid is the newer.
          const a = inboundRequest(phone(1), { now: instant(7), providerId: "wamid.7a" })
          const b = inboundRequest(phone(1), { now: instant(7), providerId: "wamid.7b" })
          yield* append(org.id, a)
          yield* append(org.id, b)
          const higher = a.message.uuid > b.message.uuid ? a.message.uuid : b.message.uuid
          expect(Option.getOrThrow(yield* chats.latestInboundMessage(org.id, chatId)).uuid).toBe(higher)
        })
      ))

    it.effect("None for a chat with only outbound messages, an unknown chat, or another organization's chat", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const contactId = yield* importContact(org.id, phone(1))
          const outbound = yield* append(org.id, outboundRequest(contactId))
          expect(yield* chats.latestInboundMessage(org.id, outbound.chat.uuid)).toEqual(Option.none())
          expect(yield* chats.latestInboundMessage(org.id, fixtures.uuid() as ChatId)).toEqual(Option.none())
          const inbound = yield* append(org.id, inboundRequest(phone(2)))
          expect(yield* chats.latestInboundMessage(other.id, inbound.chat.uuid)).toEqual(Option.none())
        })
      ))
  })
}

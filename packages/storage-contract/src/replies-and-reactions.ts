import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { CHANNEL_REMOVED_FAILURE, type ChatAppendRequest, type ContactId, type Message, type OrganizationId, Storage } from "@switchboard/core"
import { append, inboundRequest, outboundRequest } from "./chat-support.js"
import type { StorageContractOptions } from "./options.js"
import * as fixtures from "./fixtures.js"
import { importContact, insertChannel, insertOrganization, runner } from "./support.js"
import { addEndpoint, outbox } from "./webhook-support.js"
import { addOutboxEndpoint, at, enqueue, messageOf, placement, recipient, recorded, sent, writtenEvents } from "./outbox-support.js"

const { instant, phone } = fixtures

/** An inbound text from `phoneNumber` at `minutes` with provider id `providerId`, replying to `replyTo` when given. */
const inboundText = (phoneNumber: string, minutes: number, providerId: string, replyTo?: string): ChatAppendRequest => ({
  ...inboundRequest(phoneNumber, { now: instant(minutes), providerId }),
  ...(replyTo === undefined ? {} : { replyTo })
})

/** An inbound reaction from `phoneNumber` at `minutes` to the message with provider id `target`, as core builds it. */
const inboundReaction = (phoneNumber: string, minutes: number, providerId: string, target: string, emoji: string): ChatAppendRequest => {
  const base = inboundRequest(phoneNumber, { now: instant(minutes), providerId })
  return {
    ...base,
    message: { ...base.message, type: "reaction", text: emoji === "" ? null : emoji, content: { reaction: { message_id: target, emoji } } },
    unreadIncrement: 0,
    reopen: { from: [], to: "open" },
    reaction: { message_id: target, emoji, at: instant(minutes) }
  }
}

/** An outbound message to a new contact of `phoneNumber` whose provider id is `providerId`; returns it. */
const outboundWithProviderId = (organizationId: OrganizationId, phoneNumber: string, providerId: string, minutes = 0) =>
  Effect.gen(function* () {
    const contact = yield* importContact(organizationId, phoneNumber)
    return (yield* append(organizationId, outboundRequest(contact, { now: instant(minutes), providerId }))).message
  })

/**
 * The business's reaction row to `target` (its provider id `targetProviderId`) for
 * `to`, as `Messaging.react` appends it: outbound, type `reaction`, claimed at once under
 * `lease`, created at `ms` after the send queue's origin; returns it as stored.
 */
const businessReaction = (
  organizationId: OrganizationId,
  to: { readonly id: ContactId; readonly phone: string },
  target: Message,
  emoji: string,
  lease: string,
  ms: number
) =>
  Effect.gen(function* () {
    const request = outboundRequest(to.id, { now: at(ms) })
    const content = { reaction: { message_id: target.provider_message_id, emoji, target_uuid: target.uuid } }
    const message = { ...request.message, type: "reaction" as const, text: null, content }
    return (yield* append(organizationId, { ...request, message, outbox: placement(to, { at: ms, claim: { bypass: lease } }) })).message
  })

/** The stored message, which must exist. */
const stored = (organizationId: OrganizationId, message: Pick<Message, "uuid">) =>
  Effect.flatMap(Storage, ({ chats }) => chats.findMessage(organizationId, message.uuid)).pipe(Effect.map(Option.getOrThrow))

/**
 * Contract of replies and reactions (docs/messaging.md "Reactions", docs/chats.md
 * "Records"): `ChatAppendRequest.replyTo` resolved to `reply_to` in the append's step
 * (outbound first, then inbound, never another organization's); `ChatAppendRequest.reaction`
 * folded into its target with `message.reactions_updated` instead of `message.received`;
 * reaction rows never listed, counted, last, unread, nor moving their chat.
 */
export const repliesAndReactionsContract = (options: StorageContractOptions): void => {
  const run = runner(options)

  describe("replies and reactions", () => {
    it.effect("reply_to: the outbound message with the context's provider id, else the inbound one, else null; never another organization's", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const ours = yield* outboundWithProviderId(org.id, phone(1), "wamid.ours")
          yield* outboundWithProviderId(other.id, phone(1), "wamid.theirs")
          const first = (yield* append(org.id, inboundText(phone(1), 1, "wamid.in.1"))).message
          // The same provider id on an inbound and an outbound message: the outbound one wins.
          const twin = (yield* append(org.id, inboundText(phone(2), 2, "wamid.ours"))).message
          const toOutbound = (yield* append(org.id, inboundText(phone(1), 3, "wamid.in.2", "wamid.ours"))).message
          const toInbound = (yield* append(org.id, inboundText(phone(1), 4, "wamid.in.3", "wamid.in.1"))).message
          const unknown = (yield* append(org.id, inboundText(phone(1), 5, "wamid.in.4", "wamid.nobody"))).message
          const elsewhere = (yield* append(org.id, inboundText(phone(1), 6, "wamid.in.5", "wamid.theirs"))).message
          expect(twin.reply_to).toBeNull()
          expect(first.reply_to).toBeNull()
          expect(toOutbound.reply_to).toBe(ours.uuid)
          expect(toInbound.reply_to).toBe(first.uuid)
          expect(unknown.reply_to).toBeNull()
          expect(elsewhere.reply_to).toBeNull()
          for (const message of [toOutbound, toInbound, unknown, elsewhere]) expect(yield* stored(org.id, message)).toEqual(message)
        })
      ))

    it.effect("reply_to is written once: a message stored later with that provider id does not change it; a duplicate writes nothing", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const early = (yield* append(org.id, inboundText(phone(1), 1, "wamid.in.1", "wamid.later"))).message
          yield* outboundWithProviderId(org.id, phone(2), "wamid.later", 2)
          expect((yield* stored(org.id, early)).reply_to).toBeNull()
          const again = yield* chats.appendMessage(org.id, inboundText(phone(1), 3, "wamid.in.1", "wamid.later"))
          expect(again._tag).toBe("Duplicate")
          expect((yield* stored(org.id, early)).reply_to).toBeNull()
        })
      ))

    it.effect("an inbound reaction folds into its target (replaced by the next, removed by an empty emoji) with message.reactions_updated, never message.received", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const target = yield* outboundWithProviderId(org.id, phone(1), "wamid.out.1")
          yield* addEndpoint(org.id)
          const reaction = (yield* append(org.id, inboundReaction(phone(1), 2, "wamid.r.1", "wamid.out.1", "👍"))).message
          expect(reaction).toMatchObject({ type: "reaction", reply_to: null, reactions: [] })
          const afterFirst = yield* stored(org.id, target)
          expect(afterFirst).toEqual({ ...target, reactions: [{ emoji: "👍", by: "contact", at: instant(2) }], updated_at: instant(2) })
          yield* append(org.id, inboundReaction(phone(1), 3, "wamid.r.2", "wamid.out.1", "❤️"))
          const afterSecond = yield* stored(org.id, target)
          expect(afterSecond.reactions).toEqual([{ emoji: "❤️", by: "contact", at: instant(3) }])
          yield* append(org.id, inboundReaction(phone(1), 4, "wamid.r.3", "wamid.out.1", ""))
          const afterRemoval = yield* stored(org.id, target)
          expect(afterRemoval).toEqual({ ...target, reactions: [], updated_at: instant(4) })
          const events = yield* outbox()
          expect(events.map((event) => event.type)).toEqual([
            "message.reactions_updated",
            "message.reactions_updated",
            "message.reactions_updated"
          ])
          expect(events.map((event) => event.event.data).sort((a, b) => (String((a as Message).updated_at) < String((b as Message).updated_at) ? -1 : 1)))
            .toEqual([afterFirst, afterSecond, afterRemoval])
        })
      ))

    it.effect("a reaction row is never listed, counted, the chat's last message, unread, nor moves the chat; its row stays findable", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const inbound = yield* append(org.id, inboundText(phone(1), 1, "wamid.in.1"))
          const before = inbound.chat
          const reacted = yield* append(org.id, inboundReaction(phone(1), 5, "wamid.r.1", "wamid.in.1", "🙏"))
          const unknownTarget = yield* append(org.id, inboundReaction(phone(1), 6, "wamid.r.2", "wamid.nobody", "🙏"))
          const chat = Option.getOrThrow(yield* chats.findById(org.id, before.uuid))
          expect(chat).toEqual(before)
          expect(reacted.chat).toEqual(before)
          const page = Option.getOrThrow(yield* chats.listMessages(org.id, before.uuid, { page: 1, per_page: 50 }))
          expect(page).toEqual({ items: [{ ...inbound.message, reactions: [{ emoji: "🙏", by: "contact", at: instant(5) }], updated_at: instant(5) }], total: 1 })
          const keyset = Option.getOrThrow(yield* chats.listMessagesAfter(org.id, before.uuid, null, 50))
          expect(keyset.map((message) => message.uuid)).toEqual([inbound.message.uuid])
          expect(yield* stored(org.id, reacted.message)).toEqual(reacted.message)
          expect(yield* stored(org.id, unknownTarget.message)).toEqual(unknownTarget.message)
        })
      ))

    it.effect(`recorded by recordSent${options.recordSent === true ? "" : " (this store has none: by record)"}, the business's reaction folds into its target and answers sent`, () =>
      run(
        Effect.gen(function* () {
          const { outbox: sendQueue } = yield* Storage
          const org = yield* insertOrganization()
          const to = yield* recipient(org.id, 1)
          const target = (yield* append(org.id, inboundRequest(to.phone, { now: at(0), providerId: "wamid.in.1" }))).message
          // Subscribed to the reaction's event only: no message.status_updated subscriber makes the store read the row.
          yield* addEndpoint(org.id, { events: ["message.reactions_updated"] })
          const reaction = yield* businessReaction(org.id, to, target, "👍", "lease-r1", 1_000)
          const outcome = { _tag: "Sent", provider_message_id: "wamid.r.1", attempts: 1 } as const
          const status = sendQueue.recordSent === undefined
            ? Option.map(yield* sendQueue.record(reaction.uuid, "lease-r1", outcome, at(2_000)), (message) => message.status)
            : yield* Effect.promise(() => sendQueue.recordSent!(reaction.uuid, "lease-r1", outcome, at(2_000)))
          expect(status).toEqual(Option.some("sent"))
          const reacted = yield* stored(org.id, target)
          expect(reacted).toEqual({ ...target, reactions: [{ emoji: "👍", by: "business", at: at(2_000) }], updated_at: at(2_000) })
          const events = yield* outbox()
          expect(events.map((event) => event.type)).toEqual(["message.reactions_updated"])
          expect(events[0]!.event.data).toEqual(reacted)
        })
      ))

    it.effect("the business's reaction row recorded Sent folds into its target (\"\" removes it) with message.reactions_updated; Failed changes nothing; no status events", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const to = yield* recipient(org.id, 1)
          const target = (yield* append(org.id, inboundRequest(to.phone, { now: at(0), providerId: "wamid.in.1" }))).message
          yield* addEndpoint(org.id, { events: ["message.received", "message.status_updated", "message.reactions_updated"] })
          const first = yield* businessReaction(org.id, to, target, "👍", "lease-r1", 1_000)
          expect(first.status).toBe("sending")
          yield* recorded(2_000, { message: first, lease: "lease-r1" }, sent("wamid.r.1"))
          const reacted = yield* stored(org.id, target)
          expect(reacted).toEqual({ ...target, reactions: [{ emoji: "👍", by: "business", at: at(2_000) }], updated_at: at(2_000) })
          const events = yield* outbox()
          expect(events.map((event) => event.type)).toEqual(["message.reactions_updated"])
          expect(events[0]!.event.data).toEqual(reacted)
          // A failed reaction changes nothing and announces nothing.
          const failed = yield* businessReaction(org.id, to, target, "🎉", "lease-r2", 3_000)
          yield* recorded(4_000, { message: failed, lease: "lease-r2" }, { _tag: "Failed", failure: { code: "131009", title: "Parameter value is not valid" }, attempts: 1 })
          expect(yield* stored(org.id, target)).toEqual(reacted)
          expect(yield* outbox()).toEqual([])
          // A later one replaces it; "" removes it.
          const second = yield* businessReaction(org.id, to, target, "🎉", "lease-r3", 5_000)
          yield* recorded(6_000, { message: second, lease: "lease-r3" }, sent("wamid.r.3"))
          expect((yield* stored(org.id, target)).reactions).toEqual([{ emoji: "🎉", by: "business", at: at(6_000) }])
          const removal = yield* businessReaction(org.id, to, target, "", "lease-r4", 7_000)
          yield* recorded(8_000, { message: removal, lease: "lease-r4" }, sent("wamid.r.4"))
          expect(yield* stored(org.id, target)).toEqual({ ...target, reactions: [], updated_at: at(8_000) })
          expect((yield* outbox()).map((event) => event.type)).toEqual(["message.reactions_updated", "message.reactions_updated"])
          // Meta's statuses of a reaction move its row and announce nothing.
          const { chats: statusChats } = yield* Storage
          for (const status of ["delivered", "read"] as const) {
            yield* statusChats.updateMessageStatusByProviderId(org.id, "wamid.r.4", {
              status,
              from: ["sent", "delivered"],
              now: at(9_000),
              pendingUntil: at(99_000)
            })
          }
          expect((yield* stored(org.id, removal)).status).toBe("read")
          expect(yield* outbox()).toEqual([])
          // The reaction rows are recorded as any send, but never listed.
          const { chats } = yield* Storage
          const page = Option.getOrThrow(yield* chats.listMessages(org.id, target.chat_uuid, { page: 1, per_page: 50 }))
          expect(page.items.map((message) => message.uuid)).toEqual([target.uuid])
        })
      ))

    it.effect("a deleted channel fails its waiting reaction rows channel_removed without announcing them; its other messages are announced", () =>
      run(
        Effect.gen(function* () {
          const { channels } = yield* Storage
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id)
          const to = yield* recipient(org.id, 1)
          const target = (yield* append(org.id, inboundRequest(to.phone, { now: at(0), providerId: "wamid.in.1" }))).message
          const request = outboundRequest(to.id, { now: at(1_000), channelUuid: channel.uuid })
          const content = { reaction: { message_id: target.provider_message_id, emoji: "👍", target_uuid: target.uuid } }
          const reaction = (yield* append(org.id, {
            ...request,
            message: { ...request.message, type: "reaction" as const, text: null, content },
            outbox: placement(to, { at: 1_000 })
          })).message
          const text = yield* enqueue(org.id, yield* recipient(org.id, 2), { channel, at: 1_000 })
          expect([reaction.status, text.status]).toEqual(["queued", "queued"])
          yield* addOutboxEndpoint(org.id)
          expect(yield* channels.delete(org.id, channel.uuid)).toBe(true)
          expect(yield* messageOf(org.id, reaction.uuid)).toMatchObject({ status: "failed", failure: CHANNEL_REMOVED_FAILURE })
          const failedText = yield* messageOf(org.id, text.uuid)
          expect(failedText).toMatchObject({ status: "failed", failure: CHANNEL_REMOVED_FAILURE })
          expect(yield* writtenEvents()).toEqual([{ type: "message.status_updated", data: failedText }])
          expect(yield* stored(org.id, target)).toEqual(target)
        })
      ))

    it.effect("a reaction to an unknown message is kept hidden, with no event; one older than the party's stored reaction changes nothing", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          yield* addEndpoint(org.id, { events: ["message.received", "message.reactions_updated"] })
          yield* append(org.id, inboundReaction(phone(1), 1, "wamid.r.1", "wamid.nobody", "👍"))
          expect(yield* outbox()).toEqual([])
          const target = yield* outboundWithProviderId(org.id, phone(2), "wamid.out.1")
          yield* append(org.id, inboundReaction(phone(2), 9, "wamid.r.2", "wamid.out.1", "👍"))
          yield* append(org.id, inboundReaction(phone(2), 3, "wamid.r.3", "wamid.out.1", "😮"))
          expect((yield* stored(org.id, target)).reactions).toEqual([{ emoji: "👍", by: "contact", at: instant(9) }])
          expect((yield* outbox()).map((event) => event.type)).toEqual(["message.reactions_updated"])
        })
      ))
  })
}

import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import {
  Chats,
  Contacts,
  Core,
  Idempotency,
  type IdempotencyClaimOutcome,
  MemoryStorage,
  type MessageId,
  Messaging,
  MessageTransport,
  type OrganizationId,
  Organizations,
  type OutboundMessage,
  Templates
} from "@switchboard/core"

// Idempotency over the send queue (docs/messaging.md "Idempotency-Key"): the key's record
// holds the uuid of the message its request creates; a claim whose process died is taken
// over after the 60 s lock with that same uuid, and the send with it answers the message
// the first attempt created, as it now stands, instead of sending again.

/** A transport that records every message it is given and accepts it. */
const makeTestTransport = () => {
  const sent: Array<OutboundMessage> = []
  const layer = Layer.succeed(MessageTransport, {
    send: (message) =>
      Effect.sync(() => {
        sent.push(message)
        return { provider_message_id: `wamid.${sent.length}`, status: "sent" as const }
      })
  })
  return { sent, layer }
}

/** Runs `body` with a fresh memory store and Core on a fresh test transport, and that transport's record. */
const withTransport = <A, E>(
  body: (sent: ReadonlyArray<OutboundMessage>) => Effect.Effect<A, E, Layer.Layer.Success<typeof Core.layer>>
) =>
  Effect.suspend(() => {
    const transport = makeTestTransport()
    return body(transport.sent).pipe(Effect.provide(Core.layerWithTransport(transport.layer).pipe(Layer.provide(MemoryStorage.layer))))
  })

const PHONE = "+14155550100"
const KEY = "order-42-shipped"
const FINGERPRINT = "POST /send {phone, message}"

/** The uuid a claim holds; fails the test unless it is `Claimed` with `takeover`. */
const claimedUuid = (outcome: IdempotencyClaimOutcome, takeover: boolean): MessageId => {
  if (outcome._tag !== "Claimed") return expect.fail(`expected Claimed, got ${outcome._tag}`)
  expect(outcome.takeover).toBe(takeover)
  return outcome.resourceUuid as MessageId
}

const newOrganization = Effect.flatMap(Organizations, (organizations) => organizations.create({ name: "Acme" }))

/** The messages of the organization's only chat, newest first. */
const messagesOfOnlyChat = (orgId: OrganizationId) =>
  Effect.gen(function* () {
    const chats = yield* Chats
    const { chats: list } = yield* chats.list(orgId, { pagination: true, per_page: 100 })
    expect(list).toHaveLength(1)
    return (yield* chats.messages(orgId, list[0]!.uuid, { page: 1, per_page: 100 })).items
  })

describe("a send under an Idempotency-Key whose process died", () => {
  it.effect("is taken over after the 60 s lock with the first uuid, and answers the first message as it now stands: one message, one transport request", () =>
    withTransport((sent) =>
      Effect.gen(function* () {
        const idempotency = yield* Idempotency
        const messaging = yield* Messaging
        const org = yield* newOrganization
        const body = { phone: PHONE, message: "Your order shipped" }

        const uuid = claimedUuid(yield* idempotency.claim(org.id, KEY, FINGERPRINT), false)
        const first = yield* messaging.sendText(org.id, body, { messageUuid: uuid })
        expect(first).toMatchObject({ message_id: uuid, status: "sent", provider_message_id: "wamid.1" })
        // The process dies here: the key is neither completed nor released.

        yield* TestClock.adjust("59 seconds")
        expect((yield* idempotency.claim(org.id, KEY, FINGERPRINT))._tag).toBe("InProgress")
        yield* TestClock.adjust("2 seconds")
        const takenOver = claimedUuid(yield* idempotency.claim(org.id, KEY, FINGERPRINT), true)
        expect(takenOver).toBe(uuid)

        // Meanwhile Meta reported it delivered: the takeover answers it as it is now.
        yield* Effect.flatMap(Chats, (chats) => chats.updateMessageStatus(org.id, uuid, "delivered"))
        const again = yield* messaging.sendText(org.id, body, { messageUuid: takenOver })
        expect(again).toEqual({ ...first, status: "delivered" })
        expect(sent).toHaveLength(1)
        expect((yield* messagesOfOnlyChat(org.id)).map((message) => message.uuid)).toEqual([uuid])
      })
    ))

  it.effect("before its message was created: the takeover's send creates it with exactly the claimed uuid, once", () =>
    withTransport((sent) =>
      Effect.gen(function* () {
        const idempotency = yield* Idempotency
        const messaging = yield* Messaging
        const org = yield* newOrganization
        const uuid = claimedUuid(yield* idempotency.claim(org.id, KEY, FINGERPRINT), false)
        // The process dies before the send wrote anything.
        yield* TestClock.adjust("61 seconds")
        const takenOver = claimedUuid(yield* idempotency.claim(org.id, KEY, FINGERPRINT), true)
        const result = yield* messaging.sendText(org.id, { phone: PHONE, message: "Hi" }, { messageUuid: takenOver })
        expect(result).toMatchObject({ message_id: uuid, status: "sent" })
        expect(sent.map((message) => message.message_id)).toEqual([uuid])
      })
    ))

  it.effect("a template send answering the first message upserts no contact; an invalid input is still refused first", () =>
    withTransport((sent) =>
      Effect.gen(function* () {
        const messaging = yield* Messaging
        const org = yield* newOrganization
        yield* Effect.flatMap(Templates, (templates) =>
          templates.create(org.id, {
            name: "order_update",
            language: "en_US",
            category: "UTILITY",
            status: "APPROVED",
            components: [{ type: "BODY", text: "Order {{1}} has shipped.", example: { body_text: [["#1"]] } }]
          })
        )
        const input = {
          phone: PHONE,
          first_name: "Ada",
          template: { name: "order_update", language: { code: "en_US" }, components: [{ type: "body", parameters: [{ type: "text", text: "#42" }] }] }
        }
        const messageUuid = "01890000-0000-7000-8000-000000000042" as MessageId
        const first = yield* messaging.sendTemplate(org.id, input, { messageUuid })
        expect(first.message_id).toBe(messageUuid)
        // The contact is renamed after the first attempt: answering it must not rename it back.
        yield* Effect.flatMap(Contacts, (contacts) => contacts.update(org.id, first.contact_uuid, { first_name: "Grace" }))
        expect(yield* messaging.sendTemplate(org.id, input, { messageUuid })).toEqual(first)
        const contact = yield* Effect.flatMap(Contacts, (contacts) => contacts.get(org.id, first.contact_uuid))
        expect(contact.first_name).toBe("Grace")
        const invalid = yield* Effect.flip(messaging.sendText(org.id, { phone: PHONE, message: "" }, { messageUuid }))
        expect(invalid._tag).toBe("InvalidInput")
        expect(sent).toHaveLength(1)
      })
    ))
})

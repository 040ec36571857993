import { readFileSync } from "node:fs"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Duration, Effect, HashMap, Layer, Logger, Option, TestClock } from "effect"
import {
  BasicReplies,
  type Channel,
  Channels,
  ChannelVerifier,
  Chats,
  Contacts,
  Core,
  generateSecretKey,
  MemoryStorage,
  Messaging,
  MessageTransport,
  type OrganizationId,
  Organizations,
  type OutboundMessage,
  runLeasedPass,
  sendQueue,
  SecretKey,
  Storage,
  Templates,
  TransportFailed,
  WhatsAppWebhooks
} from "@switchboard/core"
import { failureOf } from "./failure.js"

// The provider webhooks in core (docs/whatsapp-webhooks.md): what each event stores, on
// the memory store, with fixtures in the shapes of Meta's webhook reference.

const fixture = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(new URL(`./fixtures/whatsapp/${name}.json`, import.meta.url), "utf8"))

/** The fixtures' business number, account and sender. */
const PHONE_NUMBER_ID = "106540352242922"
const WABA_ID = "102290129340398"
const SENDER = "+16505551234"
const TOKEN = "EAAGwebhooktoken-0000000000000042"

/**
 * A transport that records what it is given and answers the provider ids it is told, in
 * order; each of `refusals`, while any is left, refuses one send instead.
 */
const makeTransport = () => {
  const sent: Array<OutboundMessage> = []
  const ids: Array<string> = []
  const refusals: Array<TransportFailed> = []
  const layer = Layer.succeed(MessageTransport, {
    send: (message) =>
      Effect.suspend(() => {
        const refusal = refusals.shift()
        if (refusal !== undefined) return Effect.fail(refusal)
        sent.push(message)
        return Effect.succeed({ provider_message_id: ids.shift() ?? `wamid.auto${sent.length}`, status: "sent" as const })
      })
  })
  return { sent, ids, refusals, layer }
}

/** Verifies every token (the Graph API is not this file's subject). */
const acceptingVerifier = Layer.succeed(ChannelVerifier, {
  verify: () => Effect.succeed({ display_phone_number: "+1 555-078-3881" })
})

const run = <A, E>(body: (transport: ReturnType<typeof makeTransport>) => Effect.Effect<A, E, Layer.Layer.Success<typeof Core.layer> | Storage>) =>
  Effect.suspend(() => {
    const transport = makeTransport()
    const layer = Core.layerWithTransport(transport.layer).pipe(
      Layer.provide(Layer.merge(SecretKey.layer(generateSecretKey()), acceptingVerifier)),
      Layer.provideMerge(MemoryStorage.layer)
    )
    return body(transport).pipe(Effect.provide(layer))
  })

/** One pass of the send queue's dispatcher now (Effect's clock): every due message attempted and recorded. */
const dispatchOnce = Effect.flatMap(Clock.currentTimeMillis, (now) => runLeasedPass(sendQueue, now, 60_000, 100))

/** An organization with the fixtures' number as its channel. */
const withChannel = (phoneNumberId = PHONE_NUMBER_ID, wabaId = WABA_ID) =>
  Effect.gen(function* () {
    const org = yield* Effect.flatMap(Organizations, (organizations) => organizations.create({ name: "Acme" }))
    const channel = yield* Effect.flatMap(Channels, (channels) =>
      channels.add(org.id, { phone_number_id: phoneNumberId, waba_id: wabaId, access_token: TOKEN })
    )
    return { orgId: org.id, channel }
  })

/** A logger keeping each line as its message and annotations, for the tests of what is logged. */
const capturedLogLines = () => {
  const lines: Array<Record<string, unknown> & { readonly message: string }> = []
  const logger = Logger.make(({ annotations, message }) => {
    lines.push({ message: String(message), ...Object.fromEntries(HashMap.toEntries(annotations)) })
  })
  return { lines, logger }
}

const receive = (payload: unknown) => Effect.flatMap(WhatsAppWebhooks, (webhooks) => webhooks.receive(payload))

/** The organization's only chat and its messages, newest first. */
const onlyChat = (orgId: OrganizationId) =>
  Effect.gen(function* () {
    const chats = yield* Chats
    const list = yield* chats.list(orgId, {})
    expect(list.chats).toHaveLength(1)
    const chat = list.chats[0]!
    const messages = yield* chats.listMessages(orgId, chat.uuid, { limit: 100 })
    return { chat, messages: messages.messages }
  })

/** A payload of Meta's `messages` field for `phoneNumberId` with these statuses. */
const statusesPayload = (statuses: ReadonlyArray<Record<string, unknown>>, phoneNumberId = PHONE_NUMBER_ID) => ({
  object: "whatsapp_business_account",
  entry: [
    {
      id: WABA_ID,
      changes: [
        {
          field: "messages",
          value: { messaging_product: "whatsapp", metadata: { display_phone_number: "15550783881", phone_number_id: phoneNumberId }, statuses }
        }
      ]
    }
  ]
})

/** A payload of Meta's `messages` field for `phoneNumberId` with these messages. */
const messagesPayload = (messages: ReadonlyArray<Record<string, unknown>>, phoneNumberId = PHONE_NUMBER_ID) => ({
  object: "whatsapp_business_account",
  entry: [
    {
      id: WABA_ID,
      changes: [
        {
          field: "messages",
          value: {
            messaging_product: "whatsapp",
            metadata: { display_phone_number: "15550783881", phone_number_id: phoneNumberId },
            contacts: [{ profile: { name: "Odd Sender" }, wa_id: "999123" }],
            messages
          }
        }
      ]
    }
  ]
})

/** A text from WhatsApp id `from`. */
const textFrom = (from: string, id: string, body: string) =>
  messagesPayload([{ from, id, timestamp: "1749416383", type: "text", text: { body } }])

/** Every refused part kept, oldest first. */
const allRejects = Effect.map(
  Effect.flatMap(Storage, (storage) => storage.webhookRejects.list({ limit: 100 })),
  (rejects) => [...rejects].reverse()
)

const status = (id: string, value: string) => ({ id, status: value, timestamp: "1749416400", recipient_id: "16505551234" })

describe("WhatsAppWebhooks.receive: customer messages", () => {
  it.effect("a text from a new number creates the contact (profile name), an unread chat and the message, through the channel; a redelivery changes nothing", () =>
    run(() =>
      Effect.gen(function* () {
        const { orgId, channel } = yield* withChannel()
        expect(yield* receive(fixture("text"))).toEqual({ received: 1, organizations: [orgId] })
        const { chat, messages } = yield* onlyChat(orgId)
        expect(chat).toMatchObject({ unread_count: 1, status: "open", contact: { phone: SENDER, first_name: "Sheena Nelson", last_name: null } })
        expect(messages).toHaveLength(1)
        expect(messages[0]).toMatchObject({
          direction: "inbound",
          type: "text",
          text: "Does it come in another color?",
          provider_message_id: "wamid.text1",
          status: "delivered",
          channel_uuid: channel.uuid,
          content: { timestamp: "1749416383" }
        })
        expect(yield* receive(fixture("text"))).toMatchObject({ received: 1 })
        const again = yield* onlyChat(orgId)
        expect(again.messages).toEqual(messages)
        expect(again.chat.unread_count).toBe(1)
      })
    ))

  it.effect("every listed type is stored with its fields; an unknown type is unsupported with its original type", () =>
    run(() =>
      Effect.gen(function* () {
        const { orgId } = yield* withChannel()
        const names = ["image", "audio", "video", "document", "sticker", "location", "contacts", "interactive-button-reply", "interactive-list-reply", "button", "unsupported", "order"]
        for (const name of names) expect(yield* receive(fixture(name))).toMatchObject({ received: 1 })
        const { messages } = yield* onlyChat(orgId)
        const byType = new Map(messages.map((message) => [message.provider_message_id, message]))
        expect(messages.map((message) => message.type).sort()).toEqual(
          ["image", "audio", "video", "document", "sticker", "location", "contacts", "interactive", "interactive", "button", "unsupported", "unsupported"].sort()
        )
        for (const message of messages) {
          if (["image", "audio", "video", "document", "sticker"].includes(message.type)) {
            expect(message.media).toMatchObject({ type: message.type, id: expect.any(String), mime_type: expect.any(String) })
            expect(message.media).not.toHaveProperty("url")
          } else {
            expect(message.media).toBeNull()
          }
        }
        const location = messages.find((message) => message.type === "location")!
        expect(location.content).toMatchObject({ location: { latitude: expect.any(Number), longitude: expect.any(Number) } })
        const order = messages.filter((message) => message.type === "unsupported").map((message) => message.content?.original_type)
        expect(order.sort()).toEqual(["order", "unsupported"])
        expect(byType.size).toBe(names.length)
      })
    ))

  it.effect("a reaction is stored but neither counts as unread, reopens a resolved chat, nor shows as a message or the last one", () =>
    run(() =>
      Effect.gen(function* () {
        const { orgId } = yield* withChannel()
        yield* receive(fixture("text"))
        const chats = yield* Chats
        const { chat } = yield* onlyChat(orgId)
        yield* chats.markRead(orgId, chat.uuid)
        yield* chats.setStatus(orgId, chat.uuid, "resolved")
        expect(yield* receive(fixture("reaction"))).toMatchObject({ received: 1 })
        const after = yield* onlyChat(orgId)
        expect(after.chat).toMatchObject({ unread_count: 0, status: "resolved", last_message: { type: "text" } })
        expect(after.messages.map((message) => message.type)).toEqual(["text"])
      })
    ))

  it.effect("a customer's reaction to a message lands in its reactions (replaced, then removed); a reply gets reply_to", () =>
    run(() =>
      Effect.gen(function* () {
        const { orgId } = yield* withChannel()
        yield* receive(fixture("text"))
        const react = (id: string, emoji: string, timestamp: string) => {
          const payload = structuredClone(fixture("reaction")) as any
          Object.assign(payload.entry[0].changes[0].value.messages[0], { id, timestamp, reaction: { message_id: "wamid.text1", emoji } })
          return receive(payload)
        }
        yield* react("wamid.r1", "👍", "1749416383")
        const first = yield* onlyChat(orgId)
        expect(first.messages[0]!.reactions).toEqual([{ emoji: "👍", by: "contact", at: expect.any(String) }])
        yield* react("wamid.r2", "🎉", "1749416390")
        expect((yield* onlyChat(orgId)).messages[0]!.reactions).toEqual([{ emoji: "🎉", by: "contact", at: expect.any(String) }])
        yield* react("wamid.r3", "", "1749416395")
        expect((yield* onlyChat(orgId)).messages[0]!.reactions).toEqual([])
        const reply = structuredClone(fixture("text")) as any
        Object.assign(reply.entry[0].changes[0].value.messages[0], { id: "wamid.reply1", context: { from: "15550783881", id: "wamid.text1" } })
        yield* receive(reply)
        const unknown = structuredClone(fixture("text")) as any
        Object.assign(unknown.entry[0].changes[0].value.messages[0], { id: "wamid.reply2", context: { from: "15550783881", id: "wamid.nobody" } })
        yield* receive(unknown)
        const { messages } = yield* onlyChat(orgId)
        const byId = new Map(messages.map((message) => [message.provider_message_id, message]))
        expect(byId.get("wamid.reply1")!.reply_to).toBe(byId.get("wamid.text1")!.uuid)
        expect(byId.get("wamid.reply2")!.reply_to).toBeNull()
        expect(byId.get("wamid.text1")!.reply_to).toBeNull()
      })
    ))

  it.effect("a number no channel has is acknowledged and nothing of it stored; a body that is not WhatsApp's is kept as refused", () =>
    run(() =>
      Effect.gen(function* () {
        const { orgId } = yield* withChannel("999000111")
        expect(yield* receive(fixture("text"))).toEqual({ received: 0, organizations: [] })
        expect(yield* receive(statusesPayload([status("wamid.x", "read")]))).toMatchObject({ received: 0 })
        expect((yield* Effect.flatMap(Contacts, (contacts) => contacts.list(orgId, { page: 1, per_page: 10 }))).total).toBe(0)
        expect(yield* receive({ object: "page", entry: [] })).toMatchObject({ received: 0 })
        expect(yield* receive(fixture("account-update"))).toMatchObject({ received: 0 })
        const rejects = yield* allRejects
        expect(rejects.map((reject) => [reject.organization_id, reject.phone_number_id, reject.reason, reject.item])).toEqual([
          [null, null, "not a WhatsApp Business Account notification", { object: "page", entry: [] }]
        ])
      })
    ))

  it.effect("a sender libphonenumber-js calls invalid still gets its contact (phone +<wa_id>, phone_valid false) and its message; a send may answer it", () =>
    run((transport) =>
      Effect.gen(function* () {
        const { orgId } = yield* withChannel()
        expect(yield* receive(textFrom("999123", "wamid.odd1", "Hello?"))).toMatchObject({ received: 1 })
        const { chat, messages } = yield* onlyChat(orgId)
        expect(chat.contact.phone).toBe("+999123")
        expect(messages.map((message) => message.text)).toEqual(["Hello?"])
        const contact = yield* Effect.flatMap(Contacts, (contacts) => contacts.get(orgId, chat.contact.uuid))
        expect([contact.phone, contact.phone_valid, contact.first_name]).toEqual(["+999123", false, "Odd Sender"])
        expect(yield* allRejects).toEqual([])
        const messaging = yield* Messaging
        const reply = yield* messaging.sendText(orgId, { phone: "+999123", message: "Hi there" })
        expect([reply.contact_uuid, reply.chat_uuid, reply.status]).toEqual([contact.uuid, chat.uuid, "sent"])
        expect(transport.sent.map((sent) => sent.to)).toEqual(["+999123"])
        // Only the exact stored phone is accepted: another invalid number is still a 400.
        const refused = yield* Effect.flip(messaging.sendText(orgId, { phone: "+999124", message: "Hi" }))
        expect(refused._tag === "InvalidInput" && refused.issues.map((issue) => [issue.field, issue.code])).toEqual([["phone", "invalid_format"]])
        const validSender = yield* Effect.flatMap(Contacts, (contacts) => contacts.list(orgId, { page: 1, per_page: 10 }))
        expect(validSender.items.map((each) => each.phone_valid)).toEqual([false])
        yield* receive(fixture("text"))
        const both = yield* Effect.flatMap(Contacts, (contacts) => contacts.list(orgId, { page: 1, per_page: 10 }))
        expect(both.items.map((each) => [each.phone, each.phone_valid]).sort()).toEqual([[SENDER, true], ["+999123", false]].sort())
      })
    ))

  it.effect("a message or status core refuses, or one of unexpected shape, is kept with its raw JSON and organization; the rest is stored", () =>
    run(() =>
      Effect.gen(function* () {
        const { orgId } = yield* withChannel()
        const empty = { from: "16505551234", id: "wamid.empty", timestamp: "1749416383", type: "text", text: { body: "" } }
        const notAPhone = { from: "not-a-number", id: "wamid.letters", timestamp: "1749416383", type: "text", text: { body: "Hi" } }
        const malformed = { id: "wamid.noFrom", type: "text", text: { body: "Hi" } }
        const good = { from: "16505551234", id: "wamid.good", timestamp: "1749416383", type: "text", text: { body: "Fine" } }
        const payload = messagesPayload([empty, notAPhone, malformed, good])
        expect(yield* receive(payload)).toMatchObject({ received: 1 })
        const { messages } = yield* onlyChat(orgId)
        expect(messages.map((message) => message.provider_message_id)).toEqual(["wamid.good"])
        const rejects = yield* allRejects
        const kept = rejects.map((reject) => [reject.organization_id, reject.phone_number_id, reject.reason, reject.item])
        expect(kept.sort((a, b) => String(a[2]).localeCompare(String(b[2])))).toEqual([
          [orgId, PHONE_NUMBER_ID, "message without id, from or type", malformed],
          [orgId, PHONE_NUMBER_ID, "phone: invalid_format", notAPhone],
          [orgId, PHONE_NUMBER_ID, "text: required", empty]
        ])
        for (const reject of rejects) expect(reject.received_at).toMatch(/^\d{4}-\d\d-\d\dT/)
        // Meta delivering the same notification again keeps nothing twice.
        yield* TestClock.adjust(Duration.minutes(5))
        expect(yield* receive(payload)).toMatchObject({ received: 1 })
        expect(yield* allRejects).toEqual(rejects)
      })
    ))

  it.effect("refused parts are pruned once older than 30 days (at most once an hour, on a webhook)", () =>
    run(() =>
      Effect.gen(function* () {
        yield* withChannel()
        yield* receive({ object: "page" })
        expect(yield* allRejects).toHaveLength(1)
        yield* TestClock.adjust(Duration.days(30))
        yield* receive(fixture("account-update"))
        expect(yield* allRejects).toHaveLength(1)
        yield* TestClock.adjust(Duration.hours(1))
        yield* receive(fixture("account-update"))
        expect(yield* allRejects).toHaveLength(0)
      })
    ))

  it.effect("log lines about a routed change carry its organization_id; unrouted ones carry none", () =>
    Effect.gen(function* () {
      const { lines, logger } = capturedLogLines()
      const orgId = yield* run(() =>
        Effect.gen(function* () {
          const { orgId } = yield* withChannel()
          yield* receive(messagesPayload([{ from: "16505551234", id: "wamid.empty", type: "text", text: { body: "" } }]))
          yield* receive(messagesPayload([{ from: "16505551234", id: "wamid.empty", type: "text", text: { body: "" } }], "555"))
          return orgId
        }).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
      )
      const refused = lines.filter((line) => String(line.message).startsWith("WhatsApp webhook"))
      expect(refused.map((line) => [line.phone_number_id, line.organization_id ?? null])).toEqual([
        [PHONE_NUMBER_ID, orgId],
        ["555", null]
      ])
    }))

  it.effect("an automatic reply its channel's token cannot send is logged with the organization_id, and the message kept", () =>
    Effect.gen(function* () {
      const { lines, logger } = capturedLogLines()
      const orgId = yield* run(() =>
        Effect.gen(function* () {
          const { orgId, channel } = yield* withChannel()
          yield* Effect.flatMap(BasicReplies, (replies) => replies.create(orgId, { name: "Hours", trigger: "hours", response: "9–17" }))
          // A sealed token no key opens: the reply cannot be sent through this channel.
          const storage = yield* Storage
          yield* storage.channels.update(orgId, channel.uuid, {
            access_token: { sealed: "v1.not.a.sealed.token", last4: "oken" },
            updated_at: new Date(0).toISOString()
          })
          yield* receive(messagesPayload([{ from: "16505551234", id: "wamid.hours", type: "text", text: { body: "hours" } }]))
          const { messages } = yield* onlyChat(orgId)
          expect(messages.map((message) => [message.direction, message.text])).toEqual([["inbound", "hours"]])
          return orgId
        }).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
      )
      const unsent = lines.filter((line) => line.message.startsWith("Automatic reply not sent"))
      expect(unsent.map((line) => line.organization_id)).toEqual([orgId])
    }))

  it.effect("a matching basic reply is answered through the channel the message came in by, with its token", () =>
    run((transport) =>
      Effect.gen(function* () {
        const { orgId, channel } = yield* withChannel()
        yield* Effect.flatMap(BasicReplies, (replies) =>
          replies.create(orgId, { name: "Colors", trigger: "Does it come in another color?", response: "Red, green and blue." })
        )
        yield* receive(fixture("text"))
        // The reply is queued in the inbound's step; the send queue's dispatcher sends it.
        expect(transport.sent).toEqual([])
        yield* dispatchOnce
        expect(transport.sent).toEqual([
          expect.objectContaining({
            to: SENDER,
            type: "text",
            text: "Red, green and blue.",
            channel: { uuid: channel.uuid, phone_number_id: PHONE_NUMBER_ID, access_token: TOKEN }
          })
        ])
        const { messages } = yield* onlyChat(orgId)
        expect(messages.find((message) => message.direction === "outbound")).toMatchObject({ status: "sent", channel_uuid: channel.uuid })
        yield* receive(fixture("text"))
        expect(transport.sent).toHaveLength(1)
      })
    ))
})

describe("WhatsAppWebhooks.receive: statuses", () => {
  it.effect("delivered then read moves a sent message forward; a late delivered never moves it back; failed keeps the error", () =>
    run((transport) =>
      Effect.gen(function* () {
        const { orgId } = yield* withChannel()
        const messaging = yield* Messaging
        // Free-form replies need the contact's customer service window open.
        yield* receive(fixture("text"))
        transport.ids.push("wamid.outbound1", "wamid.outbound2")
        const first = yield* messaging.sendText(orgId, { phone: SENDER, message: "Your order shipped" })
        // The channel's next pacing slot (the test clock stands still otherwise).
        yield* TestClock.adjust("1 second")
        const second = yield* messaging.sendText(orgId, { phone: SENDER, message: "Another" })
        expect(yield* receive(fixture("statuses"))).toMatchObject({ received: 1 })
        const chats = yield* Chats
        const find = (id: string) => Effect.map(onlyChat(orgId), ({ messages }) => messages.find((message) => message.uuid === id)!)
        expect((yield* find(first.message_id)).status).toBe("read")
        yield* receive(statusesPayload([status("wamid.outbound1", "delivered")]))
        expect((yield* find(first.message_id)).status).toBe("read")
        yield* receive(fixture("status-failed"))
        expect(yield* find(second.message_id)).toMatchObject({ status: "failed", failure: { code: expect.any(String), title: expect.any(String) } })
        expect(chats).toBeDefined()
      })
    ))

  it.effect("out of order: read before delivered ends read", () =>
    run((transport) =>
      Effect.gen(function* () {
        const { orgId } = yield* withChannel()
        yield* receive(fixture("text"))
        transport.ids.push("wamid.ooo")
        const sent = yield* Effect.flatMap(Messaging, (messaging) => messaging.sendText(orgId, { phone: SENDER, message: "Hi" }))
        yield* receive(statusesPayload([status("wamid.ooo", "read"), status("wamid.ooo", "delivered")]))
        const { messages } = yield* onlyChat(orgId)
        expect(messages.find((message) => message.uuid === sent.message_id)?.status).toBe("read")
      })
    ))

  it.effect("a status that arrives before the send records its provider id is applied when it does", () =>
    run((transport) =>
      Effect.gen(function* () {
        const { orgId } = yield* withChannel()
        expect(yield* receive(statusesPayload([status("wamid.early", "delivered")]))).toMatchObject({ received: 1 })
        yield* receive(fixture("text"))
        transport.ids.push("wamid.early")
        const sent = yield* Effect.flatMap(Messaging, (messaging) => messaging.sendText(orgId, { phone: SENDER, message: "Hi" }))
        expect(sent.status).toBe("delivered")
        const { messages } = yield* onlyChat(orgId)
        expect(messages.find((message) => message.uuid === sent.message_id)).toMatchObject({ uuid: sent.message_id, status: "delivered", provider_message_id: "wamid.early" })
      })
    ))
})

describe("WhatsAppWebhooks.receive: template statuses", () => {
  it.effect("routes by the account to the template with that name and language; REJECTED keeps Meta's reason", () =>
    run(() =>
      Effect.gen(function* () {
        const { orgId } = yield* withChannel()
        const templates = yield* Templates
        const body = [{ type: "BODY" as const, text: "Hello" }]
        const order = yield* templates.create(orgId, { name: "order_update", language: "en_US", category: "UTILITY", status: "PENDING", components: body })
        const sale = yield* templates.create(orgId, { name: "summer_sale", language: "en", category: "MARKETING", status: "PENDING", components: body })
        expect(yield* receive(fixture("template-approved"))).toMatchObject({ received: 1 })
        expect(yield* templates.get(orgId, order.uuid)).toMatchObject({ status: "APPROVED", rejected_reason: null })
        yield* receive(fixture("template-rejected"))
        expect(yield* templates.get(orgId, sale.uuid)).toMatchObject({ status: "REJECTED", rejected_reason: "INVALID_FORMAT" })
        const other = fixture("template-approved") as { entry: Array<{ id: string }> }
        other.entry[0]!.id = "777"
        expect(yield* receive(other)).toMatchObject({ received: 0 })
      })
    ))

  it.effect("en-US is read as en_US; an unknown template or status changes nothing", () =>
    run(() =>
      Effect.gen(function* () {
        const { orgId } = yield* withChannel()
        const templates = yield* Templates
        const order = yield* templates.create(orgId, {
          name: "order_update",
          language: "en_US",
          category: "UTILITY",
          status: "APPROVED",
          components: [{ type: "BODY", text: "Hello" }]
        })
        const payload = (event: string, language: string) => ({
          object: "whatsapp_business_account",
          entry: [{ id: WABA_ID, changes: [{ field: "message_template_status_update", value: { event, message_template_id: 1, message_template_name: "order_update", message_template_language: language, reason: "NONE" } }] }]
        })
        yield* receive(payload("PAUSED", "en-US"))
        expect((yield* templates.get(orgId, order.uuid)).status).toBe("PAUSED")
        yield* receive(payload("SOMETHING_NEW", "en_US"))
        yield* receive(payload("APPROVED", "fr"))
        expect((yield* templates.get(orgId, order.uuid)).status).toBe("PAUSED")
      })
    ))
})

describe("sends through channels", () => {
  it.effect("default channel, then the channel the contact last wrote to; channel_uuid wins; an unknown one writes nothing", () =>
    run((transport) =>
      Effect.gen(function* () {
        const { orgId, channel: first } = yield* withChannel()
        const second: Channel = yield* Effect.flatMap(Channels, (channels) =>
          channels.add(orgId, { phone_number_id: "106540352242923", waba_id: WABA_ID, access_token: `${TOKEN}-2` })
        )
        const messaging = yield* Messaging
        // The contact writes to both numbers (free-form replies need its window open), the second one last.
        yield* receive(fixture("text"))
        yield* messaging.sendText(orgId, { phone: SENDER, message: "one" })
        yield* TestClock.adjust("1 second")
        const inbound = fixture("text") as { entry: Array<{ changes: Array<{ value: { metadata: { phone_number_id: string }; messages: Array<{ id: string }> } }> }> }
        inbound.entry[0]!.changes[0]!.value.metadata.phone_number_id = "106540352242923"
        inbound.entry[0]!.changes[0]!.value.messages[0]!.id = "wamid.second-number"
        yield* receive(inbound)
        yield* messaging.sendText(orgId, { phone: SENDER, message: "two" })
        // The first channel's next pacing slot (the test clock stands still otherwise).
        yield* TestClock.adjust("1 second")
        yield* messaging.sendText(orgId, { phone: SENDER, message: "three", channel_uuid: first.uuid })
        expect(transport.sent.map((message) => [message.type === "text" ? message.text : "", message.channel?.uuid])).toEqual([
          ["one", first.uuid],
          ["two", second.uuid],
          ["three", first.uuid]
        ])
        expect(transport.sent[1]?.channel?.access_token).toBe(`${TOKEN}-2`)
        const error = yield* failureOf(messaging.sendText(orgId, { phone: "+14155550199", message: "x", channel_uuid: "0b0c7e0e-9e1b-4f5e-8f8a-2c1d3e4f5a6b" }))
        expect(error).toMatchObject({ _tag: "RecordNotFound", missing: [{ resource: "channel" }] })
        const invalid = yield* failureOf(messaging.sendText(orgId, { phone: "+14155550199", message: "x", channel_uuid: "not-a-uuid" }))
        expect(invalid).toMatchObject({ _tag: "InvalidInput", issues: [{ field: "channel_uuid" }] })
        const contacts = yield* Effect.flatMap(Storage, (storage) => storage.contacts.list(orgId, { page: 1, per_page: 10 }))
        expect(contacts.items.map((contact) => contact.phone)).toEqual([SENDER])
      })
    ))

  it.effect("an organization without a channel sends with channel null, and its messages record none", () =>
    run((transport) =>
      Effect.gen(function* () {
        const org = yield* Effect.flatMap(Organizations, (organizations) => organizations.create({ name: "Plain" }))
        yield* Effect.flatMap(Messaging, (messaging) => messaging.sendText(org.id, { phone: SENDER, message: "hi" }))
        expect(transport.sent.map((message) => message.channel)).toEqual([null])
        const { messages } = yield* onlyChat(org.id)
        expect(messages[0]?.channel_uuid).toBeNull()
        expect(Option.isNone(yield* Effect.flatMap(Storage, (storage) => storage.chats.lastInboundChannel(org.id, messages[0]!.contact_uuid)))).toBe(true)
      })
    ))
})

describe("the customer service window (docs/messaging.md \"The customer service window\")", () => {
  const DAY_MS = 24 * 3_600_000
  /** The instant the fixtures' inbound text opens the window at on the test clock (its receipt, before Meta's timestamp). */
  const at = (ms: number) => new Date(ms).toISOString()
  const media = { type: "image", url: "https://example.com/a.png" } as const

  it.effect("text and media through a channel are refused before anything is written until the contact writes; templates always go", () =>
    run((transport) =>
      Effect.gen(function* () {
        const { orgId, channel } = yield* withChannel()
        const messaging = yield* Messaging
        const storage = yield* Storage
        for (const refused of [
          yield* failureOf(messaging.sendText(orgId, { phone: SENDER, message: "Hi" })),
          yield* failureOf(messaging.sendMedia(orgId, { phone: SENDER, media }))
        ]) {
          expect(refused).toMatchObject({ _tag: "OutsideCustomerServiceWindow", channel_uuid: channel.uuid, window_expires_at: null })
        }
        expect((yield* storage.contacts.list(orgId, { page: 1, per_page: 10 })).items).toEqual([])
        expect((yield* Effect.flatMap(Chats, (chats) => chats.list(orgId, {}))).chats).toEqual([])
        yield* Effect.flatMap(Templates, (templates) =>
          templates.create(orgId, { name: "welcome", language: "en", category: "UTILITY", status: "APPROVED", components: [{ type: "BODY", text: "Hello" }] })
        )
        const template = yield* messaging.sendTemplate(orgId, { phone: SENDER, template: { name: "welcome", language: { code: "en" } } })
        expect(template.status).toBe("sent")
        // The contact exists now, but has still never written.
        expect(yield* failureOf(messaging.sendText(orgId, { phone: SENDER, message: "Hi" }))).toMatchObject({ window_expires_at: null })
        yield* receive(fixture("text"))
        const { chat } = yield* onlyChat(orgId)
        expect([chat.last_inbound_channel_uuid, chat.window_expires_at]).toEqual([channel.uuid, at(DAY_MS)])
        yield* TestClock.adjust("1 second")
        expect((yield* messaging.sendText(orgId, { phone: SENDER, message: "Hi" })).status).toBe("sent")
        yield* TestClock.adjust("1 second")
        expect((yield* messaging.sendMedia(orgId, { phone: SENDER, media })).status).toBe("sent")
        // 24 hours after the inbound message: closed again, nothing written.
        yield* TestClock.setTime(DAY_MS)
        const before = (yield* onlyChat(orgId)).messages.length
        expect(yield* failureOf(messaging.sendText(orgId, { phone: SENDER, message: "Late" }))).toMatchObject({
          _tag: "OutsideCustomerServiceWindow",
          window_expires_at: at(DAY_MS)
        })
        expect((yield* onlyChat(orgId)).messages).toHaveLength(before)
        expect(transport.sent.map((sent) => sent.type)).toEqual(["template", "text", "media"])
      })
    ))

  it.effect("the window is the channel's the message goes through: another channel's window does not open it", () =>
    run(() =>
      Effect.gen(function* () {
        const { orgId } = yield* withChannel()
        const second: Channel = yield* Effect.flatMap(Channels, (channels) =>
          channels.add(orgId, { phone_number_id: "106540352242923", waba_id: WABA_ID, access_token: `${TOKEN}-2` })
        )
        yield* receive(fixture("text"))
        const messaging = yield* Messaging
        expect(yield* failureOf(messaging.sendText(orgId, { phone: SENDER, message: "x", channel_uuid: second.uuid }))).toMatchObject({
          _tag: "OutsideCustomerServiceWindow",
          channel_uuid: second.uuid,
          window_expires_at: null
        })
        const { messages } = yield* onlyChat(orgId)
        expect(messages.map((message) => message.direction)).toEqual(["inbound"])
      })
    ))

  it.effect("a queued free-form message expires at its window's end, a template at the TTL; once the window closes it fails and a retry is refused until the contact writes again", () =>
    run((transport) =>
      Effect.gen(function* () {
        const { orgId } = yield* withChannel()
        const messaging = yield* Messaging
        const storage = yield* Storage
        yield* receive(fixture("text"))
        yield* TestClock.setTime(DAY_MS - 3_600_000)
        transport.refusals.push(new TransportFailed({ reason: "Service unavailable", provider_code: null, http_status: 503 }))
        const queued = yield* messaging.sendText(orgId, { phone: SENDER, message: "Soon" })
        expect(queued.status).toBe("queued")
        // Claimed after its retry delay: the claim shows its expiry.
        const claimAt = DAY_MS - 3_600_000 + 10_000
        const [claimed] = yield* storage.outbox.claim({ now: claimAt, lease: "lease-1", leaseUntil: claimAt + 60_000, settleMs: 120_000, limit: 10, horizonMs: 500 })
        expect(claimed?.expires_at).toBe(at(DAY_MS))
        yield* storage.outbox.record(queued.message_id, "lease-1", { _tag: "Requeued", next_attempt_at: at(DAY_MS + 1), failure: null, attempts: 0, throttled: false, pairRate: false }, at(claimAt))
        // The window closes before it goes: outside_customer_service_window, never handed to the transport.
        yield* TestClock.setTime(DAY_MS + 1)
        yield* dispatchOnce
        const failed = yield* Effect.flatMap(Chats, (chats) => chats.getMessage(orgId, queued.message_id))
        expect(failed).toMatchObject({ status: "failed", failure: { code: "outside_customer_service_window" } })
        expect(transport.sent).toEqual([])
        expect(yield* failureOf(messaging.retryMessage(orgId, queued.message_id))).toMatchObject({ _tag: "MessageNotRetryable", window_closed: true })
        // The contact writes again: the retry goes.
        const again = fixture("text") as { entry: Array<{ changes: Array<{ value: { messages: Array<{ id: string; timestamp: string }> } }> }> }
        again.entry[0]!.changes[0]!.value.messages[0]!.id = "wamid.again"
        again.entry[0]!.changes[0]!.value.messages[0]!.timestamp = String(Math.floor((DAY_MS + 1) / 1000))
        yield* receive(again)
        expect((yield* messaging.retryMessage(orgId, queued.message_id)).status).toBe("queued")
        yield* dispatchOnce
        expect((yield* Effect.flatMap(Chats, (chats) => chats.getMessage(orgId, queued.message_id))).status).toBe("sent")
      })
    ))
})

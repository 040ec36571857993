import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Layer } from "effect"
import {
  BasicReplies,
  type ChatId,
  Chats,
  type ContactId,
  Contacts,
  Core,
  MemoryStorage,
  Messaging,
  MessageTransport,
  type OrganizationId,
  Organizations,
  type OutboundMessage,
  runLeasedPass,
  sendQueue,
  type SendTemplateInput,
  Storage,
  Templates,
  type TemplateInput,
  TransportFailed
} from "@switchboard/core"
import { failureOf } from "./failure.js"

/** A transport that records every message it is given and, when told, refuses them. */
const makeTestTransport = () => {
  const sent: Array<OutboundMessage> = []
  let refusal: TransportFailed | undefined
  const layer = Layer.succeed(MessageTransport, {
    send: (message) =>
      Effect.suspend(() => {
        sent.push(message)
        return refusal === undefined
          ? Effect.succeed({ provider_message_id: `wamid.${sent.length}`, status: "sent" as const })
          : Effect.fail(refusal)
      })
  })
  return { sent, layer, refuse: (error: TransportFailed | undefined) => void (refusal = error) }
}

/** Runs `body` with a fresh memory store, Core on a fresh test transport, and that transport. */
const withTransport = <A, E>(
  body: (transport: ReturnType<typeof makeTestTransport>) => Effect.Effect<A, E, Layer.Layer.Success<typeof Core.layer> | Storage>
) =>
  Effect.suspend(() => {
    const transport = makeTestTransport()
    return body(transport).pipe(Effect.provide(Core.layerWithTransport(transport.layer).pipe(Layer.provideMerge(MemoryStorage.layer))))
  })

const PHONE = "+14155550100"

const orderUpdate: TemplateInput = {
  name: "order_update",
  language: "en_US",
  category: "UTILITY",
  status: "APPROVED",
  components: [
    { type: "BODY", text: "Hi {{1}}, order {{2}} has shipped.", example: { body_text: [["Ada", "#1234"]] } },
    { type: "FOOTER", text: "Reply STOP to opt out" }
  ]
}

const filled = [{ type: "body", parameters: [{ type: "text", text: "Ada" }, { type: "text", text: "#42" }] }]

const templateSend = (extra: Partial<SendTemplateInput> = {}): SendTemplateInput => ({
  phone: PHONE,
  template: { name: "order_update", language: { code: "en_US" }, components: filled },
  ...extra
})

/** A fresh organization (optionally with a plan) with the order_update template. */
const setUp = (plan: { readonly contacts_limit?: number | null } = {}, template: TemplateInput = orderUpdate) =>
  Effect.gen(function* () {
    const org = yield* Effect.flatMap(Organizations, (organizations) => organizations.create({ name: "Acme", plan }))
    yield* Effect.flatMap(Templates, (templates) => templates.create(org.id, template))
    return { orgId: org.id, messaging: yield* Messaging }
  })

/** Every contact and chat of the organization, and the messages of each chat, newest first. */
const stored = (orgId: OrganizationId) =>
  Effect.gen(function* () {
    const contacts = (yield* Effect.flatMap(Contacts, (c) => c.list(orgId, { page: 1, per_page: 100 }))).items
    const chats = (yield* Effect.flatMap(Chats, (c) => c.list(orgId, { pagination: true, per_page: 100 }))).chats
    return { contacts, chats }
  })

const messagesOf = (orgId: OrganizationId, chatId: ChatId) =>
  Effect.map(
    Effect.flatMap(Chats, (chats) => chats.messages(orgId, chatId, { page: 1, per_page: 100 })),
    (page) => page.items
  )

/** The `[field, code]` of every issue of an `InvalidInput`, else the error's tag. */
const issuesOf = (error: { readonly _tag: string; readonly issues?: ReadonlyArray<{ field?: string; code: string }> }) =>
  error._tag === "InvalidInput" ? (error.issues ?? []).map((issue) => [issue.field, issue.code]) : error._tag

/** One pass of the send queue's dispatcher now (Effect's clock): every due message attempted and recorded. */
const dispatchOnce = Effect.flatMap(Clock.currentTimeMillis, (now) => runLeasedPass(sendQueue, now, 60_000, 100))

describe("Messaging.sendText (POST /send)", () => {
  it.effect("creates the contact and an open chat, records an outbound text message and marks it sent with the provider id", () =>
    withTransport((transport) =>
      Effect.gen(function* () {
        const { orgId, messaging } = yield* setUp()
        const result = yield* messaging.sendText(orgId, { phone: "+1 (415) 555-0100", message: " Hello there " })
        const { contacts, chats } = yield* stored(orgId)
        expect(contacts.map((contact) => [contact.uuid, contact.phone, contact.first_name])).toEqual([[result.contact_uuid, PHONE, null]])
        expect(chats).toHaveLength(1)
        expect(chats[0]).toMatchObject({ uuid: result.chat_uuid, status: "open", unread_count: 0, contact: { uuid: result.contact_uuid } })
        expect(result).toEqual({
          message_id: expect.any(String),
          chat_uuid: chats[0]!.uuid,
          contact_uuid: contacts[0]!.uuid,
          status: "sent",
          provider_message_id: "wamid.1",
          next_attempt_at: null,
          failure: null,
          // The test's transport says no kind: a host's own.
          transport: "custom"
        })
        expect(yield* messagesOf(orgId, result.chat_uuid)).toEqual([
          {
            uuid: result.message_id,
            chat_uuid: result.chat_uuid,
            contact_uuid: result.contact_uuid,
            direction: "outbound",
            type: "text",
            text: " Hello there ",
            template: null,
            media: null,
            content: null,
            status: "sent",
            provider_message_id: "wamid.1",
            failure: null,
            channel_uuid: null,
            transport: "custom",
            attempts: 1,
            next_attempt_at: null,
            broadcast_uuid: null,
            reply_to: null,
            reactions: [],
            created_at: "1970-01-01T00:00:00.000Z",
            updated_at: "1970-01-01T00:00:00.000Z"
          }
        ])
        expect(transport.sent).toEqual([{ channel: null, message_id: result.message_id, to: PHONE, type: "text", text: " Hello there " }])
      })
    ))

  it.effect("reuses the contact's chat and never changes its status or unread count (docs/chats.md)", () =>
    withTransport(() =>
      Effect.gen(function* () {
        const { orgId, messaging } = yield* setUp()
        const chats = yield* Chats
        const inbound = yield* chats.receiveInbound(orgId, { phone: PHONE, type: "text", text: "Hi" })
        for (const status of ["resolved", "pending", "closed"] as const) {
          yield* chats.setStatus(orgId, inbound.chat.uuid, status)
          const result = yield* messaging.sendText(orgId, { phone: PHONE, message: `while ${status}` })
          expect([result.chat_uuid, result.contact_uuid]).toEqual([inbound.chat.uuid, inbound.chat.contact.uuid])
          const chat = yield* chats.get(orgId, inbound.chat.uuid)
          expect([chat.status, chat.unread_count, chat.last_message?.text, chat.last_message?.direction]).toEqual([
            status,
            1,
            `while ${status}`,
            "outbound"
          ])
        }
        expect((yield* stored(orgId)).chats).toHaveLength(1)
      })
    ))

  it.effect("message: required, 1–4096 characters, not blank; phone required and valid; every problem at once, nothing written", () =>
    withTransport((transport) =>
      Effect.gen(function* () {
        const { orgId, messaging } = yield* setUp()
        const fails = (input: unknown) => Effect.map(failureOf(messaging.sendText(orgId, input as never)), issuesOf)
        expect(yield* fails({})).toEqual([["phone", "required"], ["message", "required"]])
        expect(yield* fails({ phone: "12", message: "   " })).toEqual([["phone", "invalid_format"], ["message", "required"]])
        expect(yield* fails({ phone: PHONE, message: "x".repeat(4097) })).toEqual([["message", "too_long"]])
        expect(yield* fails({ phone: 31612345678, message: 7 })).toEqual([["phone", "invalid_type"], ["message", "invalid_type"]])
        expect(yield* stored(orgId)).toEqual({ contacts: [], chats: [] })
        expect(transport.sent).toEqual([])
        const longest = yield* messaging.sendText(orgId, { phone: PHONE, message: "x".repeat(4096) })
        expect(longest.status).toBe("sent")
      })
    ))

  it.effect("a refused message is kept and marked failed; the send answers status failed", () =>
    withTransport((transport) =>
      Effect.gen(function* () {
        const { orgId, messaging } = yield* setUp()
        transport.refuse(new TransportFailed({ reason: "Recipient not in allowed list", provider_code: "131030" }))
        const result = yield* messaging.sendText(orgId, { phone: PHONE, message: "Hi" })
        expect(result.status).toBe("failed")
        const [message] = yield* messagesOf(orgId, result.chat_uuid)
        expect(message).toMatchObject({ uuid: result.message_id, direction: "outbound", status: "failed", provider_message_id: null, text: "Hi" })
        expect(message?.failure).toEqual({ code: "131030", title: "Recipient not in allowed list" })
        const chat = yield* Effect.flatMap(Chats, (chats) => chats.get(orgId, result.chat_uuid))
        expect(chat.last_message).toMatchObject({ uuid: result.message_id, status: "failed" })
        transport.refuse(undefined)
        expect((yield* messaging.sendText(orgId, { phone: PHONE, message: "Again" })).status).toBe("sent")
        expect(transport.sent).toHaveLength(2)
        const [accepted] = yield* messagesOf(orgId, result.chat_uuid)
        expect([accepted?.status, accepted?.failure]).toEqual(["sent", null])
      })
    ))

  it.effect("a refusal without a provider code (network error, timeout) records failure code network_error", () =>
    withTransport((transport) =>
      Effect.gen(function* () {
        const { orgId, messaging } = yield* setUp()
        transport.refuse(new TransportFailed({ reason: "connect ECONNREFUSED 127.0.0.1:9", provider_code: null }))
        const text = yield* messaging.sendText(orgId, { phone: PHONE, message: "Hi" })
        transport.refuse(new TransportFailed({ reason: "  ", provider_code: " " }))
        const media = yield* messaging.sendMedia(orgId, { phone: PHONE, media: { type: "image", url: "https://example.com/a.png" } })
        const messages = yield* messagesOf(orgId, text.chat_uuid)
        expect(messages.map((m) => [m.uuid, m.status, m.failure])).toEqual([
          [media.message_id, "failed", { code: "network_error", title: "The provider gave no reason" }],
          [text.message_id, "failed", { code: "network_error", title: "connect ECONNREFUSED 127.0.0.1:9" }]
        ])
      })
    ))

  it.effect("Core.layer's default recording transport marks every send sent, without a provider id", () =>
    Effect.gen(function* () {
      const { orgId, messaging } = yield* setUp()
      const result = yield* messaging.sendText(orgId, { phone: PHONE, message: "Hi" })
      expect(result.status).toBe("sent")
      expect((yield* messagesOf(orgId, result.chat_uuid))[0]).toMatchObject({ status: "sent", provider_message_id: null })
    }).pipe(Effect.provide(Core.layer.pipe(Layer.provideMerge(MemoryStorage.layer)))))
})

describe("Messaging.sendMedia (POST /send/media)", () => {
  it.effect("records a media message (caption as text) and hands the media to the transport", () =>
    withTransport((transport) =>
      Effect.gen(function* () {
        const { orgId, messaging } = yield* setUp()
        const media = { type: "document", url: "https://example.com/invoice.pdf", caption: " Your invoice ", filename: "invoice.pdf" } as const
        const result = yield* messaging.sendMedia(orgId, { phone: PHONE, media })
        expect(result.status).toBe("sent")
        const [message] = yield* messagesOf(orgId, result.chat_uuid)
        const expected = { type: "document", url: "https://example.com/invoice.pdf", caption: "Your invoice", filename: "invoice.pdf" }
        expect(message).toMatchObject({ direction: "outbound", type: "media", text: "Your invoice", media: expected, template: null, status: "sent" })
        expect(transport.sent).toEqual([{ channel: null, message_id: result.message_id, to: PHONE, type: "media", media: expected }])
        const image = yield* messaging.sendMedia(orgId, { phone: PHONE, media: { type: "image", url: "http://example.com/a.png" } })
        expect((yield* messagesOf(orgId, image.chat_uuid))[0]).toMatchObject({ text: null, media: { type: "image", url: "http://example.com/a.png" } })
      })
    ))

  it.effect("media type one of image, video, audio, document; url http(s); caption ≤ 1024; nothing written on a 400", () =>
    withTransport((transport) =>
      Effect.gen(function* () {
        const { orgId, messaging } = yield* setUp()
        const fails = (media: unknown) =>
          Effect.map(failureOf(messaging.sendMedia(orgId, { phone: PHONE, media } as never)), issuesOf)
        expect(yield* fails(undefined)).toEqual([["media", "required"]])
        expect(yield* fails({ type: "sticker", url: "ftp://example.com/a.png" })).toEqual([
          ["media.type", "invalid_format"],
          ["media.url", "invalid_format"]
        ])
        expect(yield* fails({ type: "image", url: "https://example.com/a.png", caption: "c".repeat(1025) })).toEqual([
          ["media.caption", "too_long"]
        ])
        expect(yield* fails({ type: "video" })).toEqual([["media.url", "required"]])
        expect(yield* stored(orgId)).toEqual({ contacts: [], chats: [] })
        expect(transport.sent).toEqual([])
      })
    ))
})

describe("Messaging.sendTemplate (POST /send/template, docs/messaging.md)", () => {
  it.effect("records a template message with the normalised template object and the rendered text", () =>
    withTransport((transport) =>
      Effect.gen(function* () {
        const { orgId, messaging } = yield* setUp()
        const result = yield* messaging.sendTemplate(orgId, templateSend({ template: { name: " Order_Update ", language: { code: "en_US" }, components: filled } }))
        const template = { name: "order_update", language: { code: "en_US" }, components: filled }
        expect(result.status).toBe("sent")
        const [message] = yield* messagesOf(orgId, result.chat_uuid)
        expect(message).toMatchObject({
          uuid: result.message_id,
          direction: "outbound",
          type: "template",
          template,
          text: "Hi Ada, order #42 has shipped.\n\nReply STOP to opt out",
          media: null,
          status: "sent",
          provider_message_id: "wamid.1"
        })
        expect(transport.sent).toEqual([{ channel: null, message_id: result.message_id, to: PHONE, type: "template", template }])
      })
    ))

  it.effect("400 template_not_found / template_not_approved / template_parameters_mismatch, nothing written", () =>
    withTransport((transport) =>
      Effect.gen(function* () {
        const { orgId, messaging } = yield* setUp()
        yield* Effect.flatMap(Templates, (templates) => templates.create(orgId, { ...orderUpdate, name: "draft", status: "PENDING" }))
        const tagOf = (input: SendTemplateInput) => Effect.map(failureOf(messaging.sendTemplate(orgId, input)), (error) => error._tag)
        const named = (name: string, code = "en_US", components: unknown = filled) =>
          templateSend({ template: { name, language: { code }, components: components as ReadonlyArray<unknown> } })
        expect(yield* tagOf(named("no_such_template"))).toBe("TemplateNotFound")
        expect(yield* tagOf(named("order_update", "pt_BR"))).toBe("TemplateNotFound")
        expect(yield* tagOf(named("draft"))).toBe("TemplateNotApproved")
        expect(yield* tagOf(named("order_update", "en_US", []))).toBe("TemplateParametersMismatch")
        const empty = [{ type: "body", parameters: [{ type: "text", text: "Ada" }, { type: "text", text: " " }] }]
        const mismatch = yield* failureOf(messaging.sendTemplate(orgId, named("order_update", "en_US", empty)))
        expect(mismatch).toMatchObject({
          _tag: "TemplateParametersMismatch",
          issues: [{ code: "template_parameters_mismatch", field: "template.components[0].parameters[1].text" }]
        })
        expect(yield* stored(orgId)).toEqual({ contacts: [], chats: [] })
        expect(transport.sent).toEqual([])
      })
    ))

  it.effect("a malformed template object or phone is one InvalidInput listing every problem, before the template is looked up", () =>
    withTransport(() =>
      Effect.gen(function* () {
        const { orgId, messaging } = yield* setUp()
        const fails = (input: unknown) => Effect.map(failureOf(messaging.sendTemplate(orgId, input as SendTemplateInput)), issuesOf)
        expect(yield* fails({ phone: PHONE })).toEqual([["template", "required"]])
        expect(yield* fails({ phone: "nope", template: { name: "", language: "en_US", components: {} } })).toEqual([
          ["phone", "invalid_format"],
          ["template.name", "required"],
          ["template.language", "invalid_type"],
          ["template.language.code", "required"],
          ["template.components", "invalid_type"]
        ])
        expect(yield* fails(templateSend({ phone: "+1 415" }))).toEqual([["phone", "invalid_format"]])
        expect(yield* stored(orgId)).toEqual({ contacts: [], chats: [] })
      })
    ))

  it.effect("the contact fields given update the contact like a partial PUT; absent ones are kept; null clears", () =>
    withTransport(() =>
      Effect.gen(function* () {
        const { orgId, messaging } = yield* setUp()
        const contacts = yield* Contacts
        const first = yield* messaging.sendTemplate(orgId, templateSend({ first_name: " Ada ", last_name: "Lovelace", email: "ada@example.com" }))
        expect(yield* contacts.get(orgId, first.contact_uuid)).toMatchObject({ phone: PHONE, first_name: "Ada", last_name: "Lovelace", email: "ada@example.com" })
        const second = yield* messaging.sendTemplate(orgId, templateSend({ first_name: "Augusta" }))
        expect(second.contact_uuid).toBe(first.contact_uuid)
        expect(second.chat_uuid).toBe(first.chat_uuid)
        expect(yield* contacts.get(orgId, first.contact_uuid)).toMatchObject({ first_name: "Augusta", last_name: "Lovelace", email: "ada@example.com" })
        yield* messaging.sendTemplate(orgId, templateSend({ last_name: null, email: null }))
        expect(yield* contacts.get(orgId, first.contact_uuid)).toMatchObject({ first_name: "Augusta", last_name: null, email: null })
        const fails = (extra: Record<string, unknown>) =>
          Effect.map(failureOf(messaging.sendTemplate(orgId, templateSend(extra as Partial<SendTemplateInput>))), issuesOf)
        expect(yield* fails({ first_name: " ", email: "not-an-email" })).toEqual([["first_name", "required"], ["email", "invalid_format"]])
        expect(yield* fails({ last_name: "x".repeat(256) })).toEqual([["last_name", "too_long"]])
        expect((yield* stored(orgId)).contacts).toHaveLength(1)
      })
    ))
})

describe("contacts_limit on sends (docs/messaging.md)", () => {
  it.effect("a new contact that would pass the limit → PlanLimitExceeded, nothing written; an existing contact at the limit is sent to", () =>
    withTransport((transport) =>
      Effect.gen(function* () {
        const { orgId, messaging } = yield* setUp({ contacts_limit: 1 })
        const existing = yield* messaging.sendTemplate(orgId, templateSend({ first_name: "Ada" }))
        const other = "+14155550101"
        const blocked = yield* failureOf(messaging.sendTemplate(orgId, templateSend({ phone: other, first_name: "Bob" })))
        expect(blocked).toEqual(expect.objectContaining({ _tag: "PlanLimitExceeded", plan_limit: "contacts_limit", limit: 1, usage: 1, requested: 1 }))
        expect((yield* failureOf(messaging.sendText(orgId, { phone: other, message: "Hi" })))._tag).toBe("PlanLimitExceeded")
        const media = { type: "image", url: "https://example.com/a.png" } as const
        expect((yield* failureOf(messaging.sendMedia(orgId, { phone: other, media })))._tag).toBe("PlanLimitExceeded")
        const { contacts, chats } = yield* stored(orgId)
        expect([contacts.map((contact) => contact.phone), chats.length]).toEqual([[PHONE], 1])
        expect(transport.sent).toHaveLength(1)
        const again = yield* messaging.sendTemplate(orgId, templateSend({ first_name: "Ada B." }))
        expect(again).toMatchObject({ contact_uuid: existing.contact_uuid, status: "sent" })
        expect((yield* messaging.sendText(orgId, { phone: PHONE, message: "Hi" })).status).toBe("sent")
      })
    ))

  it.effect("a limit of 0 blocks every new contact; no limit (null) blocks none", () =>
    withTransport(() =>
      Effect.gen(function* () {
        const zero = yield* setUp({ contacts_limit: 0 })
        expect(yield* failureOf(zero.messaging.sendText(zero.orgId, { phone: PHONE, message: "Hi" }))).toMatchObject({ limit: 0, usage: 0, requested: 1 })
        const unlimited = yield* setUp({ contacts_limit: null })
        for (let n = 0; n < 3; n++) yield* unlimited.messaging.sendText(unlimited.orgId, { phone: `+1415555010${n}`, message: "Hi" })
        expect((yield* stored(unlimited.orgId)).contacts).toHaveLength(3)
      })
    ))
})

describe("Messaging.receive: auto-reply (issue 4)", () => {
  const hours = { name: "Hours", trigger: "Opening Hours", response: "We are open 9–17." }

  it.effect("an inbound text equal to a trigger (trimmed, any case) is answered with the response through the transport", () =>
    withTransport((transport) =>
      Effect.gen(function* () {
        const { orgId, messaging } = yield* setUp()
        yield* Effect.flatMap(BasicReplies, (replies) => replies.create(orgId, hours))
        const result = yield* messaging.receive(orgId, { phone: PHONE, type: "text", text: "  opening HOURS \n", provider_message_id: "in-1" })
        expect([result.contact_created, result.chat_created, result.duplicate]).toEqual([true, true, false])
        // Queued in the inbound's step, then sent by the send queue's dispatcher.
        expect(result.auto_reply).toEqual({
          message_id: expect.any(String),
          chat_uuid: result.chat.uuid,
          contact_uuid: result.chat.contact.uuid,
          status: "queued",
          provider_message_id: null,
          next_attempt_at: "1970-01-01T00:00:00.000Z",
          failure: null,
          transport: "custom"
        })
        expect(transport.sent).toEqual([])
        yield* dispatchOnce
        expect(transport.sent).toEqual([{ channel: null, message_id: result.auto_reply!.message_id, to: PHONE, type: "text", text: "We are open 9–17." }])
        const messages = yield* messagesOf(orgId, result.chat.uuid)
        expect(messages.map((message) => [message.direction, message.type, message.text, message.status]).sort()).toEqual([
          ["inbound", "text", "  opening HOURS \n", "delivered"],
          ["outbound", "text", "We are open 9–17.", "sent"]
        ])
        const chat = yield* Effect.flatMap(Chats, (chats) => chats.get(orgId, result.chat.uuid))
        expect([chat.status, chat.unread_count]).toEqual(["open", 1])
      })
    ))

  it.effect("is not triggered by other text, a media message, or a redelivered message; a resolved chat is reopened by the inbound, not by the reply", () =>
    withTransport((transport) =>
      Effect.gen(function* () {
        const { orgId, messaging } = yield* setUp()
        yield* Effect.flatMap(BasicReplies, (replies) => replies.create(orgId, hours))
        const other = yield* messaging.receive(orgId, { phone: PHONE, type: "text", text: "what are your opening hours?" })
        expect(other.auto_reply).toBeNull()
        const media = yield* messaging.receive(orgId, {
          phone: PHONE,
          type: "image",
          text: "opening hours",
          media: { type: "image", id: "1479537139650973", caption: "opening hours" }
        })
        expect(media.auto_reply).toBeNull()
        expect(transport.sent).toEqual([])
        yield* Effect.flatMap(Chats, (chats) => chats.setStatus(orgId, other.chat.uuid, "resolved"))
        const first = yield* messaging.receive(orgId, { phone: PHONE, type: "text", text: "Opening hours", provider_message_id: "in-7" })
        expect([first.chat.status, first.auto_reply?.status]).toEqual(["open", "queued"])
        yield* dispatchOnce
        const redelivered = yield* messaging.receive(orgId, { phone: PHONE, type: "text", text: "Opening hours", provider_message_id: "in-7" })
        expect([redelivered.duplicate, redelivered.auto_reply]).toEqual([true, null])
        expect(transport.sent).toHaveLength(1)
      })
    ))

  it.effect("answers a new phone even over contacts_limit; a refused reply is kept as failed", () =>
    withTransport((transport) =>
      Effect.gen(function* () {
        const { orgId, messaging } = yield* setUp({ contacts_limit: 0 })
        yield* Effect.flatMap(BasicReplies, (replies) => replies.create(orgId, hours))
        const result = yield* messaging.receive(orgId, { phone: PHONE, type: "text", text: "opening hours" })
        expect([result.contact_created, result.auto_reply?.status]).toEqual([true, "queued"])
        yield* dispatchOnce
        transport.refuse(new TransportFailed({ reason: "down", provider_code: null }))
        const refused = yield* messaging.receive(orgId, { phone: "+14155550101", type: "text", text: "opening hours" })
        expect(refused.auto_reply?.status).toBe("queued")
        yield* dispatchOnce
        const [reply] = (yield* messagesOf(orgId, refused.chat.uuid)).filter((message) => message.direction === "outbound")
        expect(reply).toMatchObject({ uuid: refused.auto_reply!.message_id, status: "failed", text: "We are open 9–17." })
        expect(reply?.failure).toEqual({ code: "network_error", title: "down" })
      })
    ))

  it.effect("bad inbound input is an InvalidInput and nothing is answered", () =>
    withTransport((transport) =>
      Effect.gen(function* () {
        const { orgId, messaging } = yield* setUp()
        const error = yield* failureOf(messaging.receive(orgId, { phone: "x", type: "text", text: "opening hours" }))
        expect(issuesOf(error)).toEqual([["phone", "invalid_format"]])
        expect(transport.sent).toEqual([])
      })
    ))
})

describe("tenant isolation", () => {
  it.effect("another organization's template is not found; the same phone is a different contact and chat per organization", () =>
    withTransport(() =>
      Effect.gen(function* () {
        const owner = yield* setUp()
        const other = yield* setUp({}, { ...orderUpdate, name: "welcome" })
        const missing = yield* failureOf(other.messaging.sendTemplate(other.orgId, templateSend()))
        expect(missing).toMatchObject({ _tag: "TemplateNotFound", name: "order_update", language: "en_US" })
        const mine = yield* owner.messaging.sendTemplate(owner.orgId, templateSend({ first_name: "Ada" }))
        const theirs = yield* other.messaging.sendText(other.orgId, { phone: PHONE, message: "Hi" })
        expect(theirs.contact_uuid).not.toBe(mine.contact_uuid)
        expect(theirs.chat_uuid).not.toBe(mine.chat_uuid)
        const otherContact = yield* Effect.flatMap(Contacts, (contacts) => contacts.get(other.orgId, theirs.contact_uuid as ContactId))
        expect(otherContact.first_name).toBeNull()
        expect((yield* failureOf(Effect.flatMap(Chats, (chats) => chats.get(other.orgId, mine.chat_uuid))))._tag).toBe("RecordNotFound")
      })
    ))
})

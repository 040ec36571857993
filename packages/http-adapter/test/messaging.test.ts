import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Effect, type Layer } from "effect"
import {
  type ChatId,
  Chats,
  Core,
  type OrganizationId,
  type Storage,
  Templates,
  type TemplateInput,
  WhatsAppCloudTransport
} from "@switchboard/core"
import type { SwitchboardHandler } from "@switchboard/http-adapter"
import { startSimulator, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"
import { bearer, makeHandler, makeSharedStorage, makeTenant, phone, request, updatePlan, type ApiClient } from "./helpers.js"

const storage = makeSharedStorage()
const handler = makeHandler(storage)
const handlers: Array<SwitchboardHandler> = [handler]
afterAll(() => Promise.all(handlers.map((each) => each.dispose())))

const orderUpdate: TemplateInput = {
  name: "order_update",
  language: "en_US",
  category: "UTILITY",
  status: "APPROVED",
  components: [{ type: "BODY", text: "Hi {{1}}, order {{2}} has shipped.", example: { body_text: [["Ada", "#1234"]] } }]
}
const filled = [{ type: "body", parameters: [{ type: "text", text: "Ada" }, { type: "text", text: "#42" }] }]
const template = { name: "order_update", language: { code: "en_US" }, components: filled }

/** Runs a core effect on `store` (templates have no create route; messages no read route). */
const onStore = <A, E>(store: Layer.Layer<Storage>, effect: Effect.Effect<A, E, Core.CoreServices>) =>
  Effect.runPromise(effect.pipe(Effect.provide(Core.layer), Effect.provide(store)))

const createTemplate = (store: Layer.Layer<Storage>, organizationId: OrganizationId, input: Partial<TemplateInput> = {}) =>
  onStore(store, Effect.flatMap(Templates, (templates) => templates.create(organizationId, { ...orderUpdate, ...input })))

const messagesOf = (store: Layer.Layer<Storage>, organizationId: OrganizationId, chatId: string) =>
  onStore(
    store,
    Effect.map(
      Effect.flatMap(Chats, (chats) => chats.messages(organizationId, chatId as ChatId, { page: 1, per_page: 100 })),
      (page) => page.items
    )
  )

/** A fresh organization with the order_update template on the shared handler. */
const tenant = async (plan: { contacts_limit?: number | null } = {}) => {
  const made = await makeTenant(storage, handler, { name: "Acme", plan })
  await createTemplate(storage, made.organization.id)
  return made
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** `[field, code]` of every error item. */
const errorsOf = (result: { errors: ReadonlyArray<{ code: string; field?: string }> }) =>
  result.errors.map((error) => [error.field, error.code])

const chatList = async (api: ApiClient) => (await api.get("/chats")).data.chats as Array<Record<string, any>>

describe("POST /send/template (docs/messaging.md)", () => {
  it("answers {message_id, chat_uuid, contact_uuid, status, provider_message_id, next_attempt_at, failure, transport}, upserts the contact and appends to its chat", async () => {
    const { api } = await tenant()
    const result = await api.post("/send/template", { phone: "+1 415 555 0100", template, first_name: "Ada", email: "ada@example.com", extra: 1 })
    expect(result.status).toBe(200)
    // No channel: the recording transport took it, and the answer says nothing left.
    expect(result.message).toBe("Message recorded: no channel, nothing left this server")
    expect(result.data).toEqual({
      message_id: expect.stringMatching(UUID),
      chat_uuid: expect.stringMatching(UUID),
      contact_uuid: expect.stringMatching(UUID),
      status: "sent",
      provider_message_id: null,
      next_attempt_at: null,
      failure: null,
      transport: "recording"
    })
    const contact = await api.get(`/contacts/${result.data.contact_uuid}`)
    expect(contact.data).toMatchObject({ phone: "+14155550100", first_name: "Ada", email: "ada@example.com", last_name: null })
    const [chat] = await chatList(api)
    expect(chat).toMatchObject({
      uuid: result.data.chat_uuid,
      status: "open",
      unread_count: 0,
      contact: { uuid: result.data.contact_uuid, phone: "+14155550100" },
      last_message: { uuid: result.data.message_id, direction: "outbound", type: "template", text: "Hi Ada, order #42 has shipped.", status: "sent" }
    })
    const again = await api.post("/send/template", { phone: "+14155550100", template, last_name: "Lovelace" })
    expect([again.data.chat_uuid, again.data.contact_uuid]).toEqual([result.data.chat_uuid, result.data.contact_uuid])
    expect((await api.get(`/contacts/${result.data.contact_uuid}`)).data).toMatchObject({ first_name: "Ada", last_name: "Lovelace" })
    expect(await chatList(api)).toHaveLength(1)
  })

  it("400 template_not_found, template_not_approved, template_parameters_mismatch; nothing written", async () => {
    const { api, organization } = await tenant()
    await createTemplate(storage, organization.id, { name: "draft", status: "REJECTED" })
    const send = (overrides: Record<string, unknown>) => api.post("/send/template", { phone: phone(1), template: { ...template, ...overrides } })
    const notFound = await send({ name: "nope" })
    expect([notFound.status, errorsOf(notFound)]).toEqual([400, [["template.name", "template_not_found"]]])
    const otherLanguage = await send({ language: { code: "de" } })
    expect(errorsOf(otherLanguage)).toEqual([["template.name", "template_not_found"]])
    const notApproved = await send({ name: "draft" })
    expect([notApproved.status, errorsOf(notApproved)]).toEqual([400, [["template.name", "template_not_approved"]]])
    const mismatch = await send({ components: [{ type: "body", parameters: [{ type: "text", text: "Ada" }] }] })
    expect([mismatch.status, errorsOf(mismatch)]).toEqual([400, [["template.components[0].parameters", "template_parameters_mismatch"]]])
    const missing = await send({ components: undefined })
    expect(missing.errors.map((error) => error.code)).toEqual(["template_parameters_mismatch"])
    expect((await api.get("/contacts")).data.contacts).toEqual([])
    expect(await chatList(api)).toEqual([])
  })

  it("400 for a bad phone, bad contact fields or a malformed template object, naming each field", async () => {
    const { api } = await tenant()
    const badPhone = await api.post("/send/template", { phone: "12345", template, email: "nope" })
    expect([badPhone.status, errorsOf(badPhone)]).toEqual([400, [["phone", "invalid_format"], ["email", "invalid_format"]]])
    const missing = await api.post("/send/template", {})
    expect(missing.status).toBe(400)
    expect(errorsOf(missing)).toEqual(expect.arrayContaining([["phone", "required"], ["template", "required"]]))
    const wrongTypes = await api.post("/send/template", { phone: phone(2), template: { name: 1, language: { code: "en_US" }, components: {} } })
    expect(wrongTypes.status).toBe(400)
    expect(errorsOf(wrongTypes)).toEqual(expect.arrayContaining([["template.name", "invalid_type"], ["template.components", "invalid_type"]]))
    const blankName = await api.post("/send/template", { phone: phone(2), template: { ...template, name: " " } })
    expect(errorsOf(blankName)).toEqual([["template.name", "required"]])
    expect((await api.get("/contacts")).data.contacts).toEqual([])
  })

  it("another organization's template is template_not_found", async () => {
    const owner = await tenant()
    const other = await makeTenant(storage, handler, { name: "Other" })
    expect((await owner.api.post("/send/template", { phone: phone(3), template })).status).toBe(200)
    const result = await other.api.post("/send/template", { phone: phone(3), template })
    expect(errorsOf(result)).toEqual([["template.name", "template_not_found"]])
    expect(await chatList(other.api)).toEqual([])
  })
})

describe("contacts_limit on sends (403 contacts_limit_reached)", () => {
  it("a new contact over the limit is refused with nothing written; an existing contact at the limit is sent to", async () => {
    const { api, organization } = await tenant({ contacts_limit: 1 })
    expect((await api.post("/send", { phone: phone(10), message: "Hi" })).status).toBe(200)
    for (const [path, body] of [
      ["/send/template", { phone: phone(11), template }],
      ["/send", { phone: phone(11), message: "Hi" }],
      ["/send/media", { phone: phone(11), media: { type: "image", url: "https://example.com/a.png" } }]
    ] as const) {
      const refused = await api.post(path, body)
      expect([refused.status, refused.errors.map((error) => error.code)], path).toEqual([403, ["contacts_limit_reached"]])
    }
    expect((await api.get("/contacts")).data.pagination.total).toBe(1)
    expect(await chatList(api)).toHaveLength(1)
    expect((await api.post("/send/template", { phone: phone(10), template, first_name: "Ada" })).status).toBe(200)
    await updatePlan(storage, organization.id, { contacts_limit: 2 })
    expect((await api.post("/send", { phone: phone(11), message: "Hi" })).status).toBe(200)
  })

  it("concurrent sends to new phones never pass the limit", async () => {
    const { api } = await tenant({ contacts_limit: 3 })
    const results = await Promise.all(Array.from({ length: 10 }, (_, n) => api.post("/send", { phone: phone(100 + n), message: "Hi" })))
    expect(results.filter((result) => result.status === 200)).toHaveLength(3)
    expect(results.filter((result) => result.status === 403)).toHaveLength(7)
    expect((await api.get("/contacts")).data.pagination.total).toBe(3)
  })
})

describe("POST /send (text)", () => {
  it("sends a text message: data shape, message record, chat status unchanged", async () => {
    const { api } = await tenant()
    const first = await api.post("/send", { phone: phone(20), message: "Hello" })
    expect(first.data).toEqual({
      message_id: expect.stringMatching(UUID),
      chat_uuid: expect.stringMatching(UUID),
      contact_uuid: expect.stringMatching(UUID),
      status: "sent",
      provider_message_id: null,
      next_attempt_at: null,
      failure: null,
      transport: "recording"
    })
    const [chat] = await chatList(api)
    expect(chat?.last_message).toMatchObject({ uuid: first.data.message_id, direction: "outbound", type: "text", text: "Hello", status: "sent" })
    const longest = await api.post("/send", { phone: phone(20), message: "x".repeat(4096) })
    expect(longest.status).toBe(200)
  })

  it("400: message required, a string, 1–4096 characters, not blank; phone required and valid", async () => {
    const { api } = await tenant()
    expect(errorsOf(await api.post("/send", { phone: phone(21), message: "x".repeat(4097) }))).toEqual([["message", "too_long"]])
    expect(errorsOf(await api.post("/send", { phone: phone(21), message: "  " }))).toEqual([["message", "required"]])
    expect(errorsOf(await api.post("/send", { phone: phone(21), message: 42 }))).toEqual([["message", "invalid_type"]])
    expect(errorsOf(await api.post("/send", { message: "Hi" }))).toEqual([["phone", "required"]])
    expect(errorsOf(await api.post("/send", { phone: "+999", message: "Hi" }))).toEqual([["phone", "invalid_format"]])
    expect(await chatList(api)).toEqual([])
  })
})

describe("POST /send/media", () => {
  it("sends media: data shape, a media message with the caption as its text", async () => {
    const { api } = await tenant()
    const media = { type: "video", url: "https://example.com/clip.mp4", caption: "Our new store" }
    const result = await api.post("/send/media", { phone: phone(30), media })
    expect(result.data).toEqual({
      message_id: expect.stringMatching(UUID),
      chat_uuid: expect.stringMatching(UUID),
      contact_uuid: expect.stringMatching(UUID),
      status: "sent",
      provider_message_id: null,
      next_attempt_at: null,
      failure: null,
      transport: "recording"
    })
    const [chat] = await chatList(api)
    expect(chat?.last_message).toMatchObject({ uuid: result.data.message_id, type: "media", text: "Our new store", status: "sent" })
  })

  it("400: media required; type image, video, audio or document; url http(s); caption ≤ 1024", async () => {
    const { api } = await tenant()
    const send = (media: unknown) => api.post("/send/media", { phone: phone(31), media })
    expect(errorsOf(await api.post("/send/media", { phone: phone(31) }))).toEqual([["media", "required"]])
    expect(errorsOf(await send({ type: "gif", url: "javascript:alert(1)" }))).toEqual([
      ["media.type", "invalid_format"],
      ["media.url", "invalid_format"]
    ])
    expect(errorsOf(await send({ type: "image", url: "https://example.com/a.png", caption: "c".repeat(1025) }))).toEqual([
      ["media.caption", "too_long"]
    ])
    expect(errorsOf(await send({ type: "image" }))).toEqual([["media.url", "required"]])
    expect(await chatList(api)).toEqual([])
  })
})

describe("sends and rate limits (docs/rate-limits.md)", () => {
  it("the three sends count in the send bucket only", async () => {
    const store = makeSharedStorage()
    const limited = makeHandler(store, { rateLimit: { send: { max: 3, windowMs: 60_000 }, general: { max: 100, windowMs: 60_000 } } })
    handlers.push(limited)
    const { organization, api } = await makeTenant(store, limited)
    await createTemplate(store, organization.id)
    const bodies = [
      ["/send/template", { phone: phone(40), template }],
      ["/send", { phone: phone(40), message: "Hi" }],
      ["/send/media", { phone: phone(40), media: { type: "audio", url: "https://example.com/a.ogg" } }]
    ] as const
    for (const [path, body] of bodies) expect((await api.post(path, body)).status, path).toBe(200)
    const refused = await api.post("/send", { phone: phone(40), message: "Hi" })
    expect([refused.status, refused.errors.map((error) => error.code)]).toEqual([429, ["rate_limited"]])
    const verify = await request(limited, { method: "GET", url: "/api/v1/api/verify", headers: bearer((await makeTenant(store, limited)).apiKey) })
    expect(verify.statusCode).toBe(200)
    const general = await api.get("/contacts")
    expect(general.status).toBe(200)
  })
})

describe("WhatsApp Cloud API transport end to end (issue 4)", () => {
  /** The WhatsApp simulator stands in for the Graph API: it records every request and answers as scripted. */
  let simulator: WhatsAppSimulator
  const recorded = () => simulator.received().map(({ authorization, body, path }) => ({ url: path, authorization: authorization ?? undefined, body }))

  beforeAll(async () => {
    simulator = await startSimulator({
      numbers: [{ phone_number_id: "106540352242922", display_phone_number: "+1 555-078-3881", waba_id: "102290129340398", access_token: "test-token" }]
    })
  })
  afterAll(() => simulator.close())

  it("POST /send/template reaches the Graph API messages endpoint; a provider error leaves the message failed, record kept", async () => {
    const store = makeSharedStorage()
    const baseUrl = simulator.url
    const whatsapp = makeHandler(store, {
      transport: WhatsAppCloudTransport.layer({ phoneNumberId: "106540352242922", accessToken: "test-token", baseUrl, apiVersion: "v21.0" })
    })
    handlers.push(whatsapp)
    const { organization, api } = await makeTenant(store, whatsapp)
    await createTemplate(store, organization.id)

    const sent = await api.post("/send/template", { phone: "+14155550100", template, first_name: "Ada" })
    expect(sent.data.status).toBe("sent")
    expect(recorded()).toEqual([
      {
        url: "/v21.0/106540352242922/messages",
        authorization: "Bearer test-token",
        body: { messaging_product: "whatsapp", recipient_type: "individual", to: "14155550100", biz_opaque_callback_data: sent.data.message_id, type: "template", template }
      }
    ])
    const [stored] = await messagesOf(store, organization.id, sent.data.chat_uuid)
    const wamid = simulator.sends()[0]!.wamid
    expect(wamid).toMatch(/^wamid\./)
    expect(stored).toMatchObject({ uuid: sent.data.message_id, status: "sent", provider_message_id: wamid })

    simulator.script.enqueue([{ code: 131030, http_status: 400 }])
    const failed = await api.post("/send/template", { phone: "+14155550100", template })
    expect(failed.status).toBe(200)
    expect(failed.data).toMatchObject({ chat_uuid: sent.data.chat_uuid, status: "failed" })
    expect(recorded()).toHaveLength(2)
    const messages = await messagesOf(store, organization.id, sent.data.chat_uuid)
    expect(messages.find((message) => message.uuid === failed.data.message_id)).toMatchObject({
      direction: "outbound",
      type: "template",
      status: "failed",
      provider_message_id: null,
      template
    })
    const [chat] = await chatList(api)
    expect(chat?.last_message).toMatchObject({ uuid: failed.data.message_id, status: "failed" })
  })
})

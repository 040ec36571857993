import { describe, expect, it } from "@effect/vitest"
import { Effect, HashMap, Layer, Logger, Option, TestClock } from "effect"
import {
  Broadcasts,
  Channels,
  ChannelVerifier,
  ContactGroups,
  Contacts,
  Core,
  generateSecretKey,
  MemoryStorage,
  Messaging,
  MessageTransport,
  type OrganizationId,
  Organizations,
  type OutboundMessage,
  reactToOutboundFailure,
  readProviderTemplate,
  SecretKey,
  startDueBroadcasts,
  Storage,
  type Template,
  type TemplateContent,
  type TemplateId,
  Templates,
  readWhatsAppWebhook,
  WhatsAppWebhooks
} from "@switchboard/core"
import { failureOf } from "./failure.js"

// Templates from Meta (docs/templates-and-replies.md "Templates from Meta"): reading an
// entry of Meta's template list, the identity per WhatsApp Business Account, templates
// Switchboard cannot send, the status webhook scoped by account, and broadcasts stopped
// when their template leaves APPROVED.

const WABA_ID = "102290129340398"
const OTHER_WABA_ID = "102290129340399"
const START = Date.parse("2026-11-27T09:00:00.000Z")

/** An entry of Meta's `GET /{waba_id}/message_templates`, as Meta answers it. */
const metaTemplate = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  name: "order_update",
  components: [
    { type: "HEADER", format: "TEXT", text: "Order {{1}}", example: { header_text: ["#1234"] } },
    {
      type: "BODY",
      text: "Hi {{1}}, your order {{2}} has shipped.",
      example: { body_text: [["Ada", "#1234"]] }
    },
    { type: "FOOTER", text: "Reply STOP to opt out" },
    {
      type: "BUTTONS",
      buttons: [
        { type: "URL", text: "Track", url: "https://example.com/track/{{1}}", example: ["https://example.com/track/1234"] },
        { type: "QUICK_REPLY", text: "Thanks" },
        { type: "PHONE_NUMBER", text: "Call us", phone_number: "+14155550100" }
      ]
    }
  ],
  language: "en_US",
  status: "APPROVED",
  category: "UTILITY",
  rejected_reason: "NONE",
  id: "1407680676729941",
  ...overrides
})

describe("readProviderTemplate", () => {
  it("reads a template Switchboard supports: no problems, the account and Meta's id, NONE as null, components checked", () => {
    const { content, problems } = readProviderTemplate(metaTemplate(), WABA_ID)
    expect(problems).toEqual([])
    expect(content).toEqual({
      waba_id: WABA_ID,
      provider_template_id: "1407680676729941",
      name: "order_update",
      language: "en_US",
      category: "UTILITY",
      status: "APPROVED",
      rejected_reason: null,
      components: metaTemplate().components,
      problems: []
    })
  })

  it("keeps Meta's reason and status; a numeric id is read as text; every status of Meta's list is known", () => {
    const rejected = readProviderTemplate(metaTemplate({ status: "REJECTED", rejected_reason: " INVALID_FORMAT ", id: 594425479261596 }), WABA_ID)
    expect(rejected.content).toMatchObject({ status: "REJECTED", rejected_reason: "INVALID_FORMAT", provider_template_id: "594425479261596" })
    expect(readProviderTemplate(metaTemplate({ rejected_reason: "x".repeat(2000) }), WABA_ID).content.rejected_reason).toHaveLength(1024)
    expect(readProviderTemplate(metaTemplate({ rejected_reason: undefined, id: undefined }), WABA_ID).content).toMatchObject({
      rejected_reason: null,
      provider_template_id: null
    })
    for (const status of ["PENDING", "PAUSED", "DISABLED", "IN_APPEAL", "PENDING_DELETION", "DELETED", "LIMIT_EXCEEDED", "ARCHIVED", "LOCKED"]) {
      const read = readProviderTemplate(metaTemplate({ status }), WABA_ID)
      expect([read.content.status, read.problems]).toEqual([status, []])
    }
  })

  it("a part Switchboard does not support is a problem naming its path; the components are kept exactly as Meta gave them", () => {
    const components = [
      { type: "HEADER", format: "LOCATION" },
      { type: "BODY", text: "Hi {{1}}", example: { body_text: [["Ada"]] } },
      { type: "CAROUSEL", cards: [{ components: [{ type: "HEADER", format: "IMAGE" }] }] },
      { type: "BUTTONS", buttons: [{ type: "QUICK_REPLY", text: "Yes" }, { type: "COPY_CODE", example: "250FF" }, { type: "FLOW", text: "Book", flow_id: "1" }] }
    ]
    const { content, problems } = readProviderTemplate(metaTemplate({ category: "MARKETING", components }), WABA_ID)
    expect(problems).toEqual([
      { path: "components[0].format", message: "components[0].format must be one of TEXT, IMAGE, VIDEO, DOCUMENT" },
      { path: "components[2].type", message: "components[2].type must be one of HEADER, BODY, FOOTER, BUTTONS" },
      { path: "components[3].buttons[1].type", message: "components[3].buttons[1].type must be one of QUICK_REPLY, URL, PHONE_NUMBER" },
      { path: "components[3].buttons[1].text", message: "components[3].buttons[1].text is required" },
      { path: "components[3].buttons[2].type", message: "components[3].buttons[2].type must be one of QUICK_REPLY, URL, PHONE_NUMBER" }
    ])
    expect(content.problems).toEqual(problems)
    expect(content.components).toEqual(components)
    expect(content).toMatchObject({ name: "order_update", category: "MARKETING", status: "APPROVED", waba_id: WABA_ID })
  })

  it("never fails: an unknown status or category, a broken body, a template that is not an object are problems", () => {
    const odd = readProviderTemplate(metaTemplate({ status: "SOMETHING_NEW", category: "TRANSACTIONAL", components: "none" }), WABA_ID)
    expect(odd.content).toMatchObject({ status: "PENDING", category: "UTILITY", components: [] })
    expect(odd.problems.map((problem) => problem.path)).toEqual(["category", "status", "components"])
    const placeholders = readProviderTemplate(metaTemplate({ components: [{ type: "BODY", text: "Hi {{2}}" }] }), WABA_ID)
    expect(placeholders.problems).toEqual([{ path: "components[0].text", message: expect.stringContaining("components[0].text") }])
    const missing = readProviderTemplate(metaTemplate({ name: undefined, language: undefined }), WABA_ID)
    expect(missing.content).toMatchObject({ name: "", language: "" })
    expect(missing.problems.map((problem) => problem.path)).toEqual(["name", "language"])
    const nothing = readProviderTemplate("not a template", WABA_ID)
    expect(nothing.problems[0]).toEqual({ path: "", message: "the template must be an object" })
    expect(nothing.content).toMatchObject({ name: "", waba_id: WABA_ID, components: [] })
  })
})

/** A transport that records what it is given. */
const makeTransport = () => {
  const sent: Array<OutboundMessage> = []
  const layer = Layer.succeed(MessageTransport, {
    send: (message) => Effect.sync(() => (sent.push(message), { provider_message_id: `wamid.${sent.length}`, status: "sent" as const }))
  })
  return { sent, layer }
}

const acceptingVerifier = Layer.succeed(ChannelVerifier, { verify: () => Effect.succeed({ display_phone_number: "+1 555-078-3881" }) })

const run = <A, E>(body: (sent: Array<OutboundMessage>) => Effect.Effect<A, E, Layer.Layer.Success<typeof Core.layer> | Storage>) =>
  Effect.suspend(() => {
    const transport = makeTransport()
    const layer = Core.layerWithTransport(transport.layer).pipe(
      Layer.provide(Layer.merge(SecretKey.layer(generateSecretKey()), acceptingVerifier)),
      Layer.provideMerge(MemoryStorage.layer)
    )
    return body(transport.sent).pipe(Effect.provide(layer))
  })

let phoneNumberIds = 0

/** A channel of the organization on `wabaId`. */
const addChannel = (organizationId: OrganizationId, wabaId: string) =>
  Effect.flatMap(Channels, (channels) =>
    channels.add(organizationId, {
      phone_number_id: String(106540352242000 + ++phoneNumberIds),
      waba_id: wabaId,
      access_token: "EAAGtemplatesfrommeta-000000000042"
    })
  )

const newOrganization = Effect.flatMap(Organizations, (organizations) => organizations.create({ name: "Acme" }))

/** Stores a template from Meta of `wabaId` as a sync would (`readProviderTemplate`, then the store). */
const storeFromMeta = (organizationId: OrganizationId, wabaId: string, overrides: Record<string, unknown> = {}) =>
  Effect.gen(function* () {
    const { content } = readProviderTemplate(metaTemplate(overrides), wabaId)
    const outcome = yield* (yield* Storage).templates.create(organizationId, {
      uuid: crypto.randomUUID() as TemplateId,
      content,
      now: new Date(START).toISOString()
    })
    if (outcome._tag !== "Written") return expect.fail(`expected Written, got ${outcome._tag}`)
    return outcome.template
  })

/** A template written by hand (no account): `body` its BODY text. */
const handWritten = (organizationId: OrganizationId, body: string, name = "welcome", status = "APPROVED") =>
  Effect.flatMap(Templates, (templates) =>
    templates.create(organizationId, { name, language: "en_US", category: "UTILITY", status, components: [{ type: "BODY", text: body }] })
  )

const sendWelcome = (organizationId: OrganizationId, channel_uuid?: string) =>
  Effect.flatMap(Messaging, (messaging) =>
    messaging.sendTemplate(organizationId, {
      phone: "+16505551234",
      template: { name: "welcome", language: { code: "en_US" } },
      ...(channel_uuid === undefined ? {} : { channel_uuid })
    })
  )

describe("sending a template of an account", () => {
  it.effect("a send through a channel uses its account's template, else the one with no account; without a channel only the latter", () =>
    run((sent) =>
      Effect.gen(function* () {
        const org = yield* newOrganization
        const first = yield* addChannel(org.id, WABA_ID)
        const second = yield* addChannel(org.id, OTHER_WABA_ID)
        yield* handWritten(org.id, "Hello from anyone")
        yield* storeFromMeta(org.id, WABA_ID, { name: "welcome", components: [{ type: "BODY", text: "Hello from the account" }] })
        const storage = yield* Storage
        const sentAs = (result: { readonly message_id: string }) =>
          Effect.map(storage.chats.findMessage(org.id, result.message_id as never), (found) => {
            const message = Option.getOrThrow(found)
            return [message.channel_uuid, message.text]
          })
        const results = [yield* sendWelcome(org.id), yield* sendWelcome(org.id, second.uuid), yield* sendWelcome(org.id, first.uuid)]
        expect(yield* Effect.forEach(results, sentAs)).toEqual([
          [first.uuid, "Hello from the account"],
          [second.uuid, "Hello from anyone"],
          [first.uuid, "Hello from the account"]
        ])
        expect(sent.length).toBeGreaterThan(0)
      })
    ))

  it.effect("a template with problems is never sent: the send, its payload and a broadcast answer TemplateUnsupported naming the first problem", () =>
    run((sent) =>
      Effect.gen(function* () {
        const org = yield* newOrganization
        const channel = yield* addChannel(org.id, WABA_ID)
        yield* handWritten(org.id, "Hello from anyone")
        const odd = yield* storeFromMeta(org.id, WABA_ID, {
          name: "welcome",
          status: "PAUSED",
          components: [{ type: "HEADER", format: "LOCATION" }, { type: "BODY", text: "Hello" }]
        })
        const error = yield* failureOf(sendWelcome(org.id, channel.uuid))
        expect(error).toMatchObject({ _tag: "TemplateUnsupported", name: "welcome", language: "en_US", path: "components[0].format" })
        expect(error.message).toBe("Template 'welcome' (en_US) cannot be sent: components[0].format must be one of TEXT, IMAGE, VIDEO, DOCUMENT")
        expect(yield* failureOf(Effect.flatMap(Templates, (templates) => templates.payload(org.id, odd.uuid)))).toMatchObject({
          _tag: "TemplateUnsupported",
          path: "components[0].format"
        })
        const group = yield* (yield* ContactGroups).create(org.id, "All")
        yield* (yield* Contacts).importBulk(org.id, [{ first_name: "Ada", phone: "+14155550001", group: [group.uuid] }])
        const broadcast = Effect.flatMap(Broadcasts, (broadcasts) =>
          broadcasts.create(org.id, {
            name: "B",
            template: { name: "welcome", language: { code: "en_US" }, components: [] },
            audience: { group_uuids: [group.uuid] }
          })
        )
        expect((yield* failureOf(broadcast))._tag).toBe("TemplateUnsupported")
        expect(sent).toEqual([])
        // A component of a type Switchboard does not know is never read as one it does.
        const carousel = yield* storeFromMeta(org.id, OTHER_WABA_ID, { components: [{ type: "BODY", text: "Hi" }, { type: "CAROUSEL", cards: [] }] })
        expect(yield* failureOf(Effect.flatMap(Templates, (templates) => templates.payload(org.id, carousel.uuid)))).toMatchObject({
          _tag: "TemplateUnsupported",
          path: "components[1].type"
        })
      })
    ))

  it.effect("Templates.update refuses a template from Meta (TemplateManagedByMeta), nothing written; one written by hand is changed", () =>
    run(() =>
      Effect.gen(function* () {
        const org = yield* newOrganization
        const templates = yield* Templates
        const fromMeta = yield* storeFromMeta(org.id, WABA_ID)
        const error = yield* failureOf(templates.update(org.id, fromMeta.uuid, { status: "APPROVED", name: "renamed" }))
        expect(error).toMatchObject({ _tag: "TemplateManagedByMeta", uuid: fromMeta.uuid, name: "order_update" })
        expect(yield* templates.get(org.id, fromMeta.uuid)).toEqual(fromMeta)
        // Meta's id alone (an account-less row Meta named) is Meta's too.
        const { content } = readProviderTemplate(metaTemplate({ name: "with_id" }), WABA_ID)
        const withIdOnly: TemplateContent = { ...content, waba_id: null }
        const written = yield* (yield* Storage).templates.create(org.id, { uuid: crypto.randomUUID() as TemplateId, content: withIdOnly, now: "2026-11-27T09:00:00.000Z" })
        const idOnly = written._tag === "Written" ? written.template : expect.fail("not written")
        expect((yield* failureOf(templates.update(org.id, idOnly.uuid, { status: "PAUSED" })))._tag).toBe("TemplateManagedByMeta")
        const mine = yield* handWritten(org.id, "Hello")
        expect((yield* templates.update(org.id, mine.uuid, { status: "PAUSED" })).status).toBe("PAUSED")
      })
    ))
})

const statusUpdate = (wabaId: string, value: Record<string, unknown>) => ({
  object: "whatsapp_business_account",
  entry: [{ id: wabaId, time: 1, changes: [{ field: "message_template_status_update", value: { reason: "NONE", ...value } }] }]
})

const receive = (payload: unknown) => Effect.flatMap(WhatsAppWebhooks, (webhooks) => webhooks.receive(payload))

const statusOf = (organizationId: OrganizationId, template: Template) =>
  Effect.map(Effect.flatMap(Templates, (templates) => templates.get(organizationId, template.uuid)), (found) => found.status)

describe("the template status webhook, scoped by account", () => {
  it.effect("matches Meta's message_template_id first, then name and language in the account, then with no account; another account's template is never touched", () =>
    run(() =>
      Effect.gen(function* () {
        const org = yield* newOrganization
        yield* addChannel(org.id, WABA_ID)
        yield* addChannel(org.id, OTHER_WABA_ID)
        const none = yield* handWritten(org.id, "Hello", "order_update", "PENDING")
        const ours = yield* storeFromMeta(org.id, WABA_ID, { status: "PENDING", id: "5001" })
        const theirs = yield* storeFromMeta(org.id, OTHER_WABA_ID, { status: "PENDING", id: "5002" })
        // By id: Meta's id names the row, even under another name.
        yield* receive(statusUpdate(WABA_ID, { event: "APPROVED", message_template_id: 5001, message_template_name: "renamed", message_template_language: "en_US" }))
        expect([yield* statusOf(org.id, ours), yield* statusOf(org.id, theirs), yield* statusOf(org.id, none)]).toEqual(["APPROVED", "PENDING", "PENDING"])
        // An unknown id: by name and language in the account.
        yield* receive(statusUpdate(OTHER_WABA_ID, { event: "REJECTED", reason: "INVALID_FORMAT", message_template_id: 9999, message_template_name: "order_update", message_template_language: "en_US" }))
        expect(yield* Effect.flatMap(Templates, (templates) => templates.get(org.id, theirs.uuid))).toMatchObject({ status: "REJECTED", rejected_reason: "INVALID_FORMAT" })
        expect([yield* statusOf(org.id, ours), yield* statusOf(org.id, none)]).toEqual(["APPROVED", "PENDING"])
        // Another account's id is not this account's template.
        yield* receive(statusUpdate(WABA_ID, { event: "PAUSED", message_template_id: 5002, message_template_name: "order_update", message_template_language: "en_US" }))
        expect([yield* statusOf(org.id, ours), yield* statusOf(org.id, theirs)]).toEqual(["PAUSED", "REJECTED"])
        // No template of the account by that name: the one with no account.
        const welcome = yield* handWritten(org.id, "Hi", "welcome", "PENDING")
        yield* receive(statusUpdate(WABA_ID, { event: "APPROVED", message_template_name: "welcome", message_template_language: "en_US" }))
        expect(yield* statusOf(org.id, welcome)).toBe("APPROVED")
      })
    ))

  it.effect("REINSTATED is stored as APPROVED; FLAGGED changes nothing and is logged", () =>
    run(() =>
      Effect.gen(function* () {
        const org = yield* newOrganization
        yield* addChannel(org.id, WABA_ID)
        const template = yield* storeFromMeta(org.id, WABA_ID, { status: "PAUSED", id: "5001" })
        const lines: Array<Record<string, unknown>> = []
        const logger = Logger.make(({ annotations, message }) => {
          lines.push({ message: String(message), ...Object.fromEntries(HashMap.toEntries(annotations)) })
        })
        const update = (event: string) => statusUpdate(WABA_ID, { event, message_template_id: 5001, message_template_name: "order_update", message_template_language: "en_US" })
        yield* receive(update("REINSTATED"))
        const reinstated = yield* Effect.flatMap(Templates, (templates) => templates.get(org.id, template.uuid))
        expect(reinstated.status).toBe("APPROVED")
        const receipt = yield* receive(update("FLAGGED")).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
        expect(receipt.received).toBe(1)
        expect(yield* Effect.flatMap(Templates, (templates) => templates.get(org.id, template.uuid))).toEqual(reinstated)
        expect(lines).toContainEqual(expect.objectContaining({
          message: "WhatsApp template flagged by Meta: its quality is low, its status is unchanged",
          template_id: template.uuid
        }))
      })
    ))
})

describe("the template category webhook (template_category_update)", () => {
  const categoryUpdate = (wabaId: string, value: Record<string, unknown>) => ({
    object: "whatsapp_business_account",
    entry: [{ id: wabaId, time: 1, changes: [{ field: "template_category_update", value }] }]
  })

  it.effect("sets Meta's new_category on the template Meta's id names (status untouched); an unknown category or template changes nothing", () =>
    run(() =>
      Effect.gen(function* () {
        const org = yield* newOrganization
        yield* addChannel(org.id, WABA_ID)
        const template = yield* storeFromMeta(org.id, WABA_ID, { status: "APPROVED", id: "5001" })
        const before = yield* Effect.flatMap(Templates, (templates) => templates.get(org.id, template.uuid))
        expect(before.category).toBe("UTILITY")
        const update = (new_category: string, id = 5001) =>
          categoryUpdate(WABA_ID, { message_template_id: id, message_template_name: "order_update", message_template_language: "en_US", previous_category: "UTILITY", new_category })
        expect((yield* receive(update("MARKETING"))).received).toBe(1)
        const after = yield* Effect.flatMap(Templates, (templates) => templates.get(org.id, template.uuid))
        expect([after.category, after.status]).toEqual(["MARKETING", "APPROVED"])
        yield* receive(update("SOMETHING_ELSE"))
        yield* receive(categoryUpdate(WABA_ID, { message_template_id: 9999, message_template_name: "unknown", message_template_language: "en_US", new_category: "UTILITY" }))
        expect(yield* Effect.flatMap(Templates, (templates) => templates.get(org.id, template.uuid))).toEqual(after)
      })
    ))

  it("a category update missing new_category is refused as a part of unexpected shape", () => {
    const changes = readWhatsAppWebhook(categoryUpdate(WABA_ID, { message_template_id: 1, message_template_name: "x", message_template_language: "en_US" }))
    expect(changes?.map((change) => change._tag)).toEqual(["Refused"])
    expect(readWhatsAppWebhook(categoryUpdate(WABA_ID, { message_template_id: 1, message_template_name: "x", message_template_language: "en_US", new_category: "MARKETING" }))).toEqual([
      expect.objectContaining({ _tag: "TemplateCategory", waba_id: WABA_ID, provider_template_id: "1", name: "x", language: "en_US", category: "MARKETING" })
    ])
  })
})

describe("a template leaving APPROVED stops its sending broadcasts", () => {
  /** An organization with a group of two contacts, at START. */
  const tenant = Effect.gen(function* () {
    yield* TestClock.setTime(START)
    const org = yield* newOrganization
    const group = yield* (yield* ContactGroups).create(org.id, "All")
    yield* (yield* Contacts).importBulk(org.id, [
      { first_name: "Ada", phone: "+14155550001", group: [group.uuid] },
      { first_name: "Bo", phone: "+14155550002", group: [group.uuid] }
    ])
    return { organizationId: org.id, groupUuid: group.uuid }
  })

  const startBroadcast = (organizationId: OrganizationId, groupUuid: string, channel_uuid?: string) =>
    Effect.gen(function* () {
      const broadcast = yield* (yield* Broadcasts).create(organizationId, {
        name: "B",
        template: { name: "order_update", language: { code: "en_US" }, components: [{ type: "body", parameters: [{ type: "text", text: "x" }] }] },
        audience: { group_uuids: [groupUuid] },
        ...(channel_uuid === undefined ? {} : { channel_uuid })
      })
      yield* startDueBroadcasts
      return broadcast
    })

  const broadcastOf = (organizationId: OrganizationId, uuid: string) =>
    Effect.flatMap(Broadcasts, (broadcasts) => broadcasts.get(organizationId, uuid as never))

  it.effect("the webhook's move away from APPROVED stops the broadcasts sending that template (template_not_approved), not those of another account's", () =>
    run(() =>
      Effect.gen(function* () {
        const { organizationId, groupUuid } = yield* tenant
        const body = [{ type: "BODY", text: "Hi {{1}}", example: { body_text: [["Ada"]] } }]
        const none = yield* (yield* Templates).create(organizationId, { name: "order_update", language: "en_US", category: "UTILITY", status: "APPROVED", components: body })
        const ofAccount = yield* storeFromMeta(organizationId, WABA_ID, { components: body, id: "5001" })
        // No channel: the broadcast sends the template with no account.
        const broadcast = yield* startBroadcast(organizationId, groupUuid)
        expect((yield* broadcastOf(organizationId, broadcast.uuid)).channel_uuid).toBeNull()
        yield* addChannel(organizationId, WABA_ID)
        yield* receive(statusUpdate(WABA_ID, { event: "PAUSED", message_template_id: 5001, message_template_name: "order_update", message_template_language: "en_US" }))
        expect([yield* statusOf(organizationId, ofAccount), yield* statusOf(organizationId, none)]).toEqual(["PAUSED", "APPROVED"])
        expect((yield* broadcastOf(organizationId, broadcast.uuid)).status).toBe("sending")
        yield* (yield* Templates).applyProviderStatus(organizationId, { waba_id: null, name: "order_update", language: "en_US", status: "DISABLED", reason: null })
        expect(yield* broadcastOf(organizationId, broadcast.uuid)).toMatchObject({
          status: "stopped",
          stopped_reason: { code: "template_not_approved", title: "The broadcast's template is no longer approved" },
          counts: { queued: 0, failed: 2 }
        })
      })
    ))

  it.effect("a pause of the account's template stops the broadcast through its channel; the one of no account's template keeps sending", () =>
    run(() =>
      Effect.gen(function* () {
        const { organizationId, groupUuid } = yield* tenant
        const body = [{ type: "BODY", text: "Hi {{1}}", example: { body_text: [["Ada"]] } }]
        yield* (yield* Templates).create(organizationId, { name: "order_update", language: "en_US", category: "UTILITY", status: "APPROVED", components: body })
        const withoutChannel = yield* startBroadcast(organizationId, groupUuid)
        const channel = yield* addChannel(organizationId, WABA_ID)
        const ofAccount = yield* storeFromMeta(organizationId, WABA_ID, { components: body, id: "5001" })
        const throughChannel = yield* startBroadcast(organizationId, groupUuid, channel.uuid)
        expect((yield* broadcastOf(organizationId, throughChannel.uuid)).status).toBe("sending")
        yield* receive(statusUpdate(WABA_ID, { event: "PAUSED", message_template_id: 5001, message_template_name: "order_update", message_template_language: "en_US" }))
        expect(yield* statusOf(organizationId, ofAccount)).toBe("PAUSED")
        expect(yield* broadcastOf(organizationId, throughChannel.uuid)).toMatchObject({ status: "stopped", stopped_reason: { code: "template_not_approved" } })
        expect((yield* broadcastOf(organizationId, withoutChannel.uuid)).status).toBe("sending")
        // A later move between other statuses stops nothing more, and APPROVED again stops nothing.
        yield* receive(statusUpdate(WABA_ID, { event: "REINSTATED", message_template_id: 5001, message_template_name: "order_update", message_template_language: "en_US" }))
        expect((yield* broadcastOf(organizationId, withoutChannel.uuid)).status).toBe("sending")
      })
    ))

  it.effect("a scheduled broadcast whose template gained problems before its start stops with template_unsupported", () =>
    run(() =>
      Effect.gen(function* () {
        const { organizationId, groupUuid } = yield* tenant
        yield* addChannel(organizationId, WABA_ID)
        const body = [{ type: "BODY", text: "Hi {{1}}", example: { body_text: [["Ada"]] } }]
        const template = yield* storeFromMeta(organizationId, WABA_ID, { components: body, id: "5001" })
        const broadcast = yield* (yield* Broadcasts).create(organizationId, {
          name: "Later",
          template: { name: "order_update", language: { code: "en_US" }, components: [{ type: "body", parameters: [{ type: "text", text: "x" }] }] },
          audience: { group_uuids: [groupUuid] },
          send_at: new Date(START + 5_000).toISOString()
        })
        // A sync finds Meta changed it into something Switchboard cannot send.
        const { content } = readProviderTemplate(metaTemplate({ id: "5001", components: [{ type: "BODY", text: "Hi" }, { type: "CAROUSEL", cards: [] }] }), WABA_ID)
        yield* (yield* Storage).templates.update(organizationId, template.uuid, content, new Date(START + 1_000).toISOString())
        yield* TestClock.adjust(5_000)
        yield* startDueBroadcasts
        expect(yield* broadcastOf(organizationId, broadcast.uuid)).toMatchObject({
          status: "stopped",
          stopped_reason: { code: "template_unsupported" },
          counts: { total: 0 }
        })
      })
    ))

  it.effect("Meta's 132001 (no such template in that language) on a recipient stops its broadcast", () =>
    run(() =>
      Effect.gen(function* () {
        const { organizationId, groupUuid } = yield* tenant
        const body = [{ type: "BODY", text: "Hi {{1}}", example: { body_text: [["Ada"]] } }]
        yield* (yield* Templates).create(organizationId, { name: "order_update", language: "en_US", category: "UTILITY", status: "APPROVED", components: body })
        const broadcast = yield* startBroadcast(organizationId, groupUuid)
        const storage = yield* Storage
        const [first] = (yield* (yield* Broadcasts).recipients(organizationId, broadcast.uuid, {})).recipients
        const message = Option.getOrThrow(yield* storage.chats.findMessage(organizationId, first!.message_uuid))
        yield* reactToOutboundFailure(storage, organizationId, message, { code: "132001", title: "Template name does not exist in the translation" }, new Date(START).toISOString())
        expect(yield* broadcastOf(organizationId, broadcast.uuid)).toMatchObject({ status: "stopped", stopped_reason: { code: "132001" } })
      })
    ))
})

import { afterAll, describe, expect, it } from "vitest"
import { Effect, type Layer } from "effect"
import {
  Core,
  readProviderTemplate,
  Storage,
  Templates,
  TemplateManagedByMeta,
  TemplateNameTaken,
  TemplateNotApproved,
  TemplateNotFound,
  TemplateParametersMismatch,
  TemplateUnsupported,
  type OrganizationId,
  type Template,
  type TemplateId,
  type TemplateInput
} from "@switchboard/core"
import { responseForDomainError } from "@switchboard/http-adapter"
import { makeHandler, makeSharedStorage, makeTenant, UNKNOWN_UUID } from "./helpers.js"

const storage = makeSharedStorage()
const handler = makeHandler(storage)
afterAll(() => handler.dispose())

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/

/** Creates a template through core (the API has no create route); returns the record. */
const createTemplate = (store: Layer.Layer<Storage>, organizationId: OrganizationId, input: Partial<TemplateInput> = {}) =>
  Effect.runPromise(
    Templates.pipe(
      Effect.flatMap((templates) => templates.create(organizationId, { ...orderUpdate, ...input })),
      Effect.provide(Core.layer),
      Effect.provide(store)
    )
  )

const orderUpdate: TemplateInput = {
  name: "order_update",
  language: "en_US",
  category: "UTILITY",
  status: "APPROVED",
  components: [
    { type: "HEADER", format: "IMAGE", example: { header_handle: ["https://cdn.example.com/box.png"] } },
    { type: "BODY", text: "Hi {{1}}, order {{2}} has shipped.", example: { body_text: [["Ada", "#1234"]] } },
    { type: "FOOTER", text: "Reply STOP to opt out" },
    { type: "BUTTONS", buttons: [{ type: "URL", text: "Track", url: "https://example.com/track/{{1}}" }, { type: "QUICK_REPLY", text: "Thanks" }] }
  ]
}

/** Stores an entry of Meta's template list of account `wabaId` as a sync would; returns the record. */
const storeFromMeta = (store: Layer.Layer<Storage>, organizationId: OrganizationId, wabaId: string, entry: Record<string, unknown>) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const { content } = readProviderTemplate(entry, wabaId)
      const outcome = yield* (yield* Storage).templates.create(organizationId, {
        uuid: crypto.randomUUID() as TemplateId,
        content,
        now: new Date().toISOString()
      })
      return outcome._tag === "Written" ? outcome.template : yield* Effect.dieMessage(`not written: ${outcome._tag}`)
    }).pipe(Effect.provide(store))
  )

const tenant = async () => {
  const { organization, api } = await makeTenant(storage, handler)
  return {
    api,
    create: (input: Partial<TemplateInput> = {}) => createTemplate(storage, organization.id, input),
    fromMeta: (wabaId: string, entry: Record<string, unknown>): Promise<Template> => storeFromMeta(storage, organization.id, wabaId, entry)
  }
}

describe("GET /templates (docs/http-api.md 'Pagination')", () => {
  it("lists {templates, pagination} newest first with every record field", async () => {
    const { api, create } = await tenant()
    const first = await create()
    const second = await create({ name: "welcome", status: "PENDING", components: [{ type: "BODY", text: "Welcome!" }] })
    const result = await api.get("/templates")
    expect(result.status).toBe(200)
    expect(result.data).toEqual({
      templates: [second, first].map((template) => JSON.parse(JSON.stringify(template))),
      pagination: { page: 1, per_page: 20, total: 2, total_pages: 1 }
    })
    expect(result.data.templates[1]).toEqual({
      uuid: first.uuid,
      waba_id: null,
      provider_template_id: null,
      name: "order_update",
      language: "en_US",
      category: "UTILITY",
      status: "APPROVED",
      rejected_reason: null,
      components: orderUpdate.components,
      problems: [],
      created_at: expect.stringMatching(ISO_UTC),
      updated_at: expect.stringMatching(ISO_UTC)
    })
  })

  it("pages with page and per_page; past the end is an empty 200; bad values → 400 naming them", async () => {
    const { api, create } = await tenant()
    for (let n = 0; n < 5; n++) await create({ name: `t${n}` })
    const second = await api.get("/templates?page=2&per_page=2")
    expect(second.data.templates.map((template: { name: string }) => template.name)).toEqual(["t2", "t1"])
    expect(second.data.pagination).toEqual({ page: 2, per_page: 2, total: 5, total_pages: 3 })
    expect(await api.get("/templates?page=4&per_page=2")).toMatchObject({ status: 200, data: { templates: [] } })
    for (const [query, field] of [["page=0", "page"], ["per_page=101", "per_page"], ["per_page=0", "per_page"], ["page=x", "page"]]) {
      const result = await api.get(`/templates?${query}`)
      expect(result.status, query).toBe(400)
      expect(result.errors[0]?.field, query).toBe(field)
    }
  })
})

describe("GET /templates/{uuid} (extension)", () => {
  it("reads one template; 404 not_found for an unknown uuid; 400 for a malformed one", async () => {
    const { api, create } = await tenant()
    const template = await create()
    const read = await api.get(`/templates/${template.uuid}`)
    expect(read.status).toBe(200)
    expect(read.data).toEqual(JSON.parse(JSON.stringify(template)))
    expect((await api.get(`/templates/${template.uuid.toUpperCase()}`)).data.uuid).toBe(template.uuid)
    const unknown = await api.get(`/templates/${UNKNOWN_UUID}`)
    expect(unknown.status).toBe(404)
    expect(unknown.errors.map((error) => error.code)).toEqual(["not_found"])
    const malformed = await api.get("/templates/order_update")
    expect(malformed.status).toBe(400)
    expect(malformed.errors[0]?.field).toBe("uuid")
  })
})

describe("GET /templates/{uuid}/payload (docs/templates-and-replies.md)", () => {
  it("answers the send-ready template object with every slot empty, and the slots", async () => {
    const { api, create } = await tenant()
    const template = await create()
    const result = await api.get(`/templates/${template.uuid}/payload`)
    expect(result.status).toBe(200)
    expect(result.data).toEqual({
      template: {
        name: "order_update",
        language: { code: "en_US" },
        components: [
          { type: "header", parameters: [{ type: "image", image: { link: "" } }] },
          { type: "body", parameters: [{ type: "text", text: "" }, { type: "text", text: "" }] },
          { type: "button", sub_type: "url", index: "0", parameters: [{ type: "text", text: "" }] }
        ]
      },
      slots: [
        { component: 0, index: 0, type: "image", example: "https://cdn.example.com/box.png" },
        { component: 1, index: 0, type: "text", example: "Ada" },
        { component: 1, index: 1, type: "text", example: "#1234" },
        { component: 2, index: 0, type: "text", example: null }
      ]
    })
  })

  it("is served for a template that is not approved; 404 for an unknown uuid, 400 for a malformed one", async () => {
    const { api, create } = await tenant()
    const pending = await create({ status: "PENDING", components: [{ type: "BODY", text: "No placeholders" }] })
    expect((await api.get(`/templates/${pending.uuid}/payload`)).data).toEqual({
      template: { name: "order_update", language: { code: "en_US" }, components: [] },
      slots: []
    })
    const unknown = await api.get(`/templates/${UNKNOWN_UUID}/payload`)
    expect(unknown.status).toBe(404)
    expect(unknown.errors[0]?.code).toBe("not_found")
    expect((await api.get("/templates/nope/payload")).status).toBe(400)
  })
})

describe("templates from Meta (docs/templates-and-replies.md 'Templates from Meta')", () => {
  const carousel = {
    id: "1407680676729941",
    name: "spring_cards",
    language: "en_US",
    status: "APPROVED",
    category: "MARKETING",
    rejected_reason: "NONE",
    components: [
      { type: "BODY", text: "Hi {{1}}", example: { body_text: [["Ada"]] } },
      { type: "CAROUSEL", cards: [{ components: [{ type: "HEADER", format: "IMAGE" }] }] }
    ]
  }

  it("records carry waba_id, provider_template_id and problems; Meta's components are answered as Meta gave them", async () => {
    const { api, fromMeta } = await tenant()
    const template = await fromMeta("102290129340398", carousel)
    const read = await api.get(`/templates/${template.uuid}`)
    expect(read.data).toEqual({
      uuid: template.uuid,
      waba_id: "102290129340398",
      provider_template_id: "1407680676729941",
      name: "spring_cards",
      language: "en_US",
      category: "MARKETING",
      status: "APPROVED",
      rejected_reason: null,
      components: carousel.components,
      problems: [{ path: "components[1].type", message: "components[1].type must be one of HEADER, BODY, FOOTER, BUTTONS" }],
      created_at: expect.stringMatching(ISO_UTC),
      updated_at: expect.stringMatching(ISO_UTC)
    })
  })

  it("a template with problems: its payload and a send answer 400 template_unsupported naming the first problem", async () => {
    const { api, fromMeta } = await tenant()
    const template = await fromMeta("102290129340398", carousel)
    const payload = await api.get(`/templates/${template.uuid}/payload`)
    expect(payload.status).toBe(400)
    expect(payload.message).toBe("Template 'spring_cards' (en_US) cannot be sent: components[1].type must be one of HEADER, BODY, FOOTER, BUTTONS")
    expect(payload.errors).toEqual([
      {
        code: "template_unsupported",
        field: "template.name",
        message: "components[1].type: components[1].type must be one of HEADER, BODY, FOOTER, BUTTONS"
      }
    ])
    // No channel: the send looks for a template with no account, and this one has one.
    const noChannel = await api.post("/send/template", { phone: "+31612345678", template: { name: "spring_cards", language: { code: "en_US" } } })
    expect(noChannel.errors.map((error) => error.code)).toEqual(["template_not_found"])
  })
})

describe("templates: tenant isolation", () => {
  it("another organization's key cannot list, read or build the payload of a template", async () => {
    const owner = await tenant()
    const intruder = await tenant()
    const template = await owner.create()
    expect((await intruder.api.get("/templates")).data).toEqual({ templates: [], pagination: { page: 1, per_page: 20, total: 0, total_pages: 0 } })
    for (const path of [`/templates/${template.uuid}`, `/templates/${template.uuid}/payload`]) {
      const result = await intruder.api.get(path)
      expect(result.status, path).toBe(404)
      expect(result.errors.map((error) => error.code), path).toEqual(["not_found"])
    }
    const same = await intruder.create()
    expect((await intruder.api.get("/templates")).data.templates.map((t: { uuid: string }) => t.uuid)).toEqual([same.uuid])
    expect((await owner.api.get("/templates")).data.templates.map((t: { uuid: string }) => t.uuid)).toEqual([template.uuid])
  })
})

describe("template errors in the error table (docs/errors.md)", () => {
  it("map to 400 (409 for template_managed_by_meta) with their codes and fields", () => {
    const body = (error: Parameters<typeof responseForDomainError>[0]) => {
      const response = responseForDomainError(error)
      return { status: response.status, errors: response.body.errors.map(({ code, field }) => ({ code, field })) }
    }
    expect(body(new TemplateNameTaken({ name: "a", language: "en" }))).toEqual({
      status: 400,
      errors: [{ code: "template_name_taken", field: "name" }]
    })
    expect(body(new TemplateNotFound({ name: "a", language: "en" }))).toEqual({
      status: 400,
      errors: [{ code: "template_not_found", field: "template.name" }]
    })
    expect(body(new TemplateNotApproved({ name: "a", language: "en", status: "PENDING" }))).toEqual({
      status: 400,
      errors: [{ code: "template_not_approved", field: "template.name" }]
    })
    const mismatch = new TemplateParametersMismatch({
      issues: [{ code: "template_parameters_mismatch", field: "template.components[1].parameters", message: "2 expected" }]
    })
    expect(body(mismatch)).toEqual({
      status: 400,
      errors: [{ code: "template_parameters_mismatch", field: "template.components[1].parameters" }]
    })
    expect(body(new TemplateUnsupported({ name: "a", language: "en", path: "components[0].format", problem: "no" }))).toEqual({
      status: 400,
      errors: [{ code: "template_unsupported", field: "template.name" }]
    })
    const managed = responseForDomainError(new TemplateManagedByMeta({ uuid: UNKNOWN_UUID, name: "a", language: "en" }))
    expect([managed.status, managed.body.message, managed.body.errors.map((error) => error.code)]).toEqual([
      409,
      "Template 'a' (en) comes from Meta: change it in WhatsApp Manager, not here",
      ["template_managed_by_meta"]
    ])
  })
})

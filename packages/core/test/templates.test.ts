import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import { Core, MemoryStorage, Organizations, Templates, type TemplateId, type TemplateInput } from "@switchboard/core"
import { failureOf } from "./failure.js"

const TestLayer = Core.layer.pipe(Layer.provideMerge(MemoryStorage.layer))

const withOrganization = Effect.flatMap(Organizations, (organizations) => organizations.create({ name: "Acme" }))

const valid: TemplateInput = {
  name: "order_update",
  language: "en_US",
  category: "UTILITY",
  status: "APPROVED",
  components: [{ type: "BODY", text: "Hi {{1}}, order {{2}} has shipped." }]
}

/** The `{code, field}` of every issue of the InvalidInput a create fails with. */
const createIssues = (input: unknown) =>
  Effect.gen(function* () {
    const org = yield* withOrganization
    const error = yield* failureOf((yield* Templates).create(org.id, input as TemplateInput))
    if (error._tag !== "InvalidInput") return expect.fail(`expected InvalidInput, got ${error._tag}`)
    return error.issues.map(({ code, field }) => ({ code, field }))
  })

/** A valid template whose components are `components`. */
const withComponents = (...components: ReadonlyArray<unknown>): TemplateInput => ({ ...valid, components })

describe("Templates.create (docs/templates-and-replies.md 'Template rules')", () => {
  it.effect("creates a template: trimmed texts, enums and types read in any case, E.164 phones, unknown fields dropped", () =>
    Effect.gen(function* () {
      const org = yield* withOrganization
      yield* TestClock.setTime(Date.UTC(2026, 2, 1))
      const template = yield* (yield* Templates).create(org.id, {
        name: " order_update ",
        language: "en_US",
        category: "utility",
        status: "Approved",
        components: [
          { type: "header", format: "text", text: " Order {{1}} ", example: { header_text: ["#1"] }, extra: true },
          { type: "BODY", text: "Hi {{1}}, {{1}} again and {{2}}.", example: { body_text: [["Ada", "#1"]] } },
          { type: "FOOTER", text: "Thanks" },
          {
            type: "BUTTONS",
            buttons: [
              { type: "url", text: "Track", url: "https://example.com/t/{{1}}", example: ["https://example.com/t/1"] },
              { type: "QUICK_REPLY", text: "Stop" },
              { type: "PHONE_NUMBER", text: "Call", phone_number: "+1 415 555 0100" }
            ]
          }
        ]
      } as TemplateInput)
      expect(template).toEqual({
        uuid: expect.stringMatching(/^[0-9a-f-]{36}$/),
        waba_id: null,
        provider_template_id: null,
        name: "order_update",
        language: "en_US",
        category: "UTILITY",
        status: "APPROVED",
        rejected_reason: null,
        problems: [],
        components: [
          { type: "HEADER", format: "TEXT", text: "Order {{1}}", example: { header_text: ["#1"] } },
          { type: "BODY", text: "Hi {{1}}, {{1}} again and {{2}}.", example: { body_text: [["Ada", "#1"]] } },
          { type: "FOOTER", text: "Thanks" },
          {
            type: "BUTTONS",
            buttons: [
              { type: "URL", text: "Track", url: "https://example.com/t/{{1}}", example: ["https://example.com/t/1"] },
              { type: "QUICK_REPLY", text: "Stop" },
              { type: "PHONE_NUMBER", text: "Call", phone_number: "+14155550100" }
            ]
          }
        ],
        created_at: "2026-03-01T00:00:00.000Z",
        updated_at: "2026-03-01T00:00:00.000Z"
      })
      expect(yield* (yield* Templates).get(org.id, template.uuid)).toEqual(template)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("checks name, language, category and status", () =>
    Effect.gen(function* () {
      expect(yield* createIssues({ components: valid.components })).toEqual([
        { code: "required", field: "name" },
        { code: "required", field: "language" },
        { code: "required", field: "category" },
        { code: "required", field: "status" }
      ])
      expect(
        yield* createIssues({ name: "Order Update", language: "english", category: "SALES", status: "LIVE", components: valid.components })
      ).toEqual([
        { code: "invalid_format", field: "name" },
        { code: "invalid_format", field: "language" },
        { code: "invalid_format", field: "category" },
        { code: "invalid_format", field: "status" }
      ])
      expect(yield* createIssues({ ...valid, name: "x".repeat(256) })).toEqual([{ code: "too_long", field: "name" }])
      expect(yield* createIssues({ ...valid, name: 42, status: ["APPROVED"] })).toEqual([
        { code: "invalid_type", field: "name" },
        { code: "invalid_type", field: "status" }
      ])
      for (const language of ["en", "pt_BR", "fil", "zh_HK"]) {
        const org = yield* withOrganization
        expect((yield* (yield* Templates).create(org.id, { ...valid, language })).language).toBe(language)
      }
    }).pipe(Effect.provide(TestLayer)))

  it.effect("components: required, an array of objects of known types, exactly one BODY, no type twice", () =>
    Effect.gen(function* () {
      expect(yield* createIssues({ ...valid, components: undefined })).toEqual([{ code: "required", field: "components" }])
      expect(yield* createIssues({ ...valid, components: "BODY" })).toEqual([{ code: "invalid_type", field: "components" }])
      expect(yield* createIssues(withComponents())).toEqual([{ code: "required", field: "components" }])
      expect(yield* createIssues(withComponents({ type: "FOOTER", text: "Bye" }))).toEqual([{ code: "required", field: "components" }])
      expect(yield* createIssues(withComponents("BODY", { type: "CAROUSEL" }, { text: "no type" }))).toEqual([
        { code: "invalid_type", field: "components[0]" },
        { code: "invalid_format", field: "components[1].type" },
        { code: "required", field: "components[2].type" }
      ])
      expect(yield* createIssues(withComponents({ type: "BODY", text: "a" }, { type: "body", text: "b" }))).toEqual([
        { code: "invalid_format", field: "components[1].type" }
      ])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("BODY: 1–1024 characters, placeholders {{1}}…{{n}} well formed and without gaps; repeats allowed", () =>
    Effect.gen(function* () {
      const body = (text: unknown) => withComponents({ type: "BODY", text })
      expect(yield* createIssues(body("  "))).toEqual([{ code: "required", field: "components[0].text" }])
      expect(yield* createIssues(body("x".repeat(1025)))).toEqual([{ code: "too_long", field: "components[0].text" }])
      for (const text of ["Hi {{name}}", "Hi {{0}}", "Hi {{ 1 }}", "Hi {{01}}", "Hi {{1}} {{3}}", "Hi {{2}}"]) {
        expect(yield* createIssues(body(text)), text).toEqual([{ code: "invalid_format", field: "components[0].text" }])
      }
      const org = yield* withOrganization
      const templates = yield* Templates
      for (const [index, text] of ["x".repeat(1024), "{{2}} {{1}} {{1}}", "{ {1} } and {{ plain"].entries()) {
        expect((yield* templates.create(org.id, { ...body(text), name: `t${index}` })).name).toBe(`t${index}`)
      }
    }).pipe(Effect.provide(TestLayer)))

  it.effect("HEADER: a format; TEXT of 1–60 characters with at most {{1}}; media headers take no text", () =>
    Effect.gen(function* () {
      const header = (fields: Record<string, unknown>) => withComponents({ type: "HEADER", ...fields }, valid.components[0])
      expect(yield* createIssues(header({}))).toEqual([{ code: "required", field: "components[0].format" }])
      expect(yield* createIssues(header({ format: "AUDIO" }))).toEqual([{ code: "invalid_format", field: "components[0].format" }])
      expect(yield* createIssues(header({ format: "TEXT" }))).toEqual([{ code: "required", field: "components[0].text" }])
      expect(yield* createIssues(header({ format: "TEXT", text: "x".repeat(61) }))).toEqual([{ code: "too_long", field: "components[0].text" }])
      expect(yield* createIssues(header({ format: "TEXT", text: "{{1}} and {{2}}" }))).toEqual([
        { code: "invalid_format", field: "components[0].text" }
      ])
      const org = yield* withOrganization
      const created = yield* (yield* Templates).create(org.id, header({ format: "image", text: "dropped" }))
      expect(created.components[0]).toEqual({ type: "HEADER", format: "IMAGE" })
    }).pipe(Effect.provide(TestLayer)))

  it.effect("FOOTER: 1–60 characters without placeholders", () =>
    Effect.gen(function* () {
      const footer = (text: string) => withComponents(valid.components[0], { type: "FOOTER", text })
      expect(yield* createIssues(footer("x".repeat(61)))).toEqual([{ code: "too_long", field: "components[1].text" }])
      expect(yield* createIssues(footer("Bye {{1}}"))).toEqual([{ code: "invalid_format", field: "components[1].text" }])
      expect(yield* createIssues(footer(""))).toEqual([{ code: "required", field: "components[1].text" }])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("BUTTONS: 1–10 buttons of known types, text 1–25 without placeholders, http(s) urls with at most a trailing {{1}}, valid phones", () =>
    Effect.gen(function* () {
      const buttons = (value: unknown) => withComponents(valid.components[0], { type: "BUTTONS", buttons: value })
      const quick = { type: "QUICK_REPLY", text: "Yes" }
      expect(yield* createIssues(buttons(undefined))).toEqual([{ code: "required", field: "components[1].buttons" }])
      expect(yield* createIssues(buttons([]))).toEqual([{ code: "out_of_range", field: "components[1].buttons" }])
      expect(yield* createIssues(buttons(Array.from({ length: 11 }, () => quick)))).toEqual([
        { code: "out_of_range", field: "components[1].buttons" }
      ])
      const at = (index: number, field: string) => `components[1].buttons[${index}].${field}`
      expect(
        yield* createIssues(
          buttons([
            { type: "FLOW", text: "Go" },
            { type: "QUICK_REPLY", text: "x".repeat(26) },
            { type: "QUICK_REPLY", text: "Hi {{1}}" },
            { type: "URL", text: "Site", url: "ftp://example.com" },
            { type: "URL", text: "Site", url: "https://example.com/{{1}}/track" },
            { type: "URL", text: "Site", url: "https://example.com/{{2}}" },
            { type: "URL", text: "Site" },
            { type: "PHONE_NUMBER", text: "Call", phone_number: "12" }
          ])
        )
      ).toEqual([
        { code: "invalid_format", field: at(0, "type") },
        { code: "too_long", field: at(1, "text") },
        { code: "invalid_format", field: at(2, "text") },
        { code: "invalid_format", field: at(3, "url") },
        { code: "invalid_format", field: at(4, "url") },
        { code: "invalid_format", field: at(5, "url") },
        { code: "required", field: at(6, "url") },
        { code: "invalid_format", field: at(7, "phone_number") }
      ])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("examples, when given, hold one string per placeholder", () =>
    Effect.gen(function* () {
      expect(yield* createIssues(withComponents({ type: "BODY", text: "{{1}} {{2}}", example: { body_text: [["only one"]] } }))).toEqual([
        { code: "out_of_range", field: "components[0].example.body_text[0]" }
      ])
      expect(yield* createIssues(withComponents({ type: "BODY", text: "{{1}}", example: { body_text: ["flat"] } }))).toEqual([
        { code: "invalid_type", field: "components[0].example.body_text[0]" }
      ])
      expect(yield* createIssues(withComponents({ type: "BODY", text: "{{1}}", example: "Ada" }))).toEqual([
        { code: "invalid_type", field: "components[0].example" }
      ])
      expect(
        yield* createIssues(withComponents({ type: "HEADER", format: "TEXT", text: "Hi", example: { header_text: ["x"] } }, valid.components[0]))
      ).toEqual([{ code: "out_of_range", field: "components[0].example.header_text" }])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("reports every problem of a template at once", () =>
    Effect.gen(function* () {
      const issues = yield* createIssues({ name: "", language: "en_US", category: "x", status: "APPROVED", components: [{ type: "BODY", text: "{{2}}" }] })
      expect(issues.map((issue) => issue.field)).toEqual(["name", "category", "components[0].text"])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("name + language is unique per organization → TemplateNameTaken; another language or organization is fine", () =>
    Effect.gen(function* () {
      const templates = yield* Templates
      const org = yield* withOrganization
      yield* templates.create(org.id, valid)
      const error = yield* failureOf(templates.create(org.id, { ...valid, name: " order_update ", status: "PENDING" }))
      expect(error).toMatchObject({ _tag: "TemplateNameTaken", name: "order_update", language: "en_US" })
      yield* templates.create(org.id, { ...valid, language: "es" })
      yield* templates.create((yield* withOrganization).id, valid)
      expect((yield* templates.list(org.id, { page: 1, per_page: 10 })).total).toBe(2)
    }).pipe(Effect.provide(TestLayer)))
})

describe("Templates.update, get and list", () => {
  it.effect("update replaces the fields given, re-checks the whole template and sets updated_at from the Clock", () =>
    Effect.gen(function* () {
      const templates = yield* Templates
      const org = yield* withOrganization
      const created = yield* templates.create(org.id, valid)
      yield* TestClock.adjust("1 hour")
      const updated = yield* templates.update(org.id, created.uuid, { status: "rejected", category: undefined })
      expect(updated).toEqual({ ...created, status: "REJECTED", updated_at: "1970-01-01T01:00:00.000Z" })
      const invalid = yield* failureOf(templates.update(org.id, created.uuid, { components: [{ type: "FOOTER", text: "x" }] }))
      expect(invalid._tag).toBe("InvalidInput")
      expect(yield* templates.get(org.id, created.uuid)).toEqual(updated)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("update → TemplateNameTaken onto another template's identity, RecordNotFound for an unknown or foreign uuid", () =>
    Effect.gen(function* () {
      const templates = yield* Templates
      const org = yield* withOrganization
      yield* templates.create(org.id, valid)
      const welcome = yield* templates.create(org.id, { ...valid, name: "welcome" })
      expect((yield* failureOf(templates.update(org.id, welcome.uuid, { name: "order_update" })))._tag).toBe("TemplateNameTaken")
      const other = yield* withOrganization
      const foreign = yield* failureOf(templates.update(other.id, welcome.uuid, { status: "REJECTED" }))
      expect(foreign).toMatchObject({ _tag: "RecordNotFound", missing: [{ resource: "template", uuid: welcome.uuid }] })
      expect((yield* failureOf(templates.get(other.id, welcome.uuid)))._tag).toBe("RecordNotFound")
      expect(yield* templates.get(org.id, welcome.uuid)).toEqual(welcome)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("list pages newest first", () =>
    Effect.gen(function* () {
      const templates = yield* Templates
      const org = yield* withOrganization
      for (const name of ["a", "b", "c"]) {
        yield* templates.create(org.id, { ...valid, name })
        yield* TestClock.adjust("1 second")
      }
      const page = yield* templates.list(org.id, { page: 1, per_page: 2 })
      expect(page.total).toBe(3)
      expect(page.items.map((template) => template.name)).toEqual(["c", "b"])
      expect((yield* templates.list(org.id, { page: 2, per_page: 2 })).items.map((t) => t.name)).toEqual(["a"])
      expect((yield* failureOf(templates.get(org.id, "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6a" as TemplateId)))._tag).toBe(
        "RecordNotFound"
      )
    }).pipe(Effect.provide(TestLayer)))
})

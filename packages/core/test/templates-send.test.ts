import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import {
  Core,
  MemoryStorage,
  Organizations,
  Templates,
  type OrganizationId,
  type TemplateId,
  type TemplateInput,
  type TemplateSendRequest
} from "@switchboard/core"
import { failureOf } from "./failure.js"

const TestLayer = Core.layer.pipe(Layer.provideMerge(MemoryStorage.layer))

/** Header {{1}}, body with {{1}} twice and {{2}}, footer, a URL button with {{1}}, a quick reply, a plain URL and a phone. */
const orderUpdate: TemplateInput = {
  name: "order_update",
  language: "en_US",
  category: "UTILITY",
  status: "APPROVED",
  components: [
    { type: "HEADER", format: "TEXT", text: "Order {{1}}", example: { header_text: ["#1234"] } },
    { type: "BODY", text: "Hi {{1}}, order {{2}} has shipped. Thanks, {{1}}!", example: { body_text: [["Ada", "#1234"]] } },
    { type: "FOOTER", text: "Reply STOP to opt out" },
    {
      type: "BUTTONS",
      buttons: [
        { type: "QUICK_REPLY", text: "Thanks" },
        { type: "URL", text: "Track", url: "https://example.com/track/{{1}}", example: ["https://example.com/track/1234"] },
        { type: "URL", text: "Shop", url: "https://example.com" },
        { type: "PHONE_NUMBER", text: "Call", phone_number: "+14155550100" }
      ]
    }
  ]
}

/** The components of a send filling every slot of {@link orderUpdate}. */
const filled = [
  { type: "header", parameters: [{ type: "text", text: "#42" }] },
  { type: "body", parameters: [{ type: "text", text: "Ada" }, { type: "text", text: "#42" }] },
  { type: "button", sub_type: "url", index: "1", parameters: [{ type: "text", text: "42" }] }
]

const setUp = (input: TemplateInput = orderUpdate) =>
  Effect.gen(function* () {
    const org = yield* Effect.flatMap(Organizations, (organizations) => organizations.create({ name: "Acme" }))
    const template = yield* (yield* Templates).create(org.id, input)
    return { orgId: org.id, template }
  })

const send = (components: unknown, name = "order_update", code = "en_US"): TemplateSendRequest => ({
  name,
  language: { code },
  components: components as ReadonlyArray<unknown>
})

/** The `{field}` of every issue of the TemplateParametersMismatch a send fails with. */
const mismatchFields = (orgId: OrganizationId, components: unknown) =>
  Effect.gen(function* () {
    const error = yield* failureOf((yield* Templates).resolveForSend(orgId, send(components)))
    if (error._tag !== "TemplateParametersMismatch") return expect.fail(`expected a mismatch, got ${error._tag}`)
    for (const issue of error.issues) expect(issue.code).toBe("template_parameters_mismatch")
    return error.issues.map((issue) => issue.field)
  })

describe("Templates.payload (docs/templates-and-replies.md)", () => {
  it.effect("has one empty parameter per placeholder of the header, body and URL buttons, and lists the slots", () =>
    Effect.gen(function* () {
      const { orgId, template } = yield* setUp()
      expect(yield* (yield* Templates).payload(orgId, template.uuid)).toEqual({
        template: {
          name: "order_update",
          language: { code: "en_US" },
          components: [
            { type: "header", parameters: [{ type: "text", text: "" }] },
            { type: "body", parameters: [{ type: "text", text: "" }, { type: "text", text: "" }] },
            { type: "button", sub_type: "url", index: "1", parameters: [{ type: "text", text: "" }] }
          ]
        },
        slots: [
          { component: 0, index: 0, type: "text", example: "#1234" },
          { component: 1, index: 0, type: "text", example: "Ada" },
          { component: 1, index: 1, type: "text", example: "#1234" },
          { component: 2, index: 0, type: "text", example: "https://example.com/track/1234" }
        ]
      })
    }).pipe(Effect.provide(TestLayer)))

  it.effect("a media header is one link slot of its type; examples absent are null; no placeholders means no components", () =>
    Effect.gen(function* () {
      const templates = yield* Templates
      for (const format of ["IMAGE", "VIDEO", "DOCUMENT"] as const) {
        const type = format.toLowerCase()
        const { orgId, template } = yield* setUp({
          ...orderUpdate,
          components: [{ type: "HEADER", format, example: { header_handle: ["https://cdn.example.com/a"] } }, { type: "BODY", text: "Hi {{1}}" }]
        })
        expect(yield* templates.payload(orgId, template.uuid)).toEqual({
          template: {
            name: "order_update",
            language: { code: "en_US" },
            components: [
              { type: "header", parameters: [{ type, [type]: { link: "" } }] },
              { type: "body", parameters: [{ type: "text", text: "" }] }
            ]
          },
          slots: [
            { component: 0, index: 0, type, example: "https://cdn.example.com/a" },
            { component: 1, index: 0, type: "text", example: null }
          ]
        })
      }
      const plain = yield* setUp({ ...orderUpdate, status: "PENDING", components: [{ type: "BODY", text: "Hello!" }] })
      expect(yield* templates.payload(plain.orgId, plain.template.uuid)).toEqual({
        template: { name: "order_update", language: { code: "en_US" }, components: [] },
        slots: []
      })
    }).pipe(Effect.provide(TestLayer)))

  it.effect("RecordNotFound for an unknown uuid or another organization's template", () =>
    Effect.gen(function* () {
      const { template } = yield* setUp()
      const other = yield* setUp()
      const error = yield* failureOf((yield* Templates).payload(other.orgId, template.uuid))
      expect(error).toMatchObject({ _tag: "RecordNotFound", missing: [{ resource: "template", uuid: template.uuid }] })
      const unknown = yield* failureOf((yield* Templates).payload(other.orgId, "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6a" as TemplateId))
      expect(unknown._tag).toBe("RecordNotFound")
    }).pipe(Effect.provide(TestLayer)))
})

describe("Templates.resolveForSend (docs/templates-and-replies.md)", () => {
  it.effect("returns the template, the normalised send object and the rendered text", () =>
    Effect.gen(function* () {
      const { orgId, template } = yield* setUp()
      const reply = { type: "BUTTON", sub_type: "QUICK_REPLY", index: 0, parameters: [{ type: "payload", payload: "thanks" }] }
      const resolved = yield* (yield* Templates).resolveForSend(orgId, send([...filled, reply], " Order_Update "))
      expect(resolved.template).toEqual(template)
      expect(resolved.send).toEqual({
        name: "order_update",
        language: { code: "en_US" },
        components: [
          ...filled,
          { type: "button", sub_type: "quick_reply", index: "0", parameters: [{ type: "payload", payload: "thanks" }] }
        ]
      })
      expect(resolved.text).toBe("Order #42\n\nHi Ada, order #42 has shipped. Thanks, Ada!\n\nReply STOP to opt out")
    }).pipe(Effect.provide(TestLayer)))

  it.effect("a value holding {{2}} is not read as a placeholder; a component for a part without placeholders may come empty", () =>
    Effect.gen(function* () {
      const { orgId } = yield* setUp({ ...orderUpdate, components: [{ type: "BODY", text: "{{1}} and {{2}}" }, { type: "FOOTER", text: "Bye" }] })
      const resolved = yield* (yield* Templates).resolveForSend(
        orgId,
        send([
          { type: "header", parameters: [] },
          { type: "body", parameters: [{ type: "text", text: "{{2}}" }, { type: "text", text: "x" }] }
        ])
      )
      expect(resolved.text).toBe("{{2}} and x\n\nBye")
      expect(resolved.send.components).toEqual([
        { type: "body", parameters: [{ type: "text", text: "{{2}}" }, { type: "text", text: "x" }] }
      ])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("TemplateNotFound for an unknown name, another language code, or another organization's template", () =>
    Effect.gen(function* () {
      const { orgId } = yield* setUp()
      const other = yield* setUp({ ...orderUpdate, name: "welcome" })
      const templates = yield* Templates
      for (const [id, name, code] of [
        [orgId, "order_updates", "en_US"],
        [orgId, "order_update", "en"],
        [orgId, "order_update", "en_us"],
        [other.orgId, "order_update", "en_US"]
      ] as const) {
        const error = yield* failureOf(templates.resolveForSend(id, send(filled, name, code)))
        expect(error).toMatchObject({ _tag: "TemplateNotFound", name, language: code })
      }
    }).pipe(Effect.provide(TestLayer)))

  it.effect("TemplateNotApproved for PENDING and REJECTED templates, checked before the parameters", () =>
    Effect.gen(function* () {
      const templates = yield* Templates
      for (const status of ["PENDING", "REJECTED"]) {
        const { orgId } = yield* setUp({ ...orderUpdate, status })
        for (const components of [filled, []]) {
          const error = yield* failureOf(templates.resolveForSend(orgId, send(components)))
          expect(error).toMatchObject({ _tag: "TemplateNotApproved", status })
        }
      }
    }).pipe(Effect.provide(TestLayer)))

  it.effect("TemplateParametersMismatch when a component is missing or a count differs from the placeholders", () =>
    Effect.gen(function* () {
      const { orgId } = yield* setUp()
      const [header, body, button] = filled
      expect(yield* mismatchFields(orgId, undefined)).toEqual(["template.components", "template.components", "template.components"])
      expect(yield* mismatchFields(orgId, [header, button])).toEqual(["template.components"])
      const short = { type: "body", parameters: [{ type: "text", text: "Ada" }] }
      const long = { type: "body", parameters: [...body!.parameters, { type: "text", text: "extra" }] }
      expect(yield* mismatchFields(orgId, [header, short, button])).toEqual(["template.components[1].parameters"])
      expect(yield* mismatchFields(orgId, [header, long, button])).toEqual(["template.components[1].parameters"])
      expect(yield* mismatchFields(orgId, [header, body, button, body])).toEqual(["template.components[3]"])
      expect(yield* mismatchFields(orgId, { body })).toEqual(["template.components", "template.components", "template.components", "template.components"])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("TemplateParametersMismatch for an empty slot or a parameter of the wrong type", () =>
    Effect.gen(function* () {
      const { orgId } = yield* setUp()
      const [header, , button] = filled
      const body = (...parameters: ReadonlyArray<unknown>) => ({ type: "body", parameters })
      const ada = { type: "text", text: "Ada" }
      expect(yield* mismatchFields(orgId, [header, body(ada, { type: "text", text: "" }), button])).toEqual([
        "template.components[1].parameters[1].text"
      ])
      expect(yield* mismatchFields(orgId, [header, body({ type: "text", text: "  " }, { type: "text" }), button])).toEqual([
        "template.components[1].parameters[0].text",
        "template.components[1].parameters[1].text"
      ])
      expect(yield* mismatchFields(orgId, [header, body(ada, { type: "image", image: { link: "x" } }), button])).toEqual([
        "template.components[1].parameters[1]"
      ])
      expect(yield* mismatchFields(orgId, [header, body(ada, "#42"), button])).toEqual(["template.components[1].parameters[1]"])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("TemplateParametersMismatch for components the template has no slots for, or of unknown shape", () =>
    Effect.gen(function* () {
      const { orgId } = yield* setUp()
      const [header, body, button] = filled
      const plainUrl = { type: "button", sub_type: "url", index: "2", parameters: [{ type: "text", text: "x" }] }
      expect(yield* mismatchFields(orgId, [header, body, button, plainUrl])).toEqual(["template.components[3].parameters"])
      for (const odd of [{ type: "footer", parameters: [] }, { type: "button", sub_type: "url" }, { type: "button", index: "1" }, "body"]) {
        expect(yield* mismatchFields(orgId, [header, body, button, odd])).toEqual(["template.components[3]"])
      }
      const quick = (index: string, parameters: unknown) => ({ type: "button", sub_type: "quick_reply", index, parameters })
      expect(yield* mismatchFields(orgId, [...filled, quick("1", [{ type: "payload", payload: "x" }])])).toEqual([
        "template.components[3].index"
      ])
      expect(yield* mismatchFields(orgId, [...filled, quick("0", [{ type: "payload", payload: " " }])])).toEqual([
        "template.components[3].parameters"
      ])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("a media header needs a link or a media id of its type", () =>
    Effect.gen(function* () {
      const { orgId } = yield* setUp({ ...orderUpdate, components: [{ type: "HEADER", format: "DOCUMENT" }, { type: "BODY", text: "Hi" }] })
      const templates = yield* Templates
      const header = (parameter: unknown) => [{ type: "header", parameters: [parameter] }]
      const byLink = yield* templates.resolveForSend(orgId, send(header({ type: "document", document: { link: "https://x.test/a.pdf" } })))
      expect(byLink.send.components).toEqual(header({ type: "document", document: { link: "https://x.test/a.pdf" } }))
      const byId = yield* templates.resolveForSend(orgId, send(header({ type: "document", document: { id: "123" } })))
      expect(byId.text).toBe("Hi")
      expect(yield* mismatchFields(orgId, header({ type: "document", document: { link: "" } }))).toEqual([
        "template.components[0].parameters[0].document.link"
      ])
      expect(yield* mismatchFields(orgId, header({ type: "image", image: { link: "https://x.test/a.png" } }))).toEqual([
        "template.components[0].parameters[0]"
      ])
    }).pipe(Effect.provide(TestLayer)))
})

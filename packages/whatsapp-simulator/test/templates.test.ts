import { createHmac } from "node:crypto"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { connectSimulator, DELETED_NAME_BLOCK_MS, startSimulator, TemplateLibrary, type WhatsAppSimulator } from "../src/index.js"
import { startReceiver } from "./helpers.js"

// An account's message templates over real sockets: Meta's list (pages, fields, filters),
// submissions, deletions and their errors, the token checks, the script, and the control
// routes that stand in for Meta's review (status and category webhooks).

const TOKEN = "EAAGsimulator-templates-token-0001"
const SECOND_TOKEN = "EAAGsimulator-templates-token-0002"
const OTHER_TOKEN = "EAAGsimulator-templates-other-0003"
const WABA = "102290129340398"
const OTHER_WABA = "102290129349999"
const APP_SECRET = "templates-app-secret"

let simulator: WhatsAppSimulator
let receiver: Awaited<ReturnType<typeof startReceiver>>
beforeAll(async () => {
  receiver = await startReceiver()
  simulator = await startSimulator({
    numbers: [
      { phone_number_id: "106540352242922", display_phone_number: "+1 555-078-3881", waba_id: WABA, access_token: TOKEN },
      { phone_number_id: "106540352242923", display_phone_number: "+1 555-078-3882", waba_id: WABA, access_token: SECOND_TOKEN },
      { phone_number_id: "106540352249999", display_phone_number: "+1 555-078-3899", waba_id: OTHER_WABA, access_token: OTHER_TOKEN }
    ],
    webhookUrl: receiver.url,
    appSecret: APP_SECRET
  })
})
afterEach(() => {
  simulator.reset()
  simulator.configure({ webhookUrl: receiver.url })
  receiver.deliveries.length = 0
})
afterAll(async () => {
  await simulator.close()
  await receiver.close()
})

/** A Graph call with a bearer token (none when `null`), JSON in and out. */
const call = async (method: string, path: string, token: string | null = TOKEN, body?: unknown) => {
  const response = await fetch(path.startsWith("http") ? path : `${simulator.url}${path}`, {
    method,
    headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  return { status: response.status, json: JSON.parse(text) as any }
}

const templatesPath = (query = "", waba = WABA) => `/v21.0/${waba}/message_templates${query === "" ? "" : `?${query}`}`

const body = (text = "Your order {{1}} has shipped.") => [{ type: "BODY", text, example: { body_text: [["A-1001"]] } }]

const submission = (name = "order_update", language = "en_US", extra: Record<string, unknown> = {}) => ({
  name,
  language,
  category: "UTILITY",
  components: body(),
  ...extra
})

/** Seeds `count` approved templates `t01`, `t02`, … in `en_US`. */
const seedMany = (count: number, waba = WABA) =>
  simulator.seedTemplates({
    waba_id: waba,
    templates: Array.from({ length: count }, (_, index) => ({
      name: `t${String(index + 1).padStart(2, "0")}`,
      language: "en_US",
      category: "UTILITY",
      components: body(`Template ${index + 1} {{1}}.`)
    }))
  })

const hmac = (text: string) => `sha256=${createHmac("sha256", APP_SECRET).update(text).digest("hex")}`

describe("GET /{version}/{waba_id}/message_templates", () => {
  it("pages with limit and after cursors, in the order the templates were added; the last page has no next", async () => {
    const seeded = await seedMany(7)
    const first = await call("GET", templatesPath("fields=name,status&limit=3"))
    expect(first.status).toBe(200)
    expect(first.json.data).toEqual(seeded.slice(0, 3).map((template) => ({ name: template.name, status: "APPROVED", id: template.id })))
    expect(first.json.paging).toEqual({ cursors: { before: expect.any(String), after: expect.any(String) }, next: expect.stringContaining(`${simulator.url}/v21.0/${WABA}/message_templates?`) })
    expect(first.json.paging).not.toHaveProperty("previous")

    // Meta's next link, followed as it is (the token in the header, as the client sends it).
    const second = await call("GET", first.json.paging.next)
    expect(second.json.data.map((template: any) => template.name)).toEqual(["t04", "t05", "t06"])
    expect(Object.keys(second.json.data[0])).toEqual(["name", "status", "id"])
    expect(second.json.paging).toMatchObject({ next: expect.any(String), previous: expect.any(String) })

    // The after cursor, passed by hand.
    const third = await call("GET", templatesPath(`fields=name,status&limit=3&after=${encodeURIComponent(second.json.paging.cursors.after)}`))
    expect(third.json.data.map((template: any) => template.name)).toEqual(["t07"])
    expect(third.json.paging.cursors).toEqual({ before: expect.any(String), after: expect.any(String) })
    expect(third.json.paging).not.toHaveProperty("next")

    // previous (the before cursor) goes back to the page before.
    const back = await call("GET", third.json.paging.previous)
    expect(back.json.data.map((template: any) => template.name)).toEqual(["t04", "t05", "t06"])
  })

  it("a cursor survives a deletion before it; a page past the end and an empty account answer {data: []}", async () => {
    await seedMany(5)
    const first = await call("GET", templatesPath("fields=name&limit=2"))
    expect((await call("DELETE", templatesPath("name=t01"))).json).toEqual({ success: true })
    const next = await call("GET", first.json.paging.next)
    expect(next.json.data.map((template: any) => template.name)).toEqual(["t03", "t04"])
    const whole = await call("GET", templatesPath("fields=name&limit=10"))
    expect(whole.json.data).toHaveLength(4)
    expect(whole.json.paging).not.toHaveProperty("next")
    const end = await call("GET", templatesPath(`fields=name&after=${encodeURIComponent(whole.json.paging.cursors.after)}`))
    expect(end.json).toEqual({ data: [] })
    expect((await call("GET", templatesPath("", OTHER_WABA), OTHER_TOKEN)).json).toEqual({ data: [] })
  })

  it("limit defaults to 25 and is cut to 100; a bad limit or cursor is Meta's 100", async () => {
    await seedMany(120)
    expect((await call("GET", templatesPath("fields=name"))).json.data).toHaveLength(25)
    expect((await call("GET", templatesPath("fields=name&limit=100"))).json.data).toHaveLength(100)
    expect((await call("GET", templatesPath("fields=name&limit=500"))).json.data).toHaveLength(100)
    for (const query of ["limit=0", "limit=ten", "after=not-a-cursor", "before=bm9wZQ"]) {
      const answer = await call("GET", templatesPath(query))
      expect([answer.status, answer.json.error.code, answer.json.error.type]).toEqual([400, 100, "OAuthException"])
    }
  })

  it("fields: only those asked for, plus id; without fields Meta's default set; rejected_reason is NONE when none", async () => {
    const [approved, rejected] = simulator.seedTemplates({
      waba_id: WABA,
      templates: [
        { name: "order_update", language: "en_US", category: "utility", components: body() },
        { name: "summer_sale", language: "es", category: "MARKETING", components: body("Oferta {{1}}."), status: "REJECTED", rejected_reason: "PROMOTIONAL" }
      ]
    })
    const all = await call("GET", templatesPath("fields=name,language,status,category,components,rejected_reason,id"))
    expect(all.json.data).toEqual([
      { name: "order_update", components: body(), language: "en_US", status: "APPROVED", category: "UTILITY", rejected_reason: "NONE", id: approved!.id },
      { name: "summer_sale", components: body("Oferta {{1}}."), language: "es", status: "REJECTED", category: "MARKETING", rejected_reason: "PROMOTIONAL", id: rejected!.id }
    ])
    expect(approved!.id).toMatch(/^1\d{15}$/)
    expect((await call("GET", templatesPath("fields=category"))).json.data).toEqual([
      { category: "UTILITY", id: approved!.id },
      { category: "MARKETING", id: rejected!.id }
    ])
    const byDefault = await call("GET", templatesPath())
    expect(Object.keys(byDefault.json.data[0])).toEqual(["name", "components", "language", "status", "category", "id"])
    // A field of Meta's the simulator does not keep is left out; one Meta does not have is refused.
    expect((await call("GET", templatesPath("fields=name,quality_score"))).json.data[0]).toEqual({ name: "order_update", id: approved!.id })
    const unknown = await call("GET", templatesPath("fields=name,colour"))
    expect([unknown.status, unknown.json.error.code, unknown.json.error.message]).toEqual([400, 100, expect.stringContaining("nonexisting field (colour)")])
  })

  it("Meta's filters: name (a part of it), status, language, category", async () => {
    simulator.seedTemplates({
      waba_id: WABA,
      templates: [
        { name: "order_update", language: "en_US", category: "UTILITY", components: body() },
        { name: "order_update", language: "es", category: "UTILITY", components: body(), status: "PENDING" },
        { name: "summer_sale", language: "en_US", category: "MARKETING", components: body() }
      ]
    })
    const names = async (query: string) => (await call("GET", templatesPath(`fields=name,language&${query}`))).json.data.map((t: any) => `${t.name}/${t.language}`)
    expect(await names("name=ORDER")).toEqual(["order_update/en_US", "order_update/es"])
    expect(await names("status=approved")).toEqual(["order_update/en_US", "summer_sale/en_US"])
    expect(await names("language=es")).toEqual(["order_update/es"])
    expect(await names("category=MARKETING")).toEqual(["summer_sale/en_US"])
  })

  it("takes the token from the header or access_token; a missing or unknown token is 190; another account's token or an unknown account is 100 subcode 33", async () => {
    await seedMany(1)
    expect((await call("GET", templatesPath("fields=name"), SECOND_TOKEN)).json.data).toHaveLength(1)
    expect((await call("GET", `${templatesPath("fields=name")}&access_token=${TOKEN}`, null)).json.data).toHaveLength(1)
    for (const token of [null, "EAAGnot-a-known-token"]) {
      const answer = await call("GET", templatesPath(), token)
      expect([answer.status, answer.json.error.code]).toEqual([401, 190])
    }
    for (const [waba, token] of [[WABA, OTHER_TOKEN], ["999", TOKEN]] as const) {
      for (const method of ["GET", "POST", "DELETE"]) {
        const answer = await call(method, templatesPath(method === "DELETE" ? "name=t01" : "", waba), token, method === "POST" ? submission("other_one") : undefined)
        expect([answer.status, answer.json.error.code, answer.json.error.error_subcode, answer.json.error.type]).toEqual([400, 100, 33, "GraphMethodException"])
      }
    }
    expect(simulator.templates.list(WABA).map((template) => template.name)).toEqual(["t01"])
  })
})

describe("POST /{version}/{waba_id}/message_templates", () => {
  it("keeps a submission PENDING and answers {id, status, category}; the status route approves it and posts the webhook with its id", async () => {
    const created = await call("POST", templatesPath(), TOKEN, submission("order_update", "en_US", { category: "utility" }))
    expect(created.status).toBe(200)
    expect(created.json).toEqual({ id: expect.stringMatching(/^1\d{15}$/), status: "PENDING", category: "UTILITY" })
    expect((await call("GET", templatesPath("fields=name,status"))).json.data).toEqual([{ name: "order_update", status: "PENDING", id: created.json.id }])

    const { template, delivery } = await simulator.setTemplateStatus({ waba_id: WABA, name: "order_update", language: "en_US", status: "APPROVED" })
    expect(template).toMatchObject({ id: created.json.id, status: "APPROVED", rejected_reason: "NONE" })
    expect(delivery).toMatchObject({ status: 200 })
    const posted = receiver.deliveries[0]!
    expect(posted.headers["x-hub-signature-256"]).toBe(hmac(posted.body))
    expect(JSON.parse(posted.body)).toEqual({
      object: "whatsapp_business_account",
      entry: [
        {
          id: WABA,
          changes: [
            {
              field: "message_template_status_update",
              value: {
                event: "APPROVED",
                message_template_id: Number(created.json.id),
                message_template_name: "order_update",
                message_template_language: "en_US",
                reason: "NONE",
                message_template_category: "UTILITY"
              }
            }
          ]
        }
      ]
    })
    expect(simulator.notifications()).toEqual([expect.objectContaining({ kind: "template_status", body: posted.body })])
    expect((await call("GET", templatesPath("fields=status"))).json.data).toEqual([{ status: "APPROVED", id: created.json.id }])
  })

  it("a name and language the account holds (any status) is Meta's 100 subcode 2388024; another language or account is free", async () => {
    simulator.seedTemplates({ waba_id: WABA, templates: [{ name: "order_update", language: "en_US", category: "UTILITY", components: body(), status: "REJECTED", rejected_reason: "INVALID_FORMAT" }] })
    const duplicate = await call("POST", templatesPath(), TOKEN, submission())
    expect(duplicate.status).toBe(400)
    expect(duplicate.json).toEqual({
      error: {
        message: "Invalid parameter",
        type: "OAuthException",
        code: 100,
        error_subcode: 2388024,
        is_transient: false,
        error_user_title: "Content in this language already exists",
        error_user_msg: expect.stringContaining("There is already en_US content for this template"),
        fbtrace_id: expect.any(String)
      }
    })
    expect((await call("POST", templatesPath(), TOKEN, submission("order_update", "es"))).json.status).toBe("PENDING")
    expect((await call("POST", templatesPath("", OTHER_WABA), OTHER_TOKEN, submission())).json.status).toBe("PENDING")
    expect(simulator.templates.list(WABA).map((template) => [template.language, template.status])).toEqual([["en_US", "REJECTED"], ["es", "PENDING"]])
  })

  it.each([
    ["no body", undefined, /request body must be a JSON object/],
    ["no name", { ...submission(), name: undefined }, /parameter name is required/],
    ["a name with capitals", submission("Order_Update"), /lowercase letters, numbers and underscores/],
    ["no language", { ...submission(), language: undefined }, /parameter language is required/],
    ["a language that is not a code", submission("order_update", "English"), /not a supported language code/],
    ["no category", { ...submission(), category: undefined }, /parameter category is required/],
    ["an unknown category", submission("order_update", "en_US", { category: "TRANSACTIONAL" }), /category must be one of/],
    ["no components", { ...submission(), components: undefined }, /parameter components is required/],
    ["empty components", submission("order_update", "en_US", { components: [] }), /non-empty array/],
    ["a component of no known type", submission("order_update", "en_US", { components: [...body(), { type: "SIDEBAR" }] }), /components\[1\]\['type'\]/],
    ["no BODY", submission("order_update", "en_US", { components: [{ type: "FOOTER", text: "Thanks" }] }), /exactly one BODY/]
  ])("%s → Meta's 100 (invalid parameter), nothing kept", async (_what, sent, message) => {
    const answer = await call("POST", templatesPath(), TOKEN, sent)
    expect([answer.status, answer.json.error.code, answer.json.error.type]).toEqual([400, 100, "OAuthException"])
    expect(answer.json.error.message).toMatch(message)
    expect(simulator.templates.list()).toEqual([])
  })
})

describe("DELETE /{version}/{waba_id}/message_templates", () => {
  const seedOrderUpdate = () =>
    simulator.seedTemplates({
      waba_id: WABA,
      templates: [
        { name: "order_update", language: "en_US", category: "UTILITY", components: body() },
        { name: "order_update", language: "es", category: "UTILITY", components: body() },
        { name: "summer_sale", language: "en_US", category: "MARKETING", components: body() }
      ]
    })

  it("by name deletes every language of it; the name is then blocked (Meta's 100 subcode 2388023) until seeded again", async () => {
    seedOrderUpdate()
    expect(await call("DELETE", templatesPath("name=order_update"))).toEqual({ status: 200, json: { success: true } })
    expect(simulator.templates.list(WABA).map((template) => template.name)).toEqual(["summer_sale"])
    const blocked = await call("POST", templatesPath(), TOKEN, submission("order_update", "es"))
    expect(blocked.status).toBe(400)
    expect(blocked.json.error).toMatchObject({
      message: "Invalid parameter",
      code: 100,
      error_subcode: 2388023,
      is_transient: false,
      error_user_title: "Language is being deleted",
      error_user_msg: expect.stringContaining("can't be added while the existing es content is being deleted")
    })
    expect(DELETED_NAME_BLOCK_MS).toBe(30 * 24 * 60 * 60 * 1000)
    // Seeding is Meta's state as it is: it lifts the block of that language only.
    simulator.seedTemplates({ waba_id: WABA, templates: [{ name: "order_update", language: "es", category: "UTILITY", components: body() }] })
    expect(simulator.templates.list(WABA).map((template) => `${template.name}/${template.language}`)).toEqual(["summer_sale/en_US", "order_update/es"])
    expect((await call("POST", templatesPath(), TOKEN, submission("order_update", "en_US"))).json.error.error_subcode).toBe(2388023)
  })

  it("the block of a deleted name and language ends 30 days after the deletion", () => {
    const library = new TemplateLibrary()
    const fields = { name: "order_update", language: "en_US", category: "UTILITY", components: body() }
    library.seed(WABA, [fields])
    const deletedAt = 1_700_000_000_000
    expect(library.delete(WABA, "order_update", null, deletedAt)).toHaveLength(1)
    expect(library.create(WABA, fields, deletedAt + DELETED_NAME_BLOCK_MS - 1)).toBe("being_deleted")
    expect(library.create(WABA, fields, deletedAt + DELETED_NAME_BLOCK_MS)).toMatchObject({ status: "PENDING" })
  })

  it("with hsm_id deletes that language only; an unknown name, or an id not of that name, is Meta's error and deletes nothing", async () => {
    const [english, spanish, sale] = seedOrderUpdate()
    expect((await call("DELETE", templatesPath(`name=order_update&hsm_id=${spanish!.id}`))).json).toEqual({ success: true })
    expect(simulator.templates.list(WABA).map((template) => template.id)).toEqual([english!.id, sale!.id])
    for (const query of ["name=no_such_template", `name=order_update&hsm_id=${sale!.id}`, `name=order_update&hsm_id=${spanish!.id}`]) {
      const answer = await call("DELETE", templatesPath(query))
      expect([answer.status, answer.json.error.code, answer.json.error.error_user_title]).toEqual([400, 100, "Message template not found"])
    }
    for (const query of ["", `hsm_id=${english!.id}`, "name=order_update&hsm_id=abc"]) {
      expect((await call("DELETE", templatesPath(query))).json.error).toMatchObject({ code: 100, message: expect.stringMatching(/^\(#100\)/) })
    }
    expect(simulator.templates.list(WABA)).toHaveLength(2)
    expect((await call("POST", templatesPath(), TOKEN, submission("order_update", "es"))).json.error.error_subcode).toBe(2388023)
  })
})

describe("the script", () => {
  it("each template route takes its own scripted answers, after the checks; a refused call changes nothing", async () => {
    await seedMany(2)
    simulator.script.enqueue([{ code: 130429 }, { http_status: 503 }], "templates_list")
    simulator.script.enqueue([{ code: 80008, http_status: 400 }], "templates_create")
    simulator.script.enqueue([{ code: 2 }], "templates_delete")
    const throttled = await call("GET", templatesPath())
    expect([throttled.status, throttled.json.error.code, throttled.json.error.message]).toEqual([429, 130429, "(#130429) Rate limit hit"])
    const unavailable = await fetch(`${simulator.url}${templatesPath()}`, { headers: { authorization: `Bearer ${TOKEN}` } })
    expect(unavailable.status).toBe(503)
    expect((await call("GET", templatesPath("fields=name"))).json.data).toHaveLength(2)

    // A bad submission is refused before the script, which keeps its answer for the next call.
    expect((await call("POST", templatesPath(), TOKEN, submission("Bad Name"))).json.error.code).toBe(100)
    expect(simulator.script.pending("templates_create")).toBe(1)
    const refused = await call("POST", templatesPath(), TOKEN, submission("new_one"))
    expect([refused.status, refused.json.error.code]).toEqual([400, 80008])
    expect(simulator.templates.list(WABA)).toHaveLength(2)

    const failed = await call("DELETE", templatesPath("name=t01"))
    expect([failed.status, failed.json.error.code]).toEqual([500, 2])
    expect(simulator.templates.list(WABA)).toHaveLength(2)
    expect(simulator.received({ route: "templates_delete" })).toEqual([expect.objectContaining({ method: "DELETE", phone_number_id: null, answer: { status: 500, body: expect.anything() } })])
  })

  it("a scripted delay lets the account change: the submission is checked again when answered", async () => {
    simulator.script.enqueue([{ delay_ms: 150 }], "templates_create")
    const late = call("POST", templatesPath(), TOKEN, submission())
    await new Promise((resolve) => setTimeout(resolve, 30))
    expect((await call("POST", templatesPath(), TOKEN, submission())).json.status).toBe("PENDING")
    expect((await late).json.error.error_subcode).toBe(2388024)
    expect(simulator.templates.list(WABA)).toHaveLength(1)
  })
})

describe("Meta's review: status and category", () => {
  it("REJECTED keeps the reason; REINSTATED approves; FLAGGED keeps the status; notify: false posts nothing", async () => {
    const [template] = simulator.seedTemplates({ waba_id: WABA, templates: [{ name: "order_update", language: "en_US", category: "UTILITY", components: body(), status: "PENDING" }] })
    expect((await simulator.setTemplateStatus({ waba_id: WABA, id: template!.id, status: "REJECTED", reason: "INVALID_FORMAT" })).template).toMatchObject({ status: "REJECTED", rejected_reason: "INVALID_FORMAT" })
    expect((await simulator.setTemplateStatus({ id: template!.id, status: "REINSTATED" })).template).toMatchObject({ status: "APPROVED", rejected_reason: "NONE" })
    expect((await simulator.setTemplateStatus({ id: template!.id, status: "FLAGGED" })).template.status).toBe("APPROVED")
    const silent = await simulator.setTemplateStatus({ id: template!.id, status: "PAUSED", notify: false })
    expect([silent.template.status, silent.delivery]).toEqual(["PAUSED", null])
    const events = receiver.deliveries.map((delivery) => JSON.parse(delivery.body).entry[0].changes[0].value)
    expect(events.map((value) => [value.event, value.reason, value.message_template_id])).toEqual([
      ["REJECTED", "INVALID_FORMAT", Number(template!.id)],
      ["REINSTATED", "NONE", Number(template!.id)],
      ["FLAGGED", "NONE", Number(template!.id)]
    ])
  })

  it("refuses, changing nothing: an unknown template, a bad status, no webhook URL", async () => {
    const [template] = simulator.seedTemplates({ waba_id: WABA, templates: [{ name: "order_update", language: "en_US", category: "UTILITY", components: body(), status: "PENDING" }] })
    await expect(simulator.setTemplateStatus({ waba_id: WABA, name: "order_update", language: "es", status: "APPROVED" })).rejects.toThrow(/no template order_update \(es\)/)
    await expect(simulator.setTemplateStatus({ waba_id: OTHER_WABA, id: template!.id, status: "APPROVED" })).rejects.toThrow(/no template/)
    await expect(simulator.setTemplateStatus({ id: template!.id, status: "approved" })).rejects.toThrow(/status must be one of/)
    simulator.configure({ webhookUrl: null })
    await expect(simulator.setTemplateStatus({ id: template!.id, status: "APPROVED" })).rejects.toThrow(/no webhook URL/)
    expect(simulator.templates.get(template!.id)!.status).toBe("PENDING")
    expect(receiver.deliveries).toEqual([])
  })

  it("setTemplateCategory posts template_category_update with the previous and new category", async () => {
    const [template] = simulator.seedTemplates({ waba_id: WABA, templates: [{ name: "order_update", language: "en_US", category: "UTILITY", components: body() }] })
    const changed = await simulator.setTemplateCategory({ waba_id: WABA, name: "order_update", language: "en_US", category: "marketing" })
    expect(changed).toMatchObject({ template: { category: "MARKETING" }, previous_category: "UTILITY", delivery: { status: 200 } })
    const posted = receiver.deliveries[0]!
    expect(posted.headers["x-hub-signature-256"]).toBe(hmac(posted.body))
    expect(JSON.parse(posted.body).entry).toEqual([
      {
        id: WABA,
        changes: [
          {
            field: "template_category_update",
            value: { message_template_id: Number(template!.id), message_template_name: "order_update", message_template_language: "en_US", previous_category: "UTILITY", new_category: "MARKETING" }
          }
        ]
      }
    ])
    expect(simulator.notifications().map((notification) => notification.kind)).toEqual(["template_category"])
    await expect(simulator.setTemplateCategory({ id: template!.id, category: "MARKETING" })).rejects.toThrow(/already MARKETING/)
    await expect(simulator.setTemplateCategory({ id: template!.id, category: "SERVICE" })).rejects.toThrow(/category must be one of/)
  })

  it("seeding checks every template first: a bad field, a repeated one, an unknown account keep nothing", () => {
    const good = { name: "order_update", language: "en_US", category: "UTILITY", components: body() }
    expect(() => simulator.seedTemplates({ waba_id: WABA, templates: [good, { ...good, name: "x", components: "BODY" }] })).toThrow(/templates\[1\]\.components must be a list/)
    expect(() => simulator.seedTemplates({ waba_id: WABA, templates: [good, good] })).toThrow(/repeats order_update/)
    expect(() => simulator.seedTemplates({ waba_id: WABA, templates: [{ ...good, status: "GONE" as never }] })).toThrow(/status must be one of/)
    expect(() => simulator.seedTemplates({ waba_id: WABA, templates: [{ ...good, id: "12ab" }] })).toThrow(/id must be Meta's id/)
    expect(() => simulator.seedTemplates({ waba_id: "777", templates: [good] })).toThrow(/no number is configured on the WhatsApp Business Account 777/)
    expect(simulator.templates.list()).toEqual([])
    // Seeding again replaces by name and language, keeping the id unless given.
    const [first] = simulator.seedTemplates({ waba_id: WABA, templates: [good] })
    const [again] = simulator.seedTemplates({ waba_id: WABA, templates: [{ ...good, status: "PAUSED" }] })
    expect([again!.id, again!.status]).toEqual([first!.id, "PAUSED"])
    const [renumbered] = simulator.seedTemplates({ waba_id: WABA, templates: [{ ...good, id: "1234567890123456" }] })
    expect(simulator.templates.list()).toEqual([renumbered])
  })
})

describe("the control routes (/_simulator/templates) and connectSimulator", () => {
  const control = async (method: string, path: string, sent?: unknown) => {
    const response = await fetch(`${simulator.url}/_simulator${path}`, {
      method,
      ...(sent === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(sent) })
    })
    return { status: response.status, json: (await response.json()) as any }
  }

  it("seed, list, status and category over HTTP; an unknown template is 404, bad input 400", async () => {
    const seeded = await control("POST", "/templates", { waba_id: WABA, templates: [{ name: "order_update", language: "en_US", category: "UTILITY", components: body(), status: "PENDING" }] })
    expect(seeded.status).toBe(200)
    const id = seeded.json.templates[0].id
    await control("POST", "/templates", { waba_id: OTHER_WABA, templates: [{ name: "other", language: "en", category: "MARKETING", components: body() }] })
    expect((await control("GET", `/templates?waba_id=${WABA}`)).json.templates).toEqual([
      { id, waba_id: WABA, name: "order_update", language: "en_US", status: "PENDING", category: "UTILITY", components: body(), rejected_reason: "NONE" }
    ])
    expect((await control("GET", "/templates")).json.templates).toHaveLength(2)

    const approved = await control("POST", "/templates/status", { waba_id: WABA, name: "order_update", language: "en_US", status: "APPROVED" })
    expect(approved.json).toMatchObject({ template: { id, status: "APPROVED" }, delivery: { status: 200 } })
    const recategorised = await control("POST", "/templates/category", { waba_id: WABA, id, category: "MARKETING" })
    expect(recategorised.json).toMatchObject({ template: { category: "MARKETING" }, previous_category: "UTILITY" })
    expect(receiver.deliveries.map((delivery) => JSON.parse(delivery.body).entry[0].changes[0].field)).toEqual(["message_template_status_update", "template_category_update"])

    expect((await control("POST", "/templates/status", { waba_id: WABA, id: "1999999999999999", status: "APPROVED" })).status).toBe(404)
    expect((await control("POST", "/templates/status", { waba_id: WABA, id, status: "MAYBE" })).status).toBe(400)
    expect((await control("POST", "/templates/status", { waba_id: WABA, id, status: "APPROVED", notify: "no" })).status).toBe(400)
    expect((await control("POST", "/templates", { waba_id: WABA })).json.error.message).toMatch(/templates must be a list/)
    expect((await control("POST", "/script", { route: "templates_list", answers: [{ code: 4 }] })).json).toEqual({ pending: 1 })
    expect((await call("GET", templatesPath())).json.error.code).toBe(4)
    expect((await control("POST", "/reset")).json).toEqual({ reset: true })
    expect((await control("GET", "/templates")).json).toEqual({ templates: [] })
  })

  it("connectSimulator: templates, seedTemplates, setTemplateStatus, setTemplateCategory", async () => {
    const client = connectSimulator(simulator.url)
    const [template] = await client.seedTemplates({ waba_id: WABA, templates: [{ name: "order_update", language: "en_US", category: "UTILITY", components: body(), status: "PENDING" }] })
    expect((await client.setTemplateStatus({ waba_id: WABA, id: template!.id, status: "APPROVED", webhook_url: `${receiver.url}?one-off` })).template.status).toBe("APPROVED")
    expect((await client.setTemplateCategory({ waba_id: WABA, id: template!.id, category: "MARKETING", notify: false })).delivery).toBeNull()
    expect(await client.templates(WABA)).toEqual([{ ...template, status: "APPROVED", category: "MARKETING" }])
    expect(receiver.deliveries).toHaveLength(1)
    await expect(client.setTemplateStatus({ waba_id: WABA, name: "none", language: "en", status: "APPROVED" })).rejects.toThrow(/no template none \(en\)/)
  })
})

import { afterAll, describe, expect, it } from "vitest"
import { Deferred, Effect, Layer } from "effect"
import { Storage, type OrganizationId, type StorageService, type TemplateId } from "@switchboard/core"
import { claimedLockAgo, listen, makeSharedStorage, makeTenant, phone, request, UNKNOWN_UUID } from "./helpers.js"
import { useSendQueueSetup } from "./send-queue-helpers.js"

// POST /templates and DELETE /templates/{uuid} (docs/templates-and-replies.md "Submitting
// and deleting") against the WhatsApp simulator standing in for Meta's template API: the
// rules answered before Meta is called, the local row, Meta's id, status and category,
// Meta's review through its status webhook, "already exists" adopted, a refusal leaving
// nothing, Idempotency-Key, and deletion at Meta.

const APP_SECRET = "template-submission-app-secret"
const WABA_ID = "102290129340398"
const { simulator, setup, messageWhen } = useSendQueueSetup({ appSecret: APP_SECRET, numberBase: 106540352290000 })

const servers: Array<{ close: () => Promise<void> }> = []
afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()))
})

let names = 0
/** A template name no other test submits (the simulator's account is shared). */
const freshName = (prefix = "shipping_notice") => `${prefix}_${Date.now().toString(36)}_${++names}`

/** A submission of `name` through channel `channel_uuid`: a text header, a body and a URL button, each with its example. */
const submission = (channel_uuid: string, name: string, overrides: Record<string, unknown> = {}) => ({
  channel_uuid,
  name,
  language: "en_US",
  category: "UTILITY",
  components: [
    { type: "HEADER", format: "TEXT", text: "Order {{1}}", example: { header_text: ["#1234"] } },
    { type: "BODY", text: "Hi {{1}}, order {{2}} has shipped.", example: { body_text: [["Ada", "#1234"]] } },
    { type: "BUTTONS", buttons: [{ type: "URL", text: "Track", url: "https://example.com/track/{{1}}", example: ["https://example.com/track/1234"] }] }
  ],
  ...overrides
})

/**
 * A request whose answer may be Meta's failure relayed, 502 `provider_error` (the test
 * client refuses every 5xx): the envelope's status, code and message.
 */
const rawCall = async (handler: Parameters<typeof request>[0], apiKey: string, method: "POST" | "DELETE", path: string, body?: unknown) => {
  const response = await request(handler, {
    method,
    url: `/api/v1/api${path}`,
    headers: { authorization: `Bearer ${apiKey}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) })
  })
  const envelope = JSON.parse(response.body) as { status: number; message: string; errors: Array<{ code: string }> }
  expect(envelope.status).toBe(response.statusCode)
  return { status: response.statusCode, code: envelope.errors[0]?.code, message: envelope.message }
}

/** `POST /templates` of {@link submission} of `name` under the Idempotency-Key `submit-<name>`. */
const postUnderKey = (handler: Parameters<typeof request>[0], apiKey: string, channelId: string, name: string) =>
  request(handler, {
    method: "POST",
    url: "/api/v1/api/templates",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json", "idempotency-key": `submit-${name}` },
    payload: JSON.stringify(submission(channelId, name))
  })

/** The template calls the simulator received (list, submit, delete). */
const templateCalls = () => simulator().received().filter((call) => String(call.route).startsWith("templates_"))

const storeTemplate = (storage: Layer.Layer<Storage>, organizationId: OrganizationId, content: Record<string, unknown>) =>
  Effect.runPromise(
    Effect.flatMap(Storage, (store) =>
      store.templates.create(organizationId, {
        uuid: crypto.randomUUID() as TemplateId,
        content: {
          name: "from_meta",
          language: "en_US",
          category: "UTILITY",
          status: "APPROVED",
          components: [{ type: "BODY", text: "Hello" }],
          waba_id: null,
          provider_template_id: null,
          problems: [],
          ...content
        } as never,
        now: new Date().toISOString()
      })
    ).pipe(Effect.provide(storage))
  )

describe("POST /templates", () => {
  it("an unknown channel_uuid is a 404 naming it, before the template's rules", async () => {
    const { api } = await setup()
    const answered = await api.post("/templates", submission(UNKNOWN_UUID, "Bad Name", { category: "AUTHENTICATION", components: [] }))
    expect(answered.status).toBe(404)
    expect(answered.errors).toEqual([expect.objectContaining({ code: "not_found", field: "channel_uuid" })])
    expect(templateCalls()).toEqual([])
  })

  it("refuses, naming each field, an AUTHENTICATION category, a media header and every missing example; nothing stored, Meta not called", async () => {
    const { api, channelId } = await setup()
    const before = templateCalls().length
    const cases: ReadonlyArray<readonly [Record<string, unknown>, string]> = [
      [{ category: "AUTHENTICATION" }, "category"],
      [{ components: [{ type: "HEADER", format: "IMAGE" }, { type: "BODY", text: "Hello" }] }, "components[0].format"],
      [{ components: [{ type: "HEADER", format: "TEXT", text: "Order {{1}}" }, { type: "BODY", text: "Hello" }] }, "components[0].example.header_text"],
      [{ components: [{ type: "BODY", text: "Hi {{1}}, order {{2}}" }] }, "components[0].example.body_text"],
      [{ components: [{ type: "BODY", text: "Hi {{1}}, order {{2}}", example: { body_text: [["Ada"]] } }] }, "components[0].example.body_text[0]"],
      [
        { components: [{ type: "BODY", text: "Hello" }, { type: "BUTTONS", buttons: [{ type: "URL", text: "Track", url: "https://example.com/t/{{1}}" }] }] },
        "components[1].buttons[0].example"
      ],
      [{ name: "Not A Name" }, "name"]
    ]
    for (const [overrides, field] of cases) {
      const answered = await api.post("/templates", submission(channelId, freshName(), overrides))
      expect([answered.status, answered.errors.map((error) => error.field)], JSON.stringify(overrides)).toEqual([400, [field]])
    }
    expect(templateCalls().length).toBe(before)
    expect((await api.get("/templates")).data.templates.map((template: { name: string }) => template.name)).toEqual(["order_update"])
  })

  it("stores the template PENDING with Meta's id and category; Meta's APPROVED status webhook makes it sendable", async () => {
    const setupOf = await setup()
    const { api, channelId, handler } = setupOf
    const name = freshName()
    const submitted = await api.post("/templates", submission(channelId, name, { category: "marketing" }))
    expect([submitted.status, submitted.message]).toEqual([200, "Template submitted to Meta"])
    const atMeta = simulator().templates.list(WABA_ID).find((template) => template.name === name)
    expect(atMeta).toBeDefined()
    expect(submitted.data).toMatchObject({
      name,
      language: "en_US",
      category: "MARKETING",
      status: "PENDING",
      waba_id: WABA_ID,
      provider_template_id: atMeta!.id,
      problems: []
    })
    const call = templateCalls().find((each) => each.route === "templates_create" && (each.body as { name?: string }).name === name)
    expect(call?.authorization).toBe("Bearer EAAGsendqueuetoken00000000000001")
    expect((await api.get(`/templates/${submitted.data.uuid}`)).data).toEqual(submitted.data)

    // Not sendable while PENDING.
    const send = () =>
      api.post("/send/template", {
        phone: phone(11),
        template: {
          name,
          language: { code: "en_US" },
          components: [
            { type: "header", parameters: [{ type: "text", text: "#9" }] },
            { type: "body", parameters: [{ type: "text", text: "Ada" }, { type: "text", text: "#9" }] },
            { type: "button", sub_type: "url", index: "0", parameters: [{ type: "text", text: "9" }] }
          ]
        }
      })
    expect((await send()).errors[0]?.code).toBe("template_not_approved")

    const server = await listen(handler)
    servers.push(server)
    simulator().configure({ appSecret: APP_SECRET })
    await simulator().setTemplateStatus({ waba_id: WABA_ID, id: atMeta!.id, status: "APPROVED", webhook_url: `${server.base}/webhooks/whatsapp` })
    expect((await api.get(`/templates/${submitted.data.uuid}`)).data.status).toBe("APPROVED")

    const sent = await send()
    expect([sent.status, sent.data.transport], JSON.stringify(sent.errors)).toEqual([200, "whatsapp"])
    const settled = await messageWhen(api, sent.data.message_id, (message) => message.status === "sent")
    expect(settled.status).toBe("sent")
  })

  it("Meta's \"already exists\" adopts Meta's template of that name and language (its id, status and category)", async () => {
    const { api, channelId } = await setup()
    const name = freshName("already_there")
    simulator().seedTemplates({
      waba_id: WABA_ID,
      templates: [
        { name: `${name}_longer`, language: "en_US", category: "UTILITY", status: "APPROVED", components: [{ type: "BODY", text: "Other" }] },
        { name, language: "en_US", category: "MARKETING", status: "APPROVED", components: [{ type: "BODY", text: "Hello from Meta" }] }
      ]
    } as never)
    const seeded = simulator().templates.list(WABA_ID).find((template) => template.name === name)!
    const adopted = await api.post("/templates", submission(channelId, name))
    expect(adopted.status, JSON.stringify(adopted.errors)).toBe(200)
    expect(adopted.data).toMatchObject({
      name,
      provider_template_id: seeded.id,
      status: "APPROVED",
      category: "MARKETING",
      components: [{ type: "BODY", text: "Hello from Meta" }]
    })
  })

  it("a refusal of Meta's keeps nothing: 400 template_refused_by_meta (Meta's code 100), 502 provider_error (Meta down)", async () => {
    const { api, apiKey, channelId, handler } = await setup()
    const name = freshName()
    simulator().script.enqueue([{ code: 100, message: "Invalid parameter" }], "templates_create")
    const refused = await api.post("/templates", submission(channelId, name))
    expect([refused.status, refused.errors[0]?.code]).toEqual([400, "template_refused_by_meta"])
    expect(refused.message).toContain("Invalid parameter")
    simulator().script.enqueue([{ http_status: 503 }], "templates_create")
    const down = await rawCall(handler, apiKey, "POST", "/templates", submission(channelId, name))
    expect([down.status, down.code]).toEqual([502, "provider_error"])
    expect(down.message).not.toContain("EAAG")
    expect((await api.get("/templates")).data.templates.map((template: { name: string }) => template.name)).toEqual(["order_update"])
    // The name is free: the same submission goes through once Meta takes it.
    expect((await api.post("/templates", submission(channelId, name))).status).toBe(200)
    // And is then taken for this account.
    const taken = await api.post("/templates", submission(channelId, name))
    expect([taken.status, taken.errors[0]?.code]).toEqual([400, "template_name_taken"])
  })

  it("a DELETED template of the identity is revived by a submission Meta takes; Meta's 30-day block leaves it as it was", async () => {
    const { api, channelId, organization, storage } = await setup()
    const name = freshName("revived")
    const written = await storeTemplate(storage, organization.id, { name, status: "DELETED", waba_id: WABA_ID, provider_template_id: "5550001" })
    const deletedUuid = (written as { template: { uuid: string } }).template.uuid
    const revived = await api.post("/templates", submission(channelId, name))
    expect(revived.status, JSON.stringify(revived.errors)).toBe(200)
    const atMeta = simulator().templates.list(WABA_ID).find((template) => template.name === name)
    expect(revived.data).toMatchObject({ uuid: deletedUuid, status: "PENDING", provider_template_id: atMeta!.id })
    expect((await api.get("/templates")).data.templates.filter((template: { name: string }) => template.name === name)).toHaveLength(1)

    // Deleted at Meta, then submitted again within 30 days: Meta refuses, the row stays DELETED.
    expect((await api.delete(`/templates/${deletedUuid}`)).data.status).toBe("DELETED")
    const blocked = await api.post("/templates", submission(channelId, name))
    expect([blocked.status, blocked.errors[0]?.code]).toEqual([400, "template_refused_by_meta"])
    expect((await api.get(`/templates/${deletedUuid}`)).data).toMatchObject({ status: "DELETED", provider_template_id: atMeta!.id })
  })

  it("honours Idempotency-Key: a retry replays the answer, Meta called once", async () => {
    const { apiKey, channelId, handler } = await setup()
    const name = freshName()
    const post = () => postUnderKey(handler, apiKey, channelId, name)
    const first = await post()
    const second = await post()
    expect([first.statusCode, second.statusCode]).toEqual([200, 200])
    expect(second.headers["idempotent-replayed"]).toBe("true")
    expect(JSON.parse(second.body)).toEqual(JSON.parse(first.body))
    expect(templateCalls().filter((each) => each.route === "templates_create" && (each.body as { name?: string }).name === name)).toHaveLength(1)
  })
})

/**
 * A store over {@link makeSharedStorage} for a slow first request under an Idempotency-Key:
 * while `slow`, a claim is dated one lock earlier (a retry may take it over at once), and
 * the next call of `templates[held]` (the look-up by name, or the write) waits for the gate
 * `hold` before it reaches the store.
 */
const slowTemplateStorage = (held: "findByIdentity" | "create") => {
  const inner = Effect.runSync(Effect.provide(Storage, makeSharedStorage()))
  const state = { slow: false, hold: undefined as Deferred.Deferred<void> | undefined, held: 0 }
  const service: StorageService = {
    ...inner,
    idempotency: {
      ...inner.idempotency,
      claim: (organizationId, claim) => inner.idempotency.claim(organizationId, state.slow ? claimedLockAgo(claim) : claim)
    },
    templates: {
      ...inner.templates,
      [held]: (...args: Array<never>) =>
        Effect.suspend(() => {
          const call = () => (inner.templates[held] as (...args: Array<never>) => Effect.Effect<unknown, unknown>)(...args)
          const gate = state.hold
          if (gate === undefined) return call()
          state.hold = undefined
          state.held++
          return Effect.zipRight(Deferred.await(gate), call())
        })
    }
  }
  return { layer: Layer.succeed(Storage, service), state }
}

describe("a slow submission whose Idempotency-Key a retry took over", () => {
  it.each([
    ["looks its name up", "findByIdentity"],
    ["writes its row", "create"]
  ] as const)("meeting the retry's template (its own uuid) when it %s answers it, 200, not 400 template_name_taken; Meta called once", async (_, held) => {
    const storage = slowTemplateStorage(held)
    const { apiKey, channelId, handler } = await setup({ storage: storage.layer })
    const name = freshName()
    const post = () => postUnderKey(handler, apiKey, channelId, name)
    // The first request: its claim dated a lock earlier, held before the call `held`.
    const gate = Effect.runSync(Deferred.make<void>())
    storage.state.slow = true
    storage.state.hold = gate
    const first = Promise.resolve(post())
    await expect.poll(() => storage.state.held).toBe(1)
    storage.state.slow = false
    // The retry takes the claim over with the first's template uuid and submits it.
    const retry = await post()
    expect(retry.statusCode).toBe(200)
    const retried = JSON.parse(retry.body).data
    Effect.runSync(Deferred.succeed(gate, undefined))
    const answered = await first
    expect(answered.statusCode).toBe(200)
    expect(JSON.parse(answered.body).data).toEqual(retried)
    expect(templateCalls().filter((each) => each.route === "templates_create" && (each.body as { name?: string }).name === name)).toHaveLength(1)
  })
})

describe("another organization", () => {
  it("can neither submit through this organization's channel nor delete its template (404), and Meta is not called", async () => {
    const { api, channelId, handler, storage } = await setup()
    const submitted = await api.post("/templates", submission(channelId, freshName()))
    const other = await makeTenant(storage, handler, { name: "Other" })
    const calls = templateCalls().length
    const through = await other.api.post("/templates", submission(channelId, freshName()))
    expect([through.status, through.errors[0]?.field]).toEqual([404, "channel_uuid"])
    expect((await other.api.delete(`/templates/${submitted.data.uuid}`)).status).toBe(404)
    expect(templateCalls().length).toBe(calls)
    expect((await api.get(`/templates/${submitted.data.uuid}`)).data.status).toBe("PENDING")
  })
})

describe("DELETE /templates/{uuid}", () => {
  it("deletes the template at Meta (its name and id) and marks it DELETED; a second DELETE answers it as it is", async () => {
    const { api, channelId } = await setup()
    const name = freshName()
    const submitted = await api.post("/templates", submission(channelId, name))
    const deleted = await api.delete(`/templates/${submitted.data.uuid}`)
    expect([deleted.status, deleted.message, deleted.data.status]).toEqual([200, "Template deleted", "DELETED"])
    const call = templateCalls().find((each) => each.route === "templates_delete" && each.path.includes(name))
    expect(call?.path).toContain(`hsm_id=${submitted.data.provider_template_id}`)
    expect(simulator().templates.list(WABA_ID).find((template) => template.name === name)?.status ?? "DELETED").toBe("DELETED")
    const calls = templateCalls().length
    const again = await api.delete(`/templates/${submitted.data.uuid}`)
    expect([again.status, again.data.status]).toEqual([200, "DELETED"])
    expect(templateCalls().length).toBe(calls)
  })

  it("a template of an account with no active channel of the organization → 409 no_channel_for_account, unchanged", async () => {
    const { api, organization, storage } = await setup()
    const written = await storeTemplate(storage, organization.id, { waba_id: "999000111", provider_template_id: "7770001" })
    const uuid = (written as { template: { uuid: string } }).template.uuid
    const answered = await api.delete(`/templates/${uuid}`)
    expect([answered.status, answered.errors[0]?.code]).toEqual([409, "no_channel_for_account"])
    expect((await api.get(`/templates/${uuid}`)).data.status).toBe("APPROVED")
  })

  it("a template written by hand is only marked DELETED, Meta not called; an unknown uuid is a 404", async () => {
    const { api } = await setup()
    const handWritten = (await api.get("/templates")).data.templates[0] as { uuid: string; provider_template_id: string | null }
    expect(handWritten.provider_template_id).toBeNull()
    const calls = templateCalls().length
    const deleted = await api.delete(`/templates/${handWritten.uuid}`)
    expect([deleted.status, deleted.data.status]).toEqual([200, "DELETED"])
    expect(templateCalls().length).toBe(calls)
    expect((await api.delete(`/templates/${UNKNOWN_UUID}`)).status).toBe(404)
  })

  it("Meta's refusal changes nothing", async () => {
    const { api, apiKey, channelId, handler } = await setup()
    const submitted = await api.post("/templates", submission(channelId, freshName()))
    simulator().script.enqueue([{ http_status: 503 }], "templates_delete")
    const refused = await rawCall(handler, apiKey, "DELETE", `/templates/${submitted.data.uuid}`)
    expect([refused.status, refused.code]).toEqual([502, "provider_error"])
    expect((await api.get(`/templates/${submitted.data.uuid}`)).data.status).toBe("PENDING")
  })
})

import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Effect, Layer } from "effect"
import { ChannelVerifier, type OrganizationId, Storage } from "@switchboard/core"
import { startSimulator, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"
import { bearer, contactRows, importContacts, makeHandler, makeSharedStorage, makeTenant, request, UNKNOWN_UUID } from "./helpers.js"

// The template sync over HTTP (docs/templates-and-replies.md "Templates from Meta"): the
// WhatsApp simulator stands in for Meta; `POST /channels/{uuid}/templates/sync` runs it at
// once, the loop runs it for a new channel by itself, and `GET /channels/{uuid}` shows it.

const SECRET_KEY = Buffer.alloc(32, 9).toString("base64")
const TOKEN = "EAAGtemplatesynchttp00000000000042"

let simulator: WhatsAppSimulator
beforeAll(async () => {
  simulator = await startSimulator()
})
afterAll(() => simulator.close())

let accounts = 0
/** A number of a new account at the simulator, holding `templates` (Meta's shape). */
const newAccount = (templates: ReadonlyArray<Record<string, unknown>>) => {
  const waba_id = String(102290129350000 + ++accounts)
  const phone_number_id = String(106540352260000 + accounts)
  simulator.addNumber({ phone_number_id, display_phone_number: "+31 6 1234 5678", waba_id, access_token: TOKEN })
  simulator.seedTemplates({
    waba_id,
    templates: templates.map((template) => ({
      name: String(template.name),
      language: "en_US",
      category: "UTILITY",
      components: [{ type: "BODY", text: `Hello from ${String(template.name)}` }],
      ...template
    }))
  })
  return { waba_id, phone_number_id }
}

const setup = async (loop: boolean) => {
  const storage = makeSharedStorage()
  const graphApi = { baseUrl: simulator.url, apiVersion: "v21.0" }
  const handler = makeHandler(storage, {
    secretKey: SECRET_KEY,
    graphApi,
    channelVerifier: ChannelVerifier.graph(graphApi),
    dispatch: { templates: loop, webhooks: false, messages: false }
  })
  const tenant = await makeTenant(storage, handler)
  return { storage, handler, ...tenant }
}

const inStorage = <A>(storage: Layer.Layer<Storage>, use: (storage: Storage["Type"]) => Effect.Effect<A, unknown>) =>
  Effect.runPromise(Effect.flatMap(Storage, use).pipe(Effect.provide(storage)))

const waitFor = async (condition: () => Promise<boolean>, what: string, timeoutMs = 10_000) => {
  const until = Date.now() + timeoutMs
  while (!(await condition())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

describe("POST /channels/{uuid}/templates/sync", () => {
  it("syncs at once and answers the counts; GET /channels/{uuid} shows the run; a template gone at Meta becomes DELETED", async () => {
    const { api, handler } = await setup(false)
    const account = newAccount([{ name: "order_update" }, { name: "welcome" }, { name: "promo", status: "REJECTED", rejected_reason: "INVALID_FORMAT" }])
    const channel = await api.post("/channels", { phone_number_id: account.phone_number_id, waba_id: account.waba_id, access_token: TOKEN })
    expect(channel.status, JSON.stringify(channel.errors)).toBe(200)
    const synced = await api.post(`/channels/${channel.data.uuid}/templates/sync`, undefined)
    expect(synced.status, JSON.stringify(synced.errors)).toBe(200)
    expect(synced.message).toBe("Templates synced")
    expect(synced.data).toEqual({ added: 3, updated: 0, deleted: 0, unchanged: 0 })
    const templates = await api.get("/templates")
    const byName = Object.fromEntries((templates.data.templates as Array<Record<string, unknown>>).map((template) => [template.name, template]))
    expect(byName.promo).toMatchObject({ status: "REJECTED", rejected_reason: "INVALID_FORMAT", waba_id: account.waba_id })
    expect(byName.welcome).toMatchObject({ status: "APPROVED", provider_template_id: expect.any(String) })
    const shown = await api.get(`/channels/${channel.data.uuid}`)
    expect(shown.data.template_sync).toEqual({ last_run_at: expect.any(String), outcome: { added: 3, updated: 0, deleted: 0, unchanged: 0 }, error: null })

    simulator.templates.delete(account.waba_id, "welcome", null, Date.now())
    const again = await api.post(`/channels/${channel.data.uuid}/templates/sync`, undefined)
    expect(again.data).toEqual({ added: 0, updated: 0, deleted: 1, unchanged: 2 })
    const welcome = await api.get(`/templates/${String(byName.welcome!.uuid)}`)
    expect(welcome.data.status).toBe("DELETED")
    await handler.dispose()
  })

  it("409 sync_in_progress while another sync holds the account; 404 for an unknown channel", async () => {
    const { api, handler, storage, organization } = await setup(false)
    const account = newAccount([{ name: "held" }])
    const channel = await api.post("/channels", { phone_number_id: account.phone_number_id, waba_id: account.waba_id, access_token: TOKEN })
    const now = new Date()
    const held = await inStorage(storage, (store) =>
      store.templateSyncs.claimAccount(organization.id as OrganizationId, account.waba_id, {
        now: now.toISOString(),
        lease: "another",
        leaseUntil: new Date(now.getTime() + 60_000).toISOString()
      }))
    expect(held).toBe(true)
    const refused = await api.post(`/channels/${channel.data.uuid}/templates/sync`, undefined)
    expect(refused.status).toBe(409)
    expect(refused.errors[0]?.code).toBe("sync_in_progress")
    expect((await api.get("/templates")).data.templates).toEqual([])
    const unknown = await api.post(`/channels/${UNKNOWN_UUID}/templates/sync`, undefined)
    expect(unknown.status).toBe(404)
    expect(unknown.errors[0]?.code).toBe("not_found")
    await handler.dispose()
  })

  it("Meta's refusal: 502 template_sync_failed, kept on the channel's template_sync; the channel stays active", async () => {
    const { api, apiKey, handler } = await setup(false)
    const account = newAccount([{ name: "refused" }])
    const channel = await api.post("/channels", { phone_number_id: account.phone_number_id, waba_id: account.waba_id, access_token: TOKEN })
    simulator.script.enqueue([{ code: 100, message: "(#100) Invalid parameter" }], "templates_list")
    // A 502 (the API helper refuses every 5xx): read by hand.
    const response = await request(handler, { method: "POST", url: `/api/v1/api/channels/${channel.data.uuid}/templates/sync`, headers: bearer(apiKey) })
    expect(response.statusCode).toBe(502)
    expect(response.body).not.toContain(TOKEN)
    const failed = JSON.parse(response.body) as { status: number; success: boolean; data: unknown; errors: Array<{ code: string }> }
    expect(failed).toMatchObject({ status: 502, success: false, data: null, errors: [{ code: "template_sync_failed" }] })
    const shown = await api.get(`/channels/${channel.data.uuid}`)
    expect(shown.data.status).toBe("active")
    expect(shown.data.template_sync).toMatchObject({ outcome: null, error: expect.stringContaining("Invalid parameter") })
    await handler.dispose()
  })
})

describe("Meta's temporary errors", () => {
  it("a 130429 (throughput) is tried again within the call: 200 with the counts", async () => {
    const { api, handler } = await setup(false)
    const account = newAccount([{ name: "throttled" }])
    const channel = await api.post("/channels", { phone_number_id: account.phone_number_id, waba_id: account.waba_id, access_token: TOKEN })
    simulator.script.enqueue([{ code: 130429, http_status: 429, message: "Rate limit hit" }], "templates_list")
    const synced = await api.post(`/channels/${channel.data.uuid}/templates/sync`, undefined)
    expect(synced.status, JSON.stringify(synced.errors)).toBe(200)
    expect(synced.data).toEqual({ added: 1, updated: 0, deleted: 0, unchanged: 0 })
    await handler.dispose()
  })
})

describe("the template sync loop", () => {
  it("a new channel's templates come in by themselves within seconds", async () => {
    const { api, handler } = await setup(true)
    await handler.ready
    const account = newAccount([{ name: "one" }, { name: "two", status: "REJECTED", rejected_reason: "SCAM" }])
    const channel = await api.post("/channels", { phone_number_id: account.phone_number_id, waba_id: account.waba_id, access_token: TOKEN })
    await waitFor(async () => (await api.get(`/channels/${channel.data.uuid}`)).data.template_sync.outcome !== null, "the first sync")
    expect((await api.get(`/channels/${channel.data.uuid}`)).data.template_sync.outcome).toEqual({ added: 2, updated: 0, deleted: 0, unchanged: 0 })
    const statuses = ((await api.get("/templates")).data.templates as Array<{ name: string; status: string }>).map(({ name, status }) => `${name}:${status}`).sort()
    expect(statuses).toEqual(["one:APPROVED", "two:REJECTED"])
    const health = await handler.health()
    expect(health.checks.dispatchers).toEqual({ ok: true })
    await handler.dispose()
  })

  it("is not woken by the process's writes that wake the other loops: it claims on its poll only", async () => {
    // docs/benchmarks.md "Dispatch on PostgreSQL: the loops woken for nothing".
    const shared = makeSharedStorage()
    let claims = 0
    const counting = Layer.effect(
      Storage,
      Effect.map(Storage, (storage) => ({
        ...storage,
        templateSyncs: {
          ...storage.templateSyncs,
          claim: (request: Parameters<typeof storage.templateSyncs.claim>[0]) => Effect.suspend(() => {
            claims++
            return storage.templateSyncs.claim(request)
          })
        }
      }))
    ).pipe(Layer.provide(shared))
    const handler = makeHandler(counting, { secretKey: SECRET_KEY, dispatch: { templates: true, webhooks: false, messages: false } })
    const { api } = await makeTenant(shared, handler)
    await handler.ready
    await waitFor(async () => claims >= 1, "the loop's first pass")
    const before = claims
    // Each import is a write that wakes the process's loops (wakeOnEnqueue).
    for (let i = 0; i < 6; i++) await importContacts(api, contactRows(i * 10, 2))
    await new Promise((resolve) => setTimeout(resolve, 300))
    // Its poll (TEMPLATE_SYNC_POLL_INTERVAL_MS, 2 s) may fall in this time once; six wakes would be six claims more.
    expect(claims - before).toBeLessThanOrEqual(1)
    await handler.dispose()
  })
})

describe("the templateSync option", () => {
  it("a malformed intervalMs throws where the handler is created, naming the option", () => {
    for (const intervalMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => makeHandler(makeSharedStorage(), { templateSync: { intervalMs } })).toThrow("templateSync.intervalMs must be a positive number of milliseconds")
    }
  })
})

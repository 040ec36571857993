import { mkdtempSync, readFileSync, existsSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Cause, Effect, HashMap, Layer, Logger, Scope } from "effect"
import { ChannelVerifier, Channels, Core, MAX_CHANNELS_PER_ORGANIZATION, type OrganizationId, SecretKey, Storage } from "@switchboard/core"
import { SqliteStorage } from "@switchboard/storage-sqlite"
import { startSimulator, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"
import { bearer, makeHandler, makeSharedStorage, makeTenant, request, UNKNOWN_UUID } from "./helpers.js"

// Channels over HTTP (docs/channels.md): verification through the WhatsApp simulator standing
// in for Meta's Graph API, the rules of POST /channels, and the access token never
// leaving the server in any form.

const SECRET_KEY = Buffer.alloc(32, 7).toString("base64")
const GOOD_TOKEN = "EAAGgoodtoken0000000000000000001"

const OTHER_GOOD_TOKEN = "EAAGgoodanothertoken00000000002"
const DISTINCT_TOKEN = "EAAGgoodDISTINCTIVE9f3k2j5h7g1q0zz"
const REFUSED_TOKEN = "EAAGrefusedtoken-0123456789abcdef"
const DISTINCT_REFUSED = "EAAGrefusedDISTINCTIVE4m8n2b6v1c"

/**
 * The WhatsApp simulator stands in for the Graph API; each test's number is added to it
 * with the display number `+31 6 1234 5678`. The refused tokens pass its token check so
 * that a scripted refusal ({@link refuseNextLookupsEchoing}) can answer them.
 */
let simulator: WhatsAppSimulator
const graph = {
  get baseUrl() {
    return simulator.url
  },
  get calls() {
    return simulator.received().map(({ authorization, method, path }) => ({ method, url: path, authorization: authorization ?? undefined }))
  }
}
beforeAll(async () => {
  simulator = await startSimulator()
})
afterAll(() => simulator.close())

/**
 * The next look-ups are refused with Meta's 401 (code 190) whose message echoes the token
 * (Meta's own messages do not; the API must cut it out if one did).
 */
const refuseNextLookupsEchoing = (...tokens: ReadonlyArray<string>) =>
  simulator.script.enqueue(tokens.map((token) => ({ code: 190, message: `Invalid OAuth access token - Cannot parse access token ${token}` })), "lookup")

const verifier = () => ChannelVerifier.graph({ baseUrl: graph.baseUrl, apiVersion: "v21.0" })

/** A handler with a secret key and the recorder as Graph API, and a fresh tenant on it. */
const setup = async (options: { readonly logger?: Logger.Logger<unknown, unknown>; readonly storage?: Layer.Layer<Storage> } = {}) => {
  const storage = options.storage ?? makeSharedStorage()
  const handler = makeHandler(storage, { secretKey: SECRET_KEY, channelVerifier: verifier(), ...(options.logger ? { logger: options.logger } : {}) })
  const tenant = await makeTenant(storage, handler)
  return { storage, handler, ...tenant }
}

let nextId = 0
/** A phone_number_id no other test uses, known to the simulator. */
const phoneNumberId = () => {
  const id = String(106540352250000 + ++nextId)
  simulator.addNumber({
    phone_number_id: id,
    display_phone_number: "+31 6 1234 5678",
    waba_id: "102290129340398",
    access_token: [GOOD_TOKEN, OTHER_GOOD_TOKEN, DISTINCT_TOKEN, `${DISTINCT_TOKEN}x`, REFUSED_TOKEN, DISTINCT_REFUSED]
  })
  return id
}

const body = (overrides: Record<string, unknown> = {}) => ({
  phone_number_id: phoneNumberId(),
  waba_id: "102290129340398",
  access_token: GOOD_TOKEN,
  ...overrides
})

/**
 * A channel as `GET /channels/{uuid}` and `PUT` answer it: with its (empty) send queue
 * figures and its account's template sync, not run yet.
 */
const withQueue = (channel: Record<string, unknown>) => ({
  ...channel,
  queue: { queued: 0, sending: 0, oldest_queued_at: null },
  template_sync: { last_run_at: null, outcome: null, error: null }
})

describe("POST /channels", () => {
  it("verifies the token with Meta, takes display_phone_number from its answer (E.164) and answers the channel without the token", async () => {
    const { api, handler } = await setup()
    const input = body()
    const before = graph.calls.length
    const result = await api.post("/channels", input)
    expect(result.status, JSON.stringify(result.errors)).toBe(200)
    expect(result.data).toEqual({
      uuid: expect.stringMatching(/^[0-9a-f-]{36}$/),
      provider: "whatsapp_cloud",
      phone_number_id: input.phone_number_id,
      display_phone_number: "+31612345678",
      waba_id: "102290129340398",
      access_token_set: true,
      access_token_last4: "0001",
      throughput_mps: 50,
      status: "active",
      paused_reason: null,
      paused_at: null,
      created_at: expect.any(String),
      updated_at: expect.any(String)
    })
    expect(graph.calls.slice(before)).toEqual([
      { method: "GET", url: `/v21.0/${input.phone_number_id}`, authorization: `Bearer ${GOOD_TOKEN}` }
    ])
    await handler.dispose()
  })

  it("keeps a display_phone_number given in the body, normalised to E.164", async () => {
    const { api, handler } = await setup()
    const result = await api.post("/channels", body({ display_phone_number: "+1 (415) 555-2671" }))
    expect(result.data.display_phone_number).toBe("+14155552671")
    await handler.dispose()
  })

  it("400 channel_verification_failed when Meta refuses the token; the message never holds the token; nothing stored", async () => {
    const { api, handler } = await setup()
    const refused = REFUSED_TOKEN
    refuseNextLookupsEchoing(refused)
    const result = await api.post("/channels", body({ access_token: refused }))
    expect(result.status).toBe(400)
    expect(result.errors.map((e) => e.code)).toEqual(["channel_verification_failed"])
    expect(result.message).toContain("Invalid OAuth access token")
    expect(JSON.stringify(result)).not.toContain(refused)
    expect((await api.get("/channels")).data.channels).toEqual([])
    await handler.dispose()
  })

  it("400 channel_verification_failed when the Graph API cannot be reached", async () => {
    const storage = makeSharedStorage()
    const handler = makeHandler(storage, { secretKey: SECRET_KEY, channelVerifier: ChannelVerifier.graph({ baseUrl: "http://127.0.0.1:9" }) })
    const { api } = await makeTenant(storage, handler)
    const result = await api.post("/channels", body())
    expect(result.status).toBe(400)
    expect(result.errors.map((e) => e.code)).toEqual(["channel_verification_failed"])
    expect((await api.get("/channels")).data.channels).toEqual([])
    await handler.dispose()
  })

  it("400 naming each bad field, before asking Meta; nothing stored", async () => {
    const { api, handler } = await setup()
    const before = graph.calls.length
    for (const [input, field, code] of [
      [{ waba_id: "1", access_token: GOOD_TOKEN }, "phone_number_id", "required"],
      [body({ phone_number_id: "12ab" }), "phone_number_id", "invalid_format"],
      [body({ waba_id: "" }), "waba_id", "required"],
      [body({ access_token: "EAAGgoodshort" }), "access_token", "out_of_range"],
      [body({ access_token: "EAAGgood token with spaces" }), "access_token", "invalid_format"],
      [body({ display_phone_number: "12" }), "display_phone_number", "invalid_format"],
      [body({ phone_number_id: 1234 }), "phone_number_id", "invalid_type"]
    ] as const) {
      const result = await api.post("/channels", input)
      expect(result.status, JSON.stringify(input)).toBe(400)
      expect(result.errors.map((e) => [e.field, e.code]), JSON.stringify(input)).toEqual([[field, code]])
    }
    expect(graph.calls.length).toBe(before)
    expect((await api.get("/channels")).data.channels).toEqual([])
    await handler.dispose()
  })

  it("400 phone_number_id_taken for a number connected by this or another organization", async () => {
    const { api, storage, handler } = await setup()
    const other = await makeTenant(storage, handler)
    const input = body()
    expect((await api.post("/channels", input)).status).toBe(200)
    for (const client of [api, other.api]) {
      const result = await client.post("/channels", { ...input, access_token: OTHER_GOOD_TOKEN })
      expect(result.status).toBe(400)
      expect(result.errors).toEqual([{ code: "phone_number_id_taken", field: "phone_number_id", message: expect.any(String) }])
    }
    expect((await other.api.get("/channels")).data.channels).toEqual([])
    await handler.dispose()
  })

  it(`400 channel_limit_reached past ${MAX_CHANNELS_PER_ORGANIZATION} channels; a removal frees a slot`, async () => {
    const { api, handler } = await setup()
    const created: Array<string> = []
    for (let i = 0; i < MAX_CHANNELS_PER_ORGANIZATION; i++) {
      const result = await api.post("/channels", body())
      expect(result.status).toBe(200)
      created.push(result.data.uuid)
    }
    const over = await api.post("/channels", body())
    expect(over.status).toBe(400)
    expect(over.errors.map((e) => e.code)).toEqual(["channel_limit_reached"])
    expect((await api.delete(`/channels/${created[0]}`)).status).toBe(200)
    expect((await api.post("/channels", body())).status).toBe(200)
    expect((await api.get("/channels")).data.channels).toHaveLength(MAX_CHANNELS_PER_ORGANIZATION)
    await handler.dispose()
  })
})

describe("GET /channels and DELETE /channels/{uuid}", () => {
  it("lists the organization's channels oldest first (the default first), never another's", async () => {
    const { api, storage, handler } = await setup()
    const other = await makeTenant(storage, handler)
    const first = (await api.post("/channels", body())).data
    const second = (await api.post("/channels", body())).data
    await other.api.post("/channels", body())
    const listed = await api.get("/channels")
    expect(listed.status).toBe(200)
    expect(listed.data).toEqual({ channels: [first, second] })
    await handler.dispose()
  })

  it("removes a channel → {uuid, deleted: true}; an unknown or another organization's uuid → 404 not_found, nothing removed", async () => {
    const { api, storage, handler } = await setup()
    const other = await makeTenant(storage, handler)
    const channel = (await api.post("/channels", body())).data
    for (const [client, uuid] of [[other.api, channel.uuid], [api, UNKNOWN_UUID]] as const) {
      const result = await client.delete(`/channels/${uuid}`)
      expect(result.status).toBe(404)
      expect(result.errors.map((e) => e.code)).toEqual(["not_found"])
    }
    expect((await api.get("/channels")).data.channels).toEqual([channel])
    expect(await api.delete(`/channels/${channel.uuid.toUpperCase()}`)).toMatchObject({ status: 200, data: { uuid: channel.uuid, deleted: true } })
    expect((await api.get("/channels")).data.channels).toEqual([])
    expect((await api.delete(`/channels/${channel.uuid}`)).status).toBe(404)
    expect((await api.delete("/channels/not-a-uuid")).status).toBe(400)
    await handler.dispose()
  })
})

describe("throughput_mps", () => {
  it("defaults to 50, is stored as given (1 and 1000), and shows in GET /channels", async () => {
    const { api, handler } = await setup()
    const plain = await api.post("/channels", body())
    const low = await api.post("/channels", body({ throughput_mps: 1 }))
    const high = await api.post("/channels", body({ throughput_mps: 1000 }))
    expect([plain, low, high].map((r) => [r.status, r.data.throughput_mps])).toEqual([[200, 50], [200, 1], [200, 1000]])
    expect((await api.get("/channels")).data.channels.map((c: { throughput_mps: number }) => c.throughput_mps)).toEqual([50, 1, 1000])
    await handler.dispose()
  })

  it("400 invalid_input naming throughput_mps outside 1–1 000 or not an integer, on POST and PUT; nothing stored or changed", async () => {
    const { api, handler } = await setup()
    const channel = (await api.post("/channels", body())).data
    const before = graph.calls.length
    for (const bad of [0, 1001, -5, 2.5, "50", true, { n: 1 }]) {
      for (const result of [await api.post("/channels", body({ throughput_mps: bad })), await api.put(`/channels/${channel.uuid}`, { throughput_mps: bad })]) {
        expect(result.status, JSON.stringify(bad)).toBe(400)
        expect(result.errors.map((e) => e.field), JSON.stringify(bad)).toEqual(["throughput_mps"])
        expect(result.message, JSON.stringify(bad)).toContain("throughput_mps")
      }
    }
    expect(graph.calls.length).toBe(before)
    expect((await api.get("/channels")).data.channels).toEqual([channel])
    await handler.dispose()
  })
})

describe("GET /channels/{uuid} and PUT /channels/{uuid}", () => {
  it("GET answers the channel as listed; another organization's or an unknown uuid → 404 not_found; a malformed uuid → 400", async () => {
    const { api, storage, handler } = await setup()
    const other = await makeTenant(storage, handler)
    const channel = (await api.post("/channels", body({ throughput_mps: 80 }))).data
    expect(await api.get(`/channels/${channel.uuid}`)).toMatchObject({ status: 200, data: withQueue(channel) })
    expect((await api.get(`/channels/${channel.uuid.toUpperCase()}`)).data).toEqual(withQueue(channel))
    for (const [client, uuid] of [[other.api, channel.uuid], [api, UNKNOWN_UUID]] as const) {
      const result = await client.get(`/channels/${uuid}`)
      expect(result.status).toBe(404)
      expect(result.errors.map((e) => e.code)).toEqual(["not_found"])
    }
    expect((await api.get("/channels/not-a-uuid")).status).toBe(400)
    await handler.dispose()
  })

  it("GET shows template_sync: the last sync of the channel's account (its time, counts and error), all null before the first", async () => {
    const { api, storage, organization, handler } = await setup()
    const channel = (await api.post("/channels", body())).data
    expect((await api.get(`/channels/${channel.uuid}`)).data.template_sync).toEqual({ last_run_at: null, outcome: null, error: null })
    // Adding the channel made its account's sync due at once; a sync loop claims and records it.
    const record = (result: { readonly last_outcome: { added: number; updated: number; deleted: number; unchanged: number } | null; readonly last_error: string | null }) =>
      Effect.runPromise(
        Effect.gen(function* () {
          const { templateSyncs } = yield* Storage
          const now = new Date().toISOString()
          const [claimed] = yield* templateSyncs.claim({ now, lease: "lease", leaseUntil: new Date(Date.now() + 60_000).toISOString(), limit: 10 })
          expect(claimed).toMatchObject({ organization_id: organization.id, waba_id: "102290129340398" })
          yield* templateSyncs.record(organization.id, "102290129340398", "lease", { next_due_at: now, last_run_at: "2026-11-27T09:00:00.000Z", ...result })
        }).pipe(Effect.provide(storage))
      )
    await record({ last_outcome: { added: 3, updated: 1, deleted: 0, unchanged: 12 }, last_error: null })
    expect((await api.get(`/channels/${channel.uuid}`)).data.template_sync).toEqual({
      last_run_at: "2026-11-27T09:00:00.000Z",
      outcome: { added: 3, updated: 1, deleted: 0, unchanged: 12 },
      error: null
    })
    await record({ last_outcome: null, last_error: "Meta refused the token (190)" })
    expect((await api.get(`/channels/${channel.uuid}`)).data.template_sync).toEqual({
      last_run_at: "2026-11-27T09:00:00.000Z",
      outcome: null,
      error: "Meta refused the token (190)"
    })
    await handler.dispose()
  })

  it("PUT throughput_mps changes it (and updated_at) without asking Meta; an empty body changes nothing", async () => {
    const { api, handler } = await setup()
    const channel = (await api.post("/channels", body())).data
    const before = graph.calls.length
    const empty = await api.put(`/channels/${channel.uuid}`, {})
    expect(empty).toMatchObject({ status: 200, data: withQueue(channel) })
    const updated = await api.put(`/channels/${channel.uuid}`, { throughput_mps: 200 })
    expect(updated.status).toBe(200)
    expect(updated.data).toEqual(withQueue({ ...channel, throughput_mps: 200, updated_at: expect.any(String) }))
    expect(updated.data.updated_at >= channel.updated_at).toBe(true)
    expect(graph.calls.length).toBe(before)
    expect((await api.get(`/channels/${channel.uuid}`)).data).toEqual(updated.data)
    await handler.dispose()
  })

  it("PUT access_token verifies the new token with Meta, then stores it (last4 updated) with throughput_mps in one write; sends use it", async () => {
    const { api, handler } = await setup()
    const channel = (await api.post("/channels", body())).data
    const before = graph.calls.length
    const updated = await api.put(`/channels/${channel.uuid}`, { access_token: OTHER_GOOD_TOKEN, throughput_mps: 7 })
    expect(updated.status, JSON.stringify(updated.errors)).toBe(200)
    expect(updated.data).toEqual(withQueue({ ...channel, access_token_last4: OTHER_GOOD_TOKEN.slice(-4), throughput_mps: 7, updated_at: expect.any(String) }))
    expect(graph.calls.slice(before)).toEqual([
      { method: "GET", url: `/v21.0/${channel.phone_number_id}`, authorization: `Bearer ${OTHER_GOOD_TOKEN}` }
    ])
    expect(JSON.stringify(updated)).not.toContain(OTHER_GOOD_TOKEN)
    expect((await api.get(`/channels/${channel.uuid}`)).data).toEqual(updated.data)
    await handler.dispose()
  })

  it("PUT with a token Meta refuses → 400 channel_verification_failed, nothing changed (not even throughput_mps)", async () => {
    const { api, handler } = await setup()
    const channel = (await api.post("/channels", body())).data
    refuseNextLookupsEchoing(REFUSED_TOKEN)
    const result = await api.put(`/channels/${channel.uuid}`, { access_token: REFUSED_TOKEN, throughput_mps: 9 })
    expect(result.status).toBe(400)
    expect(result.errors.map((e) => [e.code, e.field])).toEqual([["channel_verification_failed", "access_token"]])
    expect(JSON.stringify(result)).not.toContain(REFUSED_TOKEN)
    expect((await api.get(`/channels/${channel.uuid}`)).data).toEqual(withQueue(channel))
    await handler.dispose()
  })

  it("PUT checks the token's form before asking Meta; another organization's or an unknown uuid → 404, nothing changed", async () => {
    const { api, storage, handler } = await setup()
    const other = await makeTenant(storage, handler)
    const channel = (await api.post("/channels", body())).data
    const before = graph.calls.length
    const short = await api.put(`/channels/${channel.uuid}`, { access_token: "EAAGgoodshort" })
    expect(short.errors.map((e) => [e.field, e.code])).toEqual([["access_token", "out_of_range"]])
    for (const [client, uuid] of [[other.api, channel.uuid], [api, UNKNOWN_UUID]] as const) {
      const result = await client.put(`/channels/${uuid}`, { access_token: OTHER_GOOD_TOKEN, throughput_mps: 3 })
      expect(result.status).toBe(404)
      expect(result.errors.map((e) => e.code)).toEqual(["not_found"])
    }
    expect(graph.calls.length).toBe(before)
    expect((await api.put("/channels/not-a-uuid", {})).status).toBe(400)
    expect((await api.get(`/channels/${channel.uuid}`)).data).toEqual(withQueue(channel))
    await handler.dispose()
  })
})

describe("the secret key", () => {
  it("without secretKey, the channel routes answer 503 secret_key_not_configured and the rest works", async () => {
    const storage = makeSharedStorage()
    const handler = makeHandler(storage, { channelVerifier: verifier() })
    const { api, apiKey } = await makeTenant(storage, handler)
    for (const [method, path] of [
      ["GET", "/channels"],
      ["POST", "/channels"],
      ["GET", `/channels/${UNKNOWN_UUID}`],
      ["PUT", `/channels/${UNKNOWN_UUID}`],
      ["DELETE", `/channels/${UNKNOWN_UUID}`]
    ] as const) {
      const response = await request(handler, {
        method,
        url: `/api/v1/api${path}`,
        headers: { ...bearer(apiKey), "content-type": "application/json" },
        ...(method === "POST" ? { payload: JSON.stringify(body()) } : method === "PUT" ? { payload: JSON.stringify({ throughput_mps: 5 }) } : {})
      })
      expect(response.statusCode).toBe(503)
      expect(response.json()).toMatchObject({ status: 503, success: false, data: null, errors: [{ code: "secret_key_not_configured" }] })
      expect(response.json().message).toContain("SWITCHBOARD_SECRET_KEY")
    }
    expect((await api.get("/verify")).status).toBe(200)
    await handler.dispose()
  })

  it("a malformed secretKey throws at createHandler, naming the option and not the value", () => {
    expect(() => makeHandler(makeSharedStorage(), { secretKey: "not-a-key-at-all" })).toThrow(/secretKey must be 32 bytes/)
    expect(() => makeHandler(makeSharedStorage(), { secretKey: "not-a-key-at-all" })).not.toThrow(/not-a-key-at-all/)
  })

  it("another key than the one the store's tokens were encrypted with makes ready reject, naming SWITCHBOARD_SECRET_KEY", async () => {
    const { api, storage, handler } = await setup()
    expect((await api.post("/channels", body())).status).toBe(200)
    await handler.dispose()
    const wrong = makeHandler(storage, { secretKey: Buffer.alloc(32, 8).toString("hex") })
    await expect(wrong.ready).rejects.toThrow(/SWITCHBOARD_SECRET_KEY/)
    const response = await request(wrong, { method: "GET", url: "/api/v1/api/channels", headers: bearer("sb_any") })
    expect(response.statusCode).toBe(500)
    await wrong.dispose().catch(() => undefined)
    const same = makeHandler(storage, { secretKey: Buffer.alloc(32, 7).toString("hex") })
    await expect(same.ready).resolves.toBeUndefined()
    await same.dispose()
  })

  it("several keys (a comma-separated string or a list): the first seals, every one opens, the key check passes under any", async () => {
    const { api, storage, handler, organization } = await setup()
    const channel = (await api.post("/channels", body())).data
    await handler.dispose()
    const oldKey = Buffer.alloc(32, 7).toString("hex")
    const newKey = Buffer.alloc(32, 3).toString("base64")
    for (const secretKey of [`${newKey},${oldKey}`, [newKey, oldKey], [Buffer.alloc(32, 3), Buffer.alloc(32, 7)]]) {
      const rotating = makeHandler(storage, { secretKey, channelVerifier: verifier() })
      await expect(rotating.ready).resolves.toBeUndefined()
      // The old token opens (a send through the channel would use it); the stored text is unchanged.
      const opened = await Effect.runPromise(
        Effect.flatMap(Channels, (channels) => channels.getWithToken(organization.id as OrganizationId, channel.uuid)).pipe(
          Effect.provide(Core.layer.pipe(Layer.provide(SecretKey.layer([Buffer.alloc(32, 3), Buffer.alloc(32, 7)])), Layer.provideMerge(storage)))
        )
      )
      expect(opened.access_token).toBe(GOOD_TOKEN)
      await rotating.dispose()
    }
    // Neither of two keys the store's: ready rejects.
    const neither = makeHandler(storage, { secretKey: `${newKey},${Buffer.alloc(32, 4).toString("hex")}` })
    await expect(neither.ready).rejects.toThrow(/SWITCHBOARD_SECRET_KEY/)
    await neither.dispose().catch(() => undefined)
    // A malformed entry throws naming its position, never its value; an empty list throws.
    expect(() => makeHandler(makeSharedStorage(), { secretKey: `${newKey},not-a-key-at-all` })).toThrow(/key 2 of 2 \(comma-separated\) must be 32 bytes/)
    expect(() => makeHandler(makeSharedStorage(), { secretKey: `${newKey},not-a-key-at-all` })).not.toThrow(/not-a-key-at-all/)
    expect(() => makeHandler(makeSharedStorage(), { secretKey: [newKey, Buffer.alloc(5)] })).toThrow(/secretKey\[1\] must be 32 bytes/)
    expect(() => makeHandler(makeSharedStorage(), { secretKey: [] })).toThrow(/at least one key/)
  })
})

describe("the access token never leaves the server", () => {
  const directory = mkdtempSync(join(tmpdir(), "switchboard-channels-"))
  afterAll(() => rmSync(directory, { recursive: true, force: true }))

  it("in no response body, no log line, no error message, and not in plaintext in the SQLite file", async () => {
    const token = DISTINCT_TOKEN
    const refused = DISTINCT_REFUSED
    const filename = join(directory, "channels.db")
    const sqlite = Effect.runSync(Scope.extend(SqliteStorage.make({ filename }), Effect.runSync(Scope.make())))
    const lines: Array<string> = []
    const logger = Logger.make(({ annotations, cause, message }) => {
      lines.push(`${JSON.stringify(message)} ${JSON.stringify([...HashMap.toEntries(annotations)])} ${Cause.pretty(cause)}`)
    })
    const { api, apiKey, handler } = await setup({ logger, storage: Layer.succeed(Storage, sqlite) })
    const bodies: Array<string> = []
    const call = async (method: "GET" | "POST" | "PUT" | "DELETE", path: string, payload?: unknown) => {
      const response = await request(handler, {
        method,
        url: `/api/v1/api${path}`,
        headers: { ...bearer(apiKey), ...(payload === undefined ? {} : { "content-type": "application/json" }) },
        ...(payload === undefined ? {} : { payload: JSON.stringify(payload) })
      })
      bodies.push(response.body)
      return response.json() as { status: number; data: { uuid: string } }
    }
    const input = body({ access_token: token })
    const added = await call("POST", "/channels", input)
    expect(added.status).toBe(200)
    const kept = await call("POST", "/channels", body({ access_token: token }))
    expect(kept.status).toBe(200)
    refuseNextLookupsEchoing(refused)
    expect((await call("POST", "/channels", body({ access_token: refused }))).status).toBe(400)
    expect((await call("POST", "/channels", { ...input, access_token: `${token}x` })).status).toBe(400)
    await call("GET", "/channels")
    // PUT: a refused new token, a short one (its form checked), then the token set again.
    refuseNextLookupsEchoing(refused)
    expect((await call("PUT", `/channels/${kept.data.uuid}`, { access_token: refused })).status).toBe(400)
    expect((await call("PUT", `/channels/${kept.data.uuid}`, { access_token: `${token} x` })).status).toBe(400)
    expect((await call("PUT", `/channels/${kept.data.uuid}`, { access_token: token, throughput_mps: 10 })).status).toBe(200)
    await call("GET", `/channels/${kept.data.uuid}`)
    expect((await call("DELETE", `/channels/${added.data.uuid}`)).status).toBe(200)
    await handler.dispose()

    expect(bodies).toHaveLength(10)
    expect(lines.length).toBeGreaterThanOrEqual(10)
    for (const text of [...bodies, ...lines]) {
      expect(text).not.toContain(token)
      expect(text).not.toContain(refused)
    }
    const bytes = Buffer.concat([filename, `${filename}-wal`].filter(existsSync).map((file) => readFileSync(file)))
    expect(bytes.includes(input.phone_number_id as string)).toBe(true)
    expect(bytes.includes(token)).toBe(false)
    expect(bytes.includes(Buffer.from(token, "utf16le"))).toBe(false)
  })
})

import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Effect, Either, Layer, Schema } from "effect"
import { ChannelVerifier, Chats, Core, MemoryBlobStore, MessageTransport, MetaTemplateApi, type OrganizationId, Storage, Templates, TransportFailed } from "@switchboard/core"
import {
  defaultRoutes,
  DEFAULT_BASE_PATH,
  defineRoute,
  OPENAPI_TAGS,
  openApiDocument,
  openApiPathOf,
  type OpenApiDocument,
  type RouteDefinition
} from "@switchboard/http-adapter"
import { sign, startSimulator, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"
import { makeRouter } from "../src/router.js"
import { apiClient, createOrganization, makeHandler, makeSharedStorage, phone, request, type ApiClient } from "./helpers.js"

// The route table is the one source of truth of the handler and the OpenAPI
// document. These tests walk both ways, and check that what the handlers really answer
// has the shape the document gives (the routes' `data` schemas).

const METHODS = ["get", "post", "put", "delete", "patch", "head", "options", "trace"]
const TAG_NAMES = new Set(OPENAPI_TAGS.map((tag) => tag.name))

/**
 * Every disagreement between `routes` (served by the router built from them) and
 * `document`: a route without its operation, an operation no route serves, an operation
 * without a known tag, an operationId or a summary, a JSON route without its data schema.
 */
const parityProblems = (routes: ReadonlyArray<RouteDefinition>, document: OpenApiDocument): Array<string> => {
  const problems: Array<string> = []
  for (const route of routes) {
    const operation = document.paths[openApiPathOf(route.path)]?.[route.method.toLowerCase()]
    if (operation === undefined) {
      problems.push(`${route.method} ${route.path}: served but missing from the document`)
      continue
    }
    if (operation.tags.length !== 1 || !TAG_NAMES.has(operation.tags[0] ?? "")) {
      problems.push(`${route.method} ${route.path}: tag ${JSON.stringify(operation.tags)} is not one of the API's tags`)
    }
    if (!operation.operationId) problems.push(`${route.method} ${route.path}: no operationId`)
    if (!operation.summary) problems.push(`${route.method} ${route.path}: no summary`)
    if (route.content === undefined) {
      const schema = operation.responses["200"]?.content?.["application/json"]?.schema as
        | { properties?: { data?: Record<string, unknown> } }
        | undefined
      const data = schema?.properties?.data
      if (route.data === undefined || data === undefined || Object.keys(data).length === 0 || "description" in data && data.description === "Not described.") {
        problems.push(`${route.method} ${route.path}: no data schema`)
      }
    }
  }
  // The other way: every operation of the document must be served by the router, by the
  // route it was generated from (path parameters filled with sample values).
  const match = makeRouter(DEFAULT_BASE_PATH, routes)
  for (const [path, operations] of Object.entries(document.paths)) {
    for (const method of Object.keys(operations).filter((key) => METHODS.includes(key))) {
      const concrete = path.replace(/\{[^}]+\}/g, "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6a")
      const found = match(method.toUpperCase(), DEFAULT_BASE_PATH + concrete)
      if (found._tag !== "Found" || openApiPathOf(found.route.definition.path) !== path) {
        problems.push(`${method.toUpperCase()} ${path}: in the document but not served`)
      }
    }
  }
  return problems
}

const document = openApiDocument({ basePath: DEFAULT_BASE_PATH, routes: defaultRoutes })

describe("route table ⇄ OpenAPI document (docs/api-reference.md)", () => {
  it("every route is in the document with a tag, an operationId and its data schema, and every operation is served", () => {
    expect(parityProblems(defaultRoutes, document)).toEqual([])
    const operations = Object.values(document.paths).flatMap((operations) => Object.keys(operations))
    expect(operations).toHaveLength(defaultRoutes.length)
  })

  it("covers every operation of the Developer Messaging API, and the discovery group", () => {
    const listed = Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`)
    )
    expect(listed).toEqual(
      expect.arrayContaining([
        "GET /verify",
        "POST /send/template",
        "POST /send",
        "POST /send/media",
        "POST /contacts/bulk",
        "GET /contacts",
        "PUT /contacts/{uuid}",
        "GET /contacts/{uuid}/labels",
        "POST /contacts/labels/assign",
        "POST /contact-groups",
        "PUT /contact-groups/{uuid}",
        "POST /labels",
        "GET /labels/{uuid}",
        "DELETE /labels/{uuid}",
        "POST /labels/bulk-delete",
        "GET /basic-replies",
        "POST /basic-replies",
        "GET /templates",
        "GET /templates/{uuid}/payload",
        "GET /chats",
        "GET /",
        "GET /openapi.json",
        "GET /docs"
      ])
    )
    const usedTags = new Set(Object.values(document.paths).flatMap((operations) => Object.values(operations).flatMap((op) => op.tags)))
    expect([...usedTags].sort()).toEqual([...TAG_NAMES].sort())
  })

  it("fails on a route missing from the document, an operation not served, a route without data schema or tag", () => {
    const { "/verify": _verify, ...otherPaths } = document.paths
    expect(parityProblems(defaultRoutes, { ...document, paths: otherPaths })).toEqual([
      "GET /verify: served but missing from the document"
    ])
    const withoutChats = defaultRoutes.filter((route) => route.path !== "/chats")
    expect(parityProblems(withoutChats, document)).toEqual(["GET /chats: in the document but not served"])

    const undescribed = defineRoute({
      method: "GET",
      path: "/undescribed",
      tag: "Nowhere",
      summary: "A route without data schema",
      handle: () => Effect.succeed({ message: "ok", data: {} })
    })
    const routes = [...defaultRoutes, undescribed]
    expect(parityProblems(routes, openApiDocument({ basePath: DEFAULT_BASE_PATH, routes }))).toEqual([
      'GET /undescribed: tag ["Nowhere"] is not one of the API\'s tags',
      "GET /undescribed: no data schema"
    ])
  })
})

/** The `data` schema of the route serving `method path` (a concrete path under the base). */
const dataSchemaOf = (method: string, path: string) => {
  const found = makeRouter(DEFAULT_BASE_PATH, defaultRoutes)(method, DEFAULT_BASE_PATH + path)
  if (found._tag !== "Found" || found.route.definition.data === undefined) throw new Error(`no data schema for ${method} ${path}`)
  return found.route.definition.data
}

/** Fails unless `data` has exactly the shape of the route's schema (no extra field either). */
const expectDocumented = (method: string, path: string, data: unknown) => {
  const decoded = Schema.decodeUnknownEither(dataSchemaOf(method, path), { onExcessProperty: "error" })(data)
  if (Either.isLeft(decoded)) expect.fail(`${method} ${path}: ${decoded.left.message}`)
}

describe("defineRoute ties a handler to its data schema", () => {
  it("refuses, at compile time, a handler whose data does not have the schema's type", () => {
    const route = defineRoute({
      method: "GET",
      path: "/typed",
      tag: "Auth",
      summary: "Typed",
      data: Schema.Struct({ count: Schema.Number }),
      // @ts-expect-error `count` must be a number (`npm run typecheck` fails if this compiles)
      handle: () => Effect.succeed({ message: "typed", data: { count: "one" } })
    })
    expect(route.data).toBeDefined()
  })
})

describe("what the handlers answer has the documented data shape", () => {
  const storage = makeSharedStorage()
  // Meta's template API (POST and DELETE /templates, the sync) is the simulator's, started
  // before the walk, holding one template of the account for the sync to bring in.
  let simulator: WhatsAppSimulator | undefined
  const graphApi = {
    get baseUrl() {
      return simulator?.url ?? "http://127.0.0.1:9"
    }
  }
  const handler = makeHandler(storage, {
    graphApi,
    secretKey: "a".repeat(64),
    channelVerifier: Layer.succeed(ChannelVerifier, { verify: () => Effect.succeed({ display_phone_number: "+31 6 12345678" }) }),
    whatsapp: { appSecret: "parity-app-secret" },
    // The walk records a webhook delivery attempt by hand, and retries a message it then
    // cancels: no dispatcher may claim either first.
    dispatch: { webhooks: false, messages: false },
    media: { store: MemoryBlobStore.layer },
    // Accepts every message but the text "Refuse me" (a permanent refusal, to retry).
    transport: Layer.succeed(MessageTransport, {
      send: (message) =>
        message.type === "text" && message.text === "Refuse me"
          ? Effect.fail(new TransportFailed({ reason: "Message undeliverable", provider_code: "131026", http_status: 400 }))
          : Effect.succeed({ provider_message_id: null, status: "sent" as const }),
      immediate: true
    })
  })
  let api: ApiClient
  let apiKeyOfWalk = ""
  let organizationOfWalk = ""

  beforeAll(async () => {
    simulator = await startSimulator({
      numbers: [
        {
          phone_number_id: "106540352242922",
          display_phone_number: "+31 6 12345678",
          waba_id: "102290129340398",
          access_token: ["EAAG-parity-token-0001", "EAAG-parity-token-0002"]
        }
      ]
    })
    simulator.seedTemplates({
      waba_id: "102290129340398",
      templates: [{ name: "parity_sync", language: "en_US", category: "UTILITY", components: [{ type: "BODY", text: "Hi" }] }]
    })
    const { organization, key } = await createOrganization(storage)
    api = apiClient(handler, key.api_key)
    apiKeyOfWalk = key.api_key
    organizationOfWalk = organization.id
    await Effect.runPromise(
      Effect.flatMap(Templates, (templates) =>
        templates.create(organization.id, {
          name: "order_update",
          language: "en_US",
          category: "UTILITY",
          status: "APPROVED",
          components: [{ type: "BODY", text: "Hello {{1}}", example: { body_text: [["Ada"]] } }]
        })
      ).pipe(Effect.provide(Core.layer), Effect.provide(storage))
    )
  })
  afterAll(async () => {
    await handler.dispose()
    await simulator?.close()
  })

  /** Calls the API, expects a 200 and checks its data against the route's schema. */
  const call = async (method: "GET" | "POST" | "PUT" | "DELETE", path: string, body?: unknown) => {
    const result =
      method === "GET"
        ? await api.get(path)
        : method === "DELETE"
          ? await api.delete(path)
          : method === "POST"
            ? await api.post(path, body)
            : await api.put(path, body)
    expect(result.status, `${method} ${path}: ${JSON.stringify(result.errors)}`).toBe(200)
    expectDocumented(method, path.split("?")[0] ?? path, result.data)
    return result.data
  }

  // Every route once, in one test: on a busy machine, more than the default 5 s.
  it("for every route of the default table", async () => {
    const seen = new Set<string>()
    const track = (method: string, path: string) => {
      const found = makeRouter(DEFAULT_BASE_PATH, defaultRoutes)(method, DEFAULT_BASE_PATH + path.split("?")[0])
      if (found._tag === "Found") seen.add(`${method} ${found.route.definition.path}`)
    }
    const run = async (method: "GET" | "POST" | "PUT" | "DELETE", path: string, body?: unknown) => {
      track(method, path)
      return call(method, path, body)
    }

    await run("GET", "/verify")
    await run("GET", "/")
    const imported = await run("POST", "/contacts/bulk", {
      contacts: [{ first_name: "Ada", phone: phone(1), group: ["VIP"] }, { first_name: "Alan", phone: phone(2) }]
    })
    const contactUuid: string = imported.contacts[0].uuid
    await run("GET", "/contacts?page=1&per_page=10")
    await run("GET", `/contacts/${contactUuid}`)
    await run("PUT", `/contacts/${contactUuid}`, { last_name: "Lovelace", email: "ada@example.com" })
    const group = await run("POST", "/contact-groups", { name: "Newsletter" })
    await run("PUT", `/contact-groups/${group.uuid}`, { name: "Weekly newsletter" })
    await run("GET", "/contact-groups")
    const label = await run("POST", "/labels", { name: "Gold", color: "#ffcc00" })
    await run("GET", "/labels")
    await run("GET", `/labels/${label.uuid}`)
    await run("POST", "/contacts/labels/assign", { contact_uuids: [contactUuid], tag_uuid: label.uuid })
    await run("GET", `/contacts/${contactUuid}/labels`)
    const spare = await run("POST", "/labels", { name: "Spare" })
    await run("POST", "/labels/bulk-delete", { tag_uuids: [spare.uuid] })
    await run("DELETE", `/labels/${label.uuid}`)
    const reply = await run("POST", "/basic-replies", { name: "Hours", trigger: "hours", response: "9 to 5" })
    await run("GET", "/basic-replies")
    await run("GET", `/basic-replies/${reply.uuid}`)
    const templates = await run("GET", "/templates")
    const templateUuid: string = templates.templates[0].uuid
    await run("GET", `/templates/${templateUuid}`)
    const payload = await run("GET", `/templates/${templateUuid}/payload`)
    payload.template.components[0].parameters[0].text = "Ada"
    await run("POST", "/send/template", { phone: phone(1), template: payload.template })
    const broadcast = await run("POST", "/broadcasts", {
      name: "Launch",
      template: payload.template,
      audience: { contact_uuids: [contactUuid] },
      send_at: "2099-01-01T00:00:00Z"
    })
    await run("GET", "/broadcasts")
    await run("GET", `/broadcasts/${broadcast.uuid}`)
    await run("GET", `/broadcasts/${broadcast.uuid}/recipients`)
    expect((await run("POST", `/broadcasts/${broadcast.uuid}/cancel`)).status).toBe("cancelled")
    const sent = await run("POST", "/send", { phone: phone(3), message: "Hello" })
    await run("GET", `/messages/${sent.message_id}`)
    const refused = await run("POST", "/send", { phone: phone(4), message: "Refuse me" })
    expect(refused.status).toBe("failed")
    expect((await run("POST", `/messages/${refused.message_id}/retry`)).status).toBe("queued")
    expect((await run("POST", `/messages/${refused.message_id}/cancel`)).status).toBe("failed")
    await run("POST", "/send/media", { phone: phone(3), media: { type: "image", url: "https://example.com/a.png" } })
    await run("POST", "/send/interactive", {
      phone: phone(3),
      interactive: { type: "button", body: { text: "Tuesday?" }, action: { buttons: [{ type: "reply", reply: { id: "yes", title: "Yes" } }] } }
    })
    const chats = await run("GET", "/chats")
    await run("GET", "/chats?pagination=true&page=1&per_page=5")
    const chatUuid: string = chats.chats[0].uuid
    await run("GET", `/chats/${chatUuid}`)
    await run("GET", `/chats/${chatUuid}/messages?limit=5`)
    await run("PUT", `/chats/${chatUuid}`, { status: "pending", assigned_to: "agent-1", favorite: true })
    await run("POST", `/chats/${chatUuid}/read`)
    await run("DELETE", `/contacts/${imported.contacts[1].uuid}`)
    const channel = await run("POST", "/channels", { phone_number_id: "106540352242922", waba_id: "102290129340398", access_token: "EAAG-parity-token-0001" })
    await run("GET", "/channels")
    await run("GET", `/channels/${channel.uuid}`)
    await run("PUT", `/channels/${channel.uuid}`, { access_token: "EAAG-parity-token-0002", throughput_mps: 80 })
    expect((await run("POST", `/channels/${channel.uuid}/resume`)).status).toBe("active")
    // A customer's message through the channel (its window open) to react to.
    const inbound = await Effect.runPromise(
      Effect.flatMap(Chats, (chats) =>
        chats.receiveInbound(organizationOfWalk as OrganizationId, {
          phone: phone(5),
          type: "text",
          text: "Thanks!",
          provider_message_id: "wamid.parity-reaction-target",
          channel_uuid: channel.uuid
        })).pipe(Effect.provide(Core.layer), Effect.provide(storage))
    )
    expect((await run("POST", `/messages/${inbound.message.uuid}/reaction`, { emoji: "👍" })).uuid).toBe(inbound.message.uuid)
    const submitted = await run("POST", "/templates", {
      channel_uuid: channel.uuid,
      name: "parity_notice",
      language: "en_US",
      category: "UTILITY",
      components: [{ type: "BODY", text: "Hello {{1}}", example: { body_text: [["Ada"]] } }]
    })
    expect((await run("DELETE", `/templates/${submitted.uuid}`)).status).toBe("DELETED")
    expect((await run("POST", `/channels/${channel.uuid}/templates/sync`)).added).toBe(1)
    await run("DELETE", `/channels/${channel.uuid}`)
    const endpoint = await run("POST", "/webhook-endpoints", { url: "https://hooks.example.com/parity", events: ["chat.updated"] })
    await run("GET", "/webhook-endpoints")
    await run("GET", `/webhook-endpoints/${endpoint.uuid}`)
    await run("PUT", `/webhook-endpoints/${endpoint.uuid}`, { description: "Parity" })
    await run("POST", `/webhook-endpoints/${endpoint.uuid}/rotate-secret`)
    // A chat change writes a delivery; one failed attempt, recorded as the dispatcher would, fills the log.
    await run("PUT", `/chats/${chatUuid}`, { favorite: false })
    const deliveryId = await Effect.runPromise(
      Effect.gen(function* () {
        const store = yield* Storage
        const [claimed] = yield* store.webhooks.claimDue("2100-01-01T00:00:00.000Z", "2100-01-01T00:01:00.000Z", 1)
        if (claimed === undefined) throw new Error("no delivery to attempt")
        yield* store.webhooks.recordAttempt(claimed.delivery_id, claimed.lease, {
          attempt_id: "0190f6b4-7b7e-7c4e-8a5d-000000000001",
          delivery_status: "failed",
          status: 500,
          error: null,
          duration_ms: 5,
          response_body: null,
          attempted_at: "2026-01-01T00:00:00.000Z",
          next_attempt_at: null
        })
        return claimed.delivery_id
      }).pipe(Effect.provide(storage))
    )
    const deliveries = await run("GET", `/webhook-endpoints/${endpoint.uuid}/deliveries?limit=5`)
    expect(deliveries.deliveries).toHaveLength(1)
    await run("POST", `/webhook-endpoints/${endpoint.uuid}/deliveries/${deliveryId}/retry`)
    await run("DELETE", `/webhook-endpoints/${endpoint.uuid}`)
    // Media: a multipart upload, then its record, the list, a link and the deletion.
    const form = new FormData()
    form.append("file", new Blob([Buffer.from("%PDF-1.7\n% parity\n")], { type: "application/pdf" }), "parity.pdf")
    const encoded = new Request("http://localhost/", { method: "POST", body: form })
    track("POST", "/media")
    const uploaded = await request(handler, {
      method: "POST",
      url: `${DEFAULT_BASE_PATH}/media`,
      headers: { authorization: `Bearer ${apiKeyOfWalk}`, "content-type": encoded.headers.get("content-type")! },
      payload: Buffer.from(await encoded.arrayBuffer())
    })
    expect(uploaded.statusCode, uploaded.body).toBe(200)
    const media = JSON.parse(uploaded.body).data
    expectDocumented("POST", "/media", media)
    await run("GET", "/media?limit=5")
    await run("GET", `/media/${media.uuid}`)
    await run("POST", `/media/${media.uuid}/links`, { expires_in: 60 })
    await run("DELETE", `/media/${media.uuid}`)
    // The provider webhook: no API key, a signature over the bytes.
    const webhook = JSON.stringify({ object: "whatsapp_business_account", entry: [] })
    track("POST", "/webhooks/whatsapp")
    const signed = await request(handler, {
      method: "POST",
      url: `${DEFAULT_BASE_PATH}/webhooks/whatsapp`,
      headers: { "content-type": "application/json", "x-hub-signature-256": sign(webhook, "parity-app-secret") },
      payload: webhook
    })
    expect(signed.statusCode).toBe(200)
    expectDocumented("POST", "/webhooks/whatsapp", JSON.parse(signed.body).data)

    const envelopeRoutes = defaultRoutes.filter((route) => route.content === undefined)
    expect([...seen].sort()).toEqual(envelopeRoutes.map((route) => `${route.method} ${route.path}`).sort())
  }, 30_000)

  it("and the check catches a field the schema does not have", () => {
    expect(() => expectDocumented("GET", "/verify", { message: "ok", organization: { id: "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6a", name: "A" }, extra: 1 })).toThrow(/extra/)
  })
})

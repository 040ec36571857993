import { beforeAll, describe, expect, it } from "vitest"
import { Effect, Layer } from "effect"
import { ChannelVerifier, Core, MemoryBlobStore, type OrganizationId, Templates } from "@switchboard/core"
import { defaultRoutes } from "@switchboard/http-adapter"
import { bearer, expectEnvelope, makeHandler, makeSharedStorage, makeTenant, phone, request } from "./helpers.js"

/**
 * Hostile input on every route (docs/errors.md "Limits"): bodies nested 100 000 levels
 * deep, very long strings, huge arrays and numbers, invalid UTF-8, `__proto__` keys,
 * hostile query values and repeated query keys. Each gets a clear 4xx envelope (never a
 * 500) and changes nothing.
 */
const storage = makeSharedStorage()
// Channels need a secret key; Meta's check always passes here, so a hostile body that
// wrongly got through would write a channel (and the snapshot would show it).
const handler = makeHandler(storage, {
  secretKey: Buffer.alloc(32, 7).toString("base64"),
  channelVerifier: Layer.succeed(ChannelVerifier, { verify: () => Effect.succeed({ display_phone_number: "+15550783881" }) }),
  // No webhook leaves this test (no dispatcher), and registration looks no host name up
  // (internal addresses allowed: names are not resolved). A handler without the
  // `webhooks` option ignores it.
  webhooks: { dispatch: false, allowPrivateNetworks: true },
  // The walks send thousands of requests to the five routes of the `send` bucket: its
  // hourly allowance would answer 429 before the edge's own answers are reached.
  rateLimit: { send: { max: 100_000 } },
  // The media routes answer from a blob store (a PDF uploaded below is their subject).
  media: { store: MemoryBlobStore.layer }
})
let apiKey = ""
const ids = { contact: "", label: "", group: "", chat: "", webhookEndpoint: "", channel: "", media: "" }

const template = {
  name: "order_update",
  language: { code: "en_US" },
  components: [{ type: "body", parameters: [{ type: "text", text: "Ada" }] }]
}

/** A valid body for every body route: the hostile cases replace one part of it. */
const validBodies: Record<string, () => Record<string, unknown>> = {
  "POST /send/template": () => ({ phone: phone(1), template, first_name: "Ada", last_name: "L", email: "ada@example.com" }),
  "POST /send": () => ({ phone: phone(1), message: "Hello" }),
  "POST /send/media": () => ({
    phone: phone(1),
    media: { type: "image", url: "https://example.com/a.png", caption: "A", filename: "a.png" }
  }),
  "POST /send/interactive": () => ({
    phone: phone(1),
    interactive: {
      type: "button",
      header: { type: "text", text: "Delivery" },
      body: { text: "Tuesday?" },
      footer: { text: "Tap one" },
      action: { buttons: [{ type: "reply", reply: { id: "yes", title: "Yes" } }] }
    }
  }),
  "POST /contacts/bulk": () => ({
    contacts: [
      {
        first_name: "Ada",
        last_name: "L",
        phone: phone(2),
        email: "ada@example.com",
        group: ["VIP"],
        street: "1 Main St",
        city: "Springfield",
        state: "IL",
        zip: "62701",
        country: "US"
      }
    ]
  }),
  "PUT /contacts/:uuid": () => ({ first_name: "Ada", last_name: "L", phone: phone(1), email: "ada@example.com" }),
  "POST /contacts/labels/assign": () => ({ contact_uuids: [ids.contact], tag_uuid: ids.label }),
  "POST /contact-groups": () => ({ name: "New group" }),
  "POST /media/:uuid/links": () => ({ expires_in: 60 }),
  "PUT /contact-groups/:uuid": () => ({ name: "Renamed" }),
  "POST /labels": () => ({ name: "New label", color: "#abcdef" }),
  "POST /labels/bulk-delete": () => ({ tag_uuids: [ids.label] }),
  "POST /basic-replies": () => ({ name: "Hours", trigger: "hours", response: "9 to 5" }),
  "PUT /chats/:uuid": () => ({ status: "pending", assigned_to: "agent-1", favorite: true }),
  "POST /chats/:uuid/read": () => ({ typing: true }),
  // Aimed at a uuid that is no message of the organization: a valid body ends in 404.
  "POST /messages/:uuid/reaction": () => ({ emoji: "👍" }),
  // The audience is the empty group Team: a body that passes every check ends in 400
  // empty_audience, so no hostile value can start a broadcast that writes into a chat
  // while a later walk compares snapshots.
  "POST /broadcasts": () => ({
    name: "Promo",
    template,
    audience: { group_uuids: [ids.group], label_uuids: [ids.label], contact_uuids: [] },
    channel_uuid: ids.channel,
    send_at: "2099-01-01T00:00:00Z"
  }),
  // No throughput_mps here: `null` in it would be accepted and connect a channel that carries
  // this organization's sends to Meta. PUT /channels/{uuid} walks the field (the same rule).
  "POST /channels": () => ({ phone_number_id: "106540352242922", waba_id: "102290129340398", access_token: `EAAG${"x".repeat(40)}` }),
  "PUT /channels/:uuid": () => ({ access_token: `EAAG${"y".repeat(40)}`, throughput_mps: 70 }),
  // A channel the organization does not have: whatever the walk replaces, Meta is never
  // called (an unknown channel is a 404; a malformed one or a bad template a 400).
  "POST /templates": () => ({
    channel_uuid: "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6a",
    name: "hostile_notice",
    language: "en_US",
    category: "UTILITY",
    components: [{ type: "BODY", text: "Hi {{1}}", example: { body_text: [["Ada"]] } }]
  }),
  "POST /webhook-endpoints": () => ({ url: "https://hooks.example.com/hostile", events: ["message.received"], description: "Hostile" }),
  "PUT /webhook-endpoints/:uuid": () => ({
    url: "https://hooks.example.com/hostile",
    events: ["chat.updated"],
    description: "Hostile",
    enabled: true
  }),
  "POST /webhook-endpoints/:uuid/rotate-secret": () => ({ previous_secret_expires_in: 3600, force: true })
}

const bodyRoutes = defaultRoutes.filter((route) => route.body !== undefined)
const urlOf = (path: string) =>
  "/api/v1/api" +
  path
    .replace("/contacts/:uuid", `/contacts/${ids.contact}`)
    .replace("/chats/:uuid", `/chats/${ids.chat}`)
    .replace("/webhook-endpoints/:uuid", `/webhook-endpoints/${ids.webhookEndpoint}`)
    .replace("/channels/:uuid", `/channels/${ids.channel}`)
    .replace("/media/:uuid", `/media/${ids.media}`)
    .replace(":uuid", ids.group)

const send = (method: string, path: string, payload: string | Buffer) =>
  request(handler, {
    method: method as "POST",
    url: urlOf(path),
    headers: { ...bearer(apiKey), "content-type": "application/json" },
    payload
  })

/** Every path into `value` (object keys and array indexes), containers and leaves. */
const pathsOf = (value: unknown, prefix: ReadonlyArray<string | number> = []): Array<Array<string | number>> => {
  if (typeof value !== "object" || value === null) return []
  const entries: Array<[string | number, unknown]> = Array.isArray(value)
    ? value.map((item, index) => [index, item])
    : Object.entries(value)
  return entries.flatMap(([key, child]) => [[...prefix, key], ...pathsOf(child, [...prefix, key])])
}

/** The JSON text of `body` with the value at `path` replaced by the raw JSON text `raw`. */
const withRaw = (body: Record<string, unknown>, path: ReadonlyArray<string | number>, raw: string): string => {
  const marker = "\u0000HOSTILE\u0000"
  const copy = structuredClone(body)
  let parent: any = copy
  for (const key of path.slice(0, -1)) parent = parent[key]
  parent[path[path.length - 1] as string] = marker
  return JSON.stringify(copy).replace(JSON.stringify(marker), raw)
}

const DEPTH = 100_000
const deepArray = "[".repeat(DEPTH) + "]".repeat(DEPTH)
const deepObject = '{"a":'.repeat(DEPTH) + "1" + "}".repeat(DEPTH)

/** What the organization holds, read through the API: compared before and after. */
const snapshot = async () => {
  const read = async (path: string) => {
    const response = await request(handler, { method: "GET", url: `/api/v1/api${path}`, headers: bearer(apiKey) })
    return expectEnvelope(response.statusCode, response.body).data
  }
  return {
    contacts: await read("/contacts?per_page=100"),
    groups: await read("/contact-groups"),
    labels: await read("/labels"),
    replies: await read("/basic-replies?per_page=100"),
    chats: await read("/chats?limit=100"),
    channels: await read("/channels"),
    webhookEndpoints: await read("/webhook-endpoints"),
    media: await read("/media")
  }
}

beforeAll(async () => {
  const tenant = await makeTenant(storage, handler)
  apiKey = tenant.apiKey
  await Effect.runPromise(
    Effect.flatMap(Templates, (templates) =>
      templates.create(tenant.organization.id as OrganizationId, {
        name: "order_update",
        language: "en_US",
        category: "UTILITY",
        status: "APPROVED",
        components: [{ type: "BODY", text: "Hi {{1}}", example: { body_text: [["Ada"]] } }]
      })
    ).pipe(Effect.provide(Core.layer), Effect.provide(storage))
  )
  const imported = await tenant.api.post("/contacts/bulk", { contacts: [{ first_name: "Ann", phone: phone(1) }] })
  ids.contact = imported.data.contacts[0].uuid
  ids.label = (await tenant.api.post("/labels", { name: "Hot", color: "#e11d48" })).data.uuid
  ids.group = (await tenant.api.post("/contact-groups", { name: "Team" })).data.uuid
  ids.chat = (await tenant.api.post("/send", { phone: phone(1), message: "Hello" })).data.chat_uuid
  ids.webhookEndpoint = (await tenant.api.post("/webhook-endpoints", { url: "https://hooks.example.com/start" })).data.uuid
  const form = new FormData()
  form.append("file", new Blob([Buffer.from("%PDF-1.7\n% hostile input's subject\n")], { type: "application/pdf" }), "subject.pdf")
  const uploaded = await new Request("http://localhost/", { method: "POST", body: form })
  const uploadBody = Buffer.from(await uploaded.arrayBuffer())
  const mediaAnswer = await request(handler, {
    method: "POST",
    url: "/api/v1/api/media",
    headers: { ...bearer(apiKey), "content-type": uploaded.headers.get("content-type")! },
    payload: uploadBody
  })
  ids.media = expectEnvelope(mediaAnswer.statusCode, mediaAnswer.body).data.uuid
  // The channel PUT /channels/{uuid} aims at belongs to a second organization: a channel of
  // this one would carry its sends to Meta. Its body is checked before the channel is looked
  // up, so each hostile value is still refused on its own; only a valid body reaches the 404.
  const neighbour = await makeTenant(storage, handler, { name: "Neighbour" })
  ids.channel = (
    await neighbour.api.post("/channels", { phone_number_id: "106540352240001", waba_id: "102290129340398", access_token: `EAAG${"z".repeat(40)}` })
  ).data.uuid
})

describe("every body route has a valid body to start from", () => {
  it.each(bodyRoutes.map((route) => `${route.method} ${route.path}`))("%s", async (key) => {
    expect(Object.keys(validBodies)).toContain(key)
  })
})

/**
 * Sends each `[name, raw JSON text]` at every path of every route's valid body (and, with
 * `unknownField`, in a field no route knows), checks every response, and that nothing in
 * the organization changed.
 */
const expectRefusedEverywhere = async (
  values: ReadonlyArray<readonly [string, string]>,
  check: (status: number, body: string, where: string) => void,
  { unknownField }: { readonly unknownField: boolean }
) => {
  const before = await snapshot()
  const failures: Array<string> = []
  for (const route of bodyRoutes) {
    const body = validBodies[`${route.method} ${route.path}`]!()
    for (const path of unknownField ? [...pathsOf(body), ["unknown_field"]] : pathsOf(body)) {
      for (const [name, raw] of values) {
        const response = await send(route.method, route.path, withRaw(body, path, raw))
        const where = `${route.method} ${route.path} ${path.join(".")} = ${name}`
        try {
          check(response.statusCode, response.body, where)
        } catch (error) {
          failures.push(`${where}: ${response.statusCode} ${response.body.slice(0, 160)}`)
        }
      }
    }
  }
  // Every refusal at once, so a failing run names all of them.
  expect(failures).toEqual([])
  expect(await snapshot()).toEqual(before)
}

describe("JSON nested deeper than 64 levels", () => {
  it("is 400 invalid_json on every body route, in every known and unknown field, arrays and objects", async () => {
    await expectRefusedEverywhere(
      [
        ["100 000-deep array", deepArray],
        ["100 000-deep object", deepObject],
        ["65-deep array", "[".repeat(65) + "]".repeat(65)]
      ],
      (status, body, where) => {
        expect(status, where).toBe(400)
        expect(expectEnvelope(status, body).errors[0]?.code, where).toBe("invalid_json")
      },
      { unknownField: true }
    )
  }, 120_000)

  it.each(bodyRoutes.map((route) => [route.method, route.path]))("%s %s: as the whole body too", async (method, path) => {
    for (const raw of [deepArray, deepObject]) {
      const response = await send(method, path, raw)
      expect(response.statusCode).toBe(400)
      expect(expectEnvelope(response.statusCode, response.body).errors[0]?.code).toBe("invalid_json")
    }
  })

  it("64 levels are accepted (the limit is 64, not less)", async () => {
    const nested = "[".repeat(63) + '"x"' + "]".repeat(63)
    const response = await send("POST", "/contact-groups", `{"name":"Sixty-four","extra":${nested}}`)
    expect(response.statusCode).toBe(200)
    const cleanup = expectEnvelope(response.statusCode, response.body).data
    expect(cleanup.name).toBe("Sixty-four")
  })
})

describe("the character U+0000 (PostgreSQL cannot store it: every store refuses it alike)", () => {
  it("in any string, known or unknown field, is 400 invalid_json on every body route, and writes nothing", async () => {
    await expectRefusedEverywhere(
      [
        ["a string holding \\u0000", JSON.stringify("a\u0000b")],
        ["an array of such strings", JSON.stringify(["ok", "\u0000"])],
        ["an object with such a key", JSON.stringify({ "k\u0000": 1 })]
      ],
      (status, body, where) => {
        expect(status, where).toBe(400)
        const envelope = expectEnvelope(status, body)
        expect(envelope.errors[0]?.code, where).toBe("invalid_json")
        expect(envelope.message, where).toBe("Request body must not contain the character U+0000 (\\u0000) in any string")
      },
      { unknownField: true }
    )
  }, 120_000)

  it("a text that only looks like it (an escaped backslash, \\\\u0000) is accepted", async () => {
    const response = await send("POST", "/contact-groups", JSON.stringify({ name: "Literal \\u0000 text" }))
    expect(response.statusCode).toBe(200)
    expect(expectEnvelope(response.statusCode, response.body).data.name).toBe("Literal \\u0000 text")
  })
})

describe("very long strings, huge arrays and huge numbers", () => {
  it("are a 4xx on every body route and every field they replace, and write nothing", async () => {
    await expectRefusedEverywhere(
      [
        ["a 300 000-character string", JSON.stringify("a".repeat(300_000))],
        ["a 200 000-element array", JSON.stringify(Array.from({ length: 200_000 }, () => "a"))],
        ["1e309 (Infinity once parsed)", "1e309"],
        ["-1e308", "-1e308"],
        ["a 400-digit integer", "9".repeat(400)]
      ],
      (status, body, where) => {
        expect(status, where).toBeGreaterThanOrEqual(400)
        expectEnvelope(status, body)
      },
      // Unknown fields are dropped whatever they hold (docs/errors.md), so only known ones.
      { unknownField: false }
    )
  }, 240_000)
})

describe("values of the wrong type", () => {
  it("never answer a 500 on any body route and field", async () => {
    for (const route of bodyRoutes) {
      const body = validBodies[`${route.method} ${route.path}`]!()
      for (const path of pathsOf(body)) {
        for (const raw of ["null", "true", "{}", "[]", "0", "-0", '"NaN"', '"Infinity"', '""', '" "']) {
          const response = await send(route.method, route.path, withRaw(body, path, raw))
          expectEnvelope(response.statusCode, response.body)
        }
      }
    }
  }, 120_000)
})

describe("bytes and keys a JSON parser must not trust", () => {
  it.each(bodyRoutes.map((route) => [route.method, route.path]))("%s %s: invalid UTF-8 → 400 invalid_json", async (method, path) => {
    const before = await snapshot()
    const payload = Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}')])
    const response = await send(method, path, payload)
    expect(response.statusCode).toBe(400)
    expect(expectEnvelope(response.statusCode, response.body).errors[0]?.code).toBe("invalid_json")
    expect(await snapshot()).toEqual(before)
  })

  it.each(bodyRoutes.map((route) => [route.method, route.path]))(
    "%s %s: a __proto__ or constructor.prototype key anywhere → 400 invalid_json",
    async (method, path) => {
      const before = await snapshot()
      const body = validBodies[`${method} ${path}`]!()
      for (const [where, raw] of [
        ["top level", `{"__proto__":{"polluted":true},${JSON.stringify(body).slice(1)}`],
        ["nested", JSON.stringify({ ...body, extra: [{ a: 1 }] }).replace('{"a":1}', '{"__proto__":{"polluted":true}}')],
        ["escaped", `{"\\u005f_proto__":{"polluted":true},${JSON.stringify(body).slice(1)}`],
        ["constructor", `{"constructor":{"prototype":{"polluted":true}},${JSON.stringify(body).slice(1)}`]
      ] as const) {
        const response = await send(method, path, raw)
        expect(response.statusCode, where).toBe(400)
        expect(expectEnvelope(response.statusCode, response.body).errors[0]?.code, where).toBe("invalid_json")
      }
      expect(({} as Record<string, unknown>).polluted).toBeUndefined()
      expect(await snapshot()).toEqual(before)
    }
  )
})

const queryRoutes = defaultRoutes.filter((route) => route.method === "GET" && route.query !== undefined)

describe("hostile query strings", () => {
  const numeric = ["NaN", "Infinity", "-Infinity", "1e309", "1e308", "99999999999999999999", "-1", "0", "1.5", "0x10", "", "1e2x"]

  const numberParameters = (route: (typeof queryRoutes)[number]) =>
    Object.keys(route.query ?? {}).filter((name) => ["page", "per_page", "limit"].includes(name))

  it.each(queryRoutes.filter((route) => numberParameters(route).length > 0).map((route) => [route.path, numberParameters(route)] as const))(
    "%s: every number parameter refuses NaN, Infinity, huge and fractional values with a 400 naming it",
    async (path, numbers) => {
      for (const name of numbers) {
        const prefix = path === "/chats" && name !== "limit" ? "pagination=true&" : ""
        for (const value of numeric) {
          const url = `${urlOf(path)}?${prefix}${name}=${encodeURIComponent(value)}`
          const response = await request(handler, { method: "GET", url, headers: bearer(apiKey) })
          const where = `${path} ${name}=${value}`
          expect(response.statusCode, where).toBe(400)
          expect(expectEnvelope(response.statusCode, response.body).errors.map((error) => error.field), where).toContain(name)
        }
      }
    }
  )

  it.each(queryRoutes.map((route) => [route.path, Object.keys(route.query ?? {})] as const))(
    "%s: a parameter given twice is a 400 naming it",
    async (path, names) => {
      for (const name of names) {
        const url = `${urlOf(path)}?${name}=1&${name}=2`
        const response = await request(handler, { method: "GET", url, headers: bearer(apiKey) })
        expect(response.statusCode, name).toBe(400)
        const errors = expectEnvelope(response.statusCode, response.body).errors
        expect(errors, name).toContainEqual(expect.objectContaining({ code: "duplicate_parameter", field: name }))
      }
    }
  )

  it.each(queryRoutes.map((route) => [route.path, Object.keys(route.query ?? {})] as const))(
    "%s: a parameter holding U+0000 (%%00) is a 400 invalid_format naming it",
    async (path, names) => {
      for (const name of names) {
        const response = await request(handler, { method: "GET", url: `${urlOf(path)}?${name}=a%00b`, headers: bearer(apiKey) })
        expect(response.statusCode, name).toBe(400)
        expect(expectEnvelope(response.statusCode, response.body).errors, name).toEqual([
          { code: "invalid_format", field: name, message: "must not contain the character U+0000 (%00)" }
        ])
      }
    }
  )

  it.each(queryRoutes.map((route) => [route.path, Object.keys(route.query ?? {}), route.content !== undefined] as const))(
    "%s: 8 000-character and non-ASCII values never answer a 500",
    async (path, names, binary) => {
      for (const name of names) {
        for (const value of ["x".repeat(8_000), "%FF%FE", "\u0000", "🙂".repeat(100), "__proto__"]) {
          const url = `${urlOf(path)}?${name}=${value.startsWith("%") ? value : encodeURIComponent(value)}`
          const response = await request(handler, { method: "GET", url, headers: bearer(apiKey) })
          // A route answering bytes (GET /media/{uuid}/content) ignores a signed link's
          // parameters when the request has a key: its 200 is the file, not an envelope.
          if (binary && response.statusCode === 200) expect(response.headers["content-type"]).toBe("application/pdf")
          else expectEnvelope(response.statusCode, response.body)
        }
      }
      const response = await request(handler, {
        method: "GET",
        url: `${urlOf(path)}?__proto__[polluted]=1&constructor[prototype][polluted]=1`,
        headers: bearer(apiKey)
      })
      if (!(binary && response.statusCode === 200)) expectEnvelope(response.statusCode, response.body)
      expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    }
  )
})

describe("hostile path parameters", () => {
  const withUuid = defaultRoutes.filter((route) => route.path.includes(":uuid"))
  it.each(withUuid.map((route) => [route.method, route.path]))("%s %s: a malformed uuid is a 400", async (method, path) => {
    for (const value of ["x".repeat(8_000), "%FF", "..%2F..%2Fetc", "00000000-0000-0000-0000-00000000000g", "__proto__"]) {
      const response = await request(handler, {
        method: method as "GET",
        url: `/api/v1/api${path.replace(":uuid", value)}`,
        headers: { ...bearer(apiKey), "content-type": "application/json" },
        ...(method === "GET" || method === "DELETE" ? {} : { payload: "{}" })
      })
      expect([400, 404], `${value.slice(0, 20)} → ${response.body.slice(0, 200)}`).toContain(response.statusCode)
      expectEnvelope(response.statusCode, response.body)
    }
  })
})

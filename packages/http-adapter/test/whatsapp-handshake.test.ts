import type { IncomingMessage, ServerResponse } from "node:http"
import { afterAll, describe, expect, it } from "vitest"
import { Effect } from "effect"
import { defaultRoutes, defineRoute, verifyWhatsAppSignature } from "@switchboard/http-adapter"
import { sign } from "@switchboard/whatsapp-simulator"
import { expectEnvelope, makeHandler, makeSharedStorage, request } from "./helpers.js"

/**
 * WhatsApp's webhook edge (docs/whatsapp-webhooks.md): the subscription handshake, and the
 * handler-core steps a signed webhook route uses — the signature over the raw bytes before
 * parsing, its own body limit, no rate limit.
 */
const SECRET = "app-secret-1"
const storage = makeSharedStorage()

/** Stands in for the webhook POST: signed, 4 MiB, not rate limited; echoes what it parsed. */
const signedRoute = defineRoute({
  method: "POST",
  path: "/test/signed",
  tag: "Webhooks",
  summary: "Signed echo",
  authenticated: false,
  rateLimited: false,
  bodyLimit: 4 * 1_048_576,
  verifyRawBody: verifyWhatsAppSignature,
  handle: ({ body }) => Effect.succeed({ message: "ok", data: { received: body } })
})

const handler = makeHandler(storage, {
  routes: [...defaultRoutes, signedRoute],
  whatsapp: { appSecret: `${SECRET}, app-secret-2`, verifyToken: "verify-me" },
  rateLimit: { general: { max: 1, windowMs: 60_000 } }
})
const unconfigured = makeHandler(storage, { routes: [...defaultRoutes, signedRoute] })
afterAll(() => Promise.all([handler.dispose(), unconfigured.dispose()]))

const signature = (body: string | Buffer, secret = SECRET) => sign(body, secret)

const postSigned = (
  payload: string | Buffer,
  headers: Record<string, string>,
  listener: (req: IncomingMessage, res: ServerResponse) => void = handler
) =>
  request(listener, {
    method: "POST",
    url: "/api/v1/api/test/signed",
    headers: { "content-type": "application/json", ...headers },
    payload
  })

const handshake = (query: string, listener = handler) =>
  request(listener, { method: "GET", url: `/api/v1/api/webhooks/whatsapp?${query}` })

describe("GET /webhooks/whatsapp (the subscription handshake)", () => {
  it("answers the challenge as text/plain when the verify token matches", async () => {
    const response = await handshake("hub.mode=subscribe&hub.verify_token=verify-me&hub.challenge=1158201444")
    expect(response.statusCode).toBe(200)
    expect(response.headers["content-type"]).toMatch(/^text\/plain/)
    expect(response.body).toBe("1158201444")
  })

  it.each([
    ["a wrong token", "hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1"],
    ["no token", "hub.mode=subscribe&hub.challenge=1"],
    ["another mode", "hub.mode=unsubscribe&hub.verify_token=verify-me&hub.challenge=1"]
  ])("403 invalid_verify_token for %s", async (_name, query) => {
    const response = await handshake(query)
    expect(response.statusCode).toBe(403)
    expect(expectEnvelope(403, response.body).errors[0]?.code).toBe("invalid_verify_token")
    expect(response.body).not.toContain("verify-me")
  })

  it("403 when the server has no verify token, whatever is sent", async () => {
    const response = await handshake("hub.mode=subscribe&hub.verify_token=&hub.challenge=1", unconfigured)
    expect(response.statusCode).toBe(403)
  })

  it("400 without a challenge", async () => {
    const response = await handshake("hub.mode=subscribe&hub.verify_token=verify-me")
    expect(response.statusCode).toBe(400)
  })

  it("is not rate limited, and carries no RateLimit headers", async () => {
    // The general bucket of this handler holds one request per minute.
    for (let n = 0; n < 5; n++) {
      const response = await handshake("hub.mode=subscribe&hub.verify_token=verify-me&hub.challenge=1")
      expect(response.statusCode).toBe(200)
      expect(response.headers["ratelimit-limit"]).toBeUndefined()
    }
  })
})

describe("a signed webhook route (verifyRawBody, bodyLimit, rateLimited: false)", () => {
  const body = '{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[]}]}'

  it("runs when X-Hub-Signature-256 is the HMAC of the exact bytes, under any configured secret", async () => {
    for (const secret of [SECRET, "app-secret-2"]) {
      const response = await postSigned(body, { "x-hub-signature-256": signature(body, secret) })
      expect(response.statusCode).toBe(200)
      expect(expectEnvelope(200, response.body).data.received).toEqual(JSON.parse(body))
    }
  })

  it("401 when the same JSON is re-serialized with other whitespace (the signature covers bytes)", async () => {
    const reformatted = JSON.stringify(JSON.parse(body), null, 2)
    const response = await postSigned(reformatted, { "x-hub-signature-256": signature(body) })
    expect(response.statusCode).toBe(401)
    expect(expectEnvelope(401, response.body).errors[0]?.code).toBe("invalid_signature")
  })

  it.each([
    ["missing", undefined],
    ["another secret's", signature(body, "someone-else")],
    ["without its prefix", signature(body).slice("sha256=".length)],
    ["63 hex digits", signature(body).slice(0, -1)],
    ["65 hex digits", `${signature(body)}0`],
    ["not hex", `sha256=${"z".repeat(64)}`],
    ["sha1", `sha1=${"a".repeat(40)}`]
  ])("401 invalid_signature for a %s signature, never a 500", async (_name, header) => {
    const response = await postSigned(body, header === undefined ? {} : { "x-hub-signature-256": header })
    expect(response.statusCode).toBe(401)
    expect(expectEnvelope(401, response.body).errors[0]?.code).toBe("invalid_signature")
  })

  it("401 for every POST when no app secret is configured", async () => {
    const response = await postSigned(body, { "x-hub-signature-256": signature(body) }, unconfigured)
    expect(response.statusCode).toBe(401)
  })

  it("checks the signature before parsing: invalid JSON with a wrong signature is a 401, with a right one a 400", async () => {
    expect((await postSigned("{not json", { "x-hub-signature-256": signature(body) })).statusCode).toBe(401)
    expect((await postSigned("{not json", { "x-hub-signature-256": signature("{not json") })).statusCode).toBe(400)
  })

  it("takes bodies up to its own limit (4 MiB) over the handler's 1 MiB, and 413 past it", async () => {
    const big = JSON.stringify({ padding: "x".repeat(3 * 1_048_576) })
    expect((await postSigned(big, { "x-hub-signature-256": signature(big) })).statusCode).toBe(200)
    const huge = JSON.stringify({ padding: "x".repeat(5 * 1_048_576) })
    const response = await postSigned(huge, { "x-hub-signature-256": signature(huge) })
    expect(response.statusCode).toBe(413)
  })

  it("is never rate limited", async () => {
    for (let n = 0; n < 5; n++) {
      expect((await postSigned(body, { "x-hub-signature-256": signature(body) })).statusCode).toBe(200)
    }
  })
})

describe("a signed route behind a host that parsed the body (express.json())", () => {
  const body = '{"object":"whatsapp_business_account"}'
  const hostParsed =
    (rawBody: Buffer | undefined) =>
    (req: IncomingMessage, res: ServerResponse) => {
      Object.assign(req, { body: JSON.parse(body), ...(rawBody === undefined ? {} : { rawBody }) })
      handler(req, res)
    }

  it("uses the bytes the host kept in req.rawBody", async () => {
    const response = await postSigned(body, { "x-hub-signature-256": signature(body) }, hostParsed(Buffer.from(body)))
    expect(response.statusCode).toBe(200)
  })

  it("500 raw_body_unavailable without them (a mounting mistake), never a pass", async () => {
    const response = await postSigned(body, { "x-hub-signature-256": signature(body) }, hostParsed(undefined))
    expect(response.statusCode).toBe(500)
    expect(JSON.parse(response.body).errors[0].code).toBe("raw_body_unavailable")
  })
})

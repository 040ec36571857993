import { afterAll, describe, expect, it } from "vitest"
import { Deferred, Effect, Layer } from "effect"
import { MessageTransport, type OutboundMessage } from "@switchboard/core"
import { createFetchHandler } from "@switchboard/http-adapter"
import { bearer, expectEnvelope, listen, makeHandler, makeSharedStorage, makeTenant, phone, request } from "./helpers.js"

/**
 * `Idempotency-Key` on `POST /send`, `/send/template`, `/send/media` and `/contacts/bulk`
 * (docs/messaging.md "Idempotency-Key"), on memory and on SQLite files.
 */
const storage = makeSharedStorage()
const sent: Array<OutboundMessage> = []
/** Sends block while `gate` is set, so a test can hold a request in flight. */
let gate: Deferred.Deferred<void> | undefined
/** How many sends have reached the transport (blocked or not). */
let reachedTransport = 0
const transport = Layer.succeed(
  MessageTransport,
  MessageTransport.of({
    send: (message) =>
      Effect.gen(function* () {
        reachedTransport++
        if (gate !== undefined) yield* Deferred.await(gate)
        sent.push(message)
        return { provider_message_id: `wamid.${sent.length}`, status: "sent" as const }
      })
  })
)
const handler = makeHandler(storage, { transport })
afterAll(() => handler.dispose())

const post = (apiKey: string, path: string, body: unknown, key?: string, raw?: string) =>
  request(handler, {
    method: "POST",
    url: `/api/v1/api${path}`,
    headers: {
      ...bearer(apiKey),
      "content-type": "application/json",
      ...(key === undefined ? {} : { "idempotency-key": key })
    },
    payload: raw ?? JSON.stringify(body)
  })

const messagesOfChat = async (apiKey: string) => {
  const response = await request(handler, { method: "GET", url: "/api/v1/api/chats", headers: bearer(apiKey) })
  return expectEnvelope(response.statusCode, response.body).data.chats as Array<{ uuid: string; last_message: { uuid: string } }>
}

describe("a send retried with the same Idempotency-Key", () => {
  it("answers the first response again, marked Idempotent-Replayed, and sends once", async () => {
    const { apiKey } = await makeTenant(storage, handler)
    const before = sent.length
    const body = { phone: phone(1), message: "Your order shipped" }
    const first = await post(apiKey, "/send", body, "order-42-shipped")
    expect(first.statusCode).toBe(200)
    expect(first.headers["idempotent-replayed"]).toBeUndefined()
    const again = await post(apiKey, "/send", body, "order-42-shipped")
    expect(again.statusCode).toBe(200)
    expect(again.headers["idempotent-replayed"]).toBe("true")
    expect(again.json().data.message_id).toBe(first.json().data.message_id)
    expect(again.json()).toEqual(first.json())
    // A replay is a new request: its own X-Request-Id, its own rate-limit headers.
    expect(again.headers["x-request-id"]).not.toBe(first.headers["x-request-id"])
    expect(Number(again.headers["ratelimit-remaining"])).toBe(Number(first.headers["ratelimit-remaining"]) - 1)
    expect(sent.length - before).toBe(1)
    const chats = await messagesOfChat(apiKey)
    expect(chats).toHaveLength(1)
    expect(chats[0]?.last_message.uuid).toBe(first.json().data.message_id)
  })

  it("matches whatever the whitespace and key order of the body", async () => {
    const { apiKey } = await makeTenant(storage, handler)
    const first = await post(apiKey, "/send", undefined, "k", `{"phone":"${phone(2)}","message":"Hi"}`)
    const again = await post(apiKey, "/send", undefined, "k", `{ "message" : "Hi",\n  "phone" : "${phone(2)}" }`)
    expect(again.headers["idempotent-replayed"]).toBe("true")
    expect(again.json().data.message_id).toBe(first.json().data.message_id)
  })

  it("with another body, or on another route, is 422 idempotency_key_reused and sends nothing", async () => {
    const { apiKey } = await makeTenant(storage, handler)
    await post(apiKey, "/send", { phone: phone(3), message: "One" }, "reused")
    const before = sent.length
    const otherBody = await post(apiKey, "/send", { phone: phone(3), message: "Two" }, "reused")
    expect(otherBody.statusCode).toBe(422)
    expect(expectEnvelope(422, otherBody.body).errors[0]?.code).toBe("idempotency_key_reused")
    const otherRoute = await post(apiKey, "/contacts/bulk", { contacts: [{ first_name: "A", phone: phone(3) }] }, "reused")
    expect(otherRoute.statusCode).toBe(422)
    expect(sent.length).toBe(before)
  })

  it("while the first is still running is 409 idempotency_key_in_progress", async () => {
    const { apiKey } = await makeTenant(storage, handler)
    gate = Effect.runSync(Deferred.make<void>())
    const body = { phone: phone(4), message: "Slow" }
    const reached = reachedTransport
    // light-my-request starts a request when it is awaited: start the first one now.
    const first = Promise.resolve(post(apiKey, "/send", body, "slow"))
    await expect.poll(() => reachedTransport).toBe(reached + 1)
    const second = await post(apiKey, "/send", body, "slow")
    expect(second.statusCode).toBe(409)
    expect(expectEnvelope(409, second.body).errors[0]?.code).toBe("idempotency_key_in_progress")
    Effect.runSync(Deferred.succeed(gate, undefined))
    gate = undefined
    expect((await first).statusCode).toBe(200)
    expect((await post(apiKey, "/send", body, "slow")).headers["idempotent-replayed"]).toBe("true")
  })

  it("after a refusal can be used again: only a 200 is kept", async () => {
    const { apiKey } = await makeTenant(storage, handler)
    const refused = await post(apiKey, "/send", { phone: "not a phone", message: "Hi" }, "fix-and-retry")
    expect(refused.statusCode).toBe(400)
    const fixed = await post(apiKey, "/send", { phone: phone(5), message: "Hi" }, "fix-and-retry")
    expect(fixed.statusCode).toBe(200)
    expect(fixed.headers["idempotent-replayed"]).toBeUndefined()
  })

  it("of another organization is another key", async () => {
    const first = await makeTenant(storage, handler)
    const second = await makeTenant(storage, handler)
    const a = await post(first.apiKey, "/send", { phone: phone(6), message: "Hi" }, "shared-key")
    const b = await post(second.apiKey, "/send", { phone: phone(6), message: "Hi" }, "shared-key")
    expect(b.statusCode).toBe(200)
    expect(b.headers["idempotent-replayed"]).toBeUndefined()
    expect(b.json().data.message_id).not.toBe(a.json().data.message_id)
  })

  it.each([
    ["empty", ""],
    ["with a space", "order 42"],
    ["256 characters", "k".repeat(256)],
    ["non-ASCII", "commande-é"],
    ["a control character", "a\tb"]
  ])("malformed (%s) is 400 invalid_idempotency_key and sends nothing", async (_name, key) => {
    const { apiKey } = await makeTenant(storage, handler)
    const before = sent.length
    const response = await post(apiKey, "/send", { phone: phone(7), message: "Hi" }, key)
    expect(response.statusCode).toBe(400)
    expect(expectEnvelope(400, response.body).errors[0]?.code).toBe("invalid_idempotency_key")
    expect(sent.length).toBe(before)
  })

  it("of 255 visible characters is accepted", async () => {
    const { apiKey } = await makeTenant(storage, handler)
    const response = await post(apiKey, "/send", { phone: phone(8), message: "Hi" }, "!~".repeat(127) + "x")
    expect(response.statusCode).toBe(200)
  })
})

describe("each idempotent route", () => {
  it.each([
    ["/send/media", { phone: phone(9), media: { type: "image", url: "https://example.com/a.png" } }],
    ["/contacts/bulk", { contacts: [{ first_name: "Ada", phone: phone(10) }] }]
  ])("%s replays its first answer", async (path, body) => {
    const { apiKey } = await makeTenant(storage, handler)
    const first = await post(apiKey, path, body, "once")
    expect(first.statusCode).toBe(200)
    const again = await post(apiKey, path, body, "once")
    expect(again.headers["idempotent-replayed"]).toBe("true")
    expect(again.json()).toEqual(first.json())
  })

  it("a route without the flag ignores the header", async () => {
    const { apiKey } = await makeTenant(storage, handler)
    const first = await post(apiKey, "/labels", { name: "Hot" }, "label-key")
    const again = await post(apiKey, "/labels", { name: "Hot" }, "label-key")
    expect(first.statusCode).toBe(200)
    expect(expectEnvelope(again.statusCode, again.body).errors[0]?.code).toBe("label_name_taken")
  })
})

describe("replays and the rate limit", () => {
  it("a replay counts in its bucket and may get 429", async () => {
    const limited = makeHandler(storage, { transport, rateLimit: { send: { max: 2, windowMs: 60_000 } } })
    try {
      const { apiKey } = await makeTenant(storage, limited)
      const send = () =>
        request(limited, {
          method: "POST",
          url: "/api/v1/api/send",
          headers: { ...bearer(apiKey), "content-type": "application/json", "idempotency-key": "k" },
          payload: JSON.stringify({ phone: phone(11), message: "Hi" })
        })
      expect((await send()).statusCode).toBe(200)
      expect((await send()).headers["idempotent-replayed"]).toBe("true")
      expect((await send()).statusCode).toBe(429)
    } finally {
      await limited.dispose()
    }
  })
})

describe("a client that goes away", () => {
  it("does not stop a claimed send: a retry gets its outcome", async () => {
    const { apiKey } = await makeTenant(storage, handler)
    const server = await listen(handler)
    try {
      gate = Effect.runSync(Deferred.make<void>())
      const before = sent.length
      const body = JSON.stringify({ phone: phone(12), message: "Hi" })
      const headers = { ...bearer(apiKey), "content-type": "application/json", "idempotency-key": "gone" }
      const controller = new AbortController()
      const reached = reachedTransport
      const abandoned = fetch(`${server.base}/send`, { method: "POST", headers, body, signal: controller.signal })
      // The request is claimed and waiting on the transport: the client gives up.
      await expect.poll(() => reachedTransport).toBe(reached + 1)
      controller.abort()
      await expect(abandoned).rejects.toThrow()
      // Let the server see the connection close (it interrupts requests whose client left).
      await new Promise((resolve) => setTimeout(resolve, 300))
      Effect.runSync(Deferred.succeed(gate, undefined))
      gate = undefined
      // The abandoned request still sends (it was not interrupted) and stores its answer…
      await expect.poll(() => sent.length - before).toBe(1)
      // …which the retry gets, instead of sending again.
      await expect
        .poll(async () => (await post(apiKey, "/send", JSON.parse(body), "gone")).headers["idempotent-replayed"])
        .toBe("true")
      expect(sent.length - before).toBe(1)
    } finally {
      await server.close()
    }
  })
})

describe("the Fetch handler", () => {
  it("honours Idempotency-Key the same way", async () => {
    const fetchHandler = createFetchHandler({ storage, transport, logger: false })
    try {
      const { apiKey } = await makeTenant(storage, handler)
      const send = () =>
        fetchHandler(
          new Request("http://localhost/api/v1/api/send", {
            method: "POST",
            headers: { ...bearer(apiKey), "content-type": "application/json", "idempotency-key": "fetch-key" },
            body: JSON.stringify({ phone: phone(13), message: "Hi" })
          })
        )
      const first = await send()
      const again = await send()
      expect(first.status).toBe(200)
      expect(again.headers.get("idempotent-replayed")).toBe("true")
      const [again_, first_] = (await Promise.all([again.json(), first.json()])) as Array<{ data: { message_id: string } }>
      expect(again_?.data.message_id).toBe(first_?.data.message_id)
    } finally {
      await fetchHandler.dispose()
    }
  })
})

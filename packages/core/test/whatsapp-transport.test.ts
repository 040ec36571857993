import { afterAll, afterEach, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { classifyFailure, MessageTransport, recordingTransport, TransportFailed, transportKindOf, validReactionEmoji, WhatsAppCloudTransport } from "@switchboard/core"
import { startSimulator, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"

/** The WhatsApp simulator stands in for the Graph API: it records every request and answers as scripted. */
let simulator: WhatsAppSimulator
let baseUrl = ""
const number = (phone_number_id: string, access_token: string) => ({ phone_number_id, access_token, display_phone_number: "+1 555-078-3881", waba_id: "102290129340398" })

beforeAll(async () => {
  // Every send through undici from the first (before it loads, sends go through fetch).
  expect(await WhatsAppCloudTransport.httpClientReady()).toBe("undici")
  simulator = await startSimulator({
    numbers: [number("106540352242922", "test-token"), number("998877", "channel-token"), number("5550001", "token-a")]
  })
  baseUrl = simulator.url
})
afterEach(() => simulator.reset())
afterAll(() => simulator.close())

/** What the simulator received: method, URL, bearer header and JSON body of each request. */
const recorded = () =>
  simulator.received().map(({ authorization, body, method, path }) => ({ method, url: path, authorization: authorization ?? undefined, body }))

/** The fields of every Graph send body: the recipient without `+`, the message's uuid as `biz_opaque_callback_data`. */
const envelope = (messageId: string) => ({ messaging_product: "whatsapp", recipient_type: "individual", to: "14155550100", biz_opaque_callback_data: messageId })

const transport = (timeoutMs?: number) =>
  WhatsAppCloudTransport.layer({ phoneNumberId: "106540352242922", accessToken: "test-token", baseUrl, apiVersion: "v21.0", ...(timeoutMs ? { timeoutMs } : {}) })

const send = (message: Parameters<MessageTransport["Type"]["send"]>[0], timeoutMs?: number) =>
  Effect.flatMap(MessageTransport, (t) => t.send(message)).pipe(Effect.provide(transport(timeoutMs)))

describe("WhatsApp Cloud API transport", () => {
  it.live("posts a template message to the messages endpoint and returns the provider id", () =>
    Effect.gen(function* () {
      const template = { name: "order_update", language: { code: "en_US" }, components: [{ type: "body", parameters: [{ type: "text", text: "42" }] }] }
      const receipt = yield* send({ channel: null, message_id: "m-1", to: "+14155550100", type: "template", template })
      expect(receipt).toEqual({ provider_message_id: simulator.sends()[0]!.wamid, status: "sent" })
      expect(receipt.provider_message_id).toMatch(/^wamid\./)
      expect(recorded()).toEqual([
        {
          method: "POST",
          url: "/v21.0/106540352242922/messages",
          authorization: "Bearer test-token",
          body: { messaging_product: "whatsapp", recipient_type: "individual", to: "14155550100", biz_opaque_callback_data: "m-1", type: "template", template }
        }
      ])
    }))

  it.live("sends text and media in the Graph API shapes", () =>
    Effect.gen(function* () {
      yield* send({ channel: null, message_id: "m-2", to: "+14155550100", type: "text", text: "Hello" })
      yield* send({ channel: null, message_id: "m-3", to: "+14155550100", type: "media", media: { type: "document", url: "https://example.com/a.pdf", caption: "Invoice", filename: "a.pdf" } })
      yield* send({ channel: null, message_id: "m-4", to: "+14155550100", type: "media", media: { type: "audio", url: "https://example.com/a.ogg", caption: "ignored" } })
      expect(recorded().map((r) => r.body)).toEqual([
        { ...envelope("m-2"), type: "text", text: { preview_url: false, body: "Hello" } },
        { ...envelope("m-3"), type: "document", document: { link: "https://example.com/a.pdf", caption: "Invoice", filename: "a.pdf" } },
        { ...envelope("m-4"), type: "audio", audio: { link: "https://example.com/a.ogg" } }
      ])
    }))

  it.live("sends a reaction and its removal in Meta's shape; the simulator refuses a reaction that is not one emoji with 131009", () =>
    Effect.gen(function* () {
      yield* send({ channel: null, message_id: "m-r1", to: "+14155550100", type: "reaction", reaction: { message_id: "wamid.target", emoji: "👍🏽" } })
      yield* send({ channel: null, message_id: "m-r2", to: "+14155550100", type: "reaction", reaction: { message_id: "wamid.target", emoji: "" } })
      expect(recorded().map((r) => r.body)).toEqual([
        { ...envelope("m-r1"), type: "reaction", reaction: { message_id: "wamid.target", emoji: "👍🏽" } },
        { ...envelope("m-r2"), type: "reaction", reaction: { message_id: "wamid.target", emoji: "" } }
      ])
      expect(simulator.sends()).toHaveLength(2)
      for (const reaction of [{ message_id: "wamid.target", emoji: "ok" }, { message_id: "wamid.target", emoji: "👍👍" }, { message_id: "", emoji: "👍" }]) {
        const error = yield* Effect.flip(send({ channel: null, message_id: "m-r3", to: "+14155550100", type: "reaction", reaction }))
        expect(error).toMatchObject({ _tag: "TransportFailed", provider_code: "131009", http_status: 400 })
      }
    }))

  it("validReactionEmoji: one emoji (skin tones, flags and ZWJ sequences count as one) or empty; anything else refused", () => {
    for (const emoji of ["", "👍", "👍🏽", "🇳🇱", "👨‍👩‍👧", "❤️"]) expect(validReactionEmoji(emoji)).toBe(true)
    for (const emoji of ["a", "👍👍", " 👍", "👍 ", ":)", "1"]) expect(validReactionEmoji(emoji)).toBe(false)
  })

  it.live("maps a provider error to TransportFailed with its message and code", () =>
    Effect.gen(function* () {
      simulator.script.enqueue([{ code: 131030, http_status: 400 }])
      const error = yield* Effect.flip(send({ channel: null, message_id: "m-5", to: "+14155550100", type: "text", text: "Hi" }))
      expect(error).toMatchObject({ _tag: "TransportFailed", reason: "(#131030) Recipient phone number not in allowed list", provider_code: "131030", http_status: 400, network_error: null })
    }))

  it.live("fails with TransportFailed on a timeout and on an unreachable provider, never hangs", () =>
    Effect.gen(function* () {
      simulator.script.enqueue([{ delay_ms: 1000 }])
      const timedOut = yield* Effect.flip(send({ channel: null, message_id: "m-6", to: "+14155550100", type: "text", text: "Hi" }, 100))
      expect(timedOut._tag).toBe("TransportFailed")
      const unreachable = yield* Effect.flip(
        Effect.flatMap(MessageTransport, (t) => t.send({ channel: null, message_id: "m-7", to: "+1", type: "text", text: "x" })).pipe(
          Effect.provide(WhatsAppCloudTransport.layer({ phoneNumberId: "1", accessToken: "t", baseUrl: "http://127.0.0.1:9" }))
        )
      )
      expect(unreachable).toMatchObject({ _tag: "TransportFailed", provider_code: null })
    }))

  it.live("a message with a channel goes out through the channel's number and token, not the configured ones", () =>
    Effect.gen(function* () {
      const channel = { uuid: "0b0c7e0e-9e1b-4f5e-8f8a-2c1d3e4f5a6b", phone_number_id: "998877", access_token: "channel-token" }
      const receipt = yield* send({ channel, message_id: "m-9", to: "+14155550100", type: "text", text: "Hi" })
      expect(receipt.provider_message_id).toBe(simulator.sends()[0]!.wamid)
      expect(recorded().map(({ authorization, url }) => ({ authorization, url }))).toEqual([
        { url: "/v21.0/998877/messages", authorization: "Bearer channel-token" }
      ])
    }))

  it.live("withChannels: channel messages through the Graph API, the others to the fallback transport", () =>
    Effect.gen(function* () {
      const handed: Array<string> = []
      const fallback = { send: (message: { message_id: string }) => Effect.sync(() => (handed.push(message.message_id), { provider_message_id: "fallback", status: "sent" as const })) }
      const combined = WhatsAppCloudTransport.withChannels({ baseUrl, apiVersion: "v22.0" }, fallback)
      const channel = { uuid: "0b0c7e0e-9e1b-4f5e-8f8a-2c1d3e4f5a6b", phone_number_id: "5550001", access_token: "token-a" }
      const viaChannel = yield* combined.send({ channel, message_id: "m-10", to: "+14155550100", type: "text", text: "Hi" })
      const viaFallback = yield* combined.send({ channel: null, message_id: "m-11", to: "+14155550100", type: "text", text: "Hi" })
      expect([viaChannel.provider_message_id, viaFallback.provider_message_id]).toEqual([simulator.sends()[0]!.wamid, "fallback"])
      expect(handed).toEqual(["m-11"])
      expect(recorded().map(({ authorization, url }) => ({ authorization, url }))).toEqual([
        { url: "/v22.0/5550001/messages", authorization: "Bearer token-a" }
      ])
    }))

  it.live("withChannels' send.promise: only when the fallback's send has one; channel messages through the Graph API, the others to the fallback's promise", () =>
    Effect.gen(function* () {
      const withoutPromise = WhatsAppCloudTransport.withChannels({ baseUrl }, { send: () => Effect.succeed({ provider_message_id: null, status: "sent" as const }) })
      expect(withoutPromise.send.promise).toBeUndefined()
      const combined = WhatsAppCloudTransport.withChannels({ baseUrl, apiVersion: "v22.0" }, recordingTransport)
      const channel = { uuid: "0b0c7e0e-9e1b-4f5e-8f8a-2c1d3e4f5a6b", phone_number_id: "5550001", access_token: "token-a" }
      const viaChannel = yield* Effect.promise(() => combined.send.promise!({ channel, message_id: "m-12", to: "+14155550100", type: "text", text: "Hi" }))
      const viaFallback = yield* Effect.promise(() => combined.send.promise!({ channel: null, message_id: "m-13", to: "+14155550100", type: "text", text: "Hi" }))
      expect([viaChannel.provider_message_id, viaFallback.provider_message_id]).toEqual([simulator.sends()[0]!.wamid, null])
      expect(recorded().map(({ authorization, url }) => ({ authorization, url }))).toEqual([
        { url: "/v22.0/5550001/messages", authorization: "Bearer token-a" }
      ])
    }))

  it.live("the recording transport accepts every message without a network call", () =>
    Effect.gen(function* () {
      const receipt = yield* Effect.flatMap(MessageTransport, (t) => t.send({ channel: null, message_id: "m-8", to: "+1", type: "text", text: "x" })).pipe(
        Effect.provide(MessageTransport.recording)
      )
      expect(receipt).toEqual({ provider_message_id: null, status: "sent" })
      expect(recorded()).toEqual([])
    }))
})

describe("the kind of transport a message is handed to (docs/messaging.md \"Transports\")", () => {
  const channel = { uuid: "0b0c7e0e-9e1b-4f5e-8f8a-2c1d3e4f5a6b", phone_number_id: "5550001", access_token: "token-a" }
  const custom = { send: () => Effect.succeed({ provider_message_id: null, status: "sent" as const }) }

  it.effect("recording, whatsapp, and custom for a transport that says none; withChannels answers per message", () =>
    Effect.gen(function* () {
      const whatsApp = yield* Effect.provide(MessageTransport, transport())
      expect(transportKindOf(recordingTransport, { channel: null })).toBe("recording")
      expect(transportKindOf(recordingTransport, { channel })).toBe("recording")
      expect([transportKindOf(whatsApp, { channel: null }), transportKindOf(whatsApp, { channel })]).toEqual(["whatsapp", "whatsapp"])
      expect(transportKindOf(custom, { channel: null })).toBe("custom")
      const routed = WhatsAppCloudTransport.withChannels({ baseUrl }, recordingTransport)
      expect([transportKindOf(routed, { channel }), transportKindOf(routed, { channel: null })]).toEqual(["whatsapp", "recording"])
      // Without a channel, the fallback's kind: none said is custom.
      const routedToCustom = WhatsAppCloudTransport.withChannels({ baseUrl }, custom)
      expect([transportKindOf(routedToCustom, { channel }), transportKindOf(routedToCustom, { channel: null })]).toEqual(["whatsapp", "custom"])
      expect(transportKindOf({ ...custom, kind: (route) => (route.channel === null ? "custom" : "whatsapp") }, { channel })).toBe("whatsapp")
      expect(recorded()).toEqual([])
    }))
})

describe("WhatsApp Cloud API transport: what the classes of failure read (docs/messaging.md \"Classes of failure\")", () => {
  const text = (message_id: string) => ({ channel: null, message_id, to: "+14155550100", type: "text" as const, text: "Hi" })
  /** The failure of one send, with the fields the classifier reads and its class. */
  const failureOf = (message_id: string, timeoutMs?: number) =>
    Effect.map(Effect.flip(send(text(message_id), timeoutMs)), (failure) => ({
      provider_code: failure.provider_code,
      http_status: failure.http_status,
      network_error: failure.network_error,
      class: classifyFailure(failure)
    }))

  it.live("a throttle, a 503, a connection closed after the request and a request never answered come out as four classes", () =>
    Effect.gen(function* () {
      simulator.script.enqueue([{ code: 130429 }, { http_status: 503 }, { drop: "close" }, { drop: "hang" }])
      const failures = [yield* failureOf("c-1"), yield* failureOf("c-2"), yield* failureOf("c-3"), yield* failureOf("c-4", 200)]
      expect(failures).toEqual([
        { provider_code: "130429", http_status: 429, network_error: null, class: "throttle" },
        { provider_code: null, http_status: 503, network_error: null, class: "transient" },
        { provider_code: null, http_status: null, network_error: expect.stringMatching(/^(UND_ERR_SOCKET|ECONNRESET)$/), class: "unknown" },
        { provider_code: null, http_status: null, network_error: "TimeoutError", class: "unknown" }
      ])
      expect(simulator.sends().map((r) => r.body)).toEqual(["c-1", "c-2", "c-3", "c-4"].map((id) => expect.objectContaining({ biz_opaque_callback_data: id })))
    }))

  // The dispatcher awaits `send.promise` (docs/extending.md "A transport of your own"): it must
  // answer what `send` answers, field for field.
  it.live("send.promise: the same receipt, and the same four failures rejected as TransportFailed", () =>
    Effect.gen(function* () {
      const promiseOf = (timeoutMs?: number) =>
        Effect.map(Effect.provide(MessageTransport, transport(timeoutMs)), (service) => service.send.promise!)
      const sendPromise = yield* promiseOf()
      const receipt = yield* Effect.promise(() => sendPromise(text("p-0")))
      expect(receipt).toEqual({ provider_message_id: simulator.sends()[0]!.wamid, status: "sent" })
      simulator.script.enqueue([{ code: 130429 }, { http_status: 503 }, { drop: "close" }, { drop: "hang" }, { code: 131000, http_status: 200 }])
      const rejectionOf = (promise: Promise<unknown>) =>
        Effect.promise(() => promise.then(() => null, (failure: unknown) => failure)).pipe(Effect.map((failure) => {
          expect(failure).toBeInstanceOf(TransportFailed)
          const failed = failure as TransportFailed
          return { provider_code: failed.provider_code, http_status: failed.http_status, network_error: failed.network_error, class: classifyFailure(failed) }
        }))
      const failures = [
        yield* rejectionOf(sendPromise(text("p-1"))),
        yield* rejectionOf(sendPromise(text("p-2"))),
        yield* rejectionOf(sendPromise(text("p-3"))),
        yield* rejectionOf((yield* promiseOf(200))(text("p-4"))),
        yield* rejectionOf(sendPromise(text("p-5")))
      ]
      expect(failures).toEqual([
        { provider_code: "130429", http_status: 429, network_error: null, class: "throttle" },
        { provider_code: null, http_status: 503, network_error: null, class: "transient" },
        { provider_code: null, http_status: null, network_error: expect.stringMatching(/^(UND_ERR_SOCKET|ECONNRESET)$/), class: "unknown" },
        { provider_code: null, http_status: null, network_error: "TimeoutError", class: "unknown" },
        { provider_code: "131000", http_status: 200, network_error: null, class: "unknown" }
      ])
    }))

  it.live("Meta's codes of every class, at Meta's usual HTTP status", () =>
    Effect.gen(function* () {
      const codes = [131056, 131000, 131016, 131047, 132015, 190, 131031, 368, 80007]
      simulator.script.enqueue(codes.map((code) => ({ code })))
      const classes: Array<[string | null, number | null, string]> = []
      for (const code of codes) {
        const failure = yield* failureOf(`k-${code}`)
        classes.push([failure.provider_code, failure.http_status, failure.class])
      }
      expect(classes).toEqual([
        ["131056", 429, "pair_rate"],
        ["131000", 500, "transient"],
        ["131016", 503, "transient"],
        ["131047", 400, "permanent"],
        ["132015", 400, "permanent"],
        ["190", 401, "account"],
        ["131031", 400, "account"],
        ["368", 400, "account"],
        ["80007", 429, "throttle"]
      ])
    }))

  it.live("a 2xx answer without a message id is unknown: Meta may have taken the message", () =>
    Effect.gen(function* () {
      simulator.script.enqueue([{ code: 131000, http_status: 200 }])
      const failure = yield* Effect.flip(send(text("c-5")))
      expect([failure.http_status, failure.kind, classifyFailure(failure)]).toEqual([200, "unknown", "unknown"])
    }))

  it.live("every send carries the message's uuid as biz_opaque_callback_data, for every type", () =>
    Effect.gen(function* () {
      const id = "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6a"
      yield* send(text(id))
      yield* send({ channel: null, message_id: `${id.slice(0, -1)}b`, to: "+14155550100", type: "template", template: { name: "t", language: { code: "en" }, components: [] } })
      yield* send({ channel: null, message_id: `${id.slice(0, -1)}c`, to: "+14155550100", type: "media", media: { type: "image", url: "https://example.com/a.png" } })
      expect(simulator.sends().map((r) => (r.body as { biz_opaque_callback_data?: unknown }).biz_opaque_callback_data)).toEqual([id, `${id.slice(0, -1)}b`, `${id.slice(0, -1)}c`])
    }))
})

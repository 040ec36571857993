import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { classifyFailure, graphVerifier, MessageTransport, TransportFailed, WhatsAppCloudTransport } from "@switchboard/core"
import { startSimulator, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"

/** A loopback port nothing listens on: bound once, then closed. */
const closedPort = async (): Promise<number> => {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

// The send failures below are undici's (before it loads, sends go through fetch).
beforeAll(() => WhatsAppCloudTransport.httpClientReady())

describe("a Graph API that cannot be reached (docs/channels.md, docs/messaging.md)", () => {
  it.live("a send's failure names the base URL it tried and the socket error, never the token", () =>
    Effect.gen(function* () {
      const baseUrl = `http://127.0.0.1:${yield* Effect.promise(closedPort)}/`
      const failure = yield* Effect.flatMap(MessageTransport, (transport) =>
        transport.send({ channel: null, message_id: "m-1", to: "+14155550100", type: "text", text: "Hi" })
      ).pipe(
        Effect.provide(WhatsAppCloudTransport.layer({ phoneNumberId: "106540352242922", accessToken: "secret-token-123", baseUrl })),
        Effect.flip
      )
      expect(failure).toBeInstanceOf(TransportFailed)
      expect(failure.provider_code).toBeNull()
      expect(failure.reason).toBe(
        `Meta's Graph API at ${baseUrl.slice(0, -1)} could not be reached (connect ECONNREFUSED ${baseUrl.slice(7, -1)})`
      )
      expect(failure.reason).not.toContain("secret-token-123")
    })
  )

  it.live("a port nothing listens on is transient (docs/messaging.md \"Classes of failure\"): the request was never written", () =>
    Effect.gen(function* () {
      const baseUrl = `http://127.0.0.1:${yield* Effect.promise(closedPort)}`
      const failure = yield* Effect.flatMap(MessageTransport, (transport) =>
        transport.send({ channel: null, message_id: "m-1", to: "+14155550100", type: "text", text: "Hi" })
      ).pipe(Effect.provide(WhatsAppCloudTransport.layer({ phoneNumberId: "106540352242922", accessToken: "t", baseUrl })), Effect.flip)
      expect([failure.http_status, failure.network_error, failure.kind, classifyFailure(failure)]).toEqual([null, "ECONNREFUSED", undefined, "transient"])
    })
  )

  it.live("channel verification names the base URL it tried", () =>
    Effect.gen(function* () {
      const baseUrl = `http://127.0.0.1:${yield* Effect.promise(closedPort)}`
      const failure = yield* graphVerifier({ baseUrl })
        .verify({ phone_number_id: "106540352242922", access_token: "secret-token-123" })
        .pipe(Effect.flip)
      expect(failure._tag).toBe("ChannelVerificationFailed")
      expect(failure.reason).toMatch(new RegExp(`^Meta's Graph API at ${baseUrl.replace(/\./g, "\\.")} could not be reached \\(fetch failed: connect ECONNREFUSED`))
      expect(failure.reason).not.toContain("secret-token-123")
    })
  )
})

describe("a Graph API answer without Meta's error object (docs/channels.md, docs/messaging.md)", () => {
  let simulator: WhatsAppSimulator
  beforeAll(async () => {
    simulator = await startSimulator({
      numbers: [{ phone_number_id: "106540352242922", access_token: "secret-token-123", display_phone_number: "+1 555-078-3881", waba_id: "102290129340398" }]
    })
  })
  afterAll(() => simulator.close())

  it.live("a send's failure names the base URL and the HTTP status", () =>
    Effect.gen(function* () {
      simulator.script.enqueue([{ http_status: 502 }])
      const failure = yield* Effect.flatMap(MessageTransport, (transport) =>
        transport.send({ channel: null, message_id: "m-1", to: "+14155550100", type: "text", text: "Hi" })
      ).pipe(
        Effect.provide(WhatsAppCloudTransport.layer({ phoneNumberId: "106540352242922", accessToken: "secret-token-123", baseUrl: simulator.url })),
        Effect.flip
      )
      expect(failure.reason).toBe(`Meta's Graph API at ${simulator.url.replace(/\/+$/, "")} answered HTTP 502`)
      expect([failure.provider_code, failure.http_status]).toEqual([null, 502])
    })
  )

  it.live("channel verification names the base URL beside Meta's own message", () =>
    Effect.gen(function* () {
      simulator.script.enqueue([{ http_status: 503 }], "lookup")
      const status = yield* graphVerifier({ baseUrl: simulator.url })
        .verify({ phone_number_id: "106540352242922", access_token: "secret-token-123" })
        .pipe(Effect.flip)
      expect(status.reason).toBe(`Meta's Graph API at ${simulator.url.replace(/\/+$/, "")} answered HTTP 503`)
      const refused = yield* graphVerifier({ baseUrl: simulator.url })
        .verify({ phone_number_id: "106540352242922", access_token: "another-token" })
        .pipe(Effect.flip)
      expect(refused.reason).toMatch(new RegExp(`\\(Meta's Graph API at ${simulator.url.replace(/\/+$/, "").replace(/\./g, "\\.")}\\)$`))
    })
  )
})

import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { vi } from "vitest"
import { Effect } from "effect"
import { classifyFailure, MessageTransport, WhatsAppCloudTransport } from "@switchboard/core"
import { startSimulator, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"

// A runtime where undici does not load (an edge runtime): the transport imports it on first
// use and, failing, sends through `fetch` (docs/messaging.md "WhatsApp Cloud API").
vi.mock("undici", () => {
  throw new Error("undici does not load on this runtime")
})

let simulator: WhatsAppSimulator
beforeAll(async () => {
  expect(await WhatsAppCloudTransport.httpClientReady()).toBe("fetch")
  simulator = await startSimulator({
    numbers: [{ phone_number_id: "106540352242922", access_token: "test-token", display_phone_number: "+1 555-078-3881", waba_id: "102290129340398" }]
  })
})
afterAll(() => simulator.close())

const send = (message_id: string, timeoutMs?: number) =>
  Effect.flatMap(MessageTransport, (transport) =>
    transport.send({ channel: null, message_id, to: "+14155550100", type: "text", text: "Hi" })
  ).pipe(
    Effect.provide(
      WhatsAppCloudTransport.layer({ phoneNumberId: "106540352242922", accessToken: "test-token", baseUrl: simulator.url, ...(timeoutMs ? { timeoutMs } : {}) })
    )
  )

describe("WhatsApp Cloud API transport without undici", () => {
  it.live("sends through fetch: the same request, the provider's id, and the classes of failure", () =>
    Effect.gen(function* () {
      const receipt = yield* send("f-1")
      expect(receipt).toEqual({ provider_message_id: simulator.sends()[0]!.wamid, status: "sent" })
      expect(simulator.sends()[0]!.body).toMatchObject({ to: "14155550100", biz_opaque_callback_data: "f-1", type: "text" })
      simulator.script.enqueue([{ code: 130429 }, { drop: "hang" }])
      const throttled = yield* Effect.flip(send("f-2"))
      const hung = yield* Effect.flip(send("f-3", 200))
      expect([classifyFailure(throttled), throttled.provider_code]).toEqual(["throttle", "130429"])
      expect([classifyFailure(hung), hung.network_error]).toEqual(["unknown", "TimeoutError"])
      expect(hung.reason).toContain("no answer within the timeout")
      // Only fetch says "fetch failed" (undici's request gives the socket error alone).
      const closed = yield* Effect.flip(
        Effect.flatMap(MessageTransport, (transport) => transport.send({ channel: null, message_id: "f-4", to: "+14155550100", type: "text", text: "Hi" })).pipe(
          Effect.provide(WhatsAppCloudTransport.layer({ phoneNumberId: "106540352242922", accessToken: "test-token", baseUrl: "http://127.0.0.1:9" }))
        )
      )
      expect(closed.reason).toMatch(/^Meta's Graph API at http:\/\/127\.0\.0\.1:9 could not be reached \(fetch failed: /)
    }))
})

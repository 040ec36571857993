import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { vi } from "vitest"
import { Effect } from "effect"
import { MessageTransport, recordingTransport, WhatsAppCloudTransport } from "@switchboard/core"
import { startSimulator, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"

// This file runs in a process of its own (vitest.shared.ts `isolatedFiles`): nothing here has
// imported undici before the transport's Layer is built. The Layer is built once undici's
// import has ended, so its first send goes through undici: the import's CPU no longer runs
// beside a dispatcher's first sends (docs/benchmarks.md "The first second of a dispatch").
let simulator: WhatsAppSimulator
beforeAll(async () => {
  simulator = await startSimulator({
    numbers: [{ phone_number_id: "106540352242922", access_token: "test-token", display_phone_number: "+1 555-078-3881", waba_id: "102290129340398" }]
  })
})
afterAll(() => simulator.close())

describe("the Graph API transport's Layer waits for its HTTP client", () => {
  it.live("the handler's default transport (withChannelsLayer): its very first send goes through undici, not fetch", () =>
    Effect.gen(function* () {
      const fetchCalls = vi.spyOn(globalThis, "fetch")
      const channel = { uuid: "c-1", phone_number_id: "106540352242922", access_token: "test-token" }
      const receipt = yield* Effect.flatMap(MessageTransport, (transport) =>
        transport.send({ channel, message_id: "r-1", to: "+14155550100", type: "text", text: "Hi" })
      ).pipe(Effect.provide(WhatsAppCloudTransport.withChannelsLayer({ baseUrl: simulator.url }, recordingTransport)))
      expect(receipt).toEqual({ provider_message_id: simulator.sends()[0]!.wamid, status: "sent" })
      expect(fetchCalls).not.toHaveBeenCalled()
      expect(yield* Effect.promise(() => WhatsAppCloudTransport.httpClientReady())).toBe("undici")
    }))
})

import { describe, expect, it } from "vitest"
import { Deferred, Effect, Layer } from "effect"
import { MessageTransport } from "@switchboard/core"
import { bearer, makeHandler, makeSharedStorage, makeTenant, phone, request } from "./helpers.js"

/**
 * Stopping a handler (docs/http-adapter.md "Stopping"): `dispose()` waits for a request
 * whose send is still with the provider, so its outcome is recorded before the runtime
 * (and then the host's store) closes. The dispatch loops' bounded drain is tested in core
 * (leased-queue.test.ts) and across a real SIGTERM in the standalone server.
 */
describe("dispose()", () => {
  it("waits for a send in flight in a request: the attempt is recorded before it resolves", async () => {
    const storage = makeSharedStorage()
    const gate = Effect.runSync(Deferred.make<void>())
    let reached = 0
    const transport = Layer.succeed(
      MessageTransport,
      MessageTransport.of({
        send: () =>
          Effect.gen(function*() {
            reached++
            yield* Deferred.await(gate)
            return { provider_message_id: "wamid.shutdown-1", status: "sent" as const }
          })
      })
    )
    const handler = makeHandler(storage, { transport })
    const { apiKey } = await makeTenant(storage, handler)
    const answer = request(handler, {
      method: "POST",
      url: "/api/v1/api/send",
      headers: { ...bearer(apiKey), "content-type": "application/json" },
      payload: JSON.stringify({ phone: phone(1), message: "Your order shipped" })
    })
    await expect.poll(() => reached).toBe(1)
    let disposed = false
    const disposing = handler.dispose().then(() => {
      disposed = true
    })
    // The send is still with the provider: dispose() has not resolved (before the change it did at once).
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(disposed).toBe(false)
    Effect.runSync(Deferred.succeed(gate, undefined))
    await disposing
    const response = await answer
    expect(response.statusCode).toBe(200)
    expect(response.json().data).toMatchObject({ status: "sent", provider_message_id: "wamid.shutdown-1" })
  })
})

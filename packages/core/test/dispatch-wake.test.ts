import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Contacts, Core, DispatchWake, MemoryStorage, Organizations, Storage, wakeOnEnqueue } from "@switchboard/core"

// The in-process wake of the leased-dispatch loop (docs/webhooks.md "Delivery and the
// dispatcher"): the storage of `wakeOnEnqueue` wakes the loop after each write that may
// enqueue a webhook delivery, and only then.

const layer = Core.layer.pipe(
  Layer.provideMerge(wakeOnEnqueue.pipe(Layer.provide(MemoryStorage.layer), Layer.provideMerge(DispatchWake.layer)))
)

describe("wakeOnEnqueue", () => {
  it.effect("a contact import wakes the subscribers; reads and other writes do not; an unsubscribed listener hears nothing", () =>
    Effect.gen(function*() {
      const wake = yield* DispatchWake
      let wakes = 0
      const unsubscribe = wake.subscribe(() => wakes++)
      const organization = yield* (yield* Organizations).create({ name: "Acme", plan: {} })
      expect(wakes).toBe(0)
      yield* (yield* Contacts).importBulk(organization.id, [{ first_name: "Ada", phone: "+14155550100" }])
      expect(wakes).toBe(1)
      const storage = yield* Storage
      yield* storage.webhooks.listEndpoints(organization.id)
      expect(wakes).toBe(1)
      unsubscribe()
      yield* (yield* Contacts).importBulk(organization.id, [{ first_name: "Grace", phone: "+14155550101" }])
      expect(wakes).toBe(1)
    }).pipe(Effect.provide(layer)))
})

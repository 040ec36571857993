import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { MemoryRateLimitStore } from "@switchboard/core"
import { runRateLimitStoreContract } from "@switchboard/storage-contract"

runRateLimitStoreContract({ name: "memory", makeLayer: () => MemoryRateLimitStore.layer })

describe("MemoryRateLimitStore", () => {
  const increment = (store: MemoryRateLimitStore.MemoryRateLimitStoreService, key: string, now: number) => {
    const windowStart = Math.floor(now / 1000) * 1000
    return store.increment({ key, windowStart, expiresAt: windowStart + 1000, now })
  }

  it.effect("drops the counters of ended windows as new requests arrive, so memory stays bounded", () =>
    Effect.gen(function* () {
      const store = MemoryRateLimitStore.make()
      // 1000 organizations come in one window ...
      for (let org = 0; org < 1000; org++) yield* increment(store, `general:org:${org}`, 5_000)
      expect(store.size()).toBe(1000)
      // ... and are gone in the next: the first request after the boundary sweeps them.
      expect(yield* increment(store, "general:org:new", 6_000)).toBe(1)
      expect(store.size()).toBe(1)
      // A long run of changing organizations never holds more than one window's worth.
      for (let second = 7; second < 100; second++) {
        for (let org = 0; org < 10; org++) yield* increment(store, `general:org:${second}-${org}`, second * 1000 + org)
        expect(store.size()).toBeLessThanOrEqual(10)
      }
    }))

  it.effect("keeps a counter until its window ends", () =>
    Effect.gen(function* () {
      const store = MemoryRateLimitStore.make()
      yield* increment(store, "k", 1_000)
      expect(yield* increment(store, "k", 1_999)).toBe(2)
      expect(store.size()).toBe(1)
      expect(yield* increment(store, "k", 2_000)).toBe(1)
      expect(store.size()).toBe(1)
    }))

  it("starts no timer: building a store leaves no handle that keeps the process alive", () => {
    const before = process.getActiveResourcesInfo().filter((name) => name === "Timeout").length
    const store = MemoryRateLimitStore.make()
    Effect.runSync(increment(store, "k", Date.now()))
    expect(process.getActiveResourcesInfo().filter((name) => name === "Timeout").length).toBe(before)
  })
})

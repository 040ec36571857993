import { describe, expect, it } from "@effect/vitest"
import { Clock, Duration, Effect } from "effect"
import { hostClock, isLiveClock } from "@switchboard/core"

// Which clocks run on real time (src/internal/time.ts): where one does, the send queue's
// wait for Meta and the rate limiter's wait for its store are one plain timer, not a
// sleeping fiber raced against the work.
describe("isLiveClock and hostClock", () => {
  it.effect("a TestClock is not live", () =>
    Effect.gen(function* () {
      expect(isLiveClock(yield* Effect.clock)).toBe(false)
    }))

  it.live("Effect's live clock and the host clock of the dispatchers are", () =>
    Effect.gen(function* () {
      expect(isLiveClock(yield* Effect.clock)).toBe(true)
      expect(isLiveClock(Clock.make())).toBe(true)
      expect(isLiveClock(hostClock)).toBe(true)
      expect(isLiveClock({ ...hostClock })).toBe(false)
    }))

  it.live("the host clock tells the wall clock's time and sleeps real milliseconds", () =>
    Effect.gen(function* () {
      expect(Math.abs(hostClock.unsafeCurrentTimeMillis() - Date.now())).toBeLessThan(5)
      const started = Date.now()
      yield* hostClock.sleep(Duration.millis(30))
      expect(Date.now() - started).toBeGreaterThanOrEqual(25)
    }))
})

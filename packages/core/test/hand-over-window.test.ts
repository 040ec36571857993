import { describe, expect, it } from "vitest"
import {
  HAND_OVER_GAP_MS,
  HAND_OVER_SLOT_SPAN_MS,
  handOverWait,
  handOverWindowOf,
  inFirstSecond,
  makeHandOverWindow,
  recordHandOver
} from "../src/messaging/handOverWindow.js"

// A channel's hand-overs in one process (docs/channels.md "Throughput"): a message
// goes no sooner than HAND_OVER_GAP_MS after every hand-over of its channel whose slot was
// HAND_OVER_SLOT_SPAN_MS or more before its own.

/** Slots of a channel of 50 messages/s: 1 000 / (0.95 × 50) ms apart. */
const SLOT = 1000 / (0.95 * 50)

describe("the hand-over window", () => {
  it("a channel with no hand-overs, or slots closer than the span, waits for nothing", () => {
    const window = makeHandOverWindow()
    expect(handOverWait(window, "channel-1", 0, 0)).toBe(0)
    recordHandOver(window, "channel-1", 0, 25)
    // 49 slots later (1 031.6 ms): still within one second's worth of slots, not bound.
    expect(handOverWait(window, "channel-1", 49 * SLOT, 49 * SLOT)).toBe(0)
  })

  it("a message on time after one that went late 50 slots before waits until HAND_OVER_GAP_MS after it", () => {
    const window = makeHandOverWindow()
    recordHandOver(window, "channel-1", 0, 25) // 25 ms late
    for (let n = 1; n < 50; n++) recordHandOver(window, "channel-1", n * SLOT, n * SLOT)
    const slot = 50 * SLOT // 1 052.6 ms: on time, it would make 51 in the second from 25 ms
    expect(handOverWait(window, "channel-1", slot, slot)).toBeCloseTo(25 + HAND_OVER_GAP_MS - slot, 6)
    expect(handOverWait(window, "channel-1", slot, 25 + HAND_OVER_GAP_MS)).toBe(0)
    // The next slot's binding hand-over (slot 1) was on time: no wait.
    recordHandOver(window, "channel-1", slot, 25 + HAND_OVER_GAP_MS)
    expect(handOverWait(window, "channel-1", 51 * SLOT, 51 * SLOT)).toBe(0)
  })

  it("channels are apart: another channel's late hand-over binds nothing", () => {
    const window = makeHandOverWindow()
    recordHandOver(window, "channel-1", 0, 500)
    expect(handOverWait(window, "channel-2", HAND_OVER_SLOT_SPAN_MS, HAND_OVER_SLOT_SPAN_MS)).toBe(0)
    expect(handOverWait(window, "channel-1", HAND_OVER_SLOT_SPAN_MS, HAND_OVER_SLOT_SPAN_MS)).toBe(500 + HAND_OVER_GAP_MS - HAND_OVER_SLOT_SPAN_MS)
  })

  it("keeps one second's worth of slots per channel: older hand-overs fold into one", () => {
    const window = makeHandOverWindow()
    for (let n = 0; n < 10_000; n++) {
      expect(handOverWait(window, "channel-1", n * SLOT, n * SLOT)).toBe(0)
      recordHandOver(window, "channel-1", n * SLOT, n * SLOT)
    }
    expect(window.get("channel-1")?.recent.length).toBeLessThanOrEqual(51)
  })

  it("a hand-over recorded out of slot order still binds the slots a span after it", () => {
    const window = makeHandOverWindow()
    recordHandOver(window, "channel-1", 40, 40)
    recordHandOver(window, "channel-1", 20, 60) // an earlier slot, handed over last
    expect(window.get("channel-1")?.recent.map((each) => each.slot)).toEqual([20, 40])
    const slot = 20 + HAND_OVER_SLOT_SPAN_MS
    expect(handOverWait(window, "channel-1", slot, slot)).toBe(60 + HAND_OVER_GAP_MS - slot)
  })

  it("a channel's first second in the process: no hand-over yet, or the first less than 1 000 ms ago", () => {
    const window = makeHandOverWindow()
    expect(inFirstSecond(window, "channel-1", 0)).toBe(true)
    recordHandOver(window, "channel-1", 0, 100)
    recordHandOver(window, "channel-1", 21, 600)
    expect(inFirstSecond(window, "channel-1", 1_099)).toBe(true)
    expect(inFirstSecond(window, "channel-1", 1_100)).toBe(false)
    expect(inFirstSecond(window, "channel-2", 1_100)).toBe(true)
  })

  it("one window per transport", () => {
    const transport = {}
    expect(handOverWindowOf(transport)).toBe(handOverWindowOf(transport))
    expect(handOverWindowOf({})).not.toBe(handOverWindowOf(transport))
  })
})

import { describe, expect, it } from "@effect/vitest"
import { CUSTOMER_SERVICE_WINDOW_MS, inboundWindowInstant, windowExpiresAt } from "@switchboard/core"

// The instants of the customer service window (docs/messaging.md "The customer service window").

const RECEIVED = Date.parse("2026-11-26T12:00:00.500Z")

describe("inboundWindowInstant: the earlier of Meta's timestamp and the receipt", () => {
  it("Meta's timestamp (seconds, as a string or a number) when it is earlier", () => {
    expect(inboundWindowInstant({ timestamp: String(RECEIVED / 1000 - 90.5) }, RECEIVED)).toBe("2026-11-26T11:58:30.000Z")
    expect(inboundWindowInstant({ timestamp: Math.floor(RECEIVED / 1000) - 60 }, RECEIVED)).toBe("2026-11-26T11:59:00.000Z")
  })

  it("the receipt when Meta's timestamp is later (a clock ahead never lengthens a window)", () => {
    expect(inboundWindowInstant({ timestamp: String(Math.floor(RECEIVED / 1000) + 3_600) }, RECEIVED)).toBe("2026-11-26T12:00:00.500Z")
  })

  it("the receipt when there is no readable timestamp", () => {
    for (const content of [null, {}, { timestamp: "soon" }, { timestamp: "-5" }, { timestamp: "" }, { timestamp: true }]) {
      expect(inboundWindowInstant(content, RECEIVED)).toBe("2026-11-26T12:00:00.500Z")
    }
  })
})

describe("windowExpiresAt", () => {
  it("24 hours after the last inbound instant; null without one", () => {
    expect(CUSTOMER_SERVICE_WINDOW_MS).toBe(86_400_000)
    expect(windowExpiresAt("2026-11-26T12:00:00.500Z")).toBe("2026-11-27T12:00:00.500Z")
    expect(windowExpiresAt(null)).toBeNull()
  })
})

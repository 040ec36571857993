import { Cause, FiberId, FiberRefs, HashMap, List, Logger, LogLevel, LogSpan } from "effect"
import { describe, expect, it } from "vitest"
import { formatJsonLine } from "../src/logging.js"

const entry = (overrides: Partial<Logger.Logger.Options<unknown>> = {}): Logger.Logger.Options<unknown> => ({
  fiberId: FiberId.none,
  logLevel: LogLevel.Info,
  message: "request",
  cause: Cause.empty,
  context: FiberRefs.empty(),
  spans: List.empty(),
  annotations: HashMap.make(
    ["method", "GET"],
    ["route", "/verify"],
    ["status", 200],
    ["duration_ms", 0.42],
    ["organization_id", null],
    ["request_id", "4f1c1b9e-0d7e-4a4e-9f55-0f6f0c1f6a11"]
  ),
  date: new Date("2026-11-23T12:00:00.123Z"),
  ...overrides
})

describe("formatJsonLine", () => {
  // Every case must come out exactly as Effect's `Logger.jsonLogger` writes it: the fast
  // path for request lines and the fallback for everything else.
  const cases: Record<string, Logger.Logger.Options<unknown>> = {
    "a request line": entry(),
    "a 5xx request line": entry({ logLevel: LogLevel.Error }),
    "booleans, NaN and an empty string": entry({
      annotations: HashMap.make(["flag", true], ["ratio", Number.NaN], ["empty", ""], ["quote", 'say "hi"\n'])
    }),
    "a fiber id": entry({ fiberId: FiberId.make(44, 0) }),
    "an object annotation (fallback)": entry({ annotations: HashMap.make(["detail", { nested: [1, 2] }]) }),
    "a bigint annotation (fallback)": entry({ annotations: HashMap.make(["big", 10n]) }),
    "a cause (fallback)": entry({ message: "Storage failure", cause: Cause.fail(new Error("disk I/O error")) }),
    "spans (fallback)": entry({ spans: List.make(LogSpan.make("handler", 0)) }),
    "several messages (fallback)": entry({ message: ["a", 1] }),
    "an Error message (fallback)": entry({ message: new Error("boom") })
  }
  for (const [name, options] of Object.entries(cases)) {
    it(`writes ${name} exactly as Logger.jsonLogger does`, () => {
      expect(formatJsonLine(options)).toBe(Logger.jsonLogger.log(options))
    })
  }

  it("keeps every annotation of the request line", () => {
    expect(JSON.parse(formatJsonLine(entry()))).toEqual({
      message: "request",
      logLevel: "INFO",
      timestamp: "2026-11-23T12:00:00.123Z",
      annotations: {
        method: "GET",
        route: "/verify",
        status: 200,
        duration_ms: 0.42,
        organization_id: null,
        request_id: "4f1c1b9e-0d7e-4a4e-9f55-0f6f0c1f6a11"
      },
      spans: {},
      fiberId: ""
    })
  })
})

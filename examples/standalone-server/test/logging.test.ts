import { Cause, FiberId, FiberRefs, HashMap, List, Logger, LogLevel, LogSpan } from "effect"
import { describe, expect, it } from "vitest"
import { requestLogEntryOf, type RequestLogLine } from "@switchboard/http-adapter"
import { formatJsonLine, formatRequestLine, makeLineBatcher } from "../src/logging.js"

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

describe("formatRequestLine", () => {
  const line = (overrides: Partial<RequestLogLine> = {}): RequestLogLine => ({
    level: "INFO",
    method: "GET",
    route: "/verify",
    status: 200,
    durationMs: 0.42,
    organizationId: "9b2f7c1e-5d3a-4e8b-a1c2-3d4e5f6a7b8c",
    requestId: "4f1c1b9e-0d7e-4a4e-9f55-0f6f0c1f6a11",
    timestamp: Date.parse("2026-11-23T12:00:00.123Z"),
    ...overrides
  })
  const cases: Record<string, RequestLogLine> = {
    "an authenticated 200": line(),
    "an unauthenticated 401": line({ status: 401, organizationId: null }),
    "a 500 at level ERROR": line({ level: "ERROR", status: 500, durationMs: 12.5 }),
    "an unmatched route, a whole duration": line({ method: "DELETE", route: "(unmatched)", status: 404, durationMs: 3 }),
    "strings that JSON must escape": line({ method: 'M"\\\n', route: "/é/\u2028", requestId: "a:b.c-d_e" }),
    "two lines in one millisecond (the cached timestamp)": line({ timestamp: Date.parse("2026-11-23T12:00:00.123Z") }),
    "the next millisecond": line({ timestamp: Date.parse("2026-11-23T12:00:00.124Z") })
  }
  for (const [name, request] of Object.entries(cases)) {
    it(`writes ${name} exactly as Logger.jsonLogger writes the handler's entry`, () => {
      expect(formatRequestLine(request)).toBe(Logger.jsonLogger.log(requestLogEntryOf(request)))
    })
  }
})

describe("makeLineBatcher", () => {
  const manual = () => {
    const scheduled: Array<() => void> = []
    const written: Array<string> = []
    const batcher = makeLineBatcher(
      (text) => written.push(text),
      (flush) => scheduled.push(flush)
    )
    return { batcher, scheduled, written }
  }

  it("hands the lines of one turn to the destination once, in order, each ended by a newline", () => {
    const { batcher, scheduled, written } = manual()
    batcher.add("one")
    batcher.add("two")
    batcher.add("three")
    expect(written).toEqual([])
    expect(scheduled).toHaveLength(1)
    scheduled[0]?.()
    expect(written).toEqual(["one\ntwo\nthree\n"])
  })

  it("schedules again after a flush, and a flush with nothing pending writes nothing", () => {
    const { batcher, scheduled, written } = manual()
    batcher.add("one")
    batcher.flush()
    batcher.add("two")
    scheduled.forEach((flush) => flush())
    batcher.flush()
    expect(written).toEqual(["one\n", "two\n"])
    expect(scheduled).toHaveLength(2)
  })

  it("writes at the end of the turn by default (setImmediate)", async () => {
    const written: Array<string> = []
    const batcher = makeLineBatcher((text) => written.push(text))
    batcher.add("a")
    batcher.add("b")
    await new Promise((resolve) => setImmediate(resolve))
    expect(written).toEqual(["a\nb\n"])
  })
})

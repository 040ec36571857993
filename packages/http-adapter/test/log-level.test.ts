/** `createHandler({ logLevel })` (docs/http-adapter.md "Log level"). */
import { Effect, Logger } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { defineRoute, type HandlerLogLevel, type SwitchboardHandler } from "@switchboard/http-adapter"
import { makeHandler, makeSharedStorage, request } from "./helpers.js"

/** An unauthenticated route that writes one line at each level, then answers 200 (or 500 with `?fail`). */
const noisyRoute = defineRoute({
  method: "GET",
  path: "/test/noisy",
  tag: "Guide",
  summary: "Logs at every level",
  authenticated: false,
  query: { fail: { type: "string", optional: true } },
  handle: ({ query }) =>
    Effect.gen(function* () {
      yield* Effect.logDebug("a debug line")
      yield* Effect.logInfo("an info line")
      yield* Effect.logWarning("a warning line")
      yield* Effect.logError("an error line")
      if (query.fail !== undefined) return yield* Effect.die(new Error("boom"))
      return { message: "noisy", data: {} }
    })
})

const handlers: Array<SwitchboardHandler> = []
afterEach(async () => {
  for (const handler of handlers.splice(0)) await handler.dispose()
})

/** The `message level` pairs a handler at `logLevel` writes for one 200 and one 500. */
const linesAt = async (logLevel: HandlerLogLevel | undefined): Promise<Array<string>> => {
  const lines: Array<string> = []
  const logger = Logger.make(({ logLevel: level, message }) => {
    lines.push(`${String(Array.isArray(message) ? message[0] : message)} ${level.label}`)
  })
  const handler = makeHandler(makeSharedStorage(), {
    routes: [noisyRoute],
    logger,
    ...(logLevel === undefined ? {} : { logLevel })
  })
  handlers.push(handler)
  expect((await request(handler, { method: "GET", url: "/api/v1/api/test/noisy" })).statusCode).toBe(200)
  expect((await request(handler, { method: "GET", url: "/api/v1/api/test/noisy?fail=1" })).statusCode).toBe(500)
  return lines.filter((line) => !line.startsWith("Unhandled") && !line.includes("boom"))
}

describe("logLevel", () => {
  it("info by default: no debug line; request lines and everything above", async () => {
    expect(await linesAt(undefined)).toEqual([
      "an info line INFO", "a warning line WARN", "an error line ERROR", "request INFO",
      "an info line INFO", "a warning line WARN", "an error line ERROR", "request ERROR"
    ])
  })

  it("debug lets debug lines through", async () => {
    expect(await linesAt("debug")).toContain("a debug line DEBUG")
  })

  it("warn keeps warnings, errors and the request lines of 5xx answers only", async () => {
    expect(await linesAt("warn")).toEqual([
      "a warning line WARN", "an error line ERROR",
      "a warning line WARN", "an error line ERROR", "request ERROR"
    ])
  })

  it("error keeps errors and the request lines of 5xx answers only", async () => {
    expect(await linesAt("error")).toEqual(["an error line ERROR", "an error line ERROR", "request ERROR"])
  })

  it("anything else throws when the handler is created, naming the four values", () => {
    expect(() => makeHandler(makeSharedStorage(), { logLevel: "verbose" as HandlerLogLevel })).toThrow(
      "logLevel must be one of debug, info, warn, error; got verbose"
    )
  })
})

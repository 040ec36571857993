import { Core, MemoryStorage, Organizations, Storage } from "@switchboard/core"
import { createHandler, defaultRoutes, defineRoute } from "@switchboard/http-adapter"
import { ConfigProvider, Effect, Either, Layer, Option } from "effect"
import inject from "light-my-request"
import { afterAll, describe, expect, it } from "vitest"
import { loadConfig } from "../src/config.js"
import {
  describeRateLimits,
  rateLimitConfig,
  rateLimitOptionsFor,
  rateLimitStoreFor,
  type RateLimitConfig
} from "../src/rateLimits.js"
import { runServerToExit } from "./helpers.js"

const load = (variables: Record<string, string>) =>
  Effect.runPromise(
    Effect.either(
      loadConfig(rateLimitConfig).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(variables)))))
    )
  )

const loaded = async (variables: Record<string, string>): Promise<RateLimitConfig> =>
  Either.getOrThrowWith(await load(variables), (error) => error)

const failure = async (variables: Record<string, string>): Promise<string> =>
  Either.match(await load(variables), { onLeft: (error) => error.message, onRight: () => "loaded" })

describe("rateLimitConfig: the five variables of docs/rate-limits.md and REDIS_URL", () => {
  it("defaults to docs/rate-limits.md: general 5000 and send 500 per 3 600 000 ms, Redis not disabled, no Redis URL", async () => {
    expect(await loaded({})).toEqual({
      general: { max: 5000, windowMs: 3_600_000 },
      send: { max: 500, windowMs: 3_600_000 },
      redisDisabled: false,
      redisUrl: Option.none()
    })
    expect(await loaded({ DEVELOPER_API_RATE_LIMIT_MAX: " ", REDIS_URL: "" })).toMatchObject({
      general: { max: 5000 },
      redisUrl: Option.none()
    })
  })

  it("reads every variable", async () => {
    expect(
      await loaded({
        DEVELOPER_API_RATE_LIMIT_WINDOW_MS: "60000",
        DEVELOPER_API_RATE_LIMIT_MAX: "100",
        DEVELOPER_API_SEND_RATE_LIMIT_WINDOW_MS: "1000",
        DEVELOPER_API_SEND_RATE_LIMIT_MAX: "5",
        DEVELOPER_API_RATE_LIMIT_REDIS_DISABLED: "1",
        REDIS_URL: "redis://:secret@cache:6379/2"
      })
    ).toEqual({
      general: { max: 100, windowMs: 60_000 },
      send: { max: 5, windowMs: 1000 },
      redisDisabled: true,
      redisUrl: Option.some("redis://:secret@cache:6379/2")
    })
    expect((await loaded({ DEVELOPER_API_RATE_LIMIT_REDIS_DISABLED: "0" })).redisDisabled).toBe(false)
    expect((await loaded({ DEVELOPER_API_RATE_LIMIT_REDIS_DISABLED: "true" })).redisDisabled).toBe(true)
  })

  it.each([
    ["DEVELOPER_API_RATE_LIMIT_MAX", "0"],
    ["DEVELOPER_API_RATE_LIMIT_WINDOW_MS", "-5"],
    ["DEVELOPER_API_SEND_RATE_LIMIT_MAX", "ten"],
    ["DEVELOPER_API_SEND_RATE_LIMIT_WINDOW_MS", "1.5"]
  ])("rejects %s=%j, naming the variable", async (name, value) => {
    expect(await failure({ [name]: value })).toBe(`${name} must be a positive integer (got "${value}")`)
  })

  it("rejects a bad REDIS_DISABLED and a non-Redis REDIS_URL without echoing it, every problem at once", async () => {
    const message = await failure({
      DEVELOPER_API_RATE_LIMIT_REDIS_DISABLED: "yes",
      REDIS_URL: "http://user:secret@cache",
      DEVELOPER_API_RATE_LIMIT_MAX: "x"
    })
    expect(message).toContain('DEVELOPER_API_RATE_LIMIT_REDIS_DISABLED must be 1 or 0 (got "yes")')
    expect(message).toContain('REDIS_URL must be redis://… or rediss://… (got scheme "http:")')
    expect(message).toContain("DEVELOPER_API_RATE_LIMIT_MAX must be a positive integer")
    expect(message).not.toContain("secret")
  })

  it("makes the server exit 1 with the message for a bad value", async () => {
    const result = await runServerToExit({ PORT: "0", DATABASE_URL: "memory:", DEVELOPER_API_SEND_RATE_LIMIT_MAX: "0" })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('error: DEVELOPER_API_SEND_RATE_LIMIT_MAX must be a positive integer (got "0")')
  })
})

describe("rateLimitStoreFor (issue 5: selection)", () => {
  const sqlite = { _tag: "Sqlite", filename: "/data/s.db" } as const
  const base = { general: { max: 1, windowMs: 1 }, send: { max: 1, windowMs: 1 } }
  const redis = Option.some("redis://cache:6379")

  it("REDIS_DISABLED=1 → memory; else REDIS_URL → Redis; else the configured storage", () => {
    expect(rateLimitStoreFor({ ...base, redisDisabled: true, redisUrl: redis }, sqlite)).toEqual({ _tag: "Memory" })
    expect(rateLimitStoreFor({ ...base, redisDisabled: false, redisUrl: redis }, { _tag: "Memory" })).toEqual({
      _tag: "Redis",
      url: "redis://cache:6379"
    })
    const none = { ...base, redisDisabled: false, redisUrl: Option.none() }
    // SQLite: a counters file of its own, named after the database (shared by its processes).
    expect(rateLimitStoreFor(none, sqlite)).toEqual({ _tag: "Sqlite", filename: "/data/s.db-rate-limits" })
    expect(rateLimitStoreFor(none, { _tag: "Memory" })).toEqual({ _tag: "Memory" })
    // mongodb:// → MongoRateLimitStore on the same database; the start-up line never shows the URL.
    const mongo = { _tag: "MongoDb", url: "mongodb://user:secret@db:27017/switchboard" } as const
    expect(rateLimitStoreFor(none, mongo)).toEqual(mongo)
    expect(describeRateLimits(none, rateLimitStoreFor(none, mongo))).toBe("Rate limits: general 1 per 1 ms, send 1 per 1 ms, store mongodb")
  })

  it("describes the choice without the Redis URL", () => {
    const config = { ...base, redisDisabled: false, redisUrl: Option.some("redis://:secret@cache") }
    const line = describeRateLimits(config, rateLimitStoreFor(config, sqlite))
    expect(line).toBe("Rate limits: general 1 per 1 ms, send 1 per 1 ms, store redis")
  })
})

describe("the send variables change the send bucket (a send route standing in for POST /send/template)", () => {
  const sendRoute = defineRoute({
    method: "POST",
    path: "/test/send",
    tag: "Test",
    summary: "A send",
    bucket: "send",
    handle: () => Effect.succeed({ message: "sent", data: {} })
  })
  const storage = Layer.succeed(Storage, MemoryStorage.make())
  const handlers: Array<ReturnType<typeof createHandler>> = []
  afterAll(() => Promise.all(handlers.map((handler) => handler.dispose())))

  const serve = async (variables: Record<string, string>) => {
    const config = await loaded(variables)
    const handler = createHandler({
      storage,
      logger: false,
      routes: [...defaultRoutes, sendRoute],
      rateLimit: rateLimitOptionsFor(config, rateLimitStoreFor(config, { _tag: "Memory" }))
    })
    handlers.push(handler)
    const { key } = await Effect.runPromise(
      Effect.gen(function* () {
        const organizations = yield* Organizations
        const organization = yield* organizations.create({ name: "Acme" })
        return { key: yield* organizations.issueApiKey(organization.id) }
      }).pipe(Effect.provide(Core.layer), Effect.provide(storage))
    )
    const call = async (method: "GET" | "POST", path: string) => {
      const response = await inject((req, res) => handler(req, res), {
        method,
        url: `/api/v1/api${path}`,
        headers: { authorization: `Bearer ${key.api_key}` }
      })
      return { status: response.statusCode, headers: response.headers as Record<string, unknown> }
    }
    return { send: () => call("POST", "/test/send"), verify: () => call("GET", "/verify") }
  }

  it("DEVELOPER_API_SEND_RATE_LIMIT_MAX and _WINDOW_MS set the send limit, leaving general alone", async () => {
    const api = await serve({ DEVELOPER_API_SEND_RATE_LIMIT_MAX: "2", DEVELOPER_API_SEND_RATE_LIMIT_WINDOW_MS: "60000" })
    const first = await api.send()
    expect(first.headers).toMatchObject({ "ratelimit-limit": "2", "ratelimit-remaining": "1" })
    expect(Number(first.headers["ratelimit-reset"])).toBeLessThanOrEqual(60)
    expect((await api.send()).status).toBe(200)
    expect((await api.send()).status).toBe(429)
    expect((await api.verify()).headers).toMatchObject({ "ratelimit-limit": "5000", "ratelimit-remaining": "4999" })
  })

  it("DEVELOPER_API_RATE_LIMIT_MAX and _WINDOW_MS set the general limit, leaving send alone", async () => {
    const api = await serve({ DEVELOPER_API_RATE_LIMIT_MAX: "1", DEVELOPER_API_RATE_LIMIT_WINDOW_MS: "5000" })
    const first = await api.verify()
    expect(first.headers).toMatchObject({ "ratelimit-limit": "1", "ratelimit-remaining": "0" })
    expect(Number(first.headers["ratelimit-reset"])).toBeLessThanOrEqual(5)
    expect((await api.verify()).status).toBe(429)
    expect((await api.send()).headers).toMatchObject({ "ratelimit-limit": "500" })
  })
})

import { describe, expect, it } from "@effect/vitest"
import { randomUUID } from "node:crypto"
import { createServer, type Server, type Socket } from "node:net"
import { Effect, HashMap, Layer, Logger, Option } from "effect"
import { Redis } from "ioredis"
import { RateLimiter, RateLimitStore, type RateLimitIncrement, type RateLimitOptions } from "@switchboard/core"
import { runRateLimitStoreContract } from "@switchboard/storage-contract"
import { RedisRateLimitStore } from "@switchboard/rate-limit-redis"

const url = process.env["REDIS_URL"]
if (url === undefined || url === "") console.warn("skipped: REDIS_URL is not set, so the Redis rate-limit store tests do not run")
const redisUrl = url ?? ""
const skip = redisUrl === ""

/** A key prefix no other test, run or process uses. */
const freshPrefix = () => `switchboard-test:${randomUUID()}:`

if (!skip) {
  runRateLimitStoreContract({
    name: "redis",
    makeLayer: () => RedisRateLimitStore.layer({ url: redisUrl, keyPrefix: freshPrefix() })
  })
}

const at = (key: string, now: number, windowMs = 60_000): RateLimitIncrement => {
  const windowStart = Math.floor(now / windowMs) * windowMs
  return { key, windowStart, expiresAt: windowStart + windowMs, now }
}

/** A client of the test's own, to read what the store wrote (the oracle). */
const inspector = Effect.acquireRelease(
  Effect.sync(() => new Redis(redisUrl)),
  (client) => Effect.promise(() => client.quit())
)

describe.skipIf(skip)("RedisRateLimitStore on a live Redis", () => {
  it.scoped("names keys <prefix><key>:<window start> and creates each with the rest of the window as expiry", () =>
    Effect.gen(function* () {
      const prefix = freshPrefix()
      const store = yield* RedisRateLimitStore.make({ url: redisUrl, keyPrefix: prefix })
      const redis = yield* inspector
      const request = at("general:org:acme", 1_200_000 + 15_000)
      expect(yield* store.increment(request)).toBe(1)
      expect(yield* store.increment(request)).toBe(2)
      const key = `${prefix}general:org:acme:1200000`
      expect(yield* Effect.promise(() => redis.get(key))).toBe("2")
      const ttl = yield* Effect.promise(() => redis.pttl(key))
      expect(ttl).toBeGreaterThan(40_000)
      expect(ttl).toBeLessThanOrEqual(45_000)
    }))

  it.scoped("gives an expiry to a key found without one, so no counter can live forever", () =>
    Effect.gen(function* () {
      const prefix = freshPrefix()
      const store = yield* RedisRateLimitStore.make({ url: redisUrl, keyPrefix: prefix })
      const redis = yield* inspector
      const request = at("send:org:acme", 0)
      yield* Effect.promise(() => redis.set(`${prefix}send:org:acme:0`, "7"))
      expect(yield* store.increment(request)).toBe(8)
      const ttl = yield* Effect.promise(() => redis.pttl(`${prefix}send:org:acme:0`))
      expect(ttl).toBeGreaterThan(0)
    }))

  it.scoped("keeps counting after Redis forgot the script (EVALSHA falls back to EVAL)", () =>
    Effect.gen(function* () {
      const store = yield* RedisRateLimitStore.make({ url: redisUrl, keyPrefix: freshPrefix() })
      const redis = yield* inspector
      yield* store.increment(at("k", 0))
      yield* Effect.promise(() => redis.script("FLUSH"))
      expect(yield* store.increment(at("k", 0))).toBe(2)
    }))

  it.scoped("shares counters between clients: two instances' concurrent increments get 1..N once each", () =>
    Effect.gen(function* () {
      const keyPrefix = freshPrefix()
      const first = yield* RedisRateLimitStore.make({ url: redisUrl, keyPrefix })
      const second = yield* RedisRateLimitStore.make({ url: redisUrl, keyPrefix })
      const request = at("general:org:shared", 0)
      const counts = yield* Effect.all(
        Array.from({ length: 200 }, (_, index) => (index % 2 === 0 ? first : second).increment(request)),
        { concurrency: "unbounded" }
      )
      expect([...counts].sort((a, b) => a - b)).toEqual(Array.from({ length: 200 }, (_, index) => index + 1))
    }))

  it.scoped("layerFromClient uses the host's client and leaves it open", () =>
    Effect.gen(function* () {
      const client = yield* inspector
      const count = yield* Effect.flatMap(RateLimitStore, (store) => store.increment(at("k", 0))).pipe(
        Effect.provide(RedisRateLimitStore.layerFromClient(client, { keyPrefix: freshPrefix() }))
      )
      expect(count).toBe(1)
      expect(client.status).toBe("ready")
    }))
})

describe("RedisRateLimitStore when Redis is unreachable or silent", () => {
  /** A limiter on `store`, its warnings collected in `warnings`. */
  const limiterOn = (store: Layer.Layer<RateLimitStore>, options: RateLimitOptions) => {
    const warnings: Array<Record<string, unknown>> = []
    const logger = Logger.make(({ logLevel, annotations }) => {
      if (logLevel.label === "WARN") warnings.push(Object.fromEntries(HashMap.toEntries(annotations)))
    })
    const layer = RateLimiter.layer(options).pipe(
      Layer.provide(store),
      Layer.provideMerge(Logger.replace(Logger.defaultLogger, logger))
    )
    return { warnings, layer }
  }
  const consume = Effect.flatMap(RateLimiter, (limiter) => limiter.consume("general", { kind: "organization", id: "o" }))

  it.live("a closed port: building does not fail, increments fail at once with StorageError", () =>
    Effect.gen(function* () {
      const port = yield* closedPort
      const store = yield* RedisRateLimitStore.make({ url: `redis://127.0.0.1:${port}`, connectTimeoutMs: 300 })
      const error = yield* Effect.flip(store.increment(at("k", 0)))
      expect(error._tag).toBe("StorageError")
      expect(error.operation).toBe("rateLimits.increment")
    }).pipe(Effect.scoped))

  it.live("a closed port with fail-open: requests are allowed uncounted and a warning is logged", () =>
    Effect.gen(function* () {
      const port = yield* closedPort
      const { warnings, layer } = limiterOn(
        RedisRateLimitStore.layer({ url: `redis://127.0.0.1:${port}`, connectTimeoutMs: 300 }),
        { general: { max: 1 } }
      )
      const results = yield* Effect.all([consume, consume, consume]).pipe(Effect.provide(layer))
      expect(results).toEqual([Option.none(), Option.none(), Option.none()])
      expect(warnings.length).toBeGreaterThanOrEqual(1)
      expect(warnings.some((annotations) => annotations["operation"] === "rateLimits.increment")).toBe(true)
    }))

  it.live("a closed port with fail-closed: RateLimitUnavailable (HTTP 503)", () =>
    Effect.gen(function* () {
      const port = yield* closedPort
      const { layer } = limiterOn(
        RedisRateLimitStore.layer({ url: `redis://127.0.0.1:${port}`, connectTimeoutMs: 300 }),
        { onStoreError: "fail-closed" }
      )
      const error = yield* Effect.flip(consume).pipe(Effect.provide(layer))
      expect(error._tag).toBe("RateLimitUnavailable")
    }))

  it.live("a server that accepts but never answers: the limiter's timeout answers, never a hang", () =>
    Effect.gen(function* () {
      const port = yield* silentServer
      // A host client with ioredis defaults (offline queue on): commands wait for an answer.
      const client = yield* Effect.acquireRelease(
        Effect.sync(() => new Redis({ port, host: "127.0.0.1", enableReadyCheck: false, maxRetriesPerRequest: null })),
        (redis) => Effect.sync(() => redis.disconnect())
      )
      client.on("error", () => undefined)
      const store = RedisRateLimitStore.layerFromClient(client)
      const open = limiterOn(store, { storeTimeoutMs: 200 })
      expect(yield* consume.pipe(Effect.provide(open.layer))).toEqual(Option.none())
      expect(open.warnings[0]?.["cause"]).toMatch(/did not answer within 200 ms/)
      const closed = limiterOn(store, { storeTimeoutMs: 200, onStoreError: "fail-closed" })
      expect((yield* Effect.flip(consume.pipe(Effect.provide(closed.layer))))._tag).toBe("RateLimitUnavailable")
    }).pipe(Effect.scoped))
})

/** A local port nothing listens on (bound once, then released). */
const closedPort = Effect.promise(
  () =>
    new Promise<number>((resolve) => {
      const server = createServer()
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as { port: number }
        server.close(() => resolve(port))
      })
    })
)

/** A TCP server that accepts connections and never writes a byte; closed with the scope. */
const silentServer = Effect.acquireRelease(
  Effect.promise(
    () =>
      new Promise<{ server: Server; sockets: Set<Socket> }>((resolve) => {
        const sockets = new Set<Socket>()
        const server = createServer((socket) => {
          sockets.add(socket)
          socket.on("close", () => sockets.delete(socket))
        })
        server.listen(0, "127.0.0.1", () => resolve({ server, sockets }))
      })
  ),
  ({ server, sockets }) =>
    Effect.promise(
      () =>
        new Promise<void>((resolve) => {
          for (const socket of sockets) socket.destroy()
          server.close(() => resolve())
        })
    )
).pipe(Effect.map(({ server }) => (server.address() as { port: number }).port))

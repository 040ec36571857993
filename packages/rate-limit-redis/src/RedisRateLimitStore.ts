import { createHash } from "node:crypto"
import { Config, type ConfigError, Duration, Effect, Layer, type Scope } from "effect"
import { Redis } from "ioredis"
import { RateLimitStore, StorageError, type RateLimitIncrement, type RateLimitStoreService } from "@switchboard/core"

/**
 * Options of the Redis rate-limit store.
 *
 * - `url`: `redis://[[user]:password@]host[:port][/db]` or `rediss://…` (TLS).
 * - `keyPrefix`: put before every counter key; default {@link DEFAULT_KEY_PREFIX}.
 *   Instances that must share limits use the same prefix (and the same Redis database).
 * - `connectTimeoutMs`: how long building the store waits for the first connection, in
 *   milliseconds; default 2000. An unreachable Redis never fails the build: the client
 *   keeps reconnecting, and meanwhile every increment fails at once (the limiter's
 *   `onStoreError` policy answers).
 *
 * @category models
 */
export interface RedisRateLimitStoreOptions {
  readonly url: string
  readonly keyPrefix?: string
  readonly connectTimeoutMs?: number
}

/**
 * Default `keyPrefix`: counters are named `switchboard:rate-limit:<bucket>:<org|ip>:<id>:<window start>`.
 *
 * @category models
 */
export const DEFAULT_KEY_PREFIX = "switchboard:rate-limit:"

/**
 * Opens an ioredis client on `options.url` and returns the store on it (see
 * {@link fromClient}); the client belongs to the `Scope` and is closed (`QUIT`, or a
 * plain disconnect when Redis does not answer within a second) when it ends. Waits up to
 * `connectTimeoutMs` for the first connection, then returns in any case. The client does
 * not queue commands while disconnected (`enableOfflineQueue: false`), so a Redis outage
 * fails increments at once instead of letting them wait for the limiter's timeout.
 *
 * @category constructors
 */
export const make = (options: RedisRateLimitStoreOptions): Effect.Effect<RateLimitStoreService, never, Scope.Scope> =>
  Effect.acquireRelease(connect(options), quit).pipe(
    Effect.map((client) => fromClient(client, { keyPrefix: options.keyPrefix }))
  )

/**
 * A Layer providing {@link RateLimitStore} on Redis at `options.url` (see {@link make}).
 *
 * @category layers
 * @example
 * import { Layer } from "effect"
 * import { RateLimiter } from "@switchboard/core"
 * import { RedisRateLimitStore } from "@switchboard/rate-limit-redis"
 *
 * const RateLimiterLive = RateLimiter.layer().pipe(
 *   Layer.provide(RedisRateLimitStore.layer({ url: "redis://127.0.0.1:6379" }))
 * )
 */
export const layer = (options: RedisRateLimitStoreOptions): Layer.Layer<RateLimitStore> =>
  Layer.scoped(RateLimitStore, make(options))

/**
 * {@link layer} with options read from Effect's `Config`. Fails with `ConfigError` when
 * the configuration is missing or invalid.
 *
 * @category layers
 * @example
 * import { Config } from "effect"
 * import { RedisRateLimitStore } from "@switchboard/rate-limit-redis"
 *
 * const StoreLive = RedisRateLimitStore.layerConfig({ url: Config.string("REDIS_URL") })
 */
export const layerConfig = (
  config: Config.Config.Wrap<RedisRateLimitStoreOptions>
): Layer.Layer<RateLimitStore, ConfigError.ConfigError> =>
  Layer.scoped(RateLimitStore, Effect.flatMap(Config.unwrap(config), make))

/**
 * A Layer providing {@link RateLimitStore} on the host's own ioredis client, which stays
 * the host's: it is never connected nor closed here, and its options apply (with the
 * default `enableOfflineQueue: true`, increments wait for a reconnection; the limiter's
 * `storeTimeoutMs` still bounds them).
 *
 * @category layers
 * @example
 * import { Redis } from "ioredis"
 * import { RedisRateLimitStore } from "@switchboard/rate-limit-redis"
 *
 * const StoreLive = RedisRateLimitStore.layerFromClient(new Redis(process.env.REDIS_URL!))
 */
export const layerFromClient = (
  client: Redis,
  options: { readonly keyPrefix?: string } = {}
): Layer.Layer<RateLimitStore> => Layer.sync(RateLimitStore, () => fromClient(client, options))

/**
 * The store on `client`. Each increment is one round trip running {@link INCREMENT_SCRIPT}
 * (by `EVALSHA`, falling back to `EVAL` once when Redis does not know the script yet):
 * Redis runs a script atomically, so concurrent increments from every instance get
 * distinct counts, and the key gets its expiry in the same step it is created, so no key
 * can be left without one. The expiry is the rest of the window (`expiresAt - now`, at
 * least 1 ms). Failures are `StorageError` (operation `"rateLimits.increment"`);
 * `incrementPromise` is the same round trip as a plain promise (the limiter's path).
 *
 * @category constructors
 */
export const fromClient = (client: Redis, options: { readonly keyPrefix?: string } = {}): RateLimitStoreService => {
  const prefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX
  const count = (request: RateLimitIncrement) =>
    runScript(client, `${prefix}${request.key}:${request.windowStart}`, Math.max(1, request.expiresAt - request.now))
  return {
    increment: (request: RateLimitIncrement) =>
      Effect.tryPromise({ try: () => count(request), catch: (cause) => new StorageError({ operation: "rateLimits.increment", cause }) }),
    // The limiter's path on the live clock: the same round trip, bounded by one timer.
    incrementPromise: count
  }
}

/**
 * The Lua script of one increment: `INCR` the key, and when it has no expiry (it was just
 * created) `PEXPIRE` it by `ARGV[1]` milliseconds; returns the new count.
 *
 * @category constructors
 */
export const INCREMENT_SCRIPT = `local count = redis.call("INCR", KEYS[1])
if redis.call("PTTL", KEYS[1]) < 0 then
  redis.call("PEXPIRE", KEYS[1], ARGV[1])
end
return count`

const SCRIPT_SHA = createHash("sha1").update(INCREMENT_SCRIPT).digest("hex")

const runScript = async (client: Redis, key: string, ttlMs: number): Promise<number> => {
  try {
    return (await client.evalsha(SCRIPT_SHA, 1, key, ttlMs)) as number
  } catch (error) {
    if (!(error instanceof Error && error.message.startsWith("NOSCRIPT"))) throw error
    return (await client.eval(INCREMENT_SCRIPT, 1, key, ttlMs)) as number
  }
}

/**
 * Creates the client and waits, at most `connectTimeoutMs`, for its first connection.
 * Connection errors are not raised here: ioredis keeps reconnecting, and while it does,
 * increments fail at once.
 */
const connect = (options: RedisRateLimitStoreOptions): Effect.Effect<Redis> =>
  Effect.gen(function* () {
    const connectTimeoutMs = options.connectTimeoutMs ?? 2000
    const client = new Redis(options.url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: connectTimeoutMs
    })
    // Errors surface per increment (and through the limiter's warning); without a listener
    // ioredis would print every reconnection failure on stderr.
    client.on("error", () => undefined)
    const connected = yield* Effect.promise(() => client.connect().then(() => true, () => false)).pipe(
      Effect.timeoutTo({ duration: Duration.millis(connectTimeoutMs), onSuccess: (ok) => ok, onTimeout: () => false })
    )
    if (!connected) {
      yield* Effect.logWarning("Redis rate-limit store is not reachable yet; reconnecting in the background")
    }
    return client
  })

/** Closes a client this module opened: `QUIT`, or a disconnect if that fails or takes over 1 s. */
const quit = (client: Redis): Effect.Effect<void> =>
  Effect.tryPromise(() => client.quit()).pipe(
    Effect.timeout(Duration.seconds(1)),
    Effect.catchAll(() => Effect.sync(() => client.disconnect())),
    Effect.asVoid
  )

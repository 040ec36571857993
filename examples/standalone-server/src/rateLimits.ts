import { DEFAULT_RATE_LIMITS, MemoryRateLimitStore, resolveRateLimitOptions, type RateLimitStore } from "@switchboard/core"
import type { RateLimitHandlerOptions } from "@switchboard/http-adapter"
import { SqliteRateLimitStore } from "@switchboard/storage-sqlite"
import { Config, ConfigError, Effect, Either, Layer, Option } from "effect"
import type { DatabaseLocation } from "./config.js"
import { layerOnImport } from "./lazyLayer.js"

/**
 * Where the standalone server keeps its rate-limit counters (docs/rate-limits.md "Stores"):
 * in this process's memory, in Redis, or in the SQLite file, PostgreSQL schema or MongoDB
 * database of `DATABASE_URL`.
 *
 * @category models
 */
export type RateLimitStoreChoice =
  | { readonly _tag: "Memory" }
  | { readonly _tag: "Redis"; readonly url: string }
  | { readonly _tag: "Sqlite"; readonly filename: string }
  | { readonly _tag: "MongoDb"; readonly url: string }
  | { readonly _tag: "Postgres"; readonly url: string; readonly schema: string }

/**
 * The rate-limit settings of docs/rate-limits.md, read from the environment:
 * - `general`, `send`: `{max, windowMs}` from `DEVELOPER_API_RATE_LIMIT_MAX` /
 *   `DEVELOPER_API_RATE_LIMIT_WINDOW_MS` and `DEVELOPER_API_SEND_RATE_LIMIT_MAX` /
 *   `DEVELOPER_API_SEND_RATE_LIMIT_WINDOW_MS` (positive integers; windows in ms);
 * - `redisDisabled`: `DEVELOPER_API_RATE_LIMIT_REDIS_DISABLED` is `1` (or `true`);
 * - `redisUrl`: `REDIS_URL` (`redis://…` or `rediss://…`), `None` when unset or empty.
 *
 * @category models
 */
export interface RateLimitConfig {
  readonly general: { readonly max: number; readonly windowMs: number }
  readonly send: { readonly max: number; readonly windowMs: number }
  readonly redisDisabled: boolean
  readonly redisUrl: Option.Option<string>
}

/**
 * Reads {@link RateLimitConfig}. Unset or empty variables take the defaults of docs/rate-limits.md
 * (general 5000 per 3 600 000 ms, send 500 per 3 600 000 ms, Redis not disabled). Every
 * bad value is reported with its variable's name; `REDIS_URL` is never echoed (it may
 * hold a password).
 *
 * @category config
 */
export const rateLimitConfig: Config.Config<RateLimitConfig> = Config.all({
  generalMax: positiveInteger("DEVELOPER_API_RATE_LIMIT_MAX", DEFAULT_RATE_LIMITS.general.max),
  generalWindowMs: positiveInteger("DEVELOPER_API_RATE_LIMIT_WINDOW_MS", DEFAULT_RATE_LIMITS.general.windowMs),
  sendMax: positiveInteger("DEVELOPER_API_SEND_RATE_LIMIT_MAX", DEFAULT_RATE_LIMITS.send.max),
  sendWindowMs: positiveInteger("DEVELOPER_API_SEND_RATE_LIMIT_WINDOW_MS", DEFAULT_RATE_LIMITS.send.windowMs),
  redisDisabled: optionalText("DEVELOPER_API_RATE_LIMIT_REDIS_DISABLED").pipe(Config.mapOrFail(parseDisabled)),
  redisUrl: optionalText("REDIS_URL").pipe(Config.mapOrFail(parseRedisUrl))
}).pipe(
  Config.map((values) => ({
    general: { max: values.generalMax, windowMs: values.generalWindowMs },
    send: { max: values.sendMax, windowMs: values.sendWindowMs },
    redisDisabled: values.redisDisabled,
    redisUrl: values.redisUrl
  }))
)

/**
 * The SQLite file of the rate-limit counters of the database `filename`: beside it, named
 * after it (`switchboard.db` → `switchboard.db-rate-limits`), so every process on one
 * database shares one counters file, and a counter's write never invalidates the page
 * cache of the data's connection (docs/rate-limits.md "Stores"). `:memory:` stays `:memory:`.
 *
 * @category config
 */
export const rateLimitFileOf = (filename: string): string => (filename === ":memory:" ? filename : `${filename}-rate-limits`)

/**
 * Picks the store (docs/rate-limits.md "Stores"): `DEVELOPER_API_RATE_LIMIT_REDIS_DISABLED=1`
 * → memory (per instance); else `REDIS_URL` → Redis (shared by every instance on it); else
 * the configured storage: for SQLite the counters file {@link rateLimitFileOf} the database
 * (shared by every process on that database), the PostgreSQL schema or the MongoDB
 * database (shared by every instance on it), memory for `memory:` (which is per process
 * anyway).
 *
 * @category config
 */
export const rateLimitStoreFor = (config: RateLimitConfig, database: DatabaseLocation): RateLimitStoreChoice => {
  if (config.redisDisabled) return { _tag: "Memory" }
  if (Option.isSome(config.redisUrl)) return { _tag: "Redis", url: config.redisUrl.value }
  switch (database._tag) {
    case "Sqlite":
      return { _tag: "Sqlite", filename: rateLimitFileOf(database.filename) }
    case "Memory":
      return { _tag: "Memory" }
    case "MongoDb":
      return { _tag: "MongoDb", url: database.url }
    case "Postgres":
      return { _tag: "Postgres", url: database.url, schema: database.schema }
  }
}

/**
 * The `rateLimit` option of `createHandler` for the chosen store: the limits of `config`
 * and the store's Layer (the handler owns it: disposing the handler closes the SQLite
 * connection, the Redis client or the MongoDB client).
 *
 * @category layers
 */
export const rateLimitOptionsFor = (config: RateLimitConfig, choice: RateLimitStoreChoice): RateLimitHandlerOptions => ({
  general: config.general,
  send: config.send,
  store: storeLayerFor(choice)
})

/**
 * One line for stderr at start-up saying which limits and which store are in force, for
 * example `Rate limits: general 5000 per 3600000 ms, send 500 per 3600000 ms, store redis`
 * (never the Redis URL).
 *
 * @category config
 */
export const describeRateLimits = (config: RateLimitConfig, choice: RateLimitStoreChoice): string =>
  `Rate limits: general ${config.general.max} per ${config.general.windowMs} ms, ` +
  `send ${config.send.max} per ${config.send.windowMs} ms, store ${choice._tag.toLowerCase()}`

const storeLayerFor = (choice: RateLimitStoreChoice): Layer.Layer<RateLimitStore, unknown> => {
  switch (choice._tag) {
    case "Memory":
      return MemoryRateLimitStore.layer
    case "Redis":
      return layerOnImport(
        () => import("@switchboard/rate-limit-redis"),
        ({ RedisRateLimitStore }) => RedisRateLimitStore.layer({ url: choice.url })
      )
    case "Sqlite":
      return SqliteRateLimitStore.layer({ filename: choice.filename })
    case "MongoDb":
      return layerOnImport(
        () => import("@switchboard/storage-mongodb"),
        ({ MongoRateLimitStore }) => MongoRateLimitStore.layer({ url: choice.url })
      )
    case "Postgres":
      return layerOnImport(
        () => import("@switchboard/storage-postgres"),
        ({ PostgresRateLimitStore }) => PostgresRateLimitStore.layer({ connectionString: choice.url, schema: choice.schema })
      )
  }
}

/** A variable's trimmed value; `None` when unset or empty. */
function optionalText(name: string): Config.Config<Option.Option<string>> {
  return Config.option(Config.string(name)).pipe(
    Config.map((value) => Option.filter(Option.map(value, (text) => text.trim()), (text) => text !== ""))
  )
}

/**
 * A positive integer variable (digits only), `fallback` when unset or empty; the range
 * rule is core's (`resolveRateLimitOptions`), reported under the variable's name.
 */
function positiveInteger(name: string, fallback: number): Config.Config<number> {
  return optionalText(name).pipe(
    Config.mapOrFail((value) => {
      if (Option.isNone(value)) return Either.right(fallback)
      const number = /^\d+$/.test(value.value) ? Number(value.value) : Number.NaN
      const checked = resolveRateLimitOptions({ general: { max: number } })
      return Either.isRight(checked)
        ? Either.right(number)
        : Either.left(ConfigError.InvalidData([name], `${name} must be a positive integer (got "${value.value}")`))
    })
  )
}

function parseDisabled(value: Option.Option<string>): Either.Either<boolean, ConfigError.ConfigError> {
  if (Option.isNone(value)) return Either.right(false)
  const text = value.value.toLowerCase()
  if (text === "1" || text === "true") return Either.right(true)
  if (text === "0" || text === "false") return Either.right(false)
  return Either.left(
    ConfigError.InvalidData(
      ["DEVELOPER_API_RATE_LIMIT_REDIS_DISABLED"],
      `DEVELOPER_API_RATE_LIMIT_REDIS_DISABLED must be 1 or 0 (got "${value.value}")`
    )
  )
}

function parseRedisUrl(value: Option.Option<string>): Either.Either<Option.Option<string>, ConfigError.ConfigError> {
  if (Option.isNone(value) || /^rediss?:\/\//i.test(value.value)) return Either.right(value)
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(value.value)?.[1]
  const got = scheme === undefined ? "no scheme" : `scheme "${scheme}:"`
  return Either.left(ConfigError.InvalidData(["REDIS_URL"], `REDIS_URL must be redis://… or rediss://… (got ${got})`))
}

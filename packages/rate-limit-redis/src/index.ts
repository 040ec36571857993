/**
 * `@switchboard/rate-limit-redis`: the `RateLimitStore` of `@switchboard/core` on Redis
 * (ioredis), so every server instance using one Redis shares its rate limits
 * (docs/rate-limits.md "Stores"): one atomic Lua script per request, each key created with its expiry.
 *
 * @packageDocumentation
 */
export * as RedisRateLimitStore from "./RedisRateLimitStore.js"

import { isIP } from "node:net"
import { Effect, Layer, Option } from "effect"
import {
  MemoryRateLimitStore,
  RateLimiter,
  type AuthenticatedOrganization,
  type RateLimitDecision,
  type RateLimited,
  type RateLimitOptions,
  type RateLimitStore,
  type RateLimitUnavailable
} from "@switchboard/core"
import type { RouteDefinition } from "./routes/route.js"

/**
 * The `rateLimit` option of `createHandler` (docs/rate-limits.md): the limiter's
 * options of `@switchboard/core` (`general` and `send` as `{max, windowMs}`,
 * `onStoreError`, `storeTimeoutMs`; defaults 5000 and 500 requests per 3 600 000 ms,
 * `fail-open`, 1000 ms) and the `store` holding the counters: a `RateLimitStore` Layer
 * such as `SqliteRateLimitStore.layer({filename})` or `RedisRateLimitStore.layer({url})`;
 * default a fresh in-memory store, private to this handler.
 *
 * @category handler
 */
export interface RateLimitHandlerOptions extends RateLimitOptions {
  readonly store?: Layer.Layer<RateLimitStore, unknown>
}

/**
 * The {@link RateLimiter} Layer of a handler: `RateLimiter.layer(options)` on
 * `options.store` (default `MemoryRateLimitStore.layer`). Fails with core's `InvalidInput`
 * for invalid limits, or with the store's error.
 *
 * @category handler
 */
export const rateLimiterLayer = (options: RateLimitHandlerOptions = {}): Layer.Layer<RateLimiter, unknown> =>
  RateLimiter.layer(options).pipe(Layer.provide(options.store ?? MemoryRateLimitStore.layer))

/**
 * Counts the request in its route's bucket (docs/http-api.md "Order of checks": after
 * authentication, before validation): an authenticated request for its organization, a
 * request to a route with `authenticated: false` for its client address (always in the
 * `general` bucket). The decision, allowed or refused, is handed to `note` so the
 * response can carry the `RateLimit-*` headers. Fails with `RateLimited` (429) or, under
 * `fail-closed`, `RateLimitUnavailable` (503).
 */
export const limitRequest = (
  definition: RouteDefinition,
  auth: AuthenticatedOrganization | undefined,
  clientAddress: () => string,
  note: (decision: RateLimitDecision) => void
): Effect.Effect<void, RateLimited | RateLimitUnavailable, RateLimiter> =>
  Effect.flatMap(RateLimiter, (limiter) =>
    Effect.matchEffect(
      auth === undefined
        ? limiter.consume("general", { kind: "client", id: clientAddress() })
        : limiter.consume(definition.bucket ?? "general", { kind: "organization", id: auth.organization.id }),
      {
        onFailure: (error) => {
          if (error._tag === "RateLimited") note(error.decision)
          return Effect.fail(error)
        },
        onSuccess: (decision) => {
          if (Option.isSome(decision)) note(decision.value)
          return Effect.void
        }
      }
    )
  )

/**
 * Writes the `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` headers of
 * `decision` into `headers` (whole numbers; reset in seconds until the window ends), or
 * nothing when the request did not pass the limiter (`decision` undefined: not counted,
 * failed before it, or let through uncounted by `fail-open`). docs/rate-limits.md.
 */
export const rateLimitHeadersInto = (headers: Record<string, string>, decision: RateLimitDecision | undefined): void => {
  if (decision === undefined) return
  headers["ratelimit-limit"] = String(decision.limit)
  headers["ratelimit-remaining"] = String(decision.remaining)
  headers["ratelimit-reset"] = String(decision.resetSeconds)
}

/**
 * The client address unauthenticated requests are counted by: the first address of
 * `X-Forwarded-For` (`forwardedFor`, the header's value) when `trustProxy` is true and it
 * is an IP address, else `remoteAddress` (the socket's, or what a Fetch host reports; may
 * be missing: then `"unknown"`, one bucket shared by every such client). IPv4-mapped IPv6
 * addresses (`::ffff:203.0.113.7`) count as their IPv4 address.
 */
export const clientAddressOf = (
  forwardedFor: string | ReadonlyArray<string> | undefined,
  remoteAddress: string | undefined,
  trustProxy: boolean
): string => {
  if (trustProxy) {
    const first = (typeof forwardedFor === "string" ? forwardedFor : forwardedFor?.[0])?.split(",")[0]?.trim()
    if (first !== undefined && isIP(first) !== 0) return unmapped(first)
  }
  return remoteAddress === undefined || remoteAddress === "" ? "unknown" : unmapped(remoteAddress)
}

const unmapped = (address: string): string =>
  address.startsWith("::ffff:") && isIP(address.slice(7)) === 4 ? address.slice(7) : address

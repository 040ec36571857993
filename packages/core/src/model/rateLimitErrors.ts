import { Schema } from "effect"
import type { RateLimitDecision } from "./rateLimits.js"

/**
 * A bucket's limit is used up for this window (docs/rate-limits.md): HTTP
 * 429 `rate_limited` with `Retry-After`. `scope` says who was counted (the organization,
 * or on unauthenticated routes the client address); `limit` is the bucket's `max` per
 * `window_ms` milliseconds; `reset_seconds` and `retry_after_seconds` are whole seconds
 * until the window ends.
 *
 * @category errors
 */
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  bucket: Schema.Literal("general", "send"),
  scope: Schema.Literal("organization", "client"),
  limit: Schema.Int,
  window_ms: Schema.Int,
  reset_seconds: Schema.Int,
  retry_after_seconds: Schema.Int
}) {
  override get message(): string {
    const who = this.scope === "organization" ? "the organization" : "this client"
    const requests = this.bucket === "send" ? "send requests" : "requests"
    return (
      `Too many requests for ${who}: the limit of ${this.limit} ${requests} per ` +
      `${formatWindow(this.window_ms)} is reached; retry after ${this.retry_after_seconds} seconds`
    )
  }

  /** The refusal as a {@link RateLimitDecision} (`allowed: false`, `remaining: 0`), for headers. */
  get decision(): RateLimitDecision {
    return {
      bucket: this.bucket,
      allowed: false,
      limit: this.limit,
      remaining: 0,
      resetSeconds: this.reset_seconds,
      retryAfterSeconds: this.retry_after_seconds
    }
  }
}

/**
 * The rate-limit store failed or did not answer in time while `onStoreError` is
 * `fail-closed` (docs/rate-limits.md): HTTP 503 `rate_limit_unavailable`. `cause`
 * keeps the store's failure for logs; it is never exposed over HTTP.
 *
 * @category errors
 */
export class RateLimitUnavailable extends Schema.TaggedError<RateLimitUnavailable>()("RateLimitUnavailable", {
  cause: Schema.Defect
}) {
  override get message(): string {
    return "Rate limiting is unavailable; the request was not processed, retry later"
  }
}

/** `3600000` → `"3600 seconds"`, `1500` → `"1500 ms"`. */
const formatWindow = (windowMs: number): string =>
  windowMs % 1000 === 0 ? `${windowMs / 1000} seconds` : `${windowMs} ms`

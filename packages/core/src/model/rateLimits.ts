import { Either } from "effect"
import { InvalidInput, type InputIssue } from "./commonErrors.js"

/**
 * The two rate-limit buckets of an organization (docs/rate-limits.md): `send`
 * for `POST /send`, `/send/template` and `/send/media`; `general` for every other route. A
 * request counts in one bucket only.
 *
 * @category models
 */
export type RateLimitBucket = "general" | "send"

/**
 * The limit of one bucket: at most `max` requests (a positive integer) per fixed window of
 * `windowMs` milliseconds (a positive integer).
 *
 * @category models
 */
export interface BucketLimit {
  readonly max: number
  readonly windowMs: number
}

/**
 * What the limiter does when its store fails or does not answer within `storeTimeoutMs`
 * (docs/rate-limits.md): `fail-open` lets the request through uncounted and logs a
 * warning; `fail-closed` refuses it with `RateLimitUnavailable` (HTTP 503).
 *
 * @category models
 */
export type OnStoreError = "fail-open" | "fail-closed"

/**
 * Options of the rate limiter; every field is optional and defaults to
 * {@link DEFAULT_RATE_LIMITS}:
 * - `general`, `send`: the limit of each bucket (a partial object keeps the other field's
 *   default);
 * - `onStoreError`: {@link OnStoreError}, default `fail-open`;
 * - `storeTimeoutMs`: longest wait for the store's answer, in milliseconds (a positive
 *   integer), default 1000; a store that takes longer counts as failed.
 *
 * @category models
 */
export interface RateLimitOptions {
  readonly general?: Partial<BucketLimit>
  readonly send?: Partial<BucketLimit>
  readonly onStoreError?: OnStoreError
  readonly storeTimeoutMs?: number
}

/**
 * {@link RateLimitOptions} with every default applied and checked.
 *
 * @category models
 */
export interface RateLimitSettings {
  readonly general: BucketLimit
  readonly send: BucketLimit
  readonly onStoreError: OnStoreError
  readonly storeTimeoutMs: number
}

/**
 * The defaults of docs/rate-limits.md: general 5000 requests per 3 600 000 ms (one
 * hour), send 500 per 3 600 000 ms, `fail-open`, a 1000 ms store timeout.
 *
 * @category models
 */
export const DEFAULT_RATE_LIMITS: RateLimitSettings = {
  general: { max: 5000, windowMs: 3_600_000 },
  send: { max: 500, windowMs: 3_600_000 },
  onStoreError: "fail-open",
  storeTimeoutMs: 1000
}

/**
 * Who a request is counted for: the authenticated organization (docs/rate-limits.md), or, on the
 * unauthenticated routes, the client's network address (docs/rate-limits.md). `id` is
 * the organization id or the address.
 *
 * @category models
 */
export interface RateLimitSubject {
  readonly kind: "organization" | "client"
  readonly id: string
}

/**
 * The limiter's answer for one counted request (docs/rate-limits.md):
 * - `allowed`: whether the request is within the limit;
 * - `limit`: the bucket's `max`;
 * - `remaining`: requests left in the current window after this one (0 or more);
 * - `resetSeconds`: whole seconds until the window ends, rounded up (at least 1);
 * - `retryAfterSeconds`: when refused, whole seconds to wait (= `resetSeconds`); 0 when
 *   allowed.
 *
 * @category models
 */
export interface RateLimitDecision {
  readonly bucket: RateLimitBucket
  readonly allowed: boolean
  readonly limit: number
  readonly remaining: number
  readonly resetSeconds: number
  readonly retryAfterSeconds: number
}

/**
 * The fixed window containing `nowMs` (docs/rate-limits.md): windows are
 * aligned to `floor(now / windowMs)`, so every instance agrees on them without talking.
 * Returns the window's first millisecond and its end (exclusive), both in ms since the
 * epoch.
 *
 * @category models
 */
export const rateLimitWindowAt = (nowMs: number, windowMs: number): { readonly start: number; readonly end: number } => {
  const start = Math.floor(nowMs / windowMs) * windowMs
  return { start, end: start + windowMs }
}

/**
 * The decision for the `count`-th request of a window ending at `windowEndMs`, at `nowMs`
 * (the one place the rule is written): allowed while `count ≤ limit.max`.
 *
 * @category models
 */
export const decideRateLimit = (
  bucket: RateLimitBucket,
  limit: BucketLimit,
  count: number,
  nowMs: number,
  windowEndMs: number
): RateLimitDecision => {
  const allowed = count <= limit.max
  const resetSeconds = Math.max(1, Math.ceil((windowEndMs - nowMs) / 1000))
  return {
    bucket,
    allowed,
    limit: limit.max,
    remaining: Math.max(0, limit.max - count),
    resetSeconds,
    retryAfterSeconds: allowed ? 0 : resetSeconds
  }
}

/**
 * Applies the defaults to `options` and checks them: `max`, `windowMs` and
 * `storeTimeoutMs` must be positive integers, `onStoreError` one of {@link OnStoreError}.
 * Fails with `InvalidInput` listing every bad field (`general.max`, `send.windowMs`,
 * `storeTimeoutMs`, …).
 *
 * @category models
 */
export const resolveRateLimitOptions = (
  options: RateLimitOptions = {}
): Either.Either<RateLimitSettings, InvalidInput> => {
  const settings: RateLimitSettings = {
    general: { ...DEFAULT_RATE_LIMITS.general, ...definedFields(options.general) },
    send: { ...DEFAULT_RATE_LIMITS.send, ...definedFields(options.send) },
    onStoreError: options.onStoreError ?? DEFAULT_RATE_LIMITS.onStoreError,
    storeTimeoutMs: options.storeTimeoutMs ?? DEFAULT_RATE_LIMITS.storeTimeoutMs
  }
  const issues: Array<InputIssue> = []
  const positive = (field: string, value: number) => {
    if (!(Number.isSafeInteger(value) && value > 0)) {
      issues.push({ code: "out_of_range", field, message: `${field} must be a positive integer (got ${value})` })
    }
  }
  for (const bucket of ["general", "send"] as const) {
    positive(`${bucket}.max`, settings[bucket].max)
    positive(`${bucket}.windowMs`, settings[bucket].windowMs)
  }
  positive("storeTimeoutMs", settings.storeTimeoutMs)
  if (settings.onStoreError !== "fail-open" && settings.onStoreError !== "fail-closed") {
    issues.push({
      code: "invalid_format",
      field: "onStoreError",
      message: `onStoreError must be "fail-open" or "fail-closed" (got ${String(settings.onStoreError)})`
    })
  }
  return issues.length > 0 ? Either.left(new InvalidInput({ issues })) : Either.right(settings)
}

/** `limit` without its `undefined` fields, so they do not hide the defaults. */
const definedFields = (limit: Partial<BucketLimit> | undefined): Partial<BucketLimit> =>
  Object.fromEntries(Object.entries(limit ?? {}).filter(([, value]) => value !== undefined))

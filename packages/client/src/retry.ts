/** The retry rules of the client (docs/client.md "Retries"). */

/**
 * The first backoff delay, in milliseconds; it doubles at each retry.
 *
 * @category retries
 */
export const BACKOFF_BASE_MS = 500
/**
 * The longest backoff delay, in milliseconds (before jitter).
 *
 * @category retries
 */
export const BACKOFF_CAP_MS = 8_000

/**
 * The backoff delay before retry number `retry` (1 for the first), in milliseconds:
 * `min(500 · 2^(retry-1), 8000)` times a jitter factor in [0.5, 1) from `random`.
 *
 * @category retries
 */
export const backoffDelayMs = (retry: number, random: () => number = Math.random): number =>
  Math.min(BACKOFF_BASE_MS * 2 ** (retry - 1), BACKOFF_CAP_MS) * (0.5 + random() / 2)

/**
 * The delay an answer asks for, in milliseconds: `Retry-After` (seconds, or an HTTP date),
 * else `RateLimit-Reset` (seconds); `undefined` when neither is a usable value.
 *
 * @category retries
 */
export const serverDelayMs = (headers: Headers, now: number = Date.now()): number | undefined => {
  const retryAfter = headers.get("retry-after")
  if (retryAfter !== null) {
    const seconds = Number(retryAfter)
    if (retryAfter.trim() !== "" && Number.isFinite(seconds) && seconds >= 0) return seconds * 1000
    const date = Date.parse(retryAfter)
    if (Number.isFinite(date)) return Math.max(0, date - now)
  }
  const reset = headers.get("ratelimit-reset")
  if (reset !== null) {
    const seconds = Number(reset)
    if (reset.trim() !== "" && Number.isFinite(seconds) && seconds >= 0) return seconds * 1000
  }
  return undefined
}

/**
 * What happened to one attempt, as far as retrying is concerned.
 *
 * @category retries
 */
export type AttemptOutcome =
  | { readonly _tag: "Answer"; readonly status: number; readonly code: string | undefined }
  /** `fetch` threw before the request reached the server (connection refused). */
  | { readonly _tag: "NotSent" }
  /** `fetch` threw, or timed out, after the request may have reached the server. */
  | { readonly _tag: "Unknown" }

/**
 * Whether an attempt may be retried: 429 and 503 for every request; 409
 * `idempotency_key_in_progress`; a request that never reached the server (connection
 * refused) for every request; any other 5xx, a broken connection or a timeout only for
 * `GET`, `PUT`, `DELETE` and a `POST` carrying an `Idempotency-Key` (`replayable`).
 *
 * @category retries
 */
export const isRetryable = (outcome: AttemptOutcome, replayable: boolean): boolean => {
  switch (outcome._tag) {
    case "NotSent":
      return true
    case "Unknown":
      return replayable
    case "Answer":
      if (outcome.status === 429 || outcome.status === 503) return true
      if (outcome.status === 409) return outcome.code === "idempotency_key_in_progress"
      return outcome.status >= 500 && replayable
  }
}

/**
 * A well-formed `Idempotency-Key`: 1–255 visible ASCII characters (`!` to `~`), no spaces
 * (docs/messaging.md "Idempotency-Key").
 *
 * @category idempotency
 */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/

/**
 * How long a finished request's response is kept and replayed: 24 hours, in ms.
 *
 * @category idempotency
 */
export const IDEMPOTENCY_RECORD_TTL_MS = 24 * 60 * 60 * 1000

/**
 * How long a claim holds while its request runs, in ms (60 s): a claim whose process died
 * is taken over by a retry after that, which answers what the first attempt created (the
 * record's `resource_uuid`) instead of creating it again.
 *
 * @category idempotency
 */
export const IDEMPOTENCY_LOCK_MS = 60_000

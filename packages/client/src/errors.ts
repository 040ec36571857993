/**
 * The errors the client throws (docs/client.md "Errors"): {@link ApiError} and its subclasses
 * for an answer of the API that is not a success, {@link ConnectionError} (and
 * {@link TimeoutError}) when no answer came, {@link WebhookVerificationError} from
 * `verifyWebhook`.
 */

/**
 * One entry of the envelope's `errors` list: a stable snake_case `code`, a message, the offending field's JSON path.
 *
 * @category errors
 */
export interface ApiErrorItem {
  readonly code: string
  readonly message: string
  readonly field?: string
}

/**
 * What every {@link ApiError} is built from.
 *
 * @category errors
 */
export interface ApiErrorInit {
  /** The HTTP status of the answer. */
  readonly status: number
  /** The envelope's `message` (or the status line when the body was not an envelope). */
  readonly message: string
  /** The envelope's `errors` list (empty when the body was not an envelope). */
  readonly errors: ReadonlyArray<ApiErrorItem>
  /** The answer's `X-Request-Id` header, `undefined` when it had none. */
  readonly requestId: string | undefined
  /** The answer's headers. */
  readonly headers: Headers
}

/**
 * An answer of the API that is not a success. `status` is the HTTP status, `code` the first
 * error's code (`"unknown_error"` when the body was not an envelope), `errors` the
 * envelope's list, `requestId` the answer's `X-Request-Id` (quote it when reporting a
 * problem). The subclasses by status: {@link AuthenticationError} (401),
 * {@link PermissionError} (403), {@link NotFoundError} (404), {@link ConflictError} (409),
 * {@link ValidationError} (400, 422), {@link RateLimitError} (429); any other status is an
 * `ApiError` itself.
 *
 * @category errors
 */
export class ApiError extends Error {
  override readonly name: string = "ApiError"
  readonly status: number
  readonly code: string
  readonly errors: ReadonlyArray<ApiErrorItem>
  readonly requestId: string | undefined
  readonly headers: Headers

  constructor(init: ApiErrorInit) {
    super(init.message)
    this.status = init.status
    this.errors = init.errors
    this.code = init.errors[0]?.code ?? "unknown_error"
    this.requestId = init.requestId
    this.headers = init.headers
  }
}

/**
 * 401: the API key is missing, malformed, revoked or expired.
 *
 * @category errors
 */
export class AuthenticationError extends ApiError {
  override readonly name: string = "AuthenticationError"
}

/**
 * 403: the key is valid but the organization may not do this (a suspended organization, a plan limit).
 *
 * @category errors
 */
export class PermissionError extends ApiError {
  override readonly name: string = "PermissionError"
}

/**
 * 404: the record (or route) does not exist for this organization.
 *
 * @category errors
 */
export class NotFoundError extends ApiError {
  override readonly name: string = "NotFoundError"
}

/**
 * 409: the record is not in a state that allows the action, or a request with the same `Idempotency-Key` is still running.
 *
 * @category errors
 */
export class ConflictError extends ApiError {
  override readonly name: string = "ConflictError"
}

/**
 * 400 or 422: the request was refused as it is; `errors` lists every problem with its `field`.
 *
 * @category errors
 */
export class ValidationError extends ApiError {
  override readonly name: string = "ValidationError"
}

/**
 * 429: the organization's rate limit is spent. `retryAfter` is the server's `Retry-After`
 * in seconds (`undefined` when absent). Thrown once the client's retries are used up.
 *
 * @category errors
 */
export class RateLimitError extends ApiError {
  override readonly name: string = "RateLimitError"
  readonly retryAfter: number | undefined

  constructor(init: ApiErrorInit) {
    super(init)
    const header = init.headers.get("retry-after")
    const seconds = header === null ? Number.NaN : Number(header)
    this.retryAfter = Number.isFinite(seconds) ? seconds : undefined
  }
}

/**
 * No answer came from the server: the connection was refused or broken, or DNS failed.
 * `cause` is what `fetch` threw. Thrown once the client's retries are used up (or at once
 * when the request may not be retried, see docs/client.md "Retries").
 *
 * @category errors
 */
export class ConnectionError extends Error {
  override readonly name: string = "ConnectionError"

  constructor(message: string, options?: { readonly cause?: unknown }) {
    super(message, options)
  }
}

/**
 * No answer within the call's `timeoutMs`.
 *
 * @category errors
 */
export class TimeoutError extends ConnectionError {
  override readonly name: string = "TimeoutError"
}

/**
 * `verifyWebhook` refused a delivery: a header missing, no matching signature, a timestamp out of tolerance, a body that is not JSON.
 *
 * @category errors
 */
export class WebhookVerificationError extends Error {
  override readonly name: string = "WebhookVerificationError"
}

/**
 * The {@link ApiError} subclass of an answer with `init.status`.
 *
 * @category errors
 */
export const apiErrorOf = (init: ApiErrorInit): ApiError => {
  switch (init.status) {
    case 400:
    case 422:
      return new ValidationError(init)
    case 401:
      return new AuthenticationError(init)
    case 403:
      return new PermissionError(init)
    case 404:
      return new NotFoundError(init)
    case 409:
      return new ConflictError(init)
    case 429:
      return new RateLimitError(init)
    default:
      return new ApiError(init)
  }
}

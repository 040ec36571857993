/** One call of the API with its retries (docs/client.md "Retries and idempotency"). */
import { ApiError, apiErrorOf, type ApiErrorItem, ConnectionError, TimeoutError } from "./errors.js"
import { backoffDelayMs, isRetryable, serverDelayMs, type AttemptOutcome } from "./retry.js"

/**
 * Options of one call; each overrides the client's own for that call.
 *
 * @category requests
 */
export interface RequestOptions {
  /** Aborts the call (its retries included); the call rejects with the signal's reason. */
  readonly signal?: AbortSignal
  /** Milliseconds one attempt may take before it is abandoned (a {@link TimeoutError}); default the client's `timeoutMs`. */
  readonly timeoutMs?: number
  /** Retries after the first attempt; default the client's `maxRetries`. */
  readonly maxRetries?: number
  /** The `Idempotency-Key` of a POST that takes one; default a fresh `crypto.randomUUID()`, kept across the call's retries. */
  readonly idempotencyKey?: string
  /** Extra request headers. */
  readonly headers?: Record<string, string>
}

/**
 * The client's settings that every call uses.
 *
 * @category requests
 */
export interface Transport {
  readonly baseUrl: string
  readonly apiKey: string
  readonly fetch: typeof globalThis.fetch
  readonly maxRetries: number
  readonly timeoutMs: number
  /** Waits `ms` milliseconds or until `signal` aborts (tests replace it). */
  readonly sleep: (ms: number, signal: AbortSignal | undefined) => Promise<void>
}

/**
 * What a call sends.
 *
 * @category requests
 */
export interface Call {
  readonly method: string
  /** The path under `baseUrl` with its parameters filled in, e.g. `/contacts/…`. */
  readonly path: string
  readonly query?: Record<string, unknown> | undefined
  readonly body?: unknown
  /** Whether the operation takes an `Idempotency-Key` header. */
  readonly idempotencyKey: boolean
  /** Whether a success is the JSON envelope (else the `Response` is answered as it is). */
  readonly json: boolean
}

/**
 * A call's success: the envelope's `data` (or the raw `Response`), the answer's `X-Request-Id` and headers.
 *
 * @category requests
 */
export interface Answer {
  readonly data: unknown
  readonly requestId: string | undefined
  readonly response: Response
}

/**
 * Waits `ms` milliseconds; rejects with the signal's reason when it aborts first.
 *
 * @category requests
 */
export const sleep = (ms: number, signal: AbortSignal | undefined): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal?.aborted === true) return reject(signal.reason)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal!.reason)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort)
      resolve()
    }, ms)
    signal?.addEventListener("abort", onAbort, { once: true })
  })

const queryString = (query: Record<string, unknown> | undefined): string => {
  if (query === undefined) return ""
  const search = new URLSearchParams()
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined || value === null) continue
    if (Array.isArray(value)) for (const item of value) search.append(name, String(item))
    else search.append(name, String(value))
  }
  const text = search.toString()
  return text === "" ? "" : `?${text}`
}

/** Whether `body` goes as it is (multipart, bytes, text) rather than as JSON. */
const isRawBody = (body: unknown): boolean =>
  (typeof FormData !== "undefined" && body instanceof FormData) ||
  (typeof Blob !== "undefined" && body instanceof Blob) ||
  body instanceof ArrayBuffer ||
  ArrayBuffer.isView(body) ||
  (typeof URLSearchParams !== "undefined" && body instanceof URLSearchParams) ||
  typeof body === "string"

/** Whether `signal` has aborted (a function, so that TypeScript does not narrow it across an `await`). */
const isAborted = (signal: AbortSignal | undefined): boolean => signal?.aborted === true

/** Whether what `fetch` threw shows the request never left (the connection was refused). */
const neverSent = (error: unknown): boolean => {
  for (let cause: unknown = error, depth = 0; cause !== undefined && cause !== null && depth < 5; depth++) {
    const code = (cause as { code?: unknown }).code
    if (code === "ECONNREFUSED" || code === "ConnectionRefused") return true
    cause = (cause as { cause?: unknown }).cause
  }
  return false
}

/** The envelope of a failed answer as an {@link ApiError}. */
const failureOf = async (response: Response): Promise<ApiError> => {
  const text = await response.text().catch(() => "")
  let envelope: { message?: unknown; errors?: unknown } | undefined
  try {
    envelope = JSON.parse(text) as typeof envelope
  } catch {
    envelope = undefined
  }
  const errors = Array.isArray(envelope?.errors) ? (envelope.errors as Array<ApiErrorItem>) : []
  const message = typeof envelope?.message === "string" ? envelope.message : `HTTP ${response.status} ${response.statusText}`.trim()
  return apiErrorOf({ status: response.status, message, errors, requestId: response.headers.get("x-request-id") ?? undefined, headers: response.headers })
}

/**
 * Sends `call` and answers its success, retrying as docs/client.md "Retries" says: at most
 * `maxRetries` more attempts, each after the server's `Retry-After` (or `RateLimit-Reset`)
 * on 429 and 503, else after {@link backoffDelayMs}. A POST that takes an `Idempotency-Key`
 * sends the same key on every attempt. Rejects with an {@link ApiError} subclass,
 * a {@link ConnectionError} or {@link TimeoutError}, or the signal's reason when aborted.
 *
 * @category requests
 */
export const request = async (transport: Transport, call: Call, options: RequestOptions = {}): Promise<Answer> => {
  const maxRetries = options.maxRetries ?? transport.maxRetries
  const timeoutMs = options.timeoutMs ?? transport.timeoutMs
  const method = call.method.toUpperCase()
  const idempotencyKey = call.idempotencyKey && method === "POST" ? options.idempotencyKey ?? globalThis.crypto.randomUUID() : undefined
  const replayable = method === "GET" || method === "PUT" || method === "DELETE" || idempotencyKey !== undefined
  const headers: Record<string, string> = { accept: "application/json", ...options.headers, authorization: `Bearer ${transport.apiKey}` }
  if (idempotencyKey !== undefined) headers["idempotency-key"] = idempotencyKey
  let body: RequestInit["body"] | undefined
  if (call.body !== undefined) {
    if (isRawBody(call.body)) body = call.body as RequestInit["body"]
    else {
      body = JSON.stringify(call.body)
      headers["content-type"] = "application/json"
    }
  }
  const url = `${transport.baseUrl.replace(/\/+$/, "")}${call.path}${queryString(call.query)}`
  const label = `${method} ${call.path}`
  for (let attempt = 0; ; attempt++) {
    if (isAborted(options.signal)) throw options.signal!.reason
    const result = await attemptOnce(transport, url, { method, headers, body: body ?? null }, call.json, label, timeoutMs, options.signal)
    if (result._tag === "Success") return result.answer
    if (attempt >= maxRetries || !isRetryable(result.outcome, replayable)) throw result.failure
    await transport.sleep(result.delayMs ?? backoffDelayMs(attempt + 1), options.signal)
  }
}

/** One attempt's result: the success, or the failure with what retrying needs to know. */
type AttemptResult =
  | { readonly _tag: "Success"; readonly answer: Answer }
  | { readonly _tag: "Failure"; readonly outcome: AttemptOutcome; readonly failure: Error; readonly delayMs: number | undefined }

/**
 * Sends one attempt, abandoned after `timeoutMs` or when `signal` aborts (then it rejects
 * with the signal's reason); never rejects otherwise.
 */
const attemptOnce = async (
  transport: Transport,
  url: string,
  init: { readonly method: string; readonly headers: Record<string, string>; readonly body: RequestInit["body"] },
  json: boolean,
  label: string,
  timeoutMs: number,
  signal: AbortSignal | undefined
): Promise<AttemptResult> => {
  const controller = new AbortController()
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    controller.abort()
  }, timeoutMs)
  const onAbort = () => controller.abort(signal!.reason)
  signal?.addEventListener("abort", onAbort, { once: true })
  try {
    const response = await transport.fetch(url, { ...init, signal: controller.signal })
    const requestId = response.headers.get("x-request-id") ?? undefined
    if (response.ok) {
      const data = json ? ((await response.json()) as { data?: unknown }).data : response
      return { _tag: "Success", answer: { data, requestId, response } }
    }
    const failure = await failureOf(response)
    const delayMs = response.status === 429 || response.status === 503 ? serverDelayMs(response.headers) : undefined
    return { _tag: "Failure", outcome: { _tag: "Answer", status: response.status, code: failure.errors[0]?.code }, failure, delayMs }
  } catch (error) {
    if (isAborted(signal)) throw signal!.reason
    if (timedOut) return { _tag: "Failure", outcome: { _tag: "Unknown" }, failure: new TimeoutError(`${label}: no answer within ${timeoutMs} ms`), delayMs: undefined }
    const failure = new ConnectionError(`${label}: ${(error as Error)?.message ?? String(error)}`, { cause: error })
    return { _tag: "Failure", outcome: neverSent(error) ? { _tag: "NotSent" } : { _tag: "Unknown" }, failure, delayMs: undefined }
  } finally {
    clearTimeout(timer)
    signal?.removeEventListener("abort", onAbort)
  }
}

/**
 * Where Meta's Graph API is reached, shared by the WhatsApp Cloud API transport and the
 * channel verifier (docs/channels.md "Verification", docs/messaging.md "Transports"):
 * - `baseUrl`: default {@link DEFAULT_GRAPH_BASE_URL} (tests point it at a local recorder);
 * - `apiVersion`: default {@link DEFAULT_GRAPH_API_VERSION};
 * - `timeoutMs`: per request, default 10 000 ms.
 *
 * @category messaging
 */
export interface GraphApiOptions {
  readonly baseUrl?: string
  readonly apiVersion?: string
  readonly timeoutMs?: number
}

/**
 * The Graph API's address when none is configured.
 *
 * @category messaging
 */
export const DEFAULT_GRAPH_BASE_URL = "https://graph.facebook.com"

/**
 * The Graph API version used when none is configured.
 *
 * @category messaging
 */
export const DEFAULT_GRAPH_API_VERSION = "v21.0"

/**
 * How long one Graph request may take when `timeoutMs` is not given, in ms.
 *
 * @category messaging
 */
export const DEFAULT_GRAPH_TIMEOUT_MS = 10_000

/**
 * undici's codes of a request that ran out of time (no headers, or the body stalled, within
 * the timeout): they are reported as `TimeoutError`, as `fetch`'s abort by
 * `AbortSignal.timeout` is.
 */
const UNDICI_TIMEOUT_CODES: ReadonlyArray<string> = ["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]

/** Whether `error` is a request's timeout: `fetch`'s `TimeoutError` or undici's timeout codes. */
const isTimeout = (error: Error): boolean =>
  error.name === "TimeoutError" || UNDICI_TIMEOUT_CODES.includes(codeOf(error) ?? "")

/**
 * The URL `{baseUrl}/{apiVersion}/{segments…}` (each segment URL-encoded, trailing
 * slashes of `baseUrl` dropped), for example `graphUrl({}, "1234", "messages")` →
 * `https://graph.facebook.com/v21.0/1234/messages`.
 *
 * @category messaging
 */
export const graphUrl = (options: GraphApiOptions, ...segments: ReadonlyArray<string>): string =>
  `${graphBaseUrl(options)}/${options.apiVersion ?? DEFAULT_GRAPH_API_VERSION}/${segments
    .map(encodeURIComponent)
    .join("/")}`

/**
 * The base URL requests go to (`baseUrl` without trailing slashes, else
 * {@link DEFAULT_GRAPH_BASE_URL}), as failures name it.
 *
 * @category messaging
 */
export const graphBaseUrl = (options: GraphApiOptions): string =>
  (options.baseUrl ?? DEFAULT_GRAPH_BASE_URL).replace(/\/+$/, "")

/**
 * Why a Graph request never got an answer, naming the base URL it tried and the network
 * error, under `fetch`'s own "fetch failed" when it came from `fetch` (for example
 * `Meta's Graph API at http://127.0.0.1:9 could not be reached (fetch failed: connect
 * ECONNREFUSED 127.0.0.1:9)`; from undici's `request`, without "fetch failed: "),
 * or the timeout (docs/channels.md "Verification", docs/messaging.md "Failures").
 *
 * @category messaging
 */
export const graphUnreachable = (options: GraphApiOptions, error: unknown): string =>
  `Meta's Graph API at ${graphBaseUrl(options)} could not be reached (${describeFetchError(error)})`

/**
 * An HTTP answer without Meta's error object, naming the base URL: `Meta's Graph API at
 * <base> answered HTTP <status>`.
 *
 * @category messaging
 */
export const graphAnsweredStatus = (options: GraphApiOptions, status: number): string =>
  `Meta's Graph API at ${graphBaseUrl(options)} answered HTTP ${status}`

/**
 * The code of the network error under a failed Graph request, for the classes of failure
 * (docs/messaging.md "Classes of failure"): `TimeoutError` for the request's timeout
 * (`fetch`'s abort by {@link graphSignal}, or undici's `UND_ERR_HEADERS_TIMEOUT` /
 * `UND_ERR_BODY_TIMEOUT`); else the socket error's code, in `error.cause` under `fetch`
 * or on the error itself from undici's `request` (`ECONNREFUSED`, `ENOTFOUND`,
 * `UND_ERR_CONNECT_TIMEOUT`, `UND_ERR_SOCKET`, `ECONNRESET`…); else `null`.
 *
 * @category messaging
 */
export const networkErrorCode = (error: unknown): string | null => {
  if (!(error instanceof Error)) return null
  if (isTimeout(error)) return "TimeoutError"
  const cause = (error as { cause?: unknown }).cause
  return codeOf(cause) ?? codeOf(error)
}

const codeOf = (error: unknown): string | null => {
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined
  return typeof code === "string" && code !== "" ? code : null
}

/** `fetch`'s message with its cause's (undici puts the socket error there): `fetch failed: connect ECONNREFUSED …`. */
const describeFetchError = (error: unknown): string => {
  if (!(error instanceof Error)) return String(error)
  if (isTimeout(error)) return `no answer within the timeout: ${error.message}`
  const cause = (error as { cause?: unknown }).cause
  return cause instanceof Error && cause.message !== "" ? `${error.message}: ${cause.message}` : error.message
}

/**
 * The abort signal of one Graph request: the caller's `signal` or the timeout
 * (`timeoutMs`, default 10 000 ms), whichever comes first.
 *
 * @category messaging
 */
export const graphSignal = (options: GraphApiOptions, signal: AbortSignal): AbortSignal =>
  AbortSignal.any([signal, AbortSignal.timeout(options.timeoutMs ?? DEFAULT_GRAPH_TIMEOUT_MS)])

/**
 * `text` with every occurrence of `secret` (an access token) replaced by `[redacted]`, so
 * no failure's message can carry it; an empty `secret` leaves `text` as it is.
 *
 * @category messaging
 */
export const withoutSecret = (text: string, secret: string): string =>
  secret === "" ? text : text.split(secret).join("[redacted]")

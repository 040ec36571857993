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
 * The URL `{baseUrl}/{apiVersion}/{segments…}` (each segment URL-encoded, trailing
 * slashes of `baseUrl` dropped), for example `graphUrl({}, "1234", "messages")` →
 * `https://graph.facebook.com/v21.0/1234/messages`.
 *
 * @category messaging
 */
export const graphUrl = (options: GraphApiOptions, ...segments: ReadonlyArray<string>): string =>
  `${(options.baseUrl ?? DEFAULT_GRAPH_BASE_URL).replace(/\/+$/, "")}/${options.apiVersion ?? DEFAULT_GRAPH_API_VERSION}/${segments
    .map(encodeURIComponent)
    .join("/")}`

/**
 * The abort signal of one Graph request: the caller's `signal` or the timeout
 * (`timeoutMs`, default 10 000 ms), whichever comes first.
 *
 * @category messaging
 */
export const graphSignal = (options: GraphApiOptions, signal: AbortSignal): AbortSignal =>
  AbortSignal.any([signal, AbortSignal.timeout(options.timeoutMs ?? 10_000)])

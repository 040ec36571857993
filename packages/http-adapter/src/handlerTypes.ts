import type { Readable } from "node:stream"
import type { Layer, Logger } from "effect"
import type { ChannelVerifier, GraphApiOptions, MessageTransport, MetaTemplateApi, RateLimitDecision, Storage } from "@switchboard/core"
import type { HandlerMediaOptions } from "./mediaOptions.js"
import type { DispatchSwitches, SendQueueHandlerOptions, TemplateSyncHandlerOptions } from "./dispatchers.js"
import type { ApiResponse } from "./envelope.js"
import type { HandlerMetrics } from "./handlerMetrics.js"
import type { HandlerTracing } from "./handlerTracing.js"
import type { HealthReport } from "./health.js"
import type { BodySource } from "./internal/body.js"
import type { HandlerLogLevel } from "./logLevel.js"
import type { RateLimitHandlerOptions } from "./rateLimiting.js"
import type { RouteDefinition } from "./routes/route.js"
import type { WhatsAppWebhookOptions } from "./settings.js"
import type { WebhookHandlerOptions } from "./webhooks.js"
import type { SecretKeyOption } from "./internal/channelOptions.js"

// The handler's options and the types of one exchange (a request and its answer as the
// handler core sees them, whatever the host). Types only: the handler (handler.ts), the
// request pipeline (pipeline.ts) and the host adapters (fetchHandler.ts,
// internal/nodeResponse.ts) import them, and this module imports none of them.

/**
 * Options of {@link createHandler}.
 *
 * @category handler
 */
export interface HandlerOptions {
  /** The storage adapter's Layer, for example `SqliteStorage.layer({ filename })`. */
  readonly storage: Layer.Layer<Storage, unknown>
  /** Path prefix of every route. Default `/api/v1/api` (docs/http-api.md "Base path and version"). */
  readonly basePath?: string
  /** Largest accepted request body, in bytes. Default 1 MiB (1 048 576). */
  readonly bodyLimit?: number
  /**
   * The WhatsApp webhook's secrets (docs/whatsapp-webhooks.md): `appSecret` (one, several,
   * or a comma-separated list) signs Meta's POSTs, `verifyToken` answers the subscription
   * handshake. Without them those requests are refused.
   */
  readonly whatsapp?: WhatsAppWebhookOptions
  /**
   * Media (docs/media.md): the blob store files are kept in, the inbound fetches' settings
   * and the origin of signed links. Without it the media routes answer 503
   * `media_not_configured`.
   */
  readonly media?: HandlerMediaOptions
  /**
   * Logger of the one-line-per-request logs (docs/http-adapter.md "Every response"). Default Effect's
   * JSON logger on stdout; `false` silences them.
   */
  readonly logger?: Logger.Logger<unknown, unknown> | false
  /**
   * Receives each request's one log line as plain data ({@link RequestLogLine}) instead of
   * `logger` (docs/http-adapter.md "Every response"): no Effect `Logger.Options` (annotation
   * `HashMap`, `Date`) is built per request, the cheapest path (docs/benchmarks.md), the one
   * the standalone server takes. `logger` still receives every other line (storage
   * failures, defects); `logger: false` does not silence this one. A function that throws
   * loses the line, never the response. Default: request lines go to `logger`.
   */
  readonly requestLog?: (line: RequestLogLine) => void
  /**
   * The least severe line written, to `logger` and `requestLog` alike (docs/http-adapter.md
   * "Log level"): `"debug"`, `"info"` (default), `"warn"` or `"error"`. At `warn` and
   * `error` only the request lines of 5xx answers (level ERROR) are written. Anything else
   * throws a `TypeError` when the handler is created.
   */
  readonly logLevel?: HandlerLogLevel
  /** The route table. Default {@link defaultRoutes}; tests and extensions may pass their own. */
  readonly routes?: ReadonlyArray<RouteDefinition>
  /**
   * Rate limits (docs/rate-limits.md): limits per bucket, store failure policy, store
   * timeout and the counters' store (default in memory, per handler). See
   * {@link RateLimitHandlerOptions}.
   */
  readonly rateLimit?: RateLimitHandlerOptions
  /**
   * Whether to key unauthenticated requests by the first `X-Forwarded-For` address (set it
   * only behind a proxy that overwrites that header). Default `false`: the socket address.
   */
  readonly trustProxy?: boolean
  /**
   * How sends reach the messaging provider (docs/messaging.md "Transports"), for example
   * `WhatsAppCloudTransport.layer({ phoneNumberId, accessToken })`; it receives each
   * message's `channel` (the organization's own number) and must send through it. Default:
   * a message with a channel goes through the WhatsApp Cloud API at `graphApi` with that
   * channel's number and token; one without is recorded (stored and marked `sent`, no network).
   */
  readonly transport?: Layer.Layer<MessageTransport>
  /**
   * Where Meta's Graph API is reached (`baseUrl`, default `https://graph.facebook.com`;
   * `apiVersion`, default `v21.0`; `timeoutMs`): for the default transport's channel sends,
   * the default channel verifier and Meta's template API (`POST /templates`,
   * `DELETE /templates/{uuid}`). Tests point it at a local recorder.
   */
  readonly graphApi?: GraphApiOptions
  /**
   * The 32-byte key (base64, hex or bytes) encrypting channel access tokens and webhook
   * signing secrets; without it the channel routes answer 503. Several keys (a
   * comma-separated string `"new,old"`, or a list) while rotating the key: the first
   * encrypts, every one decrypts (docs/deployment.md "Rotating the secret key").
   * Malformed → throws here; none of them the store's key → `ready` rejects.
   * docs/channels.md "The secret key".
   */
  readonly secretKey?: SecretKeyOption
  /** How `POST /channels` verifies tokens. Default Meta's Graph API; docs/channels.md "Verification". */
  readonly channelVerifier?: Layer.Layer<ChannelVerifier>
  /**
   * How the template sync reads Meta's templates (docs/templates-and-replies.md "Templates
   * from Meta"). Default Meta's Graph API at `graphApi`; tests give their own
   * (`Layer.succeed(MetaTemplateApi, { list, submit, remove })`).
   */
  readonly metaTemplateApi?: Layer.Layer<MetaTemplateApi>
  /**
   * The template sync loop (docs/templates-and-replies.md "Templates from Meta"):
   * `intervalMs`, the time from one sync of an account to its next (default 6 hours). The
   * loop runs unless `dispatch.templates` is `false`. See {@link TemplateSyncHandlerOptions}.
   */
  readonly templateSync?: TemplateSyncHandlerOptions
  /**
   * Outgoing webhooks (docs/webhooks.md "Options"): whether this handler runs the
   * dispatcher (`dispatch`, default `true`: it starts once `ready`, and `dispose()` stops
   * it after the attempts in flight), the retry delays in milliseconds, and whether
   * `http://` URLs and internal addresses are accepted (development and tests only).
   * See {@link WebhookHandlerOptions}; malformed values throw here.
   */
  readonly webhooks?: WebhookHandlerOptions
  /**
   * Which dispatch loops this handler runs once `ready` (docs/messaging.md "The send
   * queue"): `webhooks` (default `webhooks.dispatch`, else `true`), `messages`, the send
   * queue (default `true`), and `templates`, the template sync (default `true`); `dispose()` stops them after the attempts in flight. `false`
   * leaves that work to another process ({@link runDispatchers}).
   */
  readonly dispatch?: DispatchSwitches
  /**
   * The send queue's retry delays, attempt timeout, settle time, expiry and poll interval,
   * in milliseconds (docs/messaging.md "The send queue"); see {@link SendQueueHandlerOptions}.
   * Malformed values throw here.
   */
  readonly sendQueue?: SendQueueHandlerOptions
  /**
   * OpenTelemetry traces (docs/http-adapter.md "Tracing"), made by `openTelemetryTracing`
   * of `@switchboard/http-adapter/tracing`: a span per request, per storage call and per
   * provider call, and one per dispatch job. Default: off, and then nothing is traced or
   * wrapped.
   */
  readonly tracing?: HandlerTracing
  /**
   * Where the handler reports what operators count (docs/http-adapter.md "Metrics"):
   * requests by route, method and status, their durations, message statuses, webhook
   * delivery attempts, Meta's webhook POSTs, 429s, and the send queue read when scraped.
   * `prometheusMetrics(registry)` of `@switchboard/http-adapter/metrics` builds one.
   * Default: none, and nothing is counted.
   */
  readonly metrics?: HandlerMetrics
}

/**
 * One request's log line as plain data, for the `requestLog` option (docs/http-adapter.md
 * "Every response"): the six fields `logger` receives as annotations (`durationMs` and
 * `organizationId` there named `duration_ms` and `organization_id`), the level and the time.
 * Never a key, a token or a body.
 *
 * @category handler
 */
export interface RequestLogLine {
  /** `ERROR` for a 5xx answer, else `INFO`. */
  readonly level: "INFO" | "ERROR"
  readonly method: string
  /** The route's pattern, e.g. `/contacts/:uuid`; `(unmatched)` when no route matched. */
  readonly route: string
  readonly status: number
  /** From the request's arrival to its answer, in milliseconds, rounded to two decimals. */
  readonly durationMs: number
  /**
   * `null` until the request is authenticated; for routes that need no key, the
   * organization the route says it acted for (a WhatsApp webhook routed to one
   * organization), else `null`.
   */
  readonly organizationId: string | null
  /** The `X-Request-Id` of the answer. */
  readonly requestId: string
  /** When the answer was handed to the host, in milliseconds since the epoch (`Date.now()`). */
  readonly timestamp: number
}

/**
 * One request as the handler core sees it, whatever the host (a Node `IncomingMessage`, a
 * Fetch `Request`): method, path with query, header lookup (lower-case names), the client
 * address for unauthenticated rate limiting (computed only when needed) and the body.
 *
 * @internal
 */
export interface CoreRequest {
  readonly method: string
  /** Path and query string as the client sent them, e.g. `/api/v1/api/contacts?page=2`. */
  readonly url: string
  readonly header: (name: string) => string | undefined
  readonly clientAddress: () => string
  readonly body: BodySource
}

/**
 * A response ready for the wire: status, every header (content type, length, request id,
 * rate-limit headers…) and the body text, `undefined` for `HEAD` (or a stream of bytes).
 *
 * @internal
 */
export interface WireResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string | undefined
  /** The bytes of a `BinaryContent` answer (`body` is then `undefined`), piped by the host. */
  readonly stream?: Readable
}

/**
 * The host-independent part of every handler (docs/http-adapter.md): the runtime, the router, the
 * order of checks, the envelope, the request id and the request log. `serve` answers one
 * request through `reply`, exactly once; the returned `interrupt` stops its fiber when the
 * client goes away.
 *
 * @internal
 */
export interface HandlerCore {
  readonly inBasePath: (url: string) => boolean
  readonly serve: (request: CoreRequest, reply: (response: WireResponse) => void) => { readonly interrupt: () => void }
  readonly ready: Promise<void>
  readonly drain: () => Promise<void>
  readonly dispose: () => Promise<void>
  readonly health: () => Promise<HealthReport>
}

/**
 * One request and what is known of it so far, for the response, the log line and the
 * request span: made by the handler core for each request, filled in by the request
 * pipeline (pipeline.ts).
 *
 * @internal
 */
export interface Exchange {
  readonly request: CoreRequest
  readonly requestId: string
  readonly startedAt: number
  route: string
  organizationId: string | undefined
  /** The limiter's decision once the request passed it (for the `RateLimit-*` headers). */
  rateLimit: RateLimitDecision | undefined
  /** The answer, from the end of the request's fiber until its observer writes it. */
  response: ApiResponse | undefined
  /** Whether the response was handed to the host (a request is answered once). */
  replied: boolean
}

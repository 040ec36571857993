import type { IncomingMessage, ServerResponse } from "node:http"
import { randomUUID } from "node:crypto"
import { Cause, Effect, Exit, FiberId, FiberRefs, HashMap, Layer, List, Logger, LogLevel, ManagedRuntime } from "effect"
import { effectLogLevelOf, type HandlerLogLevel } from "./logLevel.js"
import {
  type ChannelVerifier,
  Core,
  DispatchWake,
  type DomainError,
  type GraphApiOptions,
  Organizations,
  type MessageTransport,
  type AuthenticatedOrganization,
  type RateLimitDecision,
  type RateLimiter,
  type Storage,
  wakeOnEnqueue
} from "@switchboard/core"
import { failureResponse, type ApiResponse } from "./envelope.js"
import { internalErrorResponse, responseForDomainError } from "./errorMapping.js"
import { HttpFailure } from "./HttpFailure.js"
import { readApiKey } from "./internal/authorization.js"
import { channelLayerOf, transportLayerOf } from "./internal/channelOptions.js"
import { fingerprintOf, readIdempotencyKey, withIdempotencyKey } from "./idempotency.js"
import {
  nodeBodySource,
  parseJsonBody,
  readJsonBody,
  readRawBody,
  type BodySource,
  type HostRequest
} from "./internal/body.js"
import { writeResponse } from "./internal/nodeResponse.js"
import { nulInParameters, readQuery, repeatedParameters, type Query } from "./internal/query.js"
import { makeSharedScheduler } from "./internal/scheduler.js"
import { NO_AUTHENTICATION } from "./internal/unauthenticated.js"
import { isPlainObject, type CompiledCheck } from "./internal/validation.js"
import {
  clientAddressOf,
  limitRequest,
  rateLimiterLayer,
  rateLimitHeadersInto,
  type RateLimitHandlerOptions
} from "./rateLimiting.js"
import { makeRouter, type CompiledRoute } from "./router.js"
import { defaultRoutes } from "./routes/index.js"
import { responseOfResult, type RouteDefinition, type RouteIdempotency, type RouteServices } from "./routes/route.js"
import { handlerSettingsLayer, type WhatsAppWebhookOptions } from "./settings.js"
import { webhookSettingsLayerOf, type WebhookHandlerOptions } from "./webhooks.js"
import { type DispatchSwitches, drainBoundMs, sendQueueSettingsLayerOf, type SendQueueHandlerOptions, startDispatchers } from "./dispatchers.js"
import type { HealthReport } from "./health.js"
import type { HandlerTracing } from "./handlerTracing.js"
import { requestSpanOf, tracingLayerOf, withTracing } from "./internal/tracing.js"
import { type HandlerMetrics, meteredStorageLayerOf, metricsRecorderLayerOf, withRequestMetrics } from "./handlerMetrics.js"
import { handlerShutdown, type RequestsInFlight } from "./internal/shutdown.js"

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
   * `apiVersion`, default `v21.0`; `timeoutMs`): for the default transport's channel sends
   * and the default channel verifier. Tests point it at a local recorder.
   */
  readonly graphApi?: GraphApiOptions
  /**
   * The 32-byte key (base64, hex or bytes) encrypting channel access tokens; without it the
   * channel routes answer 503. Malformed → throws here; not the store's key → `ready`
   * rejects. docs/channels.md "The secret key".
   */
  readonly secretKey?: string | Uint8Array
  /** How `POST /channels` verifies tokens. Default Meta's Graph API; docs/channels.md "Verification". */
  readonly channelVerifier?: Layer.Layer<ChannelVerifier>
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
   * queue"): `webhooks` (default `webhooks.dispatch`, else `true`) and `messages`, the send
   * queue (default `true`); `dispose()` stops them after the attempts in flight. `false`
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
 * A Node request listener serving the API, usable as a `node:http` listener and as
 * Express/Connect middleware (`next` is called for paths outside the base path).
 *
 * @category handler
 */
export interface SwitchboardHandler {
  (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void): void
  /** Resolves when the storage Layer is built; rejects with its error. */
  readonly ready: Promise<void>
  /**
   * Stops the dispatch loops (docs/http-adapter.md "Stopping"): they claim nothing more and
   * record the outcome of the attempts in flight, waiting at most the longer attempt timeout
   * (the send queue's `timeoutMs`, webhooks' 10 s) + 2 s. Requests are still served; call it
   * when shutting down, before the server has finished its requests.
   */
  readonly drain: () => Promise<void>
  /**
   * Releases the runtime: drains the dispatch loops (`drain`) while waiting for the requests
   * still running (at most the send queue's `timeoutMs` + 2 s), then runs the storage's
   * finalizers (closes the database).
   */
  readonly dispose: () => Promise<void>
  /**
   * Checks the store (it answers `Storage.health()` within 1 s; its schema is current) and
   * the dispatch loops this handler runs (each ended a pass within 30 s), as a
   * {@link HealthReport} (docs/http-adapter.md "Health"). Never rejects; answers within
   * about 1 s. Before `ready` the storage check fails with detail `"starting: …"`.
   */
  readonly health: () => Promise<HealthReport>
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
 * The default base path (docs/http-api.md "Base path and version").
 *
 * @category handler
 */
export const DEFAULT_BASE_PATH = "/api/v1/api"

/**
 * Creates the request handler (docs/http-adapter.md) as a Node listener. The runtime, the router and
 * every validator are built once, here; each request runs as one fiber, interrupted when
 * the client goes away. Every response is the envelope with an `X-Request-Id` header.
 * The same core serves {@link createFetchHandler} (Fetch API hosts).
 *
 * Paths outside `basePath` go to `next()` when one is given (Express/Connect), else they
 * are answered 404 `route_not_found`. The path is read from `req.originalUrl` when the host
 * sets it (Express strips its mount prefix from `req.url`), else from `req.url`.
 *
 * @category handler
 * @example
 * import { createServer } from "node:http"
 * import { createHandler } from "@switchboard/http-adapter"
 * import { MemoryStorage } from "@switchboard/core"
 *
 * const handler = createHandler({ storage: MemoryStorage.layer })
 * createServer(handler).listen(3000)
 */
export const createHandler = (options: HandlerOptions): SwitchboardHandler => {
  const core = makeHandlerCore(options)
  const trustProxy = options.trustProxy ?? false

  const listener = (req: HostRequest, res: ServerResponse, next?: (error?: unknown) => void): void => {
    const url = req.originalUrl ?? req.url ?? "/"
    if (next !== undefined && !core.inBasePath(url)) return next()
    const running = core.serve(
      {
        method: req.method ?? "GET",
        url,
        header: (name) => {
          const value = req.headers[name]
          return Array.isArray(value) ? value.join(", ") : value
        },
        clientAddress: () => clientAddressOf(req.headers["x-forwarded-for"], req.socket?.remoteAddress, trustProxy),
        body: nodeBodySource(req)
      },
      (response) => writeResponse(req, res, response)
    )
    res.once("close", () => {
      if (!res.writableFinished) running.interrupt()
    })
  }

  return Object.assign(listener, { ready: core.ready, drain: core.drain, dispose: core.dispose, health: core.health })
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
 * rate-limit headers…) and the body text, `undefined` for `HEAD`.
 *
 * @internal
 */
export interface WireResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string | undefined
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
 * Builds the {@link HandlerCore} of `options`: the runtime (core services on the storage,
 * the rate limiter, the logger), the router and the compiled validators, once.
 *
 * @internal
 */
export const makeHandlerCore = (given: HandlerOptions): HandlerCore => {
  // With `tracing`, the storage, transport and channel verifier make spans (internal/tracing.ts).
  const options = withTracing(given)
  const basePath = normaliseBasePath(options.basePath ?? DEFAULT_BASE_PATH)
  const bodyLimit = options.bodyLimit ?? 1_048_576
  // One logger for the runtime and, unless `requestLog` takes them, the request lines. A
  // request line is handed over directly, outside the request's fiber: no log fiber, no
  // annotation FiberRefs (docs/benchmarks.md). `logger: false`: none.
  const handlerLogger = handlerLoggerOf(options.logger)
  const logLevel = effectLogLevelOf(options.logLevel)
  const logRequest = withRequestMetrics(requestLoggerOf(options.requestLog, handlerLogger, logLevel), options.metrics)
  const storage = meteredStorageLayerOf(options.storage, options.metrics)
  const runtime = ManagedRuntime.make(
    Core.layerWithTransport(transportLayerOf(options)).pipe(
      // The dispatcher also reads the secret key, the webhook settings and the storage.
      Layer.provideMerge(channelLayerOf(options)),
      Layer.provideMerge(webhookSettingsLayerOf(options.webhooks)),
      Layer.provideMerge(sendQueueSettingsLayerOf(options.sendQueue)),
      // Every write that may enqueue a webhook delivery wakes this handler's dispatcher.
      Layer.provideMerge(wakeOnEnqueue.pipe(Layer.provide(storage), Layer.provideMerge(DispatchWake.layer))),
      Layer.merge(rateLimiterLayer(options.rateLimit)),
      Layer.merge(handlerSettingsLayer(options.whatsapp)),
      Layer.provideMerge(loggerLayer(handlerLogger)),
      Layer.provideMerge(Logger.minimumLogLevel(logLevel)),
      Layer.provideMerge(metricsRecorderLayerOf(options.metrics)),
      // Fibers resumed after an asynchronous step share one queue (internal/scheduler.ts).
      Layer.provideMerge(Layer.setScheduler(makeSharedScheduler())),
      // Built first and closed last: `dispose()` flushes the spans of everything above.
      Layer.provideMerge(tracingLayerOf(options.tracing))
    )
  )
  const traceRequest = options.tracing === undefined ? undefined : requestSpanOf(options.tracing)
  const match = makeRouter(basePath, options.routes ?? defaultRoutes)
  const pathOf = (url: string) => {
    const queryStart = url.indexOf("?")
    return queryStart === -1 ? url : url.slice(0, queryStart)
  }
  const isUnderBasePath = (path: string) => path === basePath || path.startsWith(basePath + "/")
  const inBasePath = (url: string) => isUnderBasePath(pathOf(url))
  // Each request's fiber while it runs: `dispose()` waits for them before closing the runtime.
  const requests: RequestsInFlight = new Set()

  const serve: HandlerCore["serve"] = (request, reply) => {
    const { url, method } = request
    const path = pathOf(url)
    const exchange: Exchange = {
      request,
      requestId: requestIdOf(request.header("x-request-id")),
      startedAt: performance.now(),
      route: "(unmatched)",
      organizationId: undefined,
      rateLimit: undefined,
      response: undefined,
      replied: false
    }
    const send = (response: ApiResponse) => {
      if (exchange.replied) return
      exchange.replied = true
      reply(toWireResponse(exchange, response))
    }
    const found = isUnderBasePath(path) ? match(method, path) : ({ _tag: "NotFound" } as const)
    if (found._tag !== "Found") {
      const response =
        found._tag === "NotFound"
          ? failureResponse(404, "route_not_found", `No route for ${method} ${path}`)
          : failureResponse(405, "method_not_allowed", `Method ${method} is not allowed here`, [], {
              allow: found.allow.join(", ")
            })
      send(response)
      logRequest?.(exchange, response.status)
      return { interrupt: () => undefined }
    }
    exchange.route = found.route.definition.path
    const queryStart = url.indexOf("?")
    const query = readQuery(queryStart === -1 ? "" : url.slice(queryStart + 1))
    // `respond` never fails: its answer is written from the fiber's observer. A failed exit
    // (the fiber interrupted, the client gone) answers 500 if anything can still be written.
    // The observer runs inside Effect's scheduler: a host whose write throws gets the error
    // logged, never thrown there. The answer is handed over in `exchange.response`, emptied
    // once written, not as the fiber's result: the fiber outlives the request (the `close`
    // listener below holds it), and a page held by it would be promoted to V8's old space
    // with it under load, raising the heap's peak (docs/benchmarks.md "Memory").
    const answer = respond(exchange, found.route, found.params, query, bodyLimit)
    const fiber = runtime.runFork(
      Effect.map(traceRequest === undefined ? answer : traceRequest(exchange, answer), (response) => {
        exchange.response = response
      })
    )
    requests.add(fiber)
    fiber.addObserver((exit) => {
      requests.delete(fiber)
      const response = exchange.response
      exchange.response = undefined
      try {
        if (Exit.isFailure(exit) || response === undefined) return send(internalErrorResponse())
        send(response)
        logRequest?.(exchange, response.status)
      } catch (defect) {
        runtime.runFork(Effect.logError("Unhandled defect", defect))
      }
    })
    return { interrupt: () => fiber.unsafeInterruptAsFork(fiber.id()) }
  }

  // Once the runtime is built, the dispatch loops run in it unless switched off.
  // A host that never awaits `ready` must not crash on an unhandled rejection when the
  // storage fails to open: its requests answer 500 instead. Awaiting `ready` still rejects.
  const dispatcher = startDispatchers(
    runtime,
    {
      webhooks: options.dispatch?.webhooks ?? options.webhooks?.dispatch !== false,
      messages: options.dispatch?.messages ?? true
    },
    options
  )
  return {
    inBasePath,
    serve,
    ready: dispatcher.ready,
    ...handlerShutdown(dispatcher, requests, drainBoundMs(options.sendQueue)),
    health: dispatcher.health
  }
}

/** One request and what is known of it so far, for the response and the log line. */
interface Exchange {
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

/**
 * The checks of docs/http-api.md "Order of checks" then the route's handler, as one Effect that
 * never fails: every failure becomes its envelope response (the `RateLimit-*` headers of
 * `exchange.rateLimit` are added when it is written, {@link toWireResponse}). Written as plain functions chaining a few
 * Effects, with no generator: it runs on every request (docs/benchmarks.md).
 */
const respond = (
  exchange: Exchange,
  route: CompiledRoute,
  rawParams: Record<string, string | undefined>,
  rawQuery: Query,
  bodyLimit: number
): Effect.Effect<ApiResponse, never, RouteServices | RateLimiter> => {
  const definition = route.definition
  const checked = (auth: AuthenticatedOrganization | undefined) => {
    if (auth !== undefined) exchange.organizationId = auth.organization.id
    // Built only once the request passed the limiter: a 429 does no validation work.
    const rest = () => afterRateLimit(exchange, route, auth, rawParams, rawQuery, bodyLimit)
    if (definition.rateLimited === false) return rest()
    const counted = limitRequest(definition, auth, exchange.request.clientAddress, (decision) => {
      exchange.rateLimit = decision
    })
    return Effect.flatMap(counted, rest)
  }
  // A route that needs no key goes straight on (no Effect to authenticate nobody), still
  // inside the fiber: whatever it throws is a defect `recover` answers.
  return recover(
    definition.authenticated === false ? Effect.suspend(() => checked(undefined)) : Effect.flatMap(authenticate(exchange), checked)
  )
}

/**
 * The checks after the rate limit (path parameters, repeated query parameters, query,
 * `Idempotency-Key`, body), then the route's handler. With an `Idempotency-Key` the handler
 * gets the claim (`idempotency`) and its result is recovered into a response here, so the
 * stored response is what the client got; otherwise `respond` recovers it.
 */
const afterRateLimit = (
  exchange: Exchange,
  route: CompiledRoute,
  auth: AuthenticatedOrganization | undefined,
  rawParams: Record<string, string | undefined>,
  rawQuery: Query,
  bodyLimit: number
): Effect.Effect<ApiResponse, HttpFailure | DomainError, RouteServices> => {
  const definition = route.definition
  const params = validated(route.checkParams, rawParams, "Invalid path parameter")
  if (params instanceof HttpFailure) return Effect.fail(params)
  if (rawQuery.repeated.length > 0) return repeatedParameters(rawQuery.repeated)
  if (rawQuery.withNul.length > 0) return nulInParameters(rawQuery.withNul)
  const query = validated(route.checkQuery, rawQuery.values, "Invalid query parameter")
  if (query instanceof HttpFailure) return Effect.fail(query)
  const idempotencyKey =
    definition.idempotent === true ? readIdempotencyKey(exchange.request.header("idempotency-key")) : undefined
  if (idempotencyKey instanceof HttpFailure) return Effect.fail(idempotencyKey)
  const handle = (
    body: unknown,
    idempotency?: RouteIdempotency
  ): Effect.Effect<ApiResponse, HttpFailure | DomainError, RouteServices> =>
    Effect.map(
      definition.handle({
        params: params as Record<string, unknown>,
        query: query as Record<string, unknown>,
        body,
        requestId: exchange.requestId,
        auth: auth ?? NO_AUTHENTICATION,
        idempotency,
        basePath: route.basePath,
        routes: route.routes
      }),
      (result) => {
        // An unauthenticated route may name the organization it acted for (a provider
        // webhook routed to one): the request's log line carries it.
        if (auth === undefined && "organizationId" in result && result.organizationId !== undefined) {
          exchange.organizationId = result.organizationId
        }
        return responseOfResult(result)
      }
    )
  // A route without a body (most GETs) and without an Idempotency-Key goes straight to its
  // handler: no Effect to read or check a body (fewer operations per request,
  // docs/benchmarks.md).
  if (idempotencyKey === undefined && definition.verifyRawBody === undefined && route.checkBody === undefined) {
    return handle(undefined)
  }
  const parsed = readBodyOf(definition, route.checkBody, exchange.request, definition.bodyLimit ?? bodyLimit)
  return Effect.flatMap(parsed, (parsedBody) => {
    const checked = (idempotency?: RouteIdempotency) =>
      route.checkBody === undefined
        ? handle(parsedBody, idempotency)
        : Effect.flatMap(checkBody(route.checkBody, parsedBody), (body) => handle(body, idempotency))
    // Without an Idempotency-Key, failures are turned into responses once, by `respond`;
    // with one, here, so the stored response is what the client got.
    if (idempotencyKey === undefined || auth === undefined) return checked()
    const path = exchange.request.url.split("?", 1)[0] ?? ""
    const fingerprint = fingerprintOf(exchange.request.method, path, parsedBody)
    return withIdempotencyKey(auth.organization.id, idempotencyKey, fingerprint, (claim) => recover(checked(claim)))
  })
}

/**
 * The parsed body of a route that takes one (a `body` schema or a `verifyRawBody` check),
 * else `undefined`. With `verifyRawBody` the exact bytes are checked before parsing.
 */
const readBodyOf = (
  definition: RouteDefinition,
  check: CompiledCheck | undefined,
  request: CoreRequest,
  limitBytes: number
): Effect.Effect<unknown, HttpFailure, RouteServices> => {
  const verify = definition.verifyRawBody
  if (verify === undefined) return check === undefined ? Effect.succeed(undefined) : readJsonBody(request.body, limitBytes)
  return Effect.flatMap(readRawBody(request.body, limitBytes), (bytes) =>
    Effect.zipRight(verify(bytes, request.header), parseJsonBody(bytes))
  )
}

/**
 * Every failure of a request as its envelope response: an {@link HttpFailure} as it says,
 * a domain error by the status table (a storage failure logged, answered 500 without its
 * cause), a defect logged and answered 500.
 */
const recover = <R>(
  effect: Effect.Effect<ApiResponse, HttpFailure | DomainError, R>
): Effect.Effect<ApiResponse, never, R> =>
  effect.pipe(
    Effect.catchAll((error) => {
      if (error._tag === "HttpFailure") return Effect.succeed(error.toResponse())
      const response = responseForDomainError(error)
      return response.status >= 500
        ? Effect.logError("Storage failure", error.cause).pipe(Effect.as(response))
        : Effect.succeed(response)
    }),
    Effect.catchAllDefect((defect) => Effect.logError("Unhandled defect", defect).pipe(Effect.as(internalErrorResponse())))
  )

/** Reads and checks the API key (401, then 403); `respond` notes the organization for the log line. */
const authenticate = (
  exchange: Exchange
): Effect.Effect<AuthenticatedOrganization, HttpFailure | DomainError, Organizations> => {
  const apiKey = readApiKey(exchange.request.header("authorization"))
  if (apiKey instanceof HttpFailure) return Effect.fail(apiKey)
  return Effect.flatMap(Organizations, (organizations) => organizations.authenticate(apiKey))
}

/** Validates a parsed body: a JSON object that passes the route's schema. */
const checkBody = (check: CompiledCheck, body: unknown): Effect.Effect<unknown, HttpFailure> => {
  if (!isPlainObject(body)) {
    return Effect.fail(
      new HttpFailure({ status: 400, code: "invalid_type", message: "Request body must be a JSON object" })
    )
  }
  const result = validated(check, body, "Invalid request body")
  return result instanceof HttpFailure ? Effect.fail(result) : Effect.succeed(result)
}

/** `value` as `check` returns it (coerced, defaults applied), or the 400 naming what is wrong. */
const validated = (check: CompiledCheck | undefined, value: unknown, message: string): unknown => {
  if (check === undefined) return value
  const result = check(value)
  if (result.ok) return result.value
  const first = result.errors.length === 1 ? result.errors[0]?.message : undefined
  return new HttpFailure({ status: 400, code: "invalid_request", message: first ?? message, errors: result.errors })
}

/**
 * The wire form of a response, the same for every host: the envelope as JSON (or the
 * `raw` content of a discovery file) with its `Content-Type` and `Content-Length`,
 * `X-Request-Id`, the response's own headers, then the `RateLimit-*` headers of
 * `exchange.rateLimit` ({@link rateLimitHeadersInto}); no body for `HEAD`. The headers are
 * one object, written into once (it is built for every response).
 */
const toWireResponse = (exchange: Exchange, response: ApiResponse): WireResponse => {
  const body = response.raw?.content ?? JSON.stringify(response.body)
  const headers: Record<string, string> = {
    "content-type": response.raw?.contentType ?? "application/json; charset=utf-8",
    "content-length": String(Buffer.byteLength(body)),
    "x-request-id": exchange.requestId
  }
  for (const name in response.headers) headers[name] = response.headers[name]!
  rateLimitHeadersInto(headers, exchange.rateLimit)
  return { status: response.status, headers, body: exchange.request.method === "HEAD" ? undefined : body }
}

/**
 * The handler's logger (the `logger` option), for the runtime and the request lines alike:
 * the host's, else Effect's JSON logger on stdout; `undefined` for `logger: false`.
 */
const handlerLoggerOf = (logger: HandlerOptions["logger"]): Logger.Logger<unknown, unknown> | undefined =>
  logger === false ? undefined : (logger ?? Logger.withConsoleLog(Logger.jsonLogger))

/**
 * How the handler writes the one line of a request (docs/http-adapter.md "Every response"),
 * chosen once: to `requestLog`, else to `logger` ({@link requestLogThrough}), else nowhere
 * (`undefined`). Called with the answer, outside any fiber. A sink that throws loses the
 * line; the request was answered. Lines below `minimum` (INFO lines at `warn` or `error`,
 * every line at a level above ERROR) are not written.
 */
const requestLoggerOf = (
  requestLog: HandlerOptions["requestLog"],
  logger: Logger.Logger<unknown, unknown> | undefined,
  minimum: LogLevel.LogLevel
): ((exchange: Exchange, status: number) => void) | undefined => {
  const sink = requestLog ?? (logger === undefined ? undefined : requestLogThrough(logger))
  if (sink === undefined || LogLevel.greaterThan(minimum, LogLevel.Error)) return undefined
  const infoLines = LogLevel.lessThanEqual(minimum, LogLevel.Info)
  return (exchange, status) => {
    if (status < 500 && !infoLines) return
    try {
      sink({
        level: status >= 500 ? "ERROR" : "INFO",
        method: exchange.request.method,
        route: exchange.route,
        status,
        durationMs: Math.round((performance.now() - exchange.startedAt) * 100) / 100,
        organizationId: exchange.organizationId ?? null,
        requestId: exchange.requestId,
        timestamp: Date.now()
      })
    } catch {
      // The line is lost; the request was answered.
    }
  }
}

/** A `requestLog` handing each line to an Effect `logger` as {@link requestLogEntryOf} builds it. */
const requestLogThrough =
  (logger: Logger.Logger<unknown, unknown>) =>
  (line: RequestLogLine): void => {
    logger.log(requestLogEntryOf(line))
  }

/**
 * The Effect log entry the handler gives its `logger` for a request line
 * (docs/http-adapter.md "Every response"): the options an `Effect.logInfo` would give it,
 * message `request`, level INFO or ERROR, the six annotations `method`, `route`, `status`,
 * `duration_ms`, `organization_id`, `request_id`, the line's time, no spans and fiber id
 * none. Exported so that a `requestLog` formatting lines itself can be checked against
 * what a logger would have written.
 *
 * @category handler
 */
export const requestLogEntryOf = (line: RequestLogLine): Logger.Logger.Options<unknown> => ({
  fiberId: FiberId.none,
  logLevel: line.level === "ERROR" ? LogLevel.Error : LogLevel.Info,
  message: "request",
  cause: Cause.empty,
  context: NO_FIBER_REFS,
  spans: List.empty(),
  annotations: HashMap.make(
    ["method", line.method],
    ["route", line.route],
    ["status", line.status],
    ["duration_ms", line.durationMs],
    ["organization_id", line.organizationId],
    ["request_id", line.requestId]
  ),
  date: new Date(line.timestamp)
})

const NO_FIBER_REFS = FiberRefs.empty()

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** The client's `X-Request-Id` when it is sane (1–128 of `A-Za-z0-9._:-`), else a new UUID. */
const requestIdOf = (given: string | undefined): string =>
  given !== undefined && SANE_REQUEST_ID.test(given) ? given : randomUUID()

const normaliseBasePath = (basePath: string): string => {
  const trimmed = basePath.replace(/\/+$/, "")
  return trimmed.startsWith("/") || trimmed === "" ? trimmed : `/${trimmed}`
}

/** The runtime's default logger replaced by the handler's ({@link handlerLoggerOf}), or by none. */
const loggerLayer = (logger: Logger.Logger<unknown, unknown> | undefined): Layer.Layer<never> =>
  Logger.replace(Logger.defaultLogger, logger ?? Logger.none)

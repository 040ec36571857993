import { mediaLayerOf } from "./mediaOptions.js"
import type { IncomingMessage, ServerResponse } from "node:http"
import { randomUUID } from "node:crypto"
import { Cause, Effect, Exit, FiberId, FiberRefs, HashMap, Layer, List, Logger, LogLevel, ManagedRuntime } from "effect"
import { Core, DispatchWake, wakeOnEnqueue } from "@switchboard/core"
import { drainBoundMs, sendQueueSettingsLayerOf, startDispatchers } from "./dispatchers.js"
import { failureResponse, type ApiResponse } from "./envelope.js"
import { internalErrorResponse } from "./errorMapping.js"
import { meteredStorageLayerOf, metricsRecorderLayerOf, withRequestMetrics } from "./handlerMetrics.js"
import type { Exchange, HandlerCore, HandlerOptions, RequestLogLine, WireResponse } from "./handlerTypes.js"
import type { HealthReport } from "./health.js"
import { nodeBodySource, type HostRequest } from "./internal/body.js"
import { channelLayerOf, transportLayerOf } from "./internal/channelOptions.js"
import { writeResponse } from "./internal/nodeResponse.js"
import { readQuery } from "./internal/query.js"
import { makeSharedScheduler } from "./internal/scheduler.js"
import { handlerShutdown, type RequestsInFlight } from "./internal/shutdown.js"
import { requestSpanOf, tracingLayerOf, withTracing } from "./internal/tracing.js"
import { effectLogLevelOf } from "./logLevel.js"
import { respond } from "./pipeline.js"
import { clientAddressOf, rateLimiterLayer, rateLimitHeadersInto } from "./rateLimiting.js"
import { makeRouter } from "./router.js"
import { defaultRoutes } from "./routes/index.js"
import { handlerSettingsLayer } from "./settings.js"
import { webhookSettingsLayerOf } from "./webhooks.js"

// The handler factory: `createHandler` (a Node listener) over the host-independent core
// (`makeHandlerCore`, also under fetchHandler.ts), and the request log. The options and the
// exchange types are in handlerTypes.ts; the checks each request goes through, in pipeline.ts.

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
    mediaLayerOf(options.media, options.graphApi).pipe(Layer.provideMerge(Core.layerWithTransport(transportLayerOf(options)).pipe(
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
    )))
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
      messages: options.dispatch?.messages ?? true,
      media: options.media !== undefined && (options.dispatch?.media ?? true),
      templates: options.dispatch?.templates ?? true
    },
    { ...options, mediaRetentionDays: options.media?.fetch?.retentionDays }
  )
  return {
    inBasePath,
    serve,
    ready: dispatcher.ready,
    ...handlerShutdown(dispatcher, requests, drainBoundMs(options.sendQueue)),
    health: dispatcher.health
  }
}

/**
 * The wire form of a response, the same for every host: the envelope as JSON (or the
 * `raw` content of a discovery file, or a `BinaryContent`'s stream, destroyed at once for
 * `HEAD`) with its `Content-Type` and `Content-Length`,
 * `X-Request-Id`, the response's own headers, then the `RateLimit-*` headers of
 * `exchange.rateLimit` ({@link rateLimitHeadersInto}); no body for `HEAD`. The headers are
 * one object, written into once (it is built for every response).
 */
const toWireResponse = (exchange: Exchange, response: ApiResponse): WireResponse => {
  const binary = response.binary
  const body = binary === undefined ? (response.raw?.content ?? JSON.stringify(response.body)) : undefined
  const headers: Record<string, string> = {
    "content-type": binary?.contentType ?? response.raw?.contentType ?? "application/json; charset=utf-8",
    "content-length": String(binary?.length ?? Buffer.byteLength(body!)),
    "x-request-id": exchange.requestId
  }
  for (const name in response.headers) headers[name] = response.headers[name]!
  rateLimitHeadersInto(headers, exchange.rateLimit)
  const head = exchange.request.method === "HEAD"
  if (binary === undefined) return { status: response.status, headers, body: head ? undefined : body }
  if (head) binary.stream.destroy()
  return { status: response.status, headers, body: undefined, ...(head ? {} : { stream: binary.stream }) }
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

import { Readable } from "node:stream"
import { Effect } from "effect"
import { makeHandlerCore } from "./handler.js"
import type { HandlerOptions, WireResponse } from "./handlerTypes.js"
import type { HealthReport } from "./health.js"
import { unreadableBody, tooLarge, type BodySource } from "./internal/body.js"
import { readableOf } from "./internal/multipart.js"
import type { HttpFailure } from "./HttpFailure.js"
import { clientAddressOf } from "./rateLimiting.js"

/**
 * What the host knows of one request beyond the `Request` itself, the second argument of
 * a {@link FetchHandler}. A `Request` has no socket, so the client address (the key of
 * unauthenticated rate limiting, docs/rate-limits.md) comes from here, for example
 * `server.requestIP(request)?.address` under Bun or `info.remoteAddr.hostname` under Deno.
 *
 * @category handler
 */
export interface FetchContext {
  /** The client's IP address. Missing: `"unknown"` (all such clients share one bucket). */
  readonly clientAddress?: string | undefined
}

/**
 * Options of {@link createFetchHandler}: every option of `createHandler` (storage, base path,
 * body limit, logger, routes, rate limits, `trustProxy`, transport) and a fallback for the
 * client address.
 *
 * @category handler
 */
export interface FetchHandlerOptions extends HandlerOptions {
  /**
   * The client address of a request whose {@link FetchContext} has none, for hosts that
   * keep it on the request (for example Cloudflare's `CF-Connecting-IP` header). Used after
   * `X-Forwarded-For` when `trustProxy` is true. Default: none (`"unknown"`).
   */
  readonly clientAddress?: (request: Request) => string | undefined
}

/**
 * The API as a Fetch API function, `(request, context?) => Promise<Response>`, for Bun,
 * Deno, and other runtimes serving `Request`/`Response` (they must provide Node's
 * `node:crypto`, `node:net` and `Buffer`, as Bun, Deno and Cloudflare's `nodejs_compat` do).
 *
 * @category handler
 */
export interface FetchHandler {
  (request: Request, context?: FetchContext): Promise<Response>
  /** Resolves when the storage Layer is built; rejects with its error. */
  readonly ready: Promise<void>
  /** As `SwitchboardHandler.drain`: stops the dispatch loops after the attempts in flight. */
  readonly drain: () => Promise<void>
  /** As `SwitchboardHandler.dispose`: drains, waits for the requests still running, then closes the database. */
  readonly dispose: () => Promise<void>
  /** The {@link HealthReport} of the store and the dispatch loops, as `createHandler`'s `health()` (docs/http-adapter.md "Health"). */
  readonly health: () => Promise<HealthReport>
}

/**
 * Creates the API as a Fetch handler (docs/mounting.md), on the same core as `createHandler`:
 * the same routing, authentication, order of checks, envelope, validation, body limit,
 * rate limits, `X-Request-Id` and request logs. Every path outside `basePath` is answered
 * 404 `route_not_found` (route the API's prefix to it in your host). A request whose
 * `signal` aborts (the client went away) stops its fiber.
 *
 * @category handler
 * @example
 * import { createFetchHandler } from "@switchboard/http-adapter"
 * import { MemoryStorage } from "@switchboard/core"
 *
 * const handler = createFetchHandler({ storage: MemoryStorage.layer })
 * // Bun
 * Bun.serve({ fetch: (request, server) => handler(request, { clientAddress: server.requestIP(request)?.address }) })
 * // Deno
 * Deno.serve((request, info) => handler(request, { clientAddress: info.remoteAddr.hostname }))
 */
export const createFetchHandler = (options: FetchHandlerOptions): FetchHandler => {
  const core = makeHandlerCore(options)
  const trustProxy = options.trustProxy ?? false

  const handler = (request: Request, context: FetchContext = {}): Promise<Response> =>
    new Promise<Response>((resolve) => {
      const url = new URL(request.url)
      const running = core.serve(
        {
          method: request.method,
          url: url.pathname + url.search,
          header: (name) => request.headers.get(name) ?? undefined,
          clientAddress: () =>
            clientAddressOf(
              request.headers.get("x-forwarded-for") ?? undefined,
              context.clientAddress ?? options.clientAddress?.(request),
              trustProxy
            ),
          body: fetchBodySource(request)
        },
        (response) => resolve(toResponse(response))
      )
      const signal = request.signal as AbortSignal | undefined
      signal?.addEventListener("abort", () => running.interrupt(), { once: true })
    })

  return Object.assign(handler, { ready: core.ready, drain: core.drain, dispose: core.dispose, health: core.health })
}

const toResponse = (response: WireResponse): Response =>
  new Response(response.stream === undefined ? (response.body ?? null) : (Readable.toWeb(response.stream) as ReadableStream<Uint8Array>), {
    status: response.status,
    headers: response.headers
  })

/** The body of a Fetch `Request`, read chunk by chunk so the limit stops a long stream early. */
const fetchBodySource = (request: Request): BodySource => ({
  contentType: request.headers.get("content-type") ?? undefined,
  contentLength: request.headers.get("content-length") ?? undefined,
  parsed: undefined,
  hostRawBytes: undefined,
  read: (limitBytes) => readLimited(request, limitBytes),
  stream: () => readableOf(request.body)
})

const readLimited = (request: Request, limitBytes: number): Effect.Effect<Buffer, HttpFailure> =>
  Effect.tryPromise({
    try: async (): Promise<Buffer | "too_large"> => {
      if (request.body === null) return Buffer.alloc(0)
      const reader = request.body.getReader()
      const chunks: Array<Uint8Array> = []
      let size = 0
      for (;;) {
        const { done, value } = await reader.read()
        if (done) return Buffer.concat(chunks, size)
        size += value.byteLength
        if (size > limitBytes) {
          await reader.cancel().catch(() => undefined)
          return "too_large"
        }
        chunks.push(value)
      }
    },
    catch: () => unreadableBody()
  }).pipe(Effect.flatMap((read) => (read === "too_large" ? Effect.fail(tooLarge(limitBytes)) : Effect.succeed(read))))

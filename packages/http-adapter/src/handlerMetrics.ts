import { Effect, Layer } from "effect"
import {
  meteredStorage,
  MetricsRecorder,
  type MetricsRecorderService,
  type OutboxSummaryRow,
  type RateLimitBucket,
  type RateLimitDecision,
  Storage
} from "@switchboard/core"

/**
 * What the handler reports to the `metrics` option of `createHandler`,
 * `createFetchHandler` and `runDispatchers` (docs/http-adapter.md "Metrics"): core's
 * events ({@link MetricsRecorderService}: message statuses, webhook delivery attempts,
 * Meta's webhook POSTs, 429s), each answered request, and a way to read the send queue
 * when scraped. `prometheusMetrics(registry)` of `@switchboard/http-adapter/metrics`
 * builds one on prom-client; any object of this shape will do (every method synchronous,
 * cheap, never throwing). Without the option nothing is counted and nothing is wrapped.
 *
 * @category metrics
 */
export interface HandlerMetrics extends MetricsRecorderService {
  /**
   * One answered request: its route's pattern (`/contacts/:uuid`; `(unmatched)` when no
   * route matched), method, status, and seconds from its arrival to its answer. Called
   * outside the request's fiber, where its log line is written.
   */
  readonly requestAnswered: (route: string, method: string, status: number, durationSeconds: number) => void
  /**
   * One request was refused 429 by the limit of `bucket` (docs/rate-limits.md); called by
   * the same hook, from the request's rate-limit decision.
   */
  readonly rateLimited: (bucket: RateLimitBucket) => void
  /**
   * Gives the metrics a reader of the send queue's summary (`storage.outbox.summary()`,
   * one row per channel with waiting messages or paused), called once the handler's store
   * is open; the function returned is called when the handler is disposed. A metrics
   * object given to several handlers reads through the latest one still open.
   */
  readonly readOutboxWith: (read: () => Promise<ReadonlyArray<OutboxSummaryRow>>) => () => void
}

/**
 * The storage Layer of a handler with `metrics`: the store wrapped by core's
 * `meteredStorage`, reporting to `metrics`; the store itself without.
 *
 * @internal
 */
export const meteredStorageLayerOf = <E>(
  storage: Layer.Layer<Storage, E>,
  metrics: HandlerMetrics | undefined
): Layer.Layer<Storage, E> =>
  metrics === undefined
    ? storage
    : meteredStorage.pipe(Layer.provide(storage), Layer.provide(MetricsRecorder.layer(metrics)))

/**
 * The runtime's {@link MetricsRecorder}: `metrics`, or nothing (the reference's default,
 * which records nothing).
 *
 * @internal
 */
export const metricsRecorderLayerOf = (metrics: HandlerMetrics | undefined): Layer.Layer<never> =>
  metrics === undefined ? Layer.empty : (MetricsRecorder.layer(metrics) as Layer.Layer<never>)

/** What the request hook reads of one answered request. */
interface AnsweredRequest {
  readonly request: { readonly method: string }
  readonly route: string
  readonly startedAt: number
  readonly rateLimit: RateLimitDecision | undefined
}

/**
 * The handler's hook on each answered request (`logRequest`, called where its log line is
 * written): the log line, then, with `metrics`, the request counted and a 429 counted in
 * its bucket. `undefined` when there is nothing to do.
 *
 * @internal
 */
export const withRequestMetrics = <X extends AnsweredRequest>(
  logRequest: ((exchange: X, status: number) => void) | undefined,
  metrics: HandlerMetrics | undefined
): ((exchange: X, status: number) => void) | undefined => {
  if (metrics === undefined) return logRequest
  return (exchange, status) => {
    logRequest?.(exchange, status)
    try {
      metrics.requestAnswered(exchange.route, exchange.request.method, status, (performance.now() - exchange.startedAt) / 1000)
      const decision = exchange.rateLimit
      if (status === 429 && decision !== undefined && !decision.allowed) metrics.rateLimited(decision.bucket)
    } catch {
      // A metric is lost; the request was answered.
    }
  }
}

/**
 * Hands `metrics` the reader of the send queue's summary through `runPromise` (the
 * handler's runtime) once it is built; the function returned takes it back.
 *
 * @internal
 */
export const attachOutboxReader = (
  metrics: HandlerMetrics | undefined,
  runPromise: <A, E>(effect: Effect.Effect<A, E, Storage>) => Promise<A>
): (() => void) => {
  if (metrics === undefined) return () => undefined
  return metrics.readOutboxWith(() => runPromise(Effect.flatMap(Storage, (storage) => storage.outbox.summary())))
}

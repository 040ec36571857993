/**
 * `@switchboard/http-adapter/metrics`: the handler's metrics on prom-client
 * (docs/http-adapter.md "Metrics"). A separate entry so that the main entry loads
 * without the optional peer dependency `prom-client`.
 *
 * @packageDocumentation
 */
export { DEFAULT_DURATION_BUCKETS, prometheusMetrics, type PrometheusMetricsOptions } from "./prometheusMetrics.js"
export type { HandlerMetrics } from "../handlerMetrics.js"

import type { Layer, Tracer } from "effect"

/**
 * Tracing for a handler or for `runDispatchers` (docs/http-adapter.md "Tracing"), passed as
 * their `tracing` option. Made by `openTelemetryTracing` of
 * `@switchboard/http-adapter/tracing` (OpenTelemetry through `@effect/opentelemetry`); the
 * main entry holds only this shape, so it loads without any OpenTelemetry package.
 *
 * - `layer`: installs the tracer in the handler's runtime, built with it; its finalizer
 *   flushes the spans still pending and ends the tracer provider, so `dispose()` sends them.
 * - `parentOf(traceparent, tracestate)`: the remote parent of a request, read from its W3C
 *   `traceparent` and `tracestate` headers, or `undefined` when `traceparent` is absent or
 *   malformed (the request span then starts a new trace).
 *
 * Without the option, the handler creates no span of its own and wraps nothing: tracing
 * costs nothing when off.
 *
 * @category tracing
 */
export interface HandlerTracing {
  readonly layer: Layer.Layer<never>
  readonly parentOf: (traceparent: string | undefined, tracestate: string | undefined) => Tracer.ExternalSpan | undefined
}

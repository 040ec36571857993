/**
 * `@switchboard/http-adapter/tracing`: OpenTelemetry traces for a handler or for
 * `runDispatchers` (docs/http-adapter.md "Tracing"), through `@effect/opentelemetry`.
 * A separate entry: the main entry loads without any OpenTelemetry package installed.
 *
 * @packageDocumentation
 */
export { openTelemetryTracing, type OpenTelemetryTracingOptions, parentSpanOf, type SpanProcessors } from "./openTelemetryTracing.js"

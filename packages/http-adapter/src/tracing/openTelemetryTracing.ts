import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import * as OtelTracer from "@effect/opentelemetry/Tracer"
import { Effect, Layer, Tracer } from "effect"
import type { HandlerTracing } from "../handlerTracing.js"

/**
 * One or several OpenTelemetry span processors (`SpanProcessor` of
 * `@opentelemetry/sdk-trace-base`), for example a `BatchSpanProcessor` around an OTLP
 * exporter.
 *
 * @category tracing
 */
export type SpanProcessors = NonNullable<NodeSdk.Configuration["spanProcessor"]>

/**
 * Options of {@link openTelemetryTracing}:
 * - `serviceName`: the resource's `service.name` (it wins over `OTEL_SERVICE_NAME`);
 * - `serviceVersion` (optional): `service.version`;
 * - `resourceAttributes` (optional): further resource attributes, added to those of
 *   `OTEL_RESOURCE_ATTRIBUTES`;
 * - `spanProcessor`: where the spans go, or a function making it, called each time a
 *   handler (or `runDispatchers`) is built, so each gets its own processor;
 * - `shutdownTimeoutMs` (optional): the longest `dispose()` waits for the last spans to
 *   be exported, in milliseconds (default 3 000).
 *
 * @category tracing
 */
export interface OpenTelemetryTracingOptions {
  readonly serviceName: string
  readonly serviceVersion?: string
  readonly resourceAttributes?: Readonly<Record<string, string | number | boolean>>
  readonly spanProcessor: SpanProcessors | (() => SpanProcessors)
  readonly shutdownTimeoutMs?: number
}

/**
 * The `tracing` option of `createHandler`, `createFetchHandler` and `runDispatchers`
 * (docs/http-adapter.md "Tracing"): an OpenTelemetry tracer provider (`NodeSdk.layer` of
 * `@effect/opentelemetry`) sending to `spanProcessor`, and W3C `traceparent` /
 * `tracestate` continuation. The provider lives as long as the handler: its `dispose()`
 * flushes the pending spans and shuts the processor down. A processor instance belongs to
 * one handler; give several handlers a function making one each.
 *
 * @category tracing
 * @example
 * import { createHandler } from "@switchboard/http-adapter"
 * import { openTelemetryTracing } from "@switchboard/http-adapter/tracing"
 * import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
 * import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
 * import { MemoryStorage } from "@switchboard/core"
 *
 * const handler = createHandler({
 *   storage: MemoryStorage.layer,
 *   tracing: openTelemetryTracing({
 *     serviceName: "switchboard",
 *     spanProcessor: () => new BatchSpanProcessor(new OTLPTraceExporter({ url: "http://127.0.0.1:4318/v1/traces" }))
 *   })
 * })
 */
export const openTelemetryTracing = (options: OpenTelemetryTracingOptions): HandlerTracing => ({
  layer: withoutContextPropagation.pipe(Layer.provide(NodeSdk.layer(() => ({
    resource: {
      serviceName: options.serviceName,
      ...(options.serviceVersion === undefined ? {} : { serviceVersion: options.serviceVersion }),
      ...(options.resourceAttributes === undefined ? {} : { attributes: { ...options.resourceAttributes } })
    },
    spanProcessor: typeof options.spanProcessor === "function" ? options.spanProcessor() : options.spanProcessor,
    ...(options.shutdownTimeoutMs === undefined ? {} : { shutdownTimeout: options.shutdownTimeoutMs })
  })))),
  parentOf: parentSpanOf
})

/**
 * The tracer `NodeSdk.layer` installed, without its hook that makes the current span
 * OpenTelemetry's active context around every step of every fiber: that hook serves only
 * OpenTelemetry instrumentations of non-Effect code (an HTTP client's own spans), which a
 * handler does not use, and it cost about a third of a sampled `GET /verify`'s throughput
 * (docs/http-adapter.md "Tracing"). Spans and their parents are unchanged:
 * Effect passes the parent span itself.
 */
const withoutContextPropagation: Layer.Layer<never> = Layer.unwrapEffect(
  Effect.map(Effect.tracer, (tracer) =>
    Layer.setTracer(Tracer.make({ span: (...args) => tracer.span(...args), context: (execution) => execution() }))
  )
)

/**
 * The remote span of a W3C `traceparent` header (`00-<32 hex trace id>-<16 hex span
 * id>-<2 hex flags>`, lower case; a later version may append fields), with the vendor
 * data of `tracestate`; `undefined` when it is absent or malformed: version `ff`, an
 * all-zero trace or span id, upper-case hex, or a version `00` header with more fields.
 *
 * @category tracing
 */
export const parentSpanOf = (traceparent: string | undefined, tracestate: string | undefined): Tracer.ExternalSpan | undefined => {
  if (traceparent === undefined) return undefined
  const match = TRACEPARENT.exec(traceparent.trim())
  if (match === null) return undefined
  const [, version, traceId, spanId, flags, rest] = match as unknown as [string, string, string, string, string, string | undefined]
  if (version === "ff" || (version === "00" && rest !== undefined)) return undefined
  if (traceId === ZERO_TRACE_ID || spanId === ZERO_SPAN_ID) return undefined
  return OtelTracer.makeExternalSpan({
    traceId,
    spanId,
    traceFlags: Number.parseInt(flags, 16),
    ...(tracestate === undefined || tracestate.trim() === "" ? {} : { traceState: tracestate })
  })
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/
const ZERO_TRACE_ID = "0".repeat(32)
const ZERO_SPAN_ID = "0".repeat(16)

import type { HandlerTracing } from "@switchboard/http-adapter"
import { Config, ConfigError, Either, Option } from "effect"

/**
 * Whether the standalone server exports traces (docs/standalone-server.md "Traces"): `Off`,
 * or over OTLP/HTTP to `tracesUrl` as service `serviceName`.
 *
 * @category models
 */
export type TracingChoice =
  | { readonly _tag: "Off" }
  | { readonly _tag: "Otlp"; readonly tracesUrl: string; readonly serviceName: string }

/**
 * Reads the tracing variables (the standard OpenTelemetry ones, docs/configuration.md):
 * - `OTEL_EXPORTER_OTLP_ENDPOINT`: the collector's OTLP/HTTP base URL; spans go to
 *   `<endpoint>/v1/traces`. `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is the full URL of the
 *   traces and wins. Neither set (or empty): tracing is off;
 * - `OTEL_SERVICE_NAME`: the service name of the spans (default `switchboard`);
 * - `OTEL_SDK_DISABLED=true`: off, whatever else is set;
 * - `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` / `OTEL_EXPORTER_OTLP_PROTOCOL`: spans are sent
 *   as OTLP/HTTP JSON; `grpc` is refused (it would never arrive).
 * The exporter itself reads `OTEL_EXPORTER_OTLP_HEADERS` (authentication, for example),
 * timeouts, compression and certificates, and the batch processor `OTEL_BSP_*`.
 * A URL that is not `http(s)` fails with an error naming its variable, never its value.
 *
 * @category config
 */
export const tracingConfig: Config.Config<TracingChoice> = Config.all({
  endpoint: optionalText("OTEL_EXPORTER_OTLP_ENDPOINT"),
  tracesEndpoint: optionalText("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
  serviceName: optionalText("OTEL_SERVICE_NAME"),
  disabled: optionalText("OTEL_SDK_DISABLED"),
  tracesProtocol: optionalText("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"),
  protocol: optionalText("OTEL_EXPORTER_OTLP_PROTOCOL")
}).pipe(
  Config.mapOrFail((variables): Either.Either<TracingChoice, ConfigError.ConfigError> => {
    if (Option.getOrUndefined(variables.disabled)?.toLowerCase() === "true") return Either.right({ _tag: "Off" })
    const tracesUrl = Option.isSome(variables.tracesEndpoint)
      ? checkedUrl("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", variables.tracesEndpoint.value)
      : Option.isSome(variables.endpoint)
        ? checkedUrl("OTEL_EXPORTER_OTLP_ENDPOINT", variables.endpoint.value, "v1/traces")
        : undefined
    if (tracesUrl === undefined) return Either.right({ _tag: "Off" })
    if (Either.isLeft(tracesUrl)) return Either.left(tracesUrl.left)
    const [protocolName, protocol] = Option.isSome(variables.tracesProtocol)
      ? ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", variables.tracesProtocol.value]
      : ["OTEL_EXPORTER_OTLP_PROTOCOL", Option.getOrUndefined(variables.protocol)]
    if (protocol === "grpc") {
      return Either.left(
        ConfigError.InvalidData([protocolName], `${protocolName}: this server exports traces over OTLP/HTTP (http/json); grpc is not supported`)
      )
    }
    return Either.right({ _tag: "Otlp", tracesUrl: tracesUrl.right, serviceName: Option.getOrElse(variables.serviceName, () => "switchboard") })
  })
)

/**
 * The `tracing` option of `createHandler` for the choice: `undefined` when off; else
 * spans batched (`BatchSpanProcessor`, its `OTEL_BSP_*` settings) to an OTLP/HTTP JSON
 * exporter at `tracesUrl`. The handler's `dispose()` sends the last batch. The
 * OpenTelemetry modules are imported only when tracing is on: off, the server never loads
 * them.
 *
 * @category config
 */
export const tracingFor = async (choice: TracingChoice): Promise<HandlerTracing | undefined> => {
  if (choice._tag === "Off") return undefined
  const [{ openTelemetryTracing }, { BatchSpanProcessor }, { OTLPTraceExporter }] = await Promise.all([
    import("@switchboard/http-adapter/tracing"),
    import("@opentelemetry/sdk-trace-base"),
    import("@opentelemetry/exporter-trace-otlp-http")
  ])
  return openTelemetryTracing({
    serviceName: choice.serviceName,
    spanProcessor: () => new BatchSpanProcessor(new OTLPTraceExporter({ url: choice.tracesUrl }))
  })
}

/**
 * The start-up line saying where traces go: the URL without user, password, query or
 * fragment (the headers are never printed), and the service name; or that they are off.
 *
 * @category config
 */
export const describeTracing = (choice: TracingChoice): string =>
  choice._tag === "Off"
    ? "Traces: off (set OTEL_EXPORTER_OTLP_ENDPOINT to export them over OTLP/HTTP)"
    : `Traces: OTLP/HTTP JSON to ${printableUrl(choice.tracesUrl)} as service ${choice.serviceName}`

/** `value` as an http(s) URL (with `path` appended as OpenTelemetry does), or the error naming `name`. */
const checkedUrl = (name: string, value: string, path?: string): Either.Either<string, ConfigError.ConfigError> => {
  const full = path === undefined ? value : `${value.endsWith("/") ? value : `${value}/`}${path}`
  try {
    const url = new URL(full)
    if (url.protocol === "http:" || url.protocol === "https:") return Either.right(full)
  } catch {
    // Answered below.
  }
  return Either.left(ConfigError.InvalidData([name], `${name} must be an http:// or https:// URL`))
}

/** `url` without credentials, query or fragment. */
const printableUrl = (url: string): string => {
  const parsed = new URL(url)
  return `${parsed.protocol}//${parsed.host}${parsed.pathname}`
}

/** A variable's trimmed value; `None` when unset or empty. */
function optionalText(name: string): Config.Config<Option.Option<string>> {
  return Config.option(Config.string(name)).pipe(
    Config.map((value) => Option.filter(Option.map(value, (text) => text.trim()), (text) => text !== ""))
  )
}

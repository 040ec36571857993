import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { ConfigProvider, Effect, Either } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startSimulator, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"
import { loadConfig } from "../src/config.js"
import { describeTracing, type TracingChoice, tracingConfig } from "../src/tracing.js"
import { assertBuilt, killServers, startServer } from "./helpers.js"

// Traces of the standalone server (docs/standalone-server.md "Traces"): the OTEL_*
// variables, and the built server exporting a send's spans to a local OTLP/HTTP receiver.

const load = (variables: Record<string, string>) =>
  Effect.runPromise(
    Effect.either(loadConfig(tracingConfig).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(variables))))))
  )
const loaded = async (variables: Record<string, string>): Promise<TracingChoice> => Either.getOrThrowWith(await load(variables), (error) => error)
const failure = async (variables: Record<string, string>): Promise<string> =>
  Either.match(await load(variables), { onLeft: (error) => error.message, onRight: () => "loaded" })

describe("tracingConfig: the OTEL_* variables", () => {
  it("is off unless an OTLP endpoint is set, and with OTEL_SDK_DISABLED=true", async () => {
    expect(await loaded({})).toEqual({ _tag: "Off" })
    expect(await loaded({ OTEL_EXPORTER_OTLP_ENDPOINT: " " })).toEqual({ _tag: "Off" })
    expect(await loaded({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "TRUE" })).toEqual({ _tag: "Off" })
    expect(describeTracing({ _tag: "Off" })).toContain("Traces: off")
  })

  it("sends to <endpoint>/v1/traces, or to OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given; service OTEL_SERVICE_NAME, default switchboard", async () => {
    expect(await loaded({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toEqual({
      _tag: "Otlp",
      tracesUrl: "http://collector:4318/v1/traces",
      serviceName: "switchboard"
    })
    expect(await loaded({ OTEL_EXPORTER_OTLP_ENDPOINT: "https://otel.example.com/otlp/", OTEL_SERVICE_NAME: "api" })).toEqual({
      _tag: "Otlp",
      tracesUrl: "https://otel.example.com/otlp/v1/traces",
      serviceName: "api"
    })
    expect(
      await loaded({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://traces:9999/custom" })
    ).toMatchObject({ tracesUrl: "http://traces:9999/custom" })
  })

  it("refuses a URL that is not http(s), naming the variable and never its value, and the grpc protocol", async () => {
    const secret = "ftp://user:hunter2@collector"
    expect(await failure({ OTEL_EXPORTER_OTLP_ENDPOINT: secret })).toContain("OTEL_EXPORTER_OTLP_ENDPOINT")
    expect(await failure({ OTEL_EXPORTER_OTLP_ENDPOINT: secret })).not.toContain("hunter2")
    expect(await failure({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "not a url" })).toContain("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    expect(await failure({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4317", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" })).toContain("grpc")
    expect(await loaded({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" })).toMatchObject({ _tag: "Otlp" })
  })

  it("prints where traces go without user, password or query", () => {
    const line = describeTracing({ _tag: "Otlp", tracesUrl: "https://user:hunter2@otel.example.com/v1/traces?key=k3y", serviceName: "switchboard" })
    expect(line).toBe("Traces: OTLP/HTTP JSON to https://otel.example.com/v1/traces as service switchboard")
  })
})

/** One span as the OTLP/HTTP JSON encoding carries it. */
interface OtlpSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: Record<string, unknown> }>
}

/** What a receiver got: each request's headers and its spans with their resource's service name. */
interface Export {
  readonly headers: IncomingHttpHeaders
  readonly path: string
  readonly spans: ReadonlyArray<OtlpSpan & { readonly service: unknown }>
}

/** A local OTLP/HTTP (JSON) receiver: `POST /v1/traces` answered 200, each export kept. */
const startReceiver = async () => {
  const exports: Array<Export> = []
  const server: Server = createServer((req, res) => {
    let body = ""
    req.setEncoding("utf8").on("data", (chunk: string) => (body += chunk))
    req.on("end", () => {
      const parsed = JSON.parse(body) as {
        resourceSpans: ReadonlyArray<{
          resource: { attributes: OtlpSpan["attributes"] }
          scopeSpans: ReadonlyArray<{ spans: ReadonlyArray<OtlpSpan> }>
        }>
      }
      const spans = parsed.resourceSpans.flatMap((resource) => {
        const service = resource.resource.attributes.find((attribute) => attribute.key === "service.name")?.value.stringValue
        return resource.scopeSpans.flatMap((scope) => scope.spans.map((span) => ({ ...span, service })))
      })
      exports.push({ headers: req.headers, path: req.url ?? "", spans })
      res.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return { url, exports, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

const attribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes.find((each) => each.key === key)?.value
  return value === undefined ? undefined : (value.stringValue ?? value.intValue ?? value.boolValue)
}

const TOKEN = "EAAG-tracing-token-never-exported"
const HEADER_SECRET = "otel-header-secret-never-printed"

describe("the built server with OTEL_EXPORTER_OTLP_ENDPOINT: a send's spans reach the collector", () => {
  let simulator: WhatsAppSimulator
  let receiver: Awaited<ReturnType<typeof startReceiver>>
  beforeAll(async () => {
    assertBuilt()
    simulator = await startSimulator({
      numbers: [{ phone_number_id: "1234", display_phone_number: "+1 555-078-3881", waba_id: "102290129340398", access_token: TOKEN }]
    })
    receiver = await startReceiver()
  })
  afterAll(async () => {
    killServers()
    await simulator.close()
    await receiver.close()
  })

  it("exports the request span with its storage and provider children in one trace, the last batch sent at shutdown", async () => {
    const server = await startServer({
      DATABASE_URL: "memory:",
      DEVELOPER_API_RATE_LIMIT_REDIS_DISABLED: "1",
      WHATSAPP_PHONE_NUMBER_ID: "1234",
      WHATSAPP_ACCESS_TOKEN: TOKEN,
      WHATSAPP_API_BASE_URL: simulator.url,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_HEADERS: `x-collector-key=${HEADER_SECRET}`,
      OTEL_SERVICE_NAME: "switchboard-e2e",
      // No timed batch before shutdown: what arrives was sent by the shutdown's flush.
      OTEL_BSP_SCHEDULE_DELAY: "600000"
    })
    expect(server.output().stderr).toContain(`Traces: OTLP/HTTP JSON to ${receiver.url}/v1/traces as service switchboard-e2e`)
    const { api_key } = JSON.parse(server.output().stdout.trim().split("\n")[0]!) as { api_key: string }
    const response = await fetch(`${server.baseUrl}/send`, {
      method: "POST",
      headers: { authorization: `Bearer ${api_key}`, "content-type": "application/json" },
      body: JSON.stringify({ phone: "+14155550100", message: "Your order has shipped." })
    })
    expect(response.status).toBe(200)
    expect(((await response.json()) as { data: { status: string } }).data.status).toBe("sent")

    server.child.kill("SIGTERM")
    expect(await server.exited).toBe(0)
    const spans = receiver.exports.flatMap((each) => each.spans)
    const request = spans.filter((span) => span.name === "HTTP POST /send")
    expect(request, JSON.stringify(spans.map((span) => span.name))).toHaveLength(1)
    const root = request[0]!
    expect(root.parentSpanId ?? "").toBe("")
    expect(root.service).toBe("switchboard-e2e")
    expect(attribute(root, "http.route")).toBe("/send")
    expect(Number(attribute(root, "http.response.status_code"))).toBe(200)
    expect(attribute(root, "switchboard.organization_id")).toEqual(expect.any(String))

    const trace = spans.filter((span) => span.traceId === root.traceId)
    const byId = new Map(trace.map((span) => [span.spanId, span]))
    const rootOf = (span: OtlpSpan): OtlpSpan => {
      const parent = span.parentSpanId === undefined || span.parentSpanId === "" ? undefined : byId.get(span.parentSpanId)
      return parent === undefined ? span : rootOf(parent)
    }
    const provider = trace.filter((span) => span.name === "transport.send")
    const storage = trace.filter((span) => span.name.startsWith("storage."))
    expect(provider).toHaveLength(1)
    expect(storage.map((span) => span.name)).toEqual(expect.arrayContaining(["storage.organizations.findCredentialByHash", "storage.outbox.record"]))
    for (const span of [...provider, ...storage]) expect(rootOf(span), span.name).toBe(root)

    for (const each of receiver.exports) {
      expect(each.path).toBe("/v1/traces")
      expect(each.headers["content-type"]).toContain("application/json")
      expect(each.headers["x-collector-key"]).toBe(HEADER_SECRET)
    }
    const { stderr } = server.output()
    expect(stderr).not.toContain(HEADER_SECRET)
    expect(JSON.stringify(spans)).not.toContain(TOKEN)
  })
})

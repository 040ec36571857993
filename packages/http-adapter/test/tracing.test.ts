import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Effect, Layer, Option } from "effect"
import { SpanKind, SpanStatusCode } from "@opentelemetry/api"
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Core, MemoryStorage, Storage, Templates } from "@switchboard/core"
import { defineRoute, type SwitchboardHandler } from "@switchboard/http-adapter"
import { openTelemetryTracing, parentSpanOf } from "@switchboard/http-adapter/tracing"
import { startSimulator, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"
import { bearer, makeHandler, makeSharedStorage, makeTenant, request } from "./helpers.js"
import { orderUpdate, SECRET_KEY, SEND_QUEUE, template } from "./send-queue-helpers.js"

// Tracing (docs/http-adapter.md "Tracing"): spans go to an in-memory exporter through a
// SimpleSpanProcessor (each span handed over as it ends). The WhatsApp simulator is Meta.

const TOKEN = "EAAGtracingtoken000000000000000001"
const exporter = new InMemorySpanExporter()
const tracing = openTelemetryTracing({ serviceName: "switchboard-test", spanProcessor: new SimpleSpanProcessor(exporter) })
let simulator: WhatsAppSimulator
const handlers: Array<SwitchboardHandler> = []

beforeAll(async () => {
  simulator = await startSimulator()
})
afterAll(async () => {
  await Promise.all(handlers.map((handler) => handler.dispose()))
  await simulator.close()
})

/** A traced handler on a fresh store with a tenant, its channel on the simulator and the order_update template. */
const tracedTenant = async (phoneNumberId: string) => {
  const storage = makeSharedStorage()
  const handler = makeHandler(storage, {
    secretKey: SECRET_KEY,
    graphApi: { baseUrl: simulator.url, apiVersion: "v21.0" },
    sendQueue: SEND_QUEUE,
    tracing
  })
  handlers.push(handler)
  const { organization, api, apiKey } = await makeTenant(storage, handler)
  simulator.addNumber({ phone_number_id: phoneNumberId, display_phone_number: "+31 6 1234 5678", waba_id: "102290129340398", access_token: TOKEN })
  const channel = await api.post("/channels", { phone_number_id: phoneNumberId, waba_id: "102290129340398", access_token: TOKEN, throughput_mps: 1000 })
  expect(channel.status).toBe(200)
  await Effect.runPromise(
    Effect.flatMap(Templates, (templates) => templates.create(organization.id, orderUpdate)).pipe(Effect.provide(Core.layer), Effect.provide(storage))
  )
  return { handler, organization, api, apiKey }
}

/** One template send through `handler`, with `headers` added. */
const sendTemplate = (handler: SwitchboardHandler, apiKey: string, headers: Record<string, string> = {}) =>
  request(handler, {
    method: "POST",
    url: "/api/v1/api/send/template",
    headers: { ...bearer(apiKey), "content-type": "application/json", ...headers },
    payload: JSON.stringify({ phone: "+14155550100", template: template("#42") })
  })

const spanId = (span: ReadableSpan) => span.spanContext().spanId
const traceId = (span: ReadableSpan) => span.spanContext().traceId

/** The spans from `span` up to its trace's root among `spans` (a missing parent ends the walk). */
const ancestry = (spans: ReadonlyArray<ReadableSpan>, span: ReadableSpan): Array<ReadableSpan> => {
  const byId = new Map(spans.map((each) => [spanId(each), each]))
  const chain = [span]
  for (let parent = span.parentSpanContext?.spanId; parent !== undefined; ) {
    const next = byId.get(parent)
    if (next === undefined) break
    chain.push(next)
    parent = next.parentSpanContext?.spanId
  }
  return chain
}

/**
 * The one finished span named `name`, once it is there (the handlers of earlier tests keep
 * running their dispatchers, so a test reads only the traces it started).
 */
const requestSpanNamed = async (name: string) => {
  await waitFor(() => exporter.getFinishedSpans().find((span) => span.name === name))
  const matching = exporter.getFinishedSpans().filter((span) => span.name === name)
  expect(matching, `one span ${name}`).toHaveLength(1)
  return matching[0]!
}

/** The finished spans of `span`'s trace. */
const traceOf = (span: ReadableSpan) => exporter.getFinishedSpans().filter((each) => traceId(each) === traceId(span))

describe("tracing on: a span per request, per storage call and per provider call", () => {
  it("a send: a server span with the route template, status and organization id; its storage and provider calls are its descendants", async () => {
    const { handler, organization, apiKey } = await tracedTenant("880001")
    // The channel's verification went to Meta inside POST /channels.
    const channels = await requestSpanNamed("HTTP POST /channels")
    const verify = exporter.getFinishedSpans().filter((span) => span.name === "channel_verifier.verify")
    expect(verify).toHaveLength(1)
    expect(ancestry(exporter.getFinishedSpans(), verify[0]!).at(-1)).toBe(channels)
    exporter.reset()

    const response = await sendTemplate(handler, apiKey)
    expect(response.statusCode).toBe(200)
    expect(JSON.parse(response.body).data.status).toBe("sent")
    const server = await requestSpanNamed("HTTP POST /send/template")
    const spans = traceOf(server)
    expect(server.kind).toBe(SpanKind.SERVER)
    expect(server.parentSpanContext).toBeUndefined()
    expect(server.attributes).toEqual({
      "http.request.method": "POST",
      "http.route": "/send/template",
      "http.response.status_code": 200,
      "switchboard.organization_id": organization.id
    })
    expect(server.status.code).not.toBe(SpanStatusCode.ERROR)
    expect(server.resource.attributes["service.name"]).toBe("switchboard-test")

    const storageSpans = spans.filter((span) => span.name.startsWith("storage."))
    expect(storageSpans.map((span) => span.name)).toEqual(expect.arrayContaining(["storage.organizations.findCredentialByHash", "storage.chats.appendMessage", "storage.outbox.record"]))
    const send = spans.filter((span) => span.name === "transport.send")
    expect(send).toHaveLength(1)
    expect(send[0]!.kind).toBe(SpanKind.CLIENT)
    expect(send[0]!.attributes).toMatchObject({ "switchboard.message_id": JSON.parse(response.body).data.message_id, "switchboard.message_type": "template" })
    // Every span of the request's trace (core's Effect.fn spans too) descends from the server span.
    for (const span of spans) expect(ancestry(spans, span).at(-1), span.name).toBe(server)
    // Never a token or the recipient's phone in a span.
    expect(JSON.stringify(spans.map((span) => span.attributes))).not.toMatch(/EAAG|4155550100/)
  })

  it("a retry from the send queue: its own root span with the provider and storage calls as children; a failed provider call is an error", async () => {
    const { handler, apiKey } = await tracedTenant("880002")
    exporter.reset()
    simulator.script.enqueue([{ http_status: 503 }])
    const response = await sendTemplate(handler, apiKey)
    const data = JSON.parse(response.body).data as { message_id: string; status: string }
    expect(data.status).toBe("queued")
    // The attempt that called Meta: on a loaded machine an earlier one can find itself late
    // for its pacing slot and hand the message back unsent (docs/messaging.md "Order and pacing").
    const childrenOf = (parent: ReadableSpan) => exporter.getFinishedSpans().filter((span) => span.parentSpanContext?.spanId === spanId(parent))
    const attempt = await waitFor(() =>
      exporter.getFinishedSpans().find((span) =>
        span.name === "SendQueue.attempt" && span.attributes["switchboard.message_id"] === data.message_id &&
        childrenOf(span).some((child) => child.name === "transport.send")
      )
    )
    const failed = exporter
      .getFinishedSpans()
      .filter((span) => span.name === "transport.send" && span.attributes["switchboard.message_id"] === data.message_id)
      .filter((span) => span.status.code === SpanStatusCode.ERROR)
    expect(failed).toHaveLength(1)
    expect(ancestry(exporter.getFinishedSpans(), failed[0]!).at(-1)!.name).toBe("HTTP POST /send/template")
    expect(attempt.parentSpanContext).toBeUndefined()
    expect(attempt.kind).toBe(SpanKind.CONSUMER)
    expect(attempt.attributes).toMatchObject({ "switchboard.job_end": "Recorded", "switchboard.send_class": "single" })
    const children = childrenOf(attempt)
    expect(children.map((span) => span.name)).toEqual(expect.arrayContaining(["transport.send", "storage.outbox.record"]))
    for (const child of children) expect(traceId(child)).toBe(traceId(attempt))
  })

  it("continues a W3C traceparent: the server span has its trace id and the remote span as parent; a malformed one is ignored", async () => {
    const { handler, apiKey } = await tracedTenant("880003")
    exporter.reset()
    const remoteTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
    const remoteSpan = "00f067aa0ba902b7"
    const response = await sendTemplate(handler, apiKey, { traceparent: `00-${remoteTrace}-${remoteSpan}-01`, tracestate: "vendor=abc" })
    expect(response.statusCode).toBe(200)
    const server = await requestSpanNamed("HTTP POST /send/template")
    expect(traceId(server)).toBe(remoteTrace)
    expect(server.parentSpanContext?.spanId).toBe(remoteSpan)
    expect(server.spanContext().traceState?.get("vendor")).toBe("abc")
    // Its children continue the caller's trace too.
    expect(traceOf(server).map((span) => span.name)).toEqual(expect.arrayContaining(["transport.send", "storage.outbox.record"]))

    exporter.reset()
    const verify = await request(handler, {
      method: "GET",
      url: "/api/v1/api/verify",
      headers: { ...bearer(apiKey), traceparent: `00-${"0".repeat(32)}-${remoteSpan}-01` }
    })
    expect(verify.statusCode).toBe(200)
    const fresh = await requestSpanNamed("HTTP GET /verify")
    expect(fresh.parentSpanContext).toBeUndefined()
    expect(traceId(fresh)).not.toBe("0".repeat(32))
  })

  it("reads traceparent as W3C Trace Context says", () => {
    const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    const span = "00f067aa0ba902b7"
    expect(parentSpanOf(`00-${trace}-${span}-01`, undefined)).toMatchObject({ traceId: trace, spanId: span, sampled: true })
    expect(parentSpanOf(`00-${trace}-${span}-00`, undefined)).toMatchObject({ sampled: false })
    expect(parentSpanOf(`01-${trace}-${span}-01-later`, undefined)).toMatchObject({ traceId: trace })
    for (const malformed of [
      undefined,
      "",
      `00-${trace}-${span}`,
      `00-${trace}-${span}-01-extra`,
      `ff-${trace}-${span}-01`,
      `00-${trace.toUpperCase()}-${span}-01`,
      `00-${"0".repeat(32)}-${span}-01`,
      `00-${trace}-${"0".repeat(16)}-01`,
      `00-${trace.slice(1)}-${span}-01`
    ]) {
      expect(parentSpanOf(malformed, undefined), String(malformed)).toBeUndefined()
    }
  })

  it("a 5xx answer ends its server span with status error", async () => {
    const broken = makeHandler(MemoryStorage.layer, { routes: [crashRoute], tracing })
    handlers.push(broken)
    exporter.reset()
    const response = await request(broken, { method: "GET", url: "/api/v1/api/test/crash" })
    expect(response.statusCode).toBe(500)
    const server = await requestSpanNamed("HTTP GET /test/crash")
    expect(server.status.code).toBe(SpanStatusCode.ERROR)
    expect(server.attributes["http.response.status_code"]).toBe(500)
    expect(server.attributes["switchboard.organization_id"]).toBeUndefined()
  })
})

describe("tracing off (no `tracing` option)", () => {
  it("wraps no storage method and runs a request in no span; with the option both happen", async () => {
    const original = MemoryStorage.make()
    const probe = async (options: { tracing?: typeof tracing }) => {
      const handler = makeHandler(Layer.succeed(Storage, original), { routes: [probeRoute(original)], ...options })
      handlers.push(handler)
      const response = await request(handler, { method: "GET", url: "/api/v1/api/test/probe" })
      expect(response.statusCode).toBe(200)
      return JSON.parse(response.body).data as { storageWrapped: boolean; inSpan: boolean }
    }
    exporter.reset()
    expect(await probe({})).toEqual({ storageWrapped: false, inSpan: false })
    expect(await probe({ tracing })).toEqual({ storageWrapped: true, inSpan: true })
    // Only the traced handler's request made a span.
    await requestSpanNamed("HTTP GET /test/probe")
  })
})

/** A route answering whether the runtime's storage is wrapped and whether it runs in a span. */
const probeRoute = (original: Storage["Type"]) =>
  defineRoute({
    method: "GET",
    path: "/test/probe",
    tag: "Guide",
    summary: "Probe",
    authenticated: false,
    handle: () =>
      Effect.gen(function* () {
        // Read without requiring it: routes are typed against core's services, not the store.
        const storage = Option.getOrThrow(yield* Effect.serviceOption(Storage))
        const span = yield* Effect.option(Effect.currentSpan)
        return { message: "probe", data: { storageWrapped: storage.contacts.list !== original.contacts.list, inSpan: Option.isSome(span) } }
      })
  })

/** A route that dies: answered 500. */
const crashRoute = defineRoute({
  method: "GET",
  path: "/test/crash",
  tag: "Guide",
  summary: "Crash",
  authenticated: false,
  handle: () => Effect.dieMessage("boom")
})

/** Polls `find` every 20 ms until it answers something (at most 5 s). */
const waitFor = async <A>(find: () => A | undefined): Promise<A> => {
  const deadline = Date.now() + 5_000
  for (;;) {
    const found = find()
    if (found !== undefined) return found
    if (Date.now() > deadline) throw new Error("never found")
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

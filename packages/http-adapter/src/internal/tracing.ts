import { Effect, Layer, Option, Tracer } from "effect"
import {
  ChannelVerifier,
  type GraphApiOptions,
  LeasedJobSpans,
  MessageTransport,
  MetaTemplateApi,
  type OutboundMessage,
  Storage,
  type StorageService
} from "@switchboard/core"
import type { ApiResponse } from "../envelope.js"
import type { HandlerTracing } from "../handlerTracing.js"
import { transportLayerOf } from "./channelOptions.js"

// The spans a handler adds when its `tracing` option is set (docs/http-adapter.md
// "Tracing"). Everything here is reached only through `options.tracing`: without it no
// layer is wrapped and no request span is made.

/** The options of a handler or of `runDispatchers` that tracing touches. */
interface TracedOptions {
  readonly storage: Layer.Layer<Storage, unknown>
  readonly transport?: Layer.Layer<MessageTransport> | undefined
  readonly channelVerifier?: Layer.Layer<ChannelVerifier> | undefined
  readonly metaTemplateApi?: Layer.Layer<MetaTemplateApi> | undefined
  readonly graphApi?: GraphApiOptions | undefined
  readonly tracing?: HandlerTracing | undefined
}

/**
 * `options` unchanged without `tracing`; with it, the storage, the transport (the default
 * one included), the channel verifier and Meta's template API wrapped so that each call
 * is a span ({@link tracedStorage}, {@link tracedTransport}, {@link tracedVerifier},
 * {@link tracedTemplateApi}).
 */
export const withTracing = <O extends TracedOptions>(options: O): O =>
  options.tracing === undefined
    ? options
    : {
        ...options,
        storage: Layer.effect(Storage, Effect.map(Storage, tracedStorage)).pipe(Layer.provide(options.storage)),
        transport: tracedTransport(transportLayerOf(options)),
        channelVerifier: tracedVerifier(options.channelVerifier ?? ChannelVerifier.graph(options.graphApi ?? {})),
        metaTemplateApi: tracedTemplateApi(options.metaTemplateApi ?? MetaTemplateApi.graph(options.graphApi ?? {}))
      }

/**
 * The layer a runtime adds for `tracing`: its tracer, and a root span for each job of the
 * dispatch loops (core's `LeasedJobSpans`). Without `tracing`: nothing.
 */
export const tracingLayerOf = (tracing: HandlerTracing | undefined): Layer.Layer<never> =>
  tracing === undefined ? Layer.empty : Layer.merge(tracing.layer, Layer.succeed(LeasedJobSpans, true))

/**
 * What the request span reads of a request once it is answered (a part of the handler's
 * `Exchange`, handlerTypes.ts, declared here like {@link TracedOptions}).
 */
interface TracedExchange {
  readonly request: { readonly method: string; readonly header: (name: string) => string | undefined }
  readonly route: string
  readonly organizationId: string | undefined
}

/**
 * Runs a request's `answer` in its server span `HTTP <method> <route template>`, a child
 * of the remote span of its `traceparent` when it has a valid one (else a new trace), with
 * `http.request.method`, `http.route`, `http.response.status_code` and, once known,
 * `switchboard.organization_id`. A 5xx answer ends the span with status error.
 */
export const requestSpanOf =
  (tracing: HandlerTracing) =>
  <R>(exchange: TracedExchange, answer: Effect.Effect<ApiResponse, never, R>): Effect.Effect<ApiResponse, never, R> => {
    const { request, route } = exchange
    const parent = tracing.parentOf(request.header("traceparent"), request.header("tracestate"))
    const annotated = Effect.flatMap(answer, (response) => {
      const attributes: Record<string, unknown> = { "http.response.status_code": response.status }
      if (exchange.organizationId !== undefined) attributes["switchboard.organization_id"] = exchange.organizationId
      const noted = Effect.annotateCurrentSpan(attributes)
      // A span ends with status error only when its effect fails: a 5xx answer fails here
      // and is recovered once the span has ended.
      return response.status >= 500 ? Effect.zipRight(noted, Effect.fail(new ServerErrorAnswer(response))) : Effect.as(noted, response)
    })
    return Effect.withSpan(annotated, `HTTP ${request.method} ${route}`, {
      kind: "server",
      ...(parent === undefined ? { root: true } : { parent }),
      attributes: { "http.request.method": request.method, "http.route": route }
    }).pipe(Effect.catchAll((failure) => Effect.succeed(failure.response)))
  }

/** A 5xx answer, as the failure that marks its request span as an error. */
class ServerErrorAnswer extends Error {
  constructor(readonly response: ApiResponse) {
    super(`HTTP ${response.status}`)
    this.name = "ServerErrorAnswer"
  }
}

/**
 * `storage` with every repository method (and `health`) in a span `storage.<repository>.<method>`
 * (e.g. `storage.contacts.list`, `storage.health`) when it runs inside another span (a
 * request, a dispatch job); a call outside any span (a dispatch loop's polling claim) makes
 * none, so an idle process exports nothing.
 */
const tracedStorage = (storage: StorageService): StorageService => {
  const traced: Record<string, unknown> = {}
  for (const [name, member] of Object.entries(storage)) {
    traced[name] =
      typeof member === "function"
        ? inChildSpan(`storage.${name}`, member, storage)
        : typeof member === "object" && member !== null
          ? tracedRepository(`storage.${name}`, member as Record<string, unknown>)
          : member
  }
  return traced as unknown as StorageService
}

const tracedRepository = (prefix: string, repository: Record<string, unknown>): Record<string, unknown> => {
  const traced: Record<string, unknown> = {}
  for (const [name, member] of Object.entries(repository)) {
    traced[name] = typeof member === "function" ? inChildSpan(`${prefix}.${name}`, member, repository) : member
  }
  return traced
}

/** `method` with each Effect it returns run in a span `name` when a parent span is current. */
const inChildSpan =
  (name: string, method: Function, self: unknown) =>
  (...args: ReadonlyArray<unknown>): unknown => {
    const result: unknown = method.apply(self, args)
    if (!Effect.isEffect(result)) return result
    const effect = result as Effect.Effect<unknown, unknown, never>
    return Effect.flatMap(Effect.serviceOption(Tracer.ParentSpan), (parent) =>
      Option.isSome(parent) ? Effect.withSpan(effect, name, { kind: "client" }) : effect
    )
  }

/**
 * The transport of `layer` with each send in a span `transport.send` (kind client) carrying
 * `switchboard.message_id`, `switchboard.message_type` and `switchboard.channel_id` (when the
 * message goes through a channel); never the recipient or a token. A failed send ends it
 * with status error.
 */
const tracedTransport = (layer: Layer.Layer<MessageTransport>): Layer.Layer<MessageTransport> =>
  Layer.effect(
    MessageTransport,
    Effect.map(MessageTransport, (transport) => ({
      ...transport,
      send: (message: OutboundMessage) =>
        Effect.withSpan(transport.send(message), "transport.send", {
          kind: "client",
          attributes: {
            "switchboard.message_id": message.message_id,
            "switchboard.message_type": message.type,
            ...(message.channel === null ? {} : { "switchboard.channel_id": message.channel.uuid })
          }
        })
    }))
  ).pipe(Layer.provide(layer))

/** The verifier of `layer` with each check of a token in a span `channel_verifier.verify` (kind client). */
const tracedVerifier = (layer: Layer.Layer<ChannelVerifier>): Layer.Layer<ChannelVerifier> =>
  Layer.effect(
    ChannelVerifier,
    Effect.map(ChannelVerifier, (verifier) => ({
      ...verifier,
      verify: (request: Parameters<typeof verifier.verify>[0]) =>
        Effect.withSpan(verifier.verify(request), "channel_verifier.verify", { kind: "client" })
    }))
  ).pipe(Layer.provide(layer))

/** Meta's template API of `layer` with each call in a span `meta_template_api.<list|submit|remove>` (kind client). */
const tracedTemplateApi = (layer: Layer.Layer<MetaTemplateApi>): Layer.Layer<MetaTemplateApi> =>
  Layer.effect(
    MetaTemplateApi,
    Effect.map(MetaTemplateApi, (api) => ({
      list: (account: Parameters<typeof api.list>[0], page: Parameters<typeof api.list>[1]) =>
        Effect.withSpan(api.list(account, page), "meta_template_api.list", { kind: "client", attributes: { "switchboard.waba_id": account.waba_id } }),
      submit: (account: Parameters<typeof api.submit>[0], template: Parameters<typeof api.submit>[1]) =>
        Effect.withSpan(api.submit(account, template), "meta_template_api.submit", { kind: "client", attributes: { "switchboard.waba_id": account.waba_id } }),
      remove: (account: Parameters<typeof api.remove>[0], template: Parameters<typeof api.remove>[1]) =>
        Effect.withSpan(api.remove(account, template), "meta_template_api.remove", { kind: "client", attributes: { "switchboard.waba_id": account.waba_id } })
    }))
  ).pipe(Layer.provide(layer))

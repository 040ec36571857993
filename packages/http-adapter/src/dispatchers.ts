import { Effect, Fiber, Layer, Logger, ManagedRuntime, Ref } from "effect"
import {
  Channels,
  DEFAULT_SEND_QUEUE_SETTINGS,
  DELIVERY_TIMEOUT_MS,
  DispatchWake,
  DRAIN_MARGIN_MS,
  hostClock,
  type GraphApiOptions,
  type LeasedLoopStatus,
  makeLeasedLoopStatus,
  type MessageTransport,
  type MetaTemplateApi,
  type BlobStore,
  type MediaFetchSettings,
  runBroadcastStarter,
  runMediaFetcher,
  runSendDispatcher,
  runLeasedQueue,
  runWebhookDispatcher,
  SecureRandom,
  TEMPLATE_SYNC_INTERVAL_MS,
  templateSyncQueue,
  SendQueueSettings,
  Storage,
  wakeOnEnqueue
} from "@switchboard/core"
import { type HandlerMediaOptions, mediaLayerOf } from "./mediaOptions.js"
import { type HealthPhase, type HealthReport, makeHealthCheck, maxPassAgeOf } from "./health.js"
import type { HandlerTracing } from "./handlerTracing.js"
import { channelLayerOf, type SecretKeyOption, transportLayerOf } from "./internal/channelOptions.js"
import { tracingLayerOf, withTracing } from "./internal/tracing.js"
import { attachOutboxReader, type HandlerMetrics, meteredStorageLayerOf, metricsRecorderLayerOf } from "./handlerMetrics.js"
import { effectLogLevelOf, type HandlerLogLevel } from "./logLevel.js"
import {
  type DispatchWebhooksOptions,
  type WebhookDispatcherHandle,
  webhookSettingsLayerOf,
  type WebhookHandlerOptions
} from "./webhooks.js"

/**
 * Which dispatch loops a handler (or {@link runDispatchers}) runs (docs/messaging.md "The
 * send queue", docs/webhooks.md "Delivery and the dispatcher"): `webhooks`, the outgoing
 * webhook deliveries; `messages`, the send queue and the broadcasts' starter
 * (docs/broadcasts.md "How a broadcast starts"). Each defaults to `true`; `false` leaves
 * that work to another process (leases keep several dispatchers from doing one job twice).
 *
 * @category dispatch
 */
export interface DispatchSwitches {
  readonly webhooks?: boolean
  readonly messages?: boolean
  /** The inbound media fetches and the media housekeeping (default `true` when `media` is configured). */
  readonly media?: boolean
  /**
   * The template sync: each WhatsApp Business Account's templates read again from Meta
   * when due (a new channel's account at once, then every `templateSync.intervalMs`;
   * docs/templates-and-replies.md "Templates from Meta"). Default `true`.
   */
  readonly templates?: boolean
}

/**
 * The template sync loop's options (docs/templates-and-replies.md "Templates from Meta",
 * docs/configuration.md): `intervalMs`, the time from one sync of an account to its next
 * (after a success and a failure alike), in ms, default 21 600 000 (6 hours). Malformed
 * values throw where the handler is created.
 *
 * @category dispatch
 */
export interface TemplateSyncHandlerOptions {
  readonly intervalMs?: number
}

/**
 * How long the template sync loop sleeps at most when no account is known to be due, in
 * ms: a channel added by another process (the admin CLI) is synced within this time.
 *
 * @internal
 */
export const TEMPLATE_SYNC_POLL_INTERVAL_MS = 2_000

/** How long a claim of the template sync loop holds an account's record, in ms (renewed while a sync runs). */
const TEMPLATE_SYNC_LEASE_MS = 60_000

/**
 * The template sync interval of `options`, in ms; throws a `TypeError` when malformed.
 *
 * @internal
 */
export const templateSyncIntervalOf = (options: TemplateSyncHandlerOptions | undefined): number => {
  const intervalMs = options?.intervalMs
  if (intervalMs === undefined) return TEMPLATE_SYNC_INTERVAL_MS
  if (!(isNonNegativeNumber(intervalMs) && intervalMs > 0)) {
    throw new TypeError("templateSync.intervalMs must be a positive number of milliseconds")
  }
  return intervalMs
}

/**
 * The send queue's options (docs/messaging.md "The send queue", docs/configuration.md),
 * all in milliseconds: `retryDelaysMs`, the waits before each retry after a transient
 * failure or an unknown outcome (default 5 s, 30 s, 2 min, 10 min, 30 min, each plus up to
 * 10% jitter); `timeoutMs`, the longest one attempt may take (default 10 000);
 * `settleMs`, how long an unknown outcome waits for Meta's status notification before a
 * retry (default 120 000); `ttlMs`, how long a message may wait before it fails `expired`
 * (default 14 400 000, 4 h); `leaseMs`, how long a claim holds a message for its
 * dispatcher, after which another process takes over a message whose process died (default
 * 60 000; more than `timeoutMs` + 1 000); `pollIntervalMs`, the longest the dispatcher
 * sleeps when no message is known to be due (default 1 000). Malformed values throw where
 * the handler is created.
 *
 * @category dispatch
 */
export interface SendQueueHandlerOptions {
  readonly retryDelaysMs?: ReadonlyArray<number>
  readonly timeoutMs?: number
  readonly settleMs?: number
  readonly ttlMs?: number
  readonly leaseMs?: number
  readonly pollIntervalMs?: number
}

/**
 * The {@link SendQueueSettings} Layer of `options`; throws a `TypeError` naming the
 * malformed option.
 *
 * @internal
 */
export const sendQueueSettingsLayerOf = (options: SendQueueHandlerOptions | undefined): Layer.Layer<SendQueueSettings> => {
  const delays = options?.retryDelaysMs
  if (delays !== undefined && !(Array.isArray(delays) && delays.every(isNonNegativeNumber))) {
    throw new TypeError("sendQueue.retryDelaysMs must be a list of delays in milliseconds (finite numbers ≥ 0)")
  }
  for (const name of ["timeoutMs", "settleMs", "ttlMs", "leaseMs", "pollIntervalMs"] as const) {
    const value = options?.[name]
    if (value !== undefined && !(isNonNegativeNumber(value) && value > 0)) {
      throw new TypeError(`sendQueue.${name} must be a positive number of milliseconds`)
    }
  }
  const timeoutMs = options?.timeoutMs ?? DEFAULT_SEND_QUEUE_SETTINGS.timeoutMs
  const leaseMs = options?.leaseMs ?? DEFAULT_SEND_QUEUE_SETTINGS.leaseMs
  if (leaseMs <= timeoutMs + 1_000) {
    throw new TypeError("sendQueue.leaseMs must exceed sendQueue.timeoutMs by more than 1000 ms")
  }
  return SendQueueSettings.layer({
    ...(delays === undefined ? {} : { retryDelaysMs: [...delays] }),
    ...(options?.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options?.settleMs === undefined ? {} : { settleMs: options.settleMs }),
    ...(options?.ttlMs === undefined ? {} : { ttlMs: options.ttlMs }),
    ...(options?.leaseMs === undefined ? {} : { leaseMs: options.leaseMs })
  })
}

const isNonNegativeNumber = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value) && value >= 0

/**
 * Running dispatch loops: `ready` resolves once the storage is open (rejects with its
 * error); `drain()` stops the loops — they claim nothing more at once and record the
 * outcome of the attempts they have in flight, waiting at most the longer attempt timeout
 * (the send queue's `timeoutMs`, the webhooks' 10 s) + 2 s, after which what still runs is
 * interrupted unrecorded and left to its lease (docs/messaging.md "Stopping"); `stop()`
 * drains, then closes the runtime (both resolve once, however often called);
 * `lastPassEndedAt()` is when the webhook loop last ended a pass, and
 * `lastPassesEndedAt()` that time for each loop (`null` before its first pass, or when it
 * does not run): what a health check reads. `health()` answers the {@link HealthReport}
 * of these loops and their store (docs/http-adapter.md "Health"); it never rejects.
 *
 * @category dispatch
 */
export interface DispatchersHandle {
  readonly ready: Promise<void>
  readonly drain: () => Promise<void>
  readonly stop: () => Promise<void>
  readonly lastPassEndedAt: () => Date | null
  readonly lastPassesEndedAt: () => { readonly webhooks: Date | null; readonly messages: Date | null; readonly templates: Date | null }
  readonly health: () => Promise<HealthReport>
}

/**
 * Starts the loops `run` asks for in `runtime` once it is built: the webhook dispatcher,
 * the send queue's dispatcher and the media loop, woken by the runtime's
 * {@link DispatchWake}, and the template sync loop, which polls only.
 *
 * @internal
 */
export const startDispatchers = <R, E>(
  runtime: ManagedRuntime.ManagedRuntime<
    R | Storage | SecureRandom | DispatchWake | MessageTransport | Channels | SendQueueSettings | BlobStore | MediaFetchSettings,
    E
  >,
  run: { readonly webhooks: boolean; readonly messages: boolean; readonly media?: boolean; readonly templates?: boolean },
  options: {
    readonly webhooks?: WebhookHandlerOptions | undefined
    readonly templateSync?: TemplateSyncHandlerOptions | undefined
    readonly sendQueue?: SendQueueHandlerOptions | undefined
    readonly metrics?: HandlerMetrics | undefined
    readonly mediaRetentionDays?: number | undefined
  }
): DispatchersHandle => {
  let stopped = false
  let detachMetrics: () => void = () => undefined
  const fibers: Array<Fiber.RuntimeFiber<never, unknown>> = []
  const status = {
    webhooks: Effect.runSync(makeLeasedLoopStatus),
    messages: Effect.runSync(makeLeasedLoopStatus),
    templates: Effect.runSync(makeLeasedLoopStatus)
  }
  const templateSyncIntervalMs = templateSyncIntervalOf(options.templateSync)
  let phase: HealthPhase = { _tag: "starting" }
  const ready = runtime.runtime().then(() => {
    if (stopped) return
    phase = { _tag: "ready", at: Date.now() }
    // Scrapes read the send queue through this runtime while it is open.
    detachMetrics = attachOutboxReader(options.metrics, (effect) => runtime.runPromise(effect))
    if (run.webhooks) {
      const pollIntervalMs = options.webhooks?.pollIntervalMs
      fibers.push(runtime.runFork(
        Effect.flatMap(DispatchWake, (wake) =>
          runWebhookDispatcher({ wake, status: status.webhooks, ...(pollIntervalMs === undefined ? {} : { pollIntervalMs }) })).pipe(
            Effect.withClock(hostClock)
          )
      ))
    }
    if (run.messages) {
      const pollIntervalMs = options.sendQueue?.pollIntervalMs
      fibers.push(runtime.runFork(
        Effect.flatMap(DispatchWake, (wake) =>
          runSendDispatcher({ wake, status: status.messages, ...(pollIntervalMs === undefined ? {} : { pollIntervalMs }) })).pipe(
            Effect.withClock(hostClock)
          )
      ))
      // Broadcasts become messages of the send queue: their starter runs beside its dispatcher.
      fibers.push(runtime.runFork(runBroadcastStarter().pipe(Effect.withClock(hostClock))))
    }
    if (run.templates === true) {
      // A sync's failure is kept on its account's record; it never pauses a channel nor touches its sends.
      // Not woken by the process's DispatchWake: no write it follows makes a sync due (a new
      // channel's first sync is found by the poll), and each wake was a claim and a look at
      // the next due time for nothing, 1 422 of them (5 700 statements on PostgreSQL) in a
      // dispatch of 20 000 messages by two servers (docs/benchmarks.md "Dispatch on PostgreSQL:
      // the loops woken for nothing").
      fibers.push(runtime.runFork(
        runLeasedQueue(templateSyncQueue({ intervalMs: templateSyncIntervalMs }), {
          leaseMs: TEMPLATE_SYNC_LEASE_MS,
          concurrency: 2,
          pollIntervalMs: TEMPLATE_SYNC_POLL_INTERVAL_MS,
          status: status.templates
        }).pipe(Effect.withClock(hostClock))
      ))
    }
    if (run.media === true) {
      const retentionDays = options.mediaRetentionDays
      fibers.push(runtime.runFork(
        Effect.flatMap(DispatchWake, (wake) =>
          runMediaFetcher({ wake, ...(retentionDays === undefined ? {} : { retentionDays }) })).pipe(Effect.withClock(hostClock))
      ))
    }
  })
  ready.catch(() => {
    if (!stopped) phase = { _tag: "failed" }
  })
  // Each loop bounds its own drain; this bound is a backstop for a store that stops answering
  // while an attempt is being recorded.
  const boundMs = drainBoundMs(options.sendQueue) + DRAIN_MARGIN_MS
  let drained: Promise<void> | undefined
  let closed: Promise<void> | undefined
  const drain = () =>
    (drained ??= (() => {
      stopped = true
      phase = { _tag: "stopped" }
      checks.close()
      return settleWithin(Effect.runPromise(Fiber.interruptAll(fibers)), boundMs)
    })())
  const stop = () =>
    (closed ??= drain().then(() => {
      detachMetrics()
      return runtime.dispose()
    }))
  const endedAt = (loop: LeasedLoopStatus) => {
    const at = Effect.runSync(Ref.get(loop.lastPassEndedAt))
    return at === null ? null : new Date(at)
  }
  const lastPassesEndedAt = () => ({
    webhooks: endedAt(status.webhooks),
    messages: endedAt(status.messages),
    templates: endedAt(status.templates)
  })
  // The health check asks the store through this runtime: the handler's own Storage.
  const checks = makeHealthCheck({
    askStorage: () => runtime.runFork(Effect.flatMap(Storage, (storage) => storage.health())),
    phase: () => phase,
    loops: [
      ...(run.webhooks ? [{ name: "webhooks" as const, maxPassAgeMs: maxPassAgeOf(options.webhooks?.pollIntervalMs) }] : []),
      ...(run.messages ? [{ name: "messages" as const, maxPassAgeMs: maxPassAgeOf(options.sendQueue?.pollIntervalMs) }] : []),
      ...(run.templates === true ? [{ name: "templates" as const, maxPassAgeMs: maxPassAgeOf(TEMPLATE_SYNC_POLL_INTERVAL_MS) }] : [])
    ],
    lastPassesEndedAt
  })
  return { ready, drain, stop, lastPassEndedAt: () => endedAt(status.webhooks), lastPassesEndedAt, health: checks.health }
}

/**
 * The longest a dispatcher's drain lasts with these send-queue options, in ms: the longer
 * attempt timeout (the send queue's `timeoutMs`, default 10 000; a webhook delivery's
 * 10 000) + 2 000.
 *
 * @internal
 */
export const drainBoundMs = (sendQueue: SendQueueHandlerOptions | undefined): number =>
  Math.max(sendQueue?.timeoutMs ?? DEFAULT_SEND_QUEUE_SETTINGS.timeoutMs, DELIVERY_TIMEOUT_MS) + DRAIN_MARGIN_MS

/**
 * Resolves when `promise` settles (rejecting with its error) or after `ms`, whichever
 * comes first; the timer keeps the process alive meanwhile.
 *
 * @internal
 */
export const settleWithin = (promise: Promise<void>, ms: number): Promise<void> => {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms)
  })
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}


/**
 * Options of {@link runDispatchers}: the `storage` Layer (the same store as the handlers'),
 * the `secretKey` (as `createHandler`'s: channel tokens and endpoint secrets are sealed
 * under it), `dispatch` (which loops; default both), the `webhooks` and `sendQueue`
 * settings, the message `transport` and `graphApi` (as `createHandler`'s), the `logger`
 * (default Effect's JSON logger; `false` silences it), `logLevel`, `tracing` (as
 * `createHandler`'s: each job of the loops in a root span, docs/http-adapter.md "Tracing")
 * and `metrics` (as `createHandler`'s, docs/http-adapter.md "Metrics").
 *
 * @category dispatch
 */
export interface RunDispatchersOptions {
  readonly storage: Layer.Layer<Storage, unknown>
  readonly secretKey?: SecretKeyOption
  readonly dispatch?: DispatchSwitches
  readonly webhooks?: WebhookHandlerOptions
  readonly sendQueue?: SendQueueHandlerOptions
  readonly transport?: Layer.Layer<MessageTransport>
  readonly graphApi?: GraphApiOptions
  /** As `createHandler`'s: how the template sync reads Meta's templates (default the Graph API at `graphApi`). */
  readonly metaTemplateApi?: Layer.Layer<MetaTemplateApi>
  /** As `createHandler`'s (docs/templates-and-replies.md "Templates from Meta"): the template sync's interval. */
  readonly templateSync?: TemplateSyncHandlerOptions
  /** As `createHandler`'s (docs/media.md): with it, the inbound media fetches run here too. */
  readonly media?: HandlerMediaOptions
  readonly logger?: Logger.Logger<unknown, unknown> | false
  readonly logLevel?: HandlerLogLevel
  readonly tracing?: HandlerTracing
  /** As `createHandler`'s (docs/http-adapter.md "Metrics"): message statuses, webhook deliveries, the send queue. */
  readonly metrics?: HandlerMetrics
}

/**
 * Runs the dispatch loops outside a handler (docs/messaging.md "The send queue",
 * docs/webhooks.md "Delivery and the dispatcher"), for a host whose handlers are created
 * with `dispatch: { webhooks: false, messages: false }` (a separate worker process, for
 * example). Several dispatchers on one store never run one job twice at once (jobs are
 * claimed under a lease). Throws like `createHandler` on a malformed option.
 *
 * @category dispatch
 * @example
 * import { runDispatchers } from "@switchboard/http-adapter"
 * import { SqliteStorage } from "@switchboard/storage-sqlite"
 *
 * const dispatchers = runDispatchers({ storage: SqliteStorage.layer({ filename: "switchboard.db" }), secretKey: process.env.SWITCHBOARD_SECRET_KEY })
 * process.on("SIGTERM", () => void dispatchers.stop())
 */
export const runDispatchers = (given: RunDispatchersOptions): DispatchersHandle => {
  const options = withTracing(given)
  const storage = wakeOnEnqueue.pipe(
    Layer.provide(meteredStorageLayerOf(options.storage, options.metrics)),
    Layer.provideMerge(DispatchWake.layer)
  )
  const base = Layer.mergeAll(
    channelLayerOf({
      secretKey: options.secretKey,
      graphApi: options.graphApi,
      metaTemplateApi: options.metaTemplateApi,
      templateSync: options.templateSync
    }),
    webhookSettingsLayerOf(options.webhooks),
    sendQueueSettingsLayerOf(options.sendQueue),
    transportLayerOf(options)
  )
  const runtime = ManagedRuntime.make(
    mediaLayerOf(options.media, options.graphApi).pipe(Layer.provideMerge(Channels.layer.pipe(
      Layer.provideMerge(SecureRandom.layer),
      Layer.provideMerge(base),
      Layer.provideMerge(storage),
      Layer.provideMerge(dispatcherLoggerLayer(options.logger)),
      Layer.provideMerge(Logger.minimumLogLevel(effectLogLevelOf(options.logLevel))),
      Layer.provideMerge(tracingLayerOf(options.tracing)),
      Layer.provideMerge(metricsRecorderLayerOf(options.metrics))
    )))
  )
  return startDispatchers(
    runtime,
    {
      webhooks: options.dispatch?.webhooks ?? true,
      messages: options.dispatch?.messages ?? true,
      media: options.media !== undefined && (options.dispatch?.media ?? true),
      templates: options.dispatch?.templates ?? true
    },
    { ...options, mediaRetentionDays: options.media?.fetch?.retentionDays }
  )
}

/** The dispatchers' logger: Effect's JSON logger, the given one, or none (`false`). */
export const dispatcherLoggerLayer = (logger: Logger.Logger<unknown, unknown> | false | undefined): Layer.Layer<never> =>
  logger === false
    ? Logger.replace(Logger.defaultLogger, Logger.none)
    : logger === undefined
      ? Logger.json
      : Logger.replace(Logger.defaultLogger, logger)

/**
 * Runs the webhook dispatcher alone outside a handler (docs/webhooks.md "Delivery and the
 * dispatcher"): {@link runDispatchers} with `dispatch: { webhooks: true, messages: false }`,
 * for a host whose handlers are created with `webhooks: { dispatch: false }`. Throws like
 * `createHandler` on a malformed `secretKey` or `webhooks` option.
 *
 * @category webhooks
 * @example
 * import { dispatchWebhooks } from "@switchboard/http-adapter"
 * import { SqliteStorage } from "@switchboard/storage-sqlite"
 *
 * const dispatcher = dispatchWebhooks({ storage: SqliteStorage.layer({ filename: "switchboard.db" }), secretKey: process.env.SWITCHBOARD_SECRET_KEY })
 * process.on("SIGTERM", () => void dispatcher.stop())
 */
export const dispatchWebhooks = (options: DispatchWebhooksOptions): WebhookDispatcherHandle =>
  runDispatchers({ ...options, dispatch: { webhooks: true, messages: false } })

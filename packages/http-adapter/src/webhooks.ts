import { Clock, Duration, Effect, Fiber, Layer, Logger, ManagedRuntime, Ref } from "effect"
import {
  DispatchWake,
  makeLeasedLoopStatus,
  runWebhookDispatcher,
  SecureRandom,
  type Storage,
  WebhookSettings
} from "@switchboard/core"
import { channelLayerOf } from "./internal/channelOptions.js"
import { effectLogLevelOf, type HandlerLogLevel } from "./logLevel.js"

/**
 * Outgoing webhooks of a handler (docs/webhooks.md "Delivery and the dispatcher",
 * "Options"):
 * - `dispatch`: whether the handler runs the dispatcher in its own runtime once `ready`
 *   (default `true`); `false` when another process runs it ({@link dispatchWebhooks});
 * - `retryDelaysMs`: the delays between attempts, in milliseconds (default about 5 s,
 *   5 min, 30 min, 2 h, 5 h, 10 h, 10 h); a delivery fails after the last;
 * - `allowInsecureUrls`: accept `http://` endpoint URLs (development and tests only);
 * - `allowPrivateNetworks`: accept endpoints on loopback, private, link-local and other
 *   internal addresses (development and tests only);
 * - `pollIntervalMs`: the longest the dispatcher sleeps when no delivery is known to be
 *   due, in milliseconds (default 1 000); a delivery written by this handler wakes it at
 *   once, and a retry it scheduled wakes it when due.
 *
 * @category webhooks
 */
export interface WebhookHandlerOptions {
  readonly dispatch?: boolean
  readonly retryDelaysMs?: ReadonlyArray<number>
  readonly allowInsecureUrls?: boolean
  readonly allowPrivateNetworks?: boolean
  readonly pollIntervalMs?: number
}

/**
 * The `WebhookSettings` Layer of the `webhooks` option. Throws a `TypeError` naming the
 * option when `retryDelaysMs` is not a list of finite numbers ≥ 0 or `pollIntervalMs` is
 * not a positive number: a misconfigured host must not start.
 *
 * @internal
 */
export const webhookSettingsLayerOf = (options: WebhookHandlerOptions | undefined): Layer.Layer<WebhookSettings> => {
  const delays = options?.retryDelaysMs
  if (delays !== undefined) {
    if (!Array.isArray(delays) || !delays.every((delay) => typeof delay === "number" && Number.isFinite(delay) && delay >= 0)) {
      throw new TypeError("webhooks.retryDelaysMs must be a list of delays in milliseconds (finite numbers ≥ 0)")
    }
  }
  const poll = options?.pollIntervalMs
  if (poll !== undefined && !(typeof poll === "number" && Number.isFinite(poll) && poll > 0)) {
    throw new TypeError("webhooks.pollIntervalMs must be a positive number of milliseconds")
  }
  return WebhookSettings.layer({
    ...(delays === undefined ? {} : { retryDelaysMs: [...delays] }),
    ...(options?.allowInsecureUrls === undefined ? {} : { allowInsecureUrls: options.allowInsecureUrls }),
    ...(options?.allowPrivateNetworks === undefined ? {} : { allowPrivateNetworks: options.allowPrivateNetworks })
  })
}

/**
 * Options of {@link dispatchWebhooks}: the `storage` Layer (the same store as the
 * handlers'), the `secretKey` endpoint secrets are sealed under (base64, hex or 32 bytes,
 * as `createHandler`'s), the `webhooks` settings (`dispatch` is ignored) and the `logger`
 * (default Effect's JSON logger; `false` silences it).
 *
 * @category webhooks
 */
export interface DispatchWebhooksOptions {
  readonly storage: Layer.Layer<Storage, unknown>
  readonly secretKey?: string | Uint8Array
  readonly webhooks?: WebhookHandlerOptions
  readonly logger?: Logger.Logger<unknown, unknown> | false
  /** The least severe line written, as `createHandler`'s `logLevel` (default `"info"`). */
  readonly logLevel?: HandlerLogLevel
}

/**
 * A running dispatcher: `ready` resolves once the storage is open (rejects with its
 * error); `stop()` waits for the attempts in flight, stops the loop and closes the storage;
 * `lastPassEndedAt()` is when the loop last ended a pass (a claim of due deliveries), or
 * `null` before its first (or when it does not run): what a health check reads.
 *
 * @category webhooks
 */
export interface WebhookDispatcherHandle {
  readonly ready: Promise<void>
  readonly stop: () => Promise<void>
  readonly lastPassEndedAt: () => Date | null
}

/**
 * Runs the webhook dispatcher outside a handler (docs/webhooks.md "Delivery and the
 * dispatcher"), for a host whose handlers are created with `webhooks: { dispatch: false }`
 * (a separate worker process, for example). Several dispatchers on one store never send a
 * delivery twice at once (deliveries are claimed under a lease). Throws like
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
export const dispatchWebhooks = (options: DispatchWebhooksOptions): WebhookDispatcherHandle => {
  const runtime = ManagedRuntime.make(
    Layer.mergeAll(
      options.storage,
      SecureRandom.layer,
      DispatchWake.layer,
      channelLayerOf({ secretKey: options.secretKey }),
      webhookSettingsLayerOf(options.webhooks)
    ).pipe(
      Layer.provideMerge(dispatcherLoggerLayer(options.logger)),
      Layer.provideMerge(Logger.minimumLogLevel(effectLogLevelOf(options.logLevel)))
    )
  )
  return startDispatcher(runtime, options.webhooks)
}

/**
 * Forks the dispatcher loop in `runtime` once it is built, woken by the runtime's
 * `DispatchWake`; `stop` interrupts it (waiting for the attempts in flight) and disposes of
 * the runtime. The loop's sleeps do not keep the process alive (`unref`): a host that
 * stops serving without stopping the dispatcher still exits.
 *
 * @internal
 */
export const startDispatcher = <R, E>(
  runtime: ManagedRuntime.ManagedRuntime<R | Storage | SecureRandom | DispatchWake, E>,
  options: WebhookHandlerOptions | undefined,
  run: boolean = true
): WebhookDispatcherHandle => {
  let stopped = false
  let fiber: Fiber.RuntimeFiber<never, unknown> | undefined
  const status = Effect.runSync(makeLeasedLoopStatus)
  const ready = runtime.runtime().then(() => {
    if (run && !stopped) {
      fiber = runtime.runFork(
        Effect.flatMap(DispatchWake, (wake) =>
          runWebhookDispatcher({
            wake,
            status,
            ...(options?.pollIntervalMs === undefined ? {} : { pollIntervalMs: options.pollIntervalMs })
          })).pipe(Effect.withClock(hostClock))
      )
    }
  })
  ready.catch(() => undefined)
  const stop = async () => {
    stopped = true
    if (fiber !== undefined) await Effect.runPromise(Fiber.interrupt(fiber))
    await runtime.dispose()
  }
  const lastPassEndedAt = () => {
    const endedAt = Effect.runSync(Ref.get(status.lastPassEndedAt))
    return endedAt === null ? null : new Date(endedAt)
  }
  return { ready, stop, lastPassEndedAt }
}

/** Effect's default clock, with sleeps on timers that do not keep the process alive. */
const hostClock: Clock.Clock = (() => {
  const base = Clock.make()
  return {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: () => base.unsafeCurrentTimeMillis(),
    currentTimeMillis: base.currentTimeMillis,
    unsafeCurrentTimeNanos: () => base.unsafeCurrentTimeNanos(),
    currentTimeNanos: base.currentTimeNanos,
    sleep: (duration) =>
      Effect.async<void>((resume) => {
        const timer = setTimeout(() => resume(Effect.void), Duration.toMillis(duration))
        timer.unref?.()
        return Effect.sync(() => clearTimeout(timer))
      })
  }
})()

const dispatcherLoggerLayer = (logger: DispatchWebhooksOptions["logger"]): Layer.Layer<never> =>
  logger === false
    ? Logger.replace(Logger.defaultLogger, Logger.none)
    : logger === undefined
      ? Logger.json
      : Logger.replace(Logger.defaultLogger, logger)

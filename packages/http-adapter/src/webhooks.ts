import type { Layer, Logger } from "effect"
import { type Storage, WebhookSettings } from "@switchboard/core"
import type { HandlerLogLevel } from "./logLevel.js"
import type { SecretKeyOption } from "./internal/channelOptions.js"

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
  readonly secretKey?: SecretKeyOption
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


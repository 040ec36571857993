import { Context, Layer } from "effect"
import { DEFAULT_RETRY_DELAYS_MS } from "../model/webhooks.js"

/**
 * How outgoing webhooks behave (docs/webhooks.md "Options"):
 * - `retryDelaysMs`: the delays between attempts, in milliseconds (default
 *   {@link DEFAULT_RETRY_DELAYS_MS}); a delivery fails after the last;
 * - `allowInsecureUrls`: accept `http://` endpoint URLs (development and tests only);
 * - `allowPrivateNetworks`: accept URLs on loopback, private, link-local and other
 *   internal addresses (development and tests only).
 *
 * @category webhooks
 */
export interface WebhookSettingsValue {
  readonly retryDelaysMs: ReadonlyArray<number>
  readonly allowInsecureUrls: boolean
  readonly allowPrivateNetworks: boolean
}

/**
 * The webhook settings in use; default: the retry schedule of docs/webhooks.md, `https`
 * only, public addresses only. `createHandler({ webhooks })` provides them.
 *
 * @category webhooks
 */
export class WebhookSettings extends Context.Reference<WebhookSettings>()("@switchboard/core/WebhookSettings", {
  defaultValue: (): WebhookSettingsValue => ({
    retryDelaysMs: DEFAULT_RETRY_DELAYS_MS,
    allowInsecureUrls: false,
    allowPrivateNetworks: false
  })
}) {
  /** A Layer providing these settings (fields left out keep their defaults). */
  static readonly layer = (settings: Partial<WebhookSettingsValue>): Layer.Layer<WebhookSettings> =>
    Layer.succeed(WebhookSettings, {
      retryDelaysMs: settings.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS,
      allowInsecureUrls: settings.allowInsecureUrls ?? false,
      allowPrivateNetworks: settings.allowPrivateNetworks ?? false
    })
}

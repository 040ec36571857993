import { Effect, Schema } from "effect"
import type { WebhookSettingsValue } from "./WebhookSettings.js"

// PLACEHOLDER SIGNATURES for the branch work on outgoing webhooks: the implementation
// (ipaddr.js classification, DNS resolution) replaces these bodies before merge.

/**
 * An endpoint URL refused by the address rules (docs/webhooks.md "Address safety"):
 * not `https`, not a URL, or resolving to a loopback, private, link-local or other
 * internal address. `reason` says which, without secrets.
 *
 * @category errors
 */
export class WebhookUrlRefused extends Schema.TaggedError<WebhookUrlRefused>()("WebhookUrlRefused", {
  url: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `The webhook URL is refused: ${this.reason}`
  }
}

/** The address a delivery connects to: checked, never resolved again for the connection. */
export interface CheckedAddress {
  readonly address: string
  readonly family: 4 | 6
}

/**
 * At registration: `url` must parse, be `https` (or `http` with `allowInsecureUrls`), and
 * its host — an IP literal, or a name resolved now (one that does not resolve is
 * accepted, and checked at delivery) — must not be internal unless `allowPrivateNetworks`.
 */
export const checkWebhookUrl = (
  url: string,
  _settings: Pick<WebhookSettingsValue, "allowInsecureUrls" | "allowPrivateNetworks">
): Effect.Effect<URL, WebhookUrlRefused> =>
  Effect.try({ try: () => new URL(url), catch: () => new WebhookUrlRefused({ url, reason: "not a URL" }) })

/**
 * At each delivery: resolves the URL's host and checks every address as at registration;
 * answers the address to connect to (the connection must use it, not resolve again).
 */
export const resolveWebhookAddress = (
  url: URL,
  _settings: Pick<WebhookSettingsValue, "allowPrivateNetworks">
): Effect.Effect<CheckedAddress, WebhookUrlRefused> =>
  Effect.fail(new WebhookUrlRefused({ url: url.href, reason: "not implemented yet" }))

import { Schema } from "effect"

/**
 * The organization already has the most webhook endpoints allowed (a fixed product limit,
 * `MAX_WEBHOOK_ENDPOINTS_PER_ORGANIZATION`); nothing was written. HTTP 400
 * `webhook_endpoint_limit_reached` (docs/webhooks.md "Endpoints").
 *
 * @category errors
 */
export class WebhookEndpointLimitReached extends Schema.TaggedError<WebhookEndpointLimitReached>()(
  "WebhookEndpointLimitReached",
  { limit: Schema.Int }
) {
  override get message(): string {
    return `An organization may have at most ${this.limit} webhook endpoints`
  }
}

/**
 * The endpoint of a delivery sent again by hand is disabled: a disabled endpoint receives
 * nothing, so nothing was changed. Enable it first (its cancelled deliveries stay
 * cancelled; a failed or delivered one may then be sent again). HTTP 409
 * `webhook_endpoint_disabled` (docs/webhooks.md "Retries").
 *
 * @category errors
 */
export class WebhookEndpointDisabled extends Schema.TaggedError<WebhookEndpointDisabled>()(
  "WebhookEndpointDisabled",
  { uuid: Schema.String }
) {
  override get message(): string {
    return `Webhook endpoint ${this.uuid} is disabled: enable it before sending a delivery again`
  }
}

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

/**
 * The endpoint's previous signing secret is still in its overlap (it signs deliveries
 * until `previous_secret_expires_at`): a second rotation now would stop it at once, so
 * nothing was changed. Rotate again with `force: true` to drop that older secret now
 * (at most two secrets ever sign), or after it expires. HTTP 409 `rotation_in_progress`
 * (docs/webhooks.md "The secret").
 *
 * @category errors
 */
export class WebhookRotationInProgress extends Schema.TaggedError<WebhookRotationInProgress>()(
  "WebhookRotationInProgress",
  { uuid: Schema.String, previous_secret_expires_at: Schema.String }
) {
  override get message(): string {
    return `Webhook endpoint ${this.uuid} is rotating its secret: the previous secret signs until ${this.previous_secret_expires_at}; rotate with force: true to drop it now`
  }
}

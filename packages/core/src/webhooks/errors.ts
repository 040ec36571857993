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

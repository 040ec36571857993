import { Schema } from "effect"

/**
 * No organization has this id.
 *
 * @category errors
 */
export class OrganizationNotFound extends Schema.TaggedError<OrganizationNotFound>()(
  "OrganizationNotFound",
  { id: Schema.String }
) {
  override get message(): string {
    return `Organization ${this.id} not found`
  }
}

/**
 * No API key has this id.
 *
 * @category errors
 */
export class ApiKeyNotFound extends Schema.TaggedError<ApiKeyNotFound>()("ApiKeyNotFound", {
  id: Schema.String
}) {
  override get message(): string {
    return `API key ${this.id} not found`
  }
}

/**
 * A rotation was asked of a key that no longer works: revoked (`reason: "revoked"`), or
 * already past its `expires_at` (`reason: "expired"`). Nothing was written; issue a new key
 * instead (docs/standalone-server.md "Rotating an API key").
 *
 * @category errors
 */
export class ApiKeyNotRotatable extends Schema.TaggedError<ApiKeyNotRotatable>()("ApiKeyNotRotatable", {
  id: Schema.String,
  reason: Schema.Literal("revoked", "expired")
}) {
  override get message(): string {
    return `API key ${this.id} is ${this.reason}: it cannot be rotated; issue a new key instead`
  }
}

/**
 * The presented API key is unknown, revoked or expired (docs/http-adapter.md "Authentication", HTTP 401 `invalid_api_key`).
 *
 * @category errors
 */
export class ApiKeyInvalid extends Schema.TaggedError<ApiKeyInvalid>()("ApiKeyInvalid", {}) {
  override get message(): string {
    return "The API key is invalid or has been revoked"
  }
}

/**
 * The organization's subscription is not active (docs/http-adapter.md "Authentication", HTTP 403
 * `subscription_inactive`).
 *
 * @category errors
 */
export class SubscriptionInactive extends Schema.TaggedError<SubscriptionInactive>()(
  "SubscriptionInactive",
  { organization_id: Schema.String }
) {
  override get message(): string {
    return "The organization's subscription is not active"
  }
}

/**
 * The organization's plan does not include API access (docs/http-adapter.md "Authentication", HTTP 403
 * `api_access_not_allowed`).
 *
 * @category errors
 */
export class ApiAccessNotAllowed extends Schema.TaggedError<ApiAccessNotAllowed>()(
  "ApiAccessNotAllowed",
  { organization_id: Schema.String }
) {
  override get message(): string {
    return "The organization's plan does not allow API access"
  }
}

import { Schema } from "effect"

/**
 * Identifier of an organization: a UUID string.
 *
 * @category models
 */
export const OrganizationId = Schema.UUID.pipe(Schema.brand("OrganizationId"))
/** @category models */
export type OrganizationId = typeof OrganizationId.Type

/**
 * Identifier of an API key (not the key itself): a UUID string, safe to print and log.
 *
 * @category models
 */
export const ApiKeyId = Schema.UUID.pipe(Schema.brand("ApiKeyId"))
/** @category models */
export type ApiKeyId = typeof ApiKeyId.Type

/**
 * A plan limit: a non-negative integer count, or `null` for unlimited.
 *
 * @category models
 */
export const PlanLimit = Schema.NullOr(Schema.Int.pipe(Schema.nonNegative()))

/**
 * An organization's plan (docs/contacts.md "Plan limits"):
 * `contacts_limit` and `label_limit` cap the current number of contacts and labels
 * (`null` = unlimited); `api_access` says whether the plan allows the Developer API at all;
 * `media_bytes_limit` caps the bytes of the organization's stored media (docs/media.md
 * "Limits"; `null` = unlimited).
 *
 * @category models
 */
export const Plan = Schema.Struct({
  contacts_limit: PlanLimit,
  label_limit: PlanLimit,
  api_access: Schema.Boolean,
  media_bytes_limit: PlanLimit
})
/** @category models */
export type Plan = typeof Plan.Type

/**
 * Subscription status of an organization. Only `active` organizations may use the API
 * (docs/http-adapter.md "Authentication").
 *
 * @category models
 */
export const SubscriptionStatus = Schema.Literal("active", "inactive")
/** @category models */
export type SubscriptionStatus = typeof SubscriptionStatus.Type

/**
 * An organization: the tenant every other record belongs to. Timestamps are ISO 8601 UTC
 * strings.
 *
 * @category models
 */
export const Organization = Schema.Struct({
  id: OrganizationId,
  name: Schema.String,
  plan: Plan,
  subscription: SubscriptionStatus,
  created_at: Schema.String,
  updated_at: Schema.String
})
/** @category models */
export type Organization = typeof Organization.Type

/**
 * A stored API key. Only the SHA-256 hash (lowercase hex, 64 characters) of the key is
 * kept; `prefix` is the key's first characters, shown to tell keys apart. `revoked_at` is
 * an ISO 8601 UTC string once the key is revoked, else `null`. `expires_at` is the ISO 8601
 * UTC instant from which the key is refused like a revoked one (set when the key is rotated,
 * docs/standalone-server.md "Rotating an API key"), else `null`: it never expires.
 *
 * @category models
 */
export const ApiKey = Schema.Struct({
  id: ApiKeyId,
  organization_id: OrganizationId,
  prefix: Schema.String,
  hash: Schema.String,
  created_at: Schema.String,
  revoked_at: Schema.NullOr(Schema.String),
  expires_at: Schema.NullOr(Schema.String)
})
/** @category models */
export type ApiKey = typeof ApiKey.Type

/**
 * Whether `apiKey` is expired at `nowMs` (epoch milliseconds): it has an `expires_at` and
 * that instant is not after `nowMs`. An expired key is refused exactly as a revoked one.
 *
 * @category models
 */
export const apiKeyExpiredAt = (apiKey: ApiKey, nowMs: number): boolean =>
  apiKey.expires_at !== null && Date.parse(apiKey.expires_at) <= nowMs

/**
 * The longest overlap a rotation may give the old key: 7 days, in seconds (the longest a
 * webhook endpoint's previous secret is honoured too).
 *
 * @category models
 */
export const MAX_ROTATION_OVERLAP_SECONDS = 604_800

/**
 * The overlap a rotation gives the old key when none is asked: 24 hours, in seconds.
 *
 * @category models
 */
export const DEFAULT_ROTATION_OVERLAP_SECONDS = 86_400

/**
 * A freshly issued API key. `api_key` is the plain key: it is returned once, here, and
 * never stored or logged.
 *
 * @category models
 */
export interface IssuedApiKey {
  readonly key_id: ApiKeyId
  readonly organization_id: OrganizationId
  readonly prefix: string
  readonly api_key: string
}

/**
 * The outcome of a rotation (`Organizations.rotateApiKey`): the new key, shown once like
 * {@link IssuedApiKey}, and the old key as stored afterwards, with its `expires_at`.
 *
 * @category models
 */
export interface RotatedApiKey {
  readonly issued: IssuedApiKey
  readonly previous: ApiKey
}

/**
 * The organization context of an authenticated request.
 *
 * @category models
 */
export interface AuthenticatedOrganization {
  readonly organization: Organization
  readonly api_key_id: ApiKeyId
}

/**
 * Input of `Organizations.create`. `plan` fields left out default to unlimited with API
 * access; `subscription` defaults to `active`.
 *
 * @category models
 */
export interface CreateOrganizationInput {
  readonly name: string
  readonly plan?: Partial<Plan>
  readonly subscription?: SubscriptionStatus
}

/**
 * Input of `Organizations.update`: every field optional; plan fields given replace the
 * stored ones (`null` = unlimited).
 *
 * @category models
 */
export interface UpdateOrganizationInput {
  readonly name?: string
  readonly plan?: Partial<Plan>
  readonly subscription?: SubscriptionStatus
}

import { Clock, Context, Effect, Layer, Option } from "effect"
import { InvalidInput, type InputIssue } from "../model/commonErrors.js"
import { formatApiKey, hashApiKey, hashesEqual, API_KEY_BYTES, VISIBLE_PREFIX_LENGTH } from "../internal/apiKeys.js"
import { nowIso } from "../internal/time.js"
import { validName } from "../model/names.js"
import { SecureRandom } from "../random/SecureRandom.js"
import type { StorageError } from "../storage/errors.js"
import { Storage } from "../storage/Storage.js"
import {
  ApiAccessNotAllowed,
  ApiKeyInvalid,
  ApiKeyNotFound,
  ApiKeyNotRotatable,
  OrganizationNotFound,
  SubscriptionInactive
} from "../model/organizationErrors.js"
import {
  apiKeyExpiredAt,
  DEFAULT_ROTATION_OVERLAP_SECONDS,
  MAX_ROTATION_OVERLAP_SECONDS,
  type ApiKey,
  type ApiKeyId,
  type AuthenticatedOrganization,
  type CreateOrganizationInput,
  type IssuedApiKey,
  type Organization,
  type OrganizationId,
  type Plan,
  type RotatedApiKey,
  type UpdateOrganizationInput
} from "../model/organizations.js"

/**
 * Organizations, plans, subscriptions and API keys (docs/http-adapter.md "Authentication").
 *
 * @category services
 */
export interface OrganizationsService {
  /**
   * Creates an organization. Plan fields left out mean unlimited with API access; the
   * subscription defaults to `active`. Fails with `InvalidInput` for an empty or too long
   * name (1–255 characters after trimming) or a negative or fractional limit.
   */
  readonly create: (input: CreateOrganizationInput) => Effect.Effect<Organization, InvalidInput | StorageError>
  /** Changes name, plan fields or subscription; fields left out are kept. */
  readonly update: (
    id: OrganizationId,
    input: UpdateOrganizationInput
  ) => Effect.Effect<Organization, OrganizationNotFound | InvalidInput | StorageError>
  /** The organization with this id. */
  readonly get: (id: OrganizationId) => Effect.Effect<Organization, OrganizationNotFound | StorageError>
  /** Every organization, oldest first. */
  readonly list: () => Effect.Effect<ReadonlyArray<Organization>, StorageError>
  /**
   * Issues a new API key for the organization: 32 random bytes, returned once in
   * `api_key` and stored only as its SHA-256 hash.
   */
  readonly issueApiKey: (
    organizationId: OrganizationId
  ) => Effect.Effect<IssuedApiKey, OrganizationNotFound | StorageError>
  /** Revokes a key; revoking a revoked key is a no-op that returns it as it is. */
  readonly revokeApiKey: (id: ApiKeyId) => Effect.Effect<ApiKey, ApiKeyNotFound | StorageError>
  /**
   * Rotates a key with an overlap (docs/standalone-server.md "Rotating an API key"): issues
   * a new key for the key's organization (shown once, like `issueApiKey`) and gives the old
   * key an `expires_at` `expiresInSeconds` from now (default 86 400, 24 h; 0 to 604 800,
   * whole seconds), both in one atomic step. From that instant the old key is refused like
   * a revoked one, in every process. A key that already expires earlier keeps its earlier
   * `expires_at` (a rotation never lengthens a key's life). Fails with `InvalidInput`
   * (field `expires_in`) for an overlap out of range, `ApiKeyNotFound` for an unknown key and
   * `ApiKeyNotRotatable` for a revoked or already expired one; nothing is written then.
   */
  readonly rotateApiKey: (
    id: ApiKeyId,
    options?: { readonly expiresInSeconds?: number }
  ) => Effect.Effect<RotatedApiKey, InvalidInput | ApiKeyNotFound | ApiKeyNotRotatable | StorageError>
  /**
   * Every key of the organization (its hash and prefix, `created_at`, `revoked_at`,
   * `expires_at`; never the key itself), oldest first. Fails with `OrganizationNotFound`.
   */
  readonly listApiKeys: (
    organizationId: OrganizationId
  ) => Effect.Effect<ReadonlyArray<ApiKey>, OrganizationNotFound | StorageError>
  /**
   * Resolves a plain API key to its organization, comparing hashes in constant time, then
   * checks access in the order of docs/http-adapter.md "Authentication": unknown, revoked
   * or expired key (its `expires_at` not after the clock's now, read on every call) →
   * `ApiKeyInvalid`;
   * inactive subscription → `SubscriptionInactive`; plan without API access →
   * `ApiAccessNotAllowed`.
   */
  readonly authenticate: (
    apiKey: string
  ) => Effect.Effect<
    AuthenticatedOrganization,
    ApiKeyInvalid | SubscriptionInactive | ApiAccessNotAllowed | StorageError
  >
}

/**
 * Tag of the {@link OrganizationsService}; `Organizations.layer` needs `Storage` and
 * `SecureRandom`.
 *
 * @category services
 */
export class Organizations extends Context.Tag("@switchboard/core/Organizations")<
  Organizations,
  OrganizationsService
>() {
  static readonly layer: Layer.Layer<Organizations, never, Storage | SecureRandom> = Layer.effect(
    Organizations,
    Effect.suspend(() => make)
  )
}

/** What {@link OrganizationsService.authenticate} answers once the credential is read. */
type AuthenticationResult = Effect.Effect<
  AuthenticatedOrganization,
  ApiKeyInvalid | SubscriptionInactive | ApiAccessNotAllowed
>

const DEFAULT_PLAN: Plan = { contacts_limit: null, label_limit: null, media_bytes_limit: null, api_access: true }

const make = Effect.gen(function* () {
  const { organizations } = yield* Storage
  const random = yield* SecureRandom

  const get = Effect.fn("Organizations.get")(function* (id: OrganizationId) {
    const found = yield* organizations.findById(id)
    if (Option.isNone(found)) return yield* new OrganizationNotFound({ id })
    return found.value
  })

  const create = Effect.fn("Organizations.create")(function* (input: CreateOrganizationInput) {
    const name = yield* validName(input.name)
    const plan = yield* validPlan({ ...DEFAULT_PLAN, ...input.plan })
    const now = yield* nowIso
    const organization: Organization = {
      id: (yield* random.uuid()) as OrganizationId,
      name,
      plan,
      subscription: input.subscription ?? "active",
      created_at: now,
      updated_at: now
    }
    yield* organizations.insert(organization)
    return organization
  })

  const update = Effect.fn("Organizations.update")(function* (
    id: OrganizationId,
    input: UpdateOrganizationInput
  ) {
    const current = yield* get(id)
    const updated: Organization = {
      ...current,
      name: input.name === undefined ? current.name : yield* validName(input.name),
      plan: yield* validPlan({ ...current.plan, ...input.plan }),
      subscription: input.subscription ?? current.subscription,
      updated_at: yield* nowIso
    }
    const replaced = yield* organizations.replace(updated)
    if (!replaced) return yield* new OrganizationNotFound({ id })
    return updated
  })

  /** A new key of the organization: its record (hash only) and the plain key, shown once. */
  const newApiKey = Effect.fn("Organizations.newApiKey")(function* (organizationId: OrganizationId) {
    const apiKey = formatApiKey(yield* random.bytes(API_KEY_BYTES))
    const record: ApiKey = {
      id: (yield* random.uuid()) as ApiKeyId,
      organization_id: organizationId,
      prefix: apiKey.slice(0, VISIBLE_PREFIX_LENGTH),
      hash: hashApiKey(apiKey),
      created_at: yield* nowIso,
      revoked_at: null,
      expires_at: null
    }
    const issued: IssuedApiKey = {
      key_id: record.id,
      organization_id: organizationId,
      prefix: record.prefix,
      api_key: apiKey
    }
    return { record, issued }
  })

  const issueApiKey = Effect.fn("Organizations.issueApiKey")(function* (organizationId: OrganizationId) {
    yield* get(organizationId)
    const { issued, record } = yield* newApiKey(organizationId)
    yield* organizations.insertApiKey(record)
    return issued
  })

  const rotateApiKey = Effect.fn("Organizations.rotateApiKey")(function* (
    id: ApiKeyId,
    options: { readonly expiresInSeconds?: number } = {}
  ) {
    const expiresInSeconds = options.expiresInSeconds ?? DEFAULT_ROTATION_OVERLAP_SECONDS
    if (!Number.isSafeInteger(expiresInSeconds) || expiresInSeconds < 0 || expiresInSeconds > MAX_ROTATION_OVERLAP_SECONDS) {
      return yield* new InvalidInput({
        issues: [
          {
            code: "out_of_range",
            field: "expires_in",
            message: `expires_in must be a whole number of seconds from 0 to ${MAX_ROTATION_OVERLAP_SECONDS} (7 days)`
          }
        ]
      })
    }
    const found = yield* organizations.findApiKeyById(id)
    if (Option.isNone(found)) return yield* new ApiKeyNotFound({ id })
    const nowMs = yield* Clock.currentTimeMillis
    if (found.value.revoked_at !== null) return yield* new ApiKeyNotRotatable({ id, reason: "revoked" })
    if (apiKeyExpiredAt(found.value, nowMs)) return yield* new ApiKeyNotRotatable({ id, reason: "expired" })
    const { issued, record } = yield* newApiKey(found.value.organization_id)
    const expiresAt = new Date(nowMs + expiresInSeconds * 1000).toISOString()
    const previous = yield* organizations.rotateApiKey(id, record, expiresAt)
    if (Option.isSome(previous)) {
      const rotated: RotatedApiKey = { issued, previous: previous.value }
      return rotated
    }
    // Revoked (or gone) between the read and the rotation: nothing was written.
    const now = yield* organizations.findApiKeyById(id)
    return yield* Option.isSome(now) ? new ApiKeyNotRotatable({ id, reason: "revoked" }) : new ApiKeyNotFound({ id })
  })

  const listApiKeys = Effect.fn("Organizations.listApiKeys")(function* (organizationId: OrganizationId) {
    yield* get(organizationId)
    return yield* organizations.listApiKeys(organizationId)
  })

  const revokeApiKey = Effect.fn("Organizations.revokeApiKey")(function* (id: ApiKeyId) {
    const revoked = yield* organizations.revokeApiKey(id, yield* nowIso)
    if (Option.isNone(revoked)) return yield* new ApiKeyNotFound({ id })
    return revoked.value
  })

  // A plain function returning one Effect, no generator and no span: it runs on every
  // authenticated request (docs/benchmarks.md: a traced `Effect.fn` costs ~15–20 µs, a
  // generator's steps a few more).
  const authenticate: OrganizationsService["authenticate"] = (apiKey) => {
    const hash = hashApiKey(apiKey)
    return Effect.flatMap(organizations.findCredentialByHash(hash), (found): AuthenticationResult => {
      if (Option.isNone(found)) return Effect.fail(new ApiKeyInvalid())
      const { api_key: stored, organization } = found.value
      if (!hashesEqual(stored.hash, hash) || stored.revoked_at !== null) return Effect.fail(new ApiKeyInvalid())
      // An expiring key is compared with the clock now, on every request: never by a store
      // (the SQLite credential cache may hold the key since before it expired).
      if (stored.expires_at !== null) {
        return Effect.flatMap(Clock.currentTimeMillis, (nowMs) =>
          apiKeyExpiredAt(stored, nowMs) ? Effect.fail(new ApiKeyInvalid()) : access(stored, organization)
        )
      }
      return access(stored, organization)
    })
  }

  const service: OrganizationsService = {
    create,
    update,
    get,
    list: () => organizations.list(),
    issueApiKey,
    revokeApiKey,
    rotateApiKey,
    listApiKeys,
    authenticate
  }
  return service
})

/** The access checks after the key: subscription, then the plan's API access. */
const access = (stored: ApiKey, organization: Organization): AuthenticationResult => {
  if (organization.subscription !== "active") {
    return Effect.fail(new SubscriptionInactive({ organization_id: organization.id }))
  }
  if (!organization.plan.api_access) {
    return Effect.fail(new ApiAccessNotAllowed({ organization_id: organization.id }))
  }
  const authenticated: AuthenticatedOrganization = { organization, api_key_id: stored.id }
  return Effect.succeed(authenticated)
}

const validPlan = (plan: Plan): Effect.Effect<Plan, InvalidInput> => {
  const issues: Array<InputIssue> = []
  for (const field of ["contacts_limit", "label_limit", "media_bytes_limit"] as const) {
    const limit = plan[field]
    if (limit !== null && limit !== undefined && !(Number.isSafeInteger(limit) && limit >= 0)) {
      issues.push({ code: "out_of_range", field, message: `${field} must be a non-negative integer or null` })
    }
  }
  return issues.length > 0 ? Effect.fail(new InvalidInput({ issues })) : Effect.succeed(plan)
}

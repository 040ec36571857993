import type { Effect, Option } from "effect"
import type { ApiKey, ApiKeyId, Organization, OrganizationId } from "../model/organizations.js"
import type { StorageError } from "./errors.js"

/**
 * An API key together with the organization it belongs to, as found by its hash.
 *
 * @category storage
 */
export interface StoredCredential {
  readonly api_key: ApiKey
  readonly organization: Organization
}

/**
 * Organizations and their API keys. The one repository that reads across organizations
 * (authentication finds a key by its hash; the admin CLI lists organizations).
 * Every method fails only with {@link StorageError}.
 *
 * @category storage
 */
export interface OrganizationRepository {
  /** Inserts a new organization. */
  readonly insert: (organization: Organization) => Effect.Effect<void, StorageError>
  /** Replaces the stored organization with the same id; `false` when there is none. */
  readonly replace: (organization: Organization) => Effect.Effect<boolean, StorageError>
  /** The organization with this id. */
  readonly findById: (id: OrganizationId) => Effect.Effect<Option.Option<Organization>, StorageError>
  /** Every organization, oldest first. */
  readonly list: () => Effect.Effect<ReadonlyArray<Organization>, StorageError>
  /** Inserts a new API key (its hash, never the key). */
  readonly insertApiKey: (apiKey: ApiKey) => Effect.Effect<void, StorageError>
  /** The API key with this id. */
  readonly findApiKeyById: (id: ApiKeyId) => Effect.Effect<Option.Option<ApiKey>, StorageError>
  /**
   * Sets `revoked_at` on the key when it is not revoked yet, and returns the key as stored
   * afterwards (revoking twice keeps the first time).
   */
  readonly revokeApiKey: (
    id: ApiKeyId,
    revokedAt: string
  ) => Effect.Effect<Option.Option<ApiKey>, StorageError>
  /**
   * Every API key of the organization, revoked and expired ones too, oldest first
   * (`created_at`, then `id`); none for an unknown organization.
   */
  readonly listApiKeys: (organizationId: OrganizationId) => Effect.Effect<ReadonlyArray<ApiKey>, StorageError>
  /**
   * Rotates the key `previousId` to `newKey`, in one atomic step: when the previous key
   * exists, belongs to `newKey.organization_id` and is not revoked, it gets `expires_at`
   * (unless it already expires earlier: a rotation never lengthens a key's life) and
   * `newKey` is inserted; the previous key is returned as stored afterwards. Otherwise
   * nothing is written and the answer is `None`. Whether the previous key has already
   * expired is the caller's check (core compares with its clock).
   */
  readonly rotateApiKey: (
    previousId: ApiKeyId,
    newKey: ApiKey,
    expiresAt: string
  ) => Effect.Effect<Option.Option<ApiKey>, StorageError>
  /**
   * The key whose SHA-256 hash (lowercase hex) is `hash`, revoked or expired or not, with
   * its organization: one look-up for every authenticated request. A store never filters
   * on `expires_at`: core compares it with its clock on every request.
   */
  readonly findCredentialByHash: (
    hash: string
  ) => Effect.Effect<Option.Option<StoredCredential>, StorageError>
}

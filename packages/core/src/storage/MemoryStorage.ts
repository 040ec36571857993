import { Effect, Layer, Option } from "effect"
import type { ApiKey, ApiKeyId, Organization, OrganizationId } from "../organizations/model.js"
import { Storage, type StorageService } from "./Storage.js"

/**
 * Builds an in-memory {@link StorageService}: plain maps inside this process, lost when it
 * ends. Every method runs synchronously, so each is atomic. For tests, demos and
 * single-process deployments that need no persistence.
 *
 * @category constructors
 */
export const make = (): StorageService => {
  const organizations = new Map<OrganizationId, Organization>()
  const apiKeys = new Map<ApiKeyId, ApiKey>()
  const apiKeyIdsByHash = new Map<string, ApiKeyId>()

  return {
    organizations: {
      insert: (organization) => Effect.sync(() => void organizations.set(organization.id, organization)),
      replace: (organization) =>
        Effect.sync(() => {
          if (!organizations.has(organization.id)) return false
          organizations.set(organization.id, organization)
          return true
        }),
      findById: (id) => Effect.sync(() => Option.fromNullable(organizations.get(id))),
      list: () =>
        Effect.sync(() =>
          [...organizations.values()].sort((a, b) =>
            a.created_at === b.created_at ? a.id.localeCompare(b.id) : a.created_at.localeCompare(b.created_at)
          )
        ),
      insertApiKey: (apiKey) =>
        Effect.sync(() => {
          apiKeys.set(apiKey.id, apiKey)
          apiKeyIdsByHash.set(apiKey.hash, apiKey.id)
        }),
      findApiKeyById: (id) => Effect.sync(() => Option.fromNullable(apiKeys.get(id))),
      revokeApiKey: (id, revokedAt) =>
        Effect.sync(() => {
          const apiKey = apiKeys.get(id)
          if (apiKey === undefined) return Option.none()
          const revoked = apiKey.revoked_at === null ? { ...apiKey, revoked_at: revokedAt } : apiKey
          apiKeys.set(id, revoked)
          return Option.some(revoked)
        }),
      findCredentialByHash: (hash) =>
        Effect.sync(() => {
          const id = apiKeyIdsByHash.get(hash)
          const apiKey = id === undefined ? undefined : apiKeys.get(id)
          const organization = apiKey === undefined ? undefined : organizations.get(apiKey.organization_id)
          return apiKey === undefined || organization === undefined
            ? Option.none()
            : Option.some({ api_key: apiKey, organization })
        })
    }
  }
}

/**
 * A Layer providing a fresh in-memory {@link Storage} each time it is built.
 *
 * @category layers
 * @example
 * import { Effect } from "effect"
 * import { Core, MemoryStorage, Organizations } from "@switchboard/core"
 *
 * const program = Organizations.pipe(Effect.flatMap((orgs) => orgs.create({ name: "Acme" })))
 * Effect.runPromise(program.pipe(Effect.provide(Core.layer), Effect.provide(MemoryStorage.layer)))
 */
export const layer: Layer.Layer<Storage> = Layer.sync(Storage, make)

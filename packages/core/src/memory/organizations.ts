import { Effect, Option } from "effect"
import type { ApiKey } from "../model/organizations.js"
import type { MemoryState } from "./state.js"
import type { OrganizationRepository } from "../storage/OrganizationRepository.js"

/** The organizations repository of the memory store. */
export const organizationRepository = (state: MemoryState): OrganizationRepository => ({
  insert: (organization) => Effect.sync(() => void state.organizations.set(organization.id, organization)),
  replace: (organization) =>
    Effect.sync(() => {
      if (!state.organizations.has(organization.id)) return false
      state.organizations.set(organization.id, organization)
      return true
    }),
  findById: (id) => Effect.sync(() => Option.fromNullable(state.organizations.get(id))),
  list: () =>
    Effect.sync(() =>
      [...state.organizations.values()].sort((a, b) =>
        a.created_at === b.created_at ? a.id.localeCompare(b.id) : a.created_at.localeCompare(b.created_at)
      )
    ),
  insertApiKey: (apiKey) =>
    Effect.sync(() => {
      state.apiKeys.set(apiKey.id, apiKey)
      state.apiKeyIdsByHash.set(apiKey.hash, apiKey.id)
    }),
  findApiKeyById: (id) => Effect.sync(() => Option.fromNullable(state.apiKeys.get(id))),
  revokeApiKey: (id, revokedAt) =>
    Effect.sync(() => {
      const apiKey = state.apiKeys.get(id)
      if (apiKey === undefined) return Option.none()
      const revoked = apiKey.revoked_at === null ? { ...apiKey, revoked_at: revokedAt } : apiKey
      state.apiKeys.set(id, revoked)
      return Option.some(revoked)
    }),
  listApiKeys: (organizationId) =>
    Effect.sync(() =>
      [...state.apiKeys.values()]
        .filter((apiKey) => apiKey.organization_id === organizationId)
        .sort((a, b) => (a.created_at === b.created_at ? a.id.localeCompare(b.id) : a.created_at.localeCompare(b.created_at)))
    ),
  rotateApiKey: (previousId, newKey, expiresAt) =>
    Effect.sync(() => {
      const previous = state.apiKeys.get(previousId)
      if (previous === undefined || previous.organization_id !== newKey.organization_id || previous.revoked_at !== null) {
        return Option.none()
      }
      // A rotation never lengthens a key's life: an earlier expiry is kept.
      const expiring: ApiKey =
        previous.expires_at !== null && previous.expires_at <= expiresAt ? previous : { ...previous, expires_at: expiresAt }
      state.apiKeys.set(previousId, expiring)
      state.apiKeys.set(newKey.id, newKey)
      state.apiKeyIdsByHash.set(newKey.hash, newKey.id)
      return Option.some(expiring)
    }),
  findCredentialByHash: (hash) =>
    Effect.sync(() => {
      const id = state.apiKeyIdsByHash.get(hash)
      const apiKey = id === undefined ? undefined : state.apiKeys.get(id)
      const organization = apiKey === undefined ? undefined : state.organizations.get(apiKey.organization_id)
      return apiKey === undefined || organization === undefined
        ? Option.none()
        : Option.some({ api_key: apiKey, organization })
    })
})

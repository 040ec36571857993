import { Option } from "effect"
import type { ApiKey, ApiKeyId, Organization, OrganizationId, OrganizationRepository } from "@switchboard/core"
import type { ApiKeyDocument, OrganizationDocument } from "../internal/documents.js"
import { attempt } from "../internal/driver.js"
import { byId, eq } from "../internal/queries.js"
import type { Collections } from "../internal/schema.js"
import type { Usage } from "../internal/usage.js"

/**
 * `Storage.organizations` on MongoDB: collections `organizations` and `api_keys` (unique
 * index on the key hash). Inserting an organization also creates its plan-limit usage
 * document. Each method fails only with `StorageError` naming it.
 *
 * @category repositories
 */
export const organizationRepository = (collections: Collections, usage: Usage): OrganizationRepository => ({
  insert: (organization) =>
    attempt("organizations.insert", async () => {
      await collections.organizations.insertOne(organizationDocument(organization))
      await usage.create(organization.id)
    }),
  replace: (organization) =>
    attempt("organizations.replace", async () => {
      const { _id, ...fields } = organizationDocument(organization)
      const result = await collections.organizations.replaceOne(byId(_id), fields)
      return result.matchedCount > 0
    }),
  findById: (id) =>
    attempt("organizations.findById", async () =>
      Option.map(Option.fromNullable(await collections.organizations.findOne(byId(id))), organizationRecord)
    ),
  list: () =>
    attempt("organizations.list", async () =>
      (await collections.organizations.find({}, { sort: { created_at: 1, _id: 1 } }).toArray()).map(organizationRecord)
    ),
  insertApiKey: (apiKey) =>
    attempt("organizations.insertApiKey", async () => {
      const { id, ...fields } = apiKey
      await collections.apiKeys.insertOne({ _id: id, ...fields })
    }),
  findApiKeyById: (id) =>
    attempt("organizations.findApiKeyById", async () =>
      Option.map(Option.fromNullable(await collections.apiKeys.findOne(byId(id))), apiKeyRecord)
    ),
  revokeApiKey: (id, revokedAt) =>
    attempt("organizations.revokeApiKey", async () => {
      // Only a key not revoked yet gets the time: revoking twice keeps the first.
      await collections.apiKeys.updateOne({ _id: eq(id), revoked_at: eq(null) }, { $set: { revoked_at: revokedAt } })
      return Option.map(Option.fromNullable(await collections.apiKeys.findOne(byId(id))), apiKeyRecord)
    }),
  findCredentialByHash: (hash) =>
    attempt("organizations.findCredentialByHash", async () => {
      const key = await collections.apiKeys.findOne({ hash: eq(hash) })
      if (key === null) return Option.none()
      const organization = await collections.organizations.findOne(byId(key.organization_id))
      return organization === null
        ? Option.none()
        : Option.some({ api_key: apiKeyRecord(key), organization: organizationRecord(organization) })
    })
})

const organizationDocument = (organization: Organization): OrganizationDocument => ({
  _id: organization.id,
  name: organization.name,
  plan: {
    contacts_limit: organization.plan.contacts_limit,
    label_limit: organization.plan.label_limit,
    media_bytes_limit: organization.plan.media_bytes_limit ?? null,
    api_access: organization.plan.api_access
  },
  subscription: organization.subscription,
  created_at: organization.created_at,
  updated_at: organization.updated_at
})

const organizationRecord = (d: OrganizationDocument): Organization => ({
  id: d._id as OrganizationId,
  name: d.name,
  plan: {
    contacts_limit: d.plan.contacts_limit,
    label_limit: d.plan.label_limit,
    media_bytes_limit: d.plan.media_bytes_limit ?? null,
    api_access: d.plan.api_access
  },
  subscription: d.subscription,
  created_at: d.created_at,
  updated_at: d.updated_at
})

const apiKeyRecord = (d: ApiKeyDocument): ApiKey => ({
  id: d._id as ApiKeyId,
  organization_id: d.organization_id as OrganizationId,
  prefix: d.prefix,
  hash: d.hash,
  created_at: d.created_at,
  revoked_at: d.revoked_at
})

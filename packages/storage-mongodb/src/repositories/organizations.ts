import { Option } from "effect"
import type { ApiKey, ApiKeyId, Organization, OrganizationId, OrganizationRepository } from "@switchboard/core"
import type { ApiKeyDocument, OrganizationDocument } from "../internal/documents.js"
import { attempt } from "../internal/driver.js"
import { byId, eq, literal } from "../internal/queries.js"
import type { Collections } from "../internal/schema.js"
import type { Usage } from "../internal/usage.js"

/**
 * `Storage.organizations` on MongoDB: collections `organizations` and `api_keys` (unique
 * index on the key hash). Inserting an organization also creates its plan-limit usage
 * document. Each method fails only with `StorageError` naming it.
 *
 * `rotateApiKey` writes two documents: the new key is inserted first, then the old key's
 * expiry is set by one conditional update (a key not revoked, of the same organization);
 * when that update matches nothing, the new key is deleted again. A crash between the two
 * can leave a new key nobody was ever shown (harmless: its plain key exists nowhere) but
 * never an expiring key without its successor.
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
  listApiKeys: (organizationId) =>
    attempt("organizations.listApiKeys", async () =>
      (await collections.apiKeys.find({ organization_id: eq(organizationId) }, { sort: { created_at: 1, _id: 1 } }).toArray()).map(
        apiKeyRecord
      )
    ),
  rotateApiKey: (previousId, newKey, expiresAt) =>
    attempt("organizations.rotateApiKey", async () => {
      const { id, ...fields } = newKey
      await collections.apiKeys.insertOne({ _id: id, ...fields })
      // A rotation never lengthens a key's life: an earlier expiry is kept ($min of ISO
      // strings, which sort as time; a document without the field counts as never expiring).
      const previous = await collections.apiKeys.findOneAndUpdate(
        { _id: eq(previousId), organization_id: eq(newKey.organization_id), revoked_at: eq(null) },
        [{ $set: { expires_at: { $min: [{ $ifNull: ["$expires_at", literal(expiresAt)] }, literal(expiresAt)] } } }],
        { returnDocument: "after" }
      )
      if (previous === null) {
        await collections.apiKeys.deleteOne(byId(id))
        return Option.none()
      }
      return Option.some(apiKeyRecord(previous))
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
  revoked_at: d.revoked_at,
  expires_at: d.expires_at ?? null
})

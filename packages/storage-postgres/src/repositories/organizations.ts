import { Option } from "effect"
import type {
  ApiKey,
  ApiKeyId,
  Organization,
  OrganizationId,
  OrganizationRepository,
  StoredCredential,
  SubscriptionStatus
} from "@switchboard/core"
import { attempt, type RepositoryFactory } from "../internal/sql.js"

/**
 * `Storage.organizations` on PostgreSQL: tables `organizations` and `api_keys`
 * (src/schema/organizations.ts). Each method is one statement, so each is atomic;
 * `revokeApiKey` keeps the first revocation time (`COALESCE`) and answers the key as
 * stored afterwards (`RETURNING`).
 *
 * `findCredentialByHash` is one exact join through the unique index on `api_keys.hash`,
 * asked on every call: nothing is cached, so a key revoked or an organization deactivated
 * by another process (the admin CLI, another server) is refused on the very next request.
 *
 * @category repositories
 */
export const organizationRepository: RepositoryFactory<OrganizationRepository> = (db) => {
  const SQL = statementsOf(db.schema)
  return {
    insert: (organization) =>
      attempt("organizations.insert", async () => {
        await db.sql.run(SQL.insert, encodeOrganization(organization))
      }),
    replace: (organization) =>
      attempt("organizations.replace", async () => (await db.sql.run(SQL.replace, encodeOrganization(organization))) > 0),
    findById: (id) =>
      attempt("organizations.findById", async () =>
        Option.map(Option.fromNullable(await db.sql.row<OrganizationRow>(SQL.findById, [id])), decodeOrganization)
      ),
    list: () =>
      attempt("organizations.list", async () => (await db.sql.rows<OrganizationRow>(SQL.list)).map(decodeOrganization)),
    insertApiKey: (apiKey) =>
      attempt("organizations.insertApiKey", async () => {
        await db.sql.run(SQL.insertApiKey, [
          apiKey.id,
          apiKey.organization_id,
          apiKey.prefix,
          apiKey.hash,
          apiKey.created_at,
          apiKey.revoked_at
        ])
      }),
    findApiKeyById: (id) =>
      attempt("organizations.findApiKeyById", async () =>
        Option.map(Option.fromNullable(await db.sql.row<ApiKeyRow>(SQL.findApiKeyById, [id])), decodeApiKey)
      ),
    revokeApiKey: (id, revokedAt) =>
      attempt("organizations.revokeApiKey", async () =>
        Option.map(Option.fromNullable(await db.sql.row<ApiKeyRow>(SQL.revokeApiKey, [id, revokedAt])), decodeApiKey)
      ),
    findCredentialByHash: (hash) =>
      attempt("organizations.findCredentialByHash", async () =>
        Option.map(Option.fromNullable(await db.sql.row<CredentialRow>(SQL.findCredentialByHash, [hash])), decodeCredential)
      )
  }
}

const ORGANIZATION_COLUMNS = "id, name, contacts_limit, label_limit, api_access, subscription, created_at, updated_at"
const API_KEY_COLUMNS = "id, organization_id, prefix, hash, created_at, revoked_at"

/** The statements of this repository on `schema`. */
const statementsOf = (schema: string) =>
  ({
    insert: `INSERT INTO ${schema}.organizations (${ORGANIZATION_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    replace: `UPDATE ${schema}.organizations SET name = $2, contacts_limit = $3, label_limit = $4, api_access = $5,
      subscription = $6, created_at = $7, updated_at = $8
      WHERE id = $1`,
    findById: `SELECT ${ORGANIZATION_COLUMNS} FROM ${schema}.organizations WHERE id = $1`,
    list: `SELECT ${ORGANIZATION_COLUMNS} FROM ${schema}.organizations ORDER BY created_at, id`,
    insertApiKey: `INSERT INTO ${schema}.api_keys (${API_KEY_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)`,
    findApiKeyById: `SELECT ${API_KEY_COLUMNS} FROM ${schema}.api_keys WHERE id = $1`,
    // COALESCE keeps the first revocation time; RETURNING gives the row as stored afterwards.
    revokeApiKey: `UPDATE ${schema}.api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1
      RETURNING ${API_KEY_COLUMNS}`,
    findCredentialByHash: `SELECT k.id AS key_id, k.organization_id AS key_organization_id, k.prefix AS key_prefix,
        k.hash AS key_hash, k.created_at AS key_created_at, k.revoked_at AS key_revoked_at,
        o.id, o.name, o.contacts_limit, o.label_limit, o.api_access, o.subscription, o.created_at, o.updated_at
      FROM ${schema}.api_keys AS k JOIN ${schema}.organizations AS o ON o.id = k.organization_id
      WHERE k.hash = $1`
  }) as const

/** A row of `organizations`: the plan flattened. */
interface OrganizationRow {
  readonly id: string
  readonly name: string
  readonly contacts_limit: number | null
  readonly label_limit: number | null
  readonly api_access: boolean
  readonly subscription: string
  readonly created_at: string
  readonly updated_at: string
}

/** A row of `api_keys`. */
interface ApiKeyRow {
  readonly id: string
  readonly organization_id: string
  readonly prefix: string
  readonly hash: string
  readonly created_at: string
  readonly revoked_at: string | null
}

/** A row of the credential join: the organization's columns plus the key's, prefixed `key_`. */
interface CredentialRow extends OrganizationRow {
  readonly key_id: string
  readonly key_organization_id: string
  readonly key_prefix: string
  readonly key_hash: string
  readonly key_created_at: string
  readonly key_revoked_at: string | null
}

/** The parameters `$1 … $8` of `insert` and `replace`, in {@link ORGANIZATION_COLUMNS} order. */
const encodeOrganization = (organization: Organization): ReadonlyArray<unknown> => [
  organization.id,
  organization.name,
  organization.plan.contacts_limit,
  organization.plan.label_limit,
  organization.plan.api_access,
  organization.subscription,
  organization.created_at,
  organization.updated_at
]

// The casts below are safe: the ids were written from branded values and a CHECK
// constraint bounds `subscription`.
const decodeOrganization = (row: OrganizationRow): Organization => ({
  id: row.id as OrganizationId,
  name: row.name,
  plan: { contacts_limit: row.contacts_limit, label_limit: row.label_limit, api_access: row.api_access },
  subscription: row.subscription as SubscriptionStatus,
  created_at: row.created_at,
  updated_at: row.updated_at
})

const decodeApiKey = (row: ApiKeyRow): ApiKey => ({
  id: row.id as ApiKeyId,
  organization_id: row.organization_id as OrganizationId,
  prefix: row.prefix,
  hash: row.hash,
  created_at: row.created_at,
  revoked_at: row.revoked_at
})

const decodeCredential = (row: CredentialRow): StoredCredential => ({
  api_key: decodeApiKey({
    id: row.key_id,
    organization_id: row.key_organization_id,
    prefix: row.key_prefix,
    hash: row.key_hash,
    created_at: row.key_created_at,
    revoked_at: row.key_revoked_at
  }),
  organization: decodeOrganization(row)
})

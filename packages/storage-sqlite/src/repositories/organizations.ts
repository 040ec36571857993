import { Option } from "effect"
import {
  type ApiKey,
  type ApiKeyId,
  type Organization,
  type OrganizationId,
  type OrganizationRepository,
  type StoredCredential,
  type SubscriptionStatus
} from "@switchboard/core"
import { exactCacheOf } from "../internal/exactCache.js"
import { attempt, type RepositoryFactory } from "../internal/sql.js"

/** Most credentials the cache of {@link organizationRepository} holds before it starts over. */
const CREDENTIAL_CACHE_SIZE = 10_000

/** The name of the credential cache among the connection's exact caches. */
const CREDENTIALS = "credentials"

/**
 * `Storage.organizations` on SQLite: tables `organizations` and `api_keys` (migration 1).
 * Each method is one statement, so each is atomic; `findCredentialByHash` is one join.
 *
 * `findCredentialByHash` keeps the credentials it found in an exact cache (docs/benchmarks.md).
 * Its look-ups are answered at the end of the event loop's turn in which they were asked,
 * all of that turn's together, after one reading of `PRAGMA data_version`: that number
 * changes when another connection (another process: the admin CLI revoking a key or
 * deactivating an organization) committed to the file, and then the cache starts over.
 * The reading is taken after every look-up of the group was asked, so after each of their
 * requests was read: a commit made before a request arrived is always seen. This
 * connection's own writes to organizations and keys start the cache over directly (they do
 * not change `data_version`). A key not found is never cached. So a revoked key or a
 * deactivated organization is refused on the very next request.
 *
 * @category repositories
 */
export const organizationRepository: RepositoryFactory<OrganizationRepository> = (db, statements) => {
  /** Runs a statement that reads at most one row, decoded. */
  const one = <Row, A>(sql: string, params: unknown, decode: (row: Row) => A): Option.Option<A> =>
    Option.map(Option.fromNullable(statements.prepare<Row>(sql).get(params)), decode)

  // The look-ups of a turn answered together from the connection's exact cache
  // (internal/exactCache.ts): the requests of one turn share one `data_version` reading.
  const cache = exactCacheOf(db, CREDENTIALS, {
    operation: "organizations.findCredentialByHash",
    maxSize: CREDENTIAL_CACHE_SIZE,
    find: (hash) => {
      const row = statements.prepare<CredentialRow>(SQL.findCredentialByHash).get(hash)
      return row === undefined ? undefined : decodeCredential(row)
    }
  })
  /** Runs one of this connection's writes to organizations or keys, then empties the cache. */
  const writing = <A>(write: () => A): A => {
    try {
      return write()
    } finally {
      cache.forget()
    }
  }

  return {
    insert: (organization) =>
      attempt("organizations.insert", () =>
        writing(() => {
          statements.prepare(SQL.insert).run(encodeOrganization(organization))
        })
      ),
    replace: (organization) =>
      attempt("organizations.replace", () =>
        writing(() => {
          const { changes } = statements.prepare(SQL.replace).run(encodeOrganization(organization))
          return changes > 0
        })
      ),
    findById: (id) => attempt("organizations.findById", () => one(SQL.findById, id, decodeOrganization)),
    list: () =>
      attempt("organizations.list", () => statements.prepare<OrganizationRow>(SQL.list).all().map(decodeOrganization)),
    insertApiKey: (apiKey) =>
      attempt("organizations.insertApiKey", () =>
        writing(() => {
          statements.prepare(SQL.insertApiKey).run(apiKey)
        })
      ),
    findApiKeyById: (id) => attempt("organizations.findApiKeyById", () => one(SQL.findApiKeyById, id, decodeApiKey)),
    revokeApiKey: (id, revokedAt) =>
      attempt("organizations.revokeApiKey", () =>
        writing(() => one(SQL.revokeApiKey, { id, revoked_at: revokedAt }, decodeApiKey))
      ),
    findCredentialByHash: cache.lookUp
  }
}

const ORGANIZATION_COLUMNS = "id, name, contacts_limit, label_limit, api_access, subscription, created_at, updated_at"
const API_KEY_COLUMNS = "id, organization_id, prefix, hash, created_at, revoked_at"

const SQL = {
  insert: `INSERT INTO organizations (${ORGANIZATION_COLUMNS})
    VALUES (@id, @name, @contacts_limit, @label_limit, @api_access, @subscription, @created_at, @updated_at)`,
  replace: `UPDATE organizations SET name = @name, contacts_limit = @contacts_limit, label_limit = @label_limit,
    api_access = @api_access, subscription = @subscription, created_at = @created_at, updated_at = @updated_at
    WHERE id = @id`,
  findById: `SELECT ${ORGANIZATION_COLUMNS} FROM organizations WHERE id = ?`,
  list: `SELECT ${ORGANIZATION_COLUMNS} FROM organizations ORDER BY created_at, id`,
  insertApiKey: `INSERT INTO api_keys (${API_KEY_COLUMNS})
    VALUES (@id, @organization_id, @prefix, @hash, @created_at, @revoked_at)`,
  findApiKeyById: `SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE id = ?`,
  // COALESCE keeps the first revocation time; RETURNING gives the row as stored afterwards.
  revokeApiKey: `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, @revoked_at) WHERE id = @id
    RETURNING ${API_KEY_COLUMNS}`,
  findCredentialByHash: `SELECT k.id AS key_id, k.organization_id AS key_organization_id, k.prefix AS key_prefix,
      k.hash AS key_hash, k.created_at AS key_created_at, k.revoked_at AS key_revoked_at,
      o.id, o.name, o.contacts_limit, o.label_limit, o.api_access, o.subscription, o.created_at, o.updated_at
    FROM api_keys AS k JOIN organizations AS o ON o.id = k.organization_id
    WHERE k.hash = ?`
} as const

/** A row of `organizations`: the plan flattened, `api_access` as 0/1. */
interface OrganizationRow {
  readonly id: string
  readonly name: string
  readonly contacts_limit: number | null
  readonly label_limit: number | null
  readonly api_access: number
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

const encodeOrganization = (organization: Organization): OrganizationRow => ({
  id: organization.id,
  name: organization.name,
  contacts_limit: organization.plan.contacts_limit,
  label_limit: organization.plan.label_limit,
  api_access: organization.plan.api_access ? 1 : 0,
  subscription: organization.subscription,
  created_at: organization.created_at,
  updated_at: organization.updated_at
})

// The casts below are safe: the ids were written from branded values and the CHECK
// constraints of migration 1 bound `subscription` and `api_access`.
const decodeOrganization = (row: OrganizationRow): Organization => ({
  id: row.id as OrganizationId,
  name: row.name,
  plan: { contacts_limit: row.contacts_limit, label_limit: row.label_limit, api_access: row.api_access === 1 },
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

import { Option } from "effect"
import type { OrganizationRepository } from "@switchboard/core"
import { type ApiKeyRow, apiKeyValues, type CredentialRow, organizationStatementsOf, type OrganizationRow } from "@switchboard/storage-sql"
import { decoders, sqliteDialect } from "../dialect.js"
import { exactCacheOf } from "../internal/exactCache.js"
import { attempt, type RepositoryFactory, transaction } from "../internal/sql.js"

/** Most credentials the cache of {@link organizationRepository} holds before it starts over. */
const CREDENTIAL_CACHE_SIZE = 10_000

/** The name of the credential cache among the connection's exact caches. */
const CREDENTIALS = "credentials"

/**
 * `Storage.organizations` on SQLite: tables `organizations` and `api_keys` (migration 1;
 * `expires_at` since migration 25). Each method is one statement, so each is atomic, but
 * `rotateApiKey`: its expiry and insert run in one transaction; `findCredentialByHash` is
 * one join.
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
 * deactivated organization is refused on the very next request. A key's `expires_at` is
 * cached as any column: core compares it with its clock on every request, so a cached key
 * is refused from the instant it expires.
 *
 * @category repositories
 */
export const organizationRepository: RepositoryFactory<OrganizationRepository> = (db, statements) => {
  /** Runs a statement that reads at most one row, decoded. */
  const one = <Row, A>(sql: string, params: ReadonlyArray<unknown>, decode: (row: Row) => A): Option.Option<A> =>
    Option.map(Option.fromNullable(statements.prepare<Row>(sql).get(...params)), decode)

  // The look-ups of a turn answered together from the connection's exact cache
  // (internal/exactCache.ts): the requests of one turn share one `data_version` reading.
  const cache = exactCacheOf(db, CREDENTIALS, {
    operation: "organizations.findCredentialByHash",
    maxSize: CREDENTIAL_CACHE_SIZE,
    find: (hash) => {
      const row = statements.prepare<CredentialRow>(SQL.findCredentialByHash).get(hash)
      return row === undefined ? undefined : codec.credential(row)
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
          statements.prepare(SQL.insert).run(...codec.values(organization))
        })
      ),
    replace: (organization) =>
      attempt("organizations.replace", () =>
        writing(() => {
          const [id, ...fields] = codec.values(organization)
          const { changes } = statements.prepare(SQL.replace).run(...fields, id)
          return changes > 0
        })
      ),
    findById: (id) => attempt("organizations.findById", () => one(SQL.findById, [id], codec.organization)),
    list: () =>
      attempt("organizations.list", () => statements.prepare<OrganizationRow>(SQL.list).all().map(codec.organization)),
    insertApiKey: (apiKey) =>
      attempt("organizations.insertApiKey", () =>
        writing(() => {
          statements.prepare(SQL.insertApiKey).run(...apiKeyValues(apiKey))
        })
      ),
    findApiKeyById: (id) => attempt("organizations.findApiKeyById", () => one(SQL.findApiKeyById, [id], codec.apiKey)),
    revokeApiKey: (id, revokedAt) =>
      attempt("organizations.revokeApiKey", () => writing(() => one(SQL.revokeApiKey, [revokedAt, id], codec.apiKey))),
    listApiKeys: (organizationId) =>
      attempt("organizations.listApiKeys", () =>
        statements.prepare<ApiKeyRow>(SQL.listApiKeys).all(organizationId).map(codec.apiKey)
      ),
    rotateApiKey: (previousId, newKey, expiresAt) =>
      attempt("organizations.rotateApiKey", () =>
        writing(() =>
          transaction(db, () => {
            const previous = one(SQL.expireRotatedApiKey, [expiresAt, expiresAt, previousId, newKey.organization_id], codec.apiKey)
            if (Option.isSome(previous)) statements.prepare(SQL.insertApiKey).run(...apiKeyValues(newKey))
            return previous
          })
        )
      ),
    findCredentialByHash: cache.lookUp
  }
}

const SQL = organizationStatementsOf(sqliteDialect)
const codec = decoders.organizations

import { Option } from "effect"
import type { OrganizationRepository } from "@switchboard/core"
import { type ApiKeyRow, apiKeyValues, type CredentialRow, organizationStatementsOf, type OrganizationRow } from "@switchboard/storage-sql"
import { decoders } from "../dialect.js"
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
  const SQL = organizationStatementsOf(db.dialect)
  const codec = decoders.organizations
  return {
    insert: (organization) =>
      attempt("organizations.insert", async () => {
        await db.sql.run(SQL.insert, codec.values(organization))
      }),
    replace: (organization) =>
      attempt("organizations.replace", async () => {
        const [id, ...fields] = codec.values(organization)
        return (await db.sql.run(SQL.replace, [...fields, id])) > 0
      }),
    findById: (id) =>
      attempt("organizations.findById", async () =>
        Option.map(Option.fromNullable(await db.sql.row<OrganizationRow>(SQL.findById, [id])), codec.organization)
      ),
    list: () =>
      attempt("organizations.list", async () => (await db.sql.rows<OrganizationRow>(SQL.list)).map(codec.organization)),
    insertApiKey: (apiKey) =>
      attempt("organizations.insertApiKey", async () => {
        await db.sql.run(SQL.insertApiKey, apiKeyValues(apiKey))
      }),
    findApiKeyById: (id) =>
      attempt("organizations.findApiKeyById", async () =>
        Option.map(Option.fromNullable(await db.sql.row<ApiKeyRow>(SQL.findApiKeyById, [id])), codec.apiKey)
      ),
    revokeApiKey: (id, revokedAt) =>
      attempt("organizations.revokeApiKey", async () =>
        Option.map(Option.fromNullable(await db.sql.row<ApiKeyRow>(SQL.revokeApiKey, [revokedAt, id])), codec.apiKey)
      ),
    findCredentialByHash: (hash) =>
      attempt("organizations.findCredentialByHash", async () =>
        Option.map(Option.fromNullable(await db.sql.row<CredentialRow>(SQL.findCredentialByHash, [hash])), codec.credential)
      )
  }
}

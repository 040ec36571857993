import { Option } from "effect"
import type { OrganizationRepository } from "@switchboard/core"
import { type ApiKeyRow, apiKeyValues, type CredentialRow, organizationStatementsOf, type OrganizationRow } from "@switchboard/storage-sql"
import { decoders } from "../dialect.js"
import { attempt, oneQueryPerTurn, type RepositoryFactory } from "../internal/sql.js"

/**
 * `Storage.organizations` on PostgreSQL: tables `organizations` and `api_keys`
 * (src/schema/organizations.ts). Each method is one statement, so each is atomic, but
 * `rotateApiKey`: the old key's expiry and the new key's insert are one transaction;
 * `revokeApiKey` keeps the first revocation time (`COALESCE`) and answers the key as
 * stored afterwards (`RETURNING`).
 *
 * `findCredentialByHash` is one exact join through the unique index on `api_keys.hash`,
 * asked on every call, the calls of one event-loop turn in one statement
 * (`hash = ANY(…)`, `oneQueryPerTurn`): nothing is cached, so a key revoked or an organization deactivated
 * by another process (the admin CLI, another server) is refused on the very next request.
 * It never filters on `expires_at`: core compares it with its clock on every request.
 *
 * @category repositories
 */
export const organizationRepository: RepositoryFactory<OrganizationRepository> = (db) => {
  const SQL = organizationStatementsOf(db.dialect)
  const codec = decoders.organizations
  // Every request asks this: the look-ups of one event-loop turn share one statement.
  const findAtEndOfTurn = oneQueryPerTurn("organizations.findCredentialByHash", async (hashes: ReadonlyArray<string>) => {
    const rows = await db.sql.rows<CredentialRow>(SQL.findCredentialsByHashes, [db.dialect.list([...new Set(hashes)])])
    const byHash = new Map(rows.map((row) => [row.key_hash, row]))
    return hashes.map((hash) => Option.map(Option.fromNullable(byHash.get(hash)), codec.credential))
  })
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
    listApiKeys: (organizationId) =>
      attempt("organizations.listApiKeys", async () =>
        (await db.sql.rows<ApiKeyRow>(SQL.listApiKeys, [organizationId])).map(codec.apiKey)
      ),
    rotateApiKey: (previousId, newKey, expiresAt) =>
      attempt("organizations.rotateApiKey", () =>
        db.transaction(async (sql) => {
          const previous = await sql.row<ApiKeyRow>(SQL.expireRotatedApiKey, [expiresAt, expiresAt, previousId, newKey.organization_id])
          if (previous === undefined) return Option.none()
          await sql.run(SQL.insertApiKey, apiKeyValues(newKey))
          return Option.some(codec.apiKey(previous))
        })
      ),
    findCredentialByHash: findAtEndOfTurn
  }
}

import type { ApiKey, ApiKeyId, Organization, OrganizationId, StoredCredential, SubscriptionStatus } from "@switchboard/core"
import { compilerOf } from "../compile.js"
import type { SqlDialect, SqlValues } from "../SqlDialect.js"
import type { SqlBoolean } from "./values.js"

// Rows of `organizations` and `api_keys`, their parameters and their decoding into core's
// records. The casts are safe: the ids were written from branded values and the tables'
// CHECK constraints bound `subscription` and `api_access`.

/**
 * A row of `organizations`: the plan flattened.
 *
 * @category rows
 */
export interface OrganizationRow {
  readonly id: string
  readonly name: string
  readonly contacts_limit: number | null
  readonly label_limit: number | null
  readonly media_bytes_limit: number | null
  readonly api_access: SqlBoolean
  readonly subscription: string
  readonly created_at: string
  readonly updated_at: string
}

/**
 * A row of `api_keys`.
 *
 * @category rows
 */
export interface ApiKeyRow {
  readonly id: string
  readonly organization_id: string
  readonly prefix: string
  readonly hash: string
  readonly created_at: string
  readonly revoked_at: string | null
  readonly expires_at: string | null
}

/**
 * A row of the credential join: the organization's columns plus the key's, prefixed `key_`.
 *
 * @category rows
 */
export interface CredentialRow extends OrganizationRow {
  readonly key_id: string
  readonly key_organization_id: string
  readonly key_prefix: string
  readonly key_hash: string
  readonly key_created_at: string
  readonly key_revoked_at: string | null
  readonly key_expires_at: string | null
}

/**
 * The columns of an {@link OrganizationRow}, in `SELECT` order and in the order of
 * {@link OrganizationCodec.values}.
 *
 * @category statements
 */
export const ORGANIZATION_COLUMNS = "id, name, contacts_limit, label_limit, media_bytes_limit, api_access, subscription, created_at, updated_at"

/**
 * The columns of an {@link ApiKeyRow}, in `SELECT` order and in the order of {@link apiKeyValues}.
 *
 * @category statements
 */
export const API_KEY_COLUMNS = "id, organization_id, prefix, hash, created_at, revoked_at, expires_at"

/**
 * The parameters of an API key's insert ({@link API_KEY_COLUMNS}).
 *
 * @category parameters
 */
export const apiKeyValues = (apiKey: ApiKey): Array<unknown> => [
  apiKey.id,
  apiKey.organization_id,
  apiKey.prefix,
  apiKey.hash,
  apiKey.created_at,
  apiKey.revoked_at,
  apiKey.expires_at
]

/**
 * The parameters and decoders of organizations and keys for one dialect's values.
 *
 * @category decoders
 */
export interface OrganizationCodec {
  /** The parameters of {@link ORGANIZATION_COLUMNS}, in that order. */
  readonly values: (organization: Organization) => Array<unknown>
  readonly organization: (row: OrganizationRow) => Organization
  readonly apiKey: (row: ApiKeyRow) => ApiKey
  readonly credential: (row: CredentialRow) => StoredCredential
}

/**
 * The {@link OrganizationCodec} of `values`.
 *
 * @category decoders
 */
export const organizationCodecOf = ({ boolean, readBoolean }: SqlValues): OrganizationCodec => {
  const organization = (row: OrganizationRow): Organization => ({
    id: row.id as OrganizationId,
    name: row.name,
    plan: {
      contacts_limit: row.contacts_limit,
      label_limit: row.label_limit,
      media_bytes_limit: row.media_bytes_limit === null ? null : Number(row.media_bytes_limit),
      api_access: readBoolean(row.api_access)
    },
    subscription: row.subscription as SubscriptionStatus,
    created_at: row.created_at,
    updated_at: row.updated_at
  })
  const apiKey = (row: ApiKeyRow): ApiKey => ({
    id: row.id as ApiKeyId,
    organization_id: row.organization_id as OrganizationId,
    prefix: row.prefix,
    hash: row.hash,
    created_at: row.created_at,
    revoked_at: row.revoked_at,
    expires_at: row.expires_at
  })
  return {
    values: (value) => [
      value.id,
      value.name,
      value.plan.contacts_limit,
      value.plan.label_limit,
      value.plan.media_bytes_limit ?? null,
      boolean(value.plan.api_access),
      value.subscription,
      value.created_at,
      value.updated_at
    ],
    organization,
    apiKey,
    credential: (row) => ({
      api_key: apiKey({
        id: row.key_id,
        organization_id: row.key_organization_id,
        prefix: row.key_prefix,
        hash: row.key_hash,
        created_at: row.key_created_at,
        revoked_at: row.key_revoked_at,
        expires_at: row.key_expires_at
      }),
      organization: organization(row)
    })
  }
}

/**
 * The statements of the organizations repository, written once and compiled for
 * `dialect`: `replace` binds {@link OrganizationCodec.values} without the id, then the id;
 * `revokeApiKey` binds `(revoked_at, id)` and keeps the first revocation time;
 * `listApiKeys` binds `(organization_id)`; `expireRotatedApiKey` binds `(expires_at,
 * expires_at, id, organization_id)`, sets the expiry of a key not revoked unless it already
 * expires no later, and returns the row as stored afterwards (none when the key is missing,
 * of another organization or revoked); `findCredentialsByHashes` binds one list of hashes
 * (`dialect.list`).
 *
 * @category statements
 */
export const organizationStatementsOf = (dialect: SqlDialect) => {
  const compile = compilerOf(dialect)
  const organizations = dialect.table("organizations")
  const apiKeys = dialect.table("api_keys")
  const credentials = `SELECT k.id AS key_id, k.organization_id AS key_organization_id, k.prefix AS key_prefix,
        k.hash AS key_hash, k.created_at AS key_created_at, k.revoked_at AS key_revoked_at, k.expires_at AS key_expires_at,
        o.id, o.name, o.contacts_limit, o.label_limit, o.media_bytes_limit, o.api_access, o.subscription, o.created_at, o.updated_at
      FROM ${apiKeys} AS k JOIN ${organizations} AS o ON o.id = k.organization_id`
  return {
    insert: compile(`INSERT INTO ${organizations} (${ORGANIZATION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    replace: compile(`UPDATE ${organizations} SET name = ?, contacts_limit = ?, label_limit = ?, media_bytes_limit = ?, api_access = ?,
      subscription = ?, created_at = ?, updated_at = ?
      WHERE id = ?`),
    findById: compile(`SELECT ${ORGANIZATION_COLUMNS} FROM ${organizations} WHERE id = ?`),
    list: compile(`SELECT ${ORGANIZATION_COLUMNS} FROM ${organizations} ORDER BY created_at, id`),
    insertApiKey: compile(`INSERT INTO ${apiKeys} (${API_KEY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)`),
    listApiKeys: compile(`SELECT ${API_KEY_COLUMNS} FROM ${apiKeys} WHERE organization_id = ? ORDER BY created_at, id`),
    // A rotation never lengthens a key's life: an earlier expiry is kept.
    expireRotatedApiKey: compile(`UPDATE ${apiKeys}
      SET expires_at = CASE WHEN expires_at IS NOT NULL AND expires_at <= ? THEN expires_at ELSE ? END
      WHERE id = ? AND organization_id = ? AND revoked_at IS NULL
      RETURNING ${API_KEY_COLUMNS}`),
    findApiKeyById: compile(`SELECT ${API_KEY_COLUMNS} FROM ${apiKeys} WHERE id = ?`),
    // COALESCE keeps the first revocation time; RETURNING gives the row as stored afterwards.
    revokeApiKey: compile(`UPDATE ${apiKeys} SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?
      RETURNING ${API_KEY_COLUMNS}`),
    findCredentialByHash: compile(`${credentials} WHERE k.hash = ?`),
    // The same for a list of hashes (bound with the dialect's `list`), one row per hash found.
    findCredentialsByHashes: compile(`${credentials} WHERE ${dialect.inList("k.hash")}`)
  } as const
}

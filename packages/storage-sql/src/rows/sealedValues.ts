import { compilerOf } from "../compile.js"
import type { SqlDialect } from "../SqlDialect.js"

// What `secret-key rotate` reads and writes on both SQL engines (docs/deployment.md
// "Rotating the secret key"): the sealed channel tokens and webhook signing secrets, in
// pages by uuid across every organization, and a compare-and-set on each sealed column.

/**
 * A channel's sealed token as the pages read it.
 *
 * @category rows
 */
export interface SealedTokenRow {
  readonly uuid: string
  readonly access_token_sealed: string
}

/**
 * An endpoint's sealed secrets as the pages read them.
 *
 * @category rows
 */
export interface SealedSecretsRow {
  readonly uuid: string
  readonly secret_sealed: string
  readonly previous_secret_sealed: string | null
}

/**
 * The statements of the sealed values, compiled once for `dialect`: `tokensFirst` (limit),
 * `tokensAfter` (after uuid, limit), `resealToken` (sealed, uuid, expected);
 * `secretsFirst`, `secretsAfter`, `resealSecret` and `resealPreviousSecret` alike for
 * `webhook_endpoints`. A reseal changes nothing else (`updated_at` kept) and nothing when
 * the column no longer holds the expected text.
 *
 * @category statements
 */
export const sealedValueStatementsOf = (dialect: SqlDialect) => {
  const compile = compilerOf(dialect)
  const channels = dialect.table("channels")
  const endpoints = dialect.table("webhook_endpoints")
  return {
    tokensFirst: compile(`SELECT uuid, access_token_sealed FROM ${channels} ORDER BY uuid LIMIT ?`),
    tokensAfter: compile(`SELECT uuid, access_token_sealed FROM ${channels} WHERE uuid > ? ORDER BY uuid LIMIT ?`),
    resealToken: compile(`UPDATE ${channels} SET access_token_sealed = ? WHERE uuid = ? AND access_token_sealed = ?`),
    secretsFirst: compile(`SELECT uuid, secret_sealed, previous_secret_sealed FROM ${endpoints} ORDER BY uuid LIMIT ?`),
    secretsAfter: compile(
      `SELECT uuid, secret_sealed, previous_secret_sealed FROM ${endpoints} WHERE uuid > ? ORDER BY uuid LIMIT ?`
    ),
    resealSecret: compile(`UPDATE ${endpoints} SET secret_sealed = ? WHERE uuid = ? AND secret_sealed = ?`),
    resealPreviousSecret: compile(
      `UPDATE ${endpoints} SET previous_secret_sealed = ? WHERE uuid = ? AND previous_secret_sealed = ?`
    )
  }
}

import { Clock, Effect, Option } from "effect"
import type { ChannelId, ChannelInsertOutcome, ChannelRepository } from "@switchboard/core"
import { type SealedTokenRow, sealedValueStatementsOf } from "@switchboard/storage-sql"
import { sqliteDialect } from "../dialect.js"
import { attempt, type RepositoryFactory, transaction } from "../internal/sql.js"
import { findChannelByPhoneNumberId, forgetChannels, storedChannelOf as stored } from "./channelCache.js"
import { CHANNEL_COLUMNS, type ChannelRow, channelChangeValues, channelValues, decodeChannel } from "./channelRows.js"
import { failChannelMessages } from "./outboxInsert.js"
import { ensureTemplateSyncDue } from "./templateSyncs.js"

/**
 * `Storage.channels` on SQLite (migrations 8, 14 and 15). `insert` is one `BEGIN IMMEDIATE`
 * transaction counting the organization's channels before the insert (the limit), and the
 * unique index refuses a `phone_number_id` used anywhere; it makes the account's template
 * sync record due at the channel's `created_at` in that transaction (templateSyncs.ts); `delete` is one `BEGIN IMMEDIATE`
 * transaction that also fails the channel's waiting send-queue messages
 * (`CHANNEL_REMOVED_FAILURE`, `updated_at` the Clock's time, one `message.status_updated`
 * event each: outboxInsert.ts); `claimSecretKeyCheck` is one insert-if-absent. The channel's
 * pacing state (`pacing_tat`, `cooldown_ms`) is the send queue's (outbox.ts) and never part
 * of the record.
 *
 * @category repositories
 */
export const channelRepository: RepositoryFactory<ChannelRepository> = (db, statements) => {
  /** Runs one of this connection's writes to channels, then empties its channel cache. */
  const writing = <A>(write: () => A): A => {
    try {
      return write()
    } finally {
      forgetChannels(db)
    }
  }
  return {
    insert: (organizationId, { access_token_sealed, channel }, limit) =>
      attempt("channels.insert", () =>
        writing(() => transaction(db, (): ChannelInsertOutcome => {
          if (statements.prepare(SQL.phoneNumberIdUsed).get(channel.phone_number_id) !== undefined) {
            return { _tag: "PhoneNumberIdTaken" }
          }
          const { count } = statements.prepare<{ count: number }>(SQL.count).get(organizationId)!
          if (count >= limit) return { _tag: "LimitReached", limit }
          statements.prepare(SQL.insert).run(...channelValues(channel, organizationId, access_token_sealed))
          ensureTemplateSyncDue(statements, organizationId, channel.waba_id, channel.created_at)
          return { _tag: "Inserted", channel }
        }))
      ),
    list: (organizationId) =>
      attempt("channels.list", () => statements.prepare<ChannelRow>(SQL.list).all(organizationId).map(decodeChannel)),
    findById: (organizationId, id) =>
      attempt("channels.findById", () =>
        Option.map(Option.fromNullable(statements.prepare<ChannelRow>(SQL.findById).get(organizationId, id)), stored)
      ),
    update: (organizationId, id, change) =>
      attempt("channels.update", () =>
        writing(() => Option.map(
          Option.fromNullable(
            statements.prepare<ChannelRow>(SQL.update).get(...channelChangeValues(change, organizationId, id))
          ),
          decodeChannel
        ))
      ),
    delete: (organizationId, id) =>
      Effect.flatMap(Clock.currentTimeMillis, (millis) =>
        attempt("channels.delete", () =>
          writing(() => transaction(db, () => {
            if (statements.prepare(SQL.delete).run(organizationId, id).changes === 0) return false
            failChannelMessages(statements, organizationId, id, new Date(millis).toISOString())
            return true
          }))
        )
      ),
    // Through the connection's exact cache (channelCache.ts).
    findByPhoneNumberId: findChannelByPhoneNumberId(db, statements),
    findByWabaId: (wabaId) =>
      attempt("channels.findByWabaId", () => statements.prepare<ChannelRow>(SQL.findByWabaId).all(wabaId).map(stored)),
    secretKeyCheck: () =>
      attempt("channels.secretKeyCheck", () =>
        Option.fromNullable(statements.prepare<{ value: string }>(SQL.setting).get(SECRET_KEY_CHECK)?.value)
      ),
    claimSecretKeyCheck: (value) =>
      attempt("channels.claimSecretKeyCheck", () =>
        transaction(db, () => {
          statements.prepare(SQL.claimSetting).run(SECRET_KEY_CHECK, value)
          return statements.prepare<{ value: string }>(SQL.setting).get(SECRET_KEY_CHECK)!.value
        })
      ),
    resealSecretKeyCheck: (expected, value) =>
      attempt("channels.resealSecretKeyCheck", () => statements.prepare(SQL.resealSetting).run(value, SECRET_KEY_CHECK, expected).changes > 0),
    listSealedTokens: (after, limit) =>
      attempt("channels.listSealedTokens", () =>
        (after === null
          ? statements.prepare<SealedTokenRow>(SEALED.tokensFirst).all(limit)
          : statements.prepare<SealedTokenRow>(SEALED.tokensAfter).all(after, limit)
        ).map((row) => ({ ...row, uuid: row.uuid as ChannelId }))
      ),
    resealToken: (id, expected, sealed) =>
      attempt("channels.resealToken", () =>
        writing(() => statements.prepare(SEALED.resealToken).run(sealed, id, expected).changes > 0)
      )
  }
}

/** The statements of `secret-key rotate` (shared with PostgreSQL). */
const SEALED = sealedValueStatementsOf(sqliteDialect)

/** The `settings` key of the secret-key check value. */
const SECRET_KEY_CHECK = "secret_key_check"

const OLDEST_FIRST = "ORDER BY created_at ASC, uuid ASC"

const SQL = {
  phoneNumberIdUsed: "SELECT 1 AS used FROM channels WHERE phone_number_id = ?",
  count: "SELECT COUNT(*) AS count FROM channels WHERE organization_id = ?",
  insert: `INSERT INTO channels (uuid, organization_id, provider, phone_number_id, display_phone_number, waba_id,
    access_token_sealed, access_token_last4, throughput_mps, status, paused_reason, paused_at, created_at, updated_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  // One statement: the fields given (a NULL parameter keeps the column) and updated_at together.
  update: `UPDATE channels SET throughput_mps = COALESCE(?, throughput_mps),
    access_token_sealed = COALESCE(?, access_token_sealed), access_token_last4 = COALESCE(?, access_token_last4),
    updated_at = ? WHERE organization_id = ? AND uuid = ? RETURNING ${CHANNEL_COLUMNS}`,
  list: `SELECT ${CHANNEL_COLUMNS} FROM channels WHERE organization_id = ? ${OLDEST_FIRST}`,
  findById: `SELECT ${CHANNEL_COLUMNS} FROM channels WHERE organization_id = ? AND uuid = ?`,
  delete: "DELETE FROM channels WHERE organization_id = ? AND uuid = ?",
  findByWabaId: `SELECT ${CHANNEL_COLUMNS} FROM channels WHERE waba_id = ? ${OLDEST_FIRST}`,
  setting: "SELECT value FROM settings WHERE key = ?",
  claimSetting: "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
  resealSetting: "UPDATE settings SET value = ? WHERE key = ? AND value = ?"
} as const

import { Clock, Effect, Option } from "effect"
import type { ChannelId, ChannelInsertOutcome, ChannelRepository } from "@switchboard/core"
import { type SealedTokenRow, sealedValueStatementsOf } from "@switchboard/storage-sql"
import { decoders, postgresDialect } from "../dialect.js"
import { attempt, oneQueryPerTurn, type RepositoryFactory } from "../internal/sql.js"
import { CHANNEL_COLUMNS, type ChannelRow, channelChangeValues, channelValues, decodeChannel } from "./channelRows.js"
import { failChannelMessages } from "./outboxInsert.js"
import { ensureTemplateSyncDue } from "./templateSyncs.js"

/**
 * `Storage.channels` on PostgreSQL: table `channels` (schema/catalog.ts). `insert` is one
 * transaction holding the organization's lock while it counts the organization's channels
 * (the limit) and inserts, so two inserts of one organization cannot both pass the limit,
 * and makes the account's template sync record due at the channel's `created_at` in that
 * transaction (templateSyncs.ts);
 * the unique index refuses a `phone_number_id` used anywhere (`ON CONFLICT DO NOTHING`, so
 * two organizations racing for one number get one `Inserted` and one `PhoneNumberIdTaken`,
 * never an error). `delete` is one transaction, under the organization's lock too, that
 * also fails the channel's waiting send-queue messages (`CHANNEL_REMOVED_FAILURE`,
 * `updated_at` the Clock's time, one `message.status_updated` event each:
 * outboxInsert.ts); `claimSecretKeyCheck` is one insert-if-absent in `settings` and
 * answers the value that won. `findByPhoneNumberId` (every provider webhook) answers the
 * look-ups of one event-loop turn with one statement run at its end (nothing is cached).
 * The channel's pacing state (`pacing_tat`, `cooldown_ms`) is the send queue's and never
 * part of the record.
 *
 * @category repositories
 */
export const channelRepository: RepositoryFactory<ChannelRepository> = (db) => {
  const SQL = statements(db.schema)
  const stored = decoders.storedChannel
  // The look-ups asked during one turn of the event loop (a provider webhook each) are one
  // statement (docs/storage.md).
  const findAtEndOfTurn = oneQueryPerTurn("channels.findByPhoneNumberId", async (phoneNumberIds: ReadonlyArray<string>) => {
    const rows = await db.sql.rows<ChannelRow>(SQL.findByPhoneNumberIds, [[...new Set(phoneNumberIds)]])
    const byNumber = new Map(rows.map((row) => [row.phone_number_id, row]))
    return phoneNumberIds.map((phoneNumberId) => Option.map(Option.fromNullable(byNumber.get(phoneNumberId)), stored))
  })
  return {
    insert: (organizationId, { access_token_sealed, channel }, limit) =>
      attempt("channels.insert", () =>
        db.transaction(
          async (sql): Promise<ChannelInsertOutcome> => {
            if ((await sql.row(SQL.phoneNumberIdUsed, [channel.phone_number_id])) !== undefined) {
              return { _tag: "PhoneNumberIdTaken" }
            }
            const { count } = (await sql.row<{ count: number }>(SQL.count, [organizationId]))!
            if (count >= limit) return { _tag: "LimitReached", limit }
            const inserted = await sql.run(SQL.insert, channelValues(channel, organizationId, access_token_sealed))
            // Another organization took the number since the check (its lock is not ours).
            if (inserted === 0) return { _tag: "PhoneNumberIdTaken" }
            await ensureTemplateSyncDue(sql, db.schema, organizationId, channel.waba_id, channel.created_at)
            return { _tag: "Inserted", channel }
          },
          { lockOrganization: organizationId }
        )
      ),
    list: (organizationId) =>
      attempt("channels.list", async () => (await db.sql.rows<ChannelRow>(SQL.list, [organizationId])).map(decodeChannel)),
    findById: (organizationId, id) =>
      attempt("channels.findById", async () =>
        Option.map(Option.fromNullable(await db.sql.row<ChannelRow>(SQL.findById, [organizationId, id])), stored)
      ),
    update: (organizationId, id, change) =>
      attempt("channels.update", async () =>
        Option.map(
          Option.fromNullable(
            await db.sql.row<ChannelRow>(SQL.update, channelChangeValues(change, organizationId, id))
          ),
          decodeChannel
        )
      ),
    delete: (organizationId, id) =>
      Effect.flatMap(Clock.currentTimeMillis, (millis) =>
        attempt("channels.delete", () =>
          db.transaction(
            async (sql) => {
              if ((await sql.run(SQL.delete, [organizationId, id])) === 0) return false
              await failChannelMessages(sql, db.schema, organizationId, id, new Date(millis).toISOString())
              return true
            },
            // The organization first, as every transaction writing messages takes its locks.
            { lockOrganization: organizationId }
          )
        )
      ),
    findByPhoneNumberId: findAtEndOfTurn,
    findByWabaId: (wabaId) =>
      attempt("channels.findByWabaId", async () => (await db.sql.rows<ChannelRow>(SQL.findByWabaId, [wabaId])).map(stored)),
    secretKeyCheck: () =>
      attempt("channels.secretKeyCheck", async () =>
        Option.fromNullable((await db.sql.row<{ value: string }>(SQL.setting, [SECRET_KEY_CHECK]))?.value)
      ),
    claimSecretKeyCheck: (value) =>
      // One statement: the insert when absent, else the stored row (READ COMMITTED sees a
      // row another transaction committed while ours waited on its key).
      attempt("channels.claimSecretKeyCheck", async () => {
        const inserted = await db.sql.row<{ value: string }>(SQL.claimSetting, [SECRET_KEY_CHECK, value])
        if (inserted !== undefined) return inserted.value
        return (await db.sql.row<{ value: string }>(SQL.setting, [SECRET_KEY_CHECK]))!.value
      }),
    resealSecretKeyCheck: (expected, value) =>
      attempt("channels.resealSecretKeyCheck", async () => (await db.sql.run(SQL.resealSetting, [value, SECRET_KEY_CHECK, expected])) > 0),
    listSealedTokens: (after, limit) =>
      attempt("channels.listSealedTokens", async () =>
        (after === null
          ? await db.sql.rows<SealedTokenRow>(SQL.tokensFirst, [limit])
          : await db.sql.rows<SealedTokenRow>(SQL.tokensAfter, [after, limit])
        ).map((row) => ({ ...row, uuid: row.uuid as ChannelId }))
      ),
    resealToken: (id, expected, sealed) =>
      attempt("channels.resealToken", async () => (await db.sql.run(SQL.resealToken, [sealed, id, expected])) > 0)
  }
}

/** The `settings` key of the secret-key check value. */
const SECRET_KEY_CHECK = "secret_key_check"

const OLDEST_FIRST = "ORDER BY created_at ASC, uuid ASC"

/** The statements of this repository on `schema` (quoted). */
const statements = (schema: string) =>
  ({
    phoneNumberIdUsed: `SELECT 1 AS used FROM ${schema}.channels WHERE phone_number_id = $1`,
    count: `SELECT COUNT(*) AS count FROM ${schema}.channels WHERE organization_id = $1`,
    insert: `INSERT INTO ${schema}.channels (uuid, organization_id, provider, phone_number_id, display_phone_number,
      waba_id, access_token_sealed, access_token_last4, throughput_mps, status, paused_reason, paused_at, created_at,
      updated_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) ON CONFLICT (phone_number_id) DO NOTHING`,
    // One statement: the fields given (a NULL parameter keeps the column) and updated_at together.
    update: `UPDATE ${schema}.channels SET throughput_mps = COALESCE($1::integer, throughput_mps),
      access_token_sealed = COALESCE($2::text, access_token_sealed),
      access_token_last4 = COALESCE($3::text, access_token_last4),
      updated_at = $4 WHERE organization_id = $5 AND uuid = $6 RETURNING ${CHANNEL_COLUMNS}`,
    list: `SELECT ${CHANNEL_COLUMNS} FROM ${schema}.channels WHERE organization_id = $1 ${OLDEST_FIRST}`,
    findById: `SELECT ${CHANNEL_COLUMNS} FROM ${schema}.channels WHERE organization_id = $1 AND uuid = $2`,
    delete: `DELETE FROM ${schema}.channels WHERE organization_id = $1 AND uuid = $2`,
    findByPhoneNumberIds: `SELECT ${CHANNEL_COLUMNS} FROM ${schema}.channels WHERE phone_number_id = ANY($1::text[])`,
    findByWabaId: `SELECT ${CHANNEL_COLUMNS} FROM ${schema}.channels WHERE waba_id = $1 ${OLDEST_FIRST}`,
    setting: `SELECT value FROM ${schema}.settings WHERE key = $1`,
    claimSetting: `INSERT INTO ${schema}.settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING RETURNING value`,
    resealSetting: `UPDATE ${schema}.settings SET value = $1 WHERE key = $2 AND value = $3`,
    ...sealedValueStatementsOf(postgresDialect(schema))
  }) as const

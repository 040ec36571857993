import {
  type Message,
  MESSAGE_STATUS_PREDECESSORS,
  type MessageFailure,
  type MessageStatus,
  nextCooldownMs,
  type OrganizationId,
  listedMessageType,
  outboundReactionOf,
  type OutboxOutcome,
  type SentOutcome
} from "@switchboard/core"
import { jsonOrNull, queuedRowValues } from "@switchboard/storage-sql"
import { outcomeRow } from "../dialect.js"
import type { Sql } from "../internal/sql.js"
import { CHANNEL_COLUMNS, type ChannelRow, decodeChannel } from "./channelRows.js"
import type { PacingRow } from "./outboxInsert.js"
import { decodeMessage } from "./chatRows.js"
import { applyPending, applyStatus } from "./messageStatus.js"
import { QUEUED_COLUMNS, type QueuedRow } from "./outboxRows.js"
import { foldReaction } from "./reactions.js"
import { insertWebhookEventsAt, recordWebhookEvent, subscribedEndpoints, subscribesSql } from "./webhookEvents.js"

export { ENDED } from "./outboxRows.js"

// The send queue's moves of one message, inside the caller's transaction: a dispatcher's
// outcome (`record`), a settlement from a status notification (`settle`), a hand retry or
// cancel.

/** The outbox message `id` of the organization, locked for the move (`FOR UPDATE`). */
export const queuedRow = (sql: Sql, schema: string, organizationId: string, id: string): Promise<QueuedRow | undefined> =>
  sql.row<QueuedRow>(
    `SELECT ${QUEUED_COLUMNS} FROM ${schema}.messages WHERE organization_id = $1 AND uuid = $2 AND recipient IS NOT NULL
      FOR UPDATE`,
    [organizationId, id]
  )

/** The message `id` while `lease` holds it (`sending`, the token matching), locked for the outcome. */
export const leasedRow = (sql: Sql, schema: string, id: string, lease: string): Promise<QueuedRow | undefined> =>
  sql.row<QueuedRow>(
    `SELECT ${QUEUED_COLUMNS} FROM ${schema}.messages WHERE uuid = $1 AND lease = $2 AND status = 'sending'
      AND recipient IS NOT NULL FOR UPDATE`,
    [id, lease]
  )

/** Writes every field of `row` that a move of the send queue changes; returns it. */
export const writeRow = async (sql: Sql, schema: string, row: QueuedRow): Promise<QueuedRow> => {
  await sql.run(
    `UPDATE ${schema}.messages SET status = $1, provider_message_id = $2, failure = $3::json, attempts = $4,
        next_attempt_at = $5, expires_at = $6, pair_rate_waits = $7, lease = $8, lease_until = $9, updated_at = $10
      WHERE uuid = $11`,
    queuedRowValues(row, jsonOrNull(row.failure))
  )
  return row
}

/** The body of `record`, inside its transaction, for a message `lease` still holds. */
export const recordOutcome = async (
  sql: Sql,
  schema: string,
  row: QueuedRow,
  outcome: OutboxOutcome,
  now: string
): Promise<Message> => {
  const organizationId = row.organization_id as OrganizationId
  const nowMillis = Date.parse(now)
  const channelUuid = row.channel_uuid
  // A reaction row is never announced (its target's message.reactions_updated is).
  const statusEvent = async (message: Message) => {
    if (listedMessageType(message.type)) await recordWebhookEvent(sql, schema, organizationId, "message.status_updated", now, () => message)
  }
  switch (outcome._tag) {
    case "Sent": {
      const sent = await writeRow(sql, schema, outcomeRow(row, outcome, now))
      const final =
        outcome.provider_message_id === null
          ? sent
          : (await applyPending(sql, schema, organizationId, sent, outcome.provider_message_id, now)).row
      if (channelUuid !== null) {
        await sql.run(`UPDATE ${schema}.channels SET cooldown_ms = 0 WHERE uuid = $1 AND cooldown_ms <> 0`, [channelUuid])
      }
      const message = decodeMessage(final)
      const reaction = outboundReactionOf(message)
      // A business reaction shows on its target in the same step.
      if (reaction !== undefined) await foldReaction(sql, schema, organizationId, "business", { message_id: reaction.message_id, emoji: reaction.emoji, at: now }, now)
      await statusEvent(message)
      return message
    }
    case "Failed": {
      const message = decodeMessage(
        await writeRow(sql, schema, outcomeRow(row, outcome, now))
      )
      await statusEvent(message)
      return message
    }
    case "Requeued": {
      const message = decodeMessage(
        await writeRow(sql, schema, outcomeRow(row, outcome, now))
      )
      if (outcome.throttled && channelUuid !== null) {
        const pacing = await sql.row<PacingRow>(
          `SELECT status, throughput_mps, pacing_tat, cooldown_ms FROM ${schema}.channels WHERE uuid = $1 FOR NO KEY UPDATE`,
          [channelUuid]
        )
        if (pacing !== undefined) {
          const cooldownMs = nextCooldownMs(pacing.cooldown_ms)
          await sql.run(`UPDATE ${schema}.channels SET cooldown_ms = $1, pacing_tat = $2 WHERE uuid = $3`, [
            cooldownMs,
            Math.max(pacing.pacing_tat, nowMillis + cooldownMs),
            channelUuid
          ])
        }
      }
      if (outcome.attempts > 0) await statusEvent(message)
      return message
    }
    case "Unknown":
      return decodeMessage(
        await writeRow(sql, schema, outcomeRow(row, outcome, now))
      )
    case "Paused": {
      const message = decodeMessage(
        await writeRow(sql, schema, outcomeRow(row, outcome, now))
      )
      if (channelUuid !== null) {
        const paused = await sql.row<ChannelRow>(
          `UPDATE ${schema}.channels SET status = 'paused', paused_reason = $1::json, paused_at = $2, updated_at = $2
            WHERE uuid = $3 AND status = 'active' RETURNING ${CHANNEL_COLUMNS}`,
          [JSON.stringify(outcome.reason), now, channelUuid]
        )
        if (paused !== undefined) {
          const channel = decodeChannel(paused)
          await recordWebhookEvent(sql, schema, organizationId, "channel.paused", now, () => channel)
        }
      }
      return message
    }
  }
}

/** The body of `settle`, inside its transaction, for an outbox message of the organization. */
export const settleMessage = async (
  sql: Sql,
  schema: string,
  organizationId: OrganizationId,
  row: QueuedRow,
  settlement: {
    readonly provider_message_id: string
    readonly status: MessageStatus
    readonly failure?: MessageFailure | undefined
    readonly now: string
  }
): Promise<{ readonly message: Message; readonly changed: boolean }> => {
  const recordsId = row.provider_message_id === null
  const written = await applyStatus(sql, schema, row, {
    status: settlement.status,
    from: MESSAGE_STATUS_PREDECESSORS[settlement.status],
    failure: settlement.failure,
    provider_message_id: recordsId ? settlement.provider_message_id : undefined,
    now: settlement.now
  })
  const final = recordsId
    ? await applyPending(sql, schema, organizationId, written.row, settlement.provider_message_id, settlement.now)
    : { row: written.row, changed: false }
  const message = decodeMessage(final.row)
  if (final.row.status !== row.status && listedMessageType(message.type)) {
    await recordWebhookEvent(sql, schema, organizationId, "message.status_updated", settlement.now, () => message)
  }
  return { message, changed: written.changed || final.changed }
}

/** A `Sent` outcome of a group for a message its lease still holds: the row as read (locked), the outcome and its time. */
export interface LeasedSent {
  readonly row: QueuedRow
  readonly outcome: Extract<OutboxOutcome, { _tag: "Sent" }>
  readonly now: string
}

/**
 * The messages of the group `ids` that are `sending` (any lease: the caller compares each
 * with its request's), locked `FOR UPDATE` in uuid order, in one statement.
 */
export const leasedRows = (sql: Sql, schema: string, ids: ReadonlyArray<string>): Promise<Array<QueuedRow>> =>
  sql.rows<QueuedRow>(
    `SELECT ${QUEUED_COLUMNS} FROM ${schema}.messages WHERE uuid = ANY($1::text[]) AND status = 'sending'
      AND recipient IS NOT NULL ORDER BY uuid FOR UPDATE`,
    [ids]
  )

/** A sent message's provider id as its pending status reports are keyed: its organization and the id. */
export interface ProviderIdOf {
  readonly organization_id: string
  readonly provider_message_id: string | null
}

/** The key of {@link withPendingReports}'s answer for one message: its organization and provider message id. */
const pendingKey = (each: ProviderIdOf): string => `${each.organization_id}\n${each.provider_message_id}`

/** The {@link ProviderIdOf} of a `Sent` outcome of a message of `organizationId`. */
export const providerIdOf = (organizationId: string, outcome: SentOutcome): ProviderIdOf => ({
  organization_id: organizationId,
  provider_message_id: outcome.provider_message_id
})

/** Whether `pending` ({@link withPendingReports}'s answer) holds a report for `id` (never for a message without a provider id). */
export const hasPendingReport = (pending: ReadonlySet<string>, id: ProviderIdOf): boolean =>
  id.provider_message_id !== null && pending.has(pendingKey(id))

/**
 * The SQL condition that the organization `organization` holds a pending status report for
 * the provider message id `providerId` (both SQL: a column or a parameter; false for a NULL
 * id): the one probe of {@link withPendingReports} and {@link recordSentLeanTogether}.
 */
const pendingReportSql = (schema: string, organization: string, providerId: string): string =>
  `EXISTS (SELECT 1 FROM ${schema}.pending_message_statuses AS p
    WHERE p.organization_id = ${organization} AND p.provider_message_id = ${providerId})`

/**
 * The keys ({@link pendingKey}) of those of `sent` that have pending status reports for their
 * provider message id (a report that arrived before the send's answer): those are recorded
 * with their whole rows ({@link recordOutcome} applies the reports), the others by
 * {@link recordSentTogether} or {@link recordSentLeanTogether}. One statement; none when no
 * message has an id.
 */
export const withPendingReports = async (sql: Sql, schema: string, sent: ReadonlyArray<ProviderIdOf>): Promise<Set<string>> => {
  const probed = sent.filter((each) => each.provider_message_id !== null)
  if (probed.length === 0) return new Set()
  const rows = await sql.rows<{ organization_id: string; provider_message_id: string }>(
    `SELECT DISTINCT r.organization_id, r.provider_message_id FROM unnest($1::text[], $2::text[]) AS r (organization_id, provider_message_id)
      WHERE ${pendingReportSql(schema, "r.organization_id", "r.provider_message_id")}`,
    [probed.map((each) => each.organization_id), probed.map((each) => each.provider_message_id)]
  )
  return new Set(rows.map(pendingKey))
}

/** A `recordSent` of a group that needs nothing of its row: its message, lease, outcome and time. */
export interface LeanSent {
  readonly id: string
  readonly lease: string
  readonly outcome: SentOutcome
  readonly now: string
}

/**
 * `Sent` outcomes of `recordSent` (no reaction, each asked once in its group: the caller
 * decides) recorded together where none needs its message's row afterwards, in ONE
 * statement inside the caller's transaction holding their organizations' locks: an
 * outcome is lean when its organization has no enabled endpoint subscribed to
 * `message.status_updated` ({@link subscribesSql}) and no status report is pending for its
 * provider message id (what {@link withPendingReports} probes); the lean ones are written
 * as {@link recordSentTogether} writes them (the same fields as `outcomeRow`'s `Sent`),
 * guarded by each one's lease and `sending` status, and the cool-down of the channels
 * written is reset. Nothing of the rows is read back but their uuids.
 *
 * The probes read what was committed before this statement began, after the caller took the
 * locks, as the separate statements they replace did (three round trips become one; a
 * status report is stored under its organization's lock, so none can come between).
 * Resolves `lean`: the ids found lean (the others are left to the whole record), and
 * `written`: those of them whose lease still held (a lease that no longer holds: not
 * written, not answered).
 */
export const recordSentLeanTogether = async (
  sql: Sql,
  schema: string,
  sent: ReadonlyArray<LeanSent & { readonly organization_id: string }>
): Promise<{ readonly lean: ReadonlySet<string>; readonly written: ReadonlySet<string> }> => {
  if (sent.length === 0) return { lean: new Set(), written: new Set() }
  // In uuid order, as every group's rows are locked.
  const ordered = [...sent].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  const rows = await sql.rows<{ uuid: string; written: boolean }>(
    `WITH w AS MATERIALIZED (
        SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::timestamptz[], $6::text[])
          WITH ORDINALITY AS w (uuid, lease, provider_message_id, attempts, updated_at, organization_id, position)),
      announcing AS MATERIALIZED (
        SELECT o.id FROM (SELECT DISTINCT organization_id AS id FROM w) AS o
          WHERE EXISTS (SELECT 1 FROM ${schema}.webhook_endpoints AS we
            WHERE ${subscribesSql("we", "o.id", "'message.status_updated'")})),
      lean AS MATERIALIZED (
        SELECT w.* FROM w WHERE w.organization_id NOT IN (SELECT id FROM announcing)
          AND NOT ${pendingReportSql(schema, "w.organization_id", "w.provider_message_id")}
          ORDER BY w.position),
      sent AS (
        UPDATE ${schema}.messages AS m SET status = 'sent', provider_message_id = COALESCE(w.provider_message_id, m.provider_message_id),
            failure = NULL, attempts = m.attempts + w.attempts, next_attempt_at = NULL, pair_rate_waits = 0, lease = NULL,
            lease_until = NULL, updated_at = w.updated_at
          FROM lean AS w
          WHERE m.uuid = w.uuid AND m.lease = w.lease AND m.status = 'sending' AND m.recipient IS NOT NULL
          RETURNING m.uuid, m.channel_uuid),
      cooled AS (
        UPDATE ${schema}.channels SET cooldown_ms = 0 WHERE uuid IN (SELECT channel_uuid FROM sent) AND cooldown_ms <> 0)
    SELECT lean.uuid, EXISTS (SELECT 1 FROM sent WHERE sent.uuid = lean.uuid) AS written FROM lean`,
    [
      ordered.map((each) => each.id),
      ordered.map((each) => each.lease),
      ordered.map((each) => each.outcome.provider_message_id),
      ordered.map((each) => each.outcome.attempts),
      ordered.map((each) => each.now),
      ordered.map((each) => each.organization_id)
    ]
  )
  return {
    lean: new Set(rows.map((row) => row.uuid)),
    written: new Set(rows.filter((row) => row.written).map((row) => row.uuid))
  }
}

/** Whether {@link recordSentTogether} may record `each`: no pending status report, no reaction (a reaction is folded into its target, one by one). */
export const recordableTogether = (each: LeasedSent, pending: ReadonlySet<string>): boolean =>
  !hasPendingReport(pending, providerIdOf(each.row.organization_id, each.outcome)) &&
  outboundReactionOf(decodeMessage(outcomeRow(each.row, each.outcome, each.now))) === undefined

/**
 * `Sent` outcomes of a group recorded together, each for a message its lease holds (read and
 * locked by {@link leasedRows}), none with a pending status report or a reaction
 * ({@link recordableTogether}): what {@link recordOutcome} does for each, in a fixed number
 * of statements however many they are — the rows written with one `UPDATE … FROM unnest`,
 * the channels' cool-downs reset with one `UPDATE`, and per organization its subscribed
 * endpoints read once and the `message.status_updated` events (each at its outcome's time,
 * in the order given) inserted with one statement. Resolves the messages, in `sent`'s order.
 */
export const recordSentTogether = async (sql: Sql, schema: string, sent: ReadonlyArray<LeasedSent>): Promise<Array<Message>> => {
  if (sent.length === 0) return []
  const written = sent.map((each) => outcomeRow(each.row, each.outcome, each.now))
  const values = written.map((row) => queuedRowValues(row, jsonOrNull(row.failure)))
  const column = (index: number) => values.map((each) => each[index])
  await sql.run(
    `UPDATE ${schema}.messages AS m SET status = w.status, provider_message_id = w.provider_message_id,
        failure = w.failure::json, attempts = w.attempts, next_attempt_at = w.next_attempt_at, expires_at = w.expires_at,
        pair_rate_waits = w.pair_rate_waits, lease = w.lease, lease_until = w.lease_until, updated_at = w.updated_at
      FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::timestamptz[], $6::timestamptz[], $7::int[],
          $8::text[], $9::bigint[], $10::timestamptz[], $11::text[])
        AS w (status, provider_message_id, failure, attempts, next_attempt_at, expires_at, pair_rate_waits, lease, lease_until,
          updated_at, uuid)
      WHERE m.uuid = w.uuid`,
    Array.from({ length: 11 }, (_, index) => column(index))
  )
  const channels = [...new Set(sent.flatMap((each) => (each.row.channel_uuid === null ? [] : [each.row.channel_uuid])))]
  if (channels.length > 0) {
    await sql.run(`UPDATE ${schema}.channels SET cooldown_ms = 0 WHERE uuid = ANY($1::text[]) AND cooldown_ms <> 0`, [channels])
  }
  const messages = written.map((row) => decodeMessage(row))
  // A reaction row is never announced (its target's message.reactions_updated is); none is here.
  const announced = messages.flatMap((message, index) => (listedMessageType(message.type) ? [{ message, at: sent[index]!.now, organizationId: sent[index]!.row.organization_id }] : []))
  for (const organizationId of [...new Set(announced.map((each) => each.organizationId))]) {
    const endpoints = await subscribedEndpoints(sql, schema, organizationId, "message.status_updated")
    if (endpoints.length === 0) continue
    const records = announced.filter((each) => each.organizationId === organizationId).map((each) => ({ at: each.at, data: each.message }))
    await insertWebhookEventsAt(sql, schema, organizationId, "message.status_updated", endpoints, records)
  }
  return messages
}

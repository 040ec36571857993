import {
  type InboundReaction,
  type Message,
  type MessageReactionParty,
  type OrganizationId,
  withReaction
} from "@switchboard/core"
import type { Sql } from "../internal/sql.js"
import { decodeMessage, MESSAGE_COLUMNS, type MessageRow } from "./chatRows.js"
import { recordWebhookEvent } from "./webhookEvents.js"

// Replies and reactions inside an append's (or a send's record's) transaction: the message
// a provider id names, and a reaction folded into its target (docs/messaging.md "Reactions").

/** The statements of these reads and writes, for schema `s`. */
const sqlOf = (s: string) =>
  ({
    // One probe of messages_by_provider_id per direction; the row locked for the fold.
    byProviderId: `SELECT ${MESSAGE_COLUMNS} FROM ${s}.messages
      WHERE organization_id = $1 AND direction = $2 AND provider_message_id = $3 LIMIT 1`,
    byProviderIdForUpdate: `SELECT ${MESSAGE_COLUMNS} FROM ${s}.messages
      WHERE organization_id = $1 AND direction = $2 AND provider_message_id = $3 LIMIT 1 FOR UPDATE`,
    writeReactions: `UPDATE ${s}.messages SET reactions = $1::json, updated_at = $2::timestamptz WHERE uuid = $3`
  }) as const

/** The organization's message with this provider id: outbound first, then inbound; `undefined` when none. */
export const messageByProviderId = async (
  sql: Sql,
  s: string,
  organizationId: OrganizationId,
  providerId: string,
  forUpdate = false
): Promise<MessageRow | undefined> => {
  const statement = forUpdate ? sqlOf(s).byProviderIdForUpdate : sqlOf(s).byProviderId
  return (
    (await sql.row<MessageRow>(statement, [organizationId, "outbound", providerId])) ??
    (await sql.row<MessageRow>(statement, [organizationId, "inbound", providerId]))
  )
}

/**
 * Folds a reaction of `party` into its target (the message with `reaction.message_id` as
 * provider id, its row locked), inside the caller's transaction: its `reactions` (core's
 * `withReaction`) and `updated_at`, with `message.reactions_updated`, when they changed.
 * No such message: nothing.
 */
export const foldReaction = async (
  sql: Sql,
  s: string,
  organizationId: OrganizationId,
  party: MessageReactionParty,
  reaction: InboundReaction,
  now: string
): Promise<void> => {
  const row = await messageByProviderId(sql, s, organizationId, reaction.message_id, true)
  if (row === undefined) return
  const target = decodeMessage(row)
  const reactions = withReaction(target.reactions, party, reaction.emoji, reaction.at)
  if (reactions === target.reactions) return
  await sql.run(sqlOf(s).writeReactions, [JSON.stringify(reactions), now, target.uuid])
  const written: Message = { ...target, reactions, updated_at: now }
  await recordWebhookEvent(sql, s, organizationId, "message.reactions_updated", now, () => written)
}

import { listedMessageType, type OrganizationId, type ProviderStatusOutcome, type ProviderStatusUpdate } from "@switchboard/core"
import { pendingStatusValues } from "@switchboard/storage-sql"
import type { Statements } from "../internal/sql.js"
import { decodeMessage, MESSAGE_COLUMNS, type MessageRow } from "./chatRows.js"
import { applyStatus } from "./messageStatus.js"
import { recordWebhookEvent } from "./webhookEvents.js"

// A provider's status report (`chats.updateMessageStatusByProviderId`), written inside its
// turn's group transaction.

/** The statements of a status report (part of chats.ts's `SQL`, exported for the query-plan test). */
export const STATUS_REPORT_SQL = {
  outboundByProviderId: `SELECT ${MESSAGE_COLUMNS} FROM messages
    WHERE organization_id = ? AND direction = 'outbound' AND provider_message_id = ? LIMIT 1`,
  insertPending: `INSERT INTO pending_message_statuses
      (organization_id, provider_message_id, status, from_statuses, failure, reported_at, pending_until)
    VALUES (?, ?, ?, ?, ?, ?, ?)`,
  prunePending: "DELETE FROM pending_message_statuses WHERE pending_until <= ?"
} as const

/** One `updateMessageStatusByProviderId` call, as its turn's group holds it. */
export interface StatusReport {
  readonly organizationId: OrganizationId
  readonly providerMessageId: string
  readonly update: ProviderStatusUpdate
}

/**
 * Writes one provider status report inside its group's transaction: to the outbound message
 * with that provider id ({@link applyStatus}, its `message.status_updated` event when the
 * status changed), or, when no message has it yet, as a pending report (expired ones pruned).
 */
export const writeStatusReport = (
  statements: Statements,
  { organizationId, providerMessageId, update }: StatusReport
): ProviderStatusOutcome => {
  const row = statements.prepare<MessageRow>(STATUS_REPORT_SQL.outboundByProviderId).get(organizationId, providerMessageId)
  if (row !== undefined) {
    const written = applyStatus(statements, row, update)
    const message = decodeMessage(written.row)
    if (written.row.status !== row.status && listedMessageType(message.type)) {
      recordWebhookEvent(statements, organizationId, "message.status_updated", update.now, () => message)
    }
    return { _tag: "Updated", message, changed: written.changed }
  }
  statements.prepare(STATUS_REPORT_SQL.prunePending).run(update.now)
  statements.prepare(STATUS_REPORT_SQL.insertPending).run(...pendingStatusValues(organizationId, providerMessageId, update))
  return { _tag: "Pending" }
}

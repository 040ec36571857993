import type { Message, OrganizationId, OutboxPlacement } from "@switchboard/core"
import type { Sql } from "../internal/sql.js"

// The chat repository's seams to the repositories of other areas: the webhook outbox
// (webhook-events.ts) and the send queue. TEMPORARY: `insertOutboxMessage` becomes
//   export { insertOutboxMessage } from "./outbox.js"
// (this signature) once the send queue is built.

export { recordWebhookEvent } from "./webhook-events.js"

/**
 * Inserts `message` into the send queue per `placement` (claimed or queued), inside the
 * caller's transaction; answers the message as stored (its status and `next_attempt_at`).
 * TEMPORARY: fails until outbox.ts provides it.
 */
export const insertOutboxMessage = async (
  _sql: Sql,
  _schema: string,
  _organizationId: OrganizationId,
  _message: Message,
  _placement: OutboxPlacement,
  _now: string
): Promise<Message> => {
  throw new Error("insertOutboxMessage: the send queue (outbox.ts) is not built yet")
}

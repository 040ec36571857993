import type { Message, OrganizationId, OutboxPlacement, WebhookEventType } from "@switchboard/core"
import type { Sql } from "../internal/sql.js"

// TEMPORARY seams between the chat repository and two repositories built in parallel by
// other helpers. At integration each becomes a re-export of the owner's function with this
// signature:
//   export { recordWebhookEvent } from "./webhooks.js"
//   export { insertOutboxMessage } from "./outbox.js"

/**
 * Writes one webhook event of `type` (the record `record()` builds, called only when an
 * endpoint of the organization subscribes) and its deliveries, inside the caller's
 * transaction. TEMPORARY: writes nothing until webhooks.ts provides it.
 */
export const recordWebhookEvent = async (
  _sql: Sql,
  _schema: string,
  _organizationId: OrganizationId,
  _type: WebhookEventType,
  _now: string,
  _record: () => unknown
): Promise<void> => {}

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

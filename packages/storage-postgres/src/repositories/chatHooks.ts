// The seams between the chat repository and the webhook and send-queue helpers (they were
// TEMPORARY stand-ins while those were built in parallel): re-exports of the owners' functions.
export { recordWebhookEvent } from "./webhookEvents.js"
export { insertOutboxMessage } from "./outboxInsert.js"

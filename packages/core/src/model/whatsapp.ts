import type { OrganizationId } from "./organizations.js"

/**
 * A part of a provider webhook Switchboard refused, kept for inspection instead of lost
 * (docs/whatsapp-webhooks.md "Refused parts"): the webhook was still answered 200.
 * - `id`: a uuid derived from the part's content (its organization, number, reason and
 *   JSON), so the same part delivered again is the same reject; `received_at`: when it was
 *   first stored (ISO 8601 UTC);
 * - `organization_id`: the organization the part was routed to, `null` when it could not
 *   be routed (an unknown number, a part without one);
 * - `phone_number_id`: the business number of its change, `null` when it had none;
 * - `reason`: why it was refused, in words (for example `text: required`);
 * - `item`: the refused part's raw JSON (a message, a status, a change, an entry, or the
 *   whole body when it was not a WhatsApp notification), as Meta sent it; a part whose
 *   JSON is longer than {@link WEBHOOK_REJECT_ITEM_MAX_CHARS} is kept as
 *   `{truncated: true, json: <its first characters>}`. Never a header (no signature).
 * Kept {@link WEBHOOK_REJECT_RETENTION_MS} (30 days), then pruned.
 *
 * @category whatsapp
 */
export interface WebhookReject {
  readonly id: string
  readonly received_at: string
  readonly organization_id: OrganizationId | null
  readonly phone_number_id: string | null
  readonly reason: string
  readonly item: unknown
}

/**
 * How long a {@link WebhookReject} is kept: 30 days, in milliseconds.
 *
 * @category whatsapp
 */
export const WEBHOOK_REJECT_RETENTION_MS = 30 * 24 * 60 * 60 * 1000

/**
 * The longest raw JSON a {@link WebhookReject} keeps whole: 65 536 characters.
 *
 * @category whatsapp
 */
export const WEBHOOK_REJECT_ITEM_MAX_CHARS = 65_536

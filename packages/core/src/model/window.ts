import type { MessageContentFields } from "./messages.js"

/**
 * How long a contact's customer service window stays open after its last inbound message
 * through a channel, in ms (24 hours; docs/messaging.md "The customer service window").
 *
 * @category models
 */
export const CUSTOMER_SERVICE_WINDOW_MS = 24 * 3_600_000

/**
 * The end of a customer service window that opened at `lastInboundAt` (an ISO 8601
 * instant, or `null` when the contact never wrote through the channel): `lastInboundAt` +
 * {@link CUSTOMER_SERVICE_WINDOW_MS} as an ISO 8601 UTC instant, or `null`
 * (docs/messaging.md "The customer service window").
 *
 * @category models
 */
export const windowExpiresAt = (lastInboundAt: string | null): string | null =>
  lastInboundAt === null ? null : new Date(Date.parse(lastInboundAt) + CUSTOMER_SERVICE_WINDOW_MS).toISOString()

/**
 * The instant an inbound message opens the customer service window at (docs/messaging.md
 * "The customer service window"): the earlier of the provider's timestamp (`content.timestamp`,
 * seconds since the epoch as a string or a number, as WhatsApp sends it) and our receipt
 * time `nowMs` (ms since the epoch), as an ISO 8601 UTC instant. A missing or unreadable
 * timestamp counts as the receipt time, so a clock ahead of ours never lengthens a window.
 *
 * @category models
 */
export const inboundWindowInstant = (content: MessageContentFields | null, nowMs: number): string => {
  const raw = content?.["timestamp"]
  const seconds = typeof raw === "number" ? raw : typeof raw === "string" && /^\d{1,12}$/.test(raw.trim()) ? Number(raw.trim()) : NaN
  const providerMs = Number.isFinite(seconds) ? seconds * 1_000 : nowMs
  return new Date(Math.min(providerMs, nowMs)).toISOString()
}

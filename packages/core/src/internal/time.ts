import { Clock, Effect } from "effect"
import type { IssueCollector } from "./validation.js"

/** The current time from Effect's `Clock`, as an ISO 8601 UTC string. */
export const nowIso: Effect.Effect<string> = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())

/**
 * `send_at` (a broadcast's or a send's): an RFC 3339 / ISO 8601 date-time with an offset, as
 * epoch ms; `null` when absent (`undefined` or `null`); else an issue naming `send_at` and `null`.
 */
export const readSendAt = (collector: IssueCollector, value: unknown): number | null => {
  if (value === undefined || value === null) return null
  const iso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/i
  const ms = typeof value === "string" && iso.test(value) ? Date.parse(value) : Number.NaN
  if (!Number.isFinite(ms)) {
    collector.add("invalid_format", "send_at", "send_at must be an ISO 8601 date-time with an offset, e.g. 2026-12-01T09:00:00Z")
    return null
  }
  return ms
}

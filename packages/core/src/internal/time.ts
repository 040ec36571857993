import { Clock, Effect } from "effect"

/** The current time from Effect's `Clock`, as an ISO 8601 UTC string. */
export const nowIso: Effect.Effect<string> = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())

import type { SendQueueHandlerOptions } from "@switchboard/http-adapter"
import { Config, Option } from "effect"
import { delayListConfig, millisecondsConfig } from "./webhooks.js"

/**
 * The send queue of the standalone server (docs/messaging.md "The send queue"), read from
 * the environment; the server's handler runs its dispatcher:
 * - `SWITCHBOARD_SEND_RETRY_DELAYS_MS`: the waits before each retry after a transient
 *   failure or an unknown outcome, a comma-separated list of milliseconds (default
 *   `5000,30000,120000,600000,1800000`);
 * - `SWITCHBOARD_SEND_TIMEOUT_MS`: the longest one attempt may take (default `10000`);
 * - `SWITCHBOARD_SEND_SETTLE_MS`: how long an unknown outcome waits for Meta's status
 *   notification before a retry (default `120000`);
 * - `SWITCHBOARD_SEND_TTL_MS`: how long a message may wait in the queue before it fails
 *   `expired` (default `14400000`, 4 hours);
 * - `SWITCHBOARD_SEND_LEASE_MS`: how long a claim holds a message, after which another
 *   process takes over a message whose process died (default `60000`; more than the
 *   timeout + 1000).
 * Unset or empty: the default. A bad value fails with an error naming its variable.
 *
 * @category config
 */
export const sendQueueConfig: Config.Config<SendQueueHandlerOptions> = Config.all({
  retryDelaysMs: delayListConfig("SWITCHBOARD_SEND_RETRY_DELAYS_MS"),
  timeoutMs: millisecondsConfig("SWITCHBOARD_SEND_TIMEOUT_MS"),
  settleMs: millisecondsConfig("SWITCHBOARD_SEND_SETTLE_MS"),
  ttlMs: millisecondsConfig("SWITCHBOARD_SEND_TTL_MS"),
  leaseMs: millisecondsConfig("SWITCHBOARD_SEND_LEASE_MS")
}).pipe(
  Config.map(({ retryDelaysMs, timeoutMs, settleMs, ttlMs, leaseMs }): SendQueueHandlerOptions => ({
    ...Option.match(retryDelaysMs, { onNone: () => ({}), onSome: (value) => ({ retryDelaysMs: value }) }),
    ...Option.match(timeoutMs, { onNone: () => ({}), onSome: (value) => ({ timeoutMs: value }) }),
    ...Option.match(settleMs, { onNone: () => ({}), onSome: (value) => ({ settleMs: value }) }),
    ...Option.match(ttlMs, { onNone: () => ({}), onSome: (value) => ({ ttlMs: value }) }),
    ...Option.match(leaseMs, { onNone: () => ({}), onSome: (value) => ({ leaseMs: value }) })
  }))
)

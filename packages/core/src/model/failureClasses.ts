import { Schema } from "effect"

/**
 * The class of a failed send (docs/messaging.md "Classes of failure"), what the send queue
 * will do with it:
 * - `throttle`: Meta's throughput limit; the channel cools down, no attempt counted;
 * - `pair_rate`: too many messages to one recipient; only that recipient waits;
 * - `transient`: Meta or the network failed before the message was taken; retried later;
 * - `unknown`: the request may have reached Meta (a timeout, a connection lost after it
 *   was written); settled by a status notification naming the message, else retried;
 * - `permanent`: this message will never be accepted as it is; `failed` at once;
 * - `account`: the number, its token or its account cannot send; the channel pauses.
 *
 * Today every class still ends the message `failed` (the queue that acts on them is coming).
 *
 * @category messaging
 */
export const FailureKind = Schema.Literal("throttle", "pair_rate", "transient", "unknown", "permanent", "account")

/**
 * One of {@link FailureKind}'s six classes.
 *
 * @category messaging
 */
export type FailureKind = typeof FailureKind.Type

/**
 * What {@link classifyFailure} reads of a failure (a `TransportFailed` has them all):
 * - `provider_code`: Meta's Graph error code as a string (`"130429"`), or `null`;
 * - `http_status`: the HTTP status of the answer, or `null` when none came (absent: `null`);
 * - `network_error`: the socket error's code when no answer came (`ECONNREFUSED`,
 *   `UND_ERR_SOCKET`, …, `TimeoutError` for the transport's timeout), or `null`;
 * - `kind`: a class the transport states itself, which wins over everything else.
 *
 * @category messaging
 */
export interface ClassifiableFailure {
  readonly provider_code: string | null
  readonly http_status?: number | null | undefined
  readonly network_error?: string | null | undefined
  readonly kind?: FailureKind | undefined
}

/**
 * The classes of Meta's Graph error codes (docs/messaging.md "Classes of failure"), as
 * `[class, codes]` rows; a range `[from, to]` includes both ends. A code in no row is
 * classified by the HTTP status instead.
 *
 * @category messaging
 */
export const GRAPH_ERROR_CLASSES: ReadonlyArray<readonly [FailureKind, ReadonlyArray<number | readonly [number, number]>]> = [
  ["throttle", [4, 80007, 130429, 131057]],
  ["pair_rate", [131056]],
  ["transient", [1, 2, 131000, 131016]],
  ["permanent", [100, 131008, 131009, 131026, 131047, 131049, 131050, 131051, [132000, 132012], 133010, 132015, 132016]],
  ["account", [0, 3, 10, 190, [200, 299], 368, 131031, 131042, 131048]]
]

/**
 * The socket errors that happen while connecting, before any byte of the request was
 * written: the message cannot have reached Meta, so the failure is `transient`. Any other
 * network error (a reset, a closed socket, a timeout) is `unknown`.
 *
 * @category messaging
 */
export const CONNECT_PHASE_ERRORS: ReadonlyArray<string> = ["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "UND_ERR_CONNECT_TIMEOUT"]

/**
 * The class of a failed send (docs/messaging.md "Classes of failure"), decided in this order:
 * 1. `kind`, when the transport stated one;
 * 2. the Graph error code (`provider_code`) by {@link GRAPH_ERROR_CLASSES};
 * 3. the HTTP status: 429 `throttle`, 5xx `transient`, any other 4xx `permanent`;
 * 4. the network error: one of {@link CONNECT_PHASE_ERRORS} `transient`, any other `unknown`;
 * 5. nothing to go by (no known code, no error status, no network error): `permanent`,
 *    what a custom transport's `TransportFailed({reason, provider_code})` always meant.
 *
 * @category messaging
 * @example
 * classifyFailure({ provider_code: "130429", http_status: 429 }) // "throttle"
 * classifyFailure({ provider_code: null, http_status: null, network_error: "ECONNREFUSED" }) // "transient"
 * classifyFailure({ provider_code: null, http_status: null, network_error: "UND_ERR_SOCKET" }) // "unknown"
 */
export const classifyFailure = (failure: ClassifiableFailure): FailureKind =>
  failure.kind ??
  graphCodeClass(failure.provider_code) ??
  httpStatusClass(failure.http_status ?? null) ??
  networkErrorClass(failure.network_error ?? null) ??
  "permanent"

/**
 * The class of a Graph error code by {@link GRAPH_ERROR_CLASSES} (a string of digits, as
 * `TransportFailed.provider_code` holds it, or a number), or `undefined` for a code in no row
 * or no code.
 *
 * @category messaging
 */
export const graphCodeClass = (code: string | number | null): FailureKind | undefined => {
  const value = typeof code === "number" ? code : /^\s*\d+\s*$/.test(code ?? "") ? Number(code) : Number.NaN
  if (!Number.isSafeInteger(value)) return undefined
  for (const [kind, codes] of GRAPH_ERROR_CLASSES) {
    if (codes.some((entry) => (typeof entry === "number" ? entry === value : value >= entry[0] && value <= entry[1]))) return kind
  }
  return undefined
}

/** 429 `throttle`, 5xx `transient`, any other 4xx `permanent`; no status or another one: `undefined`. */
const httpStatusClass = (status: number | null): FailureKind | undefined => {
  if (status === null) return undefined
  if (status === 429) return "throttle"
  if (status >= 500 && status <= 599) return "transient"
  if (status >= 400 && status <= 499) return "permanent"
  return undefined
}

/** A connect-phase error `transient`, any other network error `unknown`; none: `undefined`. */
const networkErrorClass = (error: string | null): FailureKind | undefined => {
  if (error === null || error.trim() === "") return undefined
  return CONNECT_PHASE_ERRORS.includes(error) ? "transient" : "unknown"
}

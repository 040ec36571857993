import type { StatusName } from "./payloads.js"
import type { Route } from "./script.js"
import type { WebhookDelivery } from "./webhook.js"

/**
 * One request the simulator received on its Graph side, in arrival order:
 * - `seq`: 1, 2, … since the start (or the last reset);
 * - `at_ms`: when it arrived, milliseconds since the epoch with sub-millisecond precision
 *   (`performance.timeOrigin + performance.now()`);
 * - `method`, `path` (with the query string), `route` (`messages`, `lookup`,
 *   `media_lookup`, `media_download`, `media_upload`, `templates_list`, `templates_create`,
 *   `templates_delete`, `mark_read`, or `null` for a path Graph does not have), `phone_number_id` (from
 *   the path of a number's route, `null` for the others);
 * - `authorization`: the header as sent (tests check the bearer token);
 * - `body`: the JSON body parsed (the raw text when it is not JSON; `null` when empty); of
 *   an upload, its fields and its file's name, type, size and sha256 (never its bytes);
 * - `answer`: what was answered, `null` while a delayed answer is pending; `wamid` of a
 *   successful send.
 *
 * @category records
 */
export interface Received {
  readonly seq: number
  readonly at_ms: number
  readonly method: string
  readonly path: string
  readonly route: Route | null
  readonly phone_number_id: string | null
  readonly authorization: string | null
  body: unknown
  answer: AnswerRecord | null
  wamid: string | null
}

/**
 * One read receipt the simulator received (`POST …/messages` with `status: "read"`), in
 * arrival order: its `seq` and `at_ms` (as {@link Received}), the number it came through,
 * the `message_id` it names (`null` when absent or not a string), whether it asked for
 * the typing indicator (`typing_indicator` present), and whether it was `accepted` (answered
 * `{success: true}`; `false` for a refusal, `null` while the answer is pending).
 *
 * @category records
 */
export interface ReadReceiptCall {
  readonly seq: number
  readonly at_ms: number
  readonly phone_number_id: string | null
  readonly message_id: string | null
  readonly typing_indicator: boolean
  readonly accepted: boolean | null
}

/** The {@link ReadReceiptCall} of a received `mark_read` request. */
export const readReceiptCallOf = (entry: Received): ReadReceiptCall => {
  const body = (typeof entry.body === "object" && entry.body !== null ? entry.body : {}) as Record<string, unknown>
  const answer = entry.answer
  return {
    seq: entry.seq,
    at_ms: entry.at_ms,
    phone_number_id: entry.phone_number_id,
    message_id: typeof body.message_id === "string" ? body.message_id : null,
    typing_indicator: body.typing_indicator !== undefined,
    accepted: answer === null ? null : "status" in answer && answer.status === 200
  }
}

/**
 * What the simulator answered a request: an HTTP status and the body it wrote, or a
 * dropped request (`"close"`: socket destroyed; `"hang"`: never answered).
 *
 * @category records
 */
export type AnswerRecord =
  | { readonly status: number; readonly body: unknown }
  | { readonly dropped: "close" | "hang" | "mid_stream" }

/**
 * One webhook the simulator posted, in order: a `status` notification (with `wamid` and
 * `status`), an `inbound` message, a `template_status` update or a `template_category`
 * update; `at_ms` when it was sent, `body` the exact text posted (and signed), `delivery`
 * what the webhook answered.
 *
 * @category records
 */
export interface Notification {
  readonly seq: number
  readonly at_ms: number
  readonly kind: "status" | "inbound" | "template_status" | "template_category"
  readonly url: string
  readonly body: string
  readonly wamid: string | null
  readonly status: StatusName | null
  readonly delivery: WebhookDelivery
}

/**
 * The largest number of `times` (ms) falling in any half-open window `[t, t + windowMs)`,
 * for example the most sends a number received within one second. Sorted or not.
 *
 * @category records
 * @example
 * maxInWindow(simulator.arrivals("106540352242922"), 1000) // ≤ throughput_mps when paced
 */
export const maxInWindow = (times: ReadonlyArray<number>, windowMs = 1000): number => {
  const sorted = [...times].sort((a, b) => a - b)
  let best = 0
  let start = 0
  for (let end = 0; end < sorted.length; end++) {
    while (sorted[end]! - sorted[start]! >= windowMs) start++
    best = Math.max(best, end - start + 1)
  }
  return best
}

/** Milliseconds since the epoch, with sub-millisecond precision. */
export const preciseNow = (): number => performance.timeOrigin + performance.now()

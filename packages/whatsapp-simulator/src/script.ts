import { digitsOf, type StatusName } from "./payloads.js"

/**
 * How the simulator answers one Graph call. Every field is optional; `{}` is Meta's
 * success:
 * - `code`: refuse with this Meta error code (body {@link GraphErrorBody}); `http_status`
 *   defaults to the code's (`defaultHttpStatus`); `message`, `error_subcode`, `details`
 *   override the body's;
 * - `http_status` without `code`: answer that status with a plain-text body and no Graph
 *   error (a proxy's 502, a 503);
 * - `delay_ms`: wait this long before answering (or before dropping);
 * - `drop`: `"close"` destroys the socket once the request is read (no answer);
 *   `"hang"` never answers (the caller's timeout ends it); `"mid_stream"` (a media
 *   download only; elsewhere as `"close"`) sends the headers and half the bytes, then
 *   destroys the socket;
 * - `bytes_per_second` (a media download only; ignored elsewhere): the bytes are sent no
 *   faster than this, in slices every 50 ms (a slow network to Meta's CDN); with
 *   `"mid_stream"`, the half before the cut is;
 * - on a successful send, `statuses` replaces the notifications posted (default the
 *   simulator's `statuses` setting) and `failure` makes them end in `failed` with that
 *   error (`statuses` then defaults to `["failed"]`).
 *
 * @category scripting
 */
export interface Answer {
  readonly code?: number
  readonly http_status?: number
  readonly message?: string
  readonly error_subcode?: number
  readonly details?: string
  readonly delay_ms?: number
  readonly drop?: "close" | "hang" | "mid_stream"
  readonly bytes_per_second?: number
  readonly statuses?: ReadonlyArray<StatusName>
  readonly failure?: { readonly code: number; readonly title?: string; readonly message?: string; readonly details?: string }
}

/**
 * The kinds of Graph call: `messages` (`POST /{version}/{id}/messages`), `lookup` (`GET
 * /{version}/{phone_number_id}`), `media_lookup` (`GET /{version}/{media_id}`),
 * `media_download` (`GET` of the URL a media look-up answered), `media_upload` (`POST
 * /{version}/{phone_number_id}/media`), and an account's templates: `templates_list` (`GET
 * /{version}/{waba_id}/message_templates`), `templates_create` (`POST` there) and
 * `templates_delete` (`DELETE` there), and `mark_read` (a read receipt: `POST
 * /{version}/{phone_number_id}/messages` with `status: "read"`). Scripted sequences are per
 * route.
 *
 * @category scripting
 */
export type Route =
  | "messages"
  | "lookup"
  | "media_lookup"
  | "media_download"
  | "media_upload"
  | "templates_list"
  | "templates_create"
  | "templates_delete"
  | "mark_read"

/**
 * Every {@link Route}, in the order above.
 *
 * @category scripting
 */
export const ROUTES: ReadonlyArray<Route> = [
  "messages",
  "lookup",
  "media_lookup",
  "media_download",
  "media_upload",
  "templates_list",
  "templates_create",
  "templates_delete",
  "mark_read"
]

/**
 * A share of sends refused: each send reaching this rule draws from a PRNG seeded with
 * `seed` and is refused with `answer` when the draw is below `fraction` (0–1), so the same
 * seed refuses the same sends of a run.
 *
 * @category scripting
 */
export interface ShareRule {
  readonly fraction: number
  readonly seed: number
  readonly answer: Answer
}

/**
 * The scripted answers of one simulator. For each call, the first that applies wins:
 * a refusal for the send's recipient (messages only; never consumed), then the next answer
 * of the route's sequence (consumed), then the share rule (messages only), then the default
 * answer (`{}` unless set: a delay or a drop for every call).
 *
 * @category scripting
 */
export class Script {
  private readonly recipients = new Map<string, Answer>()
  private readonly sequences = Object.fromEntries(ROUTES.map((route) => [route, []])) as unknown as Record<Route, Array<Answer>>
  private share: { rule: ShareRule; next: () => number } | null = null
  private fallback: Answer = {}

  /** Refuses (or delays, drops…) every send to `to` (any format: digits are compared). */
  refuseRecipient(to: string, answer: Answer): void {
    this.recipients.set(digitsOf(to), checkAnswer(answer))
  }

  /** Forgets the rule for `to`. */
  clearRecipient(to: string): void {
    this.recipients.delete(digitsOf(to))
  }

  /** Appends `answers` to the route's sequence; each call of that route consumes one. */
  enqueue(answers: ReadonlyArray<Answer>, route: Route = "messages"): void {
    this.sequences[route].push(...answers.map(checkAnswer))
  }

  /** The answers of the route's sequence not consumed yet. */
  pending(route: Route = "messages"): number {
    return this.sequences[route].length
  }

  /** Sets (or with `null` clears) the share rule. */
  setShare(rule: ShareRule | null): void {
    if (rule !== null && !(rule.fraction >= 0 && rule.fraction <= 1)) throw new RangeError("fraction must be between 0 and 1")
    if (rule !== null && !Number.isInteger(rule.seed)) throw new RangeError("seed must be an integer")
    this.share = rule === null ? null : { rule: { ...rule, answer: checkAnswer(rule.answer) }, next: mulberry32(rule.seed) }
  }

  /** Sets the answer of calls no other rule takes (for example `{delay_ms: 300}`). */
  setDefault(answer: Answer): void {
    this.fallback = checkAnswer(answer)
  }

  /** The answer for one call of `route` (to `recipient` for a send). */
  answerFor(route: Route, recipient: string | null): Answer {
    const byRecipient = route === "messages" && recipient !== null ? this.recipients.get(digitsOf(recipient)) : undefined
    if (byRecipient !== undefined) return byRecipient
    const scripted = this.sequences[route].shift()
    if (scripted !== undefined) return scripted
    if (route === "messages" && this.share !== null && this.share.next() < this.share.rule.fraction) return this.share.rule.answer
    return this.fallback
  }

  /** Forgets every rule. */
  clear(): void {
    this.recipients.clear()
    for (const route of ROUTES) this.sequences[route].length = 0
    this.share = null
    this.fallback = {}
  }
}

/** The answer itself, or a `TypeError` naming what is wrong with it. */
const checkAnswer = (answer: Answer): Answer => {
  if (typeof answer !== "object" || answer === null) throw new TypeError("an answer must be an object")
  const integer = (name: keyof Answer, min: number, max: number) => {
    const value = answer[name]
    if (value !== undefined && !(Number.isInteger(value) && (value as number) >= min && (value as number) <= max)) {
      throw new TypeError(`${name} must be an integer from ${min} to ${max}`)
    }
  }
  integer("code", 0, 99_999_999)
  integer("http_status", 200, 599)
  integer("delay_ms", 0, 600_000)
  integer("bytes_per_second", 1, 10_000_000_000)
  if (answer.drop !== undefined && !["close", "hang", "mid_stream"].includes(answer.drop)) throw new TypeError('drop must be "close", "hang" or "mid_stream"')
  if (answer.statuses !== undefined && !answer.statuses.every((s) => ["sent", "delivered", "read", "failed"].includes(s))) {
    throw new TypeError("statuses must be sent, delivered, read or failed")
  }
  if (answer.failure !== undefined && !Number.isInteger(answer.failure.code)) throw new TypeError("failure.code must be an integer")
  return answer
}

/** A small seeded PRNG (mulberry32): the same seed gives the same draws in [0, 1). */
const mulberry32 = (seed: number): (() => number) => {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

import { request as httpRequest, type IncomingMessage } from "node:http"
import { request as httpsRequest } from "node:https"
import { isIP, type LookupFunction } from "node:net"
import { Clock, Context, Effect } from "effect"
import { Webhook } from "standardwebhooks"
import { type CheckedAddress, resolveWebhookAddress } from "./addressSafety.js"
import { DELIVERY_TIMEOUT_MS, MAX_RESPONSE_BODY_BYTES, type WebhookEvent } from "../model/webhooks.js"
import { WebhookSettings } from "./WebhookSettings.js"

/**
 * Signing and sending one event to one endpoint (docs/webhooks.md "Delivery and the
 * dispatcher"). The body is `JSON.stringify({ id, type, created_at, data })`; the headers
 * `content-type: application/json`, `webhook-id` (the event's id, the same on every
 * attempt), `webhook-timestamp` (seconds since the epoch) and `webhook-signature`, made
 * by the `standardwebhooks` package with the endpoint's secret (`v1,<base64 HMAC-SHA256>`),
 * so a receiver verifies a delivery with `new Webhook(secret).verify(body, headers)`. During
 * a secret's overlap after a rotation the request also carries the `previous_secret`: then
 * `webhook-signature` holds two `v1,` entries, space-separated (the new secret's first), made
 * over the same id, timestamp and body, so a receiver holding either secret verifies it.
 *
 * The host is resolved and checked by `resolveWebhookAddress` at each attempt, and the
 * connection goes to that checked address (never resolved again; TLS still verifies the
 * host name). Redirects are never followed: a 3xx is a failed attempt like any non-2xx.
 * An attempt takes at most 10 s; at most 1 KiB of the response body is kept.
 */

/**
 * What one attempt to deliver came to: `delivered` when the receiver answered a 2xx;
 * its HTTP `status` (or `null` when there was no response), the `error` when there was
 * none (timeout, refused connection, refused address…, never a secret), how long the
 * attempt took in milliseconds (`duration_ms`), and the first bytes (at most 1 KiB,
 * UTF-8) of the response body (`null` when there was no response).
 *
 * @category webhooks
 */
export interface WebhookSendOutcome {
  readonly delivered: boolean
  readonly status: number | null
  readonly error: string | null
  readonly duration_ms: number
  readonly response_body: string | null
}

/**
 * One delivery to send: the endpoint's `url`, its signing `secret` in plaintext (a
 * `whsec_…` Standard Webhooks secret), the `previous_secret` while a rotation's overlap
 * runs (absent otherwise: it signs too), and the `event`.
 *
 * @category webhooks
 */
export interface WebhookSendRequest {
  readonly url: string
  readonly secret: string
  readonly previous_secret?: string | undefined
  readonly event: WebhookEvent
}

/**
 * The value of {@link WebhookSender}: `send` makes one attempt and never fails — every
 * failure is part of the {@link WebhookSendOutcome}.
 *
 * @category webhooks
 */
export interface WebhookSenderValue {
  readonly send: (request: WebhookSendRequest) => Effect.Effect<WebhookSendOutcome>
}

/**
 * Options of {@link makeHttpWebhookSender}: `timeoutMs`, the longest an attempt may take,
 * in milliseconds (default 10 000, `DELIVERY_TIMEOUT_MS`); `ca`, certificate authorities
 * (PEM) to trust instead of Node's bundled ones, for tests with a receiver whose
 * certificate is self-signed.
 *
 * @category webhooks
 */
export interface HttpWebhookSenderOptions {
  readonly timeoutMs?: number
  readonly ca?: string | ReadonlyArray<string>
}

/**
 * The body of a delivery's POST: `JSON.stringify({ id, type, created_at, data })`.
 *
 * @category webhooks
 */
export const webhookPayload = (event: WebhookEvent): string =>
  JSON.stringify({ id: event.id, type: event.type, created_at: event.created_at, data: event.data })

/**
 * The headers of a delivery signed with `secret` at `timestamp`: `content-type`,
 * `webhook-id`, `webhook-timestamp` (seconds) and `webhook-signature`; with a
 * `previousSecret`, the signature header is two `v1,` entries, space-separated, the
 * `secret`'s first. Throws when a secret is not a Standard Webhooks secret (base64,
 * optionally prefixed `whsec_`).
 *
 * @category webhooks
 */
export const signWebhook = (
  secret: string,
  event: WebhookEvent,
  payload: string,
  timestamp: Date,
  previousSecret?: string
): Record<string, string> => ({
  "content-type": "application/json",
  "webhook-id": event.id,
  "webhook-timestamp": String(Math.floor(timestamp.getTime() / 1000)),
  "webhook-signature": [secret, ...(previousSecret === undefined ? [] : [previousSecret])]
    .map((each) => new Webhook(each).sign(event.id, timestamp, payload))
    .join(" ")
})

/** The first bytes of `bytes`, at most `limit`, cut at a character boundary, as UTF-8 text. */
const truncatedText = (bytes: Buffer, limit: number): string => {
  if (bytes.length <= limit) return bytes.toString("utf8")
  let end = limit
  // Step back over continuation bytes (10xxxxxx) to the start of the cut character.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--
  return bytes.subarray(0, end).toString("utf8")
}

/** A short description of a connection error, from its code (never its whole message). */
const describeError = (error: unknown): string => {
  const code = typeof error === "object" && error !== null && "code" in error ? String(error.code) : undefined
  switch (code) {
    case "ECONNREFUSED":
      return "connection refused (ECONNREFUSED)"
    case "ECONNRESET":
      return "connection reset (ECONNRESET)"
    case "EHOSTUNREACH":
      return "host unreachable (EHOSTUNREACH)"
    case "ENETUNREACH":
      return "network unreachable (ENETUNREACH)"
    case "ETIMEDOUT":
      return "connection timed out (ETIMEDOUT)"
    case undefined:
      return error instanceof Error ? `request failed: ${error.message}` : "request failed"
    default:
      return `request failed (${code})`
  }
}

/** Node's `lookup` answering only the checked address (both its single and `all` forms). */
const fixedLookup = (checked: CheckedAddress): LookupFunction =>
  ((_hostname: string, options: { all?: boolean }, callback: (...args: Array<unknown>) => void) => {
    if (options?.all === true) callback(null, [{ address: checked.address, family: checked.family }])
    else callback(null, checked.address, checked.family)
  }) as unknown as LookupFunction

/**
 * POSTs `payload` with `headers` to `url`, connecting to `checked`; answers the status and
 * at most `MAX_RESPONSE_BODY_BYTES` of the body, or the error. Interruption destroys the
 * request.
 */
const post = (
  url: URL,
  checked: CheckedAddress,
  headers: Record<string, string>,
  payload: string,
  timeoutMs: number,
  ca: string | ReadonlyArray<string> | undefined
): Effect.Effect<{ readonly status: number; readonly body: string } | { readonly error: string }> =>
  Effect.async((resume) => {
    let settled = false
    const finish = (result: { readonly status: number; readonly body: string } | { readonly error: string }) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resume(Effect.succeed(result))
    }
    const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname
    const body = Buffer.from(payload, "utf8")
    const send = url.protocol === "https:" ? httpsRequest : httpRequest
    const request = send({
      protocol: url.protocol,
      host,
      port: url.port === "" ? undefined : Number(url.port),
      path: `${url.pathname}${url.search}`,
      method: "POST",
      headers: { ...headers, "content-length": String(body.length), "user-agent": "Switchboard-Webhooks/1" },
      lookup: fixedLookup(checked),
      ...(url.protocol === "https:" && isIP(host) === 0 ? { servername: host } : {}),
      ...(ca === undefined ? {} : { ca: typeof ca === "string" ? ca : [...ca] }),
      agent: false
    })
    const timer = setTimeout(() => {
      finish({ error: `timed out after ${timeoutMs} ms` })
      request.destroy()
    }, timeoutMs)
    request.on("error", (error) => finish({ error: describeError(error) }))
    request.on("response", (response: IncomingMessage) => {
      const chunks: Array<Buffer> = []
      let size = 0
      const done = () => {
        const all = Buffer.concat(chunks)
        finish({ status: response.statusCode ?? 0, body: truncatedText(all, MAX_RESPONSE_BODY_BYTES) })
        response.destroy()
      }
      response.on("data", (chunk: Buffer) => {
        if (size > MAX_RESPONSE_BODY_BYTES) return
        chunks.push(chunk)
        size += chunk.length
        // One byte past the limit is kept so the cut can find a character boundary.
        if (size > MAX_RESPONSE_BODY_BYTES) done()
      })
      response.on("end", done)
      response.on("error", done)
      response.on("close", done)
    })
    request.end(body)
    return Effect.sync(() => {
      settled = true
      clearTimeout(timer)
      request.destroy()
    })
  })

/**
 * A sender making real HTTP requests with `node:http` / `node:https`, as described at the
 * top of this module; the address check follows the `WebhookSettings` in use and
 * resolves through `WebhookHostResolver`.
 *
 * @category webhooks
 */
export const makeHttpWebhookSender = (options: HttpWebhookSenderOptions = {}): WebhookSenderValue => {
  const timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS
  return {
    send: ({ event, previous_secret, secret, url }) =>
      Effect.gen(function*() {
        const started = yield* Clock.currentTimeMillis
        const settings = yield* WebhookSettings
        const outcome = (result: { readonly status: number; readonly body: string } | { readonly error: string }) =>
          Effect.map(Clock.currentTimeMillis, (ended): WebhookSendOutcome =>
            "error" in result
              ? { delivered: false, status: null, error: result.error, duration_ms: ended - started, response_body: null }
              : {
                delivered: result.status >= 200 && result.status < 300,
                status: result.status,
                error: null,
                duration_ms: ended - started,
                response_body: result.body
              })
        let parsed: URL
        try {
          parsed = new URL(url)
        } catch {
          return yield* outcome({ error: "the endpoint URL is not a URL" })
        }
        if (parsed.protocol !== "https:" && !(parsed.protocol === "http:" && settings.allowInsecureUrls)) {
          return yield* outcome({ error: `refused address: the scheme must be https` })
        }
        const checked = yield* Effect.either(resolveWebhookAddress(parsed, settings))
        if (checked._tag === "Left") return yield* outcome({ error: `refused address: ${checked.left.reason}` })
        const payload = webhookPayload(event)
        let headers: Record<string, string>
        try {
          headers = signWebhook(secret, event, payload, new Date(yield* Clock.currentTimeMillis), previous_secret)
        } catch {
          return yield* outcome({ error: "the endpoint secret is not a usable signing secret" })
        }
        return yield* outcome(yield* post(parsed, checked.right, headers, payload, timeoutMs, options.ca))
      })
  }
}

/**
 * How deliveries are sent; default: {@link makeHttpWebhookSender} with the 10 s timeout.
 * Tests may provide another (`Layer.succeed(WebhookSender, …)`).
 *
 * @category webhooks
 */
export class WebhookSender extends Context.Reference<WebhookSender>()("@switchboard/core/WebhookSender", {
  defaultValue: (): WebhookSenderValue => makeHttpWebhookSender()
}) {}

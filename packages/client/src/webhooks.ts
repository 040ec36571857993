/** Verifying Switchboard's signed webhook deliveries (docs/client.md "Verifying webhooks"). */
import { WebhookVerificationError } from "./errors.js"

/**
 * How far a delivery's `webhook-timestamp` may be from now, either way: 5 minutes, in seconds.
 *
 * @category webhooks
 */
export const WEBHOOK_TOLERANCE_SECONDS = 300

const base64ToBytes = (text: string): Uint8Array => {
  const binary = atob(text)
  const bytes = new Uint8Array(binary.length)
  for (let index = 0; index < binary.length; index++) bytes[index] = binary.charCodeAt(index)
  return bytes
}

const bytesToBase64 = (bytes: Uint8Array): string => {
  let binary = ""
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary)
}

const headerOf = (headers: Headers | Record<string, string | undefined>, name: string): string | undefined => {
  if (typeof Headers !== "undefined" && headers instanceof Headers) return headers.get(name) ?? undefined
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return value
  return undefined
}

/** Compares two strings in time independent of where they differ. */
const equalInConstantTime = (left: string, right: string): boolean => {
  if (left.length !== right.length) return false
  let difference = 0
  for (let index = 0; index < left.length; index++) difference |= left.charCodeAt(index) ^ right.charCodeAt(index)
  return difference === 0
}

/** The key bytes of a signing secret as the server shows it (`whsec_` then base64; the bare base64 too). */
const keyBytesOf = (secret: string): Uint8Array => {
  try {
    return base64ToBytes(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret)
  } catch {
    throw new WebhookVerificationError("A webhook secret is not a signing secret (whsec_ followed by base64)")
  }
}

/**
 * Verifies a delivery of Switchboard's signed events (Standard Webhooks) and resolves to the
 * parsed event. `rawBody` is the request body exactly as received (string or bytes: parse it
 * only after), `headers` the request's headers (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature`), `secrets` the endpoint's signing secret (`whsec_…`) or several (during
 * a rotation's overlap). The delivery is accepted when any `v1,` entry of the
 * space-separated `webhook-signature` is the HMAC-SHA256 of `id.timestamp.body` under any
 * secret, and the timestamp is within 5 minutes of now either way. Uses WebCrypto
 * (`crypto.subtle`): Node ≥ 20, Deno, Bun, browsers.
 *
 * Rejects with {@link WebhookVerificationError} (never naming a secret) when a header is
 * missing, no signature matches, the timestamp is out of tolerance or the body is not JSON.
 *
 * @category webhooks
 * @example
 * // In a handler given the raw body and the request's headers:
 * const event = await verifyWebhook<{ type: string }>(rawBody, request.headers, process.env.WEBHOOK_SECRET!)
 * console.log(event.type)
 */
export const verifyWebhook = async <Event = unknown>(
  rawBody: string | Uint8Array,
  headers: Headers | Record<string, string | undefined>,
  secrets: string | ReadonlyArray<string>,
  options: { readonly now?: Date } = {}
): Promise<Event> => {
  const id = headerOf(headers, "webhook-id")
  const timestamp = headerOf(headers, "webhook-timestamp")
  const signature = headerOf(headers, "webhook-signature")
  if (id === undefined || timestamp === undefined || signature === undefined) {
    throw new WebhookVerificationError("Missing webhook-id, webhook-timestamp or webhook-signature header")
  }
  const seconds = Number(timestamp)
  if (!/^\d+$/.test(timestamp.trim()) || !Number.isFinite(seconds)) throw new WebhookVerificationError("Invalid webhook-timestamp header")
  const now = Math.floor((options.now ?? new Date()).getTime() / 1000)
  if (Math.abs(now - seconds) > WEBHOOK_TOLERANCE_SECONDS) throw new WebhookVerificationError("The webhook-timestamp is more than 5 minutes from now")
  const body = typeof rawBody === "string" ? rawBody : new TextDecoder().decode(rawBody)
  const signed = new TextEncoder().encode(`${id}.${timestamp.trim()}.${body}`)
  const offered = signature
    .split(" ")
    .filter((entry) => entry.startsWith("v1,"))
    .map((entry) => entry.slice("v1,".length))
  const subtle = globalThis.crypto.subtle
  let matched = false
  for (const secret of typeof secrets === "string" ? [secrets] : secrets) {
    const key = await subtle.importKey("raw", keyBytesOf(secret) as Uint8Array<ArrayBuffer>, { name: "HMAC", hash: "SHA-256" }, false, ["sign"])
    const expected = bytesToBase64(new Uint8Array(await subtle.sign("HMAC", key, signed)))
    for (const candidate of offered) if (equalInConstantTime(candidate, expected)) matched = true
  }
  if (!matched) throw new WebhookVerificationError("No webhook signature matches")
  try {
    return JSON.parse(body) as Event
  } catch {
    throw new WebhookVerificationError("The webhook body is not JSON")
  }
}

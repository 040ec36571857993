import { createHmac } from "node:crypto"

/**
 * The `X-Hub-Signature-256` value Meta sends with a webhook: `sha256=<hex>` where `<hex>`
 * is the HMAC-SHA256 of the exact body bytes under the app secret. Sign the string you
 * post, never a re-serialisation of it.
 *
 * @category webhooks
 * @example
 * import { sign } from "@switchboard/whatsapp-simulator"
 * const body = JSON.stringify(payload)
 * await fetch(url, { method: "POST", headers: { "x-hub-signature-256": sign(body, appSecret) }, body })
 */
export const sign = (body: string | Uint8Array, secret: string): string =>
  `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`

/**
 * What posting a webhook gave: the HTTP status and body text, or the network error
 * (`status: null`).
 *
 * @category webhooks
 */
export interface WebhookDelivery {
  readonly status: number | null
  readonly body: string
  readonly error: string | null
}

/**
 * POSTs `body` (a payload object, serialised once, or the exact string) to `url` as Meta
 * does: `content-type: application/json` and `X-Hub-Signature-256` under `secret` (no
 * signature header when `secret` is `null`). Never throws: a network failure is
 * `{status: null, error}`. `timeoutMs` default 10 000 ms.
 *
 * @category webhooks
 * @example
 * import { postWebhook, inboundMessagePayload, textMessage } from "@switchboard/whatsapp-simulator"
 * const payload = inboundMessagePayload({ number, from: "16505551234", profile_name: "Sheena", message: textMessage("Hi") })
 * const delivery = await postWebhook("http://127.0.0.1:3000/api/v1/api/webhooks/whatsapp", payload, appSecret)
 */
export const postWebhook = async (
  url: string,
  body: unknown,
  secret: string | null,
  timeoutMs = 10_000
): Promise<WebhookDelivery> => {
  const text = typeof body === "string" ? body : JSON.stringify(body)
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...(secret === null ? {} : { "x-hub-signature-256": sign(text, secret) }) },
      body: text,
      signal: AbortSignal.timeout(timeoutMs)
    })
    return { status: response.status, body: await response.text(), error: null }
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? ` (${error.cause.message})` : ""
    return { status: null, body: "", error: `${error instanceof Error ? error.message : String(error)}${cause}` }
  }
}

import { createHash, createHmac, timingSafeEqual } from "node:crypto"
import { Effect, Schema } from "effect"
import { MetricsRecorder, WhatsAppWebhooks } from "@switchboard/core"
import { HttpFailure } from "../HttpFailure.js"
import { HandlerSettings } from "../settings.js"
import { defineRoute, type RawContent } from "./route.js"

/**
 * `GET {base}/webhooks/whatsapp`: the subscription handshake of Meta's dashboard
 * (docs/whatsapp-webhooks.md). With `hub.mode=subscribe` and `hub.verify_token` equal to
 * the handler's `whatsapp.verifyToken` (compared in constant time) the answer is
 * `hub.challenge` as `text/plain`; anything else → 403 `invalid_verify_token` (also when
 * no verify token is configured). No API key, not rate limited.
 *
 * @category routes
 */
export const whatsAppHandshakeRoute = defineRoute({
  method: "GET",
  path: "/webhooks/whatsapp",
  tag: "Webhooks",
  summary: "Answer Meta's webhook subscription handshake",
  description:
    "Meta calls this when the webhook URL is saved in the app dashboard: `hub.mode=subscribe`, the verify token you typed there, and a challenge to echo. The answer is the challenge as `text/plain` when the token matches the server's, else 403 `invalid_verify_token`.",
  authenticated: false,
  rateLimited: false,
  content: ["text/plain"],
  errors: ["invalid_verify_token"],
  query: {
    "hub.mode": { type: "string", max: 64, optional: true },
    "hub.verify_token": { type: "string", max: 1024, optional: true },
    "hub.challenge": { type: "string", min: 1, max: 1024 }
  },
  handle: ({ query }) =>
    Effect.gen(function* () {
      const { whatsapp } = yield* HandlerSettings
      const token = query["hub.verify_token"]
      const matches =
        query["hub.mode"] === "subscribe" &&
        whatsapp.verifyToken !== undefined &&
        typeof token === "string" &&
        sameSecret(token, whatsapp.verifyToken)
      if (!matches) {
        return yield* new HttpFailure({
          status: 403,
          code: "invalid_verify_token",
          message: "hub.mode must be subscribe and hub.verify_token the server's verify token"
        })
      }
      return {
        _tag: "RawContent",
        contentType: "text/plain; charset=utf-8",
        content: String(query["hub.challenge"])
      } satisfies RawContent
    })
})

/** Largest webhook body, in bytes: 4 MiB (Meta sends up to 3 MB). */
export const WHATSAPP_WEBHOOK_BODY_LIMIT = 4 * 1_048_576

/**
 * `POST {base}/webhooks/whatsapp`: Meta's event notifications (docs/whatsapp-webhooks.md).
 * No API key (the `X-Hub-Signature-256` over the raw bytes authenticates it, checked
 * before parsing: missing or wrong → 401 `invalid_signature`, nothing stored), not rate
 * limited, bodies up to 4 MiB. Everything in it is stored (`WhatsAppWebhooks.receive`)
 * before the answer, 200 `{received: n}`; a storage failure is a 500, and Meta retries.
 *
 * @category routes
 */
export const whatsAppWebhookRoute = defineRoute({
  method: "POST",
  path: "/webhooks/whatsapp",
  tag: "Webhooks",
  summary: "Receive Meta's signed WhatsApp notifications",
  description:
    "Meta posts customers' messages, the statuses of your messages and template review results here. The `X-Hub-Signature-256` header must be `sha256=` and the HMAC-SHA256 of the exact body bytes under the app secret, else 401 `invalid_signature` and nothing is stored. Each change is routed by its `phone_number_id` (templates: by the WhatsApp Business Account id) to the organization whose channel it is; an unknown number is acknowledged and skipped. The answer comes after everything is stored: `received` counts the changes routed to an organization. Repeated deliveries change nothing.",
  authenticated: false,
  rateLimited: false,
  bodyLimit: WHATSAPP_WEBHOOK_BODY_LIMIT,
  verifyRawBody: (bytes, header) => verifyWhatsAppSignature(bytes, header),
  data: Schema.Struct({ received: Schema.Number }),
  errors: ["invalid_signature"],
  handle: ({ body }) =>
    Effect.map(
      Effect.flatMap(WhatsAppWebhooks, (webhooks) => webhooks.receive(body)).pipe(
        // A stored POST is counted by `receive`; one the store failed, here (docs/http-adapter.md "Metrics").
        Effect.tapError(() => Effect.map(MetricsRecorder, (metrics) => metrics.providerWebhook("error")))
      ),
      ({ organizations, received }) => ({
        message: "Webhook received",
        data: { received },
        // The request's log line names the organization when the webhook was routed to one.
        ...(organizations.length === 1 ? { organizationId: organizations[0]! } : {})
      })
    )
})

/**
 * The signature check of Meta's webhook POSTs, run over the exact body bytes before they
 * are parsed (a route's `verifyRawBody`): `X-Hub-Signature-256: sha256=<64 hex digits>`
 * must be the HMAC-SHA256 of the bytes under one of the handler's `whatsapp.appSecret`s,
 * compared in constant time. A missing, malformed or wrong signature, or no app secret
 * configured → 401 `invalid_signature` (docs/whatsapp-webhooks.md), counted by the runtime's
 * `MetricsRecorder` as `invalid_signature`.
 *
 * @category routes
 */
export const verifyWhatsAppSignature = (
  bytes: Uint8Array,
  header: (name: string) => string | undefined
): Effect.Effect<void, HttpFailure, HandlerSettings> =>
  Effect.flatMap(HandlerSettings, ({ whatsapp }) => {
    const match = /^sha256=([0-9a-fA-F]{64})$/.exec(header("x-hub-signature-256")?.trim() ?? "")
    // Decoded to its 32 bytes first: timingSafeEqual throws on buffers of unequal length.
    const given = match?.[1] === undefined ? undefined : Buffer.from(match[1], "hex")
    const valid =
      given !== undefined &&
      whatsapp.appSecrets
        .map((secret) => timingSafeEqual(createHmac("sha256", secret).update(bytes).digest(), given))
        .includes(true)
    if (valid) return Effect.void
    return Effect.flatMap(MetricsRecorder, (metrics) => {
      metrics.providerWebhook("invalid_signature")
      return Effect.fail(
        new HttpFailure({
          status: 401,
          code: "invalid_signature",
          message: "X-Hub-Signature-256 is missing or is not the HMAC-SHA256 of the body under the app secret"
        })
      )
    })
  })

/** Equal strings, compared in constant time (through their SHA-256, so lengths may differ). */
const sameSecret = (given: string, expected: string): boolean =>
  timingSafeEqual(createHash("sha256").update(given).digest(), createHash("sha256").update(expected).digest())

import { Effect } from "effect"
import {
  type MessageId,
  Messaging,
  type SendMediaInput,
  type SendOptions,
  type SendResult,
  type SendTemplateInput,
  type SendTextInput
} from "@switchboard/core"
import { defineRoute, type RouteIdempotency, type RouteResult } from "./route.js"
import { SendData } from "./schemas.js"

// The three sends (docs/messaging.md). The schemas
// check types only; Messaging checks the content (phone format, lengths, media type and
// URL, the template and its parameters), so one 400 names every bad field with the
// domain's codes. Each route counts in the `send` rate-limit bucket only. Each takes an
// optional `channel_uuid` (docs/messaging.md "Channels"): an unknown one is a 404
// `not_found`; a channel whose token cannot be opened without the secret key a 503.
// Under an Idempotency-Key, the message gets the uuid the key's record holds, so a
// takeover after a crash answers the message the first attempt created
// (docs/messaging.md "Idempotency-Key").

const text = { type: "string" } as const
const optionalText = { type: "string", optional: true } as const
const nullableText = { type: "string", optional: true, nullable: true } as const

/** The envelope's `message` of a send, by the status its first attempt left the message in. */
const SEND_MESSAGES: { readonly [S in SendResult["status"]]: string } = {
  queued: "Message queued",
  sending: "Message queued",
  sent: "Message sent",
  delivered: "Message sent",
  read: "Message sent",
  failed: "Message recorded, but the provider did not accept it"
}

/**
 * The envelope of a send: data `{message_id, chat_uuid, contact_uuid, status,
 * provider_message_id, next_attempt_at, failure}`. A message the provider refused is still
 * a 200, with `status: "failed"` (docs/decisions.md).
 */
const sendResult = (result: SendResult): RouteResult<SendResult> => ({
  message: SEND_MESSAGES[result.status],
  data: result
})

/** The send's options under an Idempotency-Key claim: its message gets the claim's uuid. */
const sendOptions = (idempotency: RouteIdempotency | undefined): SendOptions =>
  idempotency === undefined ? {} : { messageUuid: idempotency.resourceUuid as MessageId }

/**
 * `POST /send/template` (docs/messaging.md): body `{phone, template: {name, language: {code},
 * components}, first_name?, last_name?, email?}`. 400 for an invalid phone or field,
 * `template_not_found`, `template_not_approved`, `template_parameters_mismatch`; 403
 * `contacts_limit_reached` when a new contact would pass the plan.
 */
export const sendTemplateRoute = defineRoute({
  method: "POST",
  path: "/send/template",
  tag: "Messages",
  summary: "Send a template message",
  data: SendData,
  errors: [
    "invalid_input",
    "template_not_found",
    "template_not_approved",
    "template_parameters_mismatch",
    "contacts_limit_reached",
    "not_found",
    "secret_key_not_configured"
  ],
  bucket: "send",
  idempotent: true,
  body: {
    phone: text,
    template: {
      type: "object",
      props: {
        name: text,
        language: { type: "object", props: { code: text } },
        components: { type: "array", optional: true }
      }
    },
    first_name: optionalText,
    last_name: nullableText,
    email: nullableText,
    channel_uuid: optionalText
  },
  handle: ({ auth, body, idempotency }) =>
    Effect.map(
      Effect.flatMap(Messaging, (messaging) =>
        messaging.sendTemplate(auth.organization.id, body as SendTemplateInput, sendOptions(idempotency))
      ),
      sendResult
    )
})

/**
 * `POST /send` (docs/messaging.md): body `{phone, message}`,
 * `message` 1–4096 characters. 403 `contacts_limit_reached` as for templates; 400
 * `outside_customer_service_window` through a channel whose contact has not written to it
 * in the last 24 hours (docs/messaging.md "The customer service window").
 */
export const sendTextRoute = defineRoute({
  method: "POST",
  path: "/send",
  tag: "Messages",
  summary: "Send a text message",
  data: SendData,
  errors: ["invalid_input", "outside_customer_service_window", "contacts_limit_reached", "not_found", "secret_key_not_configured"],
  bucket: "send",
  idempotent: true,
  body: { phone: text, message: text, channel_uuid: optionalText },
  handle: ({ auth, body, idempotency }) =>
    Effect.map(
      Effect.flatMap(Messaging, (messaging) => messaging.sendText(auth.organization.id, body as SendTextInput, sendOptions(idempotency))),
      sendResult
    )
})

/**
 * `POST /send/media` (docs/messaging.md): body `{phone, media:
 * {type: image|video|audio|document, url, caption?, filename?}}`, `url` http(s). 403
 * `contacts_limit_reached` as for templates; 400 `outside_customer_service_window` as for
 * `POST /send`.
 */
export const sendMediaRoute = defineRoute({
  method: "POST",
  path: "/send/media",
  tag: "Messages",
  summary: "Send an image, video, audio or document",
  data: SendData,
  errors: ["invalid_input", "outside_customer_service_window", "contacts_limit_reached", "not_found", "secret_key_not_configured"],
  bucket: "send",
  idempotent: true,
  body: {
    phone: text,
    media: { type: "object", props: { type: text, url: text, caption: optionalText, filename: optionalText } },
    channel_uuid: optionalText
  },
  handle: ({ auth, body, idempotency }) =>
    Effect.map(
      Effect.flatMap(Messaging, (messaging) => messaging.sendMedia(auth.organization.id, body as SendMediaInput, sendOptions(idempotency))),
      sendResult
    )
})

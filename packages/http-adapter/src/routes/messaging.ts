import { Effect } from "effect"
import {
  type MessageId,
  Messaging,
  type SendInteractiveInput,
  type SendMediaInput,
  type SendOptions,
  type SendResult,
  type SendTemplateInput,
  type SendTextInput
} from "@switchboard/core"
import { defineRoute, type RouteIdempotency, type RouteResult } from "./route.js"
import { SendData } from "./schemas.js"

// The four sends (docs/messaging.md). The schemas
// check types only; Messaging checks the content (phone format, lengths, media type and
// URL, the template and its parameters), so one 400 names every bad field with the
// domain's codes. Each route counts in the `send` rate-limit bucket only. Each takes an
// optional `channel_uuid` (docs/messaging.md "Channels"): an unknown one is a 404
// `not_found`; a channel whose token cannot be opened without the secret key a 503.
// Under an Idempotency-Key, the message gets the uuid the key's record holds, so a
// takeover after a crash answers the message the first attempt created
// (docs/messaging.md "Idempotency-Key"). Each takes an optional `send_at` (RFC 3339, at
// most 30 days ahead: docs/messaging.md "Scheduled sends"): a later one answers
// `status: scheduled`, the message leaving then.

const text = { type: "string" } as const
/** `send_at` of every send body: read by Messaging (a 400 naming it when malformed or too far ahead). */
export const sendAt = { type: "string", optional: true } as const
const optionalText = { type: "string", optional: true } as const
const nullableText = { type: "string", optional: true, nullable: true } as const

/** The envelope's `message` of a send, by the status its first attempt left the message in. */
const SEND_MESSAGES: { readonly [S in SendResult["status"]]: string } = {
  scheduled: "Message scheduled",
  queued: "Message queued",
  sending: "Message queued",
  sent: "Message sent",
  delivered: "Message sent",
  read: "Message sent",
  failed: "Message recorded, but the provider did not accept it"
}

/**
 * The envelope's `message` of a send the recording transport took (no channel,
 * docs/messaging.md "Transports"): its status stays `sent`, but nothing left the server.
 */
export const RECORDED_SEND_MESSAGE = "Message recorded: no channel, nothing left this server"

/**
 * The envelope of a send: data `{message_id, chat_uuid, contact_uuid, status,
 * provider_message_id, next_attempt_at, failure, transport}`. A message the provider
 * refused is still a 200, with `status: "failed"` (docs/decisions.md). A message the
 * recording transport took says so ({@link RECORDED_SEND_MESSAGE}) whatever its status
 * but `failed` (which it never answers).
 */
const sendResult = (result: SendResult): RouteResult<SendResult> => ({
  message: result.transport === "recording" && result.status !== "failed" && result.status !== "scheduled"
    ? RECORDED_SEND_MESSAGE
    : SEND_MESSAGES[result.status],
  data: result
})

/** The OpenAPI description the sends share: what `transport` and the envelope's message say. */
const SEND_DESCRIPTION =
  "`data.transport` says what the message was handed to: `whatsapp` (the WhatsApp Cloud API), `custom` (the host's own " +
  "transport) or `recording`. Without a channel the recording transport stores the message and marks it `sent`, but " +
  `nothing leaves the server: \`transport\` is \`recording\` and the envelope's message is "${RECORDED_SEND_MESSAGE}". ` +
  "With `send_at` (RFC 3339, at most 30 days ahead; past or absent: now) the message is stored `scheduled` and leaves " +
  "through the send queue at that time (`next_attempt_at`); the customer service window is checked then, not at the request, " +
  "and it can be cancelled until then (`POST /messages/{uuid}/cancel`)."

/** The send's options under an Idempotency-Key claim: its message gets the claim's uuid. */
const sendOptions = (idempotency: RouteIdempotency | undefined): SendOptions =>
  idempotency === undefined ? {} : { messageUuid: idempotency.resourceUuid as MessageId }

/**
 * `POST /send/template` (docs/messaging.md): body `{phone, template: {name, language: {code},
 * components}, first_name?, last_name?, email?}`. 400 for an invalid phone or field,
 * `template_not_found`, `template_unsupported`, `template_not_approved`,
 * `template_parameters_mismatch`; 403
 * `contacts_limit_reached` when a new contact would pass the plan.
 */
export const sendTemplateRoute = defineRoute({
  method: "POST",
  path: "/send/template",
  tag: "Messages",
  summary: "Send a template message",
  description: SEND_DESCRIPTION,
  data: SendData,
  errors: [
    "invalid_input",
    "template_not_found",
    "template_not_approved",
    "template_unsupported",
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
    channel_uuid: optionalText,
    send_at: sendAt
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
  description: SEND_DESCRIPTION,
  data: SendData,
  errors: ["invalid_input", "outside_customer_service_window", "contacts_limit_reached", "not_found", "secret_key_not_configured"],
  bucket: "send",
  idempotent: true,
  body: { phone: text, message: text, channel_uuid: optionalText, send_at: sendAt },
  handle: ({ auth, body, idempotency }) =>
    Effect.map(
      Effect.flatMap(Messaging, (messaging) => messaging.sendText(auth.organization.id, body as SendTextInput, sendOptions(idempotency))),
      sendResult
    )
})

/**
 * `POST /send/media` (docs/messaging.md): body `{phone, media:
 * {type: image|video|audio|document, url or media_uuid, caption?, filename?}}`, `url`
 * http(s), `media_uuid` a stored file (docs/media.md "Sending a stored file"; 409
 * `media_not_ready`, 410 `media_unavailable`). 403
 * `contacts_limit_reached` as for templates; 400 `outside_customer_service_window` as for
 * `POST /send`.
 */
export const sendMediaRoute = defineRoute({
  method: "POST",
  path: "/send/media",
  tag: "Messages",
  summary: "Send an image, video, audio or document",
  description: SEND_DESCRIPTION,
  data: SendData,
  errors: [
    "invalid_input",
    "outside_customer_service_window",
    "contacts_limit_reached",
    "not_found",
    "media_not_ready",
    "media_unavailable",
    "secret_key_not_configured"
  ],
  bucket: "send",
  idempotent: true,
  body: {
    phone: text,
    media: { type: "object", props: { type: optionalText, url: optionalText, media_uuid: optionalText, caption: optionalText, filename: optionalText } },
    channel_uuid: optionalText,
    send_at: sendAt
  },
  handle: ({ auth, body, idempotency }) =>
    Effect.map(
      Effect.flatMap(Messaging, (messaging) => messaging.sendMedia(auth.organization.id, body as SendMediaInput, sendOptions(idempotency))),
      sendResult
    )
})

/** An optional object of `props` (the request schema of an interactive message's parts). */
const optionalObject = (props: Record<string, unknown>) => ({ type: "object", optional: true, props }) as const

/** A media header's file: an http(s) `link` or the `media_uuid` of a stored file. */
const headerMedia = optionalObject({ link: optionalText, media_uuid: optionalText })

/**
 * The request schema of Meta's interactive object: types only, every part optional but
 * `body.text` (the parts each type needs, the limits in code points and the URLs are
 * checked by `Messaging.sendInteractive`, so one 400 names every bad field by its path).
 */
const INTERACTIVE = {
  type: "object",
  props: {
    type: { type: "string", enum: ["button", "list", "cta_url"] },
    header: optionalObject({
      type: { type: "string", enum: ["text", "image", "video", "document"] },
      text: optionalText,
      image: headerMedia,
      video: headerMedia,
      document: optionalObject({ link: optionalText, media_uuid: optionalText, filename: optionalText })
    }),
    body: { type: "object", props: { text } },
    footer: optionalObject({ text }),
    action: {
      type: "object",
      props: {
        buttons: {
          type: "array",
          optional: true,
          items: { type: "object", props: { type: { type: "string", enum: ["reply"] }, reply: { type: "object", props: { id: text, title: text } } } }
        },
        button: optionalText,
        sections: {
          type: "array",
          optional: true,
          items: {
            type: "object",
            props: {
              title: optionalText,
              rows: { type: "array", items: { type: "object", props: { id: text, title: text, description: optionalText } } }
            }
          }
        },
        name: { type: "string", optional: true, enum: ["cta_url"] },
        parameters: optionalObject({ display_text: text, url: text })
      }
    }
  }
} as const

/** Examples of `POST /send/interactive` bodies, one per type, for the OpenAPI document. */
const INTERACTIVE_EXAMPLES = {
  button: {
    summary: "Reply buttons",
    value: {
      phone: "+14155550100",
      interactive: {
        type: "button",
        header: { type: "text", text: "Delivery" },
        body: { text: "Your order ships tomorrow. Does Tuesday suit you?" },
        footer: { text: "Tap a button to answer" },
        action: { buttons: [{ type: "reply", reply: { id: "tuesday_yes", title: "Tuesday is fine" } }, { type: "reply", reply: { id: "tuesday_no", title: "Another day" } }] }
      }
    }
  },
  list: {
    summary: "A list",
    value: {
      phone: "+14155550100",
      interactive: {
        type: "list",
        body: { text: "Pick a delivery slot" },
        action: {
          button: "See slots",
          sections: [
            { title: "Morning", rows: [{ id: "slot_8", title: "8:00–10:00", description: "Before work" }] },
            { title: "Evening", rows: [{ id: "slot_18", title: "18:00–20:00" }] }
          ]
        }
      }
    }
  },
  cta_url: {
    summary: "A call-to-action URL",
    value: {
      phone: "+14155550100",
      interactive: {
        type: "cta_url",
        body: { text: "Your parcel is on its way." },
        action: { name: "cta_url", parameters: { display_text: "Track it", url: "https://example.com/track/42" } }
      }
    }
  }
} as const

/**
 * `POST /send/interactive` (docs/messaging.md "Interactive messages"): body `{phone,
 * interactive, channel_uuid?, send_at?}`, `interactive` Meta's own object — `button` (1–3 reply
 * buttons), `list` (≤ 10 rows in 1–10 sections) or `cta_url` — with a media header by
 * `link` or by the `media_uuid` of a stored file (409 `media_not_ready`, 410
 * `media_unavailable`). A 400 names each bad field by its path
 * (`interactive.action.sections`); 400 `outside_customer_service_window` and 403
 * `contacts_limit_reached` as for `POST /send`.
 */
export const sendInteractiveRoute = defineRoute({
  method: "POST",
  path: "/send/interactive",
  tag: "Messages",
  summary: "Send reply buttons, a list or a call-to-action URL",
  description:
    "`interactive` is Meta's interactive object (`button`, `list` or `cta_url`); a media header may name a stored file by " +
    "`media_uuid`. Every limit (in Unicode code points) is checked before anything is written; a 400 names the field by its " +
    "path, such as `interactive.action.buttons[1].reply.title`. " +
    SEND_DESCRIPTION,
  data: SendData,
  errors: [
    "invalid_input",
    "outside_customer_service_window",
    "contacts_limit_reached",
    "not_found",
    "media_not_ready",
    "media_unavailable",
    "secret_key_not_configured"
  ],
  bucket: "send",
  idempotent: true,
  body: { phone: text, interactive: INTERACTIVE, channel_uuid: optionalText, send_at: sendAt },
  bodyExamples: INTERACTIVE_EXAMPLES,
  handle: ({ auth, body, idempotency }) =>
    Effect.map(
      Effect.flatMap(Messaging, (messaging) =>
        messaging.sendInteractive(auth.organization.id, body as SendInteractiveInput, sendOptions(idempotency))
      ),
      sendResult
    )
})

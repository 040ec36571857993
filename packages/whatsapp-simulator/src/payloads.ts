import { randomBytes } from "node:crypto"

/**
 * A business phone number the simulator answers for:
 * - `phone_number_id`: Meta's id of the number (digits), the `{phone_number_id}` of Graph paths;
 * - `display_phone_number`: as Meta shows it, for example `"+1 555-078-3881"`;
 * - `waba_id`: the WhatsApp Business Account id (the `entry[].id` of webhooks);
 * - `access_token`: the token (or tokens) allowed to use the number;
 * - `verified_name`: the business name of the look-up answer, default `"Simulated Business"`.
 *
 * @category numbers
 */
export interface SimulatedNumber {
  readonly phone_number_id: string
  readonly display_phone_number: string
  readonly waba_id: string
  readonly access_token: string | ReadonlyArray<string>
  readonly verified_name?: string
}

/**
 * The number the CLI serves when none is configured (Meta's sample ids). Its token is
 * `EAAGsimulator-access-token-0001`.
 *
 * @category numbers
 */
export const DEFAULT_NUMBER: SimulatedNumber = {
  phone_number_id: "106540352242922",
  display_phone_number: "+1 555-078-3881",
  waba_id: "102290129340398",
  access_token: "EAAGsimulator-access-token-0001",
  verified_name: "Simulated Business"
}

/** The number's metadata as webhooks carry it (`display_phone_number` in digits only). */
const metadataOf = (number: Pick<SimulatedNumber, "phone_number_id" | "display_phone_number">) => ({
  display_phone_number: digitsOf(number.display_phone_number),
  phone_number_id: number.phone_number_id
})

/**
 * `phone` without anything but its digits: `"+1 (650) 555-1234"` → `"16505551234"` (the
 * form of Meta's `wa_id`, `from` and `recipient_id`).
 *
 * @category payloads
 */
export const digitsOf = (phone: string): string => phone.replace(/\D/g, "")

/**
 * A fresh WhatsApp message id in Meta's form: `wamid.` and base64 text.
 *
 * @category payloads
 */
export const newWamid = (): string => `wamid.${randomBytes(30).toString("base64")}`

/** The current time in whole seconds, as a string: Meta's webhook `timestamp`. */
export const nowSeconds = (): string => String(Math.floor(Date.now() / 1000))

/**
 * One customer message without its `from`, `id` and `timestamp`: `{type, [type]: {...},
 * context?}` as Meta writes `value.messages[]`. Build it with {@link textMessage},
 * {@link mediaMessage}, {@link locationMessage}, … or write any type by hand.
 *
 * @category payloads
 */
export interface InboundContent {
  readonly type: string
  readonly [field: string]: unknown
}

/** A text message. @category payloads */
export const textMessage = (body: string): InboundContent => ({ type: "text", text: { body } })

/**
 * An image, audio, video, document or sticker message: Meta sends the media id and mime
 * type (never a URL), a caption where the type has one, a filename for documents.
 *
 * @category payloads
 */
export const mediaMessage = (
  type: "image" | "audio" | "video" | "document" | "sticker",
  media: { readonly id: string; readonly mime_type: string; readonly caption?: string; readonly filename?: string; readonly sha256?: string }
): InboundContent => ({ type, [type]: { ...media, sha256: media.sha256 ?? randomBytes(32).toString("base64") } })

/** A shared location. @category payloads */
export const locationMessage = (location: {
  readonly latitude: number
  readonly longitude: number
  readonly name?: string
  readonly address?: string
}): InboundContent => ({ type: "location", location })

/** A shared contact card with one phone. @category payloads */
export const contactsMessage = (card: { readonly formatted_name: string; readonly phone: string }): InboundContent => ({
  type: "contacts",
  contacts: [
    {
      name: { formatted_name: card.formatted_name, first_name: card.formatted_name.split(" ")[0] },
      phones: [{ phone: card.phone, wa_id: digitsOf(card.phone), type: "MOBILE" }]
    }
  ]
})

/** A template's quick-reply button press (`type: "button"`). @category payloads */
export const buttonMessage = (text: string, payload: string): InboundContent => ({ type: "button", button: { text, payload } })

/** A reaction (`emoji` `""` removes one) to the message `message_id`. @category payloads */
export const reactionMessage = (message_id: string, emoji: string): InboundContent => ({
  type: "reaction",
  reaction: { message_id, emoji }
})

/**
 * An interactive reply: the customer tapped a reply button (`button_reply`) or picked a
 * list row (`list_reply`) of the business's message `repliesTo` (its wamid: then the
 * message carries Meta's `context: {id}`).
 *
 * @category payloads
 * @example
 * const tap = interactiveReply("button_reply", { id: "yes", title: "Yes" }, "wamid.HBgL…")
 */
export const interactiveReply = (
  kind: "button_reply" | "list_reply",
  reply: { readonly id: string; readonly title: string; readonly description?: string },
  repliesTo?: string
): InboundContent => ({
  type: "interactive",
  interactive: { type: kind, [kind]: reply },
  ...(repliesTo === undefined ? {} : { context: { id: repliesTo } })
})

/**
 * Meta's `messages` webhook for one customer message to `number`: `from` (digits),
 * `profile_name` in `value.contacts`, `message` stamped with `id` (default a fresh wamid)
 * and `timestamp` (default now, seconds as a string, as Meta).
 *
 * @category payloads
 * @example
 * const payload = inboundMessagePayload({ number: DEFAULT_NUMBER, from: "16505551234", profile_name: "Sheena Nelson", message: textMessage("Hi") })
 */
export const inboundMessagePayload = (options: {
  readonly number: Pick<SimulatedNumber, "phone_number_id" | "display_phone_number" | "waba_id">
  readonly from: string
  readonly profile_name: string
  readonly message: InboundContent
  readonly id?: string
  readonly timestamp?: string
}) => {
  const from = digitsOf(options.from)
  return whatsappEntry(options.number.waba_id, "messages", {
    messaging_product: "whatsapp",
    metadata: metadataOf(options.number),
    contacts: [{ profile: { name: options.profile_name }, wa_id: from }],
    messages: [{ from, id: options.id ?? newWamid(), timestamp: options.timestamp ?? nowSeconds(), ...options.message }]
  })
}

/**
 * The lifecycle steps of a sent message that Meta reports: `sent`, `delivered`, `read`,
 * or `failed` (with `errors`).
 *
 * @category payloads
 */
export type StatusName = "sent" | "delivered" | "read" | "failed"

/**
 * One error of a `failed` status, as Meta writes it: `{code, title, message, error_data:
 * {details}, href}`.
 *
 * @category payloads
 */
export interface StatusError {
  readonly code: number
  readonly title: string
  readonly message: string
  readonly error_data: { readonly details: string }
  readonly href?: string
}

/**
 * Meta's `statuses` webhook for one message: `status` of `wamid` sent to `recipient_id`,
 * stamped now (unless `timestamp`), echoing `biz_opaque_callback_data` when the send had
 * one, with `conversation` and `pricing` on `sent` and `delivered` and `errors` on
 * `failed`.
 *
 * @category payloads
 */
export const statusPayload = (options: {
  readonly number: Pick<SimulatedNumber, "phone_number_id" | "display_phone_number" | "waba_id">
  readonly wamid: string
  readonly status: StatusName
  readonly recipient_id: string
  readonly biz_opaque_callback_data?: string | null
  readonly errors?: ReadonlyArray<StatusError>
  readonly category?: string
  readonly timestamp?: string
}) => {
  const billed = options.status === "sent" || options.status === "delivered"
  const category = options.category ?? "service"
  const status = {
    id: options.wamid,
    status: options.status,
    timestamp: options.timestamp ?? nowSeconds(),
    recipient_id: digitsOf(options.recipient_id),
    ...(options.biz_opaque_callback_data == null ? {} : { biz_opaque_callback_data: options.biz_opaque_callback_data }),
    ...(billed
      ? {
          conversation: { id: `conv-${digitsOf(options.recipient_id)}`, origin: { type: category } },
          pricing: { billable: true, pricing_model: "PMP", category, type: "regular" }
        }
      : {}),
    ...(options.status === "failed" ? { errors: options.errors ?? [] } : {})
  }
  return whatsappEntry(options.number.waba_id, "messages", {
    messaging_product: "whatsapp",
    metadata: metadataOf(options.number),
    statuses: [status]
  })
}

/**
 * A `failed` status's error for `code`: `title` and `message` default to `title`,
 * `details` to the title too.
 *
 * @category payloads
 */
export const statusError = (code: number, title: string, details = title): StatusError => ({
  code,
  title,
  message: title,
  error_data: { details },
  href: "https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/"
})

/**
 * Meta's `message_template_status_update` webhook (no `metadata`: routed by the account,
 * `entry[].id` = `waba_id`): `event` (`APPROVED`, `REJECTED`, `PAUSED`, …) of the template
 * `name` in `language`, with `reason` (default `"NONE"`).
 *
 * @category payloads
 */
export const templateStatusPayload = (options: {
  readonly waba_id: string
  readonly event: string
  readonly name: string
  readonly language: string
  readonly reason?: string
  readonly template_id?: number
  readonly category?: string
}) =>
  whatsappEntry(options.waba_id, "message_template_status_update", {
    event: options.event,
    message_template_id: options.template_id ?? Number.parseInt(randomBytes(6).toString("hex"), 16),
    message_template_name: options.name,
    message_template_language: options.language,
    reason: options.reason ?? "NONE",
    ...(options.category === undefined ? {} : { message_template_category: options.category })
  })

/**
 * Meta's `template_category_update` webhook for a completed change of category (routed by
 * the account, `entry[].id` = `waba_id`): the template `template_id` (a number, as Meta sends
 * it), `name` and `language`, its `previous_category` and `new_category`.
 *
 * @category payloads
 */
export const templateCategoryPayload = (options: {
  readonly waba_id: string
  readonly template_id: number
  readonly name: string
  readonly language: string
  readonly previous_category: string
  readonly new_category: string
}) =>
  whatsappEntry(options.waba_id, "template_category_update", {
    message_template_id: options.template_id,
    message_template_name: options.name,
    message_template_language: options.language,
    previous_category: options.previous_category,
    new_category: options.new_category
  })

/** `{object: "whatsapp_business_account", entry: [{id, changes: [{value, field}]}]}`. */
const whatsappEntry = (wabaId: string, field: string, value: Record<string, unknown>) => ({
  object: "whatsapp_business_account" as const,
  entry: [{ id: wabaId, changes: [{ value, field }] }]
})

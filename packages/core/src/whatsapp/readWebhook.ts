import { isRecord } from "../internal/validation.js"
import { MEDIA_TYPES } from "../model/media.js"
import { INBOUND_MESSAGE_TYPES, type InboundMessageType } from "../model/messages.js"

// Reading the WhatsApp Cloud API's webhook payloads (docs/whatsapp-webhooks.md "What a
// webhook carries") into plain records, with no storage and no I/O: the `messages` field
// (customers' messages and the statuses of the business's own), and the
// `message_template_status_update` and `template_category_update` fields. The payload is signed by Meta, so it is trusted
// to be Meta's; still, a part of unexpected shape is reported as refused (with its raw
// JSON, to be kept for inspection), never a crash.

/** @category whatsapp */
export type WhatsAppInboundType = InboundMessageType

/**
 * The inbound message types Switchboard keeps (docs/chats.md "Message types"): every
 * message type but the outbound-only `template` and `media`. Any other WhatsApp type is
 * read as `unsupported`, its own type kept in `content.original_type`.
 *
 * @category whatsapp
 */
export const WHATSAPP_INBOUND_TYPES: ReadonlyArray<WhatsAppInboundType> = INBOUND_MESSAGE_TYPES

/**
 * One customer message of a webhook: its WhatsApp id (`wamid…`), the sender's WhatsApp id
 * (`from`, the phone's digits), the profile name WhatsApp gave for the sender (or `null`),
 * the type, the text (a text's body, a media caption, a button's or reply's title), the
 * media of an image, audio, video, document or sticker (id, MIME type and the SHA-256
 * Meta declares, in base64: WhatsApp sends no URL; `too_large` and no id when Meta
 * refused the file with 131052, docs/media.md "Inbound"), `content`: the type's other fields as WhatsApp sent them plus `timestamp`
 * (seconds since the epoch, as sent) and `context` when it replies to another message,
 * and `raw`: the message as WhatsApp sent it (kept when core refuses it).
 *
 * @category whatsapp
 */
export interface WhatsAppInboundMessage {
  readonly provider_message_id: string
  readonly from: string
  readonly profile_name: string | null
  readonly type: WhatsAppInboundType
  readonly text: string | null
  readonly media: {
    readonly type: "image" | "audio" | "video" | "document" | "sticker"
    readonly id?: string
    readonly mime_type?: string
    readonly caption?: string
    readonly filename?: string
    readonly sha256?: string
    readonly too_large?: true
  } | null
  readonly content: Readonly<Record<string, unknown>>
  readonly raw: unknown
}

/**
 * A status of a message the business sent: `failure` is the first of WhatsApp's
 * `errors` (`code` as a string, `title`) when the status is `failed`, else `null`;
 * `callback_data` Meta's echo of the send's `biz_opaque_callback_data` (our message uuid),
 * else `null`; `raw` the status as WhatsApp sent it.
 *
 * @category whatsapp
 */
export interface WhatsAppStatusUpdate {
  readonly provider_message_id: string
  readonly status: "sent" | "delivered" | "read" | "failed"
  readonly recipient: string | null
  readonly failure: { readonly code: string; readonly title: string } | null
  readonly callback_data: string | null
  readonly raw: unknown
}

/**
 * A part of a webhook of unexpected shape: why (`reason`) and the part as sent (`item`).
 *
 * @category whatsapp
 */
export interface WhatsAppRefusedPart {
  readonly reason: string
  readonly item: unknown
}

/**
 * What one `entry[].changes[]` item of a webhook says:
 * - `Messages`: for the business number `phone_number_id`, customers' messages and the
 *   statuses of the business's messages, and those of unexpected shape (`refused`);
 *   `raw` is the change item as sent (also for `TemplateStatus`);
 * - `TemplateStatus`: the template `name`/`language` of the WhatsApp Business Account
 *   `waba_id` (Meta's id `provider_template_id`, from `message_template_id`; `null` when
 *   absent) now has `status` (Meta's `event`), with Meta's `reason` (`null` for `NONE`);
 * - `TemplateCategory`: Meta moved that template to another `category` (Meta's
 *   `new_category`, from a `template_category_update` change);
 * - `Ignored`: a field Switchboard does not handle (`account_update`, …);
 * - `Refused`: an entry or change item of unexpected shape (a `messages` item without its
 *   number, a template update missing a field), with its business number when it had one.
 *
 * @category whatsapp
 */
export type WhatsAppWebhookChange =
  | {
      readonly _tag: "Messages"
      readonly phone_number_id: string
      readonly messages: ReadonlyArray<WhatsAppInboundMessage>
      readonly statuses: ReadonlyArray<WhatsAppStatusUpdate>
      readonly refused: ReadonlyArray<WhatsAppRefusedPart>
      readonly raw: unknown
    }
  | {
      readonly _tag: "TemplateStatus"
      readonly waba_id: string
      readonly provider_template_id: string | null
      readonly name: string
      readonly language: string
      readonly status: string
      readonly reason: string | null
      readonly raw: unknown
    }
  | {
      readonly _tag: "TemplateCategory"
      readonly waba_id: string
      readonly provider_template_id: string | null
      readonly name: string
      readonly language: string
      readonly category: string
      readonly raw: unknown
    }
  | { readonly _tag: "Ignored"; readonly field: string }
  | ({ readonly _tag: "Refused"; readonly phone_number_id: string | null } & WhatsAppRefusedPart)

/**
 * Reads a webhook payload `{object: "whatsapp_business_account", entry: [{id, changes:
 * [{field, value}]}]}` into its changes, in order, one per `changes[]` item; `undefined`
 * when the payload is not a WhatsApp Business Account notification at all.
 *
 * @category whatsapp
 */
export const readWhatsAppWebhook = (payload: unknown): ReadonlyArray<WhatsAppWebhookChange> | undefined => {
  if (!isRecord(payload) || payload.object !== "whatsapp_business_account" || !Array.isArray(payload.entry)) return undefined
  return payload.entry.flatMap((entry): Array<WhatsAppWebhookChange> => {
    if (!isRecord(entry) || !Array.isArray(entry.changes)) {
      return [{ _tag: "Refused", phone_number_id: null, reason: "entry without a changes array", item: entry }]
    }
    const wabaId = stringOf(entry.id)
    return entry.changes.map((change) => readChange(wabaId, change))
  })
}

const HANDLED_FIELDS = ["messages", "message_template_status_update", "template_category_update"]

const readChange = (wabaId: string | undefined, change: unknown): WhatsAppWebhookChange => {
  const field = isRecord(change) ? (stringOf(change.field) ?? "") : ""
  const value = isRecord(change) && isRecord(change.value) ? change.value : undefined
  const refused = (reason: string, phoneNumberId: string | null = null): WhatsAppWebhookChange => ({
    _tag: "Refused",
    phone_number_id: phoneNumberId,
    reason,
    item: change
  })
  if (!HANDLED_FIELDS.includes(field)) return isRecord(change) ? { _tag: "Ignored", field } : refused("change that is not an object")
  if (value === undefined) return refused(`${field} change without a value object`)
  if (field === "messages") {
    const phoneNumberId = isRecord(value.metadata) ? stringOf(value.metadata.phone_number_id) : undefined
    if (phoneNumberId === undefined) return refused("messages change without metadata.phone_number_id")
    const names = profileNames(value.contacts)
    const messages = listOf(value.messages).map((message) => readMessage(message, names))
    const statuses = listOf(value.statuses).map(readStatus)
    return {
      _tag: "Messages",
      phone_number_id: phoneNumberId,
      messages: messages.filter(isRead),
      statuses: statuses.filter(isRead),
      refused: [...messages, ...statuses].filter((each): each is WhatsAppRefusedPart => !isRead(each)),
      raw: change
    }
  }
  if (field === "message_template_status_update") {
    const name = stringOf(value.message_template_name)
    const language = stringOf(value.message_template_language)
    const status = stringOf(value.event)
    if (wabaId === undefined || name === undefined || language === undefined || status === undefined) {
      return refused("template status update without entry id, message_template_name, message_template_language or event")
    }
    const reason = stringOf(value.reason)
    return {
      _tag: "TemplateStatus",
      waba_id: wabaId,
      provider_template_id: stringOf(value.message_template_id) ?? null,
      name,
      language,
      status,
      reason: reason === undefined || reason === "NONE" ? null : reason,
      raw: change
    }
  }
  if (field === "template_category_update") {
    const name = stringOf(value.message_template_name)
    const language = stringOf(value.message_template_language)
    const category = stringOf(value.new_category)
    if (wabaId === undefined || name === undefined || language === undefined || category === undefined) {
      return refused("template category update without entry id, message_template_name, message_template_language or new_category")
    }
    return {
      _tag: "TemplateCategory",
      waba_id: wabaId,
      provider_template_id: stringOf(value.message_template_id) ?? null,
      name,
      language,
      category,
      raw: change
    }
  }
  return { _tag: "Ignored", field }
}

/** A part read whole (not a {@link WhatsAppRefusedPart}). */
const isRead = <A extends object>(part: A | WhatsAppRefusedPart): part is A => !("reason" in part && "item" in part)

/** `wa_id` → profile name, from a change's `contacts`. */
const profileNames = (contacts: unknown): ReadonlyMap<string, string> =>
  new Map(
    listOf(contacts).flatMap((contact) => {
      const waId = isRecord(contact) ? stringOf(contact.wa_id) : undefined
      const name = isRecord(contact) && isRecord(contact.profile) ? stringOf(contact.profile.name) : undefined
      return waId === undefined || name === undefined ? [] : [[waId, name] as const]
    })
  )

const readMessage = (message: unknown, names: ReadonlyMap<string, string>): WhatsAppInboundMessage | WhatsAppRefusedPart => {
  if (!isRecord(message)) return { reason: "message that is not an object", item: message }
  const id = stringOf(message.id)
  const from = stringOf(message.from)
  const sentType = stringOf(message.type)
  if (id === undefined || from === undefined || sentType === undefined) {
    return { reason: "message without id, from or type", item: message }
  }
  const known = (WHATSAPP_INBOUND_TYPES as ReadonlyArray<string>).includes(sentType) && sentType !== "unsupported"
  const type = (known ? sentType : "unsupported") as WhatsAppInboundType
  const body = isRecord(message[sentType]) ? (message[sentType] as Record<string, unknown>) : {}
  const common = {
    timestamp: stringOf(message.timestamp) ?? null,
    ...(isRecord(message.context) ? { context: message.context } : {})
  }
  const base = { provider_message_id: id, from, profile_name: names.get(from) ?? null, type, raw: message }
  if (type === "text") return { ...base, text: stringOf(body.body) ?? "", media: null, content: common }
  const errors = listOf(message.errors)
  // Meta's 131052: the customer's file is over 100 MB; the message is kept, its media failed.
  const tooLarge = errors.some((error) => isRecord(error) && String(error.code) === "131052")
  const withErrors = errors.length > 0 ? { ...common, errors } : common
  const mediaType = MEDIA_TYPES.find((each) => each === type)
  if (mediaType !== undefined) {
    const mediaId = stringOf(body.id)
    if (mediaId === undefined && !tooLarge) return { reason: `${type} message without a media id`, item: message }
    const caption = stringOf(body.caption)
    const media = {
      type: mediaType,
      ...optional("id", mediaId),
      ...optional("mime_type", stringOf(body.mime_type)),
      ...optional("caption", caption),
      ...optional("filename", stringOf(body.filename)),
      ...optional("sha256", stringOf(body.sha256)),
      ...(tooLarge ? { too_large: true as const } : {})
    }
    return { ...base, text: caption ?? null, media, content: withErrors }
  }
  if (type === "unsupported" && tooLarge) {
    // A file too large may come as `unsupported`: kept as a media message of its own type
    // (a document when that is not a media type), its media failed.
    const original = MEDIA_TYPES.find((each) => each === sentType) ?? "document"
    return { ...base, type: original, text: null, media: { type: original, too_large: true as const }, content: { ...withErrors, original_type: sentType } }
  }
  if (type === "unsupported") {
    return { ...base, text: null, media: null, content: { ...withErrors, original_type: sentType } }
  }
  return { ...base, text: textOf(type, body), media: null, content: { ...common, [type]: message[type] ?? null } }
}

/** The text a person reads of a non-text message: a button's text, a reply's title, an emoji. */
const textOf = (type: WhatsAppInboundType, body: Record<string, unknown>): string | null => {
  if (type === "button") return stringOf(body.text) ?? null
  if (type === "reaction") return stringOf(body.emoji) ?? null
  if (type === "interactive") {
    const reply = isRecord(body.button_reply) ? body.button_reply : isRecord(body.list_reply) ? body.list_reply : undefined
    return reply === undefined ? null : (stringOf(reply.title) ?? null)
  }
  if (type === "location") return stringOf(body.name) ?? null
  return null
}

const STATUSES = ["sent", "delivered", "read", "failed"] as const

const readStatus = (status: unknown): WhatsAppStatusUpdate | WhatsAppRefusedPart => {
  if (!isRecord(status)) return { reason: "status that is not an object", item: status }
  const id = stringOf(status.id)
  const value = STATUSES.find((each) => each === status.status)
  if (id === undefined || value === undefined) {
    return { reason: "status without id, or not one of sent, delivered, read, failed", item: status }
  }
  const [error] = listOf(status.errors)
  const failure =
    value === "failed"
      ? {
          code: isRecord(error) && error.code !== undefined ? String(error.code) : "unknown",
          title: (isRecord(error) ? (stringOf(error.title) ?? stringOf(error.message)) : undefined) ?? "Failed"
        }
      : null
  return {
    provider_message_id: id,
    status: value,
    recipient: stringOf(status.recipient_id) ?? null,
    failure,
    callback_data: stringOf(status.biz_opaque_callback_data) ?? null,
    raw: status
  }
}

const listOf = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])

/** A non-empty string, or a number as its decimal text (WhatsApp's ids and timestamps are strings). */
const stringOf = (value: unknown): string | undefined =>
  typeof value === "string" && value !== "" ? value : typeof value === "number" ? String(value) : undefined

const optional = <K extends string>(key: K, value: string | undefined) =>
  (value === undefined ? {} : { [key]: value }) as { [P in K]?: string }

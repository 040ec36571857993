import { isRecord } from "../internal/validation.js"
import { INBOUND_MESSAGE_TYPES, type InboundMessageType } from "../messages/model.js"

// Reading the WhatsApp Cloud API's webhook payloads (docs/whatsapp-webhooks.md "What a
// webhook carries") into plain records, with no storage and no I/O: the `messages` field
// (customers' messages and the statuses of the business's own) and the
// `message_template_status_update` field. The payload is signed by Meta, so it is trusted
// to be Meta's; still, a part of unexpected shape is skipped, never a crash.

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
 * media of an image, audio, video, document or sticker (id and MIME type: WhatsApp sends
 * no URL), and `content`: the type's other fields as WhatsApp sent them plus `timestamp`
 * (seconds since the epoch, as sent) and `context` when it replies to another message.
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
    readonly id: string
    readonly mime_type?: string
    readonly caption?: string
    readonly filename?: string
  } | null
  readonly content: Readonly<Record<string, unknown>>
}

/**
 * A status of a message the business sent: `failure` is the first of WhatsApp's
 * `errors` (`code` as a string, `title`) when the status is `failed`, else `null`.
 *
 * @category whatsapp
 */
export interface WhatsAppStatusUpdate {
  readonly provider_message_id: string
  readonly status: "sent" | "delivered" | "read" | "failed"
  readonly recipient: string | null
  readonly failure: { readonly code: string; readonly title: string } | null
}

/**
 * What one `entry[].changes[]` item of a webhook says:
 * - `Messages`: for the business number `phone_number_id`, customers' messages and the
 *   statuses of the business's messages;
 * - `TemplateStatus`: the template `name`/`language` of the WhatsApp Business Account
 *   `waba_id` now has `status` (Meta's `event`), with Meta's `reason` (`null` for `NONE`);
 * - `Ignored`: a field Switchboard does not handle (`account_update`, …) or an item of
 *   unexpected shape.
 *
 * @category whatsapp
 */
export type WhatsAppWebhookChange =
  | {
      readonly _tag: "Messages"
      readonly phone_number_id: string
      readonly messages: ReadonlyArray<WhatsAppInboundMessage>
      readonly statuses: ReadonlyArray<WhatsAppStatusUpdate>
    }
  | {
      readonly _tag: "TemplateStatus"
      readonly waba_id: string
      readonly name: string
      readonly language: string
      readonly status: string
      readonly reason: string | null
    }
  | { readonly _tag: "Ignored"; readonly field: string }

/**
 * Reads a webhook payload `{object: "whatsapp_business_account", entry: [{id, changes:
 * [{field, value}]}]}` into its changes, in order, one per `changes[]` item; `undefined`
 * when the payload is not a WhatsApp Business Account notification at all.
 *
 * @category whatsapp
 */
export const readWhatsAppWebhook = (payload: unknown): ReadonlyArray<WhatsAppWebhookChange> | undefined => {
  if (!isRecord(payload) || payload.object !== "whatsapp_business_account" || !Array.isArray(payload.entry)) return undefined
  return payload.entry.flatMap((entry) => {
    if (!isRecord(entry) || !Array.isArray(entry.changes)) return []
    const wabaId = stringOf(entry.id)
    return entry.changes.map((change) => readChange(wabaId, change))
  })
}

const readChange = (wabaId: string | undefined, change: unknown): WhatsAppWebhookChange => {
  const field = isRecord(change) ? (stringOf(change.field) ?? "") : ""
  const value = isRecord(change) && isRecord(change.value) ? change.value : undefined
  if (value === undefined) return { _tag: "Ignored", field }
  if (field === "messages") {
    const phoneNumberId = isRecord(value.metadata) ? stringOf(value.metadata.phone_number_id) : undefined
    if (phoneNumberId === undefined) return { _tag: "Ignored", field }
    const names = profileNames(value.contacts)
    return {
      _tag: "Messages",
      phone_number_id: phoneNumberId,
      messages: listOf(value.messages).flatMap((message) => readMessage(message, names)),
      statuses: listOf(value.statuses).flatMap(readStatus)
    }
  }
  if (field === "message_template_status_update") {
    const name = stringOf(value.message_template_name)
    const language = stringOf(value.message_template_language)
    const status = stringOf(value.event)
    if (wabaId === undefined || name === undefined || language === undefined || status === undefined) {
      return { _tag: "Ignored", field }
    }
    const reason = stringOf(value.reason)
    return {
      _tag: "TemplateStatus",
      waba_id: wabaId,
      name,
      language,
      status,
      reason: reason === undefined || reason === "NONE" ? null : reason
    }
  }
  return { _tag: "Ignored", field }
}

/** `wa_id` → profile name, from a change's `contacts`. */
const profileNames = (contacts: unknown): ReadonlyMap<string, string> =>
  new Map(
    listOf(contacts).flatMap((contact) => {
      const waId = isRecord(contact) ? stringOf(contact.wa_id) : undefined
      const name = isRecord(contact) && isRecord(contact.profile) ? stringOf(contact.profile.name) : undefined
      return waId === undefined || name === undefined ? [] : [[waId, name] as const]
    })
  )

const MEDIA_TYPES = ["image", "audio", "video", "document", "sticker"] as const

const readMessage = (message: unknown, names: ReadonlyMap<string, string>): Array<WhatsAppInboundMessage> => {
  if (!isRecord(message)) return []
  const id = stringOf(message.id)
  const from = stringOf(message.from)
  const sentType = stringOf(message.type)
  if (id === undefined || from === undefined || sentType === undefined) return []
  const known = (WHATSAPP_INBOUND_TYPES as ReadonlyArray<string>).includes(sentType) && sentType !== "unsupported"
  const type = (known ? sentType : "unsupported") as WhatsAppInboundType
  const body = isRecord(message[sentType]) ? (message[sentType] as Record<string, unknown>) : {}
  const common = {
    timestamp: stringOf(message.timestamp) ?? null,
    ...(isRecord(message.context) ? { context: message.context } : {})
  }
  const base = { provider_message_id: id, from, profile_name: names.get(from) ?? null, type }
  if (type === "text") return [{ ...base, text: stringOf(body.body) ?? "", media: null, content: common }]
  const mediaType = MEDIA_TYPES.find((each) => each === type)
  if (mediaType !== undefined) {
    const mediaId = stringOf(body.id)
    if (mediaId === undefined) return []
    const caption = stringOf(body.caption)
    const media = {
      type: mediaType,
      id: mediaId,
      ...optional("mime_type", stringOf(body.mime_type)),
      ...optional("caption", caption),
      ...optional("filename", stringOf(body.filename))
    }
    return [{ ...base, text: caption ?? null, media, content: common }]
  }
  if (type === "unsupported") {
    const errors = listOf(message.errors)
    return [{ ...base, text: null, media: null, content: { ...common, original_type: sentType, ...(errors.length > 0 ? { errors } : {}) } }]
  }
  return [{ ...base, text: textOf(type, body), media: null, content: { ...common, [type]: message[type] ?? null } }]
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

const readStatus = (status: unknown): Array<WhatsAppStatusUpdate> => {
  if (!isRecord(status)) return []
  const id = stringOf(status.id)
  const value = STATUSES.find((each) => each === status.status)
  if (id === undefined || value === undefined) return []
  const [error] = listOf(status.errors)
  const failure =
    value === "failed"
      ? {
          code: isRecord(error) && error.code !== undefined ? String(error.code) : "unknown",
          title: (isRecord(error) ? (stringOf(error.title) ?? stringOf(error.message)) : undefined) ?? "Failed"
        }
      : null
  return [{ provider_message_id: id, status: value, recipient: stringOf(status.recipient_id) ?? null, failure }]
}

const listOf = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])

/** A non-empty string, or a number as its decimal text (WhatsApp's ids and timestamps are strings). */
const stringOf = (value: unknown): string | undefined =>
  typeof value === "string" && value !== "" ? value : typeof value === "number" ? String(value) : undefined

const optional = <K extends string>(key: K, value: string | undefined) =>
  (value === undefined ? {} : { [key]: value }) as { [P in K]?: string }

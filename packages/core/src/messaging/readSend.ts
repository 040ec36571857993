import { Effect } from "effect"
import type { CountryCode } from "libphonenumber-js"
import { MAX_MESSAGE_TEXT_LENGTH, readContent, readOutboundMedia } from "../chats/messageContent.js"
import type { ContactDetails } from "../model/contacts.js"
import type { IssueCollector } from "../internal/validation.js"
import type { MessageTemplateContent, OutboundMediaContent } from "../model/messages.js"
import type { SendContactFields } from "../model/messaging.js"

// Reading the input of a send (docs/messaging.md) before
// anything is written: every problem is an issue naming its JSON path, so one 400 lists
// them all and a refused send leaves no contact, chat or message behind.

/**
 * The contact part of a send: the phone and the detail fields to overwrite. `phone_valid`
 * false: libphonenumber-js calls `phone` (kept as given) invalid, and a contact has exactly
 * that phone (docs/contacts.md "Unverified phones").
 */
export interface SendRecipient {
  readonly phone: string
  readonly phone_valid: boolean
  readonly details: Partial<Pick<ContactDetails, "first_name" | "last_name" | "email">>
}

/**
 * Reads `phone` (E.164, or as given when libphonenumber-js calls it invalid: then no issue
 * is added and `isStored` decides — a phone some contact has exactly is accepted, docs/contacts.md
 * "Unverified phones"), then the contact fields like a partial `PUT /contacts/{uuid}`
 * (`Contacts.update`): `first_name` given must be a non-blank text; `last_name` and `email`
 * given as `null` or `""` clear the field; `email` must look like an e-mail address.
 */
export const readRecipient = <E, R>(
  collector: IssueCollector,
  input: { readonly phone?: unknown } & { readonly [K in keyof SendContactFields]?: unknown },
  defaultCountry: CountryCode | undefined,
  isStored: (phone: string) => Effect.Effect<boolean, E, R>
): Effect.Effect<SendRecipient, E, R> =>
  Effect.gen(function* () {
    const { phone, valid } = collector.phoneCandidate("phone", input.phone, defaultCountry)
    if (!valid && phone !== "" && !(yield* isStored(phone))) collector.invalidPhone("phone", phone)
    const details: { -readonly [K in keyof SendRecipient["details"]]?: SendRecipient["details"][K] } = {}
    if (input.first_name !== undefined) details.first_name = collector.requiredText("first_name", input.first_name)
    if (input.last_name !== undefined) details.last_name = collector.optionalText("last_name", input.last_name)
    if (input.email !== undefined) details.email = collector.email("email", input.email)
    const recipient: SendRecipient = { phone, phone_valid: valid, details }
    return recipient
  })

/**
 * Reads the `message` of a text send: a string of 1–4096 characters, not blank, kept as
 * written (the same rule as a stored message's `text`).
 */
export const readMessageText = (collector: IssueCollector, value: unknown): string => {
  if (value === undefined || value === null) {
    collector.add("required", "message", "message is required")
    return ""
  }
  if (typeof value !== "string") {
    collector.add("invalid_type", "message", "message must be a string")
    return ""
  }
  if (value.trim() === "") collector.add("required", "message", "message is required")
  else if (value.length > MAX_MESSAGE_TEXT_LENGTH) {
    collector.add("too_long", "message", `message must be at most ${MAX_MESSAGE_TEXT_LENGTH} characters`)
  }
  return value
}

/**
 * Reads the `media` of a media send with the rules of a stored media message
 * (`media.type`, `media.url` http(s) ≤ 2048, `media.caption` ≤ 1024, `media.filename`
 * ≤ 255; captions and filenames trimmed, blank dropped).
 */
export const readMedia = (collector: IssueCollector, value: unknown): OutboundMediaContent =>
  readOutboundMedia(collector, value) ?? { type: "image", url: "" }

/**
 * Checks the shape of a send's `template` object (`template`, `template.name`,
 * `template.language.code` required; `template.components` an array when given), so that
 * `Templates.resolveForSend` only sees objects; its content is checked there.
 */
export const readTemplateShape = (collector: IssueCollector, value: unknown): MessageTemplateContent | null =>
  readContent(collector, { type: "template", template: value }, ["template"]).template

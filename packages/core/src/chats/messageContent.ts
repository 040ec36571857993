import type { IssueCollector } from "../internal/validation.js"
import { MAX_NAME_LENGTH } from "../internal/validation.js"
import type { MessageTemplateContent, MessageType, OutboundMediaContent } from "../messages/model.js"

// Reading the content of a message given to Chats.receiveInbound / appendOutbound
// (docs/messaging.md "Endpoints"): every problem an issue naming the field.

/** Longest message text and caption source, in characters (docs/messaging.md). */
export const MAX_MESSAGE_TEXT_LENGTH = 4096
/** Longest media caption, in characters (WhatsApp's limit). */
export const MAX_CAPTION_LENGTH = 1024
/** Longest media URL, in characters. */
export const MAX_MEDIA_URL_LENGTH = 2048

const MEDIA_TYPES: ReadonlyArray<OutboundMediaContent["type"]> = ["image", "video", "audio", "document"]

/** The content columns of a message record: `text`, `template`, `media` by `type`. */
export interface ReadContent {
  readonly type: MessageType
  readonly text: string | null
  readonly template: MessageTemplateContent | null
  readonly media: OutboundMediaContent | null
}

/**
 * Reads `type` (one of `allowed`) and its content. `text` must be non-blank and at most
 * 4096 characters, kept as written (not trimmed). A `template` message may carry `text`
 * too (its rendered body, for previews). A `media` message's `text` is its caption.
 */
export const readContent = (
  collector: IssueCollector,
  input: { readonly type?: unknown; readonly text?: unknown; readonly template?: unknown; readonly media?: unknown },
  allowed: ReadonlyArray<"text" | "template" | "media">
): ReadContent => {
  const type = input.type
  if (typeof type !== "string" || !(allowed as ReadonlyArray<string>).includes(type)) {
    collector.add("invalid_format", "type", `type must be one of ${allowed.join(", ")}`)
    return { type: "text", text: null, template: null, media: null }
  }
  switch (type as (typeof allowed)[number]) {
    case "text":
      return { type: "text", text: messageText(collector, "text", input.text, true), template: null, media: null }
    case "template":
      return {
        type: "template",
        text: messageText(collector, "text", input.text, false),
        template: template(collector, input.template),
        media: null
      }
    case "media": {
      const media = mediaOf(collector, input.media)
      return { type: "media", text: media?.caption ?? null, template: null, media }
    }
  }
}

/** An optional provider message id: trimmed, 1–255 characters; blank is absent. */
export const providerMessageId = (collector: IssueCollector, value: unknown): string | null =>
  collector.optionalText("provider_message_id", value, MAX_NAME_LENGTH)

const messageText = (collector: IssueCollector, field: string, value: unknown, required: boolean): string | null => {
  if (value === undefined || value === null) {
    if (required) collector.add("required", field, `${field} is required`)
    return null
  }
  if (typeof value !== "string") {
    collector.add("invalid_type", field, `${field} must be a string`)
    return null
  }
  if (value.trim() === "") {
    if (required) collector.add("required", field, `${field} is required`)
    return null
  }
  if (value.length > MAX_MESSAGE_TEXT_LENGTH) {
    collector.add("too_long", field, `${field} must be at most ${MAX_MESSAGE_TEXT_LENGTH} characters`)
  }
  return value
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const template = (collector: IssueCollector, value: unknown): MessageTemplateContent | null => {
  if (!isObject(value)) {
    collector.add(value === undefined ? "required" : "invalid_type", "template", "template must be an object {name, language: {code}, components}")
    return null
  }
  const name = collector.requiredText("template.name", value.name)
  const language = isObject(value.language) ? value.language : {}
  if (!isObject(value.language)) collector.add("invalid_type", "template.language", "template.language must be an object {code}")
  const code = collector.requiredText("template.language.code", language.code)
  const components = value.components ?? []
  if (!Array.isArray(components)) {
    collector.add("invalid_type", "template.components", "template.components must be an array")
    return null
  }
  return { name, language: { code }, components }
}

const mediaOf = (collector: IssueCollector, value: unknown): OutboundMediaContent | null => {
  if (!isObject(value)) {
    collector.add(value === undefined ? "required" : "invalid_type", "media", "media must be an object {type, url, caption?, filename?}")
    return null
  }
  const type = value.type
  if (typeof type !== "string" || !(MEDIA_TYPES as ReadonlyArray<string>).includes(type)) {
    collector.add("invalid_format", "media.type", `media.type must be one of ${MEDIA_TYPES.join(", ")}`)
  }
  const url = collector.requiredText("media.url", value.url, MAX_MEDIA_URL_LENGTH)
  if (url !== "" && !isHttpUrl(url)) collector.add("invalid_format", "media.url", "media.url must be an http or https URL")
  const caption = collector.optionalText("media.caption", value.caption, MAX_CAPTION_LENGTH)
  const filename = collector.optionalText("media.filename", value.filename, MAX_NAME_LENGTH)
  return {
    type: type as OutboundMediaContent["type"],
    url,
    ...(caption === null ? {} : { caption }),
    ...(filename === null ? {} : { filename })
  }
}

const isHttpUrl = (text: string): boolean => {
  try {
    const url = new URL(text)
    return url.protocol === "http:" || url.protocol === "https:"
  } catch {
    return false
  }
}

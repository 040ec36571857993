import { type IssueCollector } from "../internal/validation.js"
import {
  INBOUND_MESSAGE_TYPES,
  type MessageContentFields,
  type MessageMediaContent,
  type MessageTemplateContent,
  type MessageType,
  type OutboundMediaContent
} from "../model/messages.js"
import { MEDIA_TYPES } from "../model/media.js"
import { MAX_NAME_LENGTH } from "../model/names.js"

// Reading the content of a message given to Chats.receiveInbound / appendOutbound
// (docs/messaging.md "Endpoints"): every problem an issue naming the field.

/** Longest message text and caption source, in characters (docs/messaging.md). */
export const MAX_MESSAGE_TEXT_LENGTH = 4096
/** Longest media caption, in characters (WhatsApp's limit). */
export const MAX_CAPTION_LENGTH = 1024
/** Longest media URL, in characters. */
export const MAX_MEDIA_URL_LENGTH = 2048

const OUTBOUND_MEDIA_TYPES: ReadonlyArray<OutboundMediaContent["type"]> = ["image", "video", "audio", "document"]

/** The content columns of a message record: `text`, `template`, `media`, `content` by `type`. */
export interface ReadContent {
  readonly type: MessageType
  readonly text: string | null
  readonly template: MessageTemplateContent | null
  readonly media: MessageMediaContent | null
  readonly content: MessageContentFields | null
}

/**
 * Reads `type` (one of `allowed`) and its content. `text` must be non-blank and at most
 * 4096 characters, kept as written (not trimmed). A `template` message may carry `text`
 * too (its rendered body, for previews). A `media` message's `text` is its caption. An
 * `interactive` message's `text` is its body (required, at most 4096 code points: a list's
 * longest) and its `content` must hold the `interactive` object (checked by the send,
 * `readInteractive`). An outbound `reaction` (`Messaging.react`) has no text; its `content`
 * must hold the `reaction` object.
 */
export const readContent = (
  collector: IssueCollector,
  input: { readonly type?: unknown; readonly text?: unknown; readonly template?: unknown; readonly media?: unknown; readonly content?: unknown },
  allowed: ReadonlyArray<"text" | "template" | "media" | "interactive" | "reaction">
): ReadContent => {
  const type = input.type
  if (typeof type !== "string" || !(allowed as ReadonlyArray<string>).includes(type)) {
    collector.add("invalid_format", "type", `type must be one of ${allowed.join(", ")}`)
    return { type: "text", text: null, template: null, media: null, content: null }
  }
  switch (type as (typeof allowed)[number]) {
    case "text":
      return { type: "text", text: messageText(collector, "text", input.text, true), template: null, media: null, content: null }
    case "template":
      return {
        type: "template",
        text: messageText(collector, "text", input.text, false),
        template: template(collector, input.template),
        media: null,
        content: null
      }
    case "media": {
      const media = readOutboundMedia(collector, input.media)
      return { type: "media", text: media?.caption ?? null, template: null, media, content: null }
    }
    case "interactive": {
      const content = input.content
      if (!isObject(content) || !isObject(content.interactive)) {
        collector.add("required", "content.interactive", "content.interactive must be the interactive object")
      }
      const text = typeof input.text === "string" && input.text.trim() !== "" ? input.text : null
      if (text === null) collector.add("required", "text", "text (the interactive message's body) is required")
      else if ([...text].length > MAX_MESSAGE_TEXT_LENGTH) {
        collector.add("too_long", "text", `text must be at most ${MAX_MESSAGE_TEXT_LENGTH} characters`)
      }
      return { type: "interactive", text, template: null, media: null, content: isObject(content) ? content : null }
    }
    case "reaction": {
      const content = input.content
      if (!isObject(content) || !isObject(content.reaction)) {
        collector.add("required", "content.reaction", "content.reaction must be the reaction {message_id, emoji, target_uuid}")
      }
      return { type: "reaction", text: null, template: null, media: null, content: isObject(content) ? content : null }
    }
  }
}

/**
 * Reads an inbound message's `type` and content (`Chats.receiveInbound`, docs/chats.md
 * "Message types"): `text` messages need `text` (1–4096 characters); the media types need
 * `media` `{type (the message's type), id (1–255), mime_type?, caption?, filename?}`
 * (`id` optional with `mediaIdOptional`: a file the provider refused as too large);
 * another type's `text` is optional and cut to 4096 characters; `content`, when given,
 * must be a JSON object.
 */
export const readInboundContent = (
  collector: IssueCollector,
  input: { readonly type?: unknown; readonly text?: unknown; readonly media?: unknown; readonly content?: unknown },
  mediaIdOptional = false
): ReadContent => {
  const type = input.type
  const content = input.content === undefined || input.content === null ? null : contentFields(collector, input.content)
  if (typeof type !== "string" || !(INBOUND_MESSAGE_TYPES as ReadonlyArray<string>).includes(type)) {
    collector.add("invalid_format", "type", `type must be one of ${INBOUND_MESSAGE_TYPES.join(", ")}`)
    return { type: "text", text: null, template: null, media: null, content }
  }
  if (type === "text") return { type, text: messageText(collector, "text", input.text, true), template: null, media: null, content }
  const isMedia = (MEDIA_TYPES as ReadonlyArray<string>).includes(type)
  const media = isMedia ? inboundMedia(collector, type, input.media, mediaIdOptional) : null
  if (!isMedia && input.media !== undefined && input.media !== null) {
    collector.add("invalid_format", "media", `media is only given with the types ${MEDIA_TYPES.join(", ")}`)
  }
  const text = typeof input.text === "string" && input.text.trim() !== "" ? input.text.slice(0, MAX_MESSAGE_TEXT_LENGTH) : null
  if (input.text !== undefined && input.text !== null && typeof input.text !== "string") {
    collector.add("invalid_type", "text", "text must be a string")
  }
  return { type: type as MessageType, text, template: null, media, content }
}

const inboundMedia = (collector: IssueCollector, type: string, value: unknown, idOptional: boolean): MessageMediaContent | null => {
  if (!isObject(value)) {
    collector.add(value === undefined || value === null ? "required" : "invalid_type", "media", "media must be an object {type, id, mime_type?, caption?, filename?}")
    return null
  }
  if (value.type !== type) collector.add("invalid_format", "media.type", `media.type must be the message's type, ${type}`)
  const id = idOptional ? collector.optionalText("media.id", value.id, MAX_NAME_LENGTH) : collector.requiredText("media.id", value.id, MAX_NAME_LENGTH)
  const mime_type = collector.optionalText("media.mime_type", value.mime_type, MAX_NAME_LENGTH)
  const caption = collector.optionalText("media.caption", value.caption, MAX_MESSAGE_TEXT_LENGTH)
  const filename = collector.optionalText("media.filename", value.filename, MAX_NAME_LENGTH)
  return {
    type: type as MessageMediaContent["type"],
    ...(id === null ? {} : { id }),
    ...(mime_type === null ? {} : { mime_type }),
    ...(caption === null ? {} : { caption }),
    ...(filename === null ? {} : { filename })
  }
}

const contentFields = (collector: IssueCollector, value: unknown): MessageContentFields | null => {
  if (!isObject(value)) {
    collector.add("invalid_type", "content", "content must be a JSON object")
    return null
  }
  return value
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

/**
 * Reads the `media` of an outbound `media` message (`POST /send/media`), or `null` with an
 * issue: `type` image, video, audio or document (optional with `media_uuid`: the stored
 * file's); an http(s) `url` or the `media_uuid` of a stored file, one of the two;
 * `mime_type` (with `media_uuid`), `caption` and `filename` optional.
 */
export const readOutboundMedia = (collector: IssueCollector, value: unknown): OutboundMediaContent | null => {
  if (!isObject(value)) {
    collector.add(value === undefined ? "required" : "invalid_type", "media", "media must be an object {type, url or media_uuid, caption?, filename?}")
    return null
  }
  const stored = value.media_uuid !== undefined && value.media_uuid !== null
  const type = value.type
  if (!(stored && (type === undefined || type === null)) && (typeof type !== "string" || !(OUTBOUND_MEDIA_TYPES as ReadonlyArray<string>).includes(type))) {
    collector.add("invalid_format", "media.type", `media.type must be one of ${OUTBOUND_MEDIA_TYPES.join(", ")}`)
  }
  const caption = collector.optionalText("media.caption", value.caption, MAX_CAPTION_LENGTH)
  const filename = collector.optionalText("media.filename", value.filename, MAX_NAME_LENGTH)
  const extras = { ...(caption === null ? {} : { caption }), ...(filename === null ? {} : { filename }) }
  if (stored) {
    if (value.url !== undefined && value.url !== null) collector.add("invalid_format", "media.url", "give media.url or media.media_uuid, not both")
    const mediaUuid = collector.optionalUuid("media.media_uuid", value.media_uuid) ?? ""
    const mimeType = collector.optionalText("media.mime_type", value.mime_type, MAX_NAME_LENGTH)
    return {
      type: (typeof type === "string" ? type : "document") as OutboundMediaContent["type"],
      media_uuid: mediaUuid.toLowerCase(),
      ...(mimeType === null ? {} : { mime_type: mimeType }),
      ...extras
    }
  }
  const url = collector.requiredText("media.url", value.url, MAX_MEDIA_URL_LENGTH)
  if (url !== "" && !isHttpUrl(url)) collector.add("invalid_format", "media.url", "media.url must be an http or https URL")
  return { type: type as OutboundMediaContent["type"], url, ...extras }
}

/** Whether `text` is an absolute http or https URL. */
export const isHttpUrl = (text: string): boolean => {
  try {
    const url = new URL(text)
    return url.protocol === "http:" || url.protocol === "https:"
  } catch {
    return false
  }
}

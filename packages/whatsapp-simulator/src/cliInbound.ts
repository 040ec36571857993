import { type Command, Option } from "commander"
import { coordinate, httpUrl, phone } from "./cliParsers.js"
import { newMediaId } from "./media.js"
import {
  buttonMessage,
  contactsMessage,
  DEFAULT_NUMBER,
  type InboundContent,
  interactiveReply,
  locationMessage,
  mediaMessage,
  reactionMessage,
  textMessage
} from "./payloads.js"

/** The options of `inbound` that say what the customer sent. */
export interface InboundContentOptions {
  type: string
  text?: string
  mediaId?: string
  file?: string
  simulator?: string
  mimeType?: string
  caption?: string
  filename?: string
  latitude?: number
  longitude?: number
  locationName?: string
  address?: string
  payload?: string
  replyId?: string
  title?: string
  description?: string
  messageId?: string
  emoji?: string
  contactName?: string
  contactPhone?: string
  contextId?: string
  messageJson?: string
}

const TYPES = ["text", "image", "audio", "video", "document", "sticker", "location", "contacts", "button", "reaction", "button_reply", "list_reply"]

/** Adds the `inbound` command's options to `command`. */
export const inboundOptions = (command: Command): Command =>
  command
    .addOption(
      new Option("--webhook-url <url>", "where to post (Switchboard: {base}/webhooks/whatsapp)")
        .env("SIMULATOR_WEBHOOK_URL")
        .argParser(httpUrl("--webhook-url"))
        .makeOptionMandatory()
    )
    .addOption(new Option("--app-secret-env <name>", "the variable holding the app secret").default("SIMULATOR_APP_SECRET"))
    .requiredOption("--from <phone>", "the customer's number (digits or E.164)", phone("--from"))
    .option("--name <name>", "the customer's profile name", "Simulated Customer")
    .addOption(new Option("--phone-number-id <id>", "the business number written to").env("SIMULATOR_PHONE_NUMBER_ID").default(DEFAULT_NUMBER.phone_number_id))
    .addOption(new Option("--display-phone-number <phone>", "its display number").env("SIMULATOR_DISPLAY_PHONE_NUMBER").default(DEFAULT_NUMBER.display_phone_number))
    .addOption(new Option("--waba-id <id>", "its WhatsApp Business Account id").env("SIMULATOR_WABA_ID").default(DEFAULT_NUMBER.waba_id))
    .addOption(new Option("--type <type>", "what the customer sent").choices(TYPES).default("text"))
    .option("--text <text>", "text: the body; button: the button's text")
    .option("--media-id <id>", "image, audio, video, document, sticker: the media id (default: a new one, or --file's)")
    .option("--file <path>", "image, audio, video, document, sticker: a file the running simulator (--simulator) serves as the media")
    .addOption(new Option("--simulator <url>", "with --file: the running simulator's URL").env("SIMULATOR_URL").default("http://127.0.0.1:4010").argParser(httpUrl("--simulator")))
    .option("--mime-type <type>", "the media's mime type (default: by --file's extension, else the type's usual one)")
    .option("--caption <caption>", "the media's caption")
    .option("--filename <name>", "a document's file name")
    .option("--latitude <degrees>", "location: latitude", coordinate("--latitude"))
    .option("--longitude <degrees>", "location: longitude", coordinate("--longitude"))
    .option("--location-name <name>", "location: the place's name")
    .option("--address <address>", "location: the address")
    .option("--payload <payload>", "button: the quick-reply payload")
    .option("--reply-id <id>", "button_reply, list_reply: the chosen id")
    .option("--title <title>", "button_reply, list_reply: the chosen title")
    .option("--description <text>", "list_reply: the row's description")
    .option("--message-id <wamid>", "reaction: the message reacted to")
    .option("--emoji <emoji>", "reaction: the emoji (empty removes it)")
    .option("--contact-name <name>", "contacts: the shared contact's name")
    .option("--contact-phone <phone>", "contacts: the shared contact's phone")
    .option("--context-id <wamid>", "the message this one replies to")
    .option("--message-json <json>", 'any other message: the whole {type, <type>: {...}} object, e.g. {"type":"order","order":{...}}')

/** The usual MIME type of each media type, when neither `--mime-type` nor a known extension says. */
const DEFAULT_MIME: Readonly<Record<string, string>> = {
  image: "image/jpeg",
  audio: "audio/ogg",
  video: "video/mp4",
  document: "application/pdf",
  sticker: "image/webp"
}

/** MIME types by file extension, for `--file`. */
const MIME_BY_EXTENSION: Readonly<Record<string, string>> = {
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  png: "image/png",
  webp: "image/webp",
  mp4: "video/mp4",
  "3gp": "video/3gpp",
  aac: "audio/aac",
  amr: "audio/amr",
  mp3: "audio/mpeg",
  m4a: "audio/mp4",
  ogg: "audio/ogg",
  opus: "audio/ogg",
  txt: "text/plain",
  pdf: "application/pdf",
  doc: "application/msword",
  docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  xls: "application/vnd.ms-excel",
  xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  ppt: "application/vnd.ms-powerpoint",
  pptx: "application/vnd.openxmlformats-officedocument.presentationml.presentation"
}

/**
 * The MIME type of an inbound media message: `--mime-type`, else `--file`'s extension's,
 * else the type's usual one (image/jpeg, audio/ogg, video/mp4, application/pdf, image/webp).
 */
export const inboundMimeType = (options: Pick<InboundContentOptions, "type" | "mimeType" | "file">): string =>
  options.mimeType ??
  (options.file === undefined ? undefined : MIME_BY_EXTENSION[options.file.split(".").pop()?.toLowerCase() ?? ""]) ??
  DEFAULT_MIME[options.type] ??
  "application/octet-stream"

/** The message the options describe; throws an `Error` naming the missing option. */
export const buildInboundContent = (options: InboundContentOptions): InboundContent => {
  const content = options.messageJson === undefined ? byType(options) : fromJson(options.messageJson)
  return options.contextId === undefined ? content : { ...content, context: { id: options.contextId } }
}

const byType = (options: InboundContentOptions): InboundContent => {
  const need = <K extends keyof InboundContentOptions>(key: K, flag: string): NonNullable<InboundContentOptions[K]> => {
    const value = options[key]
    if (value === undefined) throw new Error(`--type ${options.type} needs ${flag}`)
    return value as NonNullable<InboundContentOptions[K]>
  }
  switch (options.type) {
    case "text":
      return textMessage(need("text", "--text"))
    case "image":
    case "audio":
    case "video":
    case "document":
    case "sticker":
      return mediaMessage(options.type, {
        id: options.mediaId ?? newMediaId(),
        mime_type: inboundMimeType(options),
        ...(options.caption === undefined ? {} : { caption: options.caption }),
        ...(options.filename === undefined ? {} : { filename: options.filename })
      })
    case "location":
      return locationMessage({
        latitude: need("latitude", "--latitude"),
        longitude: need("longitude", "--longitude"),
        ...(options.locationName === undefined ? {} : { name: options.locationName }),
        ...(options.address === undefined ? {} : { address: options.address })
      })
    case "contacts":
      return contactsMessage({ formatted_name: need("contactName", "--contact-name"), phone: need("contactPhone", "--contact-phone") })
    case "button":
      return buttonMessage(need("text", "--text"), need("payload", "--payload"))
    case "reaction":
      return reactionMessage(need("messageId", "--message-id"), need("emoji", "--emoji"))
    default:
      return interactiveReply(options.type as "button_reply" | "list_reply", {
        id: need("replyId", "--reply-id"),
        title: need("title", "--title"),
        ...(options.description === undefined ? {} : { description: options.description })
      })
  }
}

const fromJson = (text: string): InboundContent => {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw new Error("--message-json is not JSON")
  }
  const message = parsed as InboundContent
  if (typeof message !== "object" || message === null || typeof message.type !== "string" || message.type === "") {
    throw new Error('--message-json must be an object with a "type", e.g. {"type":"text","text":{"body":"Hi"}}')
  }
  return message
}

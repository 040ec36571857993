import { isHttpUrl } from "../chats/messageContent.js"
import { IssueCollector, isRecord, UUID_PATTERN } from "../internal/validation.js"
import type { InputIssue } from "../model/commonErrors.js"
import {
  codePointLength,
  INTERACTIVE_LIMITS,
  INTERACTIVE_TYPES,
  type InteractiveContent,
  type InteractiveHeader,
  type InteractiveListRow,
  type InteractiveListSection,
  type InteractiveReplyButton,
  type InteractiveType
} from "../model/interactive.js"

// Reading the `interactive` object of `POST /send/interactive` (docs/messaging.md
// "Interactive messages") before anything is written: every problem is one issue naming
// the field by its path (`interactive.action.buttons[1].reply.title`), so one 400 lists
// them all. Texts are kept as written; their lengths count Unicode code points. Properties
// the rules do not name are dropped: neither stored nor sent.

/** The root of every path this reader names. */
const ROOT = "interactive"

/**
 * Reads a send's `interactive` object (Meta's own shape, {@link InteractiveContent}):
 * `type` `button`, `list` or `cta_url`; `body.text` required (≤ 1024 code points, a list's
 * ≤ 4096); `footer.text` ≤ 60; `header` optional: `{type: "text", text ≤ 60}`, or for a
 * `button` or `cta_url` an image, video or document `{type, <type>: {link} | {media_uuid}}`
 * (an http(s) link ≤ 2048, or a stored file's uuid, which the caller resolves; a document
 * may carry `filename` ≤ 255); then the `action` of its type:
 * - `button`: `buttons`, 1–3 of `{type: "reply", reply: {id ≤ 256, title ≤ 20}}`, ids unique;
 * - `list`: `button` ≤ 20, `sections` 1–10 of `{title?, rows: [{id ≤ 200, title ≤ 24,
 *   description? ≤ 72}]}`, at most 10 rows in all sections, row ids unique across the
 *   message, each section with a row, `title` ≤ 24 and required when there is more than one
 *   section;
 * - `cta_url`: `name: "cta_url"`, `parameters: {display_text ≤ 20, url}` (an http(s) URL ≤ 2048).
 * Every problem is an issue of `collector` on its path; the object as read (the rules'
 * properties only), or `null` when it is not an object of a known type.
 *
 * @category messaging
 */
export const readInteractive = (collector: IssueCollector, value: unknown): InteractiveContent | null => {
  const root = object(collector, ROOT, value, true)
  if (root === undefined) return null
  const type = root.type
  if (typeof type !== "string" || !(INTERACTIVE_TYPES as ReadonlyArray<string>).includes(type)) {
    collector.add(
      type === undefined || type === null ? "required" : "invalid_format",
      `${ROOT}.type`,
      `${ROOT}.type must be one of ${INTERACTIVE_TYPES.join(", ")}`
    )
    return null
  }
  const kind = type as InteractiveType
  const bodyObject = object(collector, `${ROOT}.body`, root.body, true)
  const bodyText = bodyObject === undefined ? undefined : text(collector, `${ROOT}.body.text`, bodyObject.text, INTERACTIVE_LIMITS.bodyText[kind], true)
  const body = { text: bodyText ?? "" }
  const footerObject = object(collector, `${ROOT}.footer`, root.footer, false)
  const footerText = footerObject === undefined ? undefined : text(collector, `${ROOT}.footer.text`, footerObject.text, INTERACTIVE_LIMITS.footerText, true)
  const header = readHeader(collector, root.header, kind)
  const common = {
    ...(header === undefined ? {} : { header }),
    body,
    ...(footerText === undefined ? {} : { footer: { text: footerText } })
  }
  const action = object(collector, `${ROOT}.action`, root.action, true)
  // Without an action, its parts are not named again.
  if (action === undefined) return { type: "button", ...common, action: { buttons: [] } }
  switch (kind) {
    case "button":
      return { type: kind, ...common, action: { buttons: readButtons(collector, action.buttons) } }
    case "list": {
      const button = text(collector, `${ROOT}.action.button`, action.button, INTERACTIVE_LIMITS.listButton, true) ?? ""
      const list: InteractiveContent = {
        type: kind,
        body,
        ...(footerText === undefined ? {} : { footer: { text: footerText } }),
        ...(header?.type === "text" ? { header } : {}),
        action: { button, sections: readSections(collector, action.sections) }
      }
      return list
    }
    case "cta_url":
      return { type: kind, ...common, action: readCallToAction(collector, action) }
  }
}

/**
 * {@link readInteractive} on its own: the object as read (`null` when it is not an object
 * of a known type) and every issue, each naming its path (`interactive.action.sections`);
 * no issue means the object is one `POST /send/interactive` accepts (but for a header's
 * `media_uuid`, which must name a stored file of the organization).
 *
 * @category messaging
 * @example
 * import { checkInteractive } from "@switchboard/core"
 *
 * const { issues } = checkInteractive({ type: "button", body: { text: "Pick one" }, action: { buttons: [] } })
 * // issues: [{ code: "out_of_range", field: "interactive.action.buttons", message: "…" }]
 */
export const checkInteractive = (value: unknown): { readonly interactive: InteractiveContent | null; readonly issues: ReadonlyArray<InputIssue> } => {
  const collector = new IssueCollector()
  const interactive = readInteractive(collector, value)
  return { interactive, issues: collector.issues }
}

/**
 * The optional `header`: text for every type, or (not for a list) an image, video or
 * document with a `link` or a `media_uuid`.
 */
const readHeader = (collector: IssueCollector, value: unknown, kind: InteractiveType): InteractiveHeader | undefined => {
  const field = `${ROOT}.header`
  const header = object(collector, field, value, false)
  if (header === undefined) return undefined
  const allowed = kind === "list" ? ["text"] : ["text", "image", "video", "document"]
  const type = header.type
  if (typeof type !== "string" || !allowed.includes(type)) {
    collector.add(
      type === undefined || type === null ? "required" : "invalid_format",
      `${field}.type`,
      kind === "list" ? `${field}.type of a list must be text` : `${field}.type must be one of ${allowed.join(", ")}`
    )
    return undefined
  }
  if (type === "text") return { type, text: text(collector, `${field}.text`, header.text, INTERACTIVE_LIMITS.headerText, true) ?? "" }
  const mediaType = type as "image" | "video" | "document"
  const media = object(collector, `${field}.${mediaType}`, header[mediaType], true)
  if (media === undefined) return undefined
  const where = `${field}.${mediaType}`
  const given = (key: string) => media[key] !== undefined && media[key] !== null
  const filename =
    mediaType === "document" && given("filename") ? text(collector, `${where}.filename`, media.filename, 255, true) : undefined
  const extra = filename === undefined ? {} : { filename }
  if (given("link") && given("media_uuid")) {
    collector.add("invalid_format", `${where}.link`, `give ${where}.link or ${where}.media_uuid, not both`)
    return undefined
  }
  if (given("media_uuid")) {
    const uuid = media.media_uuid
    if (typeof uuid !== "string" || !UUID_PATTERN.test(uuid)) {
      collector.add("invalid_format", `${where}.media_uuid`, `${where}.media_uuid must be a uuid`)
      return undefined
    }
    return { type: mediaType, [mediaType]: { media_uuid: uuid.toLowerCase(), ...extra } } as InteractiveHeader
  }
  if (!given("link")) {
    collector.add("required", `${where}.link`, `${where}.link or ${where}.media_uuid is required`)
    return undefined
  }
  const link = text(collector, `${where}.link`, media.link, INTERACTIVE_LIMITS.url, true)
  if (link !== undefined && !isHttpUrl(link)) collector.add("invalid_format", `${where}.link`, `${where}.link must be an http or https URL`)
  return { type: mediaType, [mediaType]: { link: link ?? "", ...extra } } as InteractiveHeader
}

/** A `button` message's `action.buttons`: 1–3 reply buttons, ids unique. */
const readButtons = (collector: IssueCollector, value: unknown): ReadonlyArray<InteractiveReplyButton> => {
  const field = `${ROOT}.action.buttons`
  const items = array(collector, field, value, 1, INTERACTIVE_LIMITS.buttons, "reply buttons")
  const ids = new Set<string>()
  return items.flatMap((item, index) => {
    const where = `${field}[${index}]`
    const button = object(collector, where, item, true)
    if (button === undefined) return []
    if (button.type !== "reply") {
      collector.add(button.type === undefined ? "required" : "invalid_format", `${where}.type`, `${where}.type must be reply`)
    }
    const reply = object(collector, `${where}.reply`, button.reply, true)
    if (reply === undefined) return []
    const id = text(collector, `${where}.reply.id`, reply.id, INTERACTIVE_LIMITS.buttonId, true) ?? ""
    const title = text(collector, `${where}.reply.title`, reply.title, INTERACTIVE_LIMITS.buttonTitle, true) ?? ""
    unique(collector, ids, id, `${where}.reply.id`, "button ids")
    return [{ type: "reply" as const, reply: { id, title } }]
  })
}

/** A `list` message's `action.sections`: 1–10 sections, at most 10 rows in all, row ids unique. */
const readSections = (collector: IssueCollector, value: unknown): ReadonlyArray<InteractiveListSection> => {
  const field = `${ROOT}.action.sections`
  const items = array(collector, field, value, 1, INTERACTIVE_LIMITS.sections, "sections")
  const ids = new Set<string>()
  const sections = items.flatMap((item, index) => {
    const where = `${field}[${index}]`
    const section = object(collector, where, item, true)
    if (section === undefined) return []
    const title = text(collector, `${where}.title`, section.title, INTERACTIVE_LIMITS.sectionTitle, items.length > 1)
    const rows = array(collector, `${where}.rows`, section.rows, 1, Infinity, "rows").flatMap((row, rowIndex) => {
      const read = readRow(collector, `${where}.rows[${rowIndex}]`, row)
      if (read !== undefined) unique(collector, ids, read.id, `${where}.rows[${rowIndex}].id`, "row ids in a list")
      return read === undefined ? [] : [read]
    })
    return [{ ...(title === undefined ? {} : { title }), rows }]
  })
  const rowCount = items.reduce<number>((count, item) => count + (isRecord(item) && Array.isArray(item.rows) ? item.rows.length : 0), 0)
  if (rowCount > INTERACTIVE_LIMITS.rows) {
    collector.add("out_of_range", field, `${field} must have at most ${INTERACTIVE_LIMITS.rows} rows in all sections (${rowCount} given)`)
  }
  return sections
}

const readRow = (collector: IssueCollector, where: string, value: unknown): InteractiveListRow | undefined => {
  const row = object(collector, where, value, true)
  if (row === undefined) return undefined
  const id = text(collector, `${where}.id`, row.id, INTERACTIVE_LIMITS.rowId, true) ?? ""
  const title = text(collector, `${where}.title`, row.title, INTERACTIVE_LIMITS.rowTitle, true) ?? ""
  const description = text(collector, `${where}.description`, row.description, INTERACTIVE_LIMITS.rowDescription, false)
  return { id, title, ...(description === undefined ? {} : { description }) }
}

/** A `cta_url` message's action: `name` `cta_url`, `parameters.display_text` and an http(s) `parameters.url`. */
const readCallToAction = (collector: IssueCollector, action: Record<string, unknown>) => {
  const field = `${ROOT}.action`
  if (action.name !== "cta_url") {
    collector.add(action.name === undefined || action.name === null ? "required" : "invalid_format", `${field}.name`, `${field}.name must be cta_url`)
  }
  const parameters = object(collector, `${field}.parameters`, action.parameters, true)
  if (parameters === undefined) return { name: "cta_url" as const, parameters: { display_text: "", url: "" } }
  const display_text = text(collector, `${field}.parameters.display_text`, parameters.display_text, INTERACTIVE_LIMITS.displayText, true) ?? ""
  const url = text(collector, `${field}.parameters.url`, parameters.url, INTERACTIVE_LIMITS.url, true) ?? ""
  if (url !== "" && !isHttpUrl(url)) collector.add("invalid_format", `${field}.parameters.url`, `${field}.parameters.url must be an http or https URL`)
  return { name: "cta_url" as const, parameters: { display_text, url } }
}

/** An object at `field`: absent is `undefined` (an issue when `required`), another value an issue. */
const object = (collector: IssueCollector, field: string, value: unknown, required: boolean): Record<string, unknown> | undefined => {
  if (value === undefined || value === null) {
    if (required) collector.add("required", field, `${field} is required`)
    return undefined
  }
  if (!isRecord(value)) {
    collector.add("invalid_type", field, `${field} must be an object`)
    return undefined
  }
  return value
}

/** An array at `field` of `min`–`max` items (`what` names them), else an issue and no items. */
const array = (collector: IssueCollector, field: string, value: unknown, min: number, max: number, what: string): ReadonlyArray<unknown> => {
  if (value === undefined || value === null) {
    collector.add("required", field, `${field} is required`)
    return []
  }
  if (!Array.isArray(value)) {
    collector.add("invalid_type", field, `${field} must be an array`)
    return []
  }
  if (value.length < min || value.length > max) {
    const bound = max === Infinity ? `at least ${min}` : `${min} to ${max}`
    collector.add("out_of_range", field, `${field} must have ${bound} ${what} (${value.length} given)`)
  }
  return value
}

/**
 * A text at `field`, kept as written: a string, not blank, at most `max` Unicode code
 * points; absent is `undefined` (an issue when `required`).
 */
const text = (collector: IssueCollector, field: string, value: unknown, max: number, required: boolean): string | undefined => {
  if (value === undefined || value === null) {
    if (required) collector.add("required", field, `${field} is required`)
    return undefined
  }
  if (typeof value !== "string") {
    collector.add("invalid_type", field, `${field} must be a string`)
    return undefined
  }
  if (value.trim() === "") {
    collector.add("required", field, `${field} must not be blank`)
    return undefined
  }
  if (codePointLength(value) > max) collector.add("too_long", field, `${field} must be at most ${max} characters`)
  return value
}

/** Adds `id` to `seen`, or an issue on `field` when it is there already. */
const unique = (collector: IssueCollector, seen: Set<string>, id: string, field: string, what: string): void => {
  if (id === "") return
  if (seen.has(id)) collector.add("invalid_format", field, `${field} repeats ${JSON.stringify(id)}: ${what} must be unique`)
  seen.add(id)
}

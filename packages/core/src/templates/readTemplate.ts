import type { CountryCode } from "libphonenumber-js"
import { isRecord, type IssueCollector } from "../internal/validation.js"
import { type TemplateButton, type TemplateCategory, type TemplateComponent, type TemplateContent, TemplateStatus } from "../model/templates.js"
import { placeholdersOf } from "./placeholders.js"

// Reading and checking a template's content (docs/templates-and-replies.md "Template rules", WhatsApp's
// management shape). Shared by Templates.create/update and the admin import, so the rules
// live here once.

/** Longest `BODY` text, in characters (WhatsApp's limit). */
export const MAX_BODY_LENGTH = 1024
/** Longest `HEADER` or `FOOTER` text, in characters (WhatsApp's limit). */
export const MAX_HEADER_FOOTER_LENGTH = 60
/** Longest button text, in characters (WhatsApp's limit). */
export const MAX_BUTTON_TEXT_LENGTH = 25
/** Most buttons in a `BUTTONS` component (WhatsApp's limit). */
export const MAX_BUTTONS = 10
/** Longest `URL` button url, in characters (WhatsApp's limit). */
export const MAX_URL_LENGTH = 2000

const NAME_FORMAT = /^[a-z0-9_]+$/
const LANGUAGE_FORMAT = /^[a-z]{2,3}(?:_[A-Za-z]{2,4})?$/
const HTTP_URL = /^https?:\/\/\S+$/i
const CATEGORIES: ReadonlyArray<TemplateCategory> = ["MARKETING", "UTILITY", "AUTHENTICATION"]
const STATUSES: ReadonlyArray<TemplateStatus> = TemplateStatus.literals
const COMPONENT_TYPES = ["HEADER", "BODY", "FOOTER", "BUTTONS"] as const
const HEADER_FORMATS = ["TEXT", "IMAGE", "VIDEO", "DOCUMENT"] as const
const BUTTON_TYPES = ["QUICK_REPLY", "URL", "PHONE_NUMBER"] as const

/** The fields of a template written by hand (or imported): no account, no Meta id, no problems. */
const HAND_WRITTEN = { waba_id: null, provider_template_id: null, problems: [] } as const

/**
 * Reads a template's content from `input`, adding an issue to `collector` for every
 * problem, each named by its JSON path under `path` (`""` for the top level, else for
 * example `templates[2]`). Text fields are trimmed; `category`, `status`, component
 * `type`, header `format` and button `type` are read case-insensitively and stored
 * uppercase; unknown fields are dropped; a `PHONE_NUMBER` button's number becomes E.164.
 * The content is that of a template written by hand (`waba_id` and
 * `provider_template_id` `null`, no `problems`). The result is meaningful only when no
 * issue was added.
 */
export const readTemplate = (
  collector: IssueCollector,
  path: string,
  input: unknown,
  defaultCountry: CountryCode | undefined
): TemplateContent => {
  const at = (field: string) => (path === "" ? field : `${path}.${field}`)
  if (!isRecord(input)) {
    collector.add("invalid_type", path === "" ? "template" : path, `${path === "" ? "the template" : path} must be an object`)
    return { ...HAND_WRITTEN, name: "", language: "", category: "UTILITY", status: "PENDING", components: [] }
  }
  const record = input
  const name = collector.requiredText(at("name"), record.name)
  if (name !== "" && !NAME_FORMAT.test(name)) {
    collector.add("invalid_format", at("name"), `${at("name")} may hold only lowercase letters, digits and underscores`)
  }
  const language = collector.requiredText(at("language"), record.language)
  if (language !== "" && !LANGUAGE_FORMAT.test(language)) {
    collector.add("invalid_format", at("language"), `${at("language")} must be a language code such as en or en_US`)
  }
  return {
    ...HAND_WRITTEN,
    name,
    language,
    category: oneOf(collector, at("category"), record.category, CATEGORIES) ?? "UTILITY",
    status: oneOf(collector, at("status"), record.status, STATUSES) ?? "PENDING",
    components: readComponents(collector, at("components"), record.components, defaultCountry)
  }
}

const readComponents = (
  collector: IssueCollector,
  path: string,
  value: unknown,
  defaultCountry: CountryCode | undefined
): Array<TemplateComponent> => {
  if (value === undefined || value === null) {
    collector.add("required", path, `${path} is required`)
    return []
  }
  if (!Array.isArray(value)) {
    collector.add("invalid_type", path, `${path} must be an array of components`)
    return []
  }
  const components: Array<TemplateComponent> = []
  const seen = new Set<string>()
  let typesKnown = true
  for (const [index, entry] of value.entries()) {
    const at = `${path}[${index}]`
    if (!isRecord(entry)) collector.add("invalid_type", at, `${at} must be an object`)
    const type = isRecord(entry) ? oneOf(collector, `${at}.type`, entry.type, COMPONENT_TYPES) : undefined
    if (!isRecord(entry) || type === undefined) {
      typesKnown = false
    } else if (seen.has(type)) {
      collector.add("invalid_format", `${at}.type`, `only one ${type} component is allowed`)
    } else {
      seen.add(type)
      const component = readComponent(collector, at, type, entry, defaultCountry)
      if (component !== undefined) components.push(component)
    }
  }
  // A component of unknown type might have been the BODY: do not also call it missing.
  if (typesKnown && !seen.has("BODY")) collector.add("required", path, `${path} must hold one BODY component`)
  return components
}

const readComponent = (
  collector: IssueCollector,
  at: string,
  type: (typeof COMPONENT_TYPES)[number],
  record: Record<string, unknown>,
  defaultCountry: CountryCode | undefined
): TemplateComponent | undefined => {
  switch (type) {
    case "HEADER":
      return readHeader(collector, at, record)
    case "BODY": {
      const { text, count } = placeholderText(collector, `${at}.text`, record.text, MAX_BODY_LENGTH, Infinity)
      const example = readExample(collector, `${at}.example`, record.example, "body_text", (field, list) =>
        exampleRows(collector, field, list, count)
      )
      return { type, text, ...(example === undefined ? {} : { example: { body_text: example } }) }
    }
    case "FOOTER":
      return { type, text: placeholderText(collector, `${at}.text`, record.text, MAX_HEADER_FOOTER_LENGTH, 0).text }
    case "BUTTONS":
      return { type, buttons: readButtons(collector, `${at}.buttons`, record.buttons, defaultCountry) }
  }
}

const readHeader = (collector: IssueCollector, at: string, record: Record<string, unknown>): TemplateComponent | undefined => {
  const format = oneOf(collector, `${at}.format`, record.format, HEADER_FORMATS)
  if (format === undefined) return undefined
  if (format === "TEXT") {
    const { text, count } = placeholderText(collector, `${at}.text`, record.text, MAX_HEADER_FOOTER_LENGTH, 1)
    const example = readExample(collector, `${at}.example`, record.example, "header_text", (field, list) =>
      exampleStrings(collector, field, list, count)
    )
    return { type: "HEADER", format, text, ...(example === undefined ? {} : { example: { header_text: example } }) }
  }
  const example = readExample(collector, `${at}.example`, record.example, "header_handle", (field, list) =>
    exampleStrings(collector, field, list, 1)
  )
  return { type: "HEADER", format, ...(example === undefined ? {} : { example: { header_handle: example } }) }
}

const readButtons = (
  collector: IssueCollector,
  path: string,
  value: unknown,
  defaultCountry: CountryCode | undefined
): Array<TemplateButton> => {
  if (!Array.isArray(value)) {
    collector.add(value === undefined || value === null ? "required" : "invalid_type", path, `${path} must be an array of buttons`)
    return []
  }
  if (value.length < 1 || value.length > MAX_BUTTONS) {
    collector.add("out_of_range", path, `${path} must hold 1 to ${MAX_BUTTONS} buttons`)
  }
  const buttons: Array<TemplateButton> = []
  value.forEach((entry: unknown, index) => {
    const at = `${path}[${index}]`
    if (!isRecord(entry)) {
      collector.add("invalid_type", at, `${at} must be an object`)
      return
    }
    const type = oneOf(collector, `${at}.type`, entry.type, BUTTON_TYPES)
    const text = placeholderText(collector, `${at}.text`, entry.text, MAX_BUTTON_TEXT_LENGTH, 0).text
    if (type === "QUICK_REPLY") buttons.push({ type, text })
    if (type === "PHONE_NUMBER") {
      buttons.push({ type, text, phone_number: collector.phone(`${at}.phone_number`, entry.phone_number, defaultCountry) })
    }
    if (type === "URL") buttons.push({ type, text, ...readUrl(collector, at, entry) })
  })
  return buttons
}

/** A `URL` button's `url` (http or https, at most one `{{1}}`, at its end) and `example`. */
const readUrl = (collector: IssueCollector, at: string, entry: Record<string, unknown>) => {
  const { text: url, count } = placeholderText(collector, `${at}.url`, entry.url, MAX_URL_LENGTH, 1)
  if (url !== "" && !HTTP_URL.test(url)) collector.add("invalid_format", `${at}.url`, `${at}.url must be an http or https URL`)
  else if (count === 1 && !url.endsWith("{{1}}")) {
    collector.add("invalid_format", `${at}.url`, `${at}.url may hold its one placeholder, {{1}}, only at its end`)
  }
  const example = entry.example === undefined ? undefined : exampleStrings(collector, `${at}.example`, entry.example, count)
  return { url, ...(example === undefined ? {} : { example }) }
}

/**
 * A required text with placeholders: at most `allowed` distinct ones, well formed and
 * numbered without gaps. Returns the trimmed text and its placeholder count.
 */
const placeholderText = (collector: IssueCollector, field: string, value: unknown, max: number, allowed: number) => {
  const text = collector.requiredText(field, value, max)
  if (text === "") return { text, count: 0 }
  const { count, problem } = placeholdersOf(text)
  if (problem !== undefined) collector.add("invalid_format", field, `${field}: ${problem}`)
  else if (count > allowed) {
    const message = allowed === 0 ? `${field} may not hold placeholders` : `${field} may hold only one placeholder, {{1}}`
    collector.add("invalid_format", field, message)
  }
  return { text, count }
}

/** A value of `options`, given in any case; `required` when absent, `invalid_format` otherwise. */
const oneOf = <A extends string>(
  collector: IssueCollector,
  field: string,
  value: unknown,
  options: ReadonlyArray<A>
): A | undefined => {
  const text = collector.requiredText(field, value)
  if (text === "") return undefined
  const found = options.find((option) => option === text.toUpperCase())
  if (found === undefined) collector.add("invalid_format", field, `${field} must be one of ${options.join(", ")}`)
  return found
}

/** An optional `example` object holding one array under `key`, read by `read`. */
const readExample = <A>(
  collector: IssueCollector,
  field: string,
  value: unknown,
  key: string,
  read: (field: string, value: unknown) => A | undefined
): A | undefined => {
  if (value === undefined || value === null) return undefined
  if (!isRecord(value)) {
    collector.add("invalid_type", field, `${field} must be an object with ${key}`)
    return undefined
  }
  return read(`${field}.${key}`, value[key])
}

/** `[[one example per placeholder]]`, the shape of `example.body_text`. */
const exampleRows = (collector: IssueCollector, field: string, value: unknown, count: number) => {
  if (!Array.isArray(value) || value.length !== 1) {
    collector.add("invalid_format", field, `${field} must hold one array of examples`)
    return undefined
  }
  const row = exampleStrings(collector, `${field}[0]`, value[0], count)
  return row === undefined ? undefined : [row]
}

/** An array of exactly `count` example strings (trimmed, non-empty). */
const exampleStrings = (collector: IssueCollector, field: string, value: unknown, count: number) => {
  if (!Array.isArray(value)) {
    collector.add("invalid_type", field, `${field} must be an array of strings`)
    return undefined
  }
  if (value.length !== count) collector.add("out_of_range", field, `${field} must hold ${count} examples, one per placeholder`)
  return value.map((entry: unknown, index) => collector.requiredText(`${field}[${index}]`, entry, MAX_URL_LENGTH))
}

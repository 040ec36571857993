import type { InputIssue } from "../model/commonErrors.js"
import { componentsOf, type Template, type TemplateSendComponent, type TemplateSendParameter, type TemplateSlot } from "../model/templates.js"
import { expectedComponents, type ExpectedComponent } from "./payload.js"
import { render } from "./placeholders.js"
import { isRecord } from "../internal/validation.js"

// Checking the filled parameters of a send against a template (docs/templates-and-replies.md)
// and rendering the message text.

/** JSON path of the send's components (the `template` object of `POST /send/template`). */
const PATH = "template.components"
const CODE = "template_parameters_mismatch"

/** The outcome of {@link checkSendComponents}: `issues` empty means the send is valid. */
export interface SendCheck {
  readonly issues: ReadonlyArray<InputIssue>
  /** The normalised send components: template order, then quick-reply payloads as given. */
  readonly components: ReadonlyArray<TemplateSendComponent>
  /** Header text, body and footer with placeholders replaced, joined by blank lines. */
  readonly text: string
}

/**
 * Checks `given` (the send's `components`; absent means none) against what the template
 * takes (see `expectedComponents`): every expected component once, with exactly one
 * parameter per slot, each of the slot's type and non-empty (text not blank, media with a
 * `link` or `id`). A component for a part without placeholders must have no parameters
 * (it is then dropped). A `quick_reply` button component is optional and must name a
 * quick-reply button and carry one non-empty `payload` parameter. Every problem is one
 * issue with code `template_parameters_mismatch` and the JSON path of the part at fault.
 */
export const checkSendComponents = (template: Template, given: unknown): SendCheck => {
  const issues: Array<InputIssue> = []
  const add = (field: string, message: string) => issues.push({ code: CODE, field, message })
  const expected = new Map(expectedComponents(template).map((entry) => [entry.key, entry]))
  const filled = new Map<string, ReadonlyArray<TemplateSendParameter>>()
  const quickReplies: Array<TemplateSendComponent> = []
  const seen = new Set<string>()
  if (!Array.isArray(given) && given != null) add(PATH, `${PATH} must be an array`)
  for (const [position, entry] of (Array.isArray(given) ? given : []).entries()) {
    const at = `${PATH}[${position}]`
    const key = isRecord(entry) ? keyOf(entry) : undefined
    if (!isRecord(entry) || key === undefined) {
      add(at, `${at} must be a header, body or button component (button with sub_type url or quick_reply and an index)`)
    } else if (seen.has(key)) {
      add(at, `${at} repeats the ${describe(key)} component`)
    } else if (key.startsWith("quick_reply:")) {
      seen.add(key)
      const reply = quickReplyOf(template, key, entry, at, add)
      if (reply !== undefined) quickReplies.push(reply)
    } else {
      seen.add(key)
      const parameters = checkParameters(expected.get(key), key, entry.parameters, at, add)
      if (parameters !== undefined) filled.set(key, parameters)
    }
  }
  for (const [key, entry] of expected) {
    if (!seen.has(key)) add(PATH, `${PATH} is missing the ${describe(key)} component with ${count(entry.slots.length)}`)
  }
  const components = [...expected.values()].flatMap(({ key, component }) => {
    const parameters = filled.get(key)
    return parameters === undefined ? [] : [{ ...component, parameters }]
  })
  return { issues, components: [...components, ...quickReplies], text: renderText(template, filled) }
}

/** The key of a given send component, matching `ExpectedComponent.key`; `undefined` when unknown. */
const keyOf = (entry: Record<string, unknown>): string | undefined => {
  const type = typeof entry.type === "string" ? entry.type.toLowerCase() : undefined
  if (type === "header" || type === "body") return type
  if (type !== "button") return undefined
  const subType = typeof entry.sub_type === "string" ? entry.sub_type.toLowerCase() : undefined
  const index = typeof entry.index === "number" || typeof entry.index === "string" ? String(entry.index) : ""
  if (!/^(?:0|[1-9][0-9]?)$/.test(index)) return undefined
  return subType === "url" ? `button:${index}` : subType === "quick_reply" ? `quick_reply:${index}` : undefined
}

const count = (n: number): string => `${n} parameter${n === 1 ? "" : "s"}`

const describe = (key: string): string => key.replace(/^button:/, "URL button ").replace(/^quick_reply:/, "quick-reply button ")

/** The checked parameters of one header, body or URL button component, or `undefined`. */
const checkParameters = (
  expected: ExpectedComponent | undefined,
  key: string,
  value: unknown,
  at: string,
  add: (field: string, message: string) => void
): ReadonlyArray<TemplateSendParameter> | undefined => {
  const parameters: ReadonlyArray<unknown> = Array.isArray(value) ? value : []
  const slots = expected?.slots ?? []
  if (!Array.isArray(value) && value != null) add(`${at}.parameters`, `${at}.parameters must be an array`)
  else if (parameters.length !== slots.length) {
    add(`${at}.parameters`, `the ${describe(key)} takes ${count(slots.length)}, one per placeholder; ${parameters.length} given`)
  } else {
    const checked = slots.map((slot, index) => parameterOf(slot.type, parameters[index], `${at}.parameters[${index}]`, add))
    if (checked.every((parameter) => parameter !== undefined)) return expected === undefined ? undefined : checked
  }
  return undefined
}

/** One filled parameter of a slot type, or `undefined` after adding the issue. */
const parameterOf = (
  type: TemplateSlot["type"],
  value: unknown,
  at: string,
  add: (field: string, message: string) => void
): TemplateSendParameter | undefined => {
  const record = isRecord(value) ? value : {}
  if (record.type !== type) return void add(at, `${at} must be a parameter of type ${type}`)
  if (type === "text") {
    const text = record.text
    if (typeof text === "string" && text.length > MAX_PARAMETER_LENGTH.text) {
      return void add(`${at}.text`, `${at}.text must be at most ${MAX_PARAMETER_LENGTH.text} characters`)
    }
    if (typeof text === "string" && text.trim() !== "") return { type, text }
    return void add(`${at}.text`, `${at}.text must not be empty`)
  }
  const media = isRecord(record[type]) ? (record[type] as Record<string, unknown>) : {}
  for (const field of ["link", "id"] as const) {
    const given = media[field]
    if (typeof given === "string" && given.length > MAX_PARAMETER_LENGTH[field]) {
      return void add(`${at}.${type}.${field}`, `${at}.${type}.${field} must be at most ${MAX_PARAMETER_LENGTH[field]} characters`)
    }
  }
  const filled = (field: "link" | "id") => typeof media[field] === "string" && (media[field] as string).trim() !== ""
  if (filled("link")) return { type, [type]: { link: media.link as string } } as TemplateSendParameter
  if (filled("id")) return { type, [type]: { id: media.id as string } } as TemplateSendParameter
  return void add(`${at}.${type}.link`, `${at}.${type} needs a link (or a media id)`)
}

/**
 * The longest value a send's parameter may carry, in characters (docs/templates-and-replies.md
 * "Sending a template"): a text parameter as long as a template body, a media link as long as a media
 * send's URL, a media id or a quick-reply payload 1024.
 */
export const MAX_PARAMETER_LENGTH = { text: 1024, link: 2048, id: 1024, payload: 1024 } as const

/** A quick-reply button component with its payload, or `undefined` after adding the issue. */
const quickReplyOf = (
  template: Template,
  key: string,
  entry: Record<string, unknown>,
  at: string,
  add: (field: string, message: string) => void
): TemplateSendComponent | undefined => {
  const index = key.slice("quick_reply:".length)
  const buttons = componentsOf(template).find((component) => component.type === "BUTTONS")
  const button = buttons?.type === "BUTTONS" ? buttons.buttons[Number(index)] : undefined
  if (button?.type !== "QUICK_REPLY") return void add(`${at}.index`, `the template has no quick-reply button ${index}`)
  const parameters = Array.isArray(entry.parameters) ? entry.parameters : []
  const [parameter] = parameters
  const payload = isRecord(parameter) && parameter.type === "payload" ? parameter.payload : undefined
  if (parameters.length !== 1 || typeof payload !== "string" || payload.trim() === "") {
    return void add(`${at}.parameters`, `a quick-reply button takes one parameter {type: "payload", payload}, not empty`)
  }
  if (payload.length > MAX_PARAMETER_LENGTH.payload) {
    return void add(`${at}.parameters[0].payload`, `the payload must be at most ${MAX_PARAMETER_LENGTH.payload} characters`)
  }
  return { type: "button", sub_type: "quick_reply", index, parameters: [{ type: "payload", payload }] }
}

/** The message text: header text, body and footer with placeholders replaced. */
const renderText = (template: Template, filled: ReadonlyMap<string, ReadonlyArray<TemplateSendParameter>>): string => {
  const values = (key: string) => (filled.get(key) ?? []).map((parameter) => (parameter.type === "text" ? parameter.text : ""))
  const parts = componentsOf(template).flatMap((component) => {
    if (component.type === "HEADER") return component.format === "TEXT" ? [render(component.text, values("header"))] : []
    if (component.type === "BODY") return [render(component.text, values("body"))]
    if (component.type === "FOOTER") return [component.text]
    return []
  })
  return parts.join("\n\n")
}

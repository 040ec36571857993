import type { Contact } from "../model/contacts.js"
import type { InputIssue } from "../model/commonErrors.js"
import { isRecord } from "../internal/validation.js"

// Per-recipient placeholders of a broadcast's template parameters (docs/broadcasts.md
// "Placeholders"): `{{contact.first_name}}`, `{{contact.last_name}}`, `{{contact.phone}}`,
// `{{contact.email}}`, each with an optional fallback after `|` (`{{contact.first_name|there}}`),
// anywhere in a parameter's `text`. Nothing else inside `{{…}}` starting with `contact.`
// is accepted; other text is left as it is.

/** The contact fields a placeholder may name. */
export const PLACEHOLDER_FIELDS = ["first_name", "last_name", "phone", "email"] as const

/** A placeholder field. */
export type PlaceholderField = (typeof PLACEHOLDER_FIELDS)[number]

/** Any `{{ contact.… }}`: group 1 the field, group 2 the fallback (without its `|`), if any. */
const PLACEHOLDER = /\{\{\s*contact\.([^}|\s]*)\s*(?:\|([^}]*))?\}\}/g

/** The longest fallback, in characters. */
const MAX_FALLBACK_LENGTH = 255

/**
 * The problems of the placeholders in a broadcast's send components (`template.components`
 * as given): one issue (code `invalid_placeholder`, the parameter's JSON path) per text
 * that names an unknown contact field or carries a fallback over 255 characters. Never
 * recurses deeper than components → parameters.
 */
export const placeholderIssues = (components: unknown): ReadonlyArray<InputIssue> => {
  const issues: Array<InputIssue> = []
  forEachText(components, (text, field) => {
    for (const match of text.matchAll(PLACEHOLDER)) {
      const name = match[1] ?? ""
      if (!(PLACEHOLDER_FIELDS as ReadonlyArray<string>).includes(name)) {
        issues.push({
          code: "invalid_placeholder",
          field,
          message: `${field} names contact.${name}: a placeholder takes one of ${PLACEHOLDER_FIELDS.map((f) => `contact.${f}`).join(", ")}`
        })
      } else if ((match[2] ?? "").length > MAX_FALLBACK_LENGTH) {
        issues.push({ code: "invalid_placeholder", field, message: `${field} has a fallback longer than ${MAX_FALLBACK_LENGTH} characters` })
      }
    }
  })
  return issues
}

/**
 * The components with every placeholder filled from `contact` (the field's value, else its
 * fallback), or the first placeholder that has neither (`missing`: its field). A field
 * whose value is blank counts as empty. The components are copied, never changed.
 */
export const fillPlaceholders = (
  components: ReadonlyArray<unknown>,
  contact: Pick<Contact, PlaceholderField>
): { readonly components: ReadonlyArray<unknown> } | { readonly missing: PlaceholderField } => {
  let missing: PlaceholderField | undefined
  const fill = (text: string): string =>
    text.replace(PLACEHOLDER, (_whole, name: string, fallback: string | undefined) => {
      const value = contact[name as PlaceholderField]
      if (typeof value === "string" && value.trim() !== "") return value
      if (fallback !== undefined && fallback.trim() !== "") return fallback
      missing ??= name as PlaceholderField
      return ""
    })
  const filled = components.map((component) => {
    if (!isRecord(component) || !Array.isArray(component.parameters)) return component
    return {
      ...component,
      parameters: component.parameters.map((parameter: unknown) =>
        isRecord(parameter) && typeof parameter.text === "string" ? { ...parameter, text: fill(parameter.text) } : parameter
      )
    }
  })
  return missing === undefined ? { components: filled } : { missing }
}

/** Calls `visit` with each parameter `text` of the components and its JSON path. */
const forEachText = (components: unknown, visit: (text: string, field: string) => void): void => {
  if (!Array.isArray(components)) return
  components.forEach((component: unknown, index) => {
    if (!isRecord(component) || !Array.isArray(component.parameters)) return
    component.parameters.forEach((parameter: unknown, position) => {
      if (isRecord(parameter) && typeof parameter.text === "string") {
        visit(parameter.text, `template.components[${index}].parameters[${position}].text`)
      }
    })
  })
}

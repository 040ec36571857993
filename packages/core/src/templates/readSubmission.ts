import type { CountryCode } from "libphonenumber-js"
import { isRecord, type IssueCollector } from "../internal/validation.js"
import type { TemplateContent } from "../model/templates.js"
import { placeholdersOf } from "./placeholders.js"
import { readTemplate } from "./readTemplate.js"

// The rules of a template submitted to Meta through `POST /templates`
// (docs/templates-and-replies.md "Submitting and deleting"): the template rules of
// `Templates.create`, plus what this version submits: MARKETING or UTILITY only, no media
// header, and one example per placeholder (Meta refuses a template without them).

/** The categories a submission may have. */
const SUBMITTED_CATEGORIES = ["MARKETING", "UTILITY"] as const
const MEDIA_FORMATS = ["IMAGE", "VIDEO", "DOCUMENT"]

/**
 * Reads a template to submit (`{name, language, category, components}`, any `status`
 * ignored: a submission starts `PENDING`), adding an issue to `collector` for every broken
 * rule, each named by its JSON path: the rules of `readTemplate`, then `category`
 * `MARKETING` or `UTILITY` only, no `IMAGE`/`VIDEO`/`DOCUMENT` header
 * (`components[i].format`), and the examples Meta requires: `example.header_text` of a
 * text header with `{{1}}`, `example.body_text` of a body with placeholders,
 * `buttons[j].example` of a URL button ending in `{{1}}`. The content is that of a template
 * written by hand (no account, no Meta id); meaningful only when no issue was added.
 */
export const readSubmission = (
  collector: IssueCollector,
  input: Record<string, unknown>,
  defaultCountry: CountryCode | undefined
): TemplateContent => {
  const content = readTemplate(collector, "", { ...input, status: "PENDING" }, defaultCountry)
  const category = typeof input.category === "string" ? input.category.trim().toUpperCase() : ""
  if (category === "AUTHENTICATION") {
    collector.add(
      "invalid_format",
      "category",
      `category must be one of ${SUBMITTED_CATEGORIES.join(", ")}: AUTHENTICATION templates cannot be submitted through Switchboard`
    )
  }
  if (Array.isArray(input.components)) {
    input.components.forEach((component: unknown, index) => {
      if (isRecord(component)) checkSubmittedComponent(collector, `components[${index}]`, component)
    })
  }
  return content
}

const upper = (value: unknown): string => (typeof value === "string" ? value.trim().toUpperCase() : "")
const countOf = (value: unknown): number => (typeof value === "string" ? placeholdersOf(value).count : 0)
const missing = (value: unknown): boolean => value === undefined || value === null

/** The submission's own rules of one component (its shape is `readTemplate`'s to check). */
const checkSubmittedComponent = (collector: IssueCollector, at: string, component: Record<string, unknown>): void => {
  const example = isRecord(component.example) ? component.example : undefined
  switch (upper(component.type)) {
    case "HEADER": {
      const format = upper(component.format)
      if (MEDIA_FORMATS.includes(format)) {
        collector.add(
          "invalid_format",
          `${at}.format`,
          `${at}.format: a ${format} header cannot be submitted through Switchboard; use a TEXT header or none`
        )
      } else if (format === "TEXT" && countOf(component.text) > 0 && missing(example?.header_text)) {
        collector.add("required", `${at}.example.header_text`, `${at}.example.header_text is required: Meta needs an example for {{1}}`)
      }
      return
    }
    case "BODY": {
      const count = countOf(component.text)
      if (count > 0 && missing(example?.body_text)) {
        collector.add(
          "required",
          `${at}.example.body_text`,
          `${at}.example.body_text is required: Meta needs one example per placeholder, as [[${count} values]]`
        )
      }
      return
    }
    case "BUTTONS": {
      if (!Array.isArray(component.buttons)) return
      component.buttons.forEach((button: unknown, index) => {
        if (isRecord(button) && upper(button.type) === "URL" && countOf(button.url) > 0 && missing(button.example)) {
          const field = `${at}.buttons[${index}].example`
          collector.add("required", field, `${field} is required: Meta needs an example URL for {{1}}`)
        }
      })
      return
    }
  }
}

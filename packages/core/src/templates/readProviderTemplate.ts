import { IssueCollector, isRecord } from "../internal/validation.js"
import type { TemplateContent, TemplateProblem } from "../model/templates.js"
import { readTemplate } from "./readTemplate.js"

// Reading one template of Meta's template list (`GET /{waba_id}/message_templates`, fields
// `name, language, status, category, components, rejected_reason, id`) into what the store
// keeps of it (docs/templates-and-replies.md "Templates from Meta").

/**
 * Longest `rejected_reason` kept, in characters; a longer reason is cut.
 *
 * @category templates
 */
export const MAX_REJECTED_REASON_LENGTH = 1024

/**
 * A template from Meta as the store writes it: its content (the WhatsApp Business Account
 * `waba_id`, Meta's id as `provider_template_id`, the `problems` Switchboard's rules found)
 * and Meta's `rejected_reason` (`null` for Meta's `"NONE"` or none).
 *
 * @category templates
 */
export interface ProviderTemplateContent extends TemplateContent {
  readonly rejected_reason: string | null
}

/**
 * What {@link readProviderTemplate} read: the `content` to store and its `problems` (the
 * same list as `content.problems`), empty when Switchboard's rules accept the template.
 *
 * @category templates
 */
export interface ProviderTemplateRead {
  readonly content: ProviderTemplateContent
  readonly problems: ReadonlyArray<TemplateProblem>
}

/**
 * Reads one entry of Meta's template list (`{name, language, status, category, components,
 * rejected_reason, id}`, as Meta answers it) of the WhatsApp Business Account `wabaId`.
 * Never fails: the template is checked with the rules of `Templates.create`
 * (docs/templates-and-replies.md "Template rules") and every rule it breaks becomes a
 * problem `{path, message}` (`components[2].format`, …), so one odd template never stops a
 * sync; a template with problems is kept and never sent.
 *
 * - Without problems, `components` are the checked, normalised components (as
 *   `Templates.create` stores them); with problems, Meta's `components` exactly as given
 *   (`[]` when Meta's is not an array).
 * - `status` and `category` as Meta says when Switchboard knows them; an unknown one is a
 *   problem, stored as `PENDING` or `UTILITY`.
 * - `provider_template_id` is Meta's `id` (a number read as its text), `null` when absent.
 * - `rejected_reason` trimmed and cut to {@link MAX_REJECTED_REASON_LENGTH}; Meta's `"NONE"`,
 *   an empty or absent reason is `null`.
 * - `name` and `language` trimmed; when either is missing (`""`) the template has no
 *   identity and cannot be stored: the caller skips it (its problems say why).
 *
 * @category templates
 * @example
 * import { readProviderTemplate } from "@switchboard/core"
 *
 * const { content, problems } = readProviderTemplate(
 *   { id: "1407680676729941", name: "order_update", language: "en_US", status: "APPROVED", category: "UTILITY",
 *     rejected_reason: "NONE", components: [{ type: "BODY", text: "Hi {{1}}", example: { body_text: [["Ada"]] } }] },
 *   "102290129340398"
 * )
 * // content.waba_id === "102290129340398", content.rejected_reason === null, problems.length === 0
 */
export const readProviderTemplate = (raw: unknown, wabaId: string): ProviderTemplateRead => {
  const record = isRecord(raw) ? raw : {}
  const collector = new IssueCollector()
  if (!isRecord(raw)) collector.add("invalid_type", "", "the template must be an object")
  const read = readTemplate(
    collector,
    "",
    {
      name: record.name,
      language: record.language,
      category: record.category,
      status: record.status,
      components: record.components
    },
    undefined
  )
  const problems: ReadonlyArray<TemplateProblem> = collector.issues.map((issue) => ({
    path: issue.field ?? "",
    message: issue.message
  }))
  const content: ProviderTemplateContent = {
    ...read,
    waba_id: wabaId,
    provider_template_id: idOf(record.id),
    // Meta's components are JSON objects; with problems they are kept exactly as given.
    components: problems.length === 0 ? read.components : Array.isArray(record.components) ? (record.components as TemplateContent["components"]) : [],
    problems,
    rejected_reason: providerReasonOf(record.rejected_reason)
  }
  return { content, problems }
}

/**
 * Meta's reason for a template's status as stored: trimmed, cut to
 * {@link MAX_REJECTED_REASON_LENGTH} characters; `"NONE"`, an empty or absent reason is
 * `null`.
 *
 * @category templates
 */
export const providerReasonOf = (value: unknown): string | null => {
  if (typeof value !== "string") return null
  const reason = value.trim()
  return reason === "" || reason === "NONE" ? null : reason.slice(0, MAX_REJECTED_REASON_LENGTH)
}

/** Meta's id of a template: a non-empty string or a number, as text; else `null`. */
const idOf = (value: unknown): string | null =>
  typeof value === "string" && value.trim() !== "" ? value.trim() : typeof value === "number" && Number.isFinite(value) ? String(value) : null

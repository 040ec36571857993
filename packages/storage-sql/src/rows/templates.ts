import { type BasicReply, type BasicReplyId, nameKey, type Template, type TemplateContent, type TemplateId } from "@switchboard/core"
import type { SqlValues } from "../SqlDialect.js"
import type { SqlJson } from "./values.js"

// Rows of `templates` and `basic_replies`, their parameters and their decoding into core's
// records; the casts are safe, every value was written from core's types.

/**
 * A row of `templates` (every column but `organization_id` and `name_key`).
 *
 * @category rows
 */
export interface TemplateRow {
  readonly uuid: string
  readonly waba_id: string | null
  readonly provider_template_id: string | null
  readonly name: string
  readonly language: string
  readonly category: Template["category"]
  readonly status: Template["status"]
  readonly rejected_reason: string | null
  readonly components: SqlJson
  readonly problems: SqlJson
  readonly created_at: string
  readonly updated_at: string
}

/**
 * The columns of a {@link TemplateRow}, in `SELECT` order.
 *
 * @category statements
 */
export const TEMPLATE_COLUMNS =
  "uuid, waba_id, provider_template_id, name, language, category, status, rejected_reason, components, problems, created_at, updated_at"

/**
 * The content columns in `INSERT`/`UPDATE` order: waba_id, provider_template_id, name,
 * name_key, language, category, status, components (JSON text), problems (JSON text).
 *
 * @category parameters
 */
export const templateContentValues = (content: TemplateContent) =>
  [
    content.waba_id,
    content.provider_template_id,
    content.name,
    nameKey(content.name),
    content.language,
    content.category,
    content.status,
    JSON.stringify(content.components),
    JSON.stringify(content.problems)
  ] as const

/**
 * The template record a write produced: `content` (any `rejected_reason` it carried
 * replaced by the stored one) with its uuid and times.
 *
 * @category rows
 */
export const writtenTemplate = (
  uuid: TemplateId,
  content: TemplateContent & { readonly rejected_reason?: string | null },
  rejected_reason: string | null,
  created_at: string,
  updated_at: string
): Template => ({
  uuid,
  waba_id: content.waba_id,
  provider_template_id: content.provider_template_id,
  name: content.name,
  language: content.language,
  category: content.category,
  status: content.status,
  rejected_reason,
  components: content.components,
  problems: content.problems,
  created_at,
  updated_at
})

/**
 * A row of `basic_replies` (every column but `organization_id` and `trigger_key`).
 *
 * @category rows
 */
export type ReplyRow = Omit<BasicReply, "uuid"> & { readonly uuid: string }

/**
 * The columns of a {@link ReplyRow} (`trigger` is an SQL keyword: quoted).
 *
 * @category statements
 */
export const REPLY_COLUMN_NAMES: ReadonlyArray<string> = ["uuid", "name", `"trigger"`, "response", "created_at", "updated_at"]

/**
 * A reply record from its row.
 *
 * @category decoders
 */
export const decodeReply = (row: ReplyRow): BasicReply => ({
  uuid: row.uuid as BasicReplyId,
  name: row.name,
  trigger: row.trigger,
  response: row.response,
  created_at: row.created_at,
  updated_at: row.updated_at
})

/**
 * The template record of a row, for one dialect's values.
 *
 * @category decoders
 */
export const templateDecoderOf =
  ({ readJson }: SqlValues) =>
  (row: TemplateRow): Template => ({
    uuid: row.uuid as TemplateId,
    waba_id: row.waba_id,
    provider_template_id: row.provider_template_id,
    name: row.name,
    language: row.language,
    category: row.category,
    status: row.status,
    rejected_reason: row.rejected_reason,
    components: readJson(row.components) as Template["components"],
    problems: readJson(row.problems) as Template["problems"],
    created_at: row.created_at,
    updated_at: row.updated_at
  })

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
  readonly name: string
  readonly language: string
  readonly category: Template["category"]
  readonly status: Template["status"]
  readonly rejected_reason: string | null
  readonly components: SqlJson
  readonly created_at: string
  readonly updated_at: string
}

/**
 * The columns of a {@link TemplateRow}, in `SELECT` order.
 *
 * @category statements
 */
export const TEMPLATE_COLUMNS = "uuid, name, language, category, status, rejected_reason, components, created_at, updated_at"

/**
 * The content columns in `INSERT`/`UPDATE` order: name, name_key, language, category,
 * status, components (JSON text).
 *
 * @category parameters
 */
export const templateContentValues = (content: TemplateContent) =>
  [content.name, nameKey(content.name), content.language, content.category, content.status, JSON.stringify(content.components)] as const

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
    name: row.name,
    language: row.language,
    category: row.category,
    status: row.status,
    rejected_reason: row.rejected_reason,
    components: readJson(row.components) as Template["components"],
    created_at: row.created_at,
    updated_at: row.updated_at
  })

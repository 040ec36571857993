import { Schema } from "effect"

/**
 * Identifier of a label (contact tag); request bodies call it `tag_uuid`.
 *
 * @category models
 */
export const LabelId = Schema.UUID.pipe(Schema.brand("LabelId"))
/** @category models */
export type LabelId = typeof LabelId.Type

/**
 * A label (contact tag), docs/contacts.md "Records": `color` is a lowercase CSS hex color
 * (`#rgb` or `#rrggbb`), `contacts_count` the number of contacts carrying it now.
 *
 * @category models
 */
export const Label = Schema.Struct({
  uuid: LabelId,
  name: Schema.String,
  color: Schema.String,
  contacts_count: Schema.Int,
  created_at: Schema.String,
  updated_at: Schema.String
})
/** @category models */
export type Label = typeof Label.Type

/**
 * A label as embedded in a contact record.
 *
 * @category models
 */
export interface LabelSummary {
  readonly uuid: LabelId
  readonly name: string
  readonly color: string
}

/** The color of a label created without one (docs/contacts.md "Rules"). */
export const DEFAULT_LABEL_COLOR = "#808080"

import { Schema } from "effect"

/**
 * One problem with an input: a stable snake_case `code` (DESIGN §3b "Validation codes"),
 * a human `message`, and the JSON path of the offending `field` when there is one.
 *
 * @category errors
 */
export const InputIssue = Schema.Struct({
  code: Schema.String,
  message: Schema.String,
  field: Schema.optional(Schema.String)
})
/** @category errors */
export type InputIssue = typeof InputIssue.Type

/**
 * Input broke a domain rule (HTTP 400). `issues` lists every problem found, not only the
 * first.
 *
 * @category errors
 */
export class InvalidInput extends Schema.TaggedError<InvalidInput>()("InvalidInput", {
  issues: Schema.Array(InputIssue)
}) {
  override get message(): string {
    return this.issues.map((issue) => issue.message).join("; ")
  }
}

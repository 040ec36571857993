import { Schema } from "effect"
import { InputIssue } from "./commonErrors.js"

/**
 * Another template of the organization has this name and language code
 * (docs/templates-and-replies.md "Template rules": identity is name + language code). HTTP 400 `template_name_taken`.
 *
 * @category errors
 */
export class TemplateNameTaken extends Schema.TaggedError<TemplateNameTaken>()("TemplateNameTaken", {
  name: Schema.String,
  language: Schema.String
}) {
  override get message(): string {
    return `A template named '${this.name}' in language '${this.language}' already exists`
  }
}

/**
 * A send names a template (name + language code) the organization does not have
 * (docs/templates-and-replies.md "Error codes"). HTTP 400 `template_not_found`.
 *
 * @category errors
 */
export class TemplateNotFound extends Schema.TaggedError<TemplateNotFound>()("TemplateNotFound", {
  name: Schema.String,
  language: Schema.String
}) {
  override get message(): string {
    return `No template named '${this.name}' in language '${this.language}'`
  }
}

/**
 * A send names a template whose status is not `APPROVED` (docs/templates-and-replies.md
 * "Error codes"). HTTP 400 `template_not_approved`.
 *
 * @category errors
 */
export class TemplateNotApproved extends Schema.TaggedError<TemplateNotApproved>()("TemplateNotApproved", {
  name: Schema.String,
  language: Schema.String,
  status: Schema.String
}) {
  override get message(): string {
    return `Template '${this.name}' (${this.language}) is ${this.status}, not APPROVED`
  }
}

/**
 * The parameters of a send do not fill the template's placeholders one for one: a
 * component's parameter count differs from its placeholders, a slot is missing or empty,
 * or a parameter has the wrong type (docs/templates-and-replies.md).
 * `issues` lists every problem with its JSON path (`template.components[1].parameters[0]`).
 * HTTP 400 `template_parameters_mismatch`.
 *
 * @category errors
 */
export class TemplateParametersMismatch extends Schema.TaggedError<TemplateParametersMismatch>()(
  "TemplateParametersMismatch",
  { issues: Schema.Array(InputIssue) }
) {
  override get message(): string {
    const [first] = this.issues
    return this.issues.length === 1 && first !== undefined
      ? first.message
      : "The template parameters do not match the template's placeholders"
  }
}

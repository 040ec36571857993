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

/**
 * The template exists but Switchboard cannot send it: Meta gave it with something
 * Switchboard's template rules refuse (a component type it does not know, a location
 * header…), listed in its `problems` (docs/templates-and-replies.md "Templates from
 * Meta"). `path` and `problem` are its first problem. Sends, `GET
 * /templates/{uuid}/payload` and broadcasts refuse it: HTTP 400 `template_unsupported`.
 *
 * @category errors
 */
export class TemplateUnsupported extends Schema.TaggedError<TemplateUnsupported>()("TemplateUnsupported", {
  name: Schema.String,
  language: Schema.String,
  path: Schema.String,
  problem: Schema.String
}) {
  override get message(): string {
    return `Template '${this.name}' (${this.language}) cannot be sent: ${this.problem}`
  }
}

/**
 * A change to a template that came from Meta (it has Meta's id or a WhatsApp Business
 * Account): Meta owns its content, so it is changed there and synchronised, never edited
 * here (docs/templates-and-replies.md "Templates from Meta"). HTTP 409
 * `template_managed_by_meta`.
 *
 * @category errors
 */
export class TemplateManagedByMeta extends Schema.TaggedError<TemplateManagedByMeta>()("TemplateManagedByMeta", {
  uuid: Schema.String,
  name: Schema.String,
  language: Schema.String
}) {
  override get message(): string {
    return `Template '${this.name}' (${this.language}) comes from Meta: change it in WhatsApp Manager, not here`
  }
}

/**
 * A call to Meta for a template of the WhatsApp Business Account `waba_id` (deleting it:
 * `DELETE /templates/{uuid}`) found no `active` channel of the organization on that
 * account, so no access token to call with (docs/templates-and-replies.md "Submitting and
 * deleting"); nothing was changed. HTTP 409 `no_channel_for_account`.
 *
 * @category errors
 */
export class NoChannelForAccount extends Schema.TaggedError<NoChannelForAccount>()("NoChannelForAccount", {
  waba_id: Schema.String
}) {
  override get message(): string {
    return `The organization has no active channel on the WhatsApp Business Account ${this.waba_id}: add or resume one (POST /channels) to reach its templates at Meta`
  }
}

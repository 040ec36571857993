import { Schema } from "effect"

/**
 * One problem with an input: a stable snake_case `code` (docs/errors.md "Validation (per field)"),
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

/**
 * A record a request names does not exist in the organization (or belongs to another
 * one, which is the same to the caller): HTTP 404 `not_found`, one error item per
 * missing uuid (docs/contacts.md "Rules").
 *
 * @category errors
 */
export class RecordNotFound extends Schema.TaggedError<RecordNotFound>()("RecordNotFound", {
  missing: Schema.Array(
    Schema.Struct({
      resource: Schema.Literal("contact", "group", "label", "basic_reply", "template", "chat", "message", "channel", "webhook_endpoint", "webhook_delivery", "broadcast", "media"),
      uuid: Schema.String,
      field: Schema.optional(Schema.String)
    })
  )
}) {
  override get message(): string {
    const [first] = this.missing
    return this.missing.length === 1 && first !== undefined
      ? `No ${first.resource.replace("_", " ")} with uuid ${first.uuid}`
      : `${this.missing.length} records not found`
  }
}

/**
 * A plan limit blocks the action (HTTP 403, docs/contacts.md "Plan limits"): `plan_limit` names it,
 * `limit` is its value, `usage` the current count, `requested` how many would be added.
 * HTTP 403 `contacts_limit_reached`, `label_limit_reached` or `media_bytes_limit_reached`
 * (docs/media.md "Limits": `usage` and `requested` in bytes).
 *
 * @category errors
 */
export class PlanLimitExceeded extends Schema.TaggedError<PlanLimitExceeded>()("PlanLimitExceeded", {
  plan_limit: Schema.Literal("contacts_limit", "label_limit", "media_bytes_limit"),
  limit: Schema.Int,
  usage: Schema.Int,
  requested: Schema.Int
}) {
  override get message(): string {
    const noun = this.plan_limit === "contacts_limit" ? "contacts" : this.plan_limit === "label_limit" ? "labels" : "stored media bytes"
    return `Plan limit reached: ${noun} limit is ${this.limit}, ${this.usage} in use, ${this.requested} more requested`
  }
}

/**
 * The {@link PlanLimitExceeded} of `contacts_limit` for a store's `LimitExceeded` outcome
 * (`ContactRepository.importBulk`): its limit, usage and requested count.
 *
 * @category errors
 */
export const contactsLimitExceeded = (outcome: {
  readonly limit: number
  readonly usage: number
  readonly requested: number
}): PlanLimitExceeded =>
  new PlanLimitExceeded({
    plan_limit: "contacts_limit",
    limit: outcome.limit,
    usage: outcome.usage,
    requested: outcome.requested
  })

/**
 * A unique value is already used by another record of the organization: a contact's
 * phone (`phone_taken`), a label or group name (`label_name_taken`, `group_name_taken`),
 * a basic-reply trigger (`trigger_taken`). HTTP 400.
 *
 * @category errors
 */
export class UniqueValueTaken extends Schema.TaggedError<UniqueValueTaken>()("UniqueValueTaken", {
  code: Schema.Literal("phone_taken", "label_name_taken", "group_name_taken", "trigger_taken"),
  field: Schema.String,
  value: Schema.String
}) {
  override get message(): string {
    return `${this.field} '${this.value}' is already used by another record`
  }
}

import { Schema } from "effect"

/**
 * A template sync of the WhatsApp Business Account `waba_id` could not read Meta's list
 * (docs/templates-and-replies.md "Templates from Meta"): `reason` is Meta's message or what
 * went wrong (never a token), `provider_code` Meta's error code when it gave one. Nothing
 * was changed by the failed page; the error is kept on the account's sync record. HTTP 502
 * `template_sync_failed`.
 *
 * @category errors
 */
export class TemplateSyncFailed extends Schema.TaggedError<TemplateSyncFailed>()("TemplateSyncFailed", {
  waba_id: Schema.String,
  reason: Schema.String,
  provider_code: Schema.NullOr(Schema.String)
}) {
  override get message(): string {
    return `Meta's templates of WhatsApp Business Account ${this.waba_id} could not be read: ${this.reason}${
      this.provider_code === null ? "" : ` (code ${this.provider_code})`
    }`
  }
}

/**
 * Another sync of the same WhatsApp Business Account holds its sync record (the server's
 * loop, or another call): one runs at a time (docs/templates-and-replies.md "Templates
 * from Meta"). HTTP 409 `sync_in_progress`.
 *
 * @category errors
 */
export class TemplateSyncInProgress extends Schema.TaggedError<TemplateSyncInProgress>()("TemplateSyncInProgress", {
  waba_id: Schema.String
}) {
  override get message(): string {
    return `A template sync of WhatsApp Business Account ${this.waba_id} is already running; try again when it has ended`
  }
}

import { Schema } from "effect"
import type {
  ApiAccessNotAllowed,
  ApiKeyInvalid,
  ApiKeyNotFound,
  OrganizationNotFound,
  SubscriptionInactive
} from "./organizations/errors.js"
import type { PlanLimitExceeded, RecordNotFound, UniqueValueTaken } from "./common/errors.js"
import type {
  ChannelLimitReached,
  ChannelPhoneNumberIdTaken,
  ChannelVerificationFailed,
  SecretKeyMismatch,
  SecretKeyMissing
} from "./channels/errors.js"
import type { AudienceTooLarge, BroadcastNotCancellable, EmptyAudience } from "./broadcasts/errors.js"
import type { ChatStatusUnchanged } from "./chats/errors.js"
import type { MessageNotCancellable, MessageNotRetryable, OutsideCustomerServiceWindow } from "./messaging/errors.js"
import type { RateLimited, RateLimitUnavailable } from "./rate-limits/errors.js"
import type { StorageError } from "./storage/errors.js"
import type {
  TemplateNameTaken,
  TemplateNotApproved,
  TemplateNotFound,
  TemplateParametersMismatch
} from "./templates/errors.js"
import type { WebhookUrlRefused } from "./webhooks/addressSafety.js"
import type { WebhookEndpointDisabled, WebhookEndpointLimitReached } from "./webhooks/errors.js"

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
 * Every failure a domain service can produce. The http-adapter maps each `_tag` to an HTTP
 * status in one table typed over this union, so adding an error here without mapping it
 * fails to compile (docs/errors.md "Where the codes come from").
 *
 * @category errors
 */
export type DomainError =
  | InvalidInput
  | OrganizationNotFound
  | ApiKeyNotFound
  | ApiKeyInvalid
  | SubscriptionInactive
  | ApiAccessNotAllowed
  | RecordNotFound
  | PlanLimitExceeded
  | RateLimited
  | RateLimitUnavailable
  | UniqueValueTaken
  | ChatStatusUnchanged
  | TemplateNameTaken
  | TemplateNotFound
  | TemplateNotApproved
  | TemplateParametersMismatch
  | ChannelPhoneNumberIdTaken
  | ChannelLimitReached
  | ChannelVerificationFailed
  | SecretKeyMissing
  | SecretKeyMismatch
  | WebhookUrlRefused
  | WebhookEndpointLimitReached
  | WebhookEndpointDisabled
  | MessageNotRetryable
  | MessageNotCancellable
  | OutsideCustomerServiceWindow
  | EmptyAudience
  | AudienceTooLarge
  | BroadcastNotCancellable
  | StorageError

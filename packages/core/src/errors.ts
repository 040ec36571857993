import type {
  ApiAccessNotAllowed,
  ApiKeyInvalid,
  ApiKeyNotFound,
  ApiKeyNotRotatable,
  OrganizationNotFound,
  SubscriptionInactive
} from "./model/organizationErrors.js"
import type { InvalidInput, PlanLimitExceeded, RecordNotFound, UniqueValueTaken } from "./model/commonErrors.js"
import type {
  ChannelLimitReached,
  ChannelPhoneNumberIdTaken,
  ChannelVerificationFailed,
  SecretKeyMismatch,
  SecretKeyMissing
} from "./model/channelErrors.js"
import type { AudienceTooLarge, BroadcastNotCancellable, EmptyAudience } from "./model/broadcastErrors.js"
import type { ChatStatusUnchanged } from "./model/chatErrors.js"
import type { MessageNotCancellable, MessageNotReactable, MessageNotRetryable, OutsideCustomerServiceWindow } from "./model/messagingErrors.js"
import type { RateLimited, RateLimitUnavailable } from "./model/rateLimitErrors.js"
import type {
  MediaLinkRefused,
  MediaNotReady,
  MediaTooLarge,
  MediaUnavailable,
  RangeNotSatisfiable,
  UnsupportedMediaType
} from "./model/mediaErrors.js"
import type { StorageError } from "./storage/errors.js"
import type {
  NoChannelForAccount,
  TemplateManagedByMeta,
  TemplateNameTaken,
  TemplateNotApproved,
  TemplateNotFound,
  TemplateParametersMismatch,
  TemplateUnsupported
} from "./model/templateErrors.js"
import type { TemplateSyncFailed, TemplateSyncInProgress } from "./model/templateSyncErrors.js"
import type {
  WebhookEndpointDisabled,
  WebhookEndpointLimitReached,
  WebhookRotationInProgress,
  WebhookUrlRefused
} from "./model/webhookErrors.js"

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
  | ApiKeyNotRotatable
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
  | TemplateUnsupported
  | TemplateManagedByMeta
  | NoChannelForAccount
  | TemplateSyncFailed
  | TemplateSyncInProgress
  | ChannelPhoneNumberIdTaken
  | ChannelLimitReached
  | ChannelVerificationFailed
  | SecretKeyMissing
  | SecretKeyMismatch
  | WebhookUrlRefused
  | WebhookEndpointLimitReached
  | WebhookEndpointDisabled
  | WebhookRotationInProgress
  | MessageNotRetryable
  | MessageNotCancellable
  | MessageNotReactable
  | OutsideCustomerServiceWindow
  | EmptyAudience
  | AudienceTooLarge
  | BroadcastNotCancellable
  | UnsupportedMediaType
  | MediaTooLarge
  | MediaNotReady
  | MediaUnavailable
  | RangeNotSatisfiable
  | MediaLinkRefused
  | StorageError

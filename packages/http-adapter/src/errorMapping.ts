import type { DomainError } from "@switchboard/core"
import { failureResponse, type ApiResponse } from "./envelope.js"

type ErrorOf<Tag extends DomainError["_tag"]> = Extract<DomainError, { readonly _tag: Tag }>

/**
 * The one table from domain error to HTTP response (docs/errors.md "Where the codes come from"). Typed over every `_tag`
 * of core's `DomainError`: a tag without an entry fails to compile. A `StorageError`
 * becomes a 500 that exposes nothing of its cause.
 *
 * @category errors
 */
export const domainErrorResponses: {
  readonly [Tag in DomainError["_tag"]]: (error: ErrorOf<Tag>) => ApiResponse
} = {
  InvalidInput: (error) =>
    failureResponse(
      400,
      "invalid_input",
      error.issues.length === 1 ? (error.issues[0]?.message ?? "Invalid input") : "Invalid input",
      error.issues
    ),
  OrganizationNotFound: (error) => failureResponse(404, "not_found", error.message),
  ApiKeyNotFound: (error) => failureResponse(404, "not_found", error.message),
  ApiKeyNotRotatable: (error) => failureResponse(409, "api_key_not_rotatable", error.message),
  ApiKeyInvalid: (error) => failureResponse(401, "invalid_api_key", error.message),
  SubscriptionInactive: (error) => failureResponse(403, "subscription_inactive", error.message),
  ApiAccessNotAllowed: (error) => failureResponse(403, "api_access_not_allowed", error.message),
  RecordNotFound: (error) =>
    failureResponse(
      404,
      "not_found",
      error.message,
      error.missing.map((missing) => ({
        code: "not_found",
        message: `No ${missing.resource.replace("_", " ")} with uuid ${missing.uuid}`,
        ...(missing.field === undefined ? {} : { field: missing.field })
      }))
    ),
  PlanLimitExceeded: (error) => failureResponse(403, `${error.plan_limit}_reached`, error.message),
  RateLimited: (error) =>
    failureResponse(429, "rate_limited", error.message, [], { "retry-after": String(error.retry_after_seconds) }),
  RateLimitUnavailable: (error) => failureResponse(503, "rate_limit_unavailable", error.message),
  ChatStatusUnchanged: (error) =>
    failureResponse(400, "chat_status_unchanged", error.message, [
      { code: "chat_status_unchanged", message: error.message, field: "status" }
    ]),
  UniqueValueTaken: (error) =>
    failureResponse(400, error.code, error.message, [{ code: error.code, message: error.message, field: error.field }]),
  TemplateNameTaken: (error) =>
    failureResponse(400, "template_name_taken", error.message, [
      { code: "template_name_taken", message: error.message, field: "name" }
    ]),
  TemplateNotFound: (error) =>
    failureResponse(400, "template_not_found", error.message, [
      { code: "template_not_found", message: error.message, field: "template.name" }
    ]),
  TemplateNotApproved: (error) =>
    failureResponse(400, "template_not_approved", error.message, [
      { code: "template_not_approved", message: error.message, field: "template.name" }
    ]),
  TemplateParametersMismatch: (error) =>
    failureResponse(400, "template_parameters_mismatch", error.message, error.issues),
  TemplateUnsupported: (error) =>
    failureResponse(400, "template_unsupported", error.message, [
      { code: "template_unsupported", message: `${error.path === "" ? "" : `${error.path}: `}${error.problem}`, field: "template.name" }
    ]),
  TemplateManagedByMeta: (error) => failureResponse(409, "template_managed_by_meta", error.message),
  NoChannelForAccount: (error) => failureResponse(409, "no_channel_for_account", error.message),
  TemplateSyncFailed: (error) => failureResponse(502, "template_sync_failed", error.message),
  TemplateSyncInProgress: (error) => failureResponse(409, "sync_in_progress", error.message),
  ChannelPhoneNumberIdTaken: (error) =>
    failureResponse(400, "phone_number_id_taken", error.message, [
      { code: "phone_number_id_taken", message: error.message, field: "phone_number_id" }
    ]),
  ChannelLimitReached: (error) => failureResponse(400, "channel_limit_reached", error.message),
  ChannelVerificationFailed: (error) =>
    failureResponse(400, "channel_verification_failed", error.message, [
      { code: "channel_verification_failed", message: error.message, field: "access_token" }
    ]),
  SecretKeyMissing: (error) => failureResponse(503, "secret_key_not_configured", error.message),
  SecretKeyMismatch: () => internalErrorResponse(),
  WebhookUrlRefused: (error) =>
    failureResponse(400, "webhook_url_refused", error.message, [
      { code: "webhook_url_refused", message: error.message, field: "url" }
    ]),
  WebhookEndpointLimitReached: (error) => failureResponse(400, "webhook_endpoint_limit_reached", error.message),
  WebhookEndpointDisabled: (error) => failureResponse(409, "webhook_endpoint_disabled", error.message),
  WebhookRotationInProgress: (error) => failureResponse(409, "rotation_in_progress", error.message),
  MessageNotRetryable: (error) => failureResponse(409, "message_not_retryable", error.message),
  MessageNotCancellable: (error) => failureResponse(409, "message_not_cancellable", error.message),
  MessageNotReactable: (error) =>
    failureResponse(409, "message_not_reactable", error.message, [{ code: "message_not_reactable", message: error.message, reason: error.reason }]),
  OutsideCustomerServiceWindow: (error) =>
    failureResponse(400, "outside_customer_service_window", error.message, [
      { code: "outside_customer_service_window", message: error.message, field: "phone", window_expires_at: error.window_expires_at }
    ]),
  EmptyAudience: (error) =>
    failureResponse(400, "empty_audience", error.message, [{ code: "empty_audience", message: error.message, field: "audience" }]),
  AudienceTooLarge: (error) =>
    failureResponse(400, "audience_too_large", error.message, [{ code: "audience_too_large", message: error.message, field: "audience" }]),
  BroadcastNotCancellable: (error) => failureResponse(409, "broadcast_not_cancellable", error.message),
  UnsupportedMediaType: (error) =>
    failureResponse(400, "unsupported_media_type", error.message, [{ code: "unsupported_media_type", message: error.message, field: "file" }]),
  MediaTooLarge: (error) => failureResponse(413, "payload_too_large", error.message, [], { connection: "close" }),
  MediaNotReady: (error) => failureResponse(409, "media_not_ready", error.message),
  MediaUnavailable: (error) => failureResponse(410, "media_unavailable", error.message),
  RangeNotSatisfiable: (error) => failureResponse(416, "range_not_satisfiable", error.message, [], { "content-range": `bytes */${error.size}` }),
  MediaLinkRefused: (error) => failureResponse(403, error.code, error.message),
  StorageError: () => internalErrorResponse()
}

/**
 * The response for a domain error, looked up in {@link domainErrorResponses}.
 *
 * @category errors
 */
export const responseForDomainError = (error: DomainError): ApiResponse =>
  (domainErrorResponses[error._tag] as (error: DomainError) => ApiResponse)(error)

/**
 * HTTP 500 `internal_error`: no cause, no stack trace (docs/errors.md "Server").
 *
 * @category errors
 */
export const internalErrorResponse = (): ApiResponse =>
  failureResponse(500, "internal_error", "Internal server error")

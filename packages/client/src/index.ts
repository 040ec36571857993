/**
 * `@switchboard/client`: a typed fetch client of the Switchboard Developer Messaging API
 * (docs/client.md).
 */
export { createClient, type ArgumentsOf, type Client, type ClientOptions, type DataOf, type MethodOf, type WithRequestId } from "./client.js"
export {
  ApiError,
  type ApiErrorInit,
  type ApiErrorItem,
  AuthenticationError,
  ConflictError,
  ConnectionError,
  NotFoundError,
  PermissionError,
  RateLimitError,
  TimeoutError,
  ValidationError,
  WebhookVerificationError
} from "./errors.js"
export type { components, operations, paths } from "./generated/openapi.js"
export { OPERATIONS, type OperationId } from "./generated/operations.js"
export { METHODS, type MethodDefinition, type Methods } from "./methods.js"
export { type List } from "./paging.js"
export { BACKOFF_BASE_MS, BACKOFF_CAP_MS, backoffDelayMs } from "./retry.js"
export type { RequestOptions } from "./request.js"
export { verifyWebhook, WEBHOOK_TOLERANCE_SECONDS } from "./webhooks.js"

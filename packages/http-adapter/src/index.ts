/**
 * `@switchboard/http-adapter`: the Node request handler serving the Developer Messaging
 * API (docs/http-api.md): routing, API-key authentication, rate limits, the envelope, validation,
 * and the discovery routes with the generated OpenAPI document and reference page.
 *
 * @packageDocumentation
 */
export { createHandler, DEFAULT_BASE_PATH, requestLogEntryOf, type SwitchboardHandler } from "./handler.js"
export type { HandlerOptions, RequestLogLine } from "./handlerTypes.js"
export type { SecretKeyOption } from "./internal/channelOptions.js"
export { answerClientError } from "./clientError.js"
export type { HandlerTracing } from "./handlerTracing.js"
export { HANDLER_LOG_LEVELS, type HandlerLogLevel } from "./logLevel.js"
export type { HandlerMetrics } from "./handlerMetrics.js"
export { type DispatchWebhooksOptions, type WebhookDispatcherHandle, type WebhookHandlerOptions } from "./webhooks.js"
export {
  dispatchWebhooks,
  type DispatchersHandle,
  type DispatchSwitches,
  type TemplateSyncHandlerOptions,
  runDispatchers,
  type RunDispatchersOptions,
  type SendQueueHandlerOptions
} from "./dispatchers.js"
export { type HealthCheck, type HealthReport, type StorageHealthCheck } from "./health.js"
export { createFetchHandler, type FetchContext, type FetchHandler, type FetchHandlerOptions } from "./fetchHandler.js"
export { failureResponse, successResponse, type ApiResponse, type Envelope, type ErrorItem } from "./envelope.js"
export { domainErrorResponses, responseForDomainError } from "./errorMapping.js"
export { HttpFailure } from "./HttpFailure.js"
export type { RateLimitHandlerOptions } from "./rateLimiting.js"
export { defaultRoutes } from "./routes/index.js"
export {
  verifyWhatsAppSignature,
  WHATSAPP_WEBHOOK_BODY_LIMIT,
  whatsAppHandshakeRoute,
  whatsAppWebhookRoute
} from "./routes/whatsappWebhook.js"
export type { MultipartBody, MultipartField, MultipartFile, MultipartLimits, MultipartPart } from "./internal/multipart.js"
export { HandlerMedia, type HandlerMediaService, HandlerSettings, type HandlerSettingsService, type WhatsAppWebhookOptions } from "./settings.js"
export type { HandlerMediaOptions } from "./mediaOptions.js"
export { byteRangeOf, mediaRoutes } from "./routes/media.js"
export {
  defineRoute,
  responseOfResult,
  type BinaryContent,
  type RawContent,
  type RouteDefinition,
  type RouteIdempotency,
  type RouteMethod,
  type RouteRequest,
  type RouteResult,
  type RouteServices
} from "./routes/route.js"
export {
  API_TITLE,
  API_VERSION,
  ERROR_CODE_STATUSES,
  OPENAPI_TAGS,
  openApiDocument,
  openApiPathOf,
  operationIdOf,
  type OpenApiDocument,
  type OpenApiOperation,
  type OpenApiResponse
} from "./openapi.js"
export { convertObjectSchema, convertProperties, UnsupportedValidationRule, type ConvertedProperty, type JsonSchema } from "./openapiValidation.js"
export { DOCS_CONTENT_SECURITY_POLICY, DOCS_FILES } from "./openapiDocsPage.js"
export { apiIndexRoute, discoveryRoutes, docsFileRoute, docsPageRoute, openApiRoute } from "./routes/discovery.js"
export * as RouteSchemas from "./routes/schemas.js"

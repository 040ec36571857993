/**
 * `@switchboard/http-adapter`: the Node request handler serving the Developer Messaging
 * API (DESIGN §3): routing, API-key authentication, rate limits, the envelope, validation.
 *
 * @packageDocumentation
 */
export { createHandler, DEFAULT_BASE_PATH, type HandlerOptions, type SwitchboardHandler } from "./handler.js"
export { failureResponse, successResponse, type ApiResponse, type Envelope, type ErrorItem } from "./envelope.js"
export { domainErrorResponses, responseForDomainError } from "./errorMapping.js"
export { HttpFailure } from "./HttpFailure.js"
export type { RateLimitHandlerOptions } from "./rateLimiting.js"
export { defaultRoutes } from "./routes/index.js"
export { defineRoute, type RouteDefinition, type RouteMethod, type RouteRequest, type RouteResult } from "./routes/route.js"

import type { Effect } from "effect"
import type { ValidationSchema } from "fastest-validator"
import type { AuthenticatedOrganization, Core, DomainError } from "@switchboard/core"
import type { HttpFailure } from "../HttpFailure.js"

/**
 * HTTP methods a route may declare.
 *
 * @category routes
 */
export type RouteMethod = "GET" | "POST" | "PUT" | "DELETE"

/**
 * What a route handler receives: path parameters, query and body after validation
 * (converted, unknown fields removed), the request id, and for authenticated routes the
 * organization of the API key.
 *
 * @category routes
 */
export interface RouteRequest {
  readonly params: Readonly<Record<string, unknown>>
  readonly query: Readonly<Record<string, unknown>>
  readonly body: unknown
  readonly requestId: string
  readonly auth: AuthenticatedOrganization
}

/**
 * What a route handler returns: the envelope's `message` and `data` of a 200.
 *
 * @category routes
 */
export interface RouteResult {
  readonly message: string
  readonly data: unknown
}

/**
 * One route of the API, declared once (DESIGN §2): the validators are compiled from it at
 * start-up and the OpenAPI document is generated from it.
 * - `path` is relative to the base path, with `:name` parameters (find-my-way syntax).
 * - `params`, `query`, `body` are fastest-validator schemas; a route with `body` requires a
 *   JSON content type.
 * - `bucket` is the rate-limit bucket (DESIGN §3 "Rate limits"); default `general`.
 * - `authenticated` (default `true`): `false` serves the route without an API key (the
 *   discovery routes); it is then rate limited by client address in the `general` bucket,
 *   and its handler must not read `auth` (doing so is a defect, answered 500).
 *
 * @category routes
 */
export interface RouteDefinition {
  readonly method: RouteMethod
  readonly path: string
  readonly tag: string
  readonly summary: string
  readonly bucket?: "general" | "send"
  readonly authenticated?: boolean
  readonly params?: ValidationSchema
  readonly query?: ValidationSchema
  readonly body?: ValidationSchema
  readonly handle: (
    request: RouteRequest
  ) => Effect.Effect<RouteResult, DomainError | HttpFailure, Core.CoreServices>
}

/**
 * Declares a route; only gives the object its type.
 *
 * @category routes
 */
export const defineRoute = (route: RouteDefinition): RouteDefinition => route

import { Effect } from "effect"
import {
  type AuthenticatedOrganization,
  type DomainError,
  Organizations,
  type RateLimiter
} from "@switchboard/core"
import type { ApiResponse } from "./envelope.js"
import { internalErrorResponse, responseForDomainError } from "./errorMapping.js"
import type { CoreRequest, Exchange } from "./handlerTypes.js"
import { HttpFailure } from "./HttpFailure.js"
import { fingerprintOf, readIdempotencyKey, withIdempotencyKey } from "./idempotency.js"
import { readApiKey } from "./internal/authorization.js"
import { type BodySource, parseJsonBody, readJsonBody, readRawBody } from "./internal/body.js"
import { readMultipart } from "./internal/multipart.js"
import { nulInParameters, repeatedParameters, type Query } from "./internal/query.js"
import { NO_AUTHENTICATION } from "./internal/unauthenticated.js"
import { isPlainObject, type CompiledCheck } from "./internal/validation.js"
import { limitRequest } from "./rateLimiting.js"
import type { CompiledRoute } from "./router.js"
import { responseOfResult, type RouteDefinition, type RouteIdempotency, type RouteRequest, type RouteServices } from "./routes/route.js"

// The request pipeline of the handler core (handler.ts): for a request whose route is
// found, authentication, the rate limit, path and query parameters, the Idempotency-Key,
// the body, then the route's handler, every failure answered by its envelope response.

/**
 * The checks of docs/http-api.md "Order of checks" then the route's handler, as one Effect that
 * never fails: every failure becomes its envelope response (the `RateLimit-*` headers of
 * `exchange.rateLimit` are added when it is written, handler.ts `toWireResponse`). Written as plain functions chaining a few
 * Effects, with no generator: it runs on every request (docs/benchmarks.md).
 *
 * @internal
 */
export const respond = (
  exchange: Exchange,
  route: CompiledRoute,
  rawParams: Record<string, string | undefined>,
  rawQuery: Query,
  bodyLimit: number
): Effect.Effect<ApiResponse, never, RouteServices | RateLimiter> => {
  const definition = route.definition
  const checked = (auth: AuthenticatedOrganization | undefined) => {
    if (auth !== undefined) exchange.organizationId = auth.organization.id
    // Built only once the request passed the limiter: a 429 does no validation work.
    const rest = () => afterRateLimit(exchange, route, auth, rawParams, rawQuery, bodyLimit)
    if (definition.rateLimited === false) return rest()
    const counted = limitRequest(definition, auth, exchange.request.clientAddress, (decision) => {
      exchange.rateLimit = decision
    })
    return Effect.flatMap(counted, rest)
  }
  // A route that needs no key goes straight on (no Effect to authenticate nobody), still
  // inside the fiber: whatever it throws is a defect `recover` answers.
  return recover(
    definition.authenticated === false || (definition.signedLink === true && exchange.request.header("authorization") === undefined)
      ? Effect.suspend(() => checked(undefined))
      : Effect.flatMap(authenticate(exchange), checked)
  )
}

/**
 * The checks after the rate limit (path parameters, repeated query parameters, query,
 * `Idempotency-Key`, body), then the route's handler. With an `Idempotency-Key` the handler
 * gets the claim (`idempotency`) and its result is recovered into a response here, so the
 * stored response is what the client got; otherwise `respond` recovers it.
 */
const afterRateLimit = (
  exchange: Exchange,
  route: CompiledRoute,
  auth: AuthenticatedOrganization | undefined,
  rawParams: Record<string, string | undefined>,
  rawQuery: Query,
  bodyLimit: number
): Effect.Effect<ApiResponse, HttpFailure | DomainError, RouteServices> => {
  const definition = route.definition
  const params = validated(route.checkParams, rawParams, "Invalid path parameter")
  if (params instanceof HttpFailure) return Effect.fail(params)
  if (rawQuery.repeated.length > 0) return repeatedParameters(rawQuery.repeated)
  if (rawQuery.withNul.length > 0) return nulInParameters(rawQuery.withNul)
  const query = validated(route.checkQuery, rawQuery.values, "Invalid query parameter")
  if (query instanceof HttpFailure) return Effect.fail(query)
  const idempotencyKey =
    definition.idempotent === true ? readIdempotencyKey(exchange.request.header("idempotency-key")) : undefined
  if (idempotencyKey instanceof HttpFailure) return Effect.fail(idempotencyKey)
  const handle = (
    body: unknown,
    idempotency?: RouteIdempotency,
    claimIdempotencyKey?: RouteRequest["claimIdempotencyKey"]
  ): Effect.Effect<ApiResponse, HttpFailure | DomainError, RouteServices> =>
    Effect.map(
      definition.handle({
        params: params as Record<string, unknown>,
        query: query as Record<string, unknown>,
        body,
        requestId: exchange.requestId,
        requestHeader: exchange.request.header,
        auth: auth ?? NO_AUTHENTICATION,
        idempotency,
        ...(claimIdempotencyKey === undefined ? {} : { claimIdempotencyKey }),
        basePath: route.basePath,
        routes: route.routes
      }),
      (result) => {
        // An unauthenticated route may name the organization it acted for (a provider
        // webhook routed to one): the request's log line carries it.
        if (auth === undefined && "organizationId" in result && result.organizationId !== undefined) {
          exchange.organizationId = result.organizationId
        }
        return responseOfResult(result)
      }
    )
  // A route without a body (most GETs) and without an Idempotency-Key goes straight to its
  // handler: no Effect to read or check a body (fewer operations per request,
  // docs/benchmarks.md).
  // A multipart body is handed over unread: the handler streams its parts (and, on a route
  // that also takes an Idempotency-Key, claims it itself once it knows what it received).
  if (definition.multipart !== undefined) {
    const claimIdempotencyKey: RouteRequest["claimIdempotencyKey"] =
      idempotencyKey === undefined || auth === undefined
        ? undefined
        : (fingerprintBody, run) => {
          const fingerprint = fingerprintOf(exchange.request.method, requestPath(exchange), fingerprintBody)
          const answered = withIdempotencyKey(auth.organization.id, idempotencyKey, fingerprint, (claim) =>
            recover(Effect.map(run(claim), responseOfResult)))
          return Effect.map(answered, (response) => ({ _tag: "AnsweredResponse" as const, response }))
        }
    return Effect.flatMap(readMultipart(exchange.request.body, definition.multipart), (body) =>
      handle(body, undefined, claimIdempotencyKey))
  }
  if (idempotencyKey === undefined && definition.verifyRawBody === undefined && route.checkBody === undefined) {
    return handle(undefined)
  }
  const parsed = readBodyOf(definition, route.checkBody, exchange.request, definition.bodyLimit ?? bodyLimit)
  return Effect.flatMap(parsed, (parsedBody) => {
    const checked = (idempotency?: RouteIdempotency) =>
      route.checkBody === undefined
        ? handle(parsedBody, idempotency)
        : Effect.flatMap(checkBody(route.checkBody, parsedBody), (body) => handle(body, idempotency))
    // Without an Idempotency-Key, failures are turned into responses once, by `respond`;
    // with one, here, so the stored response is what the client got.
    if (idempotencyKey === undefined || auth === undefined) return checked()
    const fingerprint = fingerprintOf(exchange.request.method, requestPath(exchange), parsedBody)
    return withIdempotencyKey(auth.organization.id, idempotencyKey, fingerprint, (claim) => recover(checked(claim)))
  })
}

/** The request's path without its query: part of an Idempotency-Key's fingerprint. */
const requestPath = (exchange: Exchange): string => exchange.request.url.split("?", 1)[0] ?? ""

/**
 * The parsed body of a route that takes one (a `body` schema or a `verifyRawBody` check),
 * else `undefined`. With `verifyRawBody` the exact bytes are checked before parsing.
 */
const readBodyOf = (
  definition: RouteDefinition,
  check: CompiledCheck | undefined,
  request: CoreRequest,
  limitBytes: number
): Effect.Effect<unknown, HttpFailure, RouteServices> => {
  const verify = definition.verifyRawBody
  if (verify === undefined) {
    if (check === undefined) return Effect.succeed(undefined)
    return definition.bodyOptional === true && isEmptyBody(request.body) ? Effect.succeed({}) : readJsonBody(request.body, limitBytes)
  }
  return Effect.flatMap(readRawBody(request.body, limitBytes), (bytes) =>
    Effect.zipRight(verify(bytes, request.header), parseJsonBody(bytes))
  )
}

/**
 * Whether a request sent no body, for a route whose body is optional: `Content-Length: 0`,
 * or neither a `Content-Type` nor a `Content-Length` (a host's parser may have left `{}`).
 */
const isEmptyBody = (body: BodySource): boolean =>
  body.contentLength?.trim() === "0" || (body.contentType === undefined && body.contentLength === undefined)

/**
 * Every failure of a request as its envelope response: an {@link HttpFailure} as it says,
 * a domain error by the status table (a storage failure logged, answered 500 without its
 * cause), a defect logged and answered 500.
 */
const recover = <R>(
  effect: Effect.Effect<ApiResponse, HttpFailure | DomainError, R>
): Effect.Effect<ApiResponse, never, R> =>
  effect.pipe(
    Effect.catchAll((error) => {
      if (error._tag === "HttpFailure") return Effect.succeed(error.toResponse())
      const response = responseForDomainError(error)
      return response.status >= 500
        ? Effect.logError("Storage failure", error.cause).pipe(Effect.as(response))
        : Effect.succeed(response)
    }),
    Effect.catchAllDefect((defect) => Effect.logError("Unhandled defect", defect).pipe(Effect.as(internalErrorResponse())))
  )

/** Reads and checks the API key (401, then 403); `respond` notes the organization for the log line. */
const authenticate = (
  exchange: Exchange
): Effect.Effect<AuthenticatedOrganization, HttpFailure | DomainError, Organizations> => {
  const apiKey = readApiKey(exchange.request.header("authorization"))
  if (apiKey instanceof HttpFailure) return Effect.fail(apiKey)
  return Effect.flatMap(Organizations, (organizations) => organizations.authenticate(apiKey))
}

/** Validates a parsed body: a JSON object that passes the route's schema. */
const checkBody = (check: CompiledCheck, body: unknown): Effect.Effect<unknown, HttpFailure> => {
  if (!isPlainObject(body)) {
    return Effect.fail(
      new HttpFailure({ status: 400, code: "invalid_type", message: "Request body must be a JSON object" })
    )
  }
  const result = validated(check, body, "Invalid request body")
  return result instanceof HttpFailure ? Effect.fail(result) : Effect.succeed(result)
}

/** `value` as `check` returns it (coerced, defaults applied), or the 400 naming what is wrong. */
const validated = (check: CompiledCheck | undefined, value: unknown, message: string): unknown => {
  if (check === undefined) return value
  const result = check(value)
  if (result.ok) return result.value
  const first = result.errors.length === 1 ? result.errors[0]?.message : undefined
  return new HttpFailure({ status: 400, code: "invalid_request", message: first ?? message, errors: result.errors })
}

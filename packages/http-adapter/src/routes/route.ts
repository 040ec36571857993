import type { Readable } from "node:stream"
import type { Effect, Schema } from "effect"
import type { ValidationSchema } from "fastest-validator"
import type { AuthenticatedOrganization, Core, DomainError } from "@switchboard/core"
import { successResponse, type ApiResponse } from "../envelope.js"
import type { HttpFailure } from "../HttpFailure.js"
import type { MultipartBody, MultipartLimits } from "../internal/multipart.js"
import type { HandlerMedia, HandlerSettings } from "../settings.js"

/**
 * HTTP methods a route may declare.
 *
 * @category routes
 */
export type RouteMethod = "GET" | "POST" | "PUT" | "DELETE"

/**
 * What a route handler receives: path parameters, query and body after validation
 * (converted, unknown fields removed), the request id, for authenticated routes the
 * organization of the API key, the Idempotency-Key claim the request runs under
 * (`idempotency`, {@link RouteIdempotency}; `undefined` without the header or on a route
 * not declared `idempotent`), and the API being served: its `basePath` (normalised, no
 * trailing slash, `""` at the root) and its route table (the discovery routes describe
 * them).
 *
 * @category routes
 */
export interface RouteRequest {
  readonly params: Readonly<Record<string, unknown>>
  readonly query: Readonly<Record<string, unknown>>
  readonly body: unknown
  readonly requestId: string
  /** A request header by lower-case name (several values joined with `, `), or `undefined`. */
  readonly requestHeader: (name: string) => string | undefined
  readonly auth: AuthenticatedOrganization
  readonly idempotency: RouteIdempotency | undefined
  /**
   * On a `multipart` route declared `idempotent`, when the request carries an
   * `Idempotency-Key` (else `undefined`): the route reads its parts first, then claims the
   * key itself with what identifies the request (`fingerprint`, any JSON value: hashed with
   * the method and path), and `run` makes what the request creates under the claim. Answers
   * the claim's response: `run`'s result (stored when a 200), a replay of the key's stored
   * answer, 409 `idempotency_key_in_progress` or 422 `idempotency_key_reused` (the last
   * three without calling `run`); a store failure of the claim itself is a `StorageError`. `POST /media` uses it (docs/media.md "Uploading").
   */
  readonly claimIdempotencyKey?: (
    fingerprint: unknown,
    run: (claim: RouteIdempotency) => Effect.Effect<RouteResult, DomainError | HttpFailure, RouteServices>
  ) => Effect.Effect<AnsweredResponse, HttpFailure | DomainError, RouteServices>
  readonly basePath: string
  readonly routes: ReadonlyArray<RouteDefinition>
}

/**
 * The Idempotency-Key claim a request of an `idempotent` route runs under
 * (docs/messaging.md "Idempotency-Key"): `resourceUuid`, the uuid the key's record holds
 * for what the request creates — the handler gives it to what it creates (the send routes:
 * the message's uuid, `Messaging`'s `SendOptions.messageUuid`) — and `takeover`, `true`
 * when an earlier attempt with this key died after claiming it: that attempt used the same
 * uuid, so what it created, if anything, is answered as it now stands instead of created
 * again. A route that creates nothing with a uuid (`POST /contacts/bulk`) ignores it.
 *
 * @category routes
 */
export interface RouteIdempotency {
  readonly resourceUuid: string
  readonly takeover: boolean
}

/**
 * What a route handler returns: the envelope's `message` and `data` of a 200, and, for a
 * route that needs no API key, optionally the `organizationId` it acted for (a provider
 * webhook routed to one organization), which the request's log line then carries
 * (docs/http-adapter.md "Every response"); never part of the response.
 *
 * @category routes
 */
export interface RouteResult<Data = unknown> {
  readonly message: string
  readonly data: Data
  readonly organizationId?: string
}

/**
 * What a route declared with `content` returns instead of {@link RouteResult}: a 200 whose
 * body is `content` as it is, not the envelope (docs/http-api.md "Envelope": only
 * `openapi.json` and the `/docs` page and its files). `contentType` is the full
 * `Content-Type` header value; `headers` are added to the response (lowercase names).
 *
 * @category routes
 */
export interface RawContent {
  readonly _tag: "RawContent"
  readonly contentType: string
  readonly content: string
  readonly headers?: Readonly<Record<string, string>>
}

/**
 * What a route returns to answer bytes instead of the envelope (docs/extending.md "Your own
 * routes"): `stream`'s bytes, exactly `length` of them (the `Content-Length`), with
 * `contentType`; `status` 200 (default) or 206 (a range); `headers` added to the response
 * (lowercase names: `etag`, `content-disposition`, `content-range`…). The stream is piped
 * to the client and destroyed when the client goes away (or, for `HEAD`, at once); the
 * request's log line is written when the headers are. A stream that fails once the
 * headers are out ends the connection early (the client sees a short body).
 *
 * @category routes
 */
export interface BinaryContent {
  readonly _tag: "BinaryContent"
  readonly status?: 200 | 206
  readonly contentType: string
  readonly length: number
  readonly stream: Readable
  readonly headers?: Readonly<Record<string, string>>
}

/**
 * A response already made, returned as it is: what {@link RouteRequest.claimIdempotencyKey}
 * answers (a replay keeps its stored status and body).
 *
 * @category routes
 */
export interface AnsweredResponse {
  readonly _tag: "AnsweredResponse"
  readonly response: ApiResponse
}

/**
 * One route of the API, declared once (docs/api-reference.md "How the document is generated"): the validators are compiled from it at
 * start-up and the OpenAPI document is generated from it.
 * - `path` is relative to the base path, with `:name` parameters (find-my-way syntax).
 * - `params`, `query`, `body` are fastest-validator schemas; a route with `body` requires a
 *   JSON content type.
 * - `bucket` is the rate-limit bucket (docs/rate-limits.md "Buckets"); default `general`.
 * - `authenticated` (default `true`): `false` serves the route without an API key (the
 *   discovery routes); it is then rate limited by client address in the `general` bucket,
 *   and its handler must not read `auth` (doing so is a defect, answered 500).
 * - `rateLimited` (default `true`): `false` skips the rate limiter (provider webhooks,
 *   whose senders retry whatever is refused).
 * - `bodyOptional` (default `false`): the `body` may be left out: a request with
 *   `Content-Length: 0`, or with neither `Content-Type` nor `Content-Length`, is handled as
 *   `{}` (checked by the `body` schema like any other); a body sent is read as usual.
 * - `bodyLimit`: this route's largest body in bytes, instead of the handler's `bodyLimit`.
 * - `verifyRawBody`: a check over the exact body bytes before they are parsed (a webhook
 *   signature); the route then reads its body even without a `body` schema.
 * - `multipart`: the route reads a `multipart/form-data` body, streamed ({@link MultipartBody}).
 * - `idempotent` (default `false`): the route honours an `Idempotency-Key` header (an
 *   authenticated route with a body; docs/messaging.md "Idempotency-Key"): the handler
 *   core claims the key, replays a stored 200, and answers 409/422 itself; the handler
 *   gets the claim as `idempotency` ({@link RouteIdempotency}).
 *
 * @category routes
 */
export interface RouteDefinition<Data = unknown> {
  readonly method: RouteMethod
  readonly path: string
  readonly tag: string
  readonly summary: string
  /** A longer Markdown description for the OpenAPI document (optional). */
  readonly description?: string
  readonly bucket?: "general" | "send"
  readonly authenticated?: boolean
  /**
   * The route also answers a signed link (docs/media.md "Links"): a request with no
   * `Authorization` header is handed to `handle` unauthenticated (counted per client
   * address), which checks the link's `expires` and `signature` itself.
   */
  readonly signedLink?: boolean
  readonly idempotent?: boolean
  readonly rateLimited?: boolean
  readonly bodyLimit?: number
  readonly verifyRawBody?: (
    bytes: Uint8Array,
    header: (name: string) => string | undefined
  ) => Effect.Effect<void, HttpFailure, RouteServices>
  readonly params?: ValidationSchema
  readonly query?: ValidationSchema
  readonly body?: ValidationSchema
  /** The JSON `body` may be left out: an empty request is handled as `{}` (see above). */
  readonly bodyOptional?: boolean
  /**
   * Examples of the JSON body for the OpenAPI document, by name: each a `summary` and the
   * `value` (a body the route accepts).
   */
  readonly bodyExamples?: Readonly<Record<string, { readonly summary: string; readonly value: unknown }>>
  /**
   * The route reads a `multipart/form-data` body (instead of `body`, a JSON schema): the
   * handler's `body` is then a {@link MultipartBody} whose parts it iterates, within these
   * limits (docs/extending.md "Your own routes").
   */
  readonly multipart?: MultipartLimits
  /**
   * The parts of a `multipart` body, for the OpenAPI document: each part's `name`, whether
   * it is a file (`binary`), `required`, and a `description`.
   */
  readonly multipartParts?: ReadonlyArray<{ readonly name: string; readonly binary: boolean; readonly required: boolean; readonly description: string }>
  /**
   * The route answers bytes (`BinaryContent`), for the OpenAPI document: 200 with the whole
   * file and, with `ranges`, 206 with a part of it (`Content-Range`).
   */
  readonly binary?: { readonly ranges: boolean }
  /**
   * The `effect/Schema` of the success envelope's `data` (docs/api-reference.md): the handler's
   * result must have its type (checked by the compiler through {@link defineRoute}) and
   * the OpenAPI document's response schema is generated from it (`JSONSchema`). Every
   * route of {@link defaultRoutes} answering the envelope declares it (test/openapi-parity).
   */
  readonly data?: Schema.Schema<Data, any, never>
  /**
   * Declared by a route answering raw content ({@link RawContent}) or bytes
   * ({@link BinaryContent}) instead of the envelope: the media types it may answer with,
   * for the OpenAPI document.
   */
  readonly content?: ReadonlyArray<string>
  /**
   * The business error codes the handler may answer with beyond the ones every route of its
   * kind has (authentication, rate limit, validation, `not_found` for a path uuid), for
   * example `label_name_taken`; their statuses are `openapi.ts`'s `ERROR_CODE_STATUSES`,
   * unless the entry names its own: `"403 invalid_signature"`.
   */
  readonly errors?: ReadonlyArray<string>
  readonly handle: (
    request: RouteRequest
  ) => Effect.Effect<RouteResult<NoInfer<Data>> | RawContent | BinaryContent | AnsweredResponse, DomainError | HttpFailure, RouteServices>
}

/**
 * The services a route's handler may use: core's, and the handler's own settings.
 *
 * @category routes
 */
export type RouteServices = Core.CoreServices | HandlerSettings | HandlerMedia

/**
 * Declares a route and checks that its handler's `data` has the type of its `data`
 * schema; returns it as a plain {@link RouteDefinition} for route tables. The OpenAPI
 * document describes it from the same declaration (docs/api-reference.md "Adding a route").
 *
 * @category routes
 * @example
 * import { Effect, Schema } from "effect"
 * import { defaultRoutes, defineRoute } from "@switchboard/http-adapter"
 *
 * const pingRoute = defineRoute({
 *   method: "GET",
 *   path: "/ping",
 *   tag: "Auth",
 *   summary: "Answer pong",
 *   data: Schema.Struct({ pong: Schema.Boolean }),
 *   handle: () => Effect.succeed({ message: "pong", data: { pong: true } })
 * })
 * const routes = [...defaultRoutes, pingRoute] // createHandler({ storage, routes })
 */
export const defineRoute = <Data = unknown>(route: RouteDefinition<Data>): RouteDefinition =>
  route as unknown as RouteDefinition

/**
 * The response of a handler's result: `content` as it is for {@link RawContent} (the
 * `raw` field of {@link ApiResponse}), the stream for {@link BinaryContent} (its `binary`
 * field), else the success envelope.
 *
 * @category routes
 */
export const responseOfResult = (result: RouteResult | RawContent | BinaryContent | AnsweredResponse): ApiResponse => {
  if (!("_tag" in result)) return successResponse(result.message, result.data)
  if (result._tag === "AnsweredResponse") return result.response
  if (result._tag === "RawContent") {
    return { ...successResponse("OK", null), headers: result.headers ?? {}, raw: { contentType: result.contentType, content: result.content } }
  }
  return {
    ...successResponse("OK", null),
    status: result.status ?? 200,
    headers: result.headers ?? {},
    binary: { contentType: result.contentType, length: result.length, stream: result.stream }
  }
}

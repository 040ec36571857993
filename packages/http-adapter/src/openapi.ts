import { JSONSchema } from "effect"
import { convertObjectSchema, convertProperties, type JsonSchema } from "./openapiValidation.js"
import type { RouteDefinition } from "./routes/route.js"

/**
 * The API's name in the OpenAPI document and the discovery index.
 *
 * @category openapi
 */
export const API_TITLE = "Switchboard Developer Messaging API"

/**
 * The API version (docs/http-api.md "Base path and version").
 *
 * @category openapi
 */
export const API_VERSION = "1.0.0"

/**
 * The operation tags of the document, in the order the reference page shows them (the
 * discovery group is tag Guide: docs/api-reference.md). A route with another tag gets it added after
 * these, without a description.
 *
 * @category openapi
 */
export const OPENAPI_TAGS: ReadonlyArray<{ readonly name: string; readonly description: string }> = [
  { name: "Guide", description: "Discovery: this API's description, its OpenAPI document and the reference page. No API key." },
  { name: "Auth", description: "Check that the API key is valid and the organization may use the API." },
  { name: "Messages", description: "Send template, text, media and interactive messages. Sends count in the stricter `send` rate-limit bucket." },
  {
    name: "Media",
    description: "Files kept by Switchboard: customers' photos, voice notes and documents fetched from Meta, and uploads; their bytes by range and signed links."
  },
  {
    name: "Broadcasts",
    description:
      "One approved template to an audience (groups, labels, contacts), paced through the send queue, counted per recipient, cancellable."
  },
  { name: "Contacts", description: "Contacts: bulk import (upsert by phone), list, read, update, delete." },
  { name: "Groups", description: "Contact groups (audiences)." },
  { name: "Labels", description: "Labels (contact tags) and their assignment to contacts." },
  { name: "Basic replies", description: "Canned replies sent when an inbound message equals their trigger." },
  { name: "Templates", description: "Message templates and the send-ready template object." },
  { name: "Chats", description: "Conversations, with the dashboard's filters, sorts and pagination." },
  { name: "Channels", description: "The organization's own WhatsApp numbers; access tokens are encrypted at rest and never returned." },
  {
    name: "Webhook endpoints",
    description:
      "The organization's own URLs receiving its events (messages, statuses, chats, contacts, templates), signed per Standard Webhooks."
  },
  { name: "Webhooks", description: "What WhatsApp calls: the subscription handshake and its signed event POSTs. No API key, not rate limited." }
]

/**
 * The HTTP status of each business error code a route may declare in `errors`
 * (docs/errors.md lists every code). A declared code missing here makes
 * {@link openApiDocument} throw.
 *
 * @category openapi
 */
export const ERROR_CODE_STATUSES: Readonly<Record<string, 400 | 401 | 403 | 404 | 409 | 410 | 413 | 416 | 422 | 502 | 503>> = {
  invalid_input: 400,
  invalid_cursor: 400,
  group_not_found: 400,
  phone_taken: 400,
  group_name_taken: 400,
  label_name_taken: 400,
  trigger_taken: 400,
  template_not_found: 400,
  template_not_approved: 400,
  template_parameters_mismatch: 400,
  template_unsupported: 400,
  template_managed_by_meta: 409,
  template_name_taken: 400,
  template_refused_by_meta: 400,
  no_channel_for_account: 409,
  sync_in_progress: 409,
  provider_error: 502,
  template_sync_failed: 502,
  invalid_verify_token: 403,
  invalid_signature: 401,
  phone_number_id_taken: 400,
  channel_limit_reached: 400,
  channel_verification_failed: 400,
  webhook_url_refused: 400,
  webhook_endpoint_limit_reached: 400,
  webhook_endpoint_disabled: 409,
  rotation_in_progress: 409,
  message_not_retryable: 409,
  message_not_cancellable: 409,
  message_not_reactable: 409,
  empty_audience: 400,
  audience_too_large: 400,
  broadcast_not_cancellable: 409,
  outside_customer_service_window: 400,
  contacts_limit_reached: 403,
  label_limit_reached: 403,
  media_bytes_limit_reached: 403,
  unsupported_media_type: 400,
  payload_too_large: 413,
  media_not_ready: 409,
  media_unavailable: 410,
  range_not_satisfiable: 416,
  link_expired: 403,
  media_not_configured: 503,
  not_found: 404,
  secret_key_not_configured: 503
}

/**
 * An OpenAPI 3.1 document as a plain JSON object; `paths[path][method]` is an operation.
 *
 * @category openapi
 */
export interface OpenApiDocument {
  readonly openapi: "3.1.0"
  readonly info: JsonSchema
  readonly servers: ReadonlyArray<{ readonly url: string; readonly description: string }>
  readonly tags: ReadonlyArray<{ readonly name: string; readonly description?: string }>
  readonly security: ReadonlyArray<JsonSchema>
  readonly paths: { readonly [path: string]: { readonly [method: string]: OpenApiOperation } }
  readonly components: {
    readonly schemas: { readonly [name: string]: JsonSchema }
    readonly securitySchemes: { readonly [name: string]: JsonSchema }
    readonly headers: { readonly [name: string]: JsonSchema }
  }
}

/**
 * One operation of an {@link OpenApiDocument}.
 *
 * @category openapi
 */
export interface OpenApiOperation {
  readonly operationId: string
  readonly tags: ReadonlyArray<string>
  readonly summary: string
  readonly description?: string
  readonly security?: ReadonlyArray<JsonSchema>
  readonly parameters?: ReadonlyArray<JsonSchema>
  readonly requestBody?: JsonSchema
  readonly responses: { readonly [status: string]: OpenApiResponse }
}

/**
 * One response of an {@link OpenApiOperation}.
 *
 * @category openapi
 */
export interface OpenApiResponse {
  readonly description: string
  readonly headers?: { readonly [name: string]: JsonSchema }
  readonly content?: { readonly [mediaType: string]: { readonly schema: JsonSchema } }
}

/**
 * Generates the OpenAPI 3.1 document of `routes` served under `basePath` (docs/api-reference.md
 * "How the document is generated"): one operation per route, with its tag, an `operationId` (`GET
 * /contacts/:uuid` → `getContactsByUuid`), summary, the path and query parameters and
 * the JSON request body converted from the fastest-validator schemas the handler validates
 * with, the success envelope whose `data` is the route's `data` schema (`JSONSchema` of
 * `effect`, named schemas under `components.schemas`), and the failure envelope for every
 * status the route can answer with (400 validation and business codes, 401 and 403 for
 * authenticated routes, 404 for a path uuid or a declared `not_found`, 413 and 415 for
 * bodies, 429, 503). Authenticated routes use the bearer scheme; `authenticated: false`
 * routes have `security: []`. `servers` is `basePath`.
 *
 * Throws `UnsupportedValidationRule` for a schema rule it cannot convert, and an `Error`
 * for a declared error code missing from {@link ERROR_CODE_STATUSES} or a path parameter
 * without a rule in `params`: a defect of the route table, never of a request.
 *
 * @category openapi
 * @example
 * import { defaultRoutes, openApiDocument } from "@switchboard/http-adapter"
 *
 * const document = openApiDocument({ basePath: "/api/v1/api", routes: defaultRoutes })
 * console.log(Object.keys(document.paths))
 */
export const openApiDocument = (options: {
  readonly basePath: string
  readonly routes: ReadonlyArray<RouteDefinition>
}): OpenApiDocument => {
  const definitions: Record<string, JsonSchema> = {}
  const paths: Record<string, Record<string, OpenApiOperation>> = {}
  for (const route of options.routes) {
    const path = openApiPathOf(route.path)
    paths[path] = { ...paths[path], [route.method.toLowerCase()]: operationOf(route, path, definitions) }
  }
  const known = new Set(OPENAPI_TAGS.map((tag) => tag.name))
  const extraTags = [...new Set(options.routes.map((route) => route.tag))].filter((tag) => !known.has(tag))
  return {
    openapi: "3.1.0",
    info: {
      title: API_TITLE,
      version: API_VERSION,
      summary: "Contacts, groups, labels, templates, basic replies, chats and message sends of an organization.",
      description: INFO_DESCRIPTION,
      license: { name: "MIT", identifier: "MIT" }
    },
    servers: [{ url: options.basePath === "" ? "/" : options.basePath, description: "This server" }],
    tags: [...OPENAPI_TAGS.filter((tag) => options.routes.some((route) => route.tag === tag.name)), ...extraTags.map((name) => ({ name }))],
    security: [{ [SECURITY_SCHEME]: [] }],
    paths,
    components: {
      schemas: { ...definitions, ErrorItem: ERROR_ITEM, ErrorEnvelope: ERROR_ENVELOPE },
      securitySchemes: {
        [SECURITY_SCHEME]: {
          type: "http",
          scheme: "bearer",
          description:
            "The organization's API key: `Authorization: Bearer <API_KEY>`. A user JWT is rejected with 401 `jwt_not_accepted`."
        }
      },
      headers: HEADERS
    }
  }
}

/**
 * A find-my-way route path (`/contacts/:uuid/labels`) as an OpenAPI path
 * (`/contacts/{uuid}/labels`). Throws for wildcards and regular-expression parameters,
 * which the document cannot describe.
 *
 * @category openapi
 */
export const openApiPathOf = (routePath: string): string => {
  if (/[*(]/.test(routePath)) throw new Error(`Route path ${routePath}: wildcards and regular expressions are not described`)
  return routePath.replace(/:([A-Za-z0-9_]+)/g, "{$1}")
}

/**
 * The `operationId` of a route: its method in lower case then each path segment in
 * PascalCase, a parameter as `By<Name>` (`POST /labels/bulk-delete` →
 * `postLabelsBulkDelete`, `GET /` → `getRoot`).
 *
 * @category openapi
 */
export const operationIdOf = (route: Pick<RouteDefinition, "method" | "path">): string => {
  const segments = route.path.split("/").filter((segment) => segment !== "")
  const words = segments.map((segment) =>
    segment.startsWith(":") ? `By${pascal(segment.slice(1))}` : pascal(segment)
  )
  return route.method.toLowerCase() + (words.length === 0 ? "Root" : words.join(""))
}

const SECURITY_SCHEME = "apiKey"

const INFO_DESCRIPTION = [
  "Every response is the envelope `{status, success, message, data, errors}`: `status` equals the HTTP status,",
  "a success has `errors: []`, a failure `data: null` and `errors: [{code, message, field?}]` with a stable",
  "snake_case `code` and the JSON path of the offending `field`. Every success is HTTP 200.",
  "The only bodies outside the envelope are this document (`openapi.json`) and the reference page (`docs`).",
  "",
  "Authenticate with the organization's API key: `Authorization: Bearer <API_KEY>`. Requests are rate limited",
  "per organization in two buckets (`send` for the sends, `general` for the rest); the discovery operations",
  "need no key and are limited per client address. Responses that passed the limiter carry `RateLimit-Limit`,",
  "`RateLimit-Remaining` and `RateLimit-Reset`; a 429 also carries `Retry-After`."
].join("\n")

const ERROR_ITEM: JsonSchema = {
  type: "object",
  required: ["code", "message"],
  properties: {
    code: { type: "string", description: "Stable snake_case machine code, e.g. `invalid_api_key`." },
    message: { type: "string", description: "Human-readable explanation." },
    field: { type: "string", description: "JSON path of the offending field, e.g. `contacts[3].email`." },
    window_expires_at: {
      type: ["string", "null"],
      format: "date-time",
      description:
        "Only on `outside_customer_service_window`: when the contact's customer service window on the channel closed, " +
        "`null` when the contact never wrote through it."
    },
    reason: {
      type: "string",
      enum: ["no_provider_id", "too_old", "not_a_message", "no_channel"],
      description: "Only on `message_not_reactable`: why the message cannot be reacted to."
    }
  }
}

const ERROR_ENVELOPE: JsonSchema = {
  type: "object",
  description: "The failure envelope.",
  required: ["status", "success", "message", "data", "errors"],
  properties: {
    status: { type: "integer", description: "Equals the HTTP status." },
    success: { type: "boolean", const: false },
    message: { type: "string" },
    data: { type: "null" },
    errors: { type: "array", minItems: 1, items: { $ref: "#/components/schemas/ErrorItem" } }
  }
}

const HEADERS: { readonly [name: string]: JsonSchema } = {
  "X-Request-Id": {
    description: "The client's `X-Request-Id` when it sent a sane one (1–128 of `A-Za-z0-9._:-`), else a generated UUID.",
    schema: { type: "string" }
  },
  "RateLimit-Limit": { description: "Requests allowed per window in this route's bucket.", schema: { type: "integer" } },
  "RateLimit-Remaining": { description: "Requests left in the current window.", schema: { type: "integer" } },
  "RateLimit-Reset": { description: "Whole seconds until the window resets.", schema: { type: "integer" } },
  "Retry-After": { description: "Whole seconds to wait before retrying.", schema: { type: "integer" } },
  "Idempotent-Replayed": {
    description: "`true` when this is the stored response of an earlier request with the same `Idempotency-Key`.",
    schema: { type: "string", const: "true" }
  }
}

const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` })

const REQUEST_ID_HEADER = { "X-Request-Id": headerRef("X-Request-Id") }

const RATE_LIMIT_HEADERS = {
  ...REQUEST_ID_HEADER,
  "RateLimit-Limit": headerRef("RateLimit-Limit"),
  "RateLimit-Remaining": headerRef("RateLimit-Remaining"),
  "RateLimit-Reset": headerRef("RateLimit-Reset")
}

/** The `Idempotency-Key` header of the routes declared `idempotent` (docs/messaging.md). */
const IDEMPOTENCY_KEY_PARAMETER = {
  name: "Idempotency-Key",
  in: "header",
  required: false,
  description:
    "A key you choose per logical operation (a UUID, say): a retry with the same key and the same request within 24 hours gets the first answer again, with `Idempotent-Replayed: true`, and nothing runs twice.",
  schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[\\x21-\\x7E]+$" }
}

const VALIDATION_CODES = ["required", "invalid_type", "invalid_format", "out_of_range", "too_long"]

const operationOf = (route: RouteDefinition, path: string, definitions: Record<string, JsonSchema>): OpenApiOperation => {
  const where = `${route.method} ${route.path}`
  const parameters = [
    ...pathParametersOf(route, path, where),
    ...queryParametersOf(route, where),
    ...(route.idempotent === true ? [IDEMPOTENCY_KEY_PARAMETER] : [])
  ]
  const description = descriptionOf(route)
  return {
    operationId: operationIdOf(route),
    tags: [route.tag],
    summary: route.summary,
    ...(description === undefined ? {} : { description }),
    ...(route.authenticated === false ? { security: [] } : {}),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(route.body === undefined
      ? {}
      : {
          requestBody: {
            required: route.bodyOptional !== true,
            content: {
              "application/json": {
                schema: convertObjectSchema(route.body, `${where} body`),
                ...(route.bodyExamples === undefined ? {} : { examples: route.bodyExamples })
              }
            }
          }
        }),
    ...(route.multipart === undefined
      ? {}
      : {
          requestBody: {
            required: true,
            description: `A multipart/form-data body of at most ${route.multipart.maxBytes} bytes: at most ${route.multipart.maxFiles ?? 1} file part(s) and ${route.multipart.maxFields ?? 20} field(s).`,
            content: { "multipart/form-data": { schema: multipartSchemaOf(route) } }
          }
        }),
    responses: { ...(route.binary === undefined ? { "200": successResponseOf(route, definitions) } : binaryResponsesOf(route)), ...errorResponsesOf(route, where) }
  }
}

/** The schema of a multipart body: its declared parts (files as binary strings), else any object. */
const multipartSchemaOf = (route: RouteDefinition): JsonSchema => {
  const parts = route.multipartParts
  if (parts === undefined) return { type: "object", additionalProperties: true }
  return {
    type: "object",
    properties: Object.fromEntries(parts.map((part) => [
      part.name,
      part.binary ? { type: "string", format: "binary", contentMediaType: "application/octet-stream", description: part.description } : { type: "string", description: part.description }
    ])),
    required: parts.filter((part) => part.required).map((part) => part.name)
  }
}

/** The answers of a route that serves bytes: 200 the whole file, 206 a range of it. */
const binaryResponsesOf = (route: RouteDefinition): Record<string, OpenApiResponse> => {
  const limited = route.rateLimited === false ? REQUEST_ID_HEADER : RATE_LIMIT_HEADERS
  const fileHeaders = {
    ...limited,
    ETag: { description: "The file's SHA-256 (hex), quoted", schema: { type: "string" } },
    "Content-Disposition": { description: "`inline` with the file's name", schema: { type: "string" } },
    "Content-Length": { description: "Bytes in this answer", schema: { type: "integer" } },
    ...(route.binary?.ranges === true ? { "Accept-Ranges": { description: "`bytes`", schema: { type: "string" } } } : {})
  }
  const content = { "*/*": { schema: { type: "string", format: "binary", contentMediaType: "application/octet-stream" } } }
  return {
    "200": { description: "The file's bytes, with its MIME type as `Content-Type`.", headers: fileHeaders, content },
    ...(route.binary?.ranges === true
      ? {
        "206": {
          description: "The bytes of the requested `Range` (one range, `bytes=start-end`, `start-` or `-suffix`).",
          headers: { ...fileHeaders, "Content-Range": { description: "`bytes start-end/size`", schema: { type: "string" } } },
          content
        }
      }
      : {})
  }
}

const descriptionOf = (route: RouteDefinition): string | undefined => {
  const notes = [
    route.description,
    route.bucket === "send" ? "Counts in the `send` rate-limit bucket (not in `general`)." : undefined,
    route.authenticated === false ? "No API key; rate limited per client address." : undefined
  ].filter((note): note is string => note !== undefined)
  return notes.length === 0 ? undefined : notes.join("\n\n")
}

const pathParametersOf = (route: RouteDefinition, path: string, where: string): ReadonlyArray<JsonSchema> => {
  const rules = new Map(convertProperties(route.params ?? {}, `${where} params`).map((property) => [property.name, property]))
  return [...path.matchAll(/\{([^}]+)\}/g)].map(([, name = ""]) => {
    const rule = rules.get(name)
    if (rule === undefined) throw new Error(`${where}: path parameter "${name}" has no rule in params`)
    return { name, in: "path", required: true, schema: rule.schema }
  })
}

const queryParametersOf = (route: RouteDefinition, where: string): ReadonlyArray<JsonSchema> =>
  convertProperties(route.query ?? {}, `${where} query`).map((property) => ({
    name: property.name,
    in: "query",
    required: property.required,
    schema: property.schema
  }))

const successResponseOf = (route: RouteDefinition, definitions: Record<string, JsonSchema>): OpenApiResponse => {
  const limited = route.rateLimited === false ? REQUEST_ID_HEADER : RATE_LIMIT_HEADERS
  const headers = route.idempotent === true ? { ...limited, "Idempotent-Replayed": headerRef("Idempotent-Replayed") } : limited
  if (route.content !== undefined) {
    return {
      description: route.summary,
      headers,
      content: Object.fromEntries(
        route.content.map((mediaType) => [
          mediaType,
          { schema: mediaType.startsWith("application/json") ? { type: "object" } : { type: "string" } }
        ])
      )
    }
  }
  const data =
    route.data === undefined
      ? { description: "Not described." }
      : (JSONSchema.fromAST(route.data.ast, {
          definitions: definitions as unknown as Record<string, JSONSchema.JsonSchema7>,
          definitionPath: "#/components/schemas/",
          target: "openApi3.1"
        }) as unknown as JsonSchema)
  return {
    description: "Success: the envelope with `data`.",
    headers,
    content: {
      "application/json": {
        schema: {
          type: "object",
          required: ["status", "success", "message", "data", "errors"],
          properties: {
            status: { type: "integer", const: 200 },
            success: { type: "boolean", const: true },
            message: { type: "string" },
            data,
            errors: { type: "array", maxItems: 0, items: { $ref: "#/components/schemas/ErrorItem" } }
          }
        }
      }
    }
  }
}

const errorResponsesOf = (route: RouteDefinition, where: string): Record<string, OpenApiResponse> => {
  const codes = new Map<number, Array<string>>()
  const add = (status: number, ...more: ReadonlyArray<string>) => codes.set(status, [...(codes.get(status) ?? []), ...more])
  if (route.params !== undefined || route.query !== undefined || route.body !== undefined) add(400, ...VALIDATION_CODES)
  if (route.body !== undefined) add(400, "invalid_json")
  if (route.query !== undefined) add(400, "duplicate_parameter")
  if (route.idempotent === true) {
    add(400, "invalid_idempotency_key")
    add(409, "idempotency_key_in_progress")
    add(422, "idempotency_key_reused")
  }
  if (route.authenticated !== false) {
    add(401, "missing_api_key", "wrong_auth_scheme", "jwt_not_accepted", "invalid_api_key")
    add(403, "subscription_inactive", "api_access_not_allowed")
  }
  if (route.path.includes(":")) add(404, "not_found")
  for (const declared of route.errors ?? []) {
    // "403 invalid_signature": a code answered with another status on this route than the table's.
    const [, given, code = declared] = /^(\d{3}) (.+)$/.exec(declared) ?? []
    const status = given === undefined ? ERROR_CODE_STATUSES[code] : Number(given)
    if (status === undefined) throw new Error(`${where}: error code "${code}" has no status in ERROR_CODE_STATUSES`)
    add(status, code)
  }
  if (route.body !== undefined || route.verifyRawBody !== undefined || route.multipart !== undefined) {
    add(413, "payload_too_large")
    add(415, "unsupported_media_type")
  }
  if (route.multipart !== undefined) add(400, "invalid_body")
  if (route.rateLimited !== false) {
    add(429, "rate_limited")
    add(503, "rate_limit_unavailable")
  }
  return Object.fromEntries(
    [...codes.entries()]
      .sort(([a], [b]) => a - b)
      .map(([status, list]) => [String(status), errorResponse(status, [...new Set(list)])])
  )
}

const STATUS_MEANINGS: Readonly<Record<number, string>> = {
  400: "Invalid input or a business rule violated",
  401: "Missing or invalid API key, or a wrong authentication type",
  403: "The subscription, the plan's API access or a plan limit blocks the action",
  404: "A record the request names does not exist in the organization",
  413: "Request body over the size limit (1 MiB by default)",
  409: "A request with the same `Idempotency-Key` is still being processed (retry later), or the record is not in a state that allows the action",
  410: "The record's content is gone for good (failed or deleted)",
  416: "The `Range` is outside the file: `Content-Range: bytes */size` gives its size",
  415: "Request body is not of the route's media type (JSON, or multipart/form-data for an upload)",
  422: "The `Idempotency-Key` was used for another request (method, path or body differ)",
  429: "Rate limit exceeded: retry after `Retry-After` seconds, ideally with exponential backoff",
  502: "Meta's Graph API failed the call (refused the token, a limit, down or unreachable): the message gives Meta's reason",
  503: "The rate-limit store did not answer and the host chose `onStoreError: \"fail-closed\"`"
}

const errorResponse = (status: number, codes: ReadonlyArray<string>): OpenApiResponse => ({
  description: `${STATUS_MEANINGS[status] ?? "Failure"}. \`errors[].code\`: ${codes.map((code) => `\`${code}\``).join(", ")}.`,
  headers: status === 429 ? { ...RATE_LIMIT_HEADERS, "Retry-After": headerRef("Retry-After") } : REQUEST_ID_HEADER,
  content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorEnvelope" } } }
})

const pascal = (segment: string): string =>
  segment
    .split(/[^A-Za-z0-9]+/)
    .filter((word) => word !== "")
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join("")

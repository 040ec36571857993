import { Effect, Schema } from "effect"
import { HttpFailure } from "../HttpFailure.js"
import { API_TITLE, API_VERSION, openApiDocument } from "../openapi.js"
import { DOCS_CONTENT_SECURITY_POLICY, docsFile, docsPageHtml } from "../openapiDocsPage.js"
import { defineRoute, type RawContent, type RouteDefinition } from "./route.js"

// The discovery group (tag Guide, docs/api-reference.md): no API key, rate
// limited per client address in the `general` bucket. `openapi.json` and the `/docs`
// page and files are the only bodies outside the envelope.

/**
 * Data of `GET {base}/`: what the API is and where its description lives (absolute paths
 * on this server).
 *
 * @category schemas
 */
export const ApiIndexData = Schema.Struct({
  name: Schema.String,
  version: Schema.String,
  description: Schema.String,
  authentication: Schema.String,
  links: Schema.Struct({ openapi: Schema.String, docs: Schema.String, verify: Schema.String })
})

/**
 * `GET {base}/`: describes the API in the envelope: `{name, version: "1.0.0",
 * description, authentication, links: {openapi, docs, verify}}`.
 *
 * @category routes
 */
export const apiIndexRoute = defineRoute({
  method: "GET",
  path: "/",
  tag: "Guide",
  summary: "Describe the API and link to its OpenAPI document and reference page",
  authenticated: false,
  data: ApiIndexData,
  handle: ({ basePath }) =>
    Effect.succeed({
      message: API_TITLE,
      data: {
        name: API_TITLE,
        version: API_VERSION,
        description:
          "Contacts, groups, labels, templates, basic replies, chats and message sends of an organization; every response is the envelope {status, success, message, data, errors}.",
        authentication: "Authorization: Bearer <API_KEY> (the organization's API key); not needed for this group.",
        links: { openapi: `${basePath}/openapi.json`, docs: `${basePath}/docs`, verify: `${basePath}/verify` }
      }
    })
})

/**
 * `GET {base}/openapi.json`: the OpenAPI 3.1 document of the routes being served
 * (`openApiDocument`), not wrapped in the envelope. Built on the first request, then
 * served from memory.
 *
 * @category routes
 */
export const openApiRoute = defineRoute({
  method: "GET",
  path: "/openapi.json",
  tag: "Guide",
  summary: "The OpenAPI 3.1 document of this API",
  authenticated: false,
  content: ["application/json"],
  handle: ({ basePath, routes }) =>
    Effect.sync(
      (): RawContent => ({
        _tag: "RawContent",
        contentType: "application/json; charset=utf-8",
        content: openApiJson(basePath, routes),
        headers: { "cache-control": "no-cache" }
      })
    )
})

/**
 * `GET {base}/docs`: the API reference page (Swagger UI from `swagger-ui-dist`, served
 * from node_modules, works offline), with a strict Content-Security-Policy.
 *
 * @category routes
 */
export const docsPageRoute = defineRoute({
  method: "GET",
  path: "/docs",
  tag: "Guide",
  summary: "The API reference page (HTML)",
  authenticated: false,
  content: ["text/html"],
  handle: ({ basePath }) =>
    Effect.sync(
      (): RawContent => ({
        _tag: "RawContent",
        contentType: "text/html; charset=utf-8",
        content: docsPageHtml(basePath, API_TITLE),
        headers: {
          "content-security-policy": DOCS_CONTENT_SECURITY_POLICY,
          "x-content-type-options": "nosniff",
          "referrer-policy": "no-referrer",
          "cache-control": "no-cache"
        }
      })
    )
})

/**
 * `GET {base}/docs/{file}`: a file of the reference page (`swagger-ui.css`,
 * `swagger-ui-bundle.js`, `switchboard-docs.js`); any other name → 404 `not_found`.
 *
 * @category routes
 */
export const docsFileRoute = defineRoute({
  method: "GET",
  path: "/docs/:file",
  tag: "Guide",
  summary: "A file of the API reference page (script or stylesheet)",
  authenticated: false,
  params: { file: { type: "string" } },
  content: ["text/javascript", "text/css"],
  handle: ({ params }) =>
    Effect.flatMap(
      Effect.sync(() => docsFile(String(params.file))),
      (file): Effect.Effect<RawContent, HttpFailure> =>
        file === undefined
          ? Effect.fail(new HttpFailure({ status: 404, code: "not_found", message: `No file ${String(params.file)}` }))
          : Effect.succeed({
              _tag: "RawContent",
              contentType: file.contentType,
              content: file.content,
              headers: { "x-content-type-options": "nosniff", "cache-control": "public, max-age=3600" }
            })
    )
})

/**
 * The discovery routes, in documentation order.
 *
 * @category routes
 */
export const discoveryRoutes: ReadonlyArray<RouteDefinition> = [apiIndexRoute, openApiRoute, docsPageRoute, docsFileRoute]

/** The document of `routes` under `basePath` as JSON, built once per route table and base path. */
const openApiJson = (basePath: string, routes: ReadonlyArray<RouteDefinition>): string => {
  let byBasePath = documentCache.get(routes)
  if (byBasePath === undefined) {
    byBasePath = new Map()
    documentCache.set(routes, byBasePath)
  }
  let json = byBasePath.get(basePath)
  if (json === undefined) {
    json = JSON.stringify(openApiDocument({ basePath, routes }))
    byBasePath.set(basePath, json)
  }
  return json
}

const documentCache = new WeakMap<ReadonlyArray<RouteDefinition>, Map<string, string>>()

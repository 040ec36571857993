import FindMyWay, { type HTTPMethod } from "find-my-way"
import type { ValidationSchema } from "fastest-validator"
import { compileCheck, type CompiledCheck } from "./internal/validation.js"
import type { RouteDefinition } from "./routes/route.js"

/**
 * A route with its validators compiled once, at start-up, and the API it belongs to (its
 * `basePath` and whole route table, handed to handlers for the discovery routes).
 */
export interface CompiledRoute {
  readonly definition: RouteDefinition
  readonly basePath: string
  readonly routes: ReadonlyArray<RouteDefinition>
  readonly checkParams: CompiledCheck | undefined
  readonly checkQuery: CompiledCheck | undefined
  readonly checkBody: CompiledCheck | undefined
}

/** The result of matching a request path: a route with its raw path parameters, or why not. */
export type RouteMatch =
  | { readonly _tag: "Found"; readonly route: CompiledRoute; readonly params: Record<string, string | undefined> }
  | { readonly _tag: "MethodNotAllowed"; readonly allow: ReadonlyArray<string> }
  | { readonly _tag: "NotFound" }

const METHODS: ReadonlyArray<HTTPMethod> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]

/**
 * Builds the router (find-my-way, Fastify's radix router) for `routes` under `basePath`.
 * `HEAD` is answered by the `GET` route (without a body). Trailing slashes are ignored.
 */
export const makeRouter = (basePath: string, routes: ReadonlyArray<RouteDefinition>) => {
  const router = FindMyWay({ ignoreTrailingSlash: true, caseSensitive: true })
  for (const definition of routes) {
    const route: CompiledRoute = {
      definition,
      basePath,
      routes,
      checkParams: compileOptional(definition.params),
      checkQuery: compileOptional(definition.query),
      checkBody: compileOptional(definition.body)
    }
    const methods: Array<HTTPMethod> = definition.method === "GET" ? ["GET", "HEAD"] : [definition.method]
    router.on(methods, basePath + definition.path, () => undefined, route)
  }

  return (method: string, path: string): RouteMatch => {
    const found = router.find(method as HTTPMethod, path)
    if (found !== null) {
      return { _tag: "Found", route: found.store as CompiledRoute, params: found.params }
    }
    const allow = METHODS.filter((candidate) => router.find(candidate, path) !== null)
    return allow.length > 0 ? { _tag: "MethodNotAllowed", allow } : { _tag: "NotFound" }
  }
}

const compileOptional = (schema: ValidationSchema | undefined) =>
  schema === undefined ? undefined : compileCheck(schema)

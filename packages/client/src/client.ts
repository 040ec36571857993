/** `createClient` and the types of its methods (docs/client.md). */
import type { operations } from "./generated/openapi.js"
import { OPERATIONS, type OperationId } from "./generated/operations.js"
import { METHODS, type Methods } from "./methods.js"
import { makeList, type List } from "./paging.js"
import { request, sleep, type Answer, type RequestOptions, type Transport } from "./request.js"

/**
 * The options of {@link createClient}.
 *
 * @category client
 */
export interface ClientOptions {
  /** The API base as served, e.g. `http://localhost:3000/api/v1/api`. */
  readonly baseUrl: string
  /** The organization's API key (sent as `Authorization: Bearer …`; never in an error message). */
  readonly apiKey: string
  /** The `fetch` to use; default `globalThis.fetch`. */
  readonly fetch?: typeof globalThis.fetch
  /** Retries after a call's first attempt (docs/client.md "Retries"); default 2. */
  readonly maxRetries?: number
  /** Milliseconds one attempt may take; default 30 000. */
  readonly timeoutMs?: number
}

/**
 * A result with the `X-Request-Id` of the answer that carried it, as a non-enumerable `requestId`.
 *
 * @category client
 */
export type WithRequestId<T> = T extends object ? T & { readonly requestId: string | undefined } : T

type Operation<Id extends OperationId> = operations[Id]

type Strings<T extends ReadonlyArray<string>> = { [K in keyof T]: string }

type PathArguments<Id extends OperationId> = Strings<(typeof OPERATIONS)[Id]["pathParameters"]>

type QueryOf<O> = O extends { parameters: { query?: infer Q } } ? ([Q] extends [undefined] ? never : Exclude<Q, undefined>) : never

/** A multipart body is sent as `FormData`; any other as its JSON value. */
type ContentOf<B> = B extends { content: infer C } ? (C extends { "multipart/form-data": unknown } ? FormData : C[keyof C]) : never

type BodyOf<O> = O extends { requestBody: infer B } ? ContentOf<B> : O extends { requestBody?: infer B } ? ContentOf<Exclude<B, undefined>> : never

type InputArguments<Id extends OperationId> = (typeof OPERATIONS)[Id]["body"] extends "required"
  ? [body: BodyOf<Operation<Id>>]
  : (typeof OPERATIONS)[Id]["body"] extends "optional" ? [body?: BodyOf<Operation<Id>>]
  : (typeof OPERATIONS)[Id]["query"] extends true ? [query?: QueryOf<Operation<Id>>]
  : []

/**
 * The `data` of an operation's success; a `Response` for an operation whose success is not the envelope (a file's bytes).
 *
 * @category client
 */
export type DataOf<Id extends OperationId> = Operation<Id> extends { responses: { 200: { content: { "application/json": { data: infer D } } } } }
  ? D
  : Response

/**
 * The arguments of a method: its path parameters in path order, its body or query, then {@link RequestOptions}.
 *
 * @category client
 */
export type ArgumentsOf<Id extends OperationId> = [...PathArguments<Id>, ...InputArguments<Id>, options?: RequestOptions]

type ItemOf<Data, Key extends string> = Data extends { readonly [K in Key]: ReadonlyArray<infer Item> } ? Item : never

/**
 * One method of the client, as the table defines it.
 *
 * @category client
 */
export type MethodOf<Definition> = Definition extends { readonly operationId: infer Id extends OperationId; readonly items: infer Key extends string }
  ? (...args: ArgumentsOf<Id>) => List<ItemOf<DataOf<Id>, Key>, WithRequestId<DataOf<Id>>>
  : Definition extends { readonly operationId: infer Id extends OperationId } ? (...args: ArgumentsOf<Id>) => Promise<WithRequestId<DataOf<Id>>>
  : never

/**
 * The client: one object per resource, one method per operation (docs/client.md "Methods").
 *
 * @category client
 */
export type Client = {
  readonly [Resource in keyof Methods]: { readonly [Method in keyof Methods[Resource]]: MethodOf<Methods[Resource][Method]> }
}

/** `answer.data` with its `requestId` attached (non-enumerable, so it stays out of JSON and equality). */
const withRequestId = (answer: Answer): unknown => {
  const data = answer.data
  if (typeof data === "object" && data !== null && !(data instanceof Response)) {
    Object.defineProperty(data, "requestId", { value: answer.requestId, enumerable: false, configurable: true })
  } else if (data instanceof Response) {
    Object.defineProperty(data, "requestId", { value: answer.requestId, enumerable: false, configurable: true })
  }
  return data
}

/**
 * A client of the API at `options.baseUrl` with the organization's `apiKey`
 * (docs/client.md). Each method sends one operation and resolves to the envelope's `data`
 * (with a non-enumerable `requestId`); list methods answer an async iterable of the items
 * of every page, with `.pages()`. Failures reject with `ApiError` subclasses,
 * `ConnectionError` or `TimeoutError`. Throws a `TypeError` at once when `baseUrl` or
 * `apiKey` is empty or no `fetch` is available.
 *
 * @example
 * const client = createClient({ baseUrl: "http://localhost:3000/api/v1/api", apiKey: process.env.SWITCHBOARD_API_KEY! })
 * for await (const contact of client.contacts.list({ per_page: 100 })) console.log(contact.phone)
 *
 * @category client
 */
export const createClient = (options: ClientOptions): Client => {
  if (typeof options.baseUrl !== "string" || options.baseUrl === "") throw new TypeError("createClient: baseUrl is required")
  if (typeof options.apiKey !== "string" || options.apiKey === "") throw new TypeError("createClient: apiKey is required")
  const fetchImplementation = options.fetch ?? globalThis.fetch
  if (typeof fetchImplementation !== "function") throw new TypeError("createClient: no fetch is available; pass options.fetch")
  const transport: Transport = {
    baseUrl: options.baseUrl,
    apiKey: options.apiKey,
    fetch: fetchImplementation,
    maxRetries: options.maxRetries ?? 2,
    timeoutMs: options.timeoutMs ?? 30_000,
    sleep
  }
  const client: Record<string, Record<string, unknown>> = {}
  for (const [resource, methods] of Object.entries(METHODS)) {
    const group: Record<string, unknown> = {}
    for (const [name, definition] of Object.entries(methods)) {
      group[name] = methodOf(transport, definition.operationId, "items" in definition ? definition.items : undefined)
    }
    client[resource] = group
  }
  return client as Client
}

const methodOf = (transport: Transport, operationId: OperationId, items: string | undefined) => {
  const operation = OPERATIONS[operationId]
  const parameterCount = operation.pathParameters.length
  const hasInput = operation.body !== "none" || operation.query
  return (...args: Array<unknown>) => {
    const values = args.slice(0, parameterCount)
    if (values.length < parameterCount || values.some((value) => typeof value !== "string" || value === "")) {
      throw new TypeError(`${operationId}: expects ${operation.pathParameters.join(", ")} (non-empty strings)`)
    }
    const input = hasInput ? args[parameterCount] : undefined
    const options = (hasInput ? args[parameterCount + 1] : args[parameterCount]) as RequestOptions | undefined
    let path: string = operation.path
    operation.pathParameters.forEach((name, index) => {
      path = path.replace(`{${name}}`, encodeURIComponent(values[index] as string))
    })
    const call = (query: Record<string, unknown> | undefined) =>
      request(
        transport,
        {
          method: operation.method,
          path,
          query,
          body: operation.body === "none" ? undefined : input,
          idempotencyKey: operation.idempotencyKey,
          json: operation.json
        },
        options
      ).then(withRequestId)
    const query = operation.body === "none" && operation.query ? (input as Record<string, unknown> | undefined) : undefined
    if (items !== undefined) return makeList(call, items, query)
    return call(query)
  }
}

import type { ValidationSchema } from "fastest-validator"
import { paginationOf, type Page, type PageRequest, type Pagination } from "@switchboard/core"

/** Path parameters of every `/{uuid}` route: a UUID string, else 400 naming `uuid`. */
export const uuidParams: ValidationSchema = { uuid: { type: "uuid" } }

/**
 * The `page` query parameter of every paginated list: a whole number from 1 to 1 000 000
 * (docs/errors.md "Limits"); a page past the end is an empty list.
 */
export const pageNumber = { type: "number", integer: true, min: 1, max: 1_000_000, convert: true, optional: true } as const

/**
 * Query of the paginated lists (docs/http-api.md "Pagination"): `page` 1–1 000 000 (default 1) and
 * `per_page` 1–100 (default 20), integers.
 */
export const pageQuery: ValidationSchema = {
  page: pageNumber,
  per_page: { type: "number", integer: true, min: 1, max: 100, convert: true, optional: true }
}

/** The `limit` query parameter of the cursor-paginated lists: an integer 1–100 (docs/http-api.md "Pagination"). */
export const pageSize = { type: "number", integer: true, min: 1, max: 100, convert: true, optional: true } as const

/** The page request of a validated {@link pageQuery}, with defaults. */
export const pageRequestOf = (query: Readonly<Record<string, unknown>>): PageRequest => ({
  page: typeof query.page === "number" ? query.page : 1,
  per_page: typeof query.per_page === "number" ? query.per_page : 20
})

/** List data `{<name>: [...], pagination}` (docs/http-api.md "Pagination"). */
export const listData = <const Name extends string, A>(
  name: Name,
  request: PageRequest,
  page: Page<A>
): { readonly [K in Name]: ReadonlyArray<A> } & { readonly pagination: Pagination } =>
  ({ [name]: page.items, pagination: paginationOf(request, page.total) }) as {
    readonly [K in Name]: ReadonlyArray<A>
  } & { readonly pagination: Pagination }

/** One uuid, or an array of 1–1000 uuids (docs/http-api.md "Limits"). */
export const uuidOrUuids = {
  type: "multi",
  rules: [
    { type: "uuid" },
    { type: "array", items: { type: "uuid" }, min: 1, max: 1000 }
  ]
} as const

/**
 * A validated uuid in lowercase, the form ids are stored in: uuids are case-insensitive on
 * input (RFC 9562), so `0190F6B4-…` names the same record as `0190f6b4-…`.
 */
export const uuidOf = <Id extends string>(value: unknown): Id => String(value).toLowerCase() as Id

/** A validated {@link uuidOrUuids} value as an array of lowercase uuids. */
export const uuidsOf = <Id extends string>(value: unknown): ReadonlyArray<Id> =>
  (Array.isArray(value) ? value : [value]).map((item) => uuidOf<Id>(item))

/** `{id, message, ...record}`: the `{id, message}` data carrying the record (docs/http-api.md "Endpoints"). */
export const withIdAndMessage = <R extends { readonly uuid: string }>(message: string, record: R) => ({
  id: record.uuid,
  message,
  ...record
})

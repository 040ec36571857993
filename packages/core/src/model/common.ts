import { Schema } from "effect"

/**
 * Offset pagination of the contact, group, label, basic-reply and template lists (docs/http-api.md
 * "Pagination"): `page` ≥ 1, `per_page` 1–100.
 *
 * @category models
 */
export interface PageRequest {
  readonly page: number
  readonly per_page: number
}

/**
 * One page of records and the total count of records across all pages.
 *
 * @category models
 */
export interface Page<A> {
  readonly items: ReadonlyArray<A>
  readonly total: number
}

/**
 * The `pagination` object of list responses: `total_pages` is `ceil(total / per_page)`.
 *
 * @category models
 */
export interface Pagination {
  readonly page: number
  readonly per_page: number
  readonly total: number
  readonly total_pages: number
}

/**
 * The pagination object for a page request and its total.
 *
 * @category models
 */
export const paginationOf = (request: PageRequest, total: number): Pagination => ({
  page: request.page,
  per_page: request.per_page,
  total,
  total_pages: Math.ceil(total / request.per_page)
})

/** A uuid string (docs/http-api.md "Records and identifiers": every identifier named `uuid` is a UUID string). */
export const Uuid = Schema.UUID

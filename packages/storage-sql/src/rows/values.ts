import type { PageRequest } from "@switchboard/core"

/**
 * A boolean column as a driver answers it: `0`/`1` (SQLite) or `true`/`false`; read it with
 * the dialect's `readBoolean`.
 *
 * @category rows
 */
export type SqlBoolean = boolean | number

/**
 * A JSON column as a driver answers it: the text (SQLite) or the parsed value; read it with
 * the dialect's `readJson`.
 *
 * @category rows
 */
export type SqlJson = unknown

/**
 * A JSON document as the text a JSON column stores (key order kept), or `null` (for
 * `null` and `undefined`). Bind it as it is (SQLite) or cast (`?::json`).
 *
 * @category parameters
 */
export const jsonOrNull = (value: unknown): string | null =>
  value === null || value === undefined ? null : JSON.stringify(value)

/**
 * The `LIMIT` and `OFFSET` parameters of a page request.
 *
 * @category parameters
 */
export const pageBounds = (page: PageRequest): [number, number] => [page.per_page, (page.page - 1) * page.per_page]

/**
 * ISO 8601 (UTC, milliseconds) of epoch milliseconds.
 *
 * @category parameters
 */
export const iso = (millis: number): string => new Date(millis).toISOString()

/**
 * `columns` (a comma-separated list) each prefixed with `alias.`.
 *
 * @category statements
 */
export const columnsOf = (columns: string, alias: string): string =>
  columns
    .split(",")
    .map((column) => `${alias}.${column.trim()}`)
    .join(", ")

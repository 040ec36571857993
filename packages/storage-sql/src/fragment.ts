/**
 * A piece of SQL with `?` placeholders and their parameters, in text order.
 *
 * @category statements
 */
export interface Fragment {
  readonly sql: string
  readonly params: ReadonlyArray<unknown>
}

/**
 * The fragment `sql` with `params`.
 *
 * @category statements
 */
export const fragment = (sql: string, ...params: ReadonlyArray<unknown>): Fragment => ({ sql, params })

/**
 * The fragments joined by `AND`, their parameters in order.
 *
 * @category statements
 */
export const all = (fragments: ReadonlyArray<Fragment>): Fragment => ({
  sql: fragments.map((part) => part.sql).join(" AND "),
  params: fragments.flatMap((part) => part.params)
})

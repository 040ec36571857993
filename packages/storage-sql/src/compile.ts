import type { SqlDialect } from "./SqlDialect.js"

/**
 * The placeholder compiler of one dialect: a statement written once with `?` becomes the
 * dialect's text (`?` stays `?` on SQLite; `$1, $2, …` in order on PostgreSQL). A `?` inside
 * a quoted string or identifier (`'…'`, `"…"`) is left as it is. Compile a statement once per store (when the store's
 * statements are built), never per call.
 *
 * @example
 * const compile = compilerOf(dialect)
 * const FIND = compile(`SELECT uuid FROM ${dialect.table("chats")} WHERE organization_id = ? AND uuid = ?`)
 *
 * @category statements
 */
export const compilerOf =
  (dialect: Pick<SqlDialect, "placeholder">) =>
  (sql: string): string => {
    let out = ""
    let position = 0
    let quote: string | undefined
    for (let i = 0; i < sql.length; i++) {
      const c = sql[i]!
      if (quote !== undefined) {
        if (c === quote) quote = undefined
        out += c
      } else if (c === "'" || c === '"') {
        quote = c
        out += c
      } else if (c === "?") {
        out += dialect.placeholder(++position)
      } else {
        out += c
      }
    }
    return out
  }

/**
 * One statement and its parameters, compiled for a dialect.
 *
 * @category statements
 */
export interface Statement {
  readonly sql: string
  readonly params: ReadonlyArray<unknown>
}

import { Effect } from "effect"
import { HttpFailure } from "../HttpFailure.js"

/**
 * A query string's parameters, the names given more than once, and the names whose value
 * holds U+0000 (`%00`: refused, since PostgreSQL cannot store or compare it; every store
 * answers alike).
 */
export interface Query {
  readonly values: Record<string, string>
  readonly repeated: ReadonlyArray<string>
  readonly withNul: ReadonlyArray<string>
}

/** The parameters of a query string (without its `?`), each name once, and the repeated names. */
export const readQuery = (search: string): Query => {
  // No prototype: a parameter named `__proto__` is a plain (unknown, dropped) key.
  const values: Record<string, string> = Object.create(null)
  const repeated = new Set<string>()
  const withNul: Array<string> = []
  if (search === "") return { values, repeated: [], withNul }
  for (const [name, value] of new URLSearchParams(search)) {
    if (Object.hasOwn(values, name)) repeated.add(name)
    else values[name] = value
    if (value.includes("\u0000") || name.includes("\u0000")) withNul.push(name)
  }
  return { values, repeated: [...repeated], withNul }
}

/**
 * 400 for a query parameter holding U+0000 (`%00`) in its name or value
 * (docs/errors.md "Limits").
 */
export const nulInParameters = (names: ReadonlyArray<string>) =>
  Effect.fail(
    new HttpFailure({
      status: 400,
      code: "invalid_request",
      message: "Query parameters must not contain the character U+0000 (%00)",
      errors: names.map((name) => ({
        code: "invalid_format",
        field: name.replace(/\u0000/g, "\\u0000"),
        message: "must not contain the character U+0000 (%00)"
      }))
    })
  )

/**
 * 400 for a query parameter given more than once (`?page=1&page=2`): which one was meant
 * is ambiguous, so neither is picked (docs/errors.md "Limits").
 */
export const repeatedParameters = (names: ReadonlyArray<string>) =>
  Effect.fail(
    new HttpFailure({
      status: 400,
      code: "invalid_request",
      message: `Query parameter '${names[0]}' is given more than once`,
      errors: names.map((name) => ({
        code: "duplicate_parameter",
        field: name,
        message: `Query parameter '${name}' is given more than once`
      }))
    })
  )

import { Effect } from "effect"
import { HttpFailure } from "../HttpFailure.js"

/** A query string's parameters, and the names given more than once. */
export interface Query {
  readonly values: Record<string, string>
  readonly repeated: ReadonlyArray<string>
}

/** The parameters of a query string (without its `?`), each name once, and the repeated names. */
export const readQuery = (search: string): Query => {
  // No prototype: a parameter named `__proto__` is a plain (unknown, dropped) key.
  const values: Record<string, string> = Object.create(null)
  const repeated = new Set<string>()
  if (search === "") return { values, repeated: [] }
  for (const [name, value] of new URLSearchParams(search)) {
    if (Object.hasOwn(values, name)) repeated.add(name)
    else values[name] = value
  }
  return { values, repeated: [...repeated] }
}

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

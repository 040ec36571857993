import { Effect } from "effect"
import { InvalidInput } from "./commonErrors.js"

/** Longest name, trigger or other short text field, in characters (docs/contacts.md "Rules"). */
export const MAX_NAME_LENGTH = 255

/**
 * A trimmed name of 1–255 characters, or `InvalidInput` naming `name` (`required` when
 * empty, `too_long` past {@link MAX_NAME_LENGTH}): the rule of organization, group and
 * label names (docs/contacts.md "Rules").
 *
 * @category models
 */
export const validName = (value: string): Effect.Effect<string, InvalidInput> => {
  // `value` comes from decoded JSON at run time: a non-string is refused as `invalid_type`.
  const input: unknown = value
  const issue = (code: string, message: string) => Effect.fail(new InvalidInput({ issues: [{ code, field: "name", message }] }))
  if (input !== null && input !== undefined && typeof input !== "string") return issue("invalid_type", "name must be a string")
  const name = typeof input === "string" ? input.trim() : ""
  if (name === "") return issue("required", "name is required")
  if (name.length > MAX_NAME_LENGTH) return issue("too_long", `name must be at most ${MAX_NAME_LENGTH} characters`)
  return Effect.succeed(name)
}

/**
 * The key names are compared by for uniqueness (docs/contacts.md "Rules"): trimmed and
 * lowercased. Every adapter stores and matches this key.
 *
 * @category storage
 */
export const nameKey = (name: string): string => name.trim().toLowerCase()

import type { InputIssue } from "../errors.js"

/** Trims `value` and returns an issue when it is empty or longer than `max` characters. */
export const checkName = (
  field: string,
  value: string,
  max = 255
): { readonly value: string; readonly issue?: InputIssue } => {
  const trimmed = value.trim()
  if (trimmed.length === 0) {
    return { value: trimmed, issue: { code: "required", field, message: `${field} must not be empty` } }
  }
  if (trimmed.length > max) {
    return {
      value: trimmed,
      issue: { code: "too_long", field, message: `${field} must be at most ${max} characters` }
    }
  }
  return { value: trimmed }
}

import FastestValidator, { type ValidationError, type ValidationSchema } from "fastest-validator"
import type { ErrorItem } from "../envelope.js"

// fastest-validator's types declare an ES default export, its code sets module.exports:
// take whichever the module system handed us.
type ValidatorClass = typeof FastestValidator.default
const Validator: ValidatorClass =
  (FastestValidator as unknown as { default?: ValidatorClass }).default ?? (FastestValidator as unknown as ValidatorClass)
const validator = new Validator({ haltOnFirstError: false })

/** A compiled check: the value (possibly converted, unknown fields removed) or the errors. */
export type CompiledCheck = (value: unknown) => { ok: true; value: unknown } | { ok: false; errors: Array<ErrorItem> }

/**
 * Compiles a fastest-validator schema once (docs/api-reference.md): unknown properties are removed
 * (`$$strict: "remove"`, docs/http-adapter.md "Request edges"). `fieldPrefix`
 * names the request part in error paths when needed (path parameters and query keep bare
 * names).
 */
export const compileCheck = (schema: ValidationSchema): CompiledCheck => {
  const check = validator.compile({ $$strict: "remove", ...schema })
  return (value) => {
    const copy = isPlainObject(value) ? { ...value } : value
    const result = check(copy)
    if (result === true) return { ok: true, value: copy }
    return { ok: false, errors: (result as Array<ValidationError>).map(toErrorItem) }
  }
}

/** True for a JSON object (not an array, not null). */
export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const CODES: Readonly<Record<string, string>> = {
  required: "required",
  stringEmpty: "required",
  arrayEmpty: "required",
  string: "invalid_type",
  number: "invalid_type",
  numberInteger: "invalid_type",
  boolean: "invalid_type",
  object: "invalid_type",
  array: "invalid_type",
  stringMax: "too_long",
  stringLength: "out_of_range",
  stringMin: "out_of_range",
  arrayMax: "too_long",
  arrayMin: "out_of_range",
  arrayLength: "out_of_range",
  numberMin: "out_of_range",
  numberMax: "out_of_range",
  numberEqual: "out_of_range",
  numberPositive: "out_of_range"
}

/** Maps one fastest-validator error to an envelope error item (docs/errors.md "Validation (per field)"). */
const toErrorItem = (error: ValidationError): ErrorItem => ({
  code: CODES[error.type] ?? "invalid_format",
  message: error.message ?? `The '${error.field}' field is invalid`,
  field: error.field
})

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
  const arrayLimits = Object.entries(schema).flatMap(([field, rule]) => {
    const max = arrayMaxOf(rule)
    return max === undefined ? [] : [[field, max] as const]
  })
  const numberFields = Object.keys(schema).filter((field) => isConvertedNumber(schema[field]))
  return (value) => {
    const copy = isPlainObject(value) ? { ...value } : value
    const early = isPlainObject(copy) ? refusedBeforeValidation(copy, arrayLimits, numberFields) : []
    if (early.length > 0) return { ok: false, errors: early }
    const result = check(copy)
    if (result === true) return { ok: true, value: copy }
    return { ok: false, errors: (result as Array<ValidationError>).map(toErrorItem) }
  }
}

/**
 * What is refused before fastest-validator runs (docs/errors.md "Limits"): an array longer
 * than its rule's `max` (the validator would otherwise check every item and build one error
 * per item — a stack overflow for 200 000 of them), and a number given as text (query and
 * path parameters) that is not plain decimal digits (`Number()` would read `0x10`, `1e3`,
 * `Infinity` and blanks).
 */
const refusedBeforeValidation = (
  value: Record<string, unknown>,
  arrayLimits: ReadonlyArray<readonly [string, number]>,
  numberFields: ReadonlyArray<string>
): Array<ErrorItem> => [
  ...arrayLimits.flatMap(([field, max]) => {
    const given = value[field]
    return Array.isArray(given) && given.length > max
      ? [{ code: "too_long", field, message: `The '${field}' field must contain at most ${max} items.` }]
      : []
  }),
  ...numberFields.flatMap((field) => {
    const given = value[field]
    return typeof given === "string" && !DECIMAL.test(given)
      ? [{ code: "invalid_type", field, message: `The '${field}' field must be a number written in decimal digits.` }]
      : []
  })
]

const DECIMAL = /^-?[0-9]{1,16}(?:\.[0-9]{1,16})?$/

/** The `max` of an array rule, or of the array rule among a `multi` rule's alternatives. */
const arrayMaxOf = (rule: unknown): number | undefined => {
  if (!isPlainObject(rule)) return undefined
  if (rule.type === "array") return typeof rule.max === "number" ? rule.max : undefined
  if (rule.type === "multi" && Array.isArray(rule.rules)) {
    const limits = rule.rules.map(arrayMaxOf).filter((max): max is number => max !== undefined)
    return limits.length > 0 ? Math.max(...limits) : undefined
  }
  return undefined
}

const isConvertedNumber = (rule: unknown): boolean => isPlainObject(rule) && rule.type === "number" && rule.convert === true

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

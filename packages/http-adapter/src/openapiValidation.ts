import type { ValidationRule, ValidationSchema } from "fastest-validator"

/**
 * A JSON Schema (OpenAPI 3.1 dialect: JSON Schema 2020-12) as a plain object.
 *
 * @category openapi
 */
export type JsonSchema = { readonly [keyword: string]: unknown }

/**
 * A rule (or a whole schema) the converter cannot describe: an unknown rule type, an
 * option it does not know, or a string shorthand. Thrown so that a route using it fails
 * the document's build (and its tests) instead of producing a wrong document.
 *
 * @category openapi
 */
export class UnsupportedValidationRule extends Error {
  override readonly name = "UnsupportedValidationRule"
}

/**
 * One property of a fastest-validator object schema as JSON Schema: its name, its schema
 * and whether the validator requires it (not `optional`, no `default`).
 *
 * @category openapi
 */
export interface ConvertedProperty {
  readonly name: string
  readonly schema: JsonSchema
  readonly required: boolean
}

/**
 * The properties of a fastest-validator schema (the `params`, `query` or `body` of a
 * route) as JSON Schema, in declaration order; `$$` keys (`$$strict`, …) are skipped.
 * `path` names the schema in errors (for example `POST /labels body`).
 *
 * Rule types described: `any`, `array`, `boolean`, `email`, `enum`, `equal`, `multi`,
 * `number`, `object`, `string`, `uuid`, with the options that change what is accepted
 * (`optional`, `nullable`, `default`, `min`, `max`, `length`, `integer`, `positive`,
 * `negative`, `pattern`, `empty`, `values`, `items`, `props`, `rules`, `strict`, `unique`,
 * `value`) and the ones that do not (`convert`, `trim`, `messages`, `label`, `version`).
 * Anything else throws {@link UnsupportedValidationRule}.
 *
 * @category openapi
 */
export const convertProperties = (schema: ValidationSchema, path: string): ReadonlyArray<ConvertedProperty> =>
  Object.entries(schema)
    .filter(([name]) => !name.startsWith("$$"))
    .map(([name, rule]) => {
      const where = `${path}.${name}`
      return { name, schema: convertRule(rule, where), required: isRequired(rule, where) }
    })

/**
 * A fastest-validator schema as one JSON Schema object: `properties` and `required` of
 * {@link convertProperties}. Unknown properties are accepted by the handler and dropped
 * (`$$strict: "remove"`, docs/http-api.md), so `additionalProperties` is left open.
 *
 * @category openapi
 */
export const convertObjectSchema = (schema: ValidationSchema, path: string): JsonSchema => {
  const properties = convertProperties(schema, path)
  const required = properties.filter((property) => property.required).map((property) => property.name)
  return {
    type: "object",
    properties: Object.fromEntries(properties.map((property) => [property.name, property.schema])),
    ...(required.length > 0 ? { required } : {})
  }
}

/** Options every rule type may carry: presence, and those without effect on the shape. */
const COMMON_OPTIONS = ["type", "optional", "nullable", "default", "convert", "messages", "label"]

const OPTIONS_BY_TYPE: Readonly<Record<string, ReadonlyArray<string>>> = {
  any: [],
  array: ["items", "min", "max", "length", "empty", "unique"],
  boolean: [],
  email: ["empty", "min", "max", "normalize", "mode"],
  enum: ["values"],
  equal: ["value", "strict"],
  multi: ["rules"],
  number: ["integer", "min", "max", "equal", "positive", "negative"],
  object: ["props", "strict"],
  string: ["min", "max", "length", "pattern", "empty", "trim", "trimLeft", "trimRight", "enum"],
  uuid: ["version"]
}

type RuleObject = ValidationRule & { readonly [option: string]: unknown }

const convertRule = (rule: unknown, where: string): JsonSchema => {
  if (Array.isArray(rule)) return { anyOf: rule.map((each, index) => convertRule(each, `${where}[${index}]`)) }
  const object = asRuleObject(rule, where)
  const type = String(object.type)
  const allowed = OPTIONS_BY_TYPE[type]
  if (allowed === undefined) throw new UnsupportedValidationRule(`${where}: rule type "${type}" has no JSON Schema conversion`)
  const unknown = Object.keys(object).filter((option) => !COMMON_OPTIONS.includes(option) && !allowed.includes(option))
  if (unknown.length > 0) {
    throw new UnsupportedValidationRule(`${where}: option(s) ${unknown.join(", ")} of rule type "${type}" are not converted`)
  }
  const converted = withDefault(convertByType(object, where), object)
  return object.nullable === true ? nullable(converted) : converted
}

const convertByType = (rule: RuleObject, where: string): JsonSchema => {
  switch (rule.type) {
    case "any":
      return {}
    case "boolean":
      return { type: "boolean" }
    case "uuid":
      return { type: "string", format: "uuid" }
    case "email":
      return { type: "string", format: "email", ...lengths(rule, "Length", rule.empty === false) }
    case "string":
      return {
        type: "string",
        ...lengths(rule, "Length", rule.empty === false),
        ...(rule.pattern === undefined ? {} : { pattern: patternOf(rule.pattern) }),
        ...(Array.isArray(rule.enum) ? { enum: rule.enum } : {})
      }
    case "number":
      return {
        type: rule.integer === true ? "integer" : "number",
        ...(typeof rule.min === "number" ? { minimum: rule.min } : {}),
        ...(typeof rule.max === "number" ? { maximum: rule.max } : {}),
        ...(typeof rule.equal === "number" ? { const: rule.equal } : {}),
        ...(rule.positive === true ? { exclusiveMinimum: 0 } : {}),
        ...(rule.negative === true ? { exclusiveMaximum: 0 } : {})
      }
    case "enum":
      return enumOf(rule.values, where)
    case "equal":
      return { const: rule.value }
    case "array":
      return {
        type: "array",
        ...(rule.items === undefined ? {} : { items: convertRule(rule.items, `${where}[]`) }),
        ...lengths(rule, "Items", rule.empty === false),
        ...(rule.unique === true ? { uniqueItems: true } : {})
      }
    case "object":
      return {
        ...(isRecord(rule.props) ? convertObjectSchema(rule.props as ValidationSchema, where) : { type: "object" }),
        ...(rule.strict === true ? { additionalProperties: false } : {})
      }
    case "multi":
      if (!Array.isArray(rule.rules)) throw new UnsupportedValidationRule(`${where}: "multi" without "rules"`)
      return { anyOf: rule.rules.map((each, index) => convertRule(each, `${where}|${index}`)) }
    default:
      throw new UnsupportedValidationRule(`${where}: rule type "${rule.type}" has no JSON Schema conversion`)
  }
}

const asRuleObject = (rule: unknown, where: string): RuleObject => {
  if (typeof rule === "string") {
    throw new UnsupportedValidationRule(`${where}: string shorthand "${rule}" is not converted; write the rule as an object`)
  }
  if (!isRecord(rule) || typeof rule.type !== "string") {
    throw new UnsupportedValidationRule(`${where}: a rule must be an object with a string "type"`)
  }
  return rule as RuleObject
}

const isRequired = (rule: unknown, where: string): boolean => {
  if (Array.isArray(rule)) return rule.every((each, index) => isRequired(each, `${where}[${index}]`))
  const object = asRuleObject(rule, where)
  return object.optional !== true && object.default === undefined
}

/** `minLength`/`maxLength` or `minItems`/`maxItems` of `min`, `max`, `length`, `empty: false`. */
const lengths = (rule: RuleObject, noun: "Length" | "Items", nonEmpty: boolean): JsonSchema => {
  const min = typeof rule.length === "number" ? rule.length : typeof rule.min === "number" ? rule.min : nonEmpty ? 1 : undefined
  const max = typeof rule.length === "number" ? rule.length : typeof rule.max === "number" ? rule.max : undefined
  return { ...(min === undefined ? {} : { [`min${noun}`]: min }), ...(max === undefined ? {} : { [`max${noun}`]: max }) }
}

const patternOf = (pattern: unknown): string => (pattern instanceof RegExp ? pattern.source : String(pattern))

const enumOf = (values: unknown, where: string): JsonSchema => {
  if (!Array.isArray(values) || values.length === 0) {
    throw new UnsupportedValidationRule(`${where}: "enum" needs a non-empty "values" array`)
  }
  const types = new Set(values.map((value) => typeof value))
  const only = types.size === 1 ? [...types][0] : undefined
  return only === "string" || only === "number" || only === "boolean" ? { type: only, enum: values } : { enum: values }
}

const withDefault = (schema: JsonSchema, rule: RuleObject): JsonSchema =>
  rule.default === undefined || typeof rule.default === "function" ? schema : { ...schema, default: rule.default }

/** `schema` that also accepts `null`: a `type` list when it has one plain type, else `anyOf`. */
const nullable = (schema: JsonSchema): JsonSchema =>
  typeof schema.type === "string" && schema.enum === undefined
    ? { ...schema, type: [schema.type, "null"] }
    : { anyOf: [schema, { type: "null" }] }

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

import { Either } from "effect"
import secureJson from "secure-json-parse"

/**
 * The deepest nesting of arrays and objects accepted in JSON input (request bodies, import
 * files): 64 levels, `{}` and `[]` one level each (docs/errors.md "Limits"). Input nested
 * deeper is refused before anything walks it, so no code on the path recurses over an
 * unbounded depth of client data.
 *
 * @category json input
 */
export const MAX_JSON_DEPTH = 64

/**
 * Why JSON input was refused by {@link parseJsonInput} or {@link checkJsonInput}:
 * `not_utf8` (invalid UTF-8 bytes), `not_json` (a syntax error, an empty input),
 * `prototype_key` (a `__proto__` key, or a `constructor` key holding a `prototype`,
 * anywhere), `too_deep` (nested deeper than {@link MAX_JSON_DEPTH}) or `nul_character` (a
 * string or key holding U+0000, which PostgreSQL cannot store: refused for every store, so
 * the three answer alike). `message` is the
 * predicate of a sentence about the input, to put after its name ("Request body " +
 * message, "The import file " + message); it never quotes the input.
 *
 * @category json input
 */
export interface JsonInputProblem {
  readonly reason: "not_utf8" | "not_json" | "prototype_key" | "too_deep" | "nul_character"
  readonly message: string
}

/**
 * Parses untrusted JSON: decodes `input` as strict UTF-8 (invalid bytes are refused, never
 * replaced; a leading BOM is dropped), parses it with `secure-json-parse` (Fastify's
 * parser, which refuses prototype keys), checks the nesting depth, and refuses U+0000 in
 * any string or key (JSON can only carry it as the escape `\u0000`, so an input without
 * that text is not walked for it). Iterative throughout: a 100 000-level input costs no
 * stack.
 *
 * @category json input
 * @example
 * parseJsonInput(Buffer.from('{"a":[1]}')) // Either.right({ a: [1] })
 * parseJsonInput(Buffer.from('{"__proto__":{}}')) // Either.left({ reason: "prototype_key", … })
 */
export const parseJsonInput = (input: Uint8Array | string): Either.Either<unknown, JsonInputProblem> => {
  let text: string
  try {
    text = typeof input === "string" ? input : UTF8.decode(input)
  } catch {
    return Either.left(problem("not_utf8"))
  }
  let value: unknown
  try {
    value = secureJson.parse(text, null, PROTOTYPE_KEYS_REFUSED)
  } catch (error) {
    return Either.left(problem(isPrototypeKeyError(error) ? "prototype_key" : "not_json"))
  }
  if (nestsDeeperThan(value, MAX_JSON_DEPTH)) return Either.left(problem("too_deep"))
  return text.includes("\\u0000") && containsNulCharacter(value) ? Either.left(problem("nul_character")) : Either.right(value)
}

/**
 * The checks of {@link parseJsonInput} for a value parsed elsewhere (a host's
 * `express.json()`): prototype keys, depth and U+0000. Returns the value itself when it
 * passes.
 *
 * @category json input
 */
export const checkJsonInput = (value: unknown): Either.Either<unknown, JsonInputProblem> => {
  if (typeof value !== "object" || value === null) {
    return containsNulCharacter(value) ? Either.left(problem("nul_character")) : Either.right(value)
  }
  try {
    secureJson.scan(value, PROTOTYPE_KEYS_REFUSED)
  } catch {
    return Either.left(problem("prototype_key"))
  }
  if (nestsDeeperThan(value, MAX_JSON_DEPTH)) return Either.left(problem("too_deep"))
  return containsNulCharacter(value) ? Either.left(problem("nul_character")) : Either.right(value)
}

/**
 * Whether any string in `value`, or any key of its objects, holds U+0000. Iterative (an
 * explicit stack); call it on input already checked by {@link nestsDeeperThan}.
 *
 * @category json input
 */
export const containsNulCharacter = (value: unknown): boolean => {
  const pending: Array<unknown> = [value]
  while (pending.length > 0) {
    const current = pending.pop()
    if (typeof current === "string") {
      if (current.includes("\u0000")) return true
    } else if (Array.isArray(current)) {
      for (const child of current) pending.push(child)
    } else if (typeof current === "object" && current !== null) {
      for (const [key, child] of Object.entries(current)) {
        if (key.includes("\u0000")) return true
        pending.push(child)
      }
    }
  }
  return false
}

/**
 * Whether `value` nests arrays and objects more than `maxDepth` levels deep. Iterative (an
 * explicit stack, never recursion); it stops at the first container past the limit.
 *
 * @category json input
 */
export const nestsDeeperThan = (value: unknown, maxDepth: number): boolean => {
  const pending: Array<unknown> = [value]
  const depths: Array<number> = [0]
  while (pending.length > 0) {
    const current = pending.pop()
    const depth = depths.pop() as number
    if (typeof current !== "object" || current === null) continue
    if (depth + 1 > maxDepth) return true
    for (const child of Array.isArray(current) ? current : Object.values(current)) {
      if (typeof child === "object" && child !== null) {
        pending.push(child)
        depths.push(depth + 1)
      }
    }
  }
  return false
}

const UTF8 = new TextDecoder("utf-8", { fatal: true })

const PROTOTYPE_KEYS_REFUSED = { protoAction: "error", constructorAction: "error" } as const

/** secure-json-parse's refusal (a SyntaxError naming the property), told apart from JSON.parse's. */
const isPrototypeKeyError = (error: unknown): boolean =>
  error instanceof SyntaxError && /forbidden prototype property/i.test(error.message)

const MESSAGES: Record<JsonInputProblem["reason"], string> = {
  not_utf8: "is not valid UTF-8",
  not_json: "is not valid JSON",
  prototype_key: "must not contain a __proto__ key, nor a constructor key holding a prototype",
  too_deep: `nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`,
  nul_character: "must not contain the character U+0000 (\\u0000) in any string"
}

const problem = (reason: JsonInputProblem["reason"]): JsonInputProblem => ({ reason, message: MESSAGES[reason] })

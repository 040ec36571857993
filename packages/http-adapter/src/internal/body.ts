import type { IncomingMessage } from "node:http"
import { Effect } from "effect"
import secureJson from "secure-json-parse"
import { HttpFailure } from "../HttpFailure.js"

/** A request as hosts hand it over: Express and others may have parsed `body` already. */
export type HostRequest = IncomingMessage & { body?: unknown; originalUrl?: string }

/**
 * A request body as any host offers it (node:http, Express, a Fetch `Request`): the
 * `Content-Type` and `Content-Length` headers, a body the host may have parsed already,
 * and a way to read the raw bytes that fails with 413 `payload_too_large` as soon as more
 * than `limitBytes` arrive.
 */
export interface BodySource {
  readonly contentType: string | undefined
  readonly contentLength: string | undefined
  /** What the host left in `req.body` (`express.json()` an object, `express.raw()` a Buffer), or `undefined`. */
  readonly parsed: unknown
  readonly read: (limitBytes: number) => Effect.Effect<Buffer, HttpFailure>
}

/**
 * Reads a JSON request body (DESIGN §3 "Other edges"): a content type other than
 * `application/json` (or `application/*+json`) → 415 `unsupported_media_type`; more than
 * `limitBytes` → 413 `payload_too_large`; unparseable JSON → 400 `invalid_json`. A body
 * the host already parsed (`req.body`, as `express.json()` leaves it) is used as it is.
 * The one implementation of these rules for every host (node listener and Fetch handler).
 * Invalid UTF-8, a `__proto__` key anywhere, or nesting deeper than {@link MAX_JSON_DEPTH}
 * → 400 `invalid_json`; a host-parsed body gets the last two checks too.
 */
export const readJsonBody = (source: BodySource, limitBytes: number): Effect.Effect<unknown, HttpFailure> => {
  if (!isJsonContentType(source.contentType)) {
    return Effect.fail(
      new HttpFailure({
        status: 415,
        code: "unsupported_media_type",
        message: "Request body must be JSON: send Content-Type: application/json"
      })
    )
  }
  const parsed = source.parsed
  if (parsed !== undefined && !Buffer.isBuffer(parsed) && typeof parsed !== "string") {
    if (typeof parsed !== "object" || parsed === null) return Effect.succeed(parsed)
    return Effect.flatMap(
      Effect.try({ try: () => secureJson.scan(parsed, PROTOTYPE_KEYS_REFUSED), catch: prototypeKeyFailure }),
      () => checkDepth(parsed)
    )
  }
  const declared = Number(source.contentLength)
  if (source.contentLength !== undefined && Number.isFinite(declared) && declared > limitBytes) {
    return Effect.fail(tooLarge(limitBytes))
  }
  const raw = parsed !== undefined ? Effect.succeed(Buffer.from(parsed as Buffer | string)) : source.read(limitBytes)
  return Effect.flatMap(raw, (buffer) => {
    if (buffer.length > limitBytes) return Effect.fail(tooLarge(limitBytes))
    return Effect.flatMap(parseJson(buffer), checkDepth)
  })
}

/**
 * The deepest nesting of arrays and objects a request body may have: 64 levels (`{}` and
 * `[]` are one level each; docs/errors.md "Limits"). Deeper → 400 `invalid_json`, before
 * validation or any handler sees the body, so nothing on the request path recurses over an
 * unbounded depth of client data.
 */
export const MAX_JSON_DEPTH = 64

/**
 * Whether `value` nests arrays and objects more than `maxDepth` levels deep. Iterative (an
 * explicit stack, never recursion), it stops at the first container past the limit, so a
 * 100 000-level body costs no more than its first `maxDepth` levels.
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

/**
 * Decodes `buffer` as strict UTF-8 (invalid bytes are refused, not replaced) and parses it
 * with `secure-json-parse` (Fastify's parser): a `__proto__` key, or a `constructor` key
 * holding a `prototype`, anywhere in the body → 400 `invalid_json`, so client data can
 * never reach an object's prototype.
 */
const parseJson = (buffer: Buffer): Effect.Effect<unknown, HttpFailure> =>
  Effect.try({
    try: () => UTF8.decode(buffer),
    catch: () => new HttpFailure({ status: 400, code: "invalid_json", message: "Request body is not valid UTF-8" })
  }).pipe(
    Effect.flatMap((text) =>
      Effect.try({
        try: (): unknown => secureJson.parse(text, null, PROTOTYPE_KEYS_REFUSED),
        catch: (error) =>
          isPrototypeKeyError(error)
            ? prototypeKeyFailure()
            : new HttpFailure({ status: 400, code: "invalid_json", message: "Request body is not valid JSON" })
      })
    )
  )

const UTF8 = new TextDecoder("utf-8", { fatal: true })

const PROTOTYPE_KEYS_REFUSED = { protoAction: "error", constructorAction: "error" } as const

/** secure-json-parse's refusal (a SyntaxError naming the key), told apart from JSON.parse's. */
const isPrototypeKeyError = (error: unknown): boolean =>
  error instanceof SyntaxError && /forbidden prototype property/i.test(error.message)

const prototypeKeyFailure = () =>
  new HttpFailure({
    status: 400,
    code: "invalid_json",
    message: "Request body must not contain a __proto__ key, nor a constructor key holding a prototype"
  })

const checkDepth = (value: unknown): Effect.Effect<unknown, HttpFailure> =>
  nestsDeeperThan(value, MAX_JSON_DEPTH) ? Effect.fail(tooDeep()) : Effect.succeed(value)

/** 400 `invalid_json` for a body nested deeper than {@link MAX_JSON_DEPTH}. */
const tooDeep = () =>
  new HttpFailure({
    status: 400,
    code: "invalid_json",
    message: `Request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`
  })

/** The {@link BodySource} of a Node request (node:http, Express, Fastify's `request.raw`). */
export const nodeBodySource = (req: HostRequest): BodySource => ({
  contentType: req.headers["content-type"],
  contentLength: req.headers["content-length"],
  parsed: req.body,
  read: (limitBytes) => readStream(req, limitBytes)
})

/** `application/json`, or any `application/<x>+json`, with or without parameters. */
export const isJsonContentType = (header: string | undefined): boolean => {
  const type = header?.split(";", 1)[0]?.trim().toLowerCase() ?? ""
  return type === "application/json" || /^application\/[a-z0-9.+-]+\+json$/.test(type)
}

/** 413 `payload_too_large` for a body over `limitBytes` (the connection is closed after it). */
export const tooLarge = (limitBytes: number) =>
  new HttpFailure({
    status: 413,
    code: "payload_too_large",
    message: `Request body exceeds the limit of ${limitBytes} bytes`,
    headers: { connection: "close" }
  })

/** 400 `invalid_body`: the body stream failed before it ended. */
export const unreadableBody = () =>
  new HttpFailure({ status: 400, code: "invalid_body", message: "Request body could not be read" })

const readStream = (req: IncomingMessage, limitBytes: number): Effect.Effect<Buffer, HttpFailure> =>
  Effect.async<Buffer, HttpFailure>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > limitBytes) {
        cleanup()
        resume(Effect.fail(tooLarge(limitBytes)))
        return
      }
      chunks.push(chunk)
    }
    const onEnd = () => {
      cleanup()
      resume(Effect.succeed(Buffer.concat(chunks, size)))
    }
    const onError = () => {
      cleanup()
      resume(Effect.fail(unreadableBody()))
    }
    const cleanup = () => {
      req.off("data", onData)
      req.off("end", onEnd)
      req.off("error", onError)
    }
    req.on("data", onData)
    req.on("end", onEnd)
    req.on("error", onError)
    return Effect.sync(cleanup)
  })

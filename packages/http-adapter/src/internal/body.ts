import type { IncomingMessage } from "node:http"
import type { Readable } from "node:stream"
import { Effect, Either } from "effect"
import { checkJsonInput, parseJsonInput, type JsonInputProblem } from "@switchboard/core"
import { HttpFailure } from "../HttpFailure.js"

/**
 * A request as hosts hand it over: Express and others may have parsed `body` already, and
 * may have kept the raw bytes in `rawBody` (`express.json({ verify: (req, _res, buf) => {
 * req.rawBody = buf } })`).
 */
export type HostRequest = IncomingMessage & { body?: unknown; rawBody?: unknown; originalUrl?: string }

/**
 * A request body as any host offers it (node:http, Express, a Fetch `Request`): the
 * `Content-Type` and `Content-Length` headers, a body the host may have parsed already
 * with the raw bytes it may have kept, a way to read the raw bytes that fails with 413
 * `payload_too_large` as soon as more than `limitBytes` arrive, and the raw body as a
 * stream.
 */
export interface BodySource {
  readonly contentType: string | undefined
  readonly contentLength: string | undefined
  /** What the host left in `req.body` (`express.json()` an object, `express.raw()` a Buffer), or `undefined`. */
  readonly parsed: unknown
  /** The raw bytes a host that parsed the body kept (`req.rawBody`), or `undefined`. */
  readonly hostRawBytes: Uint8Array | undefined
  readonly read: (limitBytes: number) => Effect.Effect<Buffer, HttpFailure>
  /**
   * The raw body as a stream, read by its consumer (a multipart body). Node hands the
   * request itself: unpiping it leaves it readable, so a refusal can still drain it.
   */
  readonly stream: () => Readable
}

/**
 * Reads a JSON request body (docs/errors.md "Request format"): a content type other than
 * `application/json` (or `application/*+json`) → 415 `unsupported_media_type`; more than
 * `limitBytes` → 413 `payload_too_large`; unparseable JSON → 400 `invalid_json`. A body
 * the host already parsed (`req.body`, as `express.json()` leaves it) is used as it is.
 * The one implementation of these rules for every host (node listener and Fetch handler).
 * Invalid UTF-8, a `__proto__` key anywhere, or nesting deeper than 64 levels (`MAX_JSON_DEPTH`)
 * → 400 `invalid_json`; a host-parsed body gets the last two checks too.
 */
export const readJsonBody = (source: BodySource, limitBytes: number): Effect.Effect<unknown, HttpFailure> => {
  const parsed = source.parsed
  if (isHostParsed(parsed)) {
    return isJsonContentType(source.contentType) ? fromJsonInput(checkJsonInput(parsed)) : Effect.fail(notJson())
  }
  return Effect.flatMap(readRawBody(source, limitBytes), parseJsonBody)
}

/**
 * Reads the exact bytes of a JSON request body, for a check over them before parsing (a
 * webhook signature): 415 and 413 as {@link readJsonBody}. When the host parsed the body
 * already, its kept `req.rawBody` is used; without it the bytes are gone, and the answer
 * is 500 `raw_body_unavailable` (a mounting mistake, logged with how to fix it).
 */
export const readRawBody = (source: BodySource, limitBytes: number): Effect.Effect<Buffer, HttpFailure> => {
  if (!isJsonContentType(source.contentType)) return Effect.fail(notJson())
  const parsed = source.parsed
  if (isHostParsed(parsed)) {
    return source.hostRawBytes === undefined ? hostConsumedBody() : Effect.succeed(Buffer.from(source.hostRawBytes))
  }
  const declared = Number(source.contentLength)
  if (source.contentLength !== undefined && Number.isFinite(declared) && declared > limitBytes) {
    return Effect.fail(tooLarge(limitBytes))
  }
  const raw = parsed !== undefined ? Effect.succeed(Buffer.from(parsed as Buffer | string)) : source.read(limitBytes)
  return Effect.flatMap(raw, (buffer) => (buffer.length > limitBytes ? Effect.fail(tooLarge(limitBytes)) : Effect.succeed(buffer)))
}

/** Parses raw body bytes with the rules of {@link readJsonBody}. */
export const parseJsonBody = (bytes: Uint8Array): Effect.Effect<unknown, HttpFailure> => fromJsonInput(parseJsonInput(bytes))

/** A body the host parsed into a value (not bytes or text it merely buffered). */
const isHostParsed = (parsed: unknown): boolean =>
  parsed !== undefined && !Buffer.isBuffer(parsed) && typeof parsed !== "string"

const notJson = () =>
  new HttpFailure({
    status: 415,
    code: "unsupported_media_type",
    message: "Request body must be JSON: send Content-Type: application/json"
  })

const RAW_BODY_HINT =
  "A route that checks the raw request body got a body the host had already parsed, without its bytes: " +
  "keep them as req.rawBody (express.json({ verify: (req, _res, buf) => { req.rawBody = buf } })), " +
  "or mount the handler before the body parser (docs/mounting.md)"

/**
 * 500 `raw_body_unavailable`, logged with how to mount the handler: a route that needs the
 * body's bytes got a body the host had already consumed.
 */
export const hostConsumedBody = (): Effect.Effect<never, HttpFailure> =>
  Effect.logError(RAW_BODY_HINT).pipe(Effect.zipRight(Effect.fail(rawBodyUnavailable())))

const rawBodyUnavailable = () =>
  new HttpFailure({
    status: 500,
    code: "raw_body_unavailable",
    message: "The server cannot check this request: its raw body was not kept"
  })

/** A refused JSON input (docs/errors.md "Limits") as 400 `invalid_json`. */
const fromJsonInput = (result: Either.Either<unknown, JsonInputProblem>): Effect.Effect<unknown, HttpFailure> =>
  Either.isRight(result)
    ? Effect.succeed(result.right)
    : Effect.fail(new HttpFailure({ status: 400, code: "invalid_json", message: `Request body ${result.left.message}` }))

/** The {@link BodySource} of a Node request (node:http, Express, Fastify's `request.raw`). */
export const nodeBodySource = (req: HostRequest): BodySource => ({
  contentType: req.headers["content-type"],
  contentLength: req.headers["content-length"],
  parsed: req.body,
  hostRawBytes: req.rawBody instanceof Uint8Array ? req.rawBody : undefined,
  read: (limitBytes) => readStream(req, limitBytes),
  stream: () => req
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

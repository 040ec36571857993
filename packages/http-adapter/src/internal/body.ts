import type { IncomingMessage } from "node:http"
import { Effect } from "effect"
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
 * Reads a JSON request body (docs/http-adapter.md "Request edges"): a content type other than
 * `application/json` (or `application/*+json`) → 415 `unsupported_media_type`; more than
 * `limitBytes` → 413 `payload_too_large`; unparseable JSON → 400 `invalid_json`. A body
 * the host already parsed (`req.body`, as `express.json()` leaves it) is used as it is.
 * The one implementation of these rules for every host (node listener and Fetch handler).
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
    return Effect.succeed(parsed)
  }
  const declared = Number(source.contentLength)
  if (source.contentLength !== undefined && Number.isFinite(declared) && declared > limitBytes) {
    return Effect.fail(tooLarge(limitBytes))
  }
  const raw = parsed !== undefined ? Effect.succeed(Buffer.from(parsed as Buffer | string)) : source.read(limitBytes)
  return Effect.flatMap(raw, (buffer) => {
    if (buffer.length > limitBytes) return Effect.fail(tooLarge(limitBytes))
    return Effect.try({
      try: (): unknown => JSON.parse(buffer.toString("utf8")),
      catch: () =>
        new HttpFailure({ status: 400, code: "invalid_json", message: "Request body is not valid JSON" })
    })
  })
}

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

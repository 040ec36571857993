import type { IncomingMessage } from "node:http"
import { Effect } from "effect"
import { HttpFailure } from "../HttpFailure.js"

/** A request as hosts hand it over: Express and others may have parsed `body` already. */
export type HostRequest = IncomingMessage & { body?: unknown; originalUrl?: string }

/**
 * Reads a JSON request body (DESIGN §3 "Other edges"): a content type other than
 * `application/json` (or `application/*+json`) → 415 `unsupported_media_type`; more than
 * `limitBytes` → 413 `payload_too_large`; unparseable JSON → 400 `invalid_json`. A body
 * the host already parsed (`req.body`, as `express.json()` leaves it) is used as it is.
 */
export const readJsonBody = (req: HostRequest, limitBytes: number): Effect.Effect<unknown, HttpFailure> => {
  if (!isJsonContentType(req.headers["content-type"])) {
    return Effect.fail(
      new HttpFailure({
        status: 415,
        code: "unsupported_media_type",
        message: "Request body must be JSON: send Content-Type: application/json"
      })
    )
  }
  if (req.body !== undefined && !Buffer.isBuffer(req.body) && typeof req.body !== "string") {
    return Effect.succeed(req.body)
  }
  const declared = Number(req.headers["content-length"])
  if (Number.isFinite(declared) && declared > limitBytes) return Effect.fail(tooLarge(limitBytes))
  const raw = req.body !== undefined ? Effect.succeed(Buffer.from(req.body as Buffer | string)) : readStream(req, limitBytes)
  return Effect.flatMap(raw, (buffer) => {
    if (buffer.length > limitBytes) return Effect.fail(tooLarge(limitBytes))
    return Effect.try({
      try: (): unknown => JSON.parse(buffer.toString("utf8")),
      catch: () =>
        new HttpFailure({ status: 400, code: "invalid_json", message: "Request body is not valid JSON" })
    })
  })
}

/** `application/json`, or any `application/<x>+json`, with or without parameters. */
export const isJsonContentType = (header: string | undefined): boolean => {
  const type = header?.split(";", 1)[0]?.trim().toLowerCase() ?? ""
  return type === "application/json" || /^application\/[a-z0-9.+-]+\+json$/.test(type)
}

const tooLarge = (limitBytes: number) =>
  new HttpFailure({
    status: 413,
    code: "payload_too_large",
    message: `Request body exceeds the limit of ${limitBytes} bytes`,
    headers: { connection: "close" }
  })

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
      resume(Effect.fail(new HttpFailure({ status: 400, code: "invalid_body", message: "Request body could not be read" })))
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

import { Readable, Transform, type TransformCallback } from "node:stream"
import busboy from "busboy"
import { Effect } from "effect"
import { HttpFailure } from "../HttpFailure.js"
import { type BodySource, hostConsumedBody, tooLarge, unreadableBody } from "./body.js"

/**
 * A form field of a multipart body: its `name` and `value` (text, at most the route's
 * `maxFieldBytes`).
 *
 * @category routes
 */
export interface MultipartField {
  readonly kind: "field"
  readonly name: string
  readonly value: string
}

/**
 * A file part of a multipart body: its part `name`, the `filename` and `mimeType` the client
 * declared (not checked: sniff the bytes), and `stream`, its bytes as they arrive. Read the
 * stream to its end (or `resume()` it) before asking for the next part: the parser waits
 * for it. Past the route's `maxBytes` the stream fails with the 413 {@link HttpFailure}.
 *
 * @category routes
 */
export interface MultipartFile {
  readonly kind: "file"
  readonly name: string
  readonly filename: string | null
  readonly mimeType: string
  readonly stream: Readable
}

/** @category routes */
export type MultipartPart = MultipartField | MultipartFile

/**
 * The body a route declared with `multipart` gets (docs/extending.md "Your own routes"):
 * `parts`, the fields and files in the order the client sent them, read from the wire as
 * they are asked for (a file is never held in memory). Iterating throws an
 * {@link HttpFailure}: 413 `payload_too_large` once the body passes `maxBytes` (the
 * connection is then closed after the answer, the rest of the upload read and dropped), 400
 * `invalid_body` for a body that is not well-formed multipart or that more parts than
 * allowed.
 *
 * @category routes
 */
export interface MultipartBody {
  readonly _tag: "MultipartBody"
  readonly parts: AsyncIterable<MultipartPart>
  /** The request's `Content-Length` in bytes, when it gave one. */
  readonly contentLength?: number
}

/**
 * A route's multipart limits: `maxBytes`, the largest body (bytes, every part together);
 * `maxFiles` (default 1), `maxFields` (default 20) and `maxFieldBytes` (default 65 536)
 * per field value.
 *
 * @category routes
 */
export interface MultipartLimits {
  readonly maxBytes: number
  readonly maxFiles?: number
  readonly maxFields?: number
  readonly maxFieldBytes?: number
}

/**
 * Starts reading a multipart body (docs/errors.md "Request format"): a content type other
 * than `multipart/form-data` with a boundary → 415 `unsupported_media_type`; a declared
 * `Content-Length` over `maxBytes` → 413 at once; a body the host already parsed into a
 * value without keeping its bytes → 500 `raw_body_unavailable` (logged with how to mount the
 * handler; bytes it kept, `express.raw()`'s Buffer or `req.rawBody`, are read instead). The
 * parts are read as the route iterates them ({@link MultipartBody}).
 */
export const readMultipart = (source: BodySource, limits: MultipartLimits): Effect.Effect<MultipartBody, HttpFailure> => {
  const contentType = source.contentType ?? ""
  if (!/^multipart\/form-data\s*;.*\bboundary=/i.test(contentType)) return Effect.fail(notMultipart())
  const declared = Number(source.contentLength)
  if (source.contentLength !== undefined && Number.isFinite(declared) && declared > limits.maxBytes) {
    return Effect.fail(tooLarge(limits.maxBytes))
  }
  const input = inputOf(source)
  if (input === undefined) return hostConsumedBody()
  return Effect.sync(() => ({
    _tag: "MultipartBody",
    parts: partsOf(input, contentType, limits),
    ...(source.contentLength !== undefined && Number.isFinite(declared) ? { contentLength: declared } : {})
  }))
}

/**
 * Where the body's bytes come from: the request's stream; or, when the host read it
 * already, the bytes it kept (`express.raw()`'s Buffer, a kept `req.rawBody`); `undefined`
 * when they are gone (a body parsed into a value without its bytes).
 */
const inputOf = (source: BodySource): (() => Readable) | undefined => {
  const { parsed, hostRawBytes } = source
  if (parsed === undefined) return source.stream
  if (Buffer.isBuffer(parsed) || typeof parsed === "string") return () => Readable.from([Buffer.from(parsed)])
  if (hostRawBytes !== undefined) return () => Readable.from([Buffer.from(hostRawBytes)])
  return undefined
}

const notMultipart = () =>
  new HttpFailure({
    status: 415,
    code: "unsupported_media_type",
    message: "Request body must be multipart/form-data (with a boundary)"
  })

/** What the parser hands the iterator: a part, the end, or a failure. */
type Event = { readonly part: MultipartPart } | { readonly end: true } | { readonly failure: HttpFailure }

async function* partsOf(stream: () => Readable, contentType: string, limits: MultipartLimits): AsyncGenerator<MultipartPart> {
  const events: Array<Event> = []
  let wake: (() => void) | undefined
  let failed: HttpFailure | undefined
  const push = (event: Event) => {
    events.push(event)
    wake?.()
  }
  const input = stream()
  const counter = new ByteCounter(limits.maxBytes)
  const parser = busboy({
    headers: { "content-type": contentType },
    // File names are UTF-8 (browsers and fetch's FormData send them so), not Latin-1.
    defParamCharset: "utf8",
    limits: {
      files: limits.maxFiles ?? 1,
      fields: limits.maxFields ?? 20,
      fieldSize: limits.maxFieldBytes ?? 65_536,
      parts: (limits.maxFiles ?? 1) + (limits.maxFields ?? 20)
    }
  })
  const openFiles = new Set<Readable>()
  const fail = (failure: HttpFailure) => {
    if (failed !== undefined) return
    failed = failure
    // The request stays readable: the answer's `Connection: close` reads and drops the rest.
    input.unpipe(counter)
    counter.unpipe(parser)
    for (const file of openFiles) file.destroy(failure)
    parser.destroy()
    push({ failure })
  }
  counter.on("error", (error) => fail(error instanceof HttpFailure ? error : unreadableBody()))
  input.on("error", () => fail(unreadableBody()))
  parser.on("field", (name, value, info) => {
    if (info.valueTruncated) return fail(invalidBody(`The field ${name} is longer than ${limits.maxFieldBytes ?? 65_536} bytes`))
    push({ part: { kind: "field", name, value } })
  })
  parser.on("file", (name, stream, info) => {
    openFiles.add(stream)
    stream.once("close", () => openFiles.delete(stream))
    // Its reader sees a failure through its own reads; a file nobody reads must not crash the process.
    stream.on("error", () => undefined)
    push({ part: { kind: "file", name, filename: info.filename ?? null, mimeType: info.mimeType, stream } })
  })
  parser.on("filesLimit", () => fail(invalidBody(`At most ${limits.maxFiles ?? 1} file(s) may be sent`)))
  parser.on("fieldsLimit", () => fail(invalidBody(`At most ${limits.maxFields ?? 20} fields may be sent`)))
  parser.on("partsLimit", () => fail(invalidBody("Too many parts")))
  parser.on("error", () => fail(invalidBody("The body is not well-formed multipart/form-data")))
  parser.on("close", () => push({ end: true }))
  input.pipe(counter).pipe(parser)
  try {
    for (;;) {
      const event = events.shift()
      if (event === undefined) {
        await new Promise<void>((resolve) => (wake = resolve))
        wake = undefined
        continue
      }
      if ("failure" in event) throw event.failure
      if ("end" in event) {
        if (failed !== undefined) throw failed
        return
      }
      yield event.part
    }
  } finally {
    // A route that stopped early (or failed) leaves the rest unread: drop the open files.
    for (const file of openFiles) file.resume()
  }
}

const invalidBody = (message: string) => new HttpFailure({ status: 400, code: "invalid_body", message })

/** Passes bytes through, failing with the 413 {@link HttpFailure} once more than `limit` passed. */
class ByteCounter extends Transform {
  private seen = 0
  constructor(private readonly limit: number) {
    super()
  }
  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.seen += chunk.length
    if (this.seen > this.limit) callback(tooLarge(this.limit))
    else callback(null, chunk)
  }
}

/** A web stream as a Node stream, for the Fetch handler's multipart bodies. */
export const readableOf = (body: ReadableStream<Uint8Array> | null): Readable =>
  body === null ? Readable.from([]) : Readable.fromWeb(body as import("node:stream/web").ReadableStream<Uint8Array>)

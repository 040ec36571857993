import type { IncomingMessage, ServerResponse } from "node:http"
import { pipeline } from "node:stream/promises"
import busboy from "busboy"
import { graphError, invalidParameterError, invalidTokenError, unknownObjectError } from "./graphErrors.js"
import { essenceOf, MAX_MEDIA_BYTES, type MediaLibrary, type SimulatedMedia, UPLOAD_TYPES } from "./media.js"
import { digitsOf, newWamid, type SimulatedNumber } from "./payloads.js"
import { bearerToken, NONE, scriptedRefusal, sleep, tokensOf, writeJson } from "./graphAnswers.js"
import { interactiveProblem } from "./graphInteractive.js"
import { answerReadReceipt, type DeliveredInbound, isReadReceipt } from "./graphReads.js"
import { answerTemplates } from "./graphTemplates.js"
import type { AnswerRecord } from "./records.js"
import type { Answer, Route, Script } from "./script.js"
import type { TemplateLibrary } from "./templates.js"

/** The largest request body read (Meta's own limit for a send is far below). */
const MAX_BODY_BYTES = 4 * 1024 * 1024

/**
 * One request, read whole: where it goes and its body (JSON parsed when it is JSON). An
 * upload's body (`media_upload`, and the control API's `POST /_simulator/media`) is left
 * unread for its route to stream: `text` is `""` and `body` `null`. `objectId` is the id of
 * `GET /{version}/{id}` (a number's or a media's), the account of a template route
 * (`/{version}/{waba_id}/message_templates`) and a download's token.
 */
export interface GraphRequest {
  readonly method: string
  readonly url: string
  readonly path: string
  readonly query: URLSearchParams
  readonly route: Route | null
  readonly phoneNumberId: string | null
  readonly objectId: string | null
  readonly text: string
  readonly body: unknown
}

/** What the Graph side needs of the simulator. */
export interface GraphHost {
  readonly script: Script
  readonly media: MediaLibrary
  readonly templates: TemplateLibrary
  /** The simulator's base URL, which download URLs start with. */
  readonly url: string
  number(phoneNumberId: string): SimulatedNumber | undefined
  numbers(): ReadonlyArray<SimulatedNumber>
  /** The customer's message delivered as `wamid` (what a read receipt must name), or `undefined`. */
  inboundMessage(wamid: string): DeliveredInbound | undefined
}

/**
 * What answering one Graph request gave; a successful send has a `wamid` and its
 * `recipient`; an upload has `body`, what the received entry keeps of it (its fields and the
 * file's name, type, size and sha256, never its bytes).
 */
export interface GraphOutcome {
  readonly answer: AnswerRecord
  readonly wamid: string | null
  readonly recipient: string | null
  readonly scripted: Answer
  readonly callbackData: string | null
  readonly category: string
  readonly body?: unknown
}

/**
 * Works out a request's Graph route (`GET /{version}/{id}` is a number's `lookup` when the
 * id is a known number, else a `media_lookup` when it is a known media; a `POST …/messages`
 * whose body has `status: "read"` is a `mark_read`) and reads its body (up to 4 MiB), but
 * for an upload's.
 */
export const readRequest = async (req: IncomingMessage, host: Pick<GraphHost, "number" | "media">): Promise<GraphRequest> => {
  const url = req.url ?? "/"
  const parsed = new URL(url, "http://simulator.local")
  const segments = parsed.pathname.split("/").slice(1)
  const method = req.method ?? "GET"
  const versioned = /^v\d+\.\d+$/.test(segments[0] ?? "") && /^\d+$/.test(segments[1] ?? "")
  const objectId = versioned ? segments[1]! : segments[0] === "_media" && segments.length === 2 ? segments[1]! : null
  const route: Route | null =
    method === "GET" && segments[0] === "_media" && segments.length === 2
      ? "media_download"
      : !versioned
        ? null
        : method === "GET" && segments.length === 2
          ? host.number(objectId!) === undefined && host.media.get(objectId!) !== undefined
            ? "media_lookup"
            : "lookup"
          : method === "POST" && segments.length === 3 && segments[2] === "messages"
            ? "messages"
            : method === "POST" && segments.length === 3 && segments[2] === "media"
              ? "media_upload"
              : segments.length === 3 && segments[2] === "message_templates"
                ? (TEMPLATE_ROUTES[method] ?? null)
                : null
  const streamed = route === "media_upload" || (method === "POST" && parsed.pathname === "/_simulator/media")
  const text = streamed ? "" : await readText(req)
  const body = parseBody(text)
  return {
    method,
    url,
    path: parsed.pathname,
    query: parsed.searchParams,
    route: route === "messages" && isReadReceipt(body) ? "mark_read" : route,
    phoneNumberId: versioned && route !== "media_lookup" && !isTemplateRoute(route) ? objectId : null,
    objectId,
    text,
    body
  }
}

/** The template routes of `/{version}/{waba_id}/message_templates`, by method. */
const TEMPLATE_ROUTES: Readonly<Record<string, Route>> = { GET: "templates_list", POST: "templates_create", DELETE: "templates_delete" }

const isTemplateRoute = (route: Route | null): boolean => route === "templates_list" || route === "templates_create" || route === "templates_delete"

/** The request's body as text, up to 4 MiB (the rest is read and dropped). */
const readText = async (req: IncomingMessage): Promise<string> => {
  const chunks: Array<Buffer> = []
  let size = 0
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size <= MAX_BODY_BYTES) chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString("utf8")
}

const parseBody = (text: string): unknown => {
  if (text === "") return null
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/**
 * Answers one Graph request as Meta would: the token is checked first (missing or unknown
 * → 190, HTTP 401), then the number or media (unknown, or not this token's → 100 subcode
 * 33), then a send's body, an upload's parts or a read receipt (`answerReadReceipt`,
 * graphReads.ts) (→ 100, 131009, 131053; an interactive send's object against Meta's
 * limits → 131009 naming the parameter: graphInteractive.ts); only then does the
 * {@link Script} decide (delay, drop, refusal), and a success answers the number
 * (look-up), a fresh wamid (send), the media's record with a download URL (media look-up),
 * its bytes (download) or its new id (upload). The template routes are answered by
 * `answerTemplates` (graphTemplates.ts) once the token is known.
 */
export const answerGraph = async (
  host: GraphHost,
  request: GraphRequest,
  req: IncomingMessage,
  res: ServerResponse
): Promise<GraphOutcome> => {
  const refused = (status: number, body: unknown) => ({ ...NONE, answer: writeJson(res, status, body) })
  if (request.route === null) {
    return refused(400, graphError(2500, { message: `Unknown path components: ${request.path}` }))
  }
  const token = bearerToken(req, request.query)
  if (token === null || !host.numbers().some((number) => tokensOf(number).includes(token))) return refused(401, invalidTokenError())
  if (request.route === "media_download") return answerDownload(host, request, token, req, res)
  if (request.route === "media_lookup") return answerMediaLookup(host, request, token, req, res)
  if (isTemplateRoute(request.route)) return answerTemplates(host, request, token, req, res)
  const number = host.number(request.phoneNumberId!)
  if (number === undefined || !tokensOf(number).includes(token)) {
    return refused(400, unknownObjectError(request.method, request.phoneNumberId!))
  }
  if (request.route === "media_upload") return answerUpload(host, number, req, res)
  if (request.route === "mark_read") return answerReadReceipt(host, number, request.body, req, res)
  const send = request.route === "messages" ? readSend(request.body) : null
  if (typeof send === "string") return refused(400, invalidParameterError(send))
  const unknownMedia = send === null ? undefined : unknownMediaOf(host, number, request.body, send.type)
  if (unknownMedia !== undefined) return refused(400, unknownMedia)
  const badInteractive = send?.type === "interactive" ? interactiveProblem((request.body as Record<string, unknown>).interactive, (id) => isUpload(host, number, id)) : undefined
  if (badInteractive !== undefined) return refused(400, graphError(131009, { details: badInteractive }))
  const badReaction = send === null || send.type !== "reaction" ? undefined : invalidReactionOf(request.body)
  if (badReaction !== undefined) return refused(400, badReaction)
  const scripted = host.script.answerFor(request.route, send?.to ?? null)
  const refusal = await scriptedRefusal(scripted, req, res)
  if (refusal !== null) return { ...NONE, scripted, answer: refusal }
  if (send === null) return { ...NONE, scripted, answer: writeJson(res, 200, lookupAnswer(number, request.query)) }
  const wamid = newWamid()
  const answer = writeJson(res, 200, {
    messaging_product: "whatsapp",
    contacts: [{ input: send.to, wa_id: digitsOf(send.to) }],
    messages: [{ id: wamid, ...(send.type === "template" ? { message_status: "accepted" } : {}) }]
  })
  return { answer, wamid, recipient: send.to, scripted, callbackData: send.callbackData, category: send.type === "template" ? "utility" : "service" }
}

/**
 * `GET /{version}/{media_id}`: the media's record and a download URL that works for
 * {@link DOWNLOAD_URL_LIFETIME_MS} (`{messaging_product, url, mime_type, sha256 (hex),
 * file_size, id}`). Only the tokens of the media's number reach it.
 */
const answerMediaLookup = async (
  host: GraphHost,
  request: GraphRequest,
  token: string,
  req: IncomingMessage,
  res: ServerResponse
): Promise<GraphOutcome> => {
  const media = host.media.get(request.objectId!)!
  if (!mayReach(host, media, token)) return { ...NONE, answer: writeJson(res, 400, unknownObjectError(request.method, media.id)) }
  const scripted = host.script.answerFor("media_lookup", null)
  const refusal = await scriptedRefusal(scripted, req, res)
  if (refusal !== null) return { ...NONE, scripted, answer: refusal }
  const url = `${host.url}/_media/${host.media.issueToken(media.id, Date.now())}`
  const answer = writeJson(res, 200, {
    messaging_product: "whatsapp",
    url,
    mime_type: media.mime_type,
    sha256: media.sha256,
    file_size: media.file_size,
    id: media.id
  })
  return { ...NONE, scripted, answer }
}

/**
 * `GET /_media/{token}`: the bytes of a media look-up's URL, with the token of the media's
 * number (else 401); 404 once the URL's 5 minutes are over. A scripted `mid_stream` drop
 * sends the headers and half the bytes, then destroys the socket; a scripted
 * `bytes_per_second` sends the bytes no faster than that ({@link throttled}).
 */
const answerDownload = async (
  host: GraphHost,
  request: GraphRequest,
  token: string,
  req: IncomingMessage,
  res: ServerResponse
): Promise<GraphOutcome> => {
  const media = host.media.redeem(request.objectId!, Date.now())
  if (media === undefined) {
    res.writeHead(404, { "content-type": "text/plain; charset=utf-8" })
    res.end("This URL has expired or does not exist.")
    return { ...NONE, answer: { status: 404, body: "expired or unknown" } }
  }
  if (!mayReach(host, media, token)) return { ...NONE, answer: writeJson(res, 401, invalidTokenError()) }
  const scripted = host.script.answerFor("media_download", null)
  const refusal = await scriptedRefusal(scripted, req, res)
  if (refusal !== null) return { ...NONE, scripted, answer: refusal }
  res.writeHead(200, { "content-type": media.mime_type, "content-length": String(media.file_size) })
  const paced = (source: AsyncIterable<Buffer>) => (scripted.bytes_per_second === undefined ? source : throttled(source, scripted.bytes_per_second))
  if (scripted.drop === "mid_stream") {
    const half = Math.floor(media.file_size / 2)
    if (half > 0) await pipeline(paced(host.media.stream(media.id, { start: 0, end: half - 1 })), res, { end: false })
    req.socket.destroy()
    return { ...NONE, scripted, answer: { dropped: "mid_stream" } }
  }
  await pipeline(paced(host.media.stream(media.id)), res)
  return { ...NONE, scripted, answer: { status: 200, body: { media_id: media.id, file_size: media.file_size } } }
}

/** What an upload's parts were: its fields, and the `file` part stored (or why not). */
interface UploadParts {
  readonly fields: Readonly<Record<string, string>>
  readonly media: SimulatedMedia | null
  readonly truncated: boolean
  readonly partMimeType: string | null
}

/**
 * `POST /{version}/{phone_number_id}/media` (multipart: `file`, `type`, `messaging_product`):
 * streams the file into the simulator's media, then checks the fields, the type (one of
 * {@link UPLOAD_TYPES}) and its size limit (else 131053, nothing kept), then the script;
 * answers `{id}`.
 */
const answerUpload = async (host: GraphHost, number: SimulatedNumber, req: IncomingMessage, res: ServerResponse): Promise<GraphOutcome> => {
  const refused = (status: number, body: unknown, kept: unknown = null) => ({ ...NONE, body: kept, answer: writeJson(res, status, body) })
  if (!/^multipart\/form-data/i.test(req.headers["content-type"] ?? "")) {
    return refused(400, invalidParameterError("The request must be multipart/form-data with a file part."))
  }
  let parts: UploadParts
  try {
    parts = await readUpload(host, number, req)
  } catch {
    return refused(400, invalidParameterError("The request body is not valid multipart/form-data."))
  }
  const { fields, media } = parts
  const kept = {
    messaging_product: fields.messaging_product ?? null,
    type: fields.type ?? null,
    file: media === null ? null : { filename: media.filename, mime_type: parts.partMimeType, file_size: media.file_size, sha256: media.sha256 }
  }
  const refuse = (body: unknown) => {
    if (media !== null) host.media.remove(media.id)
    return refused(400, body, kept)
  }
  if (fields.messaging_product !== "whatsapp") return refuse(invalidParameterError("The parameter messaging_product is required."))
  if (media === null) return refuse(invalidParameterError("The parameter file is required."))
  if (fields.type === undefined || fields.type === "") return refuse(invalidParameterError("The parameter type is required."))
  const type = essenceOf(fields.type)
  const limit = UPLOAD_TYPES[type]
  if (limit === undefined) return refuse(graphError(131053, { details: `Unsupported media type ${type}.` }))
  if (parts.truncated || media.file_size > limit.maxBytes) {
    return refuse(graphError(131053, { details: `The file is larger than the ${limit.maxBytes} bytes allowed for ${type}.` }))
  }
  const scripted = host.script.answerFor("media_upload", null)
  const refusal = await scriptedRefusal(scripted, req, res)
  if (refusal !== null) {
    host.media.remove(media.id)
    return { ...NONE, scripted, body: kept, answer: refusal }
  }
  host.media.retype(media.id, type)
  return { ...NONE, scripted, body: kept, answer: writeJson(res, 200, { id: media.id }) }
}

/** Reads an upload's parts with busboy, streaming its `file` part into the media (at most {@link MAX_MEDIA_BYTES}). */
const readUpload = (host: GraphHost, number: SimulatedNumber, req: IncomingMessage): Promise<UploadParts> =>
  new Promise<UploadParts>((resolve, reject) => {
    const fields: Record<string, string> = {}
    let stored: Promise<SimulatedMedia | "too_large"> | null = null
    let truncated = false
    let partMimeType: string | null = null
    const parser = busboy({ headers: req.headers, limits: { files: 1, fields: 20, fieldSize: 64 * 1024, fileSize: MAX_MEDIA_BYTES } })
    parser.on("field", (name, value) => {
      fields[name] = value
    })
    parser.on("file", (name, file, info) => {
      if (name !== "file" || stored !== null) {
        file.resume()
        return
      }
      partMimeType = info.mimeType
      file.on("limit", () => {
        truncated = true
      })
      stored = host.media.add(file, { phone_number_id: number.phone_number_id, mime_type: info.mimeType, filename: info.filename ?? null, source: "upload" })
      stored.catch(() => undefined)
    })
    parser.on("error", reject)
    parser.on("close", () => {
      const done = stored ?? Promise.resolve(null)
      done.then(
        (media) => resolve({ fields, media: media === "too_large" ? null : media, truncated: truncated || media === "too_large", partMimeType }),
        reject
      )
    })
    req.pipe(parser)
  })

/**
 * A send naming a media `id` (`image: {id}` and the like) must name a media this number
 * uploaded: else Meta's 131009, with what is wrong in its details.
 */
const unknownMediaOf = (host: GraphHost, number: SimulatedNumber, body: unknown, type: string) => {
  const content = (body as Record<string, unknown>)[type] as Record<string, unknown> | undefined
  const id = content?.id
  if (!["image", "video", "audio", "document", "sticker"].includes(type) || id === undefined) return undefined
  if (typeof id === "string" && isUpload(host, number, id)) return undefined
  return graphError(131009, { details: `${type}.id ${JSON.stringify(id)} is not a media uploaded for this phone number.` })
}

/** Whether `id` names a file uploaded for `number` (what a send may name by id). */
const isUpload = (host: GraphHost, number: SimulatedNumber, id: string): boolean => {
  const media = host.media.get(id)
  return media !== undefined && media.phone_number_id === number.phone_number_id && media.source === "upload"
}

/**
 * A reaction send (`type: "reaction"`) as Meta checks it: `reaction.message_id` a
 * non-empty string, `reaction.emoji` one emoji (a single grapheme of Unicode's
 * `RGI_Emoji`) or `""` (removes the reaction); else Meta's 131009 with what is wrong in
 * its details.
 */
const invalidReactionOf = (body: unknown) => {
  const reaction = (body as Record<string, unknown>).reaction as Record<string, unknown> | undefined
  if (typeof reaction !== "object" || reaction === null) return graphError(131009, { details: "The parameter reaction is required." })
  if (typeof reaction.message_id !== "string" || reaction.message_id === "") {
    return graphError(131009, { details: "The parameter reaction.message_id is required." })
  }
  if (typeof reaction.emoji !== "string" || (reaction.emoji !== "" && !ONE_EMOJI.test(reaction.emoji))) {
    return graphError(131009, { details: `reaction.emoji ${JSON.stringify(reaction.emoji)} is not one emoji.` })
  }
  return undefined
}

/** One RGI emoji, the whole string (the `v` flag, ES2024, built at run time for an ES2022 target). */
const ONE_EMOJI = new RegExp("^\\p{RGI_Emoji}$", "v")

/** The send's fields the simulator uses, or what is wrong with its body (Meta's `(#100)` text). */
const readSend = (body: unknown): { to: string; type: string; callbackData: string | null } | string => {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return "The request body must be a JSON object."
  const fields = body as Record<string, unknown>
  if (fields.messaging_product !== "whatsapp") return "The parameter messaging_product is required."
  if (typeof fields.to !== "string" || digitsOf(fields.to) === "") return "The parameter to is required."
  const type = fields.type ?? "text"
  if (typeof type !== "string") return "Param type must be a string."
  if (typeof fields[type] !== "object" || fields[type] === null) return `The parameter ${type} is required.`
  const callback = fields.biz_opaque_callback_data
  if (callback !== undefined && (typeof callback !== "string" || callback.length > 512)) {
    return "Param biz_opaque_callback_data must be a string of at most 512 characters."
  }
  return { to: fields.to, type, callbackData: callback ?? null }
}

/** Meta's phone-number record; `?fields=a,b` keeps those (and `id`). */
const lookupAnswer = (number: SimulatedNumber, query: URLSearchParams): Record<string, unknown> => {
  const record: Record<string, unknown> = {
    verified_name: number.verified_name ?? "Simulated Business",
    code_verification_status: "VERIFIED",
    display_phone_number: number.display_phone_number,
    quality_rating: "GREEN",
    platform_type: "CLOUD_API",
    throughput: { level: "STANDARD" },
    id: number.phone_number_id
  }
  const fields = query.get("fields")
  if (fields === null) return record
  const wanted = new Set([...fields.split(",").map((field) => field.trim()), "id"])
  return Object.fromEntries(Object.entries(record).filter(([key]) => wanted.has(key)))
}

/** Whether `token` is one of the tokens of the number `media` belongs to. */
const mayReach = (host: GraphHost, media: SimulatedMedia, token: string): boolean => {
  const owner = host.number(media.phone_number_id)
  return owner !== undefined && tokensOf(owner).includes(token)
}

/** How often a throttled download sends its next slice, in ms. */
const THROTTLE_TICK_MS = 50

/**
 * `source` re-cut into slices of `bytesPerSecond` × {@link THROTTLE_TICK_MS}, each sent no
 * earlier than the rate allows (counted from the first byte): a download at that speed.
 */
async function* throttled(source: AsyncIterable<Buffer>, bytesPerSecond: number): AsyncGenerator<Buffer> {
  const slice = Math.max(1, Math.floor((bytesPerSecond * THROTTLE_TICK_MS) / 1000))
  const started = performance.now()
  let sent = 0
  for await (const chunk of source) {
    for (let offset = 0; offset < chunk.length; offset += slice) {
      const wait = started + (sent / bytesPerSecond) * 1000 - performance.now()
      if (wait > 0) await sleep(wait)
      const piece = chunk.subarray(offset, offset + slice)
      sent += piece.length
      yield piece
    }
  }
}

import type { IncomingMessage, ServerResponse } from "node:http"
import {
  defaultHttpStatus,
  graphError,
  invalidParameterError,
  invalidTokenError,
  unknownObjectError
} from "./graphErrors.js"
import { digitsOf, newWamid, type SimulatedNumber } from "./payloads.js"
import type { AnswerRecord } from "./records.js"
import type { Answer, Route, Script } from "./script.js"

/** The largest request body read (Meta's own limit for a send is far below). */
const MAX_BODY_BYTES = 4 * 1024 * 1024

/** One request, read whole: where it goes and its body (JSON parsed when it is JSON). */
export interface GraphRequest {
  readonly method: string
  readonly url: string
  readonly path: string
  readonly query: URLSearchParams
  readonly route: Route | null
  readonly phoneNumberId: string | null
  readonly text: string
  readonly body: unknown
}

/** What the Graph side needs of the simulator. */
export interface GraphHost {
  readonly script: Script
  number(phoneNumberId: string): SimulatedNumber | undefined
  numbers(): ReadonlyArray<SimulatedNumber>
}

/** What answering one Graph request gave; a successful send has a `wamid` and its `recipient`. */
export interface GraphOutcome {
  readonly answer: AnswerRecord
  readonly wamid: string | null
  readonly recipient: string | null
  readonly scripted: Answer
  readonly callbackData: string | null
  readonly category: string
}

/** Reads the whole request (up to 4 MiB) and works out its Graph route. */
export const readRequest = async (req: IncomingMessage): Promise<GraphRequest> => {
  const chunks: Array<Buffer> = []
  let size = 0
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size <= MAX_BODY_BYTES) chunks.push(chunk)
  }
  const text = Buffer.concat(chunks).toString("utf8")
  const url = req.url ?? "/"
  const parsed = new URL(url, "http://simulator.local")
  const segments = parsed.pathname.split("/").slice(1)
  const method = req.method ?? "GET"
  const versioned = /^v\d+\.\d+$/.test(segments[0] ?? "") && /^\d+$/.test(segments[1] ?? "")
  const route: Route | null = !versioned
    ? null
    : method === "GET" && segments.length === 2
      ? "lookup"
      : method === "POST" && segments.length === 3 && segments[2] === "messages"
        ? "messages"
        : null
  return {
    method,
    url,
    path: parsed.pathname,
    query: parsed.searchParams,
    route,
    phoneNumberId: versioned ? segments[1]! : null,
    text,
    body: parseBody(text)
  }
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
 * → 190, HTTP 401), then the number (unknown, or not this token's → 100 subcode 33), then
 * a send's body (→ 100); only then does the {@link Script} decide (delay, drop, refusal),
 * and a success answers the number (look-up) or a fresh wamid (send).
 */
export const answerGraph = async (
  host: GraphHost,
  request: GraphRequest,
  req: IncomingMessage,
  res: ServerResponse
): Promise<GraphOutcome> => {
  const none = { wamid: null, recipient: null, scripted: {}, callbackData: null, category: "service" }
  const refused = (status: number, body: unknown) => ({ ...none, answer: writeJson(res, status, body) })
  if (request.route === null) {
    return refused(400, graphError(2500, { message: `Unknown path components: ${request.path}` }))
  }
  const token = bearerToken(req, request.query)
  if (token === null || !host.numbers().some((number) => tokensOf(number).includes(token))) return refused(401, invalidTokenError())
  const number = host.number(request.phoneNumberId!)
  if (number === undefined || !tokensOf(number).includes(token)) {
    return refused(400, unknownObjectError(request.method, request.phoneNumberId!))
  }
  const send = request.route === "messages" ? readSend(request.body) : null
  if (typeof send === "string") return refused(400, invalidParameterError(send))
  const scripted = host.script.answerFor(request.route, send?.to ?? null)
  if (scripted.delay_ms !== undefined && scripted.delay_ms > 0) await sleep(scripted.delay_ms)
  if (scripted.drop !== undefined) return { ...none, scripted, answer: drop(req, scripted.drop) }
  if (scripted.code !== undefined) {
    return { ...none, scripted, answer: writeJson(res, scripted.http_status ?? defaultHttpStatus(scripted.code), graphError(scripted.code, scripted)) }
  }
  if (scripted.http_status !== undefined && scripted.http_status >= 300) {
    res.writeHead(scripted.http_status, { "content-type": "text/plain; charset=utf-8" })
    const text = `HTTP ${scripted.http_status} (scripted by the WhatsApp simulator)`
    res.end(text)
    return { ...none, scripted, answer: { status: scripted.http_status, body: text } }
  }
  if (send === null) return { ...none, scripted, answer: writeJson(res, 200, lookupAnswer(number, request.query)) }
  const wamid = newWamid()
  const answer = writeJson(res, 200, {
    messaging_product: "whatsapp",
    contacts: [{ input: send.to, wa_id: digitsOf(send.to) }],
    messages: [{ id: wamid, ...(send.type === "template" ? { message_status: "accepted" } : {}) }]
  })
  return { answer, wamid, recipient: send.to, scripted, callbackData: send.callbackData, category: send.type === "template" ? "utility" : "service" }
}

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

const tokensOf = (number: SimulatedNumber): ReadonlyArray<string> =>
  typeof number.access_token === "string" ? [number.access_token] : number.access_token

/** The bearer token of the `Authorization` header, else the `access_token` query parameter (Meta takes both). */
const bearerToken = (req: IncomingMessage, query: URLSearchParams): string | null => {
  const match = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? "")
  return match?.[1] ?? query.get("access_token")
}

const writeJson = (res: ServerResponse, status: number, body: unknown): AnswerRecord => {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8" })
  res.end(JSON.stringify(body))
  return { status, body }
}

/** `"close"` destroys the socket now; `"hang"` leaves the request unanswered (closed with the simulator). */
const drop = (req: IncomingMessage, mode: "close" | "hang"): AnswerRecord => {
  if (mode === "close") req.socket.destroy()
  return { dropped: mode }
}

/** A wait that never keeps the process alive once the simulator is closed. */
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref())

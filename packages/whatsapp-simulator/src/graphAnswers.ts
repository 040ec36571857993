import type { IncomingMessage, ServerResponse } from "node:http"
import { defaultHttpStatus, graphError } from "./graphErrors.js"
import type { SimulatedNumber } from "./payloads.js"
import type { AnswerRecord } from "./records.js"
import type { Answer } from "./script.js"

// What every Graph route's answer is made of: the outcome of a request that sent nothing,
// the script's refusals, JSON answers, the tokens of a number and of a request.

/** The outcome of a request that sent nothing (no wamid). */
export const NONE = { wamid: null, recipient: null, scripted: {}, callbackData: null, category: "service" } as const

/**
 * Waits the scripted delay, then carries out a scripted drop or refusal and answers what
 * was answered, or `null` when the script lets the call succeed.
 */
export const scriptedRefusal = async (scripted: Answer, req: IncomingMessage, res: ServerResponse): Promise<AnswerRecord | null> => {
  if (scripted.delay_ms !== undefined && scripted.delay_ms > 0) await sleep(scripted.delay_ms)
  if (scripted.drop !== undefined && scripted.drop !== "mid_stream") return drop(req, scripted.drop)
  if (scripted.code !== undefined) {
    return writeJson(res, scripted.http_status ?? defaultHttpStatus(scripted.code), graphError(scripted.code, scripted))
  }
  if (scripted.http_status !== undefined && scripted.http_status >= 300) {
    res.writeHead(scripted.http_status, { "content-type": "text/plain; charset=utf-8" })
    const text = `HTTP ${scripted.http_status} (scripted by the WhatsApp simulator)`
    res.end(text)
    return { status: scripted.http_status, body: text }
  }
  return null
}

/** The tokens allowed to use `number`. */
export const tokensOf = (number: SimulatedNumber): ReadonlyArray<string> =>
  typeof number.access_token === "string" ? [number.access_token] : number.access_token

/** The bearer token of the `Authorization` header, else the `access_token` query parameter (Meta takes both). */
export const bearerToken = (req: IncomingMessage, query: URLSearchParams): string | null => {
  const match = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? "")
  return match?.[1] ?? query.get("access_token")
}

/** Writes `body` as JSON with `status`; answers what was written. */
export const writeJson = (res: ServerResponse, status: number, body: unknown): AnswerRecord => {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8" })
  res.end(JSON.stringify(body))
  return { status, body }
}

/** `"close"` destroys the socket now; `"hang"` leaves the request unanswered (closed with the simulator). */
export const drop = (req: IncomingMessage, mode: "close" | "hang"): AnswerRecord => {
  if (mode === "close") req.socket.destroy()
  return { dropped: mode }
}

/** A wait that never keeps the process alive once the simulator is closed. */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref())

import type { ServerResponse } from "node:http"
import type { Readable } from "node:stream"
import { pipeline } from "node:stream/promises"
import type { WireResponse } from "../handlerTypes.js"
import type { HostRequest } from "./body.js"

/**
 * Writes a {@link WireResponse} to a Node response. A response that closes the connection
 * (`Connection: close`, the 413 of an oversized body) while the client is still uploading
 * is written at once but ended only once the rest of the request body has been read and
 * discarded ({@link lingerThenEnd}): Node destroys the socket when such a response ends, and
 * a socket closed with unread bytes is reset, which clients report as `EPIPE` or
 * `ECONNRESET` instead of the answer (docs/errors.md "Limits").
 */
export const writeResponse = (req: HostRequest, res: ServerResponse, response: WireResponse): void => {
  if (res.headersSent || res.writableEnded) return
  if (response.headers.connection === "close" && !req.complete && !req.destroyed) {
    res.statusCode = response.status
    for (const [name, value] of Object.entries(response.headers)) res.setHeader(name, value)
    if (response.body !== undefined) res.write(response.body)
    lingerThenEnd(req, res)
  } else {
    // One call with every header: Node then writes the head without a header map.
    res.writeHead(response.status, response.headers)
    if (response.stream !== undefined) pipeStream(response.stream, res)
    else if (response.body === undefined) res.end()
    else res.end(response.body)
  }
}

/**
 * Pipes a `BinaryContent` answer to the client: a client that goes away destroys the
 * stream (the blob's read ends), and a stream that fails after the headers destroys the
 * response, so the client sees a body shorter than its `Content-Length` rather than a
 * complete-looking one.
 */
const pipeStream = (stream: Readable, res: ServerResponse): void => {
  // `pipeline` destroys both sides on a failure of either; nothing is left to answer.
  pipeline(stream, res).catch(() => undefined)
}

/**
 * How long a connection being closed may keep reading a request body it refused: at most
 * 30 s in all and 5 s without data (nginx's `lingering_time` and `lingering_timeout`).
 */
const LINGER_TOTAL_MS = 30_000
const LINGER_IDLE_MS = 5_000

/**
 * Reads and discards what is left of `req`'s body, then ends `res` (Node then closes the
 * socket cleanly); gives up after {@link LINGER_TOTAL_MS}, or {@link LINGER_IDLE_MS} without
 * data, so a client that never stops uploading cannot hold the socket.
 */
const lingerThenEnd = (req: HostRequest, res: ServerResponse): void => {
  let idle: NodeJS.Timeout | undefined
  const total = setTimeout(() => end(), LINGER_TOTAL_MS)
  const restartIdle = () => {
    clearTimeout(idle)
    idle = setTimeout(() => end(), LINGER_IDLE_MS)
  }
  const end = () => {
    clearTimeout(total)
    clearTimeout(idle)
    req.off("data", restartIdle)
    if (!res.writableEnded) res.end()
  }
  req.on("data", restartIdle)
  req.once("end", end)
  req.once("error", end)
  req.once("close", end)
  restartIdle()
  req.resume()
}

import type { Duplex } from "node:stream"
import { failureResponse } from "./envelope.js"

/**
 * A `node:http` server's `clientError` listener that answers what Node's HTTP parser
 * refuses before any request reaches the handler (a malformed request line or header, a
 * `Content-Length` that is not a number, headers over Node's `--max-http-header-size`, a
 * request that took longer than `server.requestTimeout`) with the envelope instead of
 * Node's bare `400 Bad Request`: 431 `headers_too_large`, 408 `request_timeout`, else 400
 * `malformed_request`; then the connection is closed (docs/errors.md "Limits"). A socket
 * the client already reset or that can no longer be written is just destroyed.
 *
 * @category handler
 * @example
 * import { createServer } from "node:http"
 * import { createHandler, answerClientError } from "@switchboard/http-adapter"
 *
 * const server = createServer(createHandler({ storage })).on("clientError", answerClientError)
 */
export const answerClientError = (error: Error & { code?: string }, socket: Duplex): void => {
  if (error.code === "ECONNRESET" || !socket.writable) {
    socket.destroy()
    return
  }
  const { status, code, message } = problemOf(error.code)
  const body = JSON.stringify(failureResponse(status, code, message).body)
  socket.end(
    `HTTP/1.1 ${status} ${REASONS[status]}\r\n` +
      "Content-Type: application/json; charset=utf-8\r\n" +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      "Connection: close\r\n\r\n" +
      body
  )
}

const problemOf = (code: string | undefined) =>
  code === "HPE_HEADER_OVERFLOW"
    ? { status: 431, code: "headers_too_large", message: "Request headers are too large" }
    : code === "ERR_HTTP_REQUEST_TIMEOUT"
      ? { status: 408, code: "request_timeout", message: "The request took too long to arrive" }
      : { status: 400, code: "malformed_request", message: "The request is not valid HTTP/1.1" }

const REASONS: Record<number, string> = { 400: "Bad Request", 408: "Request Timeout", 431: "Request Header Fields Too Large" }

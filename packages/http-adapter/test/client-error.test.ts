import { createServer, type Server } from "node:http"
import { connect, type AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { answerClientError } from "@switchboard/http-adapter"
import { expectEnvelope, makeHandler, makeSharedStorage } from "./helpers.js"

/**
 * What Node's HTTP parser refuses before the handler runs is answered with the envelope by
 * `answerClientError` (docs/errors.md "Limits"), not Node's bare `400 Bad Request`.
 */
const handler = makeHandler(makeSharedStorage())
let server: Server

beforeAll(async () => {
  server = createServer(handler).on("clientError", answerClientError)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
})
afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
  await handler.dispose()
})

/** Writes `raw` on a new connection and reads everything until the server closes it. */
const exchange = (raw: string) =>
  new Promise<string>((resolve, reject) => {
    const socket = connect((server.address() as AddressInfo).port, "127.0.0.1")
    const chunks: Array<Buffer> = []
    socket.on("data", (chunk: Buffer) => chunks.push(chunk))
    socket.on("error", reject)
    socket.on("close", () => resolve(Buffer.concat(chunks).toString()))
    socket.end(raw)
  })

const expectAnswer = (response: string, status: number, code: string) => {
  const [head = "", body = ""] = response.split("\r\n\r\n")
  expect(head).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `))
  expect(head.toLowerCase()).toContain("content-type: application/json")
  expect(head.toLowerCase()).toContain("connection: close")
  expect(expectEnvelope(status, body).errors[0]?.code).toBe(code)
}

describe("answerClientError", () => {
  it("400 malformed_request for a Content-Length that is not a number", async () => {
    const response = await exchange("POST /api/v1/api/labels HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}")
    expectAnswer(response, 400, "malformed_request")
  })

  it("400 malformed_request for a request line that is not HTTP", async () => {
    expectAnswer(await exchange("HELLO THERE\r\n\r\n"), 400, "malformed_request")
  })

  it("431 headers_too_large for headers over Node's limit (16 KiB)", async () => {
    const response = await exchange(`GET /api/v1/api/verify HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`)
    expectAnswer(response, 431, "headers_too_large")
  })

  it("a well-formed request still reaches the handler", async () => {
    const response = await exchange("GET /api/v1/api/verify HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    expectAnswer(response, 401, "missing_api_key")
  })
})

import { randomBytes } from "node:crypto"
import { request as httpRequest } from "node:http"
import { Readable } from "node:stream"
import { Effect } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { MemoryStorage } from "@switchboard/core"
import { createFetchHandler, defaultRoutes, defineRoute, type RequestLogLine } from "@switchboard/http-adapter"
import { listen, makeHandler } from "./helpers.js"

// A route answering bytes (`BinaryContent`, docs/extending.md "Your own routes"): streamed
// with its Content-Type and Content-Length over a real socket and through the Fetch
// handler, no body for HEAD, the source destroyed when the client goes away, a short body
// when the source fails mid-way, and the request's log line written at the headers.

const BYTES = randomBytes(3 * 1024 * 1024 + 17)

/** A source of `bytes` in 64 KiB chunks that records whether it was destroyed; `failAfter` chunks, then an error. */
const sourceOf = (bytes: Buffer, options: { readonly failAfter?: number; readonly slow?: boolean } = {}) => {
  const state = { destroyed: false, chunksRead: 0 }
  const stream = new Readable({
    read() {
      const offset = state.chunksRead * 65_536
      if (options.failAfter !== undefined && state.chunksRead === options.failAfter) {
        this.destroy(new Error("the blob store failed"))
        return
      }
      state.chunksRead += 1
      const push = () => this.push(offset >= bytes.length ? null : bytes.subarray(offset, offset + 65_536))
      if (options.slow === true) setTimeout(push, 5)
      else push()
    },
    destroy(error, callback) {
      state.destroyed = true
      callback(error)
    }
  })
  return { stream, state }
}

let current: ReturnType<typeof sourceOf> | undefined
const file = defineRoute({
  method: "GET",
  path: "/test/file",
  tag: "Guide",
  summary: "A file",
  authenticated: false,
  content: ["application/octet-stream"],
  query: { fail: { type: "boolean", optional: true, convert: true }, slow: { type: "boolean", optional: true, convert: true } },
  handle: ({ query }) =>
    Effect.sync(() => {
      current = sourceOf(BYTES, { ...(query.fail === true ? { failAfter: 3 } : {}), ...(query.slow === true ? { slow: true } : {}) })
      return {
        _tag: "BinaryContent" as const,
        contentType: "application/pdf",
        length: BYTES.length,
        stream: current.stream,
        headers: { etag: '"abc"', "content-disposition": 'attachment; filename="a.pdf"' }
      }
    })
})
const partial = defineRoute({
  method: "GET",
  path: "/test/partial",
  tag: "Guide",
  summary: "Part of a file",
  authenticated: false,
  content: ["application/octet-stream"],
  handle: () =>
    Effect.succeed({
      _tag: "BinaryContent" as const,
      status: 206 as const,
      contentType: "image/jpeg",
      length: 100,
      stream: Readable.from([BYTES.subarray(0, 100)]),
      headers: { "content-range": `bytes 0-99/${BYTES.length}` }
    })
})
const routes = [...defaultRoutes, file, partial]

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of closers.splice(0)) await close()
  current = undefined
})

const served = async (lines: Array<RequestLogLine> = []) => {
  const handler = makeHandler(MemoryStorage.layer, { routes, requestLog: (line) => lines.push(line) })
  const server = await listen(handler)
  closers.push(server.close)
  return server.base
}

/** A raw GET over a socket: status, headers, the bytes received, and whether the response ended cleanly. */
const rawGet = (url: string, method = "GET") =>
  new Promise<{ status: number; headers: Record<string, unknown>; bytes: Buffer; complete: boolean }>((resolve) => {
    const req = httpRequest(url, { method }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      const done = () => resolve({ status: res.statusCode!, headers: res.headers, bytes: Buffer.concat(chunks), complete: res.complete })
      res.on("end", done)
      res.on("error", done)
      res.on("aborted", done)
    })
    req.on("error", () => resolve({ status: 0, headers: {}, bytes: Buffer.alloc(0), complete: false }))
    req.end()
  })

describe("BinaryContent over node:http", () => {
  it("streams the bytes with the route's Content-Type, Content-Length and headers, and the request id", async () => {
    const base = await served()
    const answer = await rawGet(`${base}/test/file`)
    expect(answer.status).toBe(200)
    expect(answer.headers["content-type"]).toBe("application/pdf")
    expect(answer.headers["content-length"]).toBe(String(BYTES.length))
    expect(answer.headers.etag).toBe('"abc"')
    expect(answer.headers["content-disposition"]).toBe('attachment; filename="a.pdf"')
    expect(answer.headers["x-request-id"]).toEqual(expect.any(String))
    expect(answer.complete).toBe(true)
    expect(answer.bytes.equals(BYTES)).toBe(true)
  })

  it("answers 206 with the route's Content-Range", async () => {
    const base = await served()
    const answer = await rawGet(`${base}/test/partial`)
    expect([answer.status, answer.headers["content-range"], answer.headers["content-length"]]).toEqual([206, `bytes 0-99/${BYTES.length}`, "100"])
    expect(answer.bytes.equals(BYTES.subarray(0, 100))).toBe(true)
  })

  it("HEAD answers the headers with no body and destroys the stream unread", async () => {
    const base = await served()
    const answer = await rawGet(`${base}/test/file`, "HEAD")
    expect([answer.status, answer.headers["content-length"], answer.bytes.length]).toEqual([200, String(BYTES.length), 0])
    await expect.poll(() => current?.state.destroyed).toBe(true)
    expect(current!.state.chunksRead).toBeLessThanOrEqual(1)
  })

  it("a client that goes away mid-download destroys the stream: the rest is never read", async () => {
    const base = await served()
    await new Promise<void>((resolve) => {
      const req = httpRequest(`${base}/test/file?slow=true`, (res) => {
        res.once("data", () => {
          req.destroy()
          resolve()
        })
      })
      req.end()
    })
    await expect.poll(() => current?.state.destroyed).toBe(true)
    expect(current!.state.chunksRead * 65_536).toBeLessThan(BYTES.length)
  })

  it("a stream that fails after the headers ends the connection: the client gets a short, incomplete body", async () => {
    const base = await served()
    const answer = await rawGet(`${base}/test/file?fail=true`)
    expect(answer.status).toBe(200)
    expect(answer.complete).toBe(false)
    expect(answer.bytes.length).toBeLessThan(BYTES.length)
  })

  it("writes the request's log line once, with the status, when the headers go out", async () => {
    const lines: Array<RequestLogLine> = []
    const base = await served(lines)
    await rawGet(`${base}/test/file`)
    await rawGet(`${base}/test/partial`)
    expect(lines.map((line) => [line.route, line.status])).toEqual([
      ["/test/file", 200],
      ["/test/partial", 206]
    ])
  })
})

describe("BinaryContent through the Fetch handler", () => {
  it("passes the stream as the Response's body, with the same headers", async () => {
    const handler = createFetchHandler({ storage: MemoryStorage.layer, logger: false, routes })
    closers.push(() => handler.dispose())
    const response = await handler(new Request("http://localhost/api/v1/api/test/file"))
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toBe("application/pdf")
    expect(response.headers.get("content-length")).toBe(String(BYTES.length))
    expect(Buffer.from(await response.arrayBuffer()).equals(BYTES)).toBe(true)
    const head = await handler(new Request("http://localhost/api/v1/api/test/file", { method: "HEAD" }))
    expect([head.status, head.body]).toEqual([200, null])
  })
})

import { createHash, randomBytes } from "node:crypto"
import { request as httpRequest } from "node:http"
import { Effect } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { MemoryStorage } from "@switchboard/core"
import { createFetchHandler, defaultRoutes, defineRoute, HttpFailure, type MultipartBody } from "@switchboard/http-adapter"
import { expectEnvelope, listen, makeHandler, request } from "./helpers.js"

// A route declared with `multipart` (docs/extending.md "Your own routes"): its parts
// streamed in order over a real socket and through the Fetch handler, and every refusal in
// the envelope — a body over the limit answered 413 while the client is still uploading,
// a declared length over it at once, another content type 415, a malformed body or too
// many files 400, a body the host consumed 500 raw_body_unavailable.

const MAX_BYTES = 4 * 1024 * 1024

/** Reads every part: fields as they are, files as their size and SHA-256. */
const upload = defineRoute({
  method: "POST",
  path: "/test/upload",
  tag: "Guide",
  summary: "Upload",
  authenticated: false,
  multipart: { maxBytes: MAX_BYTES, maxFiles: 2, maxFields: 3 },
  handle: ({ body }) =>
    Effect.tryPromise({
      try: async () => {
        const parts: Array<Record<string, unknown>> = []
        for await (const part of (body as MultipartBody).parts) {
          if (part.kind === "field") {
            parts.push({ field: part.name, value: part.value })
            continue
          }
          const hash = createHash("sha256")
          let size = 0
          for await (const chunk of part.stream) {
            size += (chunk as Buffer).length
            hash.update(chunk as Buffer)
          }
          parts.push({ file: part.name, filename: part.filename, mime_type: part.mimeType, size, sha256: hash.digest("hex") })
        }
        return { message: "Received", data: { parts } }
      },
      catch: (error) => (error instanceof HttpFailure ? error : new HttpFailure({ status: 500, code: "internal_error", message: String(error) }))
    })
})
const routes = [...defaultRoutes, upload]

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of closers.splice(0)) await close()
})

const served = async () => {
  const server = await listen(makeHandler(MemoryStorage.layer, { routes }))
  closers.push(server.close)
  return server.base
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

const formOf = (file: Uint8Array, extra: (form: FormData) => void = () => undefined) => {
  const form = new FormData()
  form.append("type", "image/png")
  form.append("file", new Blob([file], { type: "image/png" }), "chart.png")
  extra(form)
  return form
}

describe("multipart routes over node:http", () => {
  it("hands the route every part in order, a file streamed (size and SHA-256 exact), a field after it too", async () => {
    const base = await served()
    const file = randomBytes(2 * 1024 * 1024 + 3)
    const response = await fetch(`${base}/test/upload`, { method: "POST", body: formOf(file, (form) => form.append("caption", "After the file")) })
    const result = expectEnvelope(response.status, await response.text())
    expect(result.status).toBe(200)
    expect(result.data).toEqual({
      parts: [
        { field: "type", value: "image/png" },
        { file: "file", filename: "chart.png", mime_type: "image/png", size: file.length, sha256: sha256(file) },
        { field: "caption", value: "After the file" }
      ]
    })
  })

  it("answers 413 payload_too_large while the client is still uploading, and closes the connection", async () => {
    const base = await served()
    const boundary = "----switchboard-test"
    const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`
    const answer = await new Promise<{ status: number; body: string; sentWhenAnswered: number; connection: string | undefined }>((resolve, reject) => {
      let sent = 0
      let stop = false
      const req = httpRequest(`${base}/test/upload`, {
        method: "POST",
        headers: { "content-type": `multipart/form-data; boundary=${boundary}`, "transfer-encoding": "chunked" }
      })
      req.on("response", (res) => {
        stop = true
        let body = ""
        res.setEncoding("utf8").on("data", (chunk: string) => (body += chunk))
        res.on("end", () => resolve({ status: res.statusCode!, body, sentWhenAnswered: sent, connection: res.headers.connection }))
      })
      req.on("error", reject)
      req.write(head)
      const chunk = randomBytes(256 * 1024)
      const pump = () => {
        // Up to 4 times the limit: the answer must come long before the upload would end.
        while (!stop && sent < 4 * MAX_BYTES) {
          sent += chunk.length
          if (!req.write(chunk)) return void req.once("drain", pump)
        }
        if (!stop) req.end(`\r\n--${boundary}--\r\n`)
      }
      pump()
    })
    expect(answer.status).toBe(413)
    expect(expectEnvelope(413, answer.body).errors[0]?.code).toBe("payload_too_large")
    expect(answer.connection).toBe("close")
    expect(answer.sentWhenAnswered).toBeLessThan(4 * MAX_BYTES)
  })

  it("refuses a declared Content-Length over the limit at once (413), another content type 415, a malformed body and too many files 400", async () => {
    const base = await served()
    const declared = await new Promise<number>((resolve) => {
      const req = httpRequest(`${base}/test/upload`, {
        method: "POST",
        headers: { "content-type": "multipart/form-data; boundary=x", "content-length": String(MAX_BYTES + 1) }
      })
      req.on("response", (res) => {
        res.resume()
        resolve(res.statusCode!)
        req.destroy()
      })
      req.on("error", () => undefined)
      req.write("--x\r\n")
    })
    expect(declared).toBe(413)
    const json = await fetch(`${base}/test/upload`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
    expect(expectEnvelope(json.status, await json.text()).errors[0]?.code).toBe("unsupported_media_type")
    const noBoundary = await fetch(`${base}/test/upload`, { method: "POST", headers: { "content-type": "multipart/form-data" }, body: "x" })
    expect(noBoundary.status).toBe(415)
    const malformed = await fetch(`${base}/test/upload`, {
      method: "POST",
      headers: { "content-type": "multipart/form-data; boundary=abc" },
      body: "--abc\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nno closing boundary"
    })
    expect([malformed.status, expectEnvelope(malformed.status, await malformed.text()).errors[0]?.code]).toEqual([400, "invalid_body"])
    const threeFiles = formOf(randomBytes(10), (form) => {
      form.append("file", new Blob([randomBytes(10)]), "b.bin")
      form.append("file", new Blob([randomBytes(10)]), "c.bin")
    })
    const tooMany = await fetch(`${base}/test/upload`, { method: "POST", body: threeFiles })
    expect([tooMany.status, expectEnvelope(tooMany.status, await tooMany.text()).errors[0]?.message]).toEqual([400, "At most 2 file(s) may be sent"])
  })

  it("reads the bytes a host kept (express.raw()'s Buffer) when it read the body first", async () => {
    const handler = makeHandler(MemoryStorage.layer, { routes })
    const boundary = "kept"
    const payload = `--${boundary}\r\nContent-Disposition: form-data; name="caption"\r\n\r\nKept by the host\r\n--${boundary}--\r\n`
    const response = await request(
      (req, res) => {
        Object.assign(req, { body: Buffer.from(payload) })
        req.resume()
        req.once("end", () => handler(req, res))
      },
      { method: "POST", url: "/api/v1/api/test/upload", headers: { "content-type": `multipart/form-data; boundary=${boundary}` }, payload }
    )
    expect(expectEnvelope(response.statusCode, response.body).data).toEqual({ parts: [{ field: "caption", value: "Kept by the host" }] })
  })

  it("answers 500 raw_body_unavailable when the host already consumed the body", async () => {
    const handler = makeHandler(MemoryStorage.layer, { routes })
    const response = await request(
      (req, res) => {
        Object.assign(req, { body: { parsed: "by a body parser" } })
        handler(req, res)
      },
      { method: "POST", url: "/api/v1/api/test/upload", headers: { "content-type": "multipart/form-data; boundary=x" }, payload: "--x--" }
    )
    expect([response.statusCode, JSON.parse(response.body).errors[0].code]).toEqual([500, "raw_body_unavailable"])
  })
})

describe("multipart routes through the Fetch handler", () => {
  it("streams the parts of a Request's body alike, and refuses past the limit with 413", async () => {
    const handler = createFetchHandler({ storage: MemoryStorage.layer, logger: false, routes })
    closers.push(() => handler.dispose())
    const file = randomBytes(300_000)
    const response = await handler(new Request("http://localhost/api/v1/api/test/upload", { method: "POST", body: formOf(file) }))
    const result = expectEnvelope(response.status, await response.text())
    expect(result.data).toEqual({
      parts: [
        { field: "type", value: "image/png" },
        { file: "file", filename: "chart.png", mime_type: "image/png", size: file.length, sha256: sha256(file) }
      ]
    })
    const large = await handler(new Request("http://localhost/api/v1/api/test/upload", { method: "POST", body: formOf(randomBytes(MAX_BYTES + 1)) }))
    expect(large.status).toBe(413)
  })
})

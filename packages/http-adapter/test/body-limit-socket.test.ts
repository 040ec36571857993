import { execFile, execFileSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type Server } from "node:http"
import { connect, type AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { bearer, createOrganization, expectEnvelope, makeHandler, makeSharedStorage } from "./helpers.js"

/**
 * An oversized body reaches its 413 envelope on a real socket (docs/errors.md "Limits"):
 * with a declared `Content-Length` (answered before reading) and chunked (answered when
 * the limit is crossed), from Node's `fetch` (undici) and from `curl`. Before the handler
 * read the rest of a refused body, the socket was closed with unread bytes and reset, and
 * clients reported `EPIPE` instead of the answer (about one request in four here).
 */
const storage = makeSharedStorage()
const handler = makeHandler(storage)
const MiB = 1_048_576
const directory = mkdtempSync(join(tmpdir(), "switchboard-413-"))
let server: Server
let url = ""
let headers: Record<string, string> = {}

const hasCurl = (() => {
  try {
    execFileSync("curl", ["--version"], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
})()
if (!hasCurl) console.log("body-limit-socket: curl is not installed, the curl cases are skipped")

beforeAll(async () => {
  headers = { ...bearer((await createOrganization(storage)).key.api_key), "content-type": "application/json" }
  server = createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/api/contacts/bulk`
})
afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
  await handler.dispose()
  rmSync(directory, { recursive: true, force: true })
})

const expectTooLarge = (status: number, body: string) => {
  const result = expectEnvelope(status, body)
  expect(status).toBe(413)
  expect(result.errors[0]?.code).toBe("payload_too_large")
}

const uploadClient = fileURLToPath(new URL("./fixtures/upload-client.mjs", import.meta.url))

/** Runs test/fixtures/upload-client.mjs: fetch (undici) in a process of its own, `tries` times. */
const uploadWithFetch = (bytes: number, mode: "length" | "chunked", tries: number) =>
  new Promise<Array<{ status?: number; connection?: string; body?: string; error?: string; code?: string }>>(
    (resolve, reject) =>
      execFile(
        process.execPath,
        [uploadClient, url, JSON.stringify(headers), String(bytes), mode, String(tries)],
        { maxBuffer: 1 << 20, timeout: 60_000 },
        (error, stdout) =>
          error ? reject(error) : resolve(stdout.trim().split("\n").map((line) => JSON.parse(line)))
      )
  )

describe.each([2, 20])("a %i MiB body", (mebibytes) => {
  const bytes = mebibytes * MiB

  // Five tries each: the reset was a race between the client's writes and the socket's close.
  it.each([
    ["with Content-Length", "length"],
    ["streamed chunked, without a length", "chunked"]
  ] as const)("fetch %s gets the 413 envelope", async (_name, mode) => {
    const results = await uploadWithFetch(bytes, mode, 5)
    expect(results).toHaveLength(5)
    for (const result of results) {
      expect(result.error).toBeUndefined()
      expect(result.connection).toBe("close")
      expectTooLarge(result.status ?? 0, result.body ?? "")
    }
  })

  it.skipIf(!hasCurl).each([
    ["with Content-Length", []],
    ["chunked", ["-H", "Transfer-Encoding: chunked"]],
    ["with Content-Length and no Expect: 100-continue", ["-H", "Expect:"]]
  ])("curl %s gets the 413 envelope", async (_name, extra) => {
    const file = join(directory, `${mebibytes}.json`)
    writeFileSync(file, Buffer.alloc(bytes, 0x61))
    const args = ["-sS", "-X", "POST", "--data-binary", `@${file}`, "-w", "\n%{http_code}", ...(extra as Array<string>)]
    for (const [name, value] of Object.entries(headers)) args.push("-H", `${name}: ${value}`)
    const output = await new Promise<string>((resolve, reject) =>
      execFile("curl", [...args, url], { maxBuffer: 1 << 20 }, (error, stdout, stderr) =>
        error ? reject(new Error(`curl failed: ${stderr}`)) : resolve(stdout)
      )
    )
    const lines = output.trimEnd().split("\n")
    expectTooLarge(Number(lines.pop()), lines.join("\n"))
  })
})

/** A raw HTTP/1.1 client declaring a 20 MiB body: sends the head and the first 2 MiB. */
const startUpload = () => {
  const socket = connect((server.address() as AddressInfo).port, "127.0.0.1")
  const received: Array<Buffer> = []
  const events = { error: undefined as Error | undefined, ended: false, closed: false }
  socket.on("data", (chunk: Buffer) => received.push(chunk))
  socket.on("error", (error) => (events.error = error))
  socket.on("end", () => (events.ended = true))
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve((events.closed = true) && undefined)))
  const head = [
    "POST /api/v1/api/contacts/bulk HTTP/1.1",
    "Host: localhost",
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    `Content-Length: ${20 * MiB}`,
    "",
    ""
  ].join("\r\n")
  socket.write(head)
  socket.write(Buffer.alloc(2 * MiB, 0x61))
  const answered = async () => {
    // The answer arrives while most of the declared body is still unsent.
    await expect.poll(() => Buffer.concat(received).toString(), { timeout: 5_000 }).toContain("payload_too_large")
    const response = Buffer.concat(received).toString()
    expect(response).toMatch(/^HTTP\/1\.1 413 /)
    expect(response.toLowerCase()).toContain("connection: close")
  }
  return { socket, events, closed, answered }
}

describe("a client still uploading when the 413 arrives", () => {
  it("can send the rest of its body: the server reads it, then closes cleanly (no reset)", async () => {
    const upload = startUpload()
    await upload.answered()
    await new Promise<void>((resolve, reject) =>
      upload.socket.write(Buffer.alloc(18 * MiB, 0x61), (error) => (error ? reject(error) : resolve()))
    )
    await upload.closed
    expect(upload.events.error).toBeUndefined()
    expect(upload.events.ended).toBe(true)
  }, 20_000)

  it("that stalls keeps its socket while it may still send, and loses it after 5 s without data", async () => {
    const upload = startUpload()
    await upload.answered()
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    expect(upload.events.closed).toBe(false)
    await upload.closed
    expect(upload.events.error).toBeUndefined()
  }, 20_000)
})

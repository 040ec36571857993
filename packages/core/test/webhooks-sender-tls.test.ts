import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { createServer, type Server } from "node:https"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { randomBytes } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Webhook } from "standardwebhooks"
import { makeHttpWebhookSender, WebhookHostResolver, WebhookSettings } from "@switchboard/core"

// The sender over TLS (docs/webhooks.md "Delivery and the dispatcher"): the connection goes
// to the checked address while TLS still checks the certificate against the URL's host
// name (sent as SNI). The receiver's certificate is self-signed for receiver.example.test,
// made with the openssl command (the test is skipped without it).

const hasOpenssl = (() => {
  try {
    execFileSync("openssl", ["version"], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
})()

const SECRET = `whsec_${randomBytes(24).toString("base64")}`
let directory: string
let certificate: string
let server: Server
let port: number
const seen: Array<{ servername: string | false; verified: boolean }> = []

beforeAll(async () => {
  if (!hasOpenssl) return
  directory = mkdtempSync(join(tmpdir(), "switchboard-tls-"))
  execFileSync(
    "openssl",
    [
      "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
      "-keyout", join(directory, "key.pem"), "-out", join(directory, "cert.pem"),
      "-subj", "/CN=receiver.example.test", "-addext", "subjectAltName=DNS:receiver.example.test"
    ],
    { stdio: "ignore" }
  )
  certificate = readFileSync(join(directory, "cert.pem"), "utf8")
  server = createServer({ key: readFileSync(join(directory, "key.pem")), cert: certificate }, (request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      let verified = true
      try {
        new Webhook(SECRET).verify(Buffer.concat(chunks).toString("utf8"), request.headers as Record<string, string>)
      } catch {
        verified = false
      }
      seen.push({ servername: (request.socket as unknown as { servername: string | false }).servername, verified })
      response.writeHead(200).end("ok")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  port = (server.address() as AddressInfo).port
})

afterAll(async () => {
  if (!hasOpenssl) return
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
  rmSync(directory, { recursive: true, force: true })
})

const toLoopback = Layer.mergeAll(
  Layer.succeed(WebhookHostResolver, { lookup: () => Promise.resolve([{ address: "127.0.0.1", family: 4 }]) }),
  WebhookSettings.layer({ allowPrivateNetworks: true })
)

const event = { id: "msg_tls", type: "contact.created" as const, created_at: "2026-11-23T09:00:00.000Z", data: { uuid: "x" } }

describe.skipIf(!hasOpenssl)("webhook sender over https", () => {
  it.live("connects to the checked address, with the host name as SNI and for the certificate check", () =>
    Effect.gen(function*() {
      const sender = makeHttpWebhookSender({ ca: certificate })
      const outcome = yield* sender.send({ url: `https://receiver.example.test:${port}/hooks`, secret: SECRET, event })
      expect(outcome).toMatchObject({ delivered: true, status: 200, error: null, response_body: "ok" })
      expect(seen.at(-1)).toEqual({ servername: "receiver.example.test", verified: true })
    }).pipe(Effect.provide(toLoopback)))

  it.live("refuses a certificate that is not for the URL's host name", () =>
    Effect.gen(function*() {
      const sender = makeHttpWebhookSender({ ca: certificate })
      const outcome = yield* sender.send({ url: `https://other.example.test:${port}/hooks`, secret: SECRET, event })
      expect(outcome).toMatchObject({ delivered: false, status: null, error: "request failed (ERR_TLS_CERT_ALTNAME_INVALID)" })
    }).pipe(Effect.provide(toLoopback)))

  it.live("refuses a certificate no trusted authority signed", () =>
    Effect.gen(function*() {
      const outcome = yield* makeHttpWebhookSender().send({ url: `https://receiver.example.test:${port}/hooks`, secret: SECRET, event })
      expect(outcome.delivered).toBe(false)
      expect(outcome.error).toMatch(/^request failed \((DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN)\)$/)
    }).pipe(Effect.provide(toLoopback)))
})

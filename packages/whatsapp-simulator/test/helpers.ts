import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { AddressInfo } from "node:net"

/** One webhook POST the receiver got: headers and the exact body text. */
export interface Delivery {
  readonly headers: IncomingHttpHeaders
  readonly body: string
}

/**
 * A webhook receiver on 127.0.0.1 (standing in for the Switchboard server the simulator
 * posts to): records every POST and answers `status` (default 200).
 */
export const startReceiver = async (status = 200) => {
  const deliveries: Array<Delivery> = []
  const server: Server = createServer((req, res) => {
    let body = ""
    req.setEncoding("utf8").on("data", (chunk: string) => (body += chunk))
    req.on("end", () => {
      deliveries.push({ headers: req.headers, body })
      res.writeHead(status, { "content-type": "application/json" })
      res.end(JSON.stringify({ received: 1 }))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks/whatsapp`
  return { url, deliveries, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

/** A Graph call with a bearer token: `GET path` or `POST path` with a JSON body. */
export const graph = async (base: string, path: string, token: string | null, body?: unknown) => {
  const response = await fetch(`${base}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  let json: any
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: response.status, contentType: response.headers.get("content-type"), text, json }
}

/** A text send's body as Switchboard writes it. */
export const textSend = (to: string, text = "Hello", extra: Record<string, unknown> = {}) => ({
  messaging_product: "whatsapp",
  recipient_type: "individual",
  to,
  type: "text",
  text: { preview_url: false, body: text },
  ...extra
})

import type { IncomingMessage, RequestListener, ServerResponse } from "node:http"
import type { HealthReport } from "@switchboard/http-adapter"

/**
 * The liveness path (docs/standalone-server.md "Health endpoints"): `200 {"status":"ok"}`
 * while the process runs; it reads nothing.
 *
 * @category server
 */
export const LIVENESS_PATH = "/healthz"

/**
 * The readiness path (docs/standalone-server.md "Health endpoints"): `200` with the
 * handler's `HealthReport` when every check passes, else `503` with it; `503
 * {"status":"stopping"}` once a shutdown began.
 *
 * @category server
 */
export const READINESS_PATH = "/readyz"

/**
 * The server's listener with the health endpoints in front of the API, and the switch a
 * shutdown throws so that readiness answers 503 from then on.
 *
 * @category server
 */
export interface HealthEndpoints {
  readonly listener: RequestListener
  readonly beginShutdown: () => void
}

/**
 * Serves {@link LIVENESS_PATH} and {@link READINESS_PATH} (`GET` and `HEAD`; any other
 * method `405` with `Allow: GET, HEAD`) before `api`, which gets every other request.
 * They need no API key, are not rate limited and write no request log line (a probe every
 * few seconds would drown the API's lines). Answers are JSON with `Cache-Control:
 * no-store`; `health` is the handler's `health()`, which never rejects.
 *
 * @category server
 */
export const withHealthEndpoints = (api: RequestListener, health: () => Promise<HealthReport>): HealthEndpoints => {
  let stopping = false
  const listener: RequestListener = (request, response) => {
    const path = pathOf(request.url ?? "/")
    if (path !== LIVENESS_PATH && path !== READINESS_PATH) return api(request, response)
    if (request.method !== "GET" && request.method !== "HEAD") {
      response.setHeader("Allow", "GET, HEAD")
      return answer(request, response, 405, { status: "method_not_allowed" })
    }
    if (path === LIVENESS_PATH) return answer(request, response, 200, { status: "ok" })
    if (stopping) return answer(request, response, 503, { status: "stopping" })
    void health().then((report) => answer(request, response, report.status === "ok" ? 200 : 503, report))
  }
  return { listener, beginShutdown: () => void (stopping = true) }
}

/** The path of a request target, without its query string. */
const pathOf = (url: string): string => {
  const queryStart = url.indexOf("?")
  return queryStart === -1 ? url : url.slice(0, queryStart)
}

/** Writes `body` as JSON (no body for `HEAD`), unless the client already went away. */
const answer = (request: IncomingMessage, response: ServerResponse, status: number, body: unknown): void => {
  if (response.destroyed || response.headersSent) return
  const text = JSON.stringify(body)
  response.writeHead(status, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": Buffer.byteLength(text),
    "Cache-Control": "no-store"
  })
  response.end(request.method === "HEAD" ? undefined : text)
}

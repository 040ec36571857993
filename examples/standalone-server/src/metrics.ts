import { createHash, timingSafeEqual } from "node:crypto"
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import type { HandlerMetrics } from "@switchboard/http-adapter"
import { Config, ConfigError, Either, Option, Redacted } from "effect"

/**
 * Where the standalone server serves its Prometheus metrics (docs/standalone-server.md
 * "Metrics"), read from the environment:
 * - `METRICS_TOKEN`: `GET /metrics` on the API's port, outside the API's base path, for
 *   requests with `Authorization: Bearer <token>` (else 401);
 * - `METRICS_PORT`: `GET /metrics` on a listener of its own at this port (on `HOST`), no
 *   token asked (keep that port private: a firewall, a private network);
 * either, both or neither. Neither: no `/metrics` (404 as any unknown path) and nothing
 * is counted. Set but empty, a token with white space, or a port that is not an integer
 * from 0 to 65535 (0: a free port chosen by the system, printed at start-up) fail with an
 * error naming the variable. The token is never printed.
 *
 * @category config
 */
export interface MetricsSettings {
  readonly token: Option.Option<Redacted.Redacted<string>>
  readonly port: Option.Option<number>
}

/**
 * {@link MetricsSettings} from `METRICS_TOKEN` and `METRICS_PORT`.
 *
 * @category config
 */
export const metricsConfig: Config.Config<MetricsSettings> = Config.all({
  token: Config.option(Config.redacted("METRICS_TOKEN")).pipe(
    Config.mapOrFail((token) =>
      Option.isSome(token) && !/^\S+$/.test(Redacted.value(token.value))
        ? Either.left(ConfigError.InvalidData(["METRICS_TOKEN"], "METRICS_TOKEN must be a non-empty token without white space"))
        : Either.right(token)
    )
  ),
  port: Config.option(Config.string("METRICS_PORT")).pipe(
    Config.mapOrFail((text) => {
      if (Option.isNone(text)) return Either.right(Option.none())
      const port = Number(text.value.trim())
      return /^\s*\d+\s*$/.test(text.value) && Number.isSafeInteger(port) && port <= 65535
        ? Either.right(Option.some(port))
        : Either.left(ConfigError.InvalidData(["METRICS_PORT"], `METRICS_PORT must be an integer from 0 to 65535 (got "${text.value}")`))
    })
  )
})

/**
 * The server's metrics once {@link startMetrics} set them up: the handler's `metrics`
 * option (`undefined` when off), the API server's listener with `GET /metrics` in front
 * (`route`), the start-up line, and `close` for the shutdown (the metrics listener).
 *
 * @category server
 */
export interface ServerMetrics {
  readonly handlerMetrics: HandlerMetrics | undefined
  readonly route: (listener: RequestListener) => RequestListener
  readonly listen: (host: string) => Promise<void>
  readonly describe: (apiUrl: string) => string | undefined
  readonly close: () => Promise<void>
}

/**
 * Sets up the metrics of `settings`: a prom-client registry with the handler's metrics and
 * the default process metrics (prom-client and the metrics entry are loaded only then).
 * `listen` starts the `METRICS_PORT` listener; it rejects when that port cannot be bound.
 *
 * @category server
 */
export const startMetrics = async (settings: MetricsSettings): Promise<ServerMetrics> => {
  if (Option.isNone(settings.token) && Option.isNone(settings.port)) {
    return { handlerMetrics: undefined, route: (listener) => listener, listen: async () => undefined, describe: () => undefined, close: async () => undefined }
  }
  const [{ Registry }, { prometheusMetrics }] = await Promise.all([import("prom-client"), import("@switchboard/http-adapter/metrics")])
  const registry = new Registry()
  const handlerMetrics = prometheusMetrics(registry, { defaultMetrics: true })
  const scrape = (response: ServerResponse) =>
    registry.metrics().then(
      (text) => response.writeHead(200, { "content-type": registry.contentType }).end(text),
      () => response.writeHead(500, { "content-type": "text/plain; charset=utf-8" }).end("metrics unavailable\n")
    )
  const tokenDigest = Option.map(settings.token, (token) => digestOf(Redacted.value(token)))
  let metricsServer: Server | undefined

  const route = (listener: RequestListener): RequestListener => {
    if (Option.isNone(tokenDigest)) return listener
    return (request, response) => {
      if (!isMetricsRequest(request)) return listener(request, response)
      if (!bearerMatches(request.headers.authorization, tokenDigest.value)) return unauthorized(response)
      void scrape(response)
    }
  }

  const listen = async (host: string) => {
    if (Option.isNone(settings.port)) return
    const server = createServer((request, response) => {
      if (isMetricsRequest(request)) return void scrape(response)
      response.writeHead(404, { "content-type": "text/plain; charset=utf-8" }).end("not found: GET /metrics\n")
    })
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject)
      server.listen(settings.port.pipe(Option.getOrElse(() => 0)), host, () => {
        server.off("error", reject)
        resolve()
      })
    })
    metricsServer = server
  }

  const describe = (apiUrl: string) => {
    const places: Array<string> = []
    if (Option.isSome(settings.token)) places.push(`${apiUrl}/metrics (bearer token METRICS_TOKEN)`)
    if (metricsServer !== undefined) {
      const { address, port } = metricsServer.address() as AddressInfo
      places.push(`http://${address.includes(":") ? `[${address}]` : address}:${port}/metrics (METRICS_PORT, no token)`)
    }
    return `Metrics: ${places.join(" and ")}`
  }

  const close = () =>
    new Promise<void>((resolve) => {
      if (metricsServer === undefined) return resolve()
      metricsServer.close(() => resolve())
      metricsServer.closeAllConnections()
    })

  return { handlerMetrics, route, listen, describe, close }
}

/** `GET` or `HEAD` of `/metrics` (with any query string). */
const isMetricsRequest = (request: IncomingMessage): boolean =>
  (request.method === "GET" || request.method === "HEAD") && (request.url ?? "").split("?", 1)[0] === "/metrics"

const digestOf = (text: string): Buffer => createHash("sha256").update(text).digest()

/** Whether `Authorization` is `Bearer <the token>`, compared in constant time (through SHA-256 digests). */
const bearerMatches = (authorization: string | undefined, tokenDigest: Buffer): boolean => {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "")
  return match?.[1] !== undefined && timingSafeEqual(digestOf(match[1]), tokenDigest)
}

const unauthorized = (response: ServerResponse): void => {
  response
    .writeHead(401, { "content-type": "text/plain; charset=utf-8", "www-authenticate": 'Bearer realm="metrics"' })
    .end("unauthorized: GET /metrics needs Authorization: Bearer <METRICS_TOKEN>\n")
}

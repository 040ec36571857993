/**
 * The standalone Switchboard server (docs/standalone-server.md): `npm start` from the repository root.
 *
 * Reads `HOST`, `PORT` and `DATABASE_URL` (see `config.ts`), the rate-limit variables
 * of docs/rate-limits.md with `REDIS_URL` (see `rateLimits.ts`) and the `WHATSAPP_*` variables of the
 * sends' transport (see `transport.ts`), the `SWITCHBOARD_WEBHOOKS_*` variables of outgoing
 * webhooks (see `webhooks.ts`), the send queue's `SWITCHBOARD_SEND_*` (see `sendQueue.ts`), `SWITCHBOARD_TEMPLATE_SYNC_MS`
 * (see `templateSync.ts`), the `OTEL_*` variables of
 * traces (see `tracing.ts`), `METRICS_TOKEN` and `METRICS_PORT` (see `metrics.ts`) and `SWITCHBOARD_SECRET_KEY` (see `secretKey.ts`;
 * when unset with SQLite, `<data dir>/secret.key` is created on first start and the server
 * says so on stderr), opens the store (a key that is not the store's stops it there), creates a
 * demo organization on an empty database (printing `{"org_id","key_id","api_key"}` as one
 * JSON line on stdout, that first time only), then serves the API with `node:http` and
 * prints `Switchboard listening on http://HOST:PORT/api/v1/api` on stderr. Request logs
 * are JSON lines on stderr, so stdout carries only the demo credentials. SIGINT and
 * SIGTERM shut it down gracefully (exit code 0); a bad configuration, a store that cannot
 * be opened or a port that cannot be bound exits with code 1. It sets V8's
 * `--heap-growing-percent=50` and `--no-allocation-site-pretenuring` as it starts, each
 * unless given its own (see `heap.ts`).
 *
 * @packageDocumentation
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { Core, SecretKey, Storage } from "@switchboard/core"
import { answerClientError, createHandler, DEFAULT_BASE_PATH } from "@switchboard/http-adapter"
import { Effect, Either, Exit, Layer, ManagedRuntime, Option } from "effect"
import { loadConfig, storageLayerFor } from "./config.js"
import { setServerV8Flags } from "./heap.js"
import { serverConfig, type ServerConfig } from "./serverConfig.js"
import { ensureDemoOrganization } from "./demo.js"
import { withHealthEndpoints } from "./health.js"
import { stderrJsonLog } from "./logging.js"
import { describeRateLimits, rateLimitConfig, rateLimitOptionsFor, rateLimitStoreFor } from "./rateLimits.js"
import { describeCause, describeError } from "./failures.js"
import { closeGracefully, shutDown } from "./shutdown.js"
import { loadSecretKey } from "./secretKey.js"
import { describeGraphApi, describeTransport, graphApiConfig, transportConfig, transportLayerFor } from "./transport.js"
import { describeWebhookSafety, describeWhatsAppWebhook, webhookConfig } from "./webhooks.js"
import { mediaConfig } from "./media.js"
import { sendQueueConfig } from "./sendQueue.js"
import { templateSyncConfig } from "./templateSync.js"
import { describeTracing, tracingConfig, tracingFor } from "./tracing.js"
import { metricsConfig, startMetrics } from "./metrics.js"

const main = async (): Promise<void> => {
  setServerV8Flags()
  const config = await Effect.runPromiseExit(loadConfig(serverConfig))
  if (Exit.isFailure(config)) return fail(describeCause(config.cause))
  const rateLimits = await Effect.runPromiseExit(loadConfig(rateLimitConfig))
  if (Exit.isFailure(rateLimits)) return fail(describeCause(rateLimits.cause))
  const rateLimitStore = rateLimitStoreFor(rateLimits.value, config.value.database)
  const transport = await Effect.runPromiseExit(loadConfig(transportConfig))
  if (Exit.isFailure(transport)) return fail(describeCause(transport.cause))
  const transportLayer = transportLayerFor(transport.value)
  const graphApi = await Effect.runPromiseExit(loadConfig(graphApiConfig))
  if (Exit.isFailure(graphApi)) return fail(describeCause(graphApi.cause))
  const webhooks = await Effect.runPromiseExit(loadConfig(webhookConfig))
  if (Exit.isFailure(webhooks)) return fail(describeCause(webhooks.cause))
  const sendQueue = await Effect.runPromiseExit(loadConfig(sendQueueConfig))
  if (Exit.isFailure(sendQueue)) return fail(describeCause(sendQueue.cause))
  const templateSync = await Effect.runPromiseExit(loadConfig(templateSyncConfig))
  if (Exit.isFailure(templateSync)) return fail(describeCause(templateSync.cause))
  const media = await Effect.runPromiseExit(loadConfig(mediaConfig(config.value.database)))
  if (Exit.isFailure(media)) return fail(describeCause(media.cause))
  const tracing = await Effect.runPromiseExit(loadConfig(tracingConfig))
  if (Exit.isFailure(tracing)) return fail(describeCause(tracing.cause))
  const tracingOption = await tracingFor(tracing.value)
  const metricsSettings = await Effect.runPromiseExit(loadConfig(metricsConfig))
  if (Exit.isFailure(metricsSettings)) return fail(describeCause(metricsSettings.cause))
  const secret = await Effect.runPromiseExit(loadSecretKey(config.value.database, { create: true }))
  if (Exit.isFailure(secret)) return fail(describeCause(secret.cause))
  // `create: true` always yields a key (or fails above).
  const secretKey = Option.getOrThrow(secret.value)
  if (secretKey.note !== undefined) process.stderr.write(`${secretKey.note}\n`)

  // One store for the whole process: the bootstrap uses it, then the handler shares it
  // (which also makes `memory:` work). The handler's dispose leaves it open;
  // `runtime.dispose()` closes it.
  // With the key, building Core checks it against the store's check value first.
  const runtime = ManagedRuntime.make(
    Core.layer.pipe(Layer.provide(SecretKey.layer(secretKey.keys)), Layer.provideMerge(storageLayerFor(config.value.database)))
  )
  const bootstrap = await runtime.runPromiseExit(Effect.zip(Storage, ensureDemoOrganization))
  if (Exit.isFailure(bootstrap)) {
    await runtime.dispose()
    return fail(describeCause(bootstrap.cause))
  }
  const [storage, demo] = bootstrap.value
  if (Option.isSome(demo)) process.stdout.write(`${JSON.stringify(demo.value)}\n`)

  // JSON lines on stderr, written in batches (docs/standalone-server.md "Logs"). A stderr
  // that fails for good (its reader gone) loses the server's messages, never the server:
  // without a listener its 'error' would be thrown as an uncaught exception.
  process.stderr.on("error", () => undefined)
  const log = stderrJsonLog()
  // GET /metrics with METRICS_TOKEN and/or on METRICS_PORT (docs/standalone-server.md "Metrics").
  const metrics = await startMetrics(metricsSettings.value)
  const whatsapp = { appSecret: process.env.WHATSAPP_APP_SECRET, verifyToken: process.env.WHATSAPP_WEBHOOK_VERIFY_TOKEN }
  // A combination of options the handler refuses (sendQueue.leaseMs not above the timeout) throws here.
  const created = Either.try(() =>
    createHandler({
      storage: Layer.succeed(Storage, storage),
      logger: log.logger,
      // Request lines as plain data, formatted without Effect's log entry (docs/benchmarks.md).
      requestLog: log.requestLog,
      logLevel: config.value.logLevel,
      rateLimit: rateLimitOptionsFor(rateLimits.value, rateLimitStore),
      // WhatsApp's webhook secrets (docs/whatsapp-webhooks.md); unset: its requests are refused.
      whatsapp,
      secretKey: secretKey.keys,
      // Channel verification and channel sends reach the Graph API here (docs/channels.md).
      graphApi: graphApi.value,
      // Outgoing webhooks: the handler runs the dispatcher; dispose() stops it after the
      // attempts in flight (docs/webhooks.md).
      webhooks: webhooks.value,
      // The send queue: the handler runs its dispatcher too (docs/messaging.md "The send queue").
      sendQueue: sendQueue.value,
      // The template sync: the handler runs its loop (docs/templates-and-replies.md "Templates from Meta").
      templateSync: templateSync.value,
      // Media: a directory beside the database or an S3 bucket; the handler runs the inbound fetches (docs/media.md).
      media: media.value,
      ...(transportLayer === undefined ? {} : { transport: transportLayer }),
      // OTLP traces when OTEL_EXPORTER_OTLP_ENDPOINT is set (src/tracing.ts); dispose() sends the last spans.
      ...(tracingOption === undefined ? {} : { tracing: tracingOption }),
      ...(metrics.handlerMetrics === undefined ? {} : { metrics: metrics.handlerMetrics })
    })
  )
  if (Either.isLeft(created)) {
    await runtime.dispose()
    return fail(describeError(created.left))
  }
  const handler = created.right
  const closeStore = async (): Promise<void> => {
    await metrics.close()
    await handler.dispose()
    await runtime.dispose()
  }
  // GET /healthz and /readyz (docs/standalone-server.md "Health endpoints"), then GET /metrics
  // with METRICS_TOKEN ("Metrics"), are answered before the API.
  const endpoints = withHealthEndpoints(metrics.route(handler), handler.health)
  let server: Server
  try {
    await handler.ready
    server = await listen(createServer(endpoints.listener).on("clientError", answerClientError), config.value)
  } catch (error) {
    await closeStore()
    return fail(`cannot listen on ${config.value.host}:${config.value.port}: ${describeError(error)}`)
  }
  try {
    await metrics.listen(config.value.host)
  } catch (error) {
    await closeGracefully(server)
    await closeStore()
    return fail(`cannot listen on ${config.value.host}:${process.env.METRICS_PORT} (METRICS_PORT): ${describeError(error)}`)
  }
  const { port } = server.address() as AddressInfo
  // Signal handlers first: once "listening" is printed, a SIGTERM must find them installed.
  onShutdownSignal(async () => {
    // Readiness answers 503 from now on, on the connections still open while requests drain.
    endpoints.beginShutdown()
    try {
      // Requests finish while the dispatchers record what they sent; then the store closes.
      await shutDown({
        server,
        handler,
        closeStore: async () => {
          await metrics.close()
          await runtime.dispose()
        }
      })
    } finally {
      // Every request line before the last one.
      log.flushSync()
    }
    process.stderr.write("Switchboard stopped\n")
  })
  const baseUrl = `http://${urlHost(config.value.host)}:${port}${DEFAULT_BASE_PATH}`
  const startUpLines = [
    describeRateLimits(rateLimits.value, rateLimitStore),
    describeTransport(transport.value),
    describeGraphApi(graphApi.value),
    describeWhatsAppWebhook(`${baseUrl}/webhooks/whatsapp`, whatsapp),
    describeWebhookSafety(webhooks.value),
    `Log level: ${config.value.logLevel}`,
    describeTracing(tracing.value),
    metrics.describe(`http://${urlHost(config.value.host)}:${port}`),
    `Switchboard listening on ${baseUrl}`
  ]
  for (const line of startUpLines) if (line !== undefined) process.stderr.write(`${line}\n`)
}

/** Starts listening; rejects with the server's error (for example `EADDRINUSE`). */
const listen = (server: Server, config: ServerConfig): Promise<Server> =>
  new Promise((resolve, reject) => {
    server.once("error", reject)
    server.listen(config.port, config.host, () => {
      server.off("error", reject)
      resolve(server)
    })
  })

/**
 * Runs `shutdown` on the first SIGINT or SIGTERM, then exits with code 0 (1 when the
 * shutdown failed). A second signal exits at once with code 1.
 */
const onShutdownSignal = (shutdown: () => Promise<void>): void => {
  let started = false
  const handle = (signal: NodeJS.Signals): void => {
    if (started) {
      process.stderr.write(`Received ${signal} again; exiting now\n`)
      process.exit(1)
    }
    started = true
    process.stderr.write(`Received ${signal}; shutting down\n`)
    shutdown().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`error: shutdown failed: ${describeError(error)}\n`)
        process.exit(1)
      }
    )
  }
  process.on("SIGINT", handle)
  process.on("SIGTERM", handle)
}

/** An IPv6 literal needs brackets inside a URL. */
const urlHost = (host: string): string => (host.includes(":") ? `[${host}]` : host)

/** Prints `error: <message>` on stderr and sets exit code 1. */
const fail = (message: string): void => {
  process.stderr.write(`error: ${message}\n`)
  process.exitCode = 1
}

await main()

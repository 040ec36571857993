import { collectDefaultMetrics, Counter, Gauge, Histogram, type Registry } from "prom-client"
import type { OutboxSummaryRow } from "@switchboard/core"
import type { HandlerMetrics } from "../handlerMetrics.js"

/**
 * Options of {@link prometheusMetrics}.
 *
 * @category metrics
 */
export interface PrometheusMetricsOptions {
  /**
   * Whether to register prom-client's default process metrics (`collectDefaultMetrics`:
   * CPU, memory, event loop lag, garbage collection, handles…) on the registry too.
   * Default `false`: the registry is the host's, and so is that choice (the standalone
   * server turns them on).
   */
  readonly defaultMetrics?: boolean
  /**
   * Upper bounds, in seconds, of the buckets of `switchboard_http_request_duration_seconds`.
   * Default {@link DEFAULT_DURATION_BUCKETS}.
   */
  readonly durationBuckets?: ReadonlyArray<number>
  /**
   * The longest a scrape waits for the send queue's summary, in milliseconds (default
   * 1 000). A read that fails or takes longer leaves `switchboard_outbox_messages` and
   * `switchboard_channel_paused` at the values of the last read that succeeded.
   */
  readonly outboxReadTimeoutMs?: number
}

/**
 * The default buckets of `switchboard_http_request_duration_seconds`, in seconds: from
 * 1 ms (a key check answered from memory) to 10 s (a send waiting on Meta's timeout).
 *
 * @category metrics
 */
export const DEFAULT_DURATION_BUCKETS: ReadonlyArray<number> = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10
]

/**
 * The methods counted under their own name; any other (a Fetch host passes whatever token a
 * client sends) is counted as `OTHER`, so a client cannot add label values at will.
 */
const COUNTED_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])

/** The label of the messages that have no channel, in `switchboard_outbox_messages`. */
const NO_CHANNEL = "none"

/**
 * Handler metrics on a prom-client `registry` (docs/http-adapter.md "Metrics"), for the
 * `metrics` option of `createHandler`, `createFetchHandler` and `runDispatchers`. It
 * registers, on `registry`:
 * - `switchboard_http_requests_total{route,method,status}` (counter): answered requests,
 *   `route` the route's pattern (`/contacts/:uuid`), `(unmatched)` when none matched;
 *   `method` one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, else `OTHER`;
 * - `switchboard_http_request_duration_seconds{route}` (histogram): from arrival to answer;
 * - `switchboard_messages_total{direction,status}` (counter): messages entering a status;
 * - `switchboard_outbox_messages{channel,status}` (gauge, read when scraped): waiting
 *   messages per channel uuid (`none`: without a channel), `status` `queued` or `sending`;
 * - `switchboard_channel_paused{channel}` (gauge, read when scraped): 1 for a paused
 *   channel, 0 for an active one with waiting messages;
 * - `switchboard_webhook_deliveries_total{result}` (counter): outgoing webhook attempts,
 *   `delivered`, `retrying` or `failed`;
 * - `switchboard_provider_webhooks_total{result}` (counter): Meta's webhook POSTs,
 *   `accepted`, `accepted_with_refusals`, `invalid_signature` or `error`;
 * - `switchboard_rate_limited_total{bucket}` (counter): 429s, `general` or `send`;
 * - with `defaultMetrics: true`, prom-client's default process metrics.
 * Call it once per registry (prom-client refuses a name registered twice); one result may
 * be given to several handlers of one process. Needs the optional peer dependency
 * `prom-client` (^15.1).
 *
 * @category metrics
 * @example
 * import { createServer } from "node:http"
 * import { Registry } from "prom-client"
 * import { createHandler } from "@switchboard/http-adapter"
 * import { prometheusMetrics } from "@switchboard/http-adapter/metrics"
 * import { MemoryStorage } from "@switchboard/core"
 *
 * const registry = new Registry()
 * const handler = createHandler({ storage: MemoryStorage.layer, metrics: prometheusMetrics(registry) })
 * createServer(async (req, res) => {
 *   if (req.url === "/metrics") return res.setHeader("content-type", registry.contentType).end(await registry.metrics())
 *   handler(req, res)
 * }).listen(3000)
 */
export const prometheusMetrics = (registry: Registry, options: PrometheusMetricsOptions = {}): HandlerMetrics => {
  const registers = [registry]
  const requests = new Counter({
    name: "switchboard_http_requests_total",
    help: "Requests answered by the API, by route pattern, method and status.",
    labelNames: ["route", "method", "status"] as const,
    registers
  })
  const durations = new Histogram({
    name: "switchboard_http_request_duration_seconds",
    help: "Seconds from a request's arrival to its answer, by route pattern.",
    labelNames: ["route"] as const,
    buckets: [...(options.durationBuckets ?? DEFAULT_DURATION_BUCKETS)],
    registers
  })
  const messages = new Counter({
    name: "switchboard_messages_total",
    help: "Messages entering a status, by direction and status.",
    labelNames: ["direction", "status"] as const,
    registers
  })
  const deliveries = new Counter({
    name: "switchboard_webhook_deliveries_total",
    help: "Outgoing webhook delivery attempts by result (delivered, retrying, failed).",
    labelNames: ["result"] as const,
    registers
  })
  const providerWebhooks = new Counter({
    name: "switchboard_provider_webhooks_total",
    help: "WhatsApp webhook POSTs from Meta by result (accepted, accepted_with_refusals, invalid_signature, error).",
    labelNames: ["result"] as const,
    registers
  })
  const rateLimited = new Counter({
    name: "switchboard_rate_limited_total",
    help: "Requests refused 429 by a rate limit, by bucket.",
    labelNames: ["bucket"] as const,
    registers
  })
  const outbox = outboxGauges(registers, options.outboxReadTimeoutMs ?? 1_000)
  if (options.defaultMetrics === true) collectDefaultMetrics({ register: registry })

  // The labelled children of the per-request metrics, made once per label set: a request
  // then costs two map reads and two increments (docs/benchmarks.md).
  const requestCounters = new Map<string, { inc: () => void }>()
  const durationHistograms = new Map<string, { observe: (value: number) => void }>()

  return {
    requestAnswered: (route, method, status, durationSeconds) => {
      const methodLabel = COUNTED_METHODS.has(method) ? method : "OTHER"
      const key = `${status} ${methodLabel} ${route}`
      let counter = requestCounters.get(key)
      if (counter === undefined) {
        const child = requests.labels(route, methodLabel, String(status))
        counter = { inc: () => child.inc() }
        requestCounters.set(key, counter)
      }
      counter.inc()
      let histogram = durationHistograms.get(route)
      if (histogram === undefined) {
        histogram = durations.labels(route)
        durationHistograms.set(route, histogram)
      }
      histogram.observe(durationSeconds)
    },
    messageStatus: (direction, status, count = 1) => messages.inc({ direction, status }, count),
    webhookDelivery: (result) => deliveries.inc({ result }),
    providerWebhook: (result) => providerWebhooks.inc({ result }),
    rateLimited: (bucket) => rateLimited.inc({ bucket }),
    readOutboxWith: outbox.readWith
  }
}

/**
 * `switchboard_outbox_messages` and `switchboard_channel_paused`, set at each scrape from
 * one summary read shared by both, through the latest reader attached and not yet
 * detached. A scrape waits at most `timeoutMs` for it; a read still running is never
 * started again (a store that stopped answering gets one read at a time). No reader, or a
 * read that failed or is late: the values of the last successful read stay.
 */
const outboxGauges = (registers: Array<Registry>, timeoutMs: number) => {
  const readers: Array<() => Promise<ReadonlyArray<OutboxSummaryRow>>> = []
  let reading: Promise<unknown> | undefined
  let latest: ReadonlyArray<OutboxSummaryRow> = []

  /** The summary as of this scrape: the latest rows once the read ended or `timeoutMs` passed. */
  const summary = async (): Promise<ReadonlyArray<OutboxSummaryRow>> => {
    const read = readers[readers.length - 1]
    if (read === undefined) return latest
    reading ??= read()
      .then((rows) => {
        latest = rows
      })
      .catch(() => undefined)
      .finally(() => {
        reading = undefined
      })
    await withTimeout(reading, timeoutMs)
    return latest
  }

  const waiting: Gauge<"channel" | "status"> = new Gauge({
    name: "switchboard_outbox_messages",
    help: "Messages waiting in the send queue, by channel uuid (none: without a channel) and status (queued, sending); read when scraped.",
    labelNames: ["channel", "status"] as const,
    registers,
    collect: async () => {
      const rows = await summary()
      waiting.reset()
      for (const row of rows) {
        const channel = row.channel_id ?? NO_CHANNEL
        waiting.set({ channel, status: "queued" }, row.queued)
        waiting.set({ channel, status: "sending" }, row.sending)
      }
    }
  })
  const paused: Gauge<"channel"> = new Gauge({
    name: "switchboard_channel_paused",
    help: "1 for a paused channel, 0 for an active channel with waiting messages; read when scraped.",
    labelNames: ["channel"] as const,
    registers,
    collect: async () => {
      const rows = await summary()
      paused.reset()
      for (const row of rows) {
        if (row.channel_id !== null) paused.set({ channel: row.channel_id }, row.channel_status === "paused" ? 1 : 0)
      }
    }
  })

  const readWith = (read: () => Promise<ReadonlyArray<OutboxSummaryRow>>) => {
    readers.push(read)
    return () => {
      const index = readers.lastIndexOf(read)
      if (index !== -1) readers.splice(index, 1)
    }
  }
  return { readWith }
}

/** Resolves when `promise` settles or `timeoutMs` passed, whichever is first. */
const withTimeout = (promise: Promise<unknown>, timeoutMs: number): Promise<void> =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, timeoutMs)
    timer.unref()
    void promise.finally(() => {
      clearTimeout(timer)
      resolve()
    })
  })

// Per-request cost of each rate-limit store (issue 5): `GET /verify` throughput over
// keep-alive sockets with the counters in no store, in memory, in SQLite and in Redis,
// each as a ratio to "none" measured in the same run. "none" is the limiter on a (synchronous) store
// that answers at once without keeping anything, so the ratios isolate the store.
// BENCH_RATE_REQUESTS (default 5000), BENCH_RATE_CONCURRENCY (default 32) and
// BENCH_RATE_ROUNDS (default 3) tune it;
// Redis runs when REDIS_URL is set.
import { createServer } from "node:http"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { MemoryRateLimitStore, MemoryStorage, RateLimitStore, Storage } from "@switchboard/core"
import { createHandler } from "@switchboard/http-adapter"
import { RedisRateLimitStore } from "@switchboard/rate-limit-redis"
import { SqliteRateLimitStore } from "@switchboard/storage-sqlite"
import { createOrganization, median, runIfMain, send, temporaryDirectory } from "./lib.mjs"

const REQUESTS = Number(process.env.BENCH_RATE_REQUESTS ?? 5000)
const CONCURRENCY = Number(process.env.BENCH_RATE_CONCURRENCY ?? 32)
const ROUNDS = Number(process.env.BENCH_RATE_ROUNDS ?? 3)
const WARMUP = Math.min(500, REQUESTS)

/** Limits no run reaches: every request is counted and accepted. */
const UNREACHED = { max: 1_000_000_000, windowMs: 3_600_000 }

export const run = async () => {
  const directory = temporaryDirectory()
  const stores = [
    ["none (no-op store)", Layer.succeed(RateLimitStore, { increment: () => Effect.succeed(1), synchronous: true })],
    ["memory", MemoryRateLimitStore.layer],
    ["sqlite (WAL file)", SqliteRateLimitStore.layer({ filename: join(directory, "rate-limits.db") })],
    ...(process.env.REDIS_URL
      ? [["redis", RedisRateLimitStore.layer({ url: process.env.REDIS_URL, keyPrefix: `bench:${process.pid}:` })]]
      : [])
  ]
  // One discarded pass first, so the JIT has warmed up the handler before any figure counts;
  // then ROUNDS rounds over every store in turn (drift hits all alike), the median kept.
  await throughput(stores[0][1])
  const samples = stores.map(() => [])
  for (let round = 0; round < ROUNDS; round++) {
    for (const [index, [, store]] of stores.entries()) samples[index].push(await throughput(store))
  }
  const results = stores.map(([label], index) => ({ label, perSecond: median(samples[index]) }))
  const none = results[0].perSecond
  const width = Math.max(...results.map((result) => result.label.length))
  const rows = results.map(
    ({ label, perSecond }) =>
      `  ${label.padEnd(width)}  ${perSecond.toFixed(0).padStart(7)} req/s   ratio to none: ${(perSecond / none).toFixed(2)}x`
  )
  if (!process.env.REDIS_URL) rows.push(`  ${"redis".padEnd(width)}  skipped: REDIS_URL is not set`)
  return (
    `GET /verify throughput by rate-limit store (${REQUESTS} requests, ${CONCURRENCY} concurrent, keep-alive, ` +
    `median of ${ROUNDS} rounds)\n` +
    rows.join("\n")
  )
}

/** Requests per second of `GET /verify` on a fresh server whose limiter uses `store`. */
const throughput = async (store) => {
  const storage = Layer.succeed(Storage, MemoryStorage.make())
  const { apiKey } = await createOrganization(storage)
  const handler = createHandler({ storage, logger: false, rateLimit: { general: UNREACHED, store } })
  await handler.ready
  const server = createServer(handler)
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve))
  const url = `http://127.0.0.1:${server.address().port}/api/v1/api/verify`
  const headers = { authorization: `Bearer ${apiKey}` }
  try {
    await load(url, headers, WARMUP)
    const started = performance.now()
    await load(url, headers, REQUESTS)
    return REQUESTS / ((performance.now() - started) / 1000)
  } finally {
    server.close()
    await handler.dispose()
  }
}

/** `count` requests, at most {@link CONCURRENCY} in flight; every one must answer 200. */
const load = async (url, headers, count) => {
  let issued = 0
  const worker = async () => {
    while (issued < count) {
      issued++
      const response = await send(url, { headers })
      if (response.status !== 200) throw new Error(`GET /verify answered ${response.status}: ${response.body}`)
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker))
}

runIfMain(import.meta.url, run)

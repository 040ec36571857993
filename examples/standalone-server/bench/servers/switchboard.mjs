// Benchmark server of chats.mjs only (the HTTP and bulk benches start the built standalone
// server itself, dist/main.js: lib.mjs `startServer`).
// Switchboard as the standalone server runs it by default (SQLite file,
// rate buckets in `<file>-rate-limits`; no request log; BENCH_RATE_STORE=memory keeps them in memory,
// BENCH_RATE_STORE=same in the data's file), with limits
// no run reaches. Argument: the SQLite file.
// Prints "ready <port>" once listening.
import { createServer } from "node:http"
import { MemoryRateLimitStore } from "@switchboard/core"
import { createHandler } from "@switchboard/http-adapter"
import { SqliteRateLimitStore, SqliteStorage } from "@switchboard/storage-sqlite"

const filename = process.argv[2]
const unreached = { max: 1_000_000_000, windowMs: 3_600_000 }
const handler = createHandler({
  storage: SqliteStorage.layer({ filename }),
  logger: false,
  rateLimit: { general: unreached, send: unreached, store:
      process.env.BENCH_RATE_STORE === "memory"
        ? MemoryRateLimitStore.layer
        : SqliteRateLimitStore.layer({ filename: process.env.BENCH_RATE_STORE === "same" ? filename : `${filename}-rate-limits` }) }
})
await handler.ready
const server = createServer(handler)
server.keepAliveTimeout = 60_000
server.listen(0, "127.0.0.1", () => console.log(`ready ${server.address().port}`))
process.on("SIGTERM", () => server.close(() => handler.dispose().then(() => process.exit(0))))

/**
 * Starts the Express example (`npm start -w @switchboard/example-express` after a build).
 *
 * Reads `HOST` (default `127.0.0.1`), `PORT` (default 3000) and `SQLITE_FILE` (default
 * `data/express-example.db`, relative to the working directory; its directory is created).
 * The data and the rate-limit counters live in that SQLite file. On a database without
 * organizations it creates "Demo organization" with an API key and prints
 * `{"org_id","key_id","api_key"}` once on stdout. SIGINT/SIGTERM close the server and the
 * database, then exit 0.
 *
 * @packageDocumentation
 */
import { mkdirSync } from "node:fs"
import { dirname, resolve } from "node:path"
import type { AddressInfo } from "node:net"
import { Core, Organizations, Storage } from "@switchboard/core"
import { SqliteRateLimitStore, SqliteStorage } from "@switchboard/storage-sqlite"
import { Effect, Layer, Logger, ManagedRuntime } from "effect"
import { createApp } from "./app.js"

const host = process.env.HOST ?? "127.0.0.1"
const port = Number(process.env.PORT ?? "3000")
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`error: PORT must be an integer from 0 to 65535 (got ${process.env.PORT})\n`)
  process.exit(1)
}
const filename = resolve(process.env.SQLITE_FILE ?? "data/express-example.db")
mkdirSync(dirname(filename), { recursive: true })

// One store for the process: the bootstrap below and the handler share it.
const runtime = ManagedRuntime.make(Core.layer.pipe(Layer.provideMerge(SqliteStorage.layer({ filename }))))
const storage = await runtime.runPromise(
  Effect.gen(function* () {
    const organizations = yield* Organizations
    if ((yield* organizations.list()).length === 0) {
      const organization = yield* organizations.create({
        name: "Demo organization",
        plan: { contacts_limit: null, label_limit: null, api_access: true },
        subscription: "active"
      })
      const key = yield* organizations.issueApiKey(organization.id)
      process.stdout.write(`${JSON.stringify({ org_id: organization.id, key_id: key.key_id, api_key: key.api_key })}\n`)
    }
    return yield* Storage
  })
)

const { app, api } = createApp({
  storage: Layer.succeed(Storage, storage),
  logger: Logger.withConsoleError(Logger.jsonLogger),
  rateLimit: { store: SqliteRateLimitStore.layer({ filename }) }
})
await api.ready
const server = app.listen(port, host, () => {
  const { port: bound } = server.address() as AddressInfo
  process.stderr.write(`Express app on http://${host}:${bound} (Switchboard at /api/v1/api, SQLite ${filename})\n`)
})

const shutdown = () => {
  server.close(() => {
    api
      .dispose()
      .then(() => runtime.dispose())
      .then(
        () => process.exit(0),
        () => process.exit(1)
      )
  })
  server.closeIdleConnections()
}
process.once("SIGINT", shutdown)
process.once("SIGTERM", shutdown)

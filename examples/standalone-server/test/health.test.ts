import { createServer as createHttpServer, type RequestListener, type Server } from "node:http"
import { type AddressInfo, connect, createServer as createTcpServer, type Socket } from "node:net"
import Database from "better-sqlite3"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import type { HealthReport } from "@switchboard/http-adapter"
import { withHealthEndpoints } from "../src/health.js"
import {
  assertBuilt,
  dropTemporarySchemas,
  killServers,
  postgresUrl,
  removeTemporaryDirectories,
  startServer,
  temporaryDatabaseEnv,
  temporaryDatabaseUrl
} from "./helpers.js"

const DEGRADED: HealthReport = {
  status: "degraded",
  checks: {
    storage: { ok: false, detail: "no answer within 1000 ms", duration_ms: 1000 },
    migrations: { ok: false, detail: "unknown: storage did not answer" },
    dispatchers: { ok: true }
  }
}

/** A `node:http` server on a free port serving `listener`; closed after the file. */
const serve = async (listener: RequestListener): Promise<string> => {
  const server = createHttpServer(listener)
  httpServers.push(server)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}
const httpServers: Array<Server> = []

beforeAll(assertBuilt)
afterEach(killServers)
afterAll(async () => {
  killServers()
  for (const server of httpServers.splice(0)) server.closeAllConnections(), server.close()
  removeTemporaryDirectories()
  await dropTemporarySchemas()
})

describe("the health endpoints in front of the API", () => {
  /** The endpoints over an API answering 418 and `report`, counting the health checks. */
  const endpointsAnswering = async (report: HealthReport) => {
    const counts = { checks: 0, api: 0 }
    const endpoints = withHealthEndpoints(
      (_request, response) => {
        counts.api++
        response.writeHead(418).end()
      },
      async () => {
        counts.checks++
        return report
      }
    )
    return { origin: await serve(endpoints.listener), counts, beginShutdown: endpoints.beginShutdown }
  }

  it("answers liveness without a check, readiness 503 with the report naming the failed check, HEAD without a body", async () => {
    const { origin, counts } = await endpointsAnswering(DEGRADED)
    const live = await fetch(`${origin}/healthz`)
    expect([live.status, await live.json(), live.headers.get("cache-control")]).toEqual([200, { status: "ok" }, "no-store"])
    expect(counts.checks).toBe(0)
    const ready = await fetch(`${origin}/readyz?probe=1`)
    expect([ready.status, await ready.json()]).toEqual([503, DEGRADED])
    const head = await fetch(`${origin}/readyz`, { method: "HEAD" })
    expect([head.status, await head.text()]).toEqual([503, ""])
    expect(counts.api).toBe(0)
    expect((await fetch(`${origin}/healthzz`)).status).toBe(418)
  })

  it("answers 405 with Allow to other methods", async () => {
    const { origin } = await endpointsAnswering(DEGRADED)
    for (const path of ["/healthz", "/readyz"]) {
      const response = await fetch(`${origin}${path}`, { method: "POST" })
      expect([response.status, response.headers.get("allow")]).toEqual([405, "GET, HEAD"])
    }
  })

  it("answers readiness 503 stopping once a shutdown began, without a check; liveness still 200", async () => {
    const { origin, counts, beginShutdown } = await endpointsAnswering({ ...DEGRADED, status: "ok" })
    expect((await fetch(`${origin}/readyz`)).status).toBe(200)
    beginShutdown()
    const ready = await fetch(`${origin}/readyz`)
    expect([ready.status, await ready.json(), counts.checks]).toEqual([503, { status: "stopping" }, 1])
    expect((await fetch(`${origin}/healthz`)).status).toBe(200)
  })
})

describe("the server's health endpoints", () => {
  it("answers /healthz and /readyz 200 on SQLite, then /readyz 503 naming migrations when the schema becomes newer", async () => {
    const databaseUrl = temporaryDatabaseUrl()
    const server = await startServer({ DATABASE_URL: databaseUrl })
    const origin = new URL(server.baseUrl).origin
    const live = await fetch(`${origin}/healthz`)
    expect([live.status, await live.json()]).toEqual([200, { status: "ok" }])
    const ready = await fetch(`${origin}/readyz`)
    expect([ready.status, await ready.json()]).toEqual([
      200,
      { status: "ok", checks: { storage: { ok: true, duration_ms: expect.any(Number) }, migrations: { ok: true }, dispatchers: { ok: true } } }
    ])

    const db = new Database(databaseUrl.slice("sqlite:".length))
    try {
      db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'from a newer release', ?)").run(new Date().toISOString())
    } finally {
      db.close()
    }
    const stale = await fetch(`${origin}/readyz`)
    const report = (await stale.json()) as HealthReport
    expect([stale.status, report.status, report.checks.storage.ok, report.checks.migrations.ok]).toEqual([503, "degraded", true, false])
    expect(report.checks.migrations.detail).toContain("9999")
    // Probes are not API requests: no request line.
    expect(server.output().stderr).not.toMatch(/"route":"\(unmatched\)"/)
  })

  it.skipIf(postgresUrl === undefined)(
    "answers /readyz 503 naming storage within 2 s when PostgreSQL stops answering",
    async () => {
      const target = new URL(postgresUrl!)
      const proxy = await freezableProxy(target.hostname, Number(target.port || 5432))
      try {
        const env = temporaryDatabaseEnv("postgres")
        const throughProxy = new URL(postgresUrl!)
        throughProxy.hostname = "127.0.0.1"
        throughProxy.port = String(proxy.port)
        const server = await startServer({ ...env, DATABASE_URL: throughProxy.href })
        const origin = new URL(server.baseUrl).origin
        expect((await fetch(`${origin}/readyz`)).status).toBe(200)

        proxy.freeze()
        await new Promise((resolve) => setTimeout(resolve, 200))
        const started = performance.now()
        const response = await fetch(`${origin}/readyz`)
        const report = (await response.json()) as HealthReport
        const elapsedMs = performance.now() - started
        expect([response.status, report.checks.storage.ok, report.checks.storage.detail]).toEqual([503, false, "no answer within 1000 ms"])
        expect(report.checks.migrations.ok).toBe(false)
        // The requirement: a load balancer learns within 2 s that the store is gone.
        expect(elapsedMs).toBeLessThan(2_000)
        expect(JSON.stringify(report)).not.toContain(postgresUrl!)
      } finally {
        killServers()
        proxy.close()
      }
    },
    20_000
  )
  if (postgresUrl === undefined) console.warn("standalone-server health: POSTGRES_URL is not set; the frozen-PostgreSQL test is skipped")
})

/**
 * A TCP proxy to `host:port` on a free local port. `freeze()` makes it swallow every byte
 * both ways from then on, on open and new connections alike: the server behind it stops
 * answering without refusing anything, as a hung database or a dropped network does.
 */
const freezableProxy = async (host: string, port: number) => {
  let frozen = false
  const sockets = new Set<Socket>()
  const server = createTcpServer((client) => {
    const upstream = connect(port, host)
    for (const socket of [client, upstream]) {
      sockets.add(socket)
      socket.on("error", () => undefined).on("close", () => {
        sockets.delete(socket)
        client.destroy()
        upstream.destroy()
      })
    }
    client.on("data", (chunk) => frozen || upstream.write(chunk))
    upstream.on("data", (chunk) => frozen || client.write(chunk))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    port: (server.address() as AddressInfo).port,
    freeze: () => void (frozen = true),
    close: () => {
      for (const socket of sockets) socket.destroy()
      server.close()
    }
  }
}

import { connect } from "node:net"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import {
  assertBuilt,
  killServers,
  removeTemporaryDirectories,
  runCliJson,
  runServerToExit,
  databases,
  dropTemporarySchemas,
  startServer,
  temporaryDatabaseEnv,
  temporaryDatabaseUrl,
  type RunningServer,
  type OrgCreated
} from "./helpers.js"

const verify = async (server: RunningServer, apiKey: string) => {
  const response = await fetch(`${server.baseUrl}/verify`, { headers: { authorization: `Bearer ${apiKey}` } })
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}

/** Sends SIGTERM and returns the exit code and how long the process took to exit, in ms. */
const terminate = async (server: RunningServer) => {
  const started = performance.now()
  server.child.kill("SIGTERM")
  const code = await server.exited
  return { code, elapsedMs: performance.now() - started }
}

beforeAll(assertBuilt)
afterEach(killServers)
afterAll(async () => {
  killServers()
  removeTemporaryDirectories()
  await dropTemporarySchemas()
})

describe("standalone server end to end", () => {
  it.each(databases())("serves keys made by the CLI (%s): 200, then 401 once revoked, 403 when inactive or without API access", async (store) => {
    const env = temporaryDatabaseEnv(store)
    const acme = await runCliJson<OrgCreated>(["org", "create", "--name", "Acme"], env)
    const server = await startServer(env)
    expect(server.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1\/api$/)

    const ok = await verify(server, acme.api_key)
    expect(ok.status).toBe(200)
    expect(ok.body).toMatchObject({
      status: 200,
      success: true,
      data: { organization: { id: acme.org_id, name: "Acme" } },
      errors: []
    })

    await runCliJson(["key", "revoke", "--key", acme.key_id], env)
    const revoked = await verify(server, acme.api_key)
    expect(revoked.status).toBe(401)
    expect(revoked.body).toMatchObject({ status: 401, success: false, data: null, errors: [{ code: "invalid_api_key" }] })

    const inactive = await runCliJson<OrgCreated>(["org", "create", "--name", "Dormant", "--inactive"], env)
    expect((await verify(server, inactive.api_key)).body).toMatchObject({
      status: 403,
      success: false,
      errors: [{ code: "subscription_inactive" }]
    })

    const noApi = await runCliJson<OrgCreated>(["org", "create", "--name", "Offline", "--no-api-access"], env)
    const denied = await verify(server, noApi.api_key)
    expect(denied.status).toBe(403)
    expect(denied.body).toMatchObject({ status: 403, errors: [{ code: "api_access_not_allowed" }] })

    expect(server.output().stdout).toBe("")
    expect(server.output().stderr).not.toContain(acme.api_key)
    expect(await terminate(server)).toMatchObject({ code: 0 })
  })

  it("writes one JSON line per request on stderr, all before 'Switchboard stopped', none holding a key", async () => {
    const env = { DATABASE_URL: temporaryDatabaseUrl() }
    const acme = await runCliJson<OrgCreated>(["org", "create", "--name", "Acme"], env)
    const server = await startServer(env)
    const statuses = []
    for (const apiKey of [acme.api_key, acme.api_key, `${acme.api_key}x`]) statuses.push((await verify(server, apiKey)).status)
    expect(statuses).toEqual([200, 200, 401])
    expect(await terminate(server)).toMatchObject({ code: 0 })
    const stderr = server.output().stderr.trim().split("\n")
    const requestLines = stderr.filter((line) => line.includes('"message":"request"')).map((line) => JSON.parse(line) as Record<string, unknown>)
    expect(requestLines.map((line) => line.annotations)).toMatchObject([
      { method: "GET", route: "/verify", status: 200, organization_id: acme.org_id },
      { method: "GET", route: "/verify", status: 200, organization_id: acme.org_id },
      { method: "GET", route: "/verify", status: 401, organization_id: null }
    ])
    expect(requestLines.every((line) => line.logLevel === "INFO" && typeof line.timestamp === "string")).toBe(true)
    expect(stderr.at(-1)).toBe("Switchboard stopped")
    expect(server.output().stderr).not.toContain(acme.api_key)
  })

  it("prints the demo key once, on the first start on an empty database, and exits 0 on SIGTERM", async () => {
    const env = { DATABASE_URL: temporaryDatabaseUrl() }
    const first = await startServer(env)
    const lines = first.output().stdout.trim().split("\n")
    expect(lines).toHaveLength(1)
    const demo = JSON.parse(lines[0] ?? "") as OrgCreated
    expect(Object.keys(demo)).toEqual(["org_id", "key_id", "api_key"])
    expect((await verify(first, demo.api_key)).body).toMatchObject({
      status: 200,
      success: true,
      data: { organization: { id: demo.org_id, name: "Demo organization" } }
    })
    const stopped = await terminate(first)
    expect(stopped.code).toBe(0)
    expect(stopped.elapsedMs).toBeLessThan(5_000)
    expect(first.output().stderr).not.toContain(demo.api_key)

    const second = await startServer(env)
    expect(second.output().stdout).toBe("")
    expect((await verify(second, demo.api_key)).status).toBe(200)
    expect(await runCliJson(["org", "list"], env)).toMatchObject([{ org_id: demo.org_id, name: "Demo organization" }])
    expect((await terminate(second)).code).toBe(0)
  })

  it("finishes an in-flight request before exiting on SIGTERM", async () => {
    const server = await startServer({ DATABASE_URL: temporaryDatabaseUrl() })
    const demo = JSON.parse(server.output().stdout) as OrgCreated
    const requests = Array.from({ length: 20 }, () => verify(server, demo.api_key))
    server.child.kill("SIGTERM")
    const settled = await Promise.allSettled(requests)
    expect(await server.exited).toBe(0)
    // Requests the server had accepted are answered; later ones are refused, never cut midway.
    for (const outcome of settled) {
      if (outcome.status === "fulfilled") expect(outcome.value.status).toBe(200)
    }
  })

  it("keeps answering when its stderr's reader goes away, and still exits 0 on SIGTERM", async () => {
    const server = await startServer({ DATABASE_URL: temporaryDatabaseUrl() })
    const demo = JSON.parse(server.output().stdout) as OrgCreated
    // The pipe's reading end closes: every later write to stderr fails with EPIPE.
    server.child.stderr?.destroy()
    const statuses = []
    for (let index = 0; index < 5; index++) {
      const response = await fetch(`${server.baseUrl}/verify`, {
        headers: { authorization: `Bearer ${demo.api_key}` },
        signal: AbortSignal.timeout(5_000)
      })
      statuses.push(response.status)
      await response.arrayBuffer()
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200])
    const stopped = await terminate(server)
    expect(stopped.code).toBe(0)
    expect(stopped.elapsedMs).toBeLessThan(5_000)
  })

  it("runs on memory: too, and answers HTTP that Node's parser refuses with the envelope", async () => {
    const server = await startServer({ DATABASE_URL: "memory:" })
    const demo = JSON.parse(server.output().stdout) as OrgCreated
    expect((await verify(server, demo.api_key)).status).toBe(200)
    const { hostname, port } = new URL(server.baseUrl)
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), hostname)
      let received = ""
      socket.setEncoding("utf8").on("data", (chunk: string) => (received += chunk))
      socket.on("error", reject).on("close", () => resolve(received))
      socket.end("POST /api/v1/api/labels HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n")
    })
    expect(raw).toMatch(/^HTTP\/1\.1 400 /)
    expect(JSON.parse(raw.slice(raw.indexOf("\r\n\r\n") + 4))).toMatchObject({
      status: 400,
      success: false,
      data: null,
      errors: [{ code: "malformed_request" }]
    })
    expect((await terminate(server)).code).toBe(0)
  })

  it.each([
    [{ PORT: "http" }, 'PORT must be an integer from 0 to 65535 (got "http")'],
    // Nothing listens on port 9: connecting gives up after serverSelectionTimeoutMS.
    [
      {
        DATABASE_URL: "mongodb://admin:secret@127.0.0.1:9/switchboard?serverSelectionTimeoutMS=300",
        SWITCHBOARD_SECRET_KEY: "a".repeat(64)
      },
      "DATABASE_URL mongodb://127.0.0.1:9/switchboard?serverSelectionTimeoutMS=300: cannot reach the MongoDB server"
    ],
    [{ DATABASE_URL: "redis://localhost/switchboard" }, "DATABASE_URL must be sqlite:PATH, memory:, postgres://… or mongodb://…"],
    [{ DATABASE_URL: "postgres://localhost/switchboard" }, "SWITCHBOARD_SECRET_KEY is required with a postgres:// DATABASE_URL"],
    [
      { DATABASE_URL: "postgres://admin:secret@127.0.0.1:9/switchboard", SWITCHBOARD_SECRET_KEY: "a".repeat(64) },
      "DATABASE_URL postgres://127.0.0.1:9/switchboard: cannot open the PostgreSQL store"
    ]
  ])("exits 1 with a clear message for %j", async (variables, message) => {
    const result = await runServerToExit({ PORT: "0", DATABASE_URL: "memory:", ...variables })
    expect(result.code).toBe(1)
    expect(result.stdout).toBe("")
    expect(result.stderr).toContain(`error: ${message}`)
    expect(result.stderr).not.toContain("secret")
  })
})

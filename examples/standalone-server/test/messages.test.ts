/**
 * What the standalone server and the admin CLI tell an operator (docs/standalone-server.md
 * "Start-up lines", "Logs" and "Admin CLI"): the start-up lines, `LOG_LEVEL`, and the
 * database the CLI opened.
 */
import { existsSync } from "node:fs"
import { join } from "node:path"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import {
  assertBuilt,
  killServers,
  removeTemporaryDirectories,
  runCli,
  runServerToExit,
  startServer,
  temporaryDirectory,
  type RunningServer
} from "./helpers.js"

beforeAll(assertBuilt)
afterEach(killServers)
afterAll(() => {
  killServers()
  removeTemporaryDirectories()
})

/** Requests `/verify` with no key (401) and `/` (200), then stops the server; resolves with its stderr lines. */
const requestsThenStop = async (server: RunningServer): Promise<Array<string>> => {
  await (await fetch(`${server.baseUrl}/verify`)).arrayBuffer()
  await (await fetch(`${server.baseUrl}/`)).arrayBuffer()
  server.child.kill("SIGTERM")
  expect(await server.exited).toBe(0)
  return server.output().stderr.trim().split("\n")
}

const requestLines = (lines: ReadonlyArray<string>) => lines.filter((line) => line.includes('"message":"request"'))

describe("start-up lines", () => {
  it("name the webhook URL, which secrets are set (never their values), the Graph API and the log level", async () => {
    const server = await startServer({
      DATABASE_URL: "memory:",
      WHATSAPP_APP_SECRET: "app-secret-value-1",
      WHATSAPP_API_BASE_URL: "http://127.0.0.1:4010/",
      WHATSAPP_API_VERSION: "v22.0"
    })
    const { stderr } = server.output()
    expect(stderr).toContain(
      `WhatsApp webhook: ${server.baseUrl}/webhooks/whatsapp (verify token not set (WHATSAPP_WEBHOOK_VERIFY_TOKEN): ` +
        "the handshake is refused, app secret set)\n"
    )
    expect(stderr).toContain("Graph API: http://127.0.0.1:4010 v22.0 (channel verification and channel sends)\n")
    expect(stderr).toContain("Log level: info\n")
    expect(stderr).not.toContain("SWITCHBOARD_WEBHOOKS_ALLOW_PRIVATE")
    expect(stderr).not.toContain("app-secret-value-1")
  })

  it("say when neither secret is set, and warn that private webhook addresses are allowed", async () => {
    const server = await startServer({ DATABASE_URL: "memory:", SWITCHBOARD_WEBHOOKS_ALLOW_PRIVATE: "1" })
    const { stderr } = server.output()
    expect(stderr).toContain("verify token not set (WHATSAPP_WEBHOOK_VERIFY_TOKEN): the handshake is refused")
    expect(stderr).toContain("app secret not set (WHATSAPP_APP_SECRET): every POST is refused")
    expect(stderr).toContain("Graph API: https://graph.facebook.com v21.0")
    expect(stderr).toMatch(/^warning: SWITCHBOARD_WEBHOOKS_ALLOW_PRIVATE is on: webhook endpoints may use http:\/\/ and loopback/m)
  })
})

describe("LOG_LEVEL", () => {
  it("info (the default) writes a request line per request", async () => {
    const lines = await requestsThenStop(await startServer({ DATABASE_URL: "memory:" }))
    expect(requestLines(lines)).toHaveLength(2)
  })

  it("warn drops the request lines of answers below 500, in any case", async () => {
    const lines = await requestsThenStop(await startServer({ DATABASE_URL: "memory:", LOG_LEVEL: "WARN" }))
    expect(lines).toContain("Log level: warn")
    expect(requestLines(lines)).toEqual([])
    expect(lines.at(-1)).toBe("Switchboard stopped")
  })

  it("anything else stops the server with a message naming the four values", async () => {
    const result = await runServerToExit({ PORT: "0", DATABASE_URL: "memory:", LOG_LEVEL: "verbose" })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("error: LOG_LEVEL must be one of debug, info, warn, error")
  })
})

describe("the admin CLI names the database it opened", () => {
  it("warns when the SQLite file did not exist and was created, and not the next time", async () => {
    const filename = join(temporaryDirectory(), "elsewhere.db")
    const env = { DATABASE_URL: `sqlite:${filename}` }
    const first = await runCli(["org", "list"], env)
    expect(first.code, first.stderr).toBe(0)
    expect(first.stderr).toContain(`Database: sqlite:${filename}\n`)
    expect(first.stderr).toContain(`warning: ${filename} did not exist: a new, empty database was created.`)
    expect(existsSync(filename)).toBe(true)
    expect(JSON.parse(first.stdout)).toEqual([])

    const second = await runCli(["org", "list"], env)
    expect(second.code, second.stderr).toBe(0)
    expect(second.stderr).toBe(`Database: sqlite:${filename}\n`)
  })
})

import type { RequestListener } from "node:http"
import { ConfigProvider, Effect, Either, Option, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { loadConfig } from "../src/config.js"
import { metricsConfig, startMetrics } from "../src/metrics.js"
import { assertBuilt, killServers, type RunningServer, startServer } from "./helpers.js"

// GET /metrics of the standalone server (docs/standalone-server.md "Metrics"): one real
// server with METRICS_TOKEN and METRICS_PORT, and the variables' checks in process.

const TOKEN = "metrics-token-4f0c2a9e1b7d"

const load = (variables: Record<string, string>) =>
  Effect.runPromise(
    Effect.either(loadConfig(metricsConfig).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(variables))))))
  )

describe("METRICS_TOKEN and METRICS_PORT", () => {
  it("are read, the token kept redacted", async () => {
    const settings = Either.getOrThrow(await load({ METRICS_TOKEN: TOKEN, METRICS_PORT: "9464" }))
    expect(Option.map(settings.token, Redacted.value)).toEqual(Option.some(TOKEN))
    expect(String(settings.token)).not.toContain(TOKEN)
    expect(settings.port).toEqual(Option.some(9464))
  })

  it.each([
    [{ METRICS_TOKEN: "" }, "METRICS_TOKEN must be a non-empty token without white space"],
    [{ METRICS_TOKEN: "two words" }, "METRICS_TOKEN must be a non-empty token without white space"],
    [{ METRICS_PORT: "" }, 'METRICS_PORT must be an integer from 0 to 65535 (got "")'],
    [{ METRICS_PORT: "65536" }, 'METRICS_PORT must be an integer from 0 to 65535 (got "65536")'],
    [{ METRICS_PORT: "http" }, 'METRICS_PORT must be an integer from 0 to 65535 (got "http")']
  ])("%j is refused with a clear message", async (variables, message) => {
    const loaded = await load(variables)
    expect(Either.isLeft(loaded) && loaded.left.message).toContain(message)
  })

  it("neither set: nothing is counted and the API's listener is used as it is (/metrics is an unknown path)", async () => {
    const metrics = await startMetrics(Either.getOrThrow(await load({})))
    const listener: RequestListener = () => undefined
    expect(metrics.handlerMetrics).toBeUndefined()
    expect(metrics.route(listener)).toBe(listener)
    expect(metrics.describe("http://127.0.0.1:3000")).toBeUndefined()
  })
})

describe("a server with METRICS_TOKEN and METRICS_PORT", () => {
  let server: RunningServer
  let apiKey = ""
  let origin = ""
  beforeAll(async () => {
    assertBuilt()
    server = await startServer({ DATABASE_URL: "memory:", METRICS_TOKEN: TOKEN, METRICS_PORT: "0" })
    apiKey = (JSON.parse(server.output().stdout.trim()) as { api_key: string }).api_key
    origin = new URL(server.baseUrl).origin
  })
  afterAll(killServers)

  const scrape = (url: string, authorization?: string) =>
    fetch(url, authorization === undefined ? {} : { headers: { authorization } })

  it("serves the requests made, with the bearer token, outside the API's base path; 401 without it or with another", async () => {
    for (let i = 0; i < 3; i++) {
      expect((await fetch(`${server.baseUrl}/verify`, { headers: { authorization: `Bearer ${apiKey}` } })).status).toBe(200)
    }
    expect((await fetch(`${server.baseUrl}/contacts/0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6a`, { headers: { authorization: `Bearer ${apiKey}` } })).status).toBe(404)

    const scraped = await scrape(`${origin}/metrics`, `Bearer ${TOKEN}`)
    expect(scraped.status).toBe(200)
    expect(scraped.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8")
    const text = await scraped.text()
    expect(text).toContain('switchboard_http_requests_total{route="/verify",method="GET",status="200"} 3')
    expect(text).toContain('switchboard_http_requests_total{route="/contacts/:uuid",method="GET",status="404"} 1')
    // The default process metrics are on, and the scrape itself is no API request.
    expect(text).toContain("process_cpu_seconds_total")
    expect(text).not.toContain('route="/metrics"')

    for (const authorization of [undefined, `Bearer ${TOKEN}x`, `Basic ${Buffer.from(`x:${TOKEN}`).toString("base64")}`, TOKEN]) {
      const refused = await scrape(`${origin}/metrics`, authorization)
      expect(refused.status).toBe(401)
      expect(await refused.text()).not.toContain("switchboard_")
    }
    // Under the API's base path it is an unknown route.
    expect((await scrape(`${server.baseUrl}/metrics`, `Bearer ${TOKEN}`)).status).toBe(404)
  })

  it("METRICS_PORT serves them without a token, on a listener of its own; the token is never printed", async () => {
    const line = /Metrics: .*?(http:\/\/\S+\/metrics) \(METRICS_PORT/.exec(server.output().stderr)
    expect(line?.[1]).toBeDefined()
    const scraped = await scrape(line![1]!)
    expect(scraped.status).toBe(200)
    expect(await scraped.text()).toContain("switchboard_http_requests_total")
    expect((await scrape(line![1]!.replace(/\/metrics$/, "/verify"))).status).toBe(404)
    const { stdout, stderr } = server.output()
    expect(stdout + stderr).not.toContain(TOKEN)
  })
})

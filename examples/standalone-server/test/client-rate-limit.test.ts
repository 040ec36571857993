/**
 * `@switchboard/client` and the server's rate limit (docs/client.md "Retries"): a 429 is
 * retried after the answer's `Retry-After`, and with no retries left it is a
 * RateLimitError carrying `retryAfter`. One server for the file, with a general limit of
 * 2 requests a second.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createClient, RateLimitError } from "@switchboard/client"
import { assertBuilt, killServers, removeTemporaryDirectories, runCliJson, startServer, temporaryDatabaseEnv, type RunningServer } from "./helpers.js"

let server: RunningServer
let apiKey: string

beforeAll(async () => {
  assertBuilt()
  const env = { ...temporaryDatabaseEnv("sqlite"), DEVELOPER_API_RATE_LIMIT_MAX: "2", DEVELOPER_API_RATE_LIMIT_WINDOW_MS: "1000", DEVELOPER_API_RATE_LIMIT_REDIS_DISABLED: "1" }
  apiKey = (await runCliJson<{ api_key: string }>(["org", "create", "--name", "Acme"], env)).api_key
  server = await startServer(env)
}, 30_000)

afterAll(() => {
  killServers()
  removeTemporaryDirectories()
})

/** A `fetch` noting each answer's status, its Retry-After and when it came (ms). */
const observed = () => {
  const answers: Array<{ status: number; retryAfter: string | null; at: number; sentAt: number }> = []
  const observing: typeof fetch = async (input, init) => {
    const sentAt = performance.now()
    const response = await fetch(input, init)
    answers.push({ status: response.status, retryAfter: response.headers.get("retry-after"), at: performance.now(), sentAt })
    return response
  }
  return { answers, observing }
}

describe("@switchboard/client and the rate limit", () => {
  it("retries a 429 after its Retry-After and answers the data", async () => {
    const { answers, observing } = observed()
    const client = createClient({ baseUrl: server.baseUrl, apiKey, fetch: observing, maxRetries: 3 })
    const results = []
    // Sequential calls: the limit is spent by the third at the latest.
    for (let n = 0; n < 4; n++) results.push(await client.auth.verify())
    for (const result of results) expect(result.organization.name).toBe("Acme")
    const limited = answers.findIndex((answer) => answer.status === 429)
    expect(limited, "a call met the limit").toBeGreaterThanOrEqual(0)
    const retryAfter = Number(answers[limited]!.retryAfter)
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    const retry = answers[limited + 1]!
    // The retry left no earlier than Retry-After seconds after the 429 arrived.
    expect(retry.sentAt - answers[limited]!.at).toBeGreaterThanOrEqual(retryAfter * 1000 - 20)
  }, 30_000)

  it("with no retries left, a 429 is a RateLimitError with retryAfter, code and request id", async () => {
    const client = createClient({ baseUrl: server.baseUrl, apiKey, maxRetries: 0 })
    let error: unknown
    for (let n = 0; n < 5 && error === undefined; n++) error = await client.auth.verify().then(() => undefined, (caught: unknown) => caught)
    expect(error).toBeInstanceOf(RateLimitError)
    expect(error).toMatchObject({ status: 429, code: "rate_limited" })
    expect((error as RateLimitError).retryAfter).toBeGreaterThanOrEqual(1)
    expect((error as RateLimitError).requestId).toMatch(/\S/)
  }, 30_000)
})

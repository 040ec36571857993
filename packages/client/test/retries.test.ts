/**
 * Retries, timeouts, cancellation and the error classes against a local node:http server
 * playing the API (docs/client.md "Retries and idempotency", "Errors"). Answers ask for
 * `Retry-After: 0` where a test is not about the delay, so nothing waits for long.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { afterEach, describe, expect, it } from "vitest"
import {
  ApiError,
  AuthenticationError,
  backoffDelayMs,
  ConflictError,
  ConnectionError,
  createClient,
  NotFoundError,
  PermissionError,
  RateLimitError,
  TimeoutError,
  ValidationError
} from "../src/index.js"
import { serverDelayMs } from "../src/retry.js"

interface Seen {
  readonly method: string
  readonly url: string
  readonly headers: IncomingMessage["headers"]
  readonly body: string
}

type Reply = (request: Seen, response: ServerResponse) => void

const servers: Array<Server> = []
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
})

const envelope = (response: ServerResponse, status: number, data: unknown, errors: Array<Record<string, string>> = [], headers: Record<string, string> = {}) => {
  response.writeHead(status, { "content-type": "application/json", "x-request-id": `req-${status}`, ...headers })
  response.end(JSON.stringify({ status, success: status === 200, message: status === 200 ? "OK" : "Failed", data, errors }))
}

/** A server answering its n-th request with `replies[n]` (the last one again after the list). */
const serve = async (replies: ReadonlyArray<Reply>, port = 0): Promise<{ baseUrl: string; seen: Array<Seen>; server: Server }> => {
  const seen: Array<Seen> = []
  const server = createServer((request, response) => {
    let body = ""
    request.setEncoding("utf8").on("data", (chunk: string) => (body += chunk))
    request.on("end", () => {
      const entry = { method: request.method!, url: request.url!, headers: request.headers, body }
      seen.push(entry)
      replies[Math.min(seen.length, replies.length) - 1]!(entry, response)
    })
  })
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve))
  return { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/api`, seen, server }
}

const ok: Reply = (_request, response) => envelope(response, 200, { ok: true })
const fail = (status: number, code: string, headers: Record<string, string> = {}): Reply => (_request, response) =>
  envelope(response, status, null, [{ code, message: `${code} happened` }], headers)
const dropConnection: Reply = (_request, response) => response.socket?.destroy()

const API_KEY = "sk_test_secret_key_value_0123456789"

describe("backoff", () => {
  it("starts at 500 ms, doubles, stops at 8 s, and jitters by a factor in [0.5, 1)", () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((retry) => backoffDelayMs(retry, () => 0))).toEqual([250, 500, 1000, 2000, 4000, 4000, 4000])
    expect([1, 2, 3, 4, 5, 6].map((retry) => backoffDelayMs(retry, () => 0.999999))).toEqual(
      [500, 1000, 2000, 4000, 8000, 8000].map((ms) => expect.closeTo(ms, 0))
    )
  })

  it("reads Retry-After in seconds or as a date, else RateLimit-Reset", () => {
    expect(serverDelayMs(new Headers({ "retry-after": "3" }))).toBe(3000)
    expect(serverDelayMs(new Headers({ "retry-after": new Date(10_000).toUTCString() }), 4_000)).toBe(6000)
    expect(serverDelayMs(new Headers({ "ratelimit-reset": "2" }))).toBe(2000)
    expect(serverDelayMs(new Headers({ "retry-after": "soon" }))).toBeUndefined()
    expect(serverDelayMs(new Headers())).toBeUndefined()
  })
})

describe("retries", () => {
  it("retries a 429 after its Retry-After, for a POST without a key too, and answers the data with the request id", async () => {
    const { baseUrl, seen } = await serve([fail(429, "rate_limited", { "retry-after": "0" }), ok])
    const client = createClient({ baseUrl, apiKey: API_KEY })
    const result = await client.labels.create({ name: "vip" })
    expect(result).toEqual({ ok: true })
    expect(result.requestId).toBe("req-200")
    expect(Object.keys(result)).toEqual(["ok"])
    expect(seen.map((request) => request.method)).toEqual(["POST", "POST"])
    expect(seen[0]!.headers["idempotency-key"]).toBeUndefined()
  })

  it("retries a 503 on any method, and stops after maxRetries with the error", async () => {
    const { baseUrl, seen } = await serve([fail(503, "unavailable", { "retry-after": "0" })])
    const client = createClient({ baseUrl, apiKey: API_KEY, maxRetries: 2 })
    const error = await client.labels.create({ name: "vip" }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(ApiError)
    expect(error).toMatchObject({ status: 503, code: "unavailable", requestId: "req-503" })
    expect(seen).toHaveLength(3)
  })

  it("sends one generated Idempotency-Key on every attempt of a POST that takes one, and retries its 5xx and dropped connections", async () => {
    const { baseUrl, seen } = await serve([fail(500, "internal_error"), dropConnection, ok])
    const client = createClient({ baseUrl, apiKey: API_KEY })
    await client.send.text({ phone: "+14155550100", message: "hi" } as never)
    expect(seen).toHaveLength(3)
    const keys = seen.map((request) => request.headers["idempotency-key"])
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/)
    expect(new Set(keys).size).toBe(1)
  }, 30_000)

  it("uses the caller's Idempotency-Key when given", async () => {
    const { baseUrl, seen } = await serve([ok])
    const client = createClient({ baseUrl, apiKey: API_KEY })
    await client.send.text({ phone: "+14155550100", message: "hi" } as never, { idempotencyKey: "my-key-1" })
    expect(seen[0]!.headers["idempotency-key"]).toBe("my-key-1")
  })

  it("retries 409 idempotency_key_in_progress, but no other 409", async () => {
    const inProgress = await serve([fail(409, "idempotency_key_in_progress"), ok])
    await createClient({ baseUrl: inProgress.baseUrl, apiKey: API_KEY }).send.text({ phone: "+14155550100", message: "hi" } as never)
    expect(inProgress.seen).toHaveLength(2)
    const conflict = await serve([fail(409, "sync_in_progress"), ok])
    const error = await createClient({ baseUrl: conflict.baseUrl, apiKey: API_KEY }).channels.syncTemplates("3f0e0c1e-8a55-4b8e-9a39-0d7c5e2f4b11").catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(ConflictError)
    expect(conflict.seen).toHaveLength(1)
  }, 30_000)

  it("retries other 5xx and dropped connections of GET, PUT and DELETE", async () => {
    const { baseUrl, seen } = await serve([fail(502, "provider_error"), dropConnection, ok])
    await createClient({ baseUrl, apiKey: API_KEY }).labels.get("3f0e0c1e-8a55-4b8e-9a39-0d7c5e2f4b11")
    expect(seen.map((request) => request.method)).toEqual(["GET", "GET", "GET"])
  }, 30_000)

  it("never retries a POST without a key after it may have reached the server (a 500, a dropped connection)", async () => {
    const fiveHundred = await serve([fail(500, "internal_error"), ok])
    const error = await createClient({ baseUrl: fiveHundred.baseUrl, apiKey: API_KEY }).labels.create({ name: "vip" }).catch((caught: unknown) => caught)
    expect(error).toMatchObject({ status: 500, code: "internal_error" })
    expect(fiveHundred.seen).toHaveLength(1)
    const dropped = await serve([dropConnection, ok])
    const broken = await createClient({ baseUrl: dropped.baseUrl, apiKey: API_KEY }).labels.create({ name: "vip" }).catch((caught: unknown) => caught)
    expect(broken).toBeInstanceOf(ConnectionError)
    expect(dropped.seen).toHaveLength(1)
  })

  it("retries a POST without a key when the connection was refused (it never reached the server)", async () => {
    const probe = await serve([ok])
    const port = (probe.server.address() as AddressInfo).port
    await new Promise((resolve) => probe.server.close(resolve))
    let started: Awaited<ReturnType<typeof serve>> | undefined
    // The first attempt is refused; the server comes up before the retry.
    const fetchThenListen: typeof fetch = async (input, init) => {
      try {
        return await fetch(input, init)
      } catch (error) {
        started ??= await serve([ok], port)
        throw error
      }
    }
    const client = createClient({ baseUrl: probe.baseUrl, apiKey: API_KEY, fetch: fetchThenListen })
    expect(await client.labels.create({ name: "vip" })).toEqual({ ok: true })
    expect(started?.seen).toHaveLength(1)
  }, 30_000)
})

describe("timeouts and cancellation", () => {
  it("abandons an attempt after timeoutMs with a TimeoutError", async () => {
    const { baseUrl } = await serve([() => undefined])
    const error = await createClient({ baseUrl, apiKey: API_KEY, maxRetries: 0, timeoutMs: 100 }).auth.verify().catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(TimeoutError)
    expect(error).toBeInstanceOf(ConnectionError)
  })

  it("stops at once when the caller's signal aborts, retries included", async () => {
    const { baseUrl, seen } = await serve([() => undefined])
    const controller = new AbortController()
    const call = createClient({ baseUrl, apiKey: API_KEY }).auth.verify({ signal: controller.signal })
    await new Promise((resolve) => setTimeout(resolve, 50))
    controller.abort(new Error("caller gave up"))
    await expect(call).rejects.toThrow("caller gave up")
    expect(seen.length).toBeLessThanOrEqual(1)
  })
})

describe("errors", () => {
  it.each([
    [400, "invalid_input", ValidationError],
    [422, "idempotency_key_reused", ValidationError],
    [401, "invalid_api_key", AuthenticationError],
    [403, "plan_limit_reached", PermissionError],
    [404, "not_found", NotFoundError],
    [409, "sync_in_progress", ConflictError],
    [429, "rate_limited", RateLimitError],
    [410, "link_expired", ApiError]
  ] as const)("%i is a %s with status, code, errors and the request id; the API key is in none of it", async (status, code, type) => {
    const { baseUrl } = await serve([fail(status, code, { "retry-after": "7" })])
    const error = await createClient({ baseUrl, apiKey: API_KEY, maxRetries: 0 }).auth.verify().catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(type)
    expect(error).toBeInstanceOf(ApiError)
    expect(error).toMatchObject({ status, code, errors: [{ code, message: `${code} happened` }], requestId: `req-${status}` })
    if (error instanceof RateLimitError) expect(error.retryAfter).toBe(7)
    expect(`${String(error)} ${JSON.stringify(error)} ${(error as Error).stack}`).not.toContain(API_KEY)
  })

  it("a ConnectionError names neither the API key nor hides the cause", async () => {
    const probe = await serve([ok])
    await new Promise((resolve) => probe.server.close(resolve))
    const error = await createClient({ baseUrl: probe.baseUrl, apiKey: API_KEY, maxRetries: 0 }).auth.verify().catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(ConnectionError)
    expect(String(error)).not.toContain(API_KEY)
    expect((error as Error).cause).toBeDefined()
  })

  it("refuses a missing path parameter before sending anything", async () => {
    const { baseUrl, seen } = await serve([ok])
    expect(() => (createClient({ baseUrl, apiKey: API_KEY }).labels.get as (...args: Array<unknown>) => unknown)()).toThrow(TypeError)
    expect(seen).toHaveLength(0)
  })
})

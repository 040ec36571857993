import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { Cause, Effect, Exit, type Fiber, Logger } from "effect"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { defaultRoutes, defineRoute } from "@switchboard/http-adapter"
import { bearer, createOrganization, expectEnvelope, makeHandler, makeSharedStorage } from "./helpers.js"

/**
 * The plain node:http mount of docs/mounting.md: an existing server whose listener hands
 * every request to the handler with its own routes as `next`, so the API answers under its
 * base path and the app answers everything else.
 */
describe("mounted in an existing node:http server (docs/mounting.md)", () => {
  const storage = makeSharedStorage()
  const handler = makeHandler(storage, { basePath: "/messaging/v1" })
  const ownRoutes = (req: IncomingMessage, res: ServerResponse) => {
    res.setHeader("content-type", "text/plain")
    if (req.url === "/health") res.end("ok")
    else {
      res.statusCode = 404
      res.end("the app's own 404")
    }
  }
  const server = createServer((req, res) => handler(req, res, () => ownRoutes(req, res)))
  let origin = ""
  let apiKey = ""

  beforeAll(async () => {
    apiKey = (await createOrganization(storage)).key.api_key
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve))
    await handler.dispose()
  })

  it("serves the API under its custom base path", async () => {
    const response = await fetch(`${origin}/messaging/v1/verify`, { headers: bearer(apiKey) })
    expect(expectEnvelope(response.status, await response.text()).status).toBe(200)
  })

  it("passes every other path to the app's own routes", async () => {
    expect(await (await fetch(`${origin}/health`)).text()).toBe("ok")
    const other = await fetch(`${origin}/api/v1/api/verify`, { headers: bearer(apiKey) })
    expect(other.status).toBe(404)
    expect(await other.text()).toBe("the app's own 404")
    const lookalike = await fetch(`${origin}/messaging/v10/verify`)
    expect(await lookalike.text()).toBe("the app's own 404")
  })

  it("answers unknown paths inside the base path itself", async () => {
    const response = await fetch(`${origin}/messaging/v1/nothing`, { headers: bearer(apiKey) })
    expect(expectEnvelope(response.status, await response.text()).errors[0]?.code).toBe("route_not_found")
  })
})

/**
 * The answer is written from the request fiber's observer, inside Effect's scheduler: a
 * host whose response object throws on write must get the error logged, never thrown into
 * the scheduler (where it would be an uncaught exception), and the next request must be
 * answered as usual.
 */
describe("a host response that throws when written", () => {
  it("logs the error as a defect and keeps answering", async () => {
    const storage = makeSharedStorage()
    const lines: Array<string> = []
    const handler = makeHandler(storage, {
      logger: Logger.make(({ message, cause }) => lines.push(`${String(message)} ${Cause.pretty(cause)}`))
    })
    const apiKey = (await createOrganization(storage)).key.api_key
    let throwOnce = true
    const server = createServer((req, res) => {
      if (throwOnce) {
        throwOnce = false
        res.writeHead = () => {
          res.destroy()
          throw new Error("the host cannot write")
        }
      }
      handler(req, res)
    })
    const uncaught: Array<unknown> = []
    const onUncaught = (error: unknown) => uncaught.push(error)
    process.on("uncaughtException", onUncaught)
    try {
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/api`
      await expect(fetch(`${origin}/verify`, { headers: bearer(apiKey) })).rejects.toThrow()
      await vi.waitFor(() => expect(lines.join("\n")).toContain("the host cannot write"))
      expect(lines[0]).toMatch(/^Unhandled defect\b/)
      const next = await fetch(`${origin}/verify`, { headers: bearer(apiKey) })
      expect(expectEnvelope(next.status, await next.text()).status).toBe(200)
      expect(uncaught).toEqual([])
    } finally {
      process.off("uncaughtException", onUncaught)
      await new Promise((resolve) => server.close(resolve))
      await handler.dispose()
    }
  })
})

/**
 * The request's fiber outlives its answer (the handler's `close` listener on the host's
 * response holds it), and under load V8 allocates such long-lived objects straight in its
 * old space. A page the fiber held as its result would be promoted with it, for every
 * request, until the next full collection: the server's memory peak grew by ~60 MiB that
 * way (docs/benchmarks.md "Memory"). So the fiber ends with no result; the answer is handed
 * to the writer aside and let go once written.
 */
describe("the request fiber once answered", () => {
  it("holds nothing of the route's result", async () => {
    let requestFiber: Fiber.RuntimeFiber<unknown, unknown> | undefined
    const records = Array.from({ length: 100 }, (_, index) => ({ index, name: `record ${index}` }))
    const pageRoute = defineRoute({
      method: "GET",
      path: "/test/page",
      tag: "Test",
      summary: "A page of records",
      handle: () =>
        Effect.as(
          Effect.withFiberRuntime<void>((fiber) => {
            requestFiber = fiber
            return Effect.void
          }),
          { message: "page", data: { records } }
        )
    })
    const storage = makeSharedStorage()
    const handler = makeHandler(storage, { routes: [...defaultRoutes, pageRoute] })
    const apiKey = (await createOrganization(storage)).key.api_key
    const server = createServer((req, res) => handler(req, res))
    try {
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/api`
      const response = await fetch(`${origin}/test/page`, { headers: bearer(apiKey) })
      expect(expectEnvelope(response.status, await response.text()).data).toEqual({ records })
      const exit = requestFiber?.unsafePoll()
      expect(exit !== undefined && exit !== null && Exit.isSuccess(exit)).toBe(true)
      expect((exit as Exit.Success<unknown, unknown>).value).toBeUndefined()
    } finally {
      await new Promise((resolve) => server.close(resolve))
      await handler.dispose()
    }
  })
})

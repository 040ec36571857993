import { randomBytes, randomUUID } from "node:crypto"
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Logger, LogLevel, Option } from "effect"
import { Webhook } from "standardwebhooks"
import {
  Contacts,
  Core,
  MemoryStorage,
  Organizations,
  SecretKey,
  Storage,
  WebhookHostResolver,
  WebhookSender,
  WebhookSettings,
  checkWebhookUrl,
  DISPATCH_CLAIM_INTERVAL_MS,
  dispatchWebhooksOnce,
  generateSecretKey,
  makeDispatchWake,
  makeHttpWebhookSender,
  nextDeliveryState,
  pruneWebhookDeliveries,
  runWebhookDispatcher,
  sealSecret,
  type OrganizationId,
  type WebhookEndpointId,
  type WebhookSettingsValue
} from "@switchboard/core"

// The dispatcher against a local receiver (docs/webhooks.md "Delivery and the dispatcher"):
// every delivery is verified with standardwebhooks; retries after 500s and refused
// connections, redirects not followed, the response body cut at 1 KiB, the timeout, the
// address check at delivery (DNS rebinding), the loop's graceful stop, and no secret in a log.

const KEY = generateSecretKey()
const SECRET = `whsec_${randomBytes(24).toString("base64")}`

interface Received {
  readonly headers: IncomingHttpHeaders
  readonly body: string
  readonly verified: unknown
}

/** What the receiver does with the next request; after the queue, it answers 200. */
type Behavior = (response: ServerResponse) => void
const received: Array<Received> = []
let behaviors: Array<Behavior> = []
let server: Server
let receiverUrl: string

const answer = (status: number, body = "", headers: Record<string, string> = {}): Behavior => (response) => {
  response.writeHead(status, headers)
  response.end(body)
}

beforeAll(async () => {
  server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8")
      let verified: unknown
      try {
        verified = new Webhook(SECRET).verify(body, request.headers as Record<string, string>)
      } catch (error) {
        verified = error
      }
      received.push({ headers: request.headers, body, verified })
      const behavior = behaviors.shift() ?? answer(200, "ok")
      behavior(response)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  receiverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

beforeEach(() => {
  received.length = 0
  behaviors = []
})

const local: Partial<WebhookSettingsValue> = { allowInsecureUrls: true, allowPrivateNetworks: true, retryDelaysMs: [5, 5] }

const layerWith = (settings: Partial<WebhookSettingsValue>) =>
  Layer.mergeAll(
    Core.layer.pipe(Layer.provideMerge(MemoryStorage.layer)),
    SecretKey.layer(KEY),
    WebhookSettings.layer(settings)
  )

/** An organization with one endpoint at `url` (written to the store directly), and a contact import's event pending. */
const setUp = (url: string, options: { readonly secretSealed?: string; readonly contacts?: number } = {}) =>
  Effect.gen(function*() {
    const organization = yield* (yield* Organizations).create({ name: "Acme", plan: {} })
    const storage = yield* Storage
    const now = new Date().toISOString()
    const uuid = randomUUID() as WebhookEndpointId
    const inserted = yield* storage.webhooks.insertEndpoint(
      organization.id,
      {
        endpoint: { uuid, url, events: null, description: null, enabled: true, created_at: now, updated_at: now },
        secret_sealed: options.secretSealed ?? sealSecret(KEY, SECRET)
      },
      10
    )
    expect(inserted._tag).toBe("Inserted")
    const rows = Array.from({ length: options.contacts ?? 1 }, (_, index) => ({
      first_name: `Ada ${index}`,
      phone: `+1415555${String(1000 + index).padStart(4, "0")}`
    }))
    yield* (yield* Contacts).importBulk(organization.id, rows)
    return { organizationId: organization.id, endpointId: uuid }
  })

const attemptsOf = (organizationId: OrganizationId, endpointId: WebhookEndpointId) =>
  Effect.flatMap(Storage, (storage) =>
    Effect.map(storage.webhooks.listAttempts(organizationId, endpointId, null, 100), (attempts) =>
      Option.getOrThrow(attempts).slice().reverse()))

/** Rounds of the dispatcher, a little apart, until nothing is pending or `rounds` ran. */
const dispatchRounds = (rounds: number) =>
  Effect.gen(function*() {
    for (let round = 0; round < rounds; round++) {
      yield* dispatchWebhooksOnce(new Date())
      yield* Effect.sleep(20)
    }
  })

describe("webhook delivery", () => {
  it.live("delivers a contact.created event, signed so that standardwebhooks verifies it", () =>
    Effect.gen(function*() {
      const { endpointId, organizationId } = yield* setUp(receiverUrl)
      const summary = yield* dispatchWebhooksOnce(new Date())
      expect(summary).toEqual({ claimed: 1, delivered: 1, retrying: 0, failed: 0, lost: 0 })
      expect(received).toHaveLength(1)
      const [delivery] = received
      expect(delivery!.verified).toMatchObject({ type: "contact.created", data: { first_name: "Ada 0" } })
      expect(delivery!.headers["content-type"]).toBe("application/json")
      const body = JSON.parse(delivery!.body)
      expect(Object.keys(body)).toEqual(["id", "type", "created_at", "data"])
      expect(delivery!.headers["webhook-id"]).toBe(body.id)
      expect(Number(delivery!.headers["webhook-timestamp"])).toBeCloseTo(Date.now() / 1000, -1)
      const attempts = yield* attemptsOf(organizationId, endpointId)
      expect(attempts).toMatchObject([
        { attempt: 1, status: 200, error: null, delivery_status: "delivered", next_attempt_at: null, event_id: body.id }
      ])
      expect((yield* dispatchWebhooksOnce(new Date())).claimed).toBe(0)
    }).pipe(Effect.provide(layerWith(local))))

  it.live("retries after 500s with the same webhook-id, until a 2xx", () =>
    Effect.gen(function*() {
      behaviors = [answer(500, "oops"), answer(500, "oops again")]
      const { endpointId, organizationId } = yield* setUp(receiverUrl)
      yield* dispatchRounds(4)
      expect(received).toHaveLength(3)
      expect(new Set(received.map((request) => request.headers["webhook-id"])).size).toBe(1)
      for (const request of received) expect(request.verified).toMatchObject({ type: "contact.created" })
      const attempts = yield* attemptsOf(organizationId, endpointId)
      expect(attempts.map((attempt) => [attempt.attempt, attempt.status, attempt.delivery_status])).toEqual([
        [1, 500, "pending"],
        [2, 500, "pending"],
        [3, 200, "delivered"]
      ])
      expect(attempts[0]!.next_attempt_at).not.toBeNull()
    }).pipe(Effect.provide(layerWith(local))))

  it.live("a refused connection is retried, then the delivery fails after the last delay", () =>
    Effect.gen(function*() {
      const closed = createServer()
      yield* Effect.promise(() => new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve)))
      const port = (closed.address() as AddressInfo).port
      yield* Effect.promise(() => new Promise((resolve) => closed.close(resolve)))
      const { endpointId, organizationId } = yield* setUp(`http://127.0.0.1:${port}/hooks`)
      yield* dispatchRounds(4)
      const attempts = yield* attemptsOf(organizationId, endpointId)
      expect(attempts.map((attempt) => [attempt.attempt, attempt.status, attempt.error, attempt.delivery_status])).toEqual([
        [1, null, "connection refused (ECONNREFUSED)", "pending"],
        [2, null, "connection refused (ECONNREFUSED)", "pending"],
        [3, null, "connection refused (ECONNREFUSED)", "failed"]
      ])
      expect(attempts[2]!.next_attempt_at).toBeNull()
    }).pipe(Effect.provide(layerWith(local))))

  it.live("a redirect is not followed: a 3xx is a failed attempt", () =>
    Effect.gen(function*() {
      behaviors = [answer(302, "", { location: `${receiverUrl}/elsewhere` })]
      const { endpointId, organizationId } = yield* setUp(receiverUrl)
      yield* dispatchWebhooksOnce(new Date())
      expect(received).toHaveLength(1)
      const attempts = yield* attemptsOf(organizationId, endpointId)
      expect(attempts).toMatchObject([{ attempt: 1, status: 302, delivery_status: "pending" }])
    }).pipe(Effect.provide(layerWith(local))))

  it.live("keeps at most 1 KiB of the response body", () =>
    Effect.gen(function*() {
      behaviors = [answer(200, "é".repeat(4000))]
      yield* setUp(receiverUrl)
      const bodies: Array<string | null> = []
      const recording = makeHttpWebhookSender()
      yield* dispatchWebhooksOnce(new Date()).pipe(
        Effect.provide(
          Layer.succeed(WebhookSender, {
            send: (request) => Effect.tap(recording.send(request), (outcome) => Effect.sync(() => bodies.push(outcome.response_body)))
          })
        )
      )
      expect(bodies).toHaveLength(1)
      expect(Buffer.byteLength(bodies[0]!, "utf8")).toBe(1024)
      expect(bodies[0]).toBe("é".repeat(512))
    }).pipe(Effect.provide(layerWith(local))))

  it.live("an attempt that takes too long times out", () =>
    Effect.gen(function*() {
      behaviors = [(response) => setTimeout(() => answer(200)(response), 1_000)]
      const { endpointId, organizationId } = yield* setUp(receiverUrl)
      yield* dispatchWebhooksOnce(new Date()).pipe(
        Effect.provide(Layer.succeed(WebhookSender, makeHttpWebhookSender({ timeoutMs: 100 })))
      )
      const attempts = yield* attemptsOf(organizationId, endpointId)
      expect(attempts).toMatchObject([{ status: null, error: "timed out after 100 ms", delivery_status: "pending" }])
      expect(attempts[0]!.duration_ms).toBeGreaterThanOrEqual(90)
    }).pipe(Effect.provide(layerWith(local))))

  it.live("an endpoint whose name resolves to an internal address at delivery is refused (DNS rebinding)", () =>
    Effect.gen(function*() {
      const port = (server.address() as AddressInfo).port
      const url = `http://rebind.example.test:${port}/hooks`
      const strictSettings = { allowInsecureUrls: true, allowPrivateNetworks: false }
      // Registration: the name resolves to a public address.
      yield* checkWebhookUrl(url, strictSettings).pipe(
        Effect.provide(
          Layer.succeed(WebhookHostResolver, { lookup: () => Promise.resolve([{ address: "93.184.215.14", family: 4 }]) })
        )
      )
      const { endpointId, organizationId } = yield* setUp(url)
      // Delivery: it now resolves to loopback.
      yield* dispatchWebhooksOnce(new Date()).pipe(
        Effect.provide(Layer.succeed(WebhookHostResolver, { lookup: () => Promise.resolve([{ address: "127.0.0.1", family: 4 }]) }))
      )
      expect(received).toHaveLength(0)
      const attempts = yield* attemptsOf(organizationId, endpointId)
      expect(attempts).toHaveLength(1)
      expect(attempts[0]!.status).toBeNull()
      expect(attempts[0]!.error).toContain("refused address")
      expect(attempts[0]!.error).toContain("127.0.0.1")
    }).pipe(Effect.provide(layerWith({ ...local, allowPrivateNetworks: false }))))

  it.live("the connection goes to the checked address, not to a second look-up", () =>
    Effect.gen(function*() {
      const port = (server.address() as AddressInfo).port
      let lookups = 0
      yield* setUp(`http://receiver.example.test:${port}/hooks`)
      yield* dispatchWebhooksOnce(new Date()).pipe(
        Effect.provide(
          Layer.succeed(WebhookHostResolver, {
            lookup: () => {
              lookups++
              return Promise.resolve([{ address: "127.0.0.1", family: 4 }])
            }
          })
        )
      )
      expect(lookups).toBe(1)
      expect(received).toHaveLength(1)
      expect(received[0]!.headers.host).toBe(`receiver.example.test:${port}`)
    }).pipe(Effect.provide(layerWith(local))))

  it.live("a secret that cannot be opened is an attempt error that never shows the secret", () =>
    Effect.gen(function*() {
      const { endpointId, organizationId } = yield* setUp(receiverUrl, { secretSealed: sealSecret(generateSecretKey(), SECRET) })
      yield* dispatchWebhooksOnce(new Date())
      expect(received).toHaveLength(0)
      const attempts = yield* attemptsOf(organizationId, endpointId)
      expect(attempts[0]!.error).toBe("the endpoint secret cannot be opened with the configured secret key")
    }).pipe(Effect.provide(layerWith(local))))

  it.live("pruning deletes deliveries created more than 30 days before now, with their attempts", () =>
    Effect.gen(function*() {
      const { endpointId, organizationId } = yield* setUp(receiverUrl)
      yield* dispatchWebhooksOnce(new Date())
      expect(yield* pruneWebhookDeliveries(new Date(Date.now() + 29 * 24 * 3_600_000))).toBe(0)
      expect(yield* attemptsOf(organizationId, endpointId)).toHaveLength(1)
      expect(yield* pruneWebhookDeliveries(new Date(Date.now() + 31 * 24 * 3_600_000))).toBe(1)
      expect(yield* attemptsOf(organizationId, endpointId)).toHaveLength(0)
    }).pipe(Effect.provide(layerWith(local))))

  it.live("without a secret key nothing is sent and the attempt says why", () =>
    Effect.gen(function*() {
      const { endpointId, organizationId } = yield* setUp(receiverUrl)
      yield* dispatchWebhooksOnce(new Date()).pipe(Effect.provide(Layer.succeed(SecretKey, { key: undefined })))
      expect(received).toHaveLength(0)
      const attempts = yield* attemptsOf(organizationId, endpointId)
      expect(attempts[0]!.error).toBe("no secret key is configured, so the endpoint secret cannot be opened")
    }).pipe(Effect.provide(layerWith(local))))

  it.live("the loop delivers many events, stops after the attempts in flight, and logs no secret", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const logger = Logger.make(({ annotations, logLevel, message }) => {
        lines.push(`${logLevel.label} ${JSON.stringify(message)} ${JSON.stringify([...annotations])}`)
      })
      behaviors = [answer(500), answer(503)]
      const { endpointId, organizationId } = yield* setUp(receiverUrl, { contacts: 12 })
      const fiber = yield* Effect.fork(
        runWebhookDispatcher({ pollIntervalMs: 10 }).pipe(
          Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
          Logger.withMinimumLogLevel(LogLevel.All)
        )
      )
      for (let wait = 0; wait < 200 && received.length < 14; wait++) {
        yield* Effect.sleep(20)
      }
      // One slow answer in flight when the loop is interrupted: the interruption waits for it.
      behaviors = [(response) => setTimeout(() => answer(200)(response), 300)]
      const slow = yield* setUp(receiverUrl)
      const before = received.length
      for (let wait = 0; wait < 100 && received.length === before; wait++) yield* Effect.sleep(10)
      yield* Fiber.interrupt(fiber)
      const ids = received.map((request) => request.headers["webhook-id"])
      expect(new Set(ids).size).toBe(13)
      for (const request of received) expect(request.verified).toMatchObject({ type: "contact.created" })
      const attempts = yield* attemptsOf(organizationId, endpointId)
      expect(attempts.filter((attempt) => attempt.delivery_status === "delivered")).toHaveLength(12)
      expect(yield* attemptsOf(slow.organizationId, slow.endpointId)).toMatchObject([{ status: 200, delivery_status: "delivered" }])
      // Each failed attempt is a warning (shown at the default level) naming the
      // organization, so an operator can tell whose it is.
      const failedLines = lines.filter((line) => line.includes("webhook attempt failed"))
      expect(failedLines.length).toBeGreaterThan(0)
      for (const line of failedLines) {
        expect(line).toMatch(/^WARN /)
        expect(line).toContain(JSON.stringify(["organization_id", organizationId]))
      }
      const secretBase64 = SECRET.slice("whsec_".length)
      for (const line of lines) {
        expect(line).not.toContain(SECRET)
        expect(line).not.toContain(secretBase64)
      }
    }).pipe(Effect.provide(layerWith(local))))
})

describe("the loop under a burst of wakes", () => {
  it.live("claims at most once per DISPATCH_CLAIM_INTERVAL_MS however often it is woken, and a wake after a quiet moment claims without waiting for the poll", () =>
    Effect.gen(function*() {
      const storage = yield* Storage
      const claims: Array<number> = []
      const counted = Layer.succeed(Storage, {
        ...storage,
        webhooks: {
          ...storage.webhooks,
          claimDue: (now: string, leaseUntil: string, limit: number) =>
            Effect.zipRight(Effect.sync(() => claims.push(Date.now())), storage.webhooks.claimDue(now, leaseUntil, limit))
        }
      })
      const wake = makeDispatchWake()
      const fiber = yield* Effect.fork(runWebhookDispatcher({ pollIntervalMs: 60_000, wake }).pipe(Effect.provide(counted)))
      for (let wait = 0; wait < 100 && claims.length === 0; wait++) yield* Effect.sleep(5)
      // 300 ms of writes that may enqueue, one every millisecond or so: every one wakes the loop.
      const burstStart = Date.now()
      while (Date.now() - burstStart < 300) {
        yield* wake.wake
        yield* Effect.sleep(1)
      }
      const duringBurst = claims.filter((at) => at >= burstStart).length
      // Without the interval the loop claims about once per wake (a few hundred times).
      expect(duringBurst).toBeGreaterThan(0)
      expect(duringBurst).toBeLessThanOrEqual(Math.ceil(300 / DISPATCH_CLAIM_INTERVAL_MS) + 2)
      // Quiet for longer than the interval, then one wake: claimed because of the wake, long
      // before the 60 s poll (not a timing figure: a loaded machine may take a while).
      yield* Effect.sleep(DISPATCH_CLAIM_INTERVAL_MS * 2)
      const before = claims.length
      const wokenAt = Date.now()
      yield* wake.wake
      for (let wait = 0; wait < 5_000 && claims.length === before; wait++) yield* Effect.sleep(2)
      expect(claims.length).toBe(before + 1)
      expect(claims[before]! - wokenAt).toBeLessThan(10_000)
      yield* Fiber.interrupt(fiber)
    }).pipe(Effect.provide(layerWith(local))))
})

describe("nextDeliveryState", () => {
  const delays = [5_000, 300_000]
  const at = Date.parse("2026-01-01T00:00:00.000Z")

  it("a 2xx is delivered", () => {
    expect(nextDeliveryState({ delivered: true }, 1, at, delays, 0)).toEqual({ delivery_status: "delivered", next_attempt_at: null })
  })

  it("attempt n failed is due after delay n, stretched by the jitter (up to 10%)", () => {
    expect(nextDeliveryState({ delivered: false }, 1, at, delays, 0).next_attempt_at).toBe("2026-01-01T00:00:05.000Z")
    expect(nextDeliveryState({ delivered: false }, 2, at, delays, 0.099).next_attempt_at).toBe(
      new Date(at + Math.round(300_000 * 1.099)).toISOString()
    )
  })

  it("the attempt after the last delay that fails makes the delivery failed", () => {
    expect(nextDeliveryState({ delivered: false }, 3, at, delays, 0.05)).toEqual({ delivery_status: "failed", next_attempt_at: null })
  })
})

import { randomUUID } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { expect } from "vitest"
import { Effect, Exit, Layer, Scope } from "effect"
import inject from "light-my-request"
import { Core, IDEMPOTENCY_LOCK_MS, type IdempotencyClaimRequest, MemoryStorage, Organizations, Storage, type CreateOrganizationInput, type StorageService } from "@switchboard/core"
import { createHandler, defineRoute, type HandlerOptions, type SwitchboardHandler } from "@switchboard/http-adapter"
import { SqliteStorage } from "@switchboard/storage-sqlite"
import { PostgresStorage } from "@switchboard/storage-postgres"
import Pg from "pg"
import { afterFile } from "../../../vitest.after-file.js"

/**
 * A store shared by the handler under test and the test's own set-up calls: memory, a new
 * SQLite file when `SWITCHBOARD_TEST_STORAGE=sqlite` (the `http-adapter-sqlite` project of
 * vitest.workspace.ts runs the endpoint suites that way, so every rule is checked on both
 * stores), or a new schema on the PostgreSQL server of `POSTGRES_URL` when it is
 * `postgres` (project `http-adapter-postgres`, a subset of the suites). The SQLite files
 * live in one temporary directory per test file, closed and removed after the file's last
 * test; the schemas are dropped then.
 */
export const makeSharedStorage = (): Layer.Layer<Storage> => {
  switch (process.env.SWITCHBOARD_TEST_STORAGE) {
    case "sqlite":
      return Layer.succeed(Storage, openSqliteStorage())
    case "postgres":
      return Layer.succeed(Storage, openPostgresStorage())
    default:
      return Layer.succeed(Storage, MemoryStorage.make())
  }
}

/** The temporary directory of this test file's SQLite files and the scope their connections live in. */
let sqlite: { readonly directory: string; readonly scope: Scope.CloseableScope } | undefined

/** The SQLite files {@link makeSharedStorage} opened in this test file, oldest first. */
export const openedSqliteFiles: Array<string> = []

/**
 * Closes this test file's SQLite connections and removes their directory. Run after the
 * file's last test (`afterFile`: test files share a worker, so this module's own top-level
 * `afterAll` would run after the first file only; a process "exit" handler does not run in
 * vitest's workers: the directories stayed).
 */
const closeSqliteFiles = async () => {
  if (sqlite === undefined) return
  const { directory, scope } = sqlite
  sqlite = undefined
  openedSqliteFiles.length = 0
  await Effect.runPromise(Scope.close(scope, Exit.void))
  rmSync(directory, { recursive: true, force: true })
}

/** A migrated SQLite storage on a new file in this test file's temporary directory. */
const openSqliteStorage = () => {
  if (sqlite === undefined) {
    sqlite = { directory: mkdtempSync(join(tmpdir(), "switchboard-http-sqlite-")), scope: Effect.runSync(Scope.make()) }
    afterFile(closeSqliteFiles)
  }
  const filename = join(sqlite.directory, `${randomUUID()}.db`)
  openedSqliteFiles.push(filename)
  // The connection lives until the file's last test (closeSqliteFiles closes the scope).
  return Effect.runSync(Scope.extend(SqliteStorage.make({ filename }), sqlite.scope))
}

/** The schemas {@link makeSharedStorage} created in this test file, and the scope of their pools. */
let postgres: { readonly schemas: Array<string>; readonly scope: Scope.CloseableScope } | undefined

/** Closes this test file's PostgreSQL pools and drops its schemas, after its last test (`afterFile`). */
const dropPostgresSchemas = async () => {
  if (postgres === undefined) return
  const { schemas, scope } = postgres
  postgres = undefined
  await Effect.runPromise(Scope.close(scope, Exit.void))
  const pool = new Pg.Pool({ connectionString: process.env.POSTGRES_URL, max: 1 })
  try {
    for (const schema of schemas) await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  } finally {
    await pool.end()
  }
}

/**
 * A migrated PostgreSQL storage on a new schema. The store opens asynchronously (pool,
 * migration), while the suites take their storage synchronously: this answers at once
 * with a service whose every method first waits for the store to be open, then calls it.
 */
const openPostgresStorage = (): StorageService => {
  const url = process.env.POSTGRES_URL
  if (url === undefined || url === "") throw new Error("SWITCHBOARD_TEST_STORAGE=postgres needs POSTGRES_URL")
  if (postgres === undefined) {
    postgres = { schemas: [], scope: Effect.runSync(Scope.make()) }
    afterFile(dropPostgresSchemas)
  }
  const schema = `switchboard_test_${randomUUID().replace(/-/g, "").slice(0, 16)}`
  postgres.schemas.push(schema)
  const opened = Effect.runPromise(
    Scope.extend(PostgresStorage.make({ connectionString: url, schema, poolSize: 4 }), postgres.scope)
  )
  const ready = Effect.promise(() => opened)
  type Repositories = Record<string, Record<string, (...args: ReadonlyArray<unknown>) => Effect.Effect<unknown>>>
  // Real objects with every method of the interface (their names read off the memory store,
  // which has them all): callers may spread a repository, which a Proxy would not survive.
  const template = MemoryStorage.make() as unknown as Repositories
  return Object.fromEntries(
    Object.entries(template).map(([name, methods]) => [
      name,
      Object.fromEntries(
        Object.keys(methods).map((method) => [
          method,
          (...args: ReadonlyArray<unknown>) =>
            Effect.flatMap(ready, (service) => (service as unknown as Repositories)[name]![method]!(...args))
        ])
      )
    ])
  ) as unknown as StorageService
}

/** The schema of the PostgreSQL stores {@link makeSharedStorage} opened in this test file, oldest first. */
export const openedPostgresSchemas = (): ReadonlyArray<string> => postgres?.schemas ?? []

/** Creates an organization with an API key in `storage`; returns both. */
export const createOrganization = (
  storage: Layer.Layer<Storage>,
  input: CreateOrganizationInput = { name: "Acme" }
) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const organizations = yield* Organizations
      const organization = yield* organizations.create(input)
      const key = yield* organizations.issueApiKey(organization.id)
      return { organization, key }
    }).pipe(Effect.provide(Core.layer), Effect.provide(storage))
  )

/** Changes an organization's plan in `storage` (fields left out are kept). */
export const updatePlan = (
  storage: Layer.Layer<Storage>,
  id: Parameters<Organizations["Type"]["update"]>[0],
  plan: NonNullable<CreateOrganizationInput["plan"]>
) =>
  Effect.runPromise(
    Organizations.pipe(
      Effect.flatMap((organizations) => organizations.update(id, { plan })),
      Effect.provide(Core.layer),
      Effect.provide(storage)
    )
  )

/** Revokes a key in `storage`. */
export const revokeKey = (storage: Layer.Layer<Storage>, keyId: Parameters<Organizations["Type"]["revokeApiKey"]>[0]) =>
  Effect.runPromise(
    Organizations.pipe(
      Effect.flatMap((organizations) => organizations.revokeApiKey(keyId)),
      Effect.provide(Core.layer),
      Effect.provide(storage)
    )
  )

/**
 * `claim` as if it had been made one Idempotency-Key lock (60 s) and a second earlier: its
 * lock has lapsed, so a retry takes the key over at once, as after a crash or a slow first
 * request (docs/messaging.md "Idempotency-Key"). For stores wrapped in tests.
 */
export const claimedLockAgo = (claim: IdempotencyClaimRequest): IdempotencyClaimRequest => {
  const shift = (instant: string) => new Date(Date.parse(instant) - IDEMPOTENCY_LOCK_MS - 1_000).toISOString()
  return { ...claim, now: shift(claim.now), lockedUntil: shift(claim.lockedUntil), expiresAt: shift(claim.expiresAt) }
}

/** A handler on `storage` with request logs silenced unless a logger is given. */
export const makeHandler = (
  storage: Layer.Layer<Storage, unknown>,
  options: Partial<HandlerOptions> = {}
): SwitchboardHandler =>
  // The template sync loop is off unless a test asks for it: it would call Meta's Graph API
  // for every channel a test adds.
  createHandler({ storage, logger: false, ...options, dispatch: { templates: false, ...options.dispatch } })

/** Sends one request to `handler` without a socket (light-my-request). */
export const request = (
  listener: (req: IncomingMessage, res: ServerResponse) => void,
  options: inject.InjectOptions
) => inject((req, res) => listener(req, res), options)

export const bearer = (apiKey: string) => ({ authorization: `Bearer ${apiKey}` })

/** A parsed response of the API: HTTP status and the envelope. */
export interface ApiResult {
  readonly status: number
  /** The envelope's free-form `data`, typed loosely so tests can read into it. */
  readonly data: any
  readonly message: string
  readonly errors: ReadonlyArray<{ readonly code: string; readonly message: string; readonly field?: string }>
}

/** A stack frame: "at fn (/path/file.js:1:2)", "at file:///path/file.js:1:2", "at node:internal/…:1:2" (a provider's reason "Meta's Graph API at http://127.0.0.1:8080 answered …" is not one). */
const STACK_FRAME = /\bat (?:[^\s(]+ \()?(?:\/|file:\/\/|node:)[^\s)]*:\d+:\d+|node_modules|\.[cm]?[jt]s:\d+/

/**
 * The keys of an error item: only an outside_customer_service_window item carries
 * window_expires_at, only a message_not_reactable item reason (docs/messaging.md).
 */
const errorItemKeys = (code: unknown): ReadonlyArray<string> =>
  code === "outside_customer_service_window"
    ? ["code", "message", "field", "window_expires_at"]
    : code === "message_not_reactable"
      ? ["code", "message", "field", "reason"]
      : ["code", "message", "field"]

/**
 * The envelope rules an answer breaks (docs/http-api.md "Envelope"), each named; empty when
 * it keeps them all: exactly the five keys, `status` equal to the HTTP status, never a 500,
 * a success with `errors: []`, a failure with `data: null` and at least one
 * `{code, message, field?}` item, and no stack trace anywhere in the body. Plain checks, no
 * `expect` per rule: the hostile-input walks check thousands of answers, and ~15 `expect`
 * calls per answer were two thirds of their time.
 */
export const envelopeProblems = (status: number, rawBody: string): Array<string> => {
  const problems: Array<string> = []
  if (!(status < 500)) problems.push(`HTTP status ${status} is not below 500`)
  if (STACK_FRAME.test(rawBody)) problems.push("the body shows a stack frame or a source path")
  let body: unknown
  try {
    body = JSON.parse(rawBody)
  } catch {
    return [...problems, "the body is not JSON"]
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) return [...problems, "the body is not a JSON object"]
  const envelope = body as Record<string, unknown>
  const keys = Object.keys(envelope).sort().join(", ")
  if (keys !== "data, errors, message, status, success") problems.push(`the envelope's keys are ${keys}`)
  if (envelope.status !== status) problems.push(`status ${String(envelope.status)} is not the HTTP status ${status}`)
  if (typeof envelope.message !== "string") problems.push("message is not a string")
  const errors = envelope.errors
  if (!Array.isArray(errors)) return [...problems, "errors is not an array"]
  if (status === 200) {
    if (envelope.success !== true) problems.push("success is not true on a 200")
    if (errors.length !== 0) problems.push("errors is not empty on a 200")
  } else {
    if (envelope.success !== false) problems.push("success is not false on a failure")
    if (envelope.data !== null) problems.push("data is not null on a failure")
    if (errors.length === 0) problems.push("errors is empty on a failure")
    for (const [index, error] of errors.entries()) {
      if (typeof error !== "object" || error === null) {
        problems.push(`errors[${index}] is not an object`)
        continue
      }
      const item = error as Record<string, unknown>
      if (typeof item.code !== "string" || !/^[a-z][a-z0-9_]*$/.test(item.code)) problems.push(`errors[${index}].code ${String(item.code)} is not a snake_case code`)
      if (typeof item.message !== "string") problems.push(`errors[${index}].message is not a string`)
      const allowed = errorItemKeys(item.code)
      for (const key of Object.keys(item)) if (!allowed.includes(key)) problems.push(`errors[${index}] has the key ${key}`)
      if (item.field !== undefined && typeof item.field !== "string") problems.push(`errors[${index}].field is not a string`)
    }
  }
  return problems
}

/**
 * Checks the envelope rules every response must keep ({@link envelopeProblems}) in one
 * `expect` naming each broken rule, and returns the parsed answer.
 */
export const expectEnvelope = (status: number, rawBody: string): ApiResult => {
  expect(envelopeProblems(status, rawBody), `${status} ${rawBody.slice(0, 300)}`).toEqual([])
  const body = JSON.parse(rawBody) as Record<string, unknown>
  return { status, data: body.data, message: body.message as string, errors: body.errors as ApiResult["errors"] }
}

/** A client of one organization: JSON in, envelope checked by {@link expectEnvelope}. */
export const apiClient = (listener: (req: IncomingMessage, res: ServerResponse) => void, apiKey: string) => {
  const call = async (method: "GET" | "POST" | "PUT" | "DELETE", path: string, body?: unknown): Promise<ApiResult> => {
    const response = await request(listener, {
      method,
      url: `/api/v1/api${path}`,
      headers: { ...bearer(apiKey), ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) })
    })
    return expectEnvelope(response.statusCode, response.body)
  }
  return {
    get: (path: string) => call("GET", path),
    post: (path: string, body: unknown) => call("POST", path, body),
    put: (path: string, body: unknown) => call("PUT", path, body),
    delete: (path: string) => call("DELETE", path)
  }
}

/** The client type of {@link apiClient}. */
export type ApiClient = ReturnType<typeof apiClient>

/**
 * A fresh organization in `storage` and a client for it on `handler`: every test gets its
 * own tenant, so no test depends on another's data.
 */
export const makeTenant = async (
  storage: Layer.Layer<Storage>,
  handler: SwitchboardHandler,
  input: CreateOrganizationInput = { name: "Acme" }
) => {
  const { organization, key } = await createOrganization(storage, input)
  return { organization, apiKey: key.api_key, api: apiClient(handler, key.api_key) }
}

/** A valid, distinct E.164 phone for each `n` in 0–9 999 999 (Dutch mobile range). */
export const phone = (n: number): string => `+3161${String(n).padStart(7, "0")}`

/** `count` import rows with distinct phones starting at `from`. */
export const contactRows = (from: number, count: number, extra: Record<string, unknown> = {}) =>
  Array.from({ length: count }, (_, index) => ({ first_name: `Person ${from + index}`, phone: phone(from + index), ...extra }))

/** Imports `rows` and expects a 200; returns the result data. */
export const importContacts = async (api: ApiClient, rows: ReadonlyArray<unknown>) => {
  const result = await api.post("/contacts/bulk", { contacts: rows })
  expect(result.status, JSON.stringify(result.errors)).toBe(200)
  return result.data as { created: number; updated: number; contacts: Array<{ uuid: string; phone: string; status: string }> }
}

/** Every contact of the organization (up to 100), newest first. */
export const allContacts = async (api: ApiClient) => {
  const result = await api.get("/contacts?per_page=100")
  expect(result.status).toBe(200)
  return result.data.contacts as Array<Record<string, unknown> & { uuid: string; phone: string }>
}

/** A well-formed uuid no record has. */
export const UNKNOWN_UUID = "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6a"

/**
 * Serves `handler` on a real `node:http` server on a free port (for concurrency tests over
 * sockets); `fetchApi` sends one JSON request and checks the envelope.
 */
export const listen = async (handler: SwitchboardHandler) => {
  const server = createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/api`
  const fetchApi = async (apiKey: string, method: string, path: string, body?: unknown): Promise<ApiResult> => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { ...bearer(apiKey), ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    return expectEnvelope(response.status, await response.text())
  }
  const close = () => new Promise<void>((resolve) => server.close(() => resolve()))
  return { base, fetchApi, close }
}

/** Stands in for the unauthenticated discovery routes (tag Guide; rate limited by client address). */
export const publicRoute = defineRoute({
  method: "GET",
  path: "/test/public",
  tag: "Guide",
  summary: "Public",
  authenticated: false,
  handle: () => Effect.succeed({ message: "public", data: {} })
})

/**
 * Whether a send's answer is the send queue's hand-back of a late inline attempt
 * (docs/messaging.md "The send queue"): 200 "Message queued" with status `queued` and no
 * failure. The attempt in the request reached the transport more than the lateness allowance
 * after its pacing slot (a busy machine), so it went back to the queue unattempted, and the
 * dispatcher sends it moments later. A retried failure also answers `queued`, but with its
 * `failure`, so it is not taken for a hand-back; a send waiting behind another to the same
 * recipient answers the same pair, so ask this only of a send the inline attempt would take.
 */
export const isHandedBack = (answer: ApiResult): boolean =>
  answer.status === 200 && answer.message === "Message queued" && answer.data?.status === "queued" && answer.data?.failure == null

/**
 * A send's answer as its inline attempt gives it when on time for its pacing slot: `answer`
 * itself, or, when it is the hand-back ({@link isHandedBack}), the answer once the dispatcher
 * attempted the message: polls `GET /messages/{id}` (every 20 ms, at most `options.waitMs`,
 * default 5 000) until `options.until(message)` holds (default: neither `queued` nor
 * `sending`, i.e. settled), then answers with the message's `status`, `provider_message_id`,
 * `next_attempt_at`, `failure` and `transport` in `data`, and "Message sent" when it was sent.
 * So the Graph API has the call either way when this returns. Throws when `until` still does
 * not hold after `waitMs`.
 */
export const settledSend = async (
  api: ApiClient,
  answer: ApiResult,
  options: { readonly until?: (message: Record<string, any>) => boolean; readonly waitMs?: number } = {}
): Promise<ApiResult> => {
  if (!isHandedBack(answer)) return answer
  const id: string = answer.data.message_id
  const waitMs = options.waitMs ?? 5_000
  const until = options.until ?? ((message: Record<string, any>) => message.status !== "queued" && message.status !== "sending")
  const deadline = Date.now() + waitMs
  for (;;) {
    const message = (await api.get(`/messages/${id}`)).data as Record<string, any>
    if (until(message)) {
      const data: Record<string, unknown> = { ...answer.data }
      for (const key of ["status", "provider_message_id", "next_attempt_at", "failure", "transport"]) {
        if (key in data) data[key] = message[key]
      }
      return { ...answer, message: message.status === "sent" ? "Message sent" : answer.message, data }
    }
    if (Date.now() > deadline) throw new Error(`message ${id}, handed back for a new pacing slot, did not reach the expected state within ${waitMs} ms: ${JSON.stringify(message)}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

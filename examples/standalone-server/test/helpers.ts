/// <reference path="../../../packages/blob-s3/test/s3rver.d.ts" />
import { spawn, type ChildProcess } from "node:child_process"
import { createHash, randomBytes, randomUUID } from "node:crypto"
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import Pg from "pg"
import { Channels, Imports, Organizations } from "@switchboard/core"
import { startSimulator, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"
import { ConfigProvider, Effect, ManagedRuntime } from "effect"
import { adminLayer, type AdminServices, loadAdminSetup } from "../src/commands/admin.js"

/** The built admin CLI and server: the tests run what users run. */
export const CLI_PATH = fileURLToPath(new URL("../dist/cli.js", import.meta.url))
export const SERVER_PATH = fileURLToPath(new URL("../dist/main.js", import.meta.url))

/** Fails with a clear message when `dist/` has not been built. */
export const assertBuilt = (): void => {
  for (const path of [CLI_PATH, SERVER_PATH]) {
    if (!existsSync(path)) {
      throw new Error(
        `${path} is missing: run \`npm run build\` at the repository root (or ` +
          "`npm run build -w @switchboard/example-standalone-server`) before these tests"
      )
    }
  }
}

/** A fresh temporary directory, removed by {@link removeTemporaryDirectories}. */
export const temporaryDirectory = (): string => {
  const directory = mkdtempSync(join(tmpdir(), "switchboard-standalone-"))
  temporaryDirectories.push(directory)
  return directory
}

/** `sqlite:` URL of a fresh database file in a fresh temporary directory. */
export const temporaryDatabaseUrl = (): string => `sqlite:${join(temporaryDirectory(), "switchboard.db")}`

/** Removes every directory made by {@link temporaryDirectory}. */
export const removeTemporaryDirectories = (): void => {
  for (const directory of temporaryDirectories.splice(0)) rmSync(directory, { recursive: true, force: true })
}

const temporaryDirectories: Array<string> = []

/**
 * The PostgreSQL server of the two-process tests on PostgreSQL: `POSTGRES_URL` (`.ci/run`
 * sets it to the local server). Unset: those tests skip, and {@link databases} says why.
 */
export const postgresUrl: string | undefined = process.env.POSTGRES_URL === "" ? undefined : process.env.POSTGRES_URL

/** The secret key the PostgreSQL tests give every process (PostgreSQL requires one). */
const POSTGRES_SECRET_KEY = "5".repeat(64)

/**
 * A fresh store for the server and CLI environment of one test: `sqlite` → a new file
 * ({@link temporaryDatabaseUrl}); `postgres` → `POSTGRES_URL` with a new schema
 * (`DATABASE_SCHEMA`, dropped by {@link dropTemporarySchemas}) and `SWITCHBOARD_SECRET_KEY`.
 */
export const temporaryDatabaseEnv = (store: TestStore): Record<string, string> => {
  if (store === "sqlite") return { DATABASE_URL: temporaryDatabaseUrl() }
  const schema = `switchboard_test_${randomUUID().replace(/-/g, "").slice(0, 16)}`
  temporarySchemas.push(schema)
  return { DATABASE_URL: postgresUrl!, DATABASE_SCHEMA: schema, SWITCHBOARD_SECRET_KEY: POSTGRES_SECRET_KEY }
}

/** The stores the two-process tests run on. */
export type TestStore = "sqlite" | "postgres"

/**
 * The stores a two-process test runs on: SQLite always, PostgreSQL when `POSTGRES_URL` is
 * set (else a line says it is skipped), for `describe.each(databases())`.
 */
export const databases = (): Array<TestStore> => {
  if (postgresUrl !== undefined) return ["sqlite", "postgres"]
  console.warn("standalone-server: POSTGRES_URL is not set; the two-process tests on PostgreSQL are skipped")
  return ["sqlite"]
}

const temporarySchemas: Array<string> = []

/** Drops every schema made by {@link temporaryDatabaseEnv} (for `afterAll`). */
export const dropTemporarySchemas = async (): Promise<void> => {
  if (postgresUrl === undefined || temporarySchemas.length === 0) return
  const pool = new Pg.Pool({ connectionString: postgresUrl, max: 1 })
  try {
    for (const schema of temporarySchemas.splice(0)) await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  } finally {
    await pool.end()
  }
}

/** What `org create` prints (JSON): the organization's id, its first key's id and the key. */
export interface OrgCreated {
  readonly org_id: string
  readonly key_id: string
  readonly api_key: string
}

/** What a finished command printed and its exit code. */
export interface CommandResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** The environment of a child process: this one's, minus the server variables, plus `env`. */
export const childEnvironment = (env: Record<string, string>): NodeJS.ProcessEnv => {
  const { HOST: _host, PORT: _port, DATABASE_URL: _databaseUrl, DATABASE_SCHEMA: _schema, ...inherited } = process.env
  return { ...inherited, ...env }
}

/**
 * Runs an admin `program` in this process on the store `env` names, through the CLI's own
 * set-up (`loadAdminSetup`, `adminLayer`: the same store, secret key and Graph API a CLI
 * command with `env` would use, creating the secret key file as `channel add` does), and
 * answers its result; fails with the program's error. For tests whose subject is not the
 * CLI: each CLI process costs ~0.8 s of CPU to start, and the CLI's own tests run it.
 */
export const runAdmin = async <A, E>(env: Record<string, string>, program: Effect.Effect<A, E, AdminServices>): Promise<A> => {
  const provider = ConfigProvider.fromMap(new Map(Object.entries(childEnvironment(env)).filter((entry): entry is [string, string] => entry[1] !== undefined)))
  const setup = await Effect.runPromise(loadAdminSetup({ createSecretKey: true }).pipe(Effect.withConfigProvider(provider)))
  const runtime = ManagedRuntime.make(adminLayer(setup))
  try {
    return await runtime.runPromise(program)
  } finally {
    await runtime.dispose()
  }
}

/**
 * What `org create --name <name>` writes and prints, done in this process ({@link runAdmin}):
 * an active organization with the default plan and its first API key.
 */
export const createOrganization = (env: Record<string, string>, name: string): Promise<OrgCreated> =>
  runAdmin(env, Effect.gen(function* () {
    const organizations = yield* Organizations
    const organization = yield* organizations.create({ name, plan: {}, subscription: "active" })
    const issued = yield* organizations.issueApiKey(organization.id)
    return { org_id: organization.id, key_id: issued.key_id, api_key: issued.api_key }
  }))

/** Runs the admin CLI with `args` and waits for it to exit. */
export const runCli = (args: ReadonlyArray<string>, env: Record<string, string>): Promise<CommandResult> =>
  runToExit(spawn(process.execPath, [CLI_PATH, ...args], { env: childEnvironment(env) }))

/**
 * Collects what `child` prints and resolves with it and its exit code once it has exited
 * and its output is closed; `killAfterMs` kills it with SIGKILL when it runs longer.
 */
export const runToExit = (child: ChildProcess, killAfterMs?: number): Promise<CommandResult> =>
  new Promise((resolve, reject) => {
    let stdout = ""
    let stderr = ""
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    const timer = killAfterMs === undefined ? undefined : setTimeout(() => child.kill("SIGKILL"), killAfterMs)
    child.once("error", reject)
    child.once("close", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })

/** Runs the admin CLI and parses its stdout as JSON; fails with its stderr otherwise. */
export const runCliJson = async <A = unknown>(args: ReadonlyArray<string>, env: Record<string, string>): Promise<A> => {
  const result = await runCli(args, env)
  if (result.code !== 0) throw new Error(`cli ${args.join(" ")} exited ${result.code}: ${result.stderr}`)
  return JSON.parse(result.stdout) as A
}

/** A running server process. */
export interface RunningServer {
  readonly child: ChildProcess
  /** `http://127.0.0.1:PORT/api/v1/api`, from the "listening" line. */
  readonly baseUrl: string
  /** Everything printed so far. */
  readonly output: () => { readonly stdout: string; readonly stderr: string }
  /** Resolves with the exit code (or signal name) when the process ends. */
  readonly exited: Promise<number | string | null>
}

/** Every server started by {@link startServer}, for {@link killServers}. */
const servers = new Set<ChildProcess>()

/**
 * Starts the built server with `PORT=0` and waits for its "listening" line on stderr
 * (at most 25 s: a loaded 2-core machine took more than 10 s); rejects with what it printed
 * when it exits first.
 */
export const startServer = (env: Record<string, string>): Promise<RunningServer> => {
  const child = spawn(process.execPath, [SERVER_PATH], {
    env: childEnvironment({ HOST: "127.0.0.1", PORT: "0", ...env })
  })
  servers.add(child)
  let stdout = ""
  let stderr = ""
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
  const exited = new Promise<number | string | null>((resolve) =>
    child.once("exit", (code, signal) => {
      servers.delete(child)
      resolve(code ?? signal)
    })
  )
  const output = () => ({ stdout, stderr })
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start within 25 s: ${stderr}`)), 25_000)
    const onData = (): void => {
      const listening = /Switchboard listening on (http:\/\/\S+)/.exec(stderr)
      if (listening?.[1] === undefined) return
      clearTimeout(timer)
      child.stderr.off("data", onData)
      resolve({ child, baseUrl: listening[1], output, exited })
    }
    child.stderr.on("data", onData)
    void exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`server exited (${code}) before listening: ${stderr}`))
    })
  })
}

/** Kills every server still running (for `afterEach`). */
export const killServers = (): void => {
  for (const child of servers) child.kill("SIGKILL")
  servers.clear()
}

/**
 * Runs the built server with `env` until it exits on its own (a configuration error, for
 * example), killing it after 10 s.
 */
export const runServerToExit = (env: Record<string, string>): Promise<CommandResult> => {
  const child = spawn(process.execPath, [SERVER_PATH], { env: childEnvironment(env) })
  servers.add(child)
  return runToExit(child, 10_000).finally(() => servers.delete(child))
}

/** What {@link organizationWithChannel} needs: the simulator, the channel and what the organization starts with. */
export interface ChannelSetup {
  readonly simulatorUrl: string
  readonly phoneNumberId: string
  readonly token: string
  readonly throughputMps: number
  readonly templates?: ReadonlyArray<Record<string, unknown>>
  readonly contactsLimit?: number
  readonly extraEnv?: Record<string, string>
}

/**
 * A fresh store (`store`, default a SQLite file; `postgres`: a new schema, see
 * {@link temporaryDatabaseEnv}) for the tests that play Meta with the WhatsApp simulator at
 * `simulatorUrl`: one organization (`contactsLimit` when given), its API key, one channel
 * (`phoneNumberId`, `token`, `throughputMps`) and the approved `templates`, all written
 * through the admin CLI's set-up in this process ({@link runAdmin}: what `org create`,
 * `channel add` and `import` do, without three CLI processes). `env` is the server's and the
 * CLI's environment (`extraEnv` added);
 * `filename` the SQLite file (none on PostgreSQL).
 */
export async function organizationWithChannel(options: ChannelSetup & { readonly store?: "sqlite" }): Promise<{ env: Record<string, string>; apiKey: string; filename: string }>
export async function organizationWithChannel(options: ChannelSetup & { readonly store: TestStore }): Promise<{ env: Record<string, string>; apiKey: string; filename: string | undefined }>
export async function organizationWithChannel(
  options: ChannelSetup & { readonly store?: TestStore }
): Promise<{ env: Record<string, string>; apiKey: string; filename: string | undefined }> {
  const database = temporaryDatabaseEnv(options.store ?? "sqlite")
  const env = { ...database, WHATSAPP_API_BASE_URL: options.simulatorUrl, ...options.extraEnv }
  const { api_key } = await runAdmin(env, Effect.gen(function* () {
    const organizations = yield* Organizations
    const organization = yield* organizations.create({
      name: "Acme",
      plan: options.contactsLimit === undefined ? {} : { contacts_limit: options.contactsLimit },
      subscription: "active"
    })
    const issued = yield* organizations.issueApiKey(organization.id)
    yield* (yield* Channels).add(organization.id, {
      phone_number_id: options.phoneNumberId,
      waba_id: "102290129340398",
      access_token: options.token,
      throughput_mps: options.throughputMps
    })
    if (options.templates !== undefined && options.templates.length > 0) {
      yield* (yield* Imports).importDocument(organization.id, { templates: options.templates })
    }
    return issued
  }))
  const databaseUrl = database.DATABASE_URL!
  return { env, apiKey: api_key, filename: databaseUrl.startsWith("sqlite:") ? databaseUrl.slice("sqlite:".length) : undefined }
}

/**
 * Polls `condition` every `intervalMs` (default 10) until it holds; fails after `timeoutMs`
 * naming `what`.
 */
export const until = async (
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs: number,
  intervalMs = 10
): Promise<void> => {
  const deadline = performance.now() + timeoutMs
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, intervalMs))
  }
}

/** An answer of the API: HTTP status, headers and the parsed JSON envelope (undefined when not JSON). */
export interface ApiAnswer {
  readonly status: number
  readonly headers: Headers
  readonly json: any
}

/**
 * `method path` on the server at `baseUrl` with the organization's `apiKey`; `body` is sent
 * as JSON, or as it is when it is `FormData`.
 */
export const api = async (baseUrl: string, apiKey: string, method: string, path: string, body?: unknown): Promise<ApiAnswer> => {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${apiKey}`, ...(body === undefined || body instanceof FormData ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: body instanceof FormData ? body : JSON.stringify(body) })
  })
  const text = await response.text()
  return { status: response.status, headers: response.headers, json: response.headers.get("content-type")?.includes("json") === true ? JSON.parse(text) : undefined }
}

/**
 * A send's answer as its inline attempt gives it when on time for its pacing slot: `answer`
 * itself, or, when it is the send queue's hand-back (200 "Message queued", status `queued`,
 * no failure: the attempt in the request reached the transport too late after its pacing
 * slot on a busy machine and went back to the queue unattempted, docs/messaging.md "The
 * send queue"), the answer once the dispatcher sent it: polls `GET /messages/{id}` on the
 * server at `baseUrl` (every 50 ms, at most `waitMs`, default 10 000) until the message is
 * neither `queued` nor `sending`, then answers its `status`, `provider_message_id`,
 * `next_attempt_at`, `failure` and `transport` in `data`, and "Message sent" when it was
 * sent. So the Graph API has the call either way when this returns; throws when the message
 * is still unsettled after `waitMs`. A send waiting behind another to the same recipient
 * answers like the hand-back: ask this only of a send the inline attempt would take.
 */
export const settledSend = async <A extends { readonly status: number; readonly json: any }>(
  baseUrl: string,
  apiKey: string,
  answer: A,
  waitMs = 10_000
): Promise<A> => {
  const envelope = answer.json
  const handedBack = answer.status === 200 && envelope?.message === "Message queued" && envelope?.data?.status === "queued" &&
    envelope?.data?.failure == null
  if (!handedBack) return answer
  const id: string = envelope.data.message_id
  const deadline = Date.now() + waitMs
  for (;;) {
    const found = await api(baseUrl, apiKey, "GET", `/messages/${id}`)
    const message = found.json?.data as Record<string, any> | undefined
    if (message !== undefined && message.status !== "queued" && message.status !== "sending") {
      const data: Record<string, unknown> = { ...envelope.data }
      for (const key of ["status", "provider_message_id", "next_attempt_at", "failure", "transport"]) {
        if (key in data) data[key] = message[key]
      }
      return { ...answer, json: { ...envelope, message: message.status === "sent" ? "Message sent" : envelope.message, data } }
    }
    if (Date.now() > deadline) throw new Error(`message ${id}, handed back for a new pacing slot, was not settled within ${waitMs} ms: ${found.status} ${JSON.stringify(found.json)}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** `GET /media/{uuid}/content` (with `headers`, a `Range` for example): status, headers and the body's bytes. */
export const mediaContent = async (baseUrl: string, apiKey: string, uuid: string, headers: Record<string, string> = {}) => {
  const response = await fetch(`${baseUrl}/media/${uuid}/content`, { headers: { authorization: `Bearer ${apiKey}`, ...headers } })
  return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) }
}

/** A PDF of `size` bytes: a PDF header, then random bytes (what `POST /media` sniffs as `application/pdf`). */
export const pdfBytes = (size: number): Buffer => {
  const header = Buffer.from("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "latin1")
  return Buffer.concat([header, randomBytes(size - header.length)])
}

/** The SHA-256 of `bytes`, lowercase hex (as media records carry it). */
export const sha256Hex = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex")

/** Every file under `directory` (dot directories included), as paths relative to it, sorted; none when it is missing. */
export const filesUnder = (directory: string): Array<string> =>
  existsSync(directory)
    ? readdirSync(directory, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => relative(directory, join(entry.parentPath, entry.name)))
      .sort()
    : []

/** An S3-compatible server started by {@link startS3rver}: its endpoint and how to stop it. */
export interface S3Server {
  readonly endpoint: string
  readonly close: () => Promise<void>
}

/**
 * Starts s3rver in this process on a free port of 127.0.0.1 with the bucket `bucket`, its
 * files in a {@link temporaryDirectory} (close it before removing those); answers why when
 * it cannot start here.
 */
export const startS3rver = async (bucket: string): Promise<S3Server | { readonly reason: string }> => {
  try {
    const { default: S3rver } = await import("s3rver")
    const server = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory: temporaryDirectory(), configureBuckets: [{ name: bucket, configs: [] }] })
    const { port } = await server.run()
    return { endpoint: `http://127.0.0.1:${port}`, close: () => server.close() }
  } catch (cause) {
    return { reason: `s3rver could not start here (${(cause as Error).message})` }
  }
}

/**
 * The WhatsApp simulator playing Meta for one number (`phoneNumberId`, its `token`), signing
 * its webhooks with `appSecret`, sending no status notifications of its own (the media tests).
 */
export const startOneNumberSimulator = (options: { readonly phoneNumberId: string; readonly token: string; readonly appSecret: string }): Promise<WhatsAppSimulator> =>
  startSimulator({
    numbers: [{ phone_number_id: options.phoneNumberId, display_phone_number: "+1 555-078-3881", waba_id: "102290129340398", access_token: options.token }],
    appSecret: options.appSecret,
    statuses: []
  })

/** One delivery a {@link startWebhookReceiver} got: the raw body and the headers. */
export interface ReceivedDelivery {
  readonly body: string
  readonly headers: Record<string, string>
}

/**
 * A local webhook receiver on 127.0.0.1 answering 204 to every request: its `url`
 * (`http://127.0.0.1:<port>/hooks`), each delivery pushed to `received` in arrival order,
 * and `close()`.
 */
export const startWebhookReceiver = async (received: Array<ReceivedDelivery> = []) => {
  const server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      received.push({ body: Buffer.concat(chunks).toString("utf8"), headers: request.headers as Record<string, string> })
      response.writeHead(204).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    received,
    close: async (): Promise<void> => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  }
}

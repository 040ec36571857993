import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import {
  assertBuilt,
  killServers,
  removeTemporaryDirectories,
  createOrganization,
  runCliJson,
  databases,
  dropTemporarySchemas,
  startServer,
  temporaryDatabaseEnv,
  type RunningServer,
  type OrgCreated
} from "./helpers.js"

interface Reply {
  readonly status: number
  readonly body: { status: number; success: boolean; data: { pagination?: { total: number } } | null; errors: Array<{ code: string }> }
}

beforeAll(assertBuilt)
afterEach(killServers)
afterAll(async () => {
  killServers()
  removeTemporaryDirectories()
  await dropTemporarySchemas()
})

const call = async (server: RunningServer, apiKey: string, method: string, path: string, body?: unknown): Promise<Reply> => {
  const response = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${apiKey}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const reply = { status: response.status, body: (await response.json()) as Reply["body"] }
  expect(reply.body.status).toBe(reply.status)
  return reply
}

/** `count` import rows with distinct, valid phones starting at `from`. */
const rows = (from: number, count: number) =>
  Array.from({ length: count }, (_, index) => ({ first_name: `P${from + index}`, phone: `+3161${String(from + index).padStart(7, "0")}` }))

const statusCounts = (replies: ReadonlyArray<Reply>) =>
  replies.reduce<Record<number, number>>((counts, { status }) => ({ ...counts, [status]: (counts[status] ?? 0) + 1 }), {})

describe.each(databases())("plan limits across two server processes on one %s database (docs/storage.md 'What each guarantees')", (store) => {
  it("never stores more than contacts_limit or label_limit, whichever process answers", async () => {
    const env = temporaryDatabaseEnv(store)
    const org = await runCliJson<OrgCreated>(
      ["org", "create", "--name", "Limited", "--contacts-limit", "50", "--label-limit", "5"],
      env
    )
    const servers = await Promise.all([startServer(env), startServer(env)])
    const serverFor = (n: number) => servers[n % 2] as RunningServer

    // 40 imports of 5 new contacts each (200 phones) for 50 slots: exactly 10 fit.
    const imports = await Promise.all(
      Array.from({ length: 40 }, (_, n) => call(serverFor(n), org.api_key, "POST", "/contacts/bulk", { contacts: rows(n * 5, 5) }))
    )
    expect(statusCounts(imports)).toEqual({ 200: 10, 403: 30 })
    for (const reply of imports.filter(({ status }) => status === 403)) {
      expect(reply.body.errors.map((error) => error.code)).toEqual(["contacts_limit_reached"])
    }
    for (const server of servers) {
      expect((await call(server, org.api_key, "GET", "/contacts")).body.data?.pagination?.total).toBe(50)
    }

    // 20 label creates with distinct names for 5 slots: exactly 5 fit.
    const labels = await Promise.all(
      Array.from({ length: 20 }, (_, n) => call(serverFor(n), org.api_key, "POST", "/labels", { name: `Label ${n}` }))
    )
    expect(statusCounts(labels)).toEqual({ 200: 5, 403: 15 })
    for (const reply of labels.filter(({ status }) => status === 403)) {
      expect(reply.body.errors.map((error) => error.code)).toEqual(["label_limit_reached"])
    }
    for (const server of servers) {
      expect((await call(server, org.api_key, "GET", "/labels")).body.data?.pagination?.total).toBe(5)
    }
    for (const server of servers) expect(server.output().stderr).not.toMatch(/"status":500|StorageError|SQLITE_BUSY|deadlock/)
  })

  it("one new label name created at both processes at once is stored once", async () => {
    const env = temporaryDatabaseEnv(store)
    const org = await createOrganization(env, "Names")
    const servers = await Promise.all([startServer(env), startServer(env)])
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, n) => call(servers[n % 2] as RunningServer, org.api_key, "POST", "/labels", { name: n % 2 ? "Same" : "SAME " }))
    )
    expect(statusCounts(replies)).toEqual({ 200: 1, 400: 19 })
    for (const reply of replies.filter(({ status }) => status === 400)) {
      expect(reply.body.errors.map((error) => error.code)).toEqual(["label_name_taken"])
    }
    expect((await call(servers[0] as RunningServer, org.api_key, "GET", "/labels")).body.data?.pagination?.total).toBe(1)
  })
})

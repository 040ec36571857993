import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import {
  assertBuilt,
  killServers,
  removeTemporaryDirectories,
  runCliJson,
  startServer,
  databases,
  dropTemporarySchemas,
  temporaryDatabaseEnv,
  type RunningServer
} from "./helpers.js"

/**
 * `Idempotency-Key` across two server processes on one SQLite file (docs/messaging.md
 * "Idempotency-Key"): the claim is atomic in the store, so a send retried concurrently
 * against both processes goes out once.
 */
beforeAll(assertBuilt)
afterEach(killServers)
afterAll(async () => {
  killServers()
  removeTemporaryDirectories()
  await dropTemporarySchemas()
})

interface Reply {
  readonly status: number
  readonly replayed: boolean
  readonly body: { status: number; data: { message_id?: string; chats?: Array<unknown> } | null; errors: Array<{ code: string }> }
}

const call = async (server: RunningServer, apiKey: string, method: string, path: string, body?: unknown, key?: string) => {
  const response = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${apiKey}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...(key === undefined ? {} : { "idempotency-key": key })
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const reply: Reply = {
    status: response.status,
    replayed: response.headers.get("idempotent-replayed") === "true",
    body: (await response.json()) as Reply["body"]
  }
  expect(reply.body.status).toBe(reply.status)
  return reply
}

describe.each(databases())("Idempotency-Key across two server processes on one %s database", (store) => {
  it("20 concurrent identical sends with one key create exactly one message", async () => {
    const env = temporaryDatabaseEnv(store)
    const org = await runCliJson<{ api_key: string }>(["org", "create", "--name", "Acme"], env)
    const servers = await Promise.all([startServer(env), startServer(env)])
    const body = { phone: "+31612345678", message: "Your order shipped" }
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, n) => call(servers[n % 2] as RunningServer, org.api_key, "POST", "/send", body, "order-42"))
    )
    const fresh = replies.filter((reply) => reply.status === 200 && !reply.replayed)
    const replayed = replies.filter((reply) => reply.status === 200 && reply.replayed)
    const inProgress = replies.filter((reply) => reply.status === 409)
    expect(fresh).toHaveLength(1)
    expect(replayed.length + inProgress.length).toBe(19)
    for (const reply of inProgress) expect(reply.body.errors.map((error) => error.code)).toEqual(["idempotency_key_in_progress"])
    const messageId = fresh[0]?.body.data?.message_id
    for (const reply of replayed) expect(reply.body.data?.message_id).toBe(messageId)

    // Afterwards every retry, on either process, is a replay; the chat holds one message.
    for (const server of servers) {
      const again = await call(server, org.api_key, "POST", "/send", body, "order-42")
      expect(again.replayed).toBe(true)
      expect(again.body.data?.message_id).toBe(messageId)
    }
    const chats = await call(servers[0] as RunningServer, org.api_key, "GET", "/chats")
    expect(chats.body.data?.chats).toHaveLength(1)
    expect(chats.body.data?.chats?.[0]).toMatchObject({ last_message: { uuid: messageId } })
  })
})

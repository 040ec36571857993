import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import {
  assertBuilt,
  databases,
  dropTemporarySchemas,
  killServers,
  removeTemporaryDirectories,
  runCli,
  runCliJson,
  startServer,
  temporaryDatabaseEnv,
  until,
  type RunningServer,
  type OrgCreated
} from "./helpers.js"

// `key rotate` with an overlap (docs/standalone-server.md "Rotating an API key"): the old key
// works until its `expires_at` and is refused (401, as a revoked key) from that instant by
// every server process on the store; the new key works throughout.

interface Rotated {
  readonly key_id: string
  readonly api_key: string
  readonly previous_key_id: string
  readonly previous_expires_at: string
}

/** One `GET /verify` with `apiKey`: its status and when it was sent and answered (epoch ms). */
const verify = async (server: RunningServer, apiKey: string) => {
  const sentAt = Date.now()
  const response = await fetch(`${server.baseUrl}/verify`, { headers: { authorization: `Bearer ${apiKey}` } })
  const body = (await response.json()) as { readonly errors: ReadonlyArray<{ readonly code: string; readonly message: string }> }
  return { status: response.status, body, sentAt, answeredAt: Date.now() }
}

beforeAll(assertBuilt)
afterEach(killServers)
afterAll(async () => {
  killServers()
  removeTemporaryDirectories()
  await dropTemporarySchemas()
})

describe.each(databases())("key rotate on two server processes (%s)", (store) => {
  it("the old key answers 200 until its expires_at and 401 from then on in both processes, exactly as a revoked key; the new key 200 throughout", { timeout: 90_000 }, async () => {
    const env = temporaryDatabaseEnv(store)
    const acme = await runCliJson<OrgCreated>(["org", "create", "--name", "Acme"], env)
    const revoked = await runCliJson<{ key_id: string; api_key: string }>(["key", "create", "--org", acme.org_id], env)
    await runCliJson(["key", "revoke", "--key", revoked.key_id], env)
    const servers = [await startServer(env), await startServer(env)]
    // Both processes have the old key's credential before the rotation (SQLite: cached).
    for (const server of servers) expect((await verify(server, acme.api_key)).status).toBe(200)

    const rotation = await runCli(["key", "rotate", "--key", acme.key_id, "--expires-in", "2s"], env)
    expect(rotation.code).toBe(0)
    const rotated = JSON.parse(rotation.stdout) as Rotated
    expect(Object.keys(rotated)).toEqual(["key_id", "api_key", "previous_key_id", "previous_expires_at"])
    expect(rotated.previous_key_id).toBe(acme.key_id)
    expect(rotation.stderr).not.toContain(rotated.api_key)
    const expiresAt = Date.parse(rotated.previous_expires_at)

    // Ask both processes with both keys until each has refused the old key after expires_at.
    const answers: Array<Awaited<ReturnType<typeof verify>> & { readonly key: "old" | "new" }> = []
    const refusedAfterExpiry = new Set<RunningServer>()
    await until(
      async () => {
        for (const server of servers) {
          const old = await verify(server, acme.api_key)
          const fresh = await verify(server, rotated.api_key)
          answers.push({ ...old, key: "old" }, { ...fresh, key: "new" })
          if (old.sentAt >= expiresAt && old.status === 401) refusedAfterExpiry.add(server)
        }
        return refusedAfterExpiry.size === servers.length
      },
      "both processes to refuse the old key after its expires_at",
      60_000,
      50
    )
    for (const answer of answers) {
      if (answer.key === "new") expect(answer.status).toBe(200)
      else if (answer.answeredAt < expiresAt) expect(answer.status).toBe(200)
      else if (answer.sentAt >= expiresAt) expect(answer.status).toBe(401)
    }
    // Refused exactly as the revoked key: same status, code and message.
    const expired = await verify(servers[1]!, acme.api_key)
    const revokedAnswer = await verify(servers[1]!, revoked.api_key)
    expect(expired.status).toBe(401)
    expect(expired.body).toEqual(revokedAnswer.body)
    expect(expired.body.errors[0]?.code).toBe("invalid_api_key")

    // `key list` shows the expiry, the revocation and the new key; no key or hash.
    const listing = await runCli(["key", "list", "--org", acme.org_id], env)
    expect(JSON.parse(listing.stdout)).toEqual([
      expect.objectContaining({ key_id: acme.key_id, expires_at: rotated.previous_expires_at, revoked_at: null }),
      expect.objectContaining({ key_id: revoked.key_id, expires_at: null, revoked_at: expect.any(String) }),
      expect.objectContaining({ key_id: rotated.key_id, expires_at: null, revoked_at: null })
    ])
    for (const secret of [acme.api_key, revoked.api_key, rotated.api_key]) {
      expect(listing.stdout + listing.stderr).not.toContain(secret)
      for (const server of servers) expect(server.output().stdout + server.output().stderr).not.toContain(secret)
    }
  })
})

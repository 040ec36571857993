import { existsSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, it } from "vitest"
import { assertBuilt, removeTemporaryDirectories, runCli, runCliJson, temporaryDatabaseUrl, temporaryDirectory, type OrgCreated } from "./helpers.js"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const MISSING_ID = "0190a4d0-0000-7000-8000-000000000000"

/** The environment of one test: a fresh SQLite file (tests run concurrently). */
const freshDatabase = (): Record<string, string> => ({ DATABASE_URL: temporaryDatabaseUrl() })

beforeAll(assertBuilt)
afterAll(removeTemporaryDirectories)

describe.concurrent("org create", () => {
  it("prints {org_id, key_id, api_key} as JSON, and on stderr only the database it opened", async ({ expect }) => {
    const env = freshDatabase()
    await runCliJson(["org", "list"], env)
    const result = await runCli(["org", "create", "--name", "Acme"], env)
    expect(result).toMatchObject({ code: 0, stderr: `Database: ${env.DATABASE_URL}\n` })
    const created = JSON.parse(result.stdout) as OrgCreated
    expect(Object.keys(created)).toEqual(["org_id", "key_id", "api_key"])
    expect(created.org_id).toMatch(UUID)
    expect(created.key_id).toMatch(UUID)
    expect(created.api_key).toMatch(/^sb_[A-Za-z0-9_-]{43}$/)
  })

  it("applies the plan and subscription flags", async ({ expect }) => {
    const env = freshDatabase()
    await runCliJson(
      ["org", "create", "--name", "Small", "--contacts-limit", "10", "--label-limit", "0", "--media-bytes-limit", "1048576", "--no-api-access", "--inactive"],
      env
    )
    expect(await runCliJson(["org", "list"], env)).toMatchObject([
      {
        name: "Small",
        plan: { contacts_limit: 10, label_limit: 0, media_bytes_limit: 1048576, api_access: false },
        subscription: "inactive"
      }
    ])
  })

  it("resolves a relative sqlite: path against INIT_CWD and creates its directory", async ({ expect }) => {
    const base = temporaryDirectory()
    await runCliJson(["org", "create", "--name", "Here"], { DATABASE_URL: "sqlite:nested/admin.db", INIT_CWD: base })
    expect(existsSync(join(base, "nested", "admin.db"))).toBe(true)
  })
})

describe.concurrent("bad arguments", () => {
  it.for([
    ["org create without --name", ["org", "create"]],
    ["a negative limit", ["org", "create", "--name", "X", "--contacts-limit", "-1"]],
    ["a fractional limit", ["org", "create", "--name", "X", "--contacts-limit", "1.5"]],
    ["a non-numeric limit", ["org", "create", "--name", "X", "--label-limit", "ten"]],
    ["a fractional media bytes limit", ["org", "create", "--name", "X", "--media-bytes-limit", "1.5"]],
    ["an unknown option", ["org", "create", "--name", "X", "--plan", "gold"]],
    ["an extra argument", ["org", "create", "--name", "X", "extra"]],
    ["an empty name", ["org", "create", "--name", "   "]],
    ["a malformed organization id", ["org", "update", "--id", "acme", "--name", "Y"]],
    ["an update without changes", ["org", "update", "--id", MISSING_ID]],
    ["--active with --inactive", ["org", "update", "--id", MISSING_ID, "--active", "--inactive"]],
    ["key create without --org", ["key", "create"]],
    ["a malformed key id", ["key", "revoke", "--key", "sb_abc"]],
    ["key rotate without --key", ["key", "rotate"]],
    ["key list without --org", ["key", "list"]],
    ["a duration without a unit", ["key", "rotate", "--key", MISSING_ID, "--expires-in", "90"]],
    ["a fractional duration", ["key", "rotate", "--key", MISSING_ID, "--expires-in", "1.5h"]],
    ["a negative duration", ["key", "rotate", "--key", MISSING_ID, "--expires-in", "-5m"]],
    ["an unknown duration unit", ["key", "rotate", "--key", MISSING_ID, "--expires-in", "2w"]],
    ["a compound duration", ["key", "rotate", "--key", MISSING_ID, "--expires-in", "1h30m"]],
    ["a duration longer than 7 days", ["key", "rotate", "--key", MISSING_ID, "--expires-in", "8d"]],
    ["an unknown command", ["organisation", "list"]]
  ] as const)("%s → stderr, non-zero exit, nothing written", async ([_case, args], { expect }) => {
    const env = freshDatabase()
    const result = await runCli(args, env)
    expect(result.code).not.toBe(0)
    expect(result.stdout).toBe("")
    expect(result.stderr).toMatch(/^error: /m)
    expect(await runCliJson(["org", "list"], env)).toEqual([])
  })

  it("refuses memory: with a clear error", async ({ expect }) => {
    const result = await runCli(["org", "list"], { DATABASE_URL: "memory:" })
    expect(result).toMatchObject({ code: 1, stdout: "" })
    expect(result.stderr).toContain("memory: storage lives only inside a server process; use sqlite:")
  })

  it("fails with a clear error for an unreachable MongoDB server and for invalid URLs", async ({ expect }) => {
    // The CLI shares the server's storage configuration: mongodb:// works, and a server
    // that cannot be reached (nothing listens on port 9) is a clear error without the password.
    const mongo = await runCli(["org", "list"], { DATABASE_URL: "mongodb://user:secret@127.0.0.1:9/db?serverSelectionTimeoutMS=300" })
    expect(mongo).toMatchObject({ code: 1, stdout: "" })
    expect(mongo.stderr).toContain("DATABASE_URL mongodb://127.0.0.1:9/db?serverSelectionTimeoutMS=300: cannot reach the MongoDB server")
    expect(mongo.stderr).not.toContain("secret")
    const invalid = await runCli(["org", "list"], { DATABASE_URL: "switchboard.db" })
    expect(invalid).toMatchObject({ code: 1, stdout: "" })
    expect(invalid.stderr).toContain("DATABASE_URL must be sqlite:PATH, memory:, postgres://… or mongodb://…")
  })
})

describe.concurrent("org update and org list", () => {
  it("updates the given fields only and prints {org_id, name, plan, subscription}", async ({ expect }) => {
    const env = freshDatabase()
    const { org_id } = await runCliJson<OrgCreated>(["org", "create", "--name", "Acme", "--label-limit", "5"], env)
    const updated = await runCliJson(
      ["org", "update", "--id", org_id, "--name", "Acme Ltd", "--contacts-limit", "100", "--media-bytes-limit", "5000000", "--no-api-access", "--inactive"],
      env
    )
    expect(updated).toEqual({
      org_id,
      name: "Acme Ltd",
      plan: { contacts_limit: 100, label_limit: 5, media_bytes_limit: 5000000, api_access: false },
      subscription: "inactive"
    })
    const restored = await runCliJson(
      ["org", "update", "--id", org_id, "--contacts-limit", "unlimited", "--media-bytes-limit", "unlimited", "--api-access", "--active"],
      env
    )
    expect(restored).toEqual({
      org_id,
      name: "Acme Ltd",
      plan: { contacts_limit: null, label_limit: 5, media_bytes_limit: null, api_access: true },
      subscription: "active"
    })
  })

  it("fails with exit code 1 for an unknown organization", async ({ expect }) => {
    const env = freshDatabase()
    const result = await runCli(["org", "update", "--id", MISSING_ID, "--name", "Nobody"], env)
    expect(result).toMatchObject({ code: 1, stdout: "" })
    expect(result.stderr).toMatch(new RegExp(`^Database: .+\\nerror: Organization ${MISSING_ID} not found\\n$`, "s"))
  })

  it("lists every organization oldest first, never their keys", async ({ expect }) => {
    const env = freshDatabase()
    const first = await runCliJson<OrgCreated>(["org", "create", "--name", "First"], env)
    const second = await runCliJson<OrgCreated>(["org", "create", "--name", "Second", "--inactive"], env)
    const result = await runCli(["org", "list"], env)
    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout)).toEqual([
      {
        org_id: first.org_id,
        name: "First",
        plan: { contacts_limit: null, label_limit: null, media_bytes_limit: null, api_access: true },
        subscription: "active"
      },
      {
        org_id: second.org_id,
        name: "Second",
        plan: { contacts_limit: null, label_limit: null, media_bytes_limit: null, api_access: true },
        subscription: "inactive"
      }
    ])
    for (const secret of [first.api_key, second.api_key, "api_key", "hash", "key_id"]) {
      expect(result.stdout).not.toContain(secret)
    }
  })
})

describe.concurrent("key create and key revoke", () => {
  it("issues a new key for an organization", async ({ expect }) => {
    const env = freshDatabase()
    const { org_id, api_key } = await runCliJson<OrgCreated>(["org", "create", "--name", "Acme"], env)
    const issued = await runCliJson<Record<string, string>>(["key", "create", "--org", org_id], env)
    expect(Object.keys(issued)).toEqual(["key_id", "api_key"])
    expect(issued["key_id"]).toMatch(UUID)
    expect(issued["api_key"]).toMatch(/^sb_/)
    expect(issued["api_key"]).not.toBe(api_key)
  })

  it("revokes a key and prints {key_id, revoked_at}; revoking again keeps the first time", async ({ expect }) => {
    const env = freshDatabase()
    const { key_id } = await runCliJson<OrgCreated>(["org", "create", "--name", "Acme"], env)
    const revoked = await runCliJson<Record<string, string>>(["key", "revoke", "--key", key_id], env)
    expect(revoked).toEqual({ key_id, revoked_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/) })
    expect(await runCliJson(["key", "revoke", "--key", key_id], env)).toEqual(revoked)
  })

  it("fails with exit code 1 for an unknown organization or key", async ({ expect }) => {
    const env = freshDatabase()
    const key = await runCli(["key", "create", "--org", MISSING_ID], env)
    expect(key).toMatchObject({ code: 1, stdout: "" })
    expect(key.stderr).toMatch(new RegExp(`^Database: .+\\nerror: Organization ${MISSING_ID} not found\\n$`, "s"))
    const revoke = await runCli(["key", "revoke", "--key", MISSING_ID], env)
    expect(revoke).toMatchObject({ code: 1, stdout: "", stderr: `Database: ${env.DATABASE_URL}\nerror: API key ${MISSING_ID} not found\n` })
  })
})

describe.concurrent("key rotate and key list", () => {
  const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

  it("rotates with a 24 h overlap by default and prints the new key and the old key's expires_at, never on stderr", async ({ expect }) => {
    const env = freshDatabase()
    const { org_id, key_id, api_key } = await runCliJson<OrgCreated>(["org", "create", "--name", "Acme"], env)
    const before = Date.now()
    const result = await runCli(["key", "rotate", "--key", key_id], env)
    const after = Date.now()
    expect(result).toMatchObject({ code: 0, stderr: `Database: ${env.DATABASE_URL}\n` })
    const rotated = JSON.parse(result.stdout) as Record<string, string>
    expect(Object.keys(rotated)).toEqual(["key_id", "api_key", "previous_key_id", "previous_expires_at"])
    expect(rotated["key_id"]).toMatch(UUID)
    expect(rotated["api_key"]).toMatch(/^sb_[A-Za-z0-9_-]{43}$/)
    expect(rotated["api_key"]).not.toBe(api_key)
    expect(rotated["previous_key_id"]).toBe(key_id)
    expect(rotated["previous_expires_at"]).toMatch(ISO)
    const expiresAt = Date.parse(rotated["previous_expires_at"]!)
    expect(expiresAt).toBeGreaterThanOrEqual(before + 86_400_000 - 1)
    expect(expiresAt).toBeLessThanOrEqual(after + 86_400_000)

    const listing = await runCli(["key", "list", "--org", org_id], env)
    expect(listing.code).toBe(0)
    expect(JSON.parse(listing.stdout)).toEqual([
      { key_id, prefix: api_key.slice(0, 11), created_at: expect.stringMatching(ISO), expires_at: rotated["previous_expires_at"], revoked_at: null },
      { key_id: rotated["key_id"], prefix: rotated["api_key"]!.slice(0, 11), created_at: expect.stringMatching(ISO), expires_at: null, revoked_at: null }
    ])
    for (const secret of [api_key, rotated["api_key"]!, "hash"]) expect(listing.stdout + listing.stderr).not.toContain(secret)
  })

  it("takes --expires-in in s, m, h or d; a second rotation of the old key keeps its earlier expiry", async ({ expect }) => {
    const env = freshDatabase()
    const { org_id, key_id } = await runCliJson<OrgCreated>(["org", "create", "--name", "Acme"], env)
    const before = Date.now()
    const first = await runCliJson<Record<string, string>>(["key", "rotate", "--key", key_id, "--expires-in", "15m"], env)
    const expiresAt = Date.parse(first["previous_expires_at"]!)
    expect(expiresAt).toBeGreaterThanOrEqual(before + 900_000 - 1)
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 900_000)
    const second = await runCliJson<Record<string, string>>(["key", "rotate", "--key", key_id, "--expires-in", "7d"], env)
    expect(second["previous_expires_at"]).toBe(first["previous_expires_at"])
    const keys = await runCliJson<Array<Record<string, unknown>>>(["key", "list", "--org", org_id], env)
    expect(keys.map((key) => key["key_id"])).toEqual([key_id, first["key_id"], second["key_id"]])
  })

  it("refuses a revoked or unknown key with exit code 1 and writes nothing", async ({ expect }) => {
    const env = freshDatabase()
    const { org_id, key_id } = await runCliJson<OrgCreated>(["org", "create", "--name", "Acme"], env)
    await runCliJson(["key", "revoke", "--key", key_id], env)
    const revoked = await runCli(["key", "rotate", "--key", key_id, "--expires-in", "90s"], env)
    expect(revoked).toMatchObject({
      code: 1,
      stdout: "",
      stderr: `Database: ${env.DATABASE_URL}\nerror: API key ${key_id} is revoked: it cannot be rotated; issue a new key instead\n`
    })
    const unknown = await runCli(["key", "rotate", "--key", MISSING_ID], env)
    expect(unknown).toMatchObject({ code: 1, stdout: "", stderr: `Database: ${env.DATABASE_URL}\nerror: API key ${MISSING_ID} not found\n` })
    expect(await runCliJson<Array<unknown>>(["key", "list", "--org", org_id], env)).toHaveLength(1)
    const noOrganization = await runCli(["key", "list", "--org", MISSING_ID], env)
    expect(noOrganization).toMatchObject({ code: 1, stdout: "" })
    expect(noOrganization.stderr).toContain(`error: Organization ${MISSING_ID} not found`)
  })

  it("a bad --expires-in is a usage error naming the option, before the store is opened", async ({ expect }) => {
    const env = freshDatabase()
    const result = await runCli(["key", "rotate", "--key", MISSING_ID, "--expires-in", "24"], env)
    expect(result).toMatchObject({ code: 1, stdout: "" })
    expect(result.stderr).toContain(
      "error: option '--expires-in <duration>' argument '24' is invalid. It must be a whole number and a unit s, m, h or d, such as 90s, 15m, 24h or 7d."
    )
    expect(result.stderr).not.toContain("Database:")
  })
})

import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, it } from "vitest"
import {
  assertBuilt,
  removeTemporaryDirectories,
  runCli,
  runCliJson,
  startServer,
  killServers,
  temporaryDatabaseUrl,
  temporaryDirectory
} from "./helpers.js"

beforeAll(assertBuilt)
afterAll(() => {
  killServers()
  removeTemporaryDirectories()
})

const writeJson = (value: unknown): string => {
  const path = join(temporaryDirectory(), "import.json")
  writeFileSync(path, typeof value === "string" ? value : JSON.stringify(value))
  return path
}

const document = {
  groups: [{ name: "VIP" }],
  labels: [{ name: "Hot", color: "#FF0000" }],
  contacts: [
    { first_name: "Ada", phone: "+1 415 555 0100", group: ["VIP", "Newsletter"], labels: ["Hot"] },
    { first_name: "Bob", phone: "+14155550101", labels: ["Cold"] }
  ]
}

interface Imported {
  readonly groups: Record<string, string>
  readonly labels: Record<string, string>
  readonly contacts: Record<string, string>
}

describe.concurrent("import --org ID --file F.json (docs/import.md)", () => {
  it("prints the uuids it created, keyed as in the file, and the API serves the data", async ({ expect }) => {
    const env = { DATABASE_URL: temporaryDatabaseUrl() }
    const org = await runCliJson<{ org_id: string; api_key: string }>(["org", "create", "--name", "Acme"], env)
    const result = await runCliJson<Imported>(["import", "--org", org.org_id, "--file", writeJson(document)], env)
    expect(Object.keys(result.groups)).toEqual(["VIP", "Newsletter"])
    expect(Object.keys(result.labels)).toEqual(["Hot", "Cold"])
    expect(Object.keys(result.contacts)).toEqual(["+1 415 555 0100", "+14155550101"])
    const server = await startServer({ ...env, PORT: "0" })
    const response = await fetch(`${server.baseUrl}/contacts/${result.contacts["+1 415 555 0100"]}`, {
      headers: { authorization: `Bearer ${org.api_key}` }
    })
    const body = (await response.json()) as { data: { phone: string; groups: Array<{ name: string }>; labels: Array<{ name: string }> } }
    expect(body.data.phone).toBe("+14155550100")
    expect(body.data.groups.map((group) => group.name)).toEqual(["Newsletter", "VIP"])
    expect(body.data.labels.map((label) => label.name)).toEqual(["Hot"])
  })

  it("matches existing records on a second import", async ({ expect }) => {
    const env = { DATABASE_URL: temporaryDatabaseUrl() }
    const org = await runCliJson<{ org_id: string }>(["org", "create", "--name", "Acme"], env)
    const file = writeJson(document)
    const first = await runCliJson<Imported>(["import", "--org", org.org_id, "--file", file], env)
    const second = await runCliJson<Imported>(["import", "--org", org.org_id, "--file", file], env)
    expect(second).toEqual(first)
  })

  it("writes nothing and exits 1 listing every problem for an invalid file", async ({ expect }) => {
    const env = { DATABASE_URL: temporaryDatabaseUrl() }
    const org = await runCliJson<{ org_id: string }>(["org", "create", "--name", "Acme"], env)
    const invalid = { labels: [{ name: "Hot", color: "red" }], contacts: [{ first_name: "Ada", phone: "12" }] }
    const result = await runCli(["import", "--org", org.org_id, "--file", writeJson(invalid)], env)
    expect(result.code).toBe(1)
    expect(result.stdout).toBe("")
    expect(result.stderr).toContain("color")
    expect(result.stderr).toContain("contacts[0].phone")
    const again = await runCliJson<Imported>(["import", "--org", org.org_id, "--file", writeJson({ labels: [{ name: "Other" }] })], env)
    expect(Object.keys(again.labels)).toEqual(["Other"])
  })

  it("imports chats with their messages; the API lists them; a second run duplicates no message", async ({ expect }) => {
    const env = { DATABASE_URL: temporaryDatabaseUrl() }
    const org = await runCliJson<{ org_id: string; api_key: string }>(["org", "create", "--name", "Acme"], env)
    const withChats = {
      ...document,
      chats: [
        {
          phone: "+1 415 555 0100",
          status: "pending",
          assigned_to: "agent-1",
          favorite: true,
          unread_count: 1,
          created_at: "2026-01-01T00:00:00Z",
          messages: [
            { direction: "inbound", type: "text", text: "Hello", created_at: "2026-01-02T10:00:00Z" },
            { direction: "outbound", type: "text", text: "Hi Ada", created_at: "2026-01-02T10:01:00Z" }
          ]
        },
        { phone: "+14155550142", messages: [{ direction: "inbound", type: "text", text: "New here", created_at: "2026-01-03T09:00:00Z" }] }
      ]
    }
    const file = writeJson(withChats)
    const first = await runCliJson<Imported & { chats: Record<string, string> }>(["import", "--org", org.org_id, "--file", file], env)
    expect(Object.keys(first.chats)).toEqual(["+1 415 555 0100", "+14155550142"])
    const second = await runCliJson<Imported & { chats: Record<string, string> }>(["import", "--org", org.org_id, "--file", file], env)
    expect(second).toEqual(first)
    const server = await startServer({ ...env, PORT: "0" })
    const response = await fetch(`${server.baseUrl}/chats?status=pending`, { headers: { authorization: `Bearer ${org.api_key}` } })
    const body = (await response.json()) as {
      data: { chats: Array<{ uuid: string; assigned_to: string; favorite: boolean; unread_count: number; groups: Array<{ name: string }>; last_message: { text: string }; last_message_at: string }> }
    }
    expect(body.data.chats).toHaveLength(1)
    expect(body.data.chats[0]).toMatchObject({
      uuid: first.chats["+1 415 555 0100"],
      assigned_to: "agent-1",
      favorite: true,
      unread_count: 1,
      groups: [{ name: "Newsletter" }, { name: "VIP" }],
      last_message: { text: "Hi Ada" },
      last_message_at: "2026-01-02T10:01:00.000Z"
    })
    const all = await fetch(`${server.baseUrl}/chats`, { headers: { authorization: `Bearer ${org.api_key}` } })
    const allBody = (await all.json()) as { data: { chats: Array<{ uuid: string; contact: { phone: string } }> } }
    expect(allBody.data.chats.map((chat) => chat.contact.phone)).toEqual(["+14155550142", "+14155550100"])
  })

  it("refuses chats whose new contacts pass contacts_limit, and a bad chat entry, writing nothing", async ({ expect }) => {
    const env = { DATABASE_URL: temporaryDatabaseUrl() }
    const org = await runCliJson<{ org_id: string }>(["org", "create", "--name", "Acme", "--contacts-limit", "1"], env)
    const overLimit = { chats: [{ phone: "+14155550100" }, { phone: "+14155550101" }] }
    const refused = await runCli(["import", "--org", org.org_id, "--file", writeJson(overLimit)], env)
    expect(refused.code).toBe(1)
    expect(refused.stdout).toBe("")
    expect(refused.stderr).toContain("contacts limit is 1, 0 in use, 2 more requested")
    const invalid = { chats: [{ phone: "+14155550100", status: "archived", messages: [{ direction: "inbound", text: "hi" }] }] }
    const rejected = await runCli(["import", "--org", org.org_id, "--file", writeJson(invalid)], env)
    expect(rejected.code).toBe(1)
    expect(rejected.stderr).toContain("chats[0].status")
    expect(rejected.stderr).toContain("chats[0].messages[0].created_at")
    const fits = await runCliJson<{ contacts: Record<string, string>; chats: Record<string, string> }>(
      ["import", "--org", org.org_id, "--file", writeJson({ chats: [{ phone: "+14155550100" }] })],
      env
    )
    expect(Object.keys(fits.chats)).toEqual(["+14155550100"])
  })

  it("exits 1 for unreadable JSON, a missing file and an unknown organization", async ({ expect }) => {
    const env = { DATABASE_URL: temporaryDatabaseUrl() }
    const org = await runCliJson<{ org_id: string }>(["org", "create", "--name", "Acme"], env)
    const broken = await runCli(["import", "--org", org.org_id, "--file", writeJson("{not json")], env)
    expect(broken.code).toBe(1)
    expect(broken.stderr).toContain("is not valid JSON")
    const missing = await runCli(["import", "--org", org.org_id, "--file", "/nonexistent/file.json"], env)
    expect(missing.code).toBe(1)
    const unknown = await runCli(["import", "--org", "0190a4d0-0000-7000-8000-000000000000", "--file", writeJson(document)], env)
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain("not found")
  })
})

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

describe.concurrent("import --org ID --file F.json (DESIGN §4)", () => {
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

  it("exits 1 for unreadable JSON, a missing file and an unknown organization", async ({ expect }) => {
    const env = { DATABASE_URL: temporaryDatabaseUrl() }
    const org = await runCliJson<{ org_id: string }>(["org", "create", "--name", "Acme"], env)
    const broken = await runCli(["import", "--org", org.org_id, "--file", writeJson("{not json")], env)
    expect(broken.code).toBe(1)
    expect(broken.stderr).toContain("cannot read")
    const missing = await runCli(["import", "--org", org.org_id, "--file", "/nonexistent/file.json"], env)
    expect(missing.code).toBe(1)
    const unknown = await runCli(["import", "--org", "0190a4d0-0000-7000-8000-000000000000", "--file", writeJson(document)], env)
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain("not found")
  })
})

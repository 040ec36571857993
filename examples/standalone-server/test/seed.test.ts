import Database from "better-sqlite3"
import { parsePhoneNumberFromString } from "libphonenumber-js/max"
import { afterAll, beforeAll, describe, it } from "vitest"
import { assertBuilt, killServers, removeTemporaryDirectories, runCli, runCliJson, startServer, temporaryDatabaseUrl } from "./helpers.js"

beforeAll(assertBuilt)
afterAll(() => {
  killServers()
  removeTemporaryDirectories()
})

interface Summary {
  readonly org_id: string
  readonly seed: number
  readonly contacts: { readonly created: number; readonly updated: number }
  readonly chats: { readonly created: number; readonly matched: number }
  readonly messages: number
  readonly groups: Record<string, string>
  readonly labels: Record<string, string>
  readonly agents: ReadonlyArray<string>
}

interface ChatView {
  readonly uuid: string
  readonly contact: { readonly first_name: string | null; readonly phone: string }
  readonly status: string
  readonly assigned_to: string | null
  readonly favorite: boolean
  readonly unread_count: number
  readonly groups: ReadonlyArray<{ readonly uuid: string }>
  readonly labels: ReadonlyArray<{ readonly uuid: string }>
  readonly last_message_at: string
  readonly last_message: { readonly text: string } | null
}

/** Rows of a table of the SQLite file behind a `sqlite:` URL, read directly (the oracle). */
const countRows = (url: string, table: "contacts" | "chats" | "messages" | "contact_groups" | "labels"): number => {
  const db = new Database(url.slice("sqlite:".length), { readonly: true })
  try {
    return (db.prepare(`SELECT COUNT(*) AS count FROM ${table}`).get() as { count: number }).count
  } finally {
    db.close()
  }
}

const createOrganization = (env: Record<string, string>, ...flags: Array<string>) =>
  runCliJson<{ org_id: string; api_key: string }>(["org", "create", "--name", "Acme", ...flags], env)

describe.concurrent("seed --org ID --contacts N --chats N (docs/standalone-server.md)", () => {
  it("writes varied contacts and chats that the API serves, and prints a summary", async ({ expect }) => {
    const env = { DATABASE_URL: temporaryDatabaseUrl() }
    const org = await createOrganization(env)
    const summary = await runCliJson<Summary>(["seed", "--org", org.org_id, "--contacts", "300", "--chats", "200", "--seed", "42"], env)
    expect(summary).toMatchObject({ org_id: org.org_id, seed: 42, contacts: { created: 300, updated: 0 }, chats: { created: 200, matched: 0 } })
    expect(summary.messages).toBeGreaterThanOrEqual(200)
    expect(Object.keys(summary.groups)).toHaveLength(5)
    expect(Object.keys(summary.labels)).toHaveLength(6)
    expect(countRows(env.DATABASE_URL, "messages")).toBe(summary.messages)

    const server = await startServer(env)
    const headers = { authorization: `Bearer ${org.api_key}` }
    const chats: Array<ChatView> = []
    for (let page = 1; page <= 2; page++) {
      const response = await fetch(`${server.baseUrl}/chats?pagination=true&per_page=100&page=${page}`, { headers })
      const body = (await response.json()) as { data: { chats: Array<ChatView>; pagination: { total: number } } }
      expect(body.data.pagination.total).toBe(200)
      chats.push(...body.data.chats)
    }
    expect(new Set(chats.map((chat) => chat.uuid)).size).toBe(200)
    // Every phone is valid E.164 for libphonenumber-js, as the API requires; several countries.
    const countries = new Set(chats.map((chat) => parsePhoneNumberFromString(chat.contact.phone)?.country))
    expect(chats.every((chat) => parsePhoneNumberFromString(chat.contact.phone)?.isValid() === true)).toBe(true)
    expect(countries.size).toBeGreaterThanOrEqual(4)
    expect(new Set(chats.map((chat) => chat.status))).toEqual(new Set(["open", "pending", "resolved", "closed"]))
    expect(new Set(chats.map((chat) => chat.assigned_to)).has(null)).toBe(true)
    expect(chats.filter((chat) => chat.assigned_to !== null).every((chat) => summary.agents.includes(chat.assigned_to!))).toBe(true)
    expect(new Set(chats.map((chat) => chat.favorite))).toEqual(new Set([true, false]))
    expect(chats.some((chat) => chat.unread_count > 0) && chats.some((chat) => chat.unread_count === 0)).toBe(true)
    expect(chats.some((chat) => chat.groups.length > 0) && chats.some((chat) => chat.labels.length > 0)).toBe(true)
    expect(chats.every((chat) => chat.contact.first_name !== null && chat.last_message !== null)).toBe(true)
    const times = chats.map((chat) => Date.parse(chat.last_message_at))
    const monthsSpread = (Math.max(...times) - Math.min(...times)) / (30 * 86_400_000)
    expect(monthsSpread).toBeGreaterThan(2)
    expect(Math.max(...times)).toBeLessThanOrEqual(Date.now())

    // A filter over the seeded data answers from the same rows.
    const label = Object.values(summary.labels)[0]!
    const filtered = await fetch(`${server.baseUrl}/chats?pagination=true&per_page=100&tag_uuid=${label}`, { headers })
    const filteredBody = (await filtered.json()) as { data: { pagination: { total: number } } }
    expect(filteredBody.data.pagination.total).toBe(chats.filter((chat) => chat.labels.some((l) => l.uuid === label)).length)
  })

  it("the same --seed yields the same people and phones", async ({ expect }) => {
    const phonesOf = async () => {
      const env = { DATABASE_URL: temporaryDatabaseUrl() }
      const org = await createOrganization(env)
      await runCliJson(["seed", "--org", org.org_id, "--contacts", "50", "--chats", "10", "--seed", "7"], env)
      const db = new Database(env.DATABASE_URL.slice("sqlite:".length), { readonly: true })
      const rows = db.prepare("SELECT phone, first_name, last_name, email, city FROM contacts ORDER BY phone").all()
      db.close()
      return rows
    }
    const [first, second] = await Promise.all([phonesOf(), phonesOf()])
    expect(first).toHaveLength(50)
    expect(second).toEqual(first)
  })

  it("a second run with the same --seed updates the same contacts and matches their chats, duplicating none", async ({ expect }) => {
    const env = { DATABASE_URL: temporaryDatabaseUrl() }
    const org = await createOrganization(env)
    const args = ["seed", "--org", org.org_id, "--contacts", "30", "--chats", "20", "--seed", "5"]
    await runCliJson<Summary>(args, env)
    const again = await runCliJson<Summary>(args, env)
    expect(again).toMatchObject({ contacts: { created: 0, updated: 30 }, chats: { created: 0, matched: 20 } })
    expect([countRows(env.DATABASE_URL, "contacts"), countRows(env.DATABASE_URL, "chats")]).toEqual([30, 20])
  })

  it("refuses bad arguments with a message on stderr and a non-zero exit, writing nothing", async ({ expect }) => {
    const env = { DATABASE_URL: temporaryDatabaseUrl() }
    const org = await createOrganization(env)
    const cases: Array<[Array<string>, string]> = [
      [["--contacts", "5", "--chats", "6"], "--chats (6) must not exceed --contacts (5)"],
      [["--contacts", "-3", "--chats", "0"], "non-negative integer"],
      [["--contacts", "ten", "--chats", "0"], "non-negative integer"],
      [["--contacts", "5"], "--chats"],
      [["--contacts", "5", "--chats", "1", "--seed", "1.5"], "non-negative integer"]
    ]
    for (const [args, message] of cases) {
      const result = await runCli(["seed", "--org", org.org_id, ...args], env)
      expect(result.code, args.join(" ")).not.toBe(0)
      expect(result.stdout).toBe("")
      expect(result.stderr).toContain(message)
    }
    const badOrg = await runCli(["seed", "--org", "acme", "--contacts", "1", "--chats", "1"], env)
    expect(badOrg.code).not.toBe(0)
    expect(badOrg.stderr).toContain("UUID")
    const unknown = await runCli(["seed", "--org", "0190a4d0-0000-7000-8000-000000000000", "--contacts", "1", "--chats", "1"], env)
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain("not found")
    expect([countRows(env.DATABASE_URL, "contacts"), countRows(env.DATABASE_URL, "chats")]).toEqual([0, 0])
  }, 120_000)

  it("refuses, writing nothing, when contacts_limit cannot hold the new contacts", async ({ expect }) => {
    const env = { DATABASE_URL: temporaryDatabaseUrl() }
    const org = await createOrganization(env, "--contacts-limit", "10")
    const refused = await runCli(["seed", "--org", org.org_id, "--contacts", "11", "--chats", "1"], env)
    expect(refused.code).toBe(1)
    expect(refused.stdout).toBe("")
    expect(refused.stderr).toContain("contacts limit is 10, 0 in use, 11 more requested")
    expect([countRows(env.DATABASE_URL, "contacts"), countRows(env.DATABASE_URL, "contact_groups")]).toEqual([0, 0])
    const fits = await runCliJson<Summary>(["seed", "--org", org.org_id, "--contacts", "10", "--chats", "10"], env)
    expect(fits.contacts.created).toBe(10)
  })

  it("creates labels only while label_limit allows", async ({ expect }) => {
    const env = { DATABASE_URL: temporaryDatabaseUrl() }
    const org = await createOrganization(env, "--label-limit", "2")
    const summary = await runCliJson<Summary>(["seed", "--org", org.org_id, "--contacts", "20", "--chats", "5"], env)
    expect(Object.keys(summary.labels)).toEqual(["VIP", "Lead"])
    expect(countRows(env.DATABASE_URL, "labels")).toBe(2)
  })
})

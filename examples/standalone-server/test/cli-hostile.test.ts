import { writeFileSync } from "node:fs"
import { join } from "node:path"
import Database from "better-sqlite3"
import { afterAll, beforeAll, describe, it } from "vitest"
import { assertBuilt, removeTemporaryDirectories, runCli, runCliJson, temporaryDatabaseUrl, temporaryDirectory } from "./helpers.js"

/**
 * Hostile input to the admin CLI (docs/standalone-server.md, docs/errors.md "Limits"):
 * every case exits non-zero with a clear message on stderr, never a stack trace, and
 * writes nothing.
 */
beforeAll(assertBuilt)
afterAll(removeTemporaryDirectories)

const writeFile = (content: string | Buffer): string => {
  const path = join(temporaryDirectory(), "import.json")
  writeFileSync(path, content)
  return path
}

const DEPTH = 100_000

/** A new database with one organization, and the row count of every table in it. */
const setUp = async () => {
  const databaseUrl = temporaryDatabaseUrl()
  const env = { DATABASE_URL: databaseUrl }
  const org = await runCliJson<{ org_id: string }>(["org", "create", "--name", "Acme"], env)
  const rowCounts = () => {
    const database = new Database(databaseUrl.slice("sqlite:".length), { readonly: true })
    try {
      const tables = database
        .prepare<[], string>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        .pluck()
        .all()
      return Object.fromEntries(tables.map((table) => [table, database.prepare(`SELECT count(*) FROM "${table}"`).pluck().get()]))
    } finally {
      database.close()
    }
  }
  return { env, org, rowCounts }
}

type Result = { code: number | null; stdout: string; stderr: string }

const refusal = (result: Result, text: string): string | undefined => {
  if (result.code === 0 || result.code === null) return `exited ${result.code}`
  if (result.stdout !== "") return `printed on stdout: ${result.stdout.slice(0, 200)}`
  if (!result.stderr.includes(text)) return `stderr lacks "${text}": ${result.stderr.slice(0, 300)}`
  if (/\bat .+:\d+:\d+|Maximum call stack/.test(result.stderr)) return `stack trace: ${result.stderr.slice(0, 300)}`
  return undefined
}

const hostileFiles: ReadonlyArray<readonly [string, string | Buffer, string]> = [
  ["100 000-deep arrays", `{"groups":${"[".repeat(DEPTH)}${"]".repeat(DEPTH)}}`, "deeper than 64 levels"],
  [
    "100 000-deep objects in a template component",
    `{"templates":[{"name":"t","language":"en_US","category":"UTILITY","status":"APPROVED","components":[${'{"a":'.repeat(DEPTH)}1${"}".repeat(DEPTH)}]}]}`,
    "deeper than 64 levels"
  ],
  ["a __proto__ key", '{"groups":[{"name":"VIP","__proto__":{"polluted":true}}]}', "__proto__"],
  [
    "a constructor.prototype key",
    '{"contacts":[{"first_name":"A","phone":"+14155550100","constructor":{"prototype":{"x":1}}}]}',
    "__proto__"
  ],
  [
    "invalid UTF-8",
    Buffer.concat([Buffer.from('{"groups":[{"name":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}]}')]),
    "not valid UTF-8"
  ],
  ["an empty file", "", "not valid JSON"],
  ["a truncated document", '{"groups":[{"name":"VIP"}', "not valid JSON"],
  [
    "a contact naming 200 000 groups",
    JSON.stringify({ contacts: [{ first_name: "A", phone: "+14155550100", group: Array(200_000).fill("G") }] }),
    "contacts[0].group"
  ],
  [
    "a 600 000-character first name",
    JSON.stringify({ contacts: [{ first_name: "a".repeat(600_000), phone: "+14155550100" }] }),
    "contacts[0].first_name"
  ]
]

// Each case runs the built CLI once per hostile input, one process after another (~0.8 s
// each alone): under the whole suite's load on two cores that passed the project's 30 s.
const SEQUENCE_TIMEOUT_MS = 120_000

describe.concurrent("the admin CLI with hostile input", () => {
  it("import: every hostile file exits 1 with a clear message and writes nothing", async ({ expect }) => {
    const { env, org, rowCounts } = await setUp()
    const before = rowCounts()
    const failures: Array<string> = []
    for (const [name, content, message] of hostileFiles) {
      const problem = refusal(await runCli(["import", "--org", org.org_id, "--file", writeFile(content)], env), message)
      if (problem !== undefined) failures.push(`${name}: ${problem}`)
    }
    expect(failures).toEqual([])
    expect(rowCounts()).toEqual(before)
  }, SEQUENCE_TIMEOUT_MS)

  it("org create: hostile --contacts-limit values and names are refused, nothing written", async ({ expect }) => {
    const { env, rowCounts } = await setUp()
    const before = rowCounts()
    const failures: Array<string> = []
    for (const value of ["NaN", "Infinity", "1e309", "-1", "1.5", "0x10", "99999999999999999999", "", " 5"]) {
      const problem = refusal(await runCli(["org", "create", "--name", "B", "--contacts-limit", value], env), "--contacts-limit")
      if (problem !== undefined) failures.push(`--contacts-limit ${JSON.stringify(value)}: ${problem}`)
    }
    for (const name of ["n".repeat(100_000), "   "]) {
      const problem = refusal(await runCli(["org", "create", "--name", name], env), "name")
      if (problem !== undefined) failures.push(`--name of ${name.length} characters: ${problem}`)
    }
    for (const id of ["x".repeat(10_000), "__proto__", "../../etc/passwd"]) {
      const problem = refusal(await runCli(["org", "update", "--id", id, "--name", "B"], env), "--id")
      if (problem !== undefined) failures.push(`--id ${id.slice(0, 20)}: ${problem}`)
    }
    expect(failures).toEqual([])
    expect(rowCounts()).toEqual(before)
  }, SEQUENCE_TIMEOUT_MS)
})

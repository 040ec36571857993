import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { startSimulator, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"
import {
  assertBuilt,
  killServers,
  removeTemporaryDirectories,
  runCli,
  runCliJson,
  runServerToExit,
  startServer,
  temporaryDatabaseUrl,
  temporaryDirectory
} from "./helpers.js"

// The admin CLI's channel commands and the server's secret key, end to end: the built CLI
// and server on a temporary SQLite file, Meta's Graph API replaced by the WhatsApp simulator.

const TOKEN = "EAAGgoodCLItoken7Hq2Lm9Xw4Zr8Tb1"
const REFUSED = "EAAGbadCLItoken3Jk5Pn7Qs9Uv2Wx4"

/** The WhatsApp simulator stands in for the Graph API; the numbers these tests add accept TOKEN only. */
let simulator: WhatsAppSimulator
let graphUrl = ""
const calls = () => simulator.received().map(({ authorization, path }) => ({ url: path, authorization: authorization ?? undefined }))

beforeAll(async () => {
  assertBuilt()
  simulator = await startSimulator({
    numbers: ["106540352242922", "106540352242923", "106540352242924", "106540352242925", "106540352242926", "106540352242927"].map((id) => ({
      phone_number_id: id,
      display_phone_number: "+31 6 1234 5678",
      waba_id: "102290129340398",
      access_token: TOKEN
    }))
  })
  graphUrl = simulator.url
})
afterEach(killServers)
afterAll(async () => {
  removeTemporaryDirectories()
  await simulator.close()
})

/** A fresh database with one organization; its environment and the paths of its files. */
const freshOrganization = async () => {
  const databaseUrl = temporaryDatabaseUrl()
  const filename = databaseUrl.slice("sqlite:".length)
  const env = { DATABASE_URL: databaseUrl, WHATSAPP_API_BASE_URL: graphUrl }
  const { org_id } = await runCliJson<{ org_id: string }>(["org", "create", "--name", "Acme"], env)
  const tokenFile = join(temporaryDirectory(), "token.txt")
  writeFileSync(tokenFile, `${TOKEN}\n`)
  return { env, org: org_id, filename, keyFile: join(dirname(filename), "secret.key"), tokenFile }
}

const addArgs = (org: string, phoneNumberId: string, token: ReadonlyArray<string>) => [
  "channel", "add", "--org", org, "--phone-number-id", phoneNumberId, "--waba-id", "102290129340398", ...token
]

describe("channel add, list, remove", () => {
  it("adds through a token file or variable (verified with the Graph API), lists and removes; the token is printed and stored nowhere", async () => {
    const { env, org, filename, keyFile, tokenFile } = await freshOrganization()
    const before = calls().length
    const added = await runCli(addArgs(org, "106540352242922", ["--access-token-file", tokenFile]), env)
    expect(added.code, added.stderr).toBe(0)
    expect(added.stderr).toContain(`created ${keyFile}`)
    expect(statSync(keyFile).mode & 0o777).toBe(0o600)
    // Written to a file of its own then linked into place: no temporary file is left beside it.
    expect(readdirSync(dirname(keyFile)).filter((name) => name.startsWith("secret.key"))).toEqual(["secret.key"])
    const channel = JSON.parse(added.stdout) as { uuid: string; display_phone_number: string; access_token_last4: string }
    expect(channel).toMatchObject({ phone_number_id: "106540352242922", display_phone_number: "+31612345678", access_token_last4: "8Tb1", access_token_set: true })
    expect(calls().slice(before)).toEqual([{ url: "/v21.0/106540352242922", authorization: `Bearer ${TOKEN}` }])

    const second = await runCli(
      addArgs(org, "106540352242923", ["--access-token-env", "MY_WA_TOKEN", "--display-phone-number", "+14155552671", "--throughput-mps", "120"]),
      { ...env, MY_WA_TOKEN: TOKEN }
    )
    expect(second.code, second.stderr).toBe(0)
    // Only the database it opened: the key file exists now, nothing else is said.
    expect(second.stderr).toBe(`Database: sqlite:${filename}\n`)
    const listed = await runCliJson<Array<{ uuid: string; display_phone_number: string; throughput_mps: number }>>(["channel", "list", "--org", org], env)
    expect(listed.map((c) => [c.display_phone_number, c.throughput_mps])).toEqual([["+31612345678", 50], ["+14155552671", 120]])

    const removed = await runCli(["channel", "remove", "--channel", channel.uuid], env)
    expect(JSON.parse(removed.stdout)).toEqual({ uuid: channel.uuid, deleted: true })
    expect((await runCliJson<Array<unknown>>(["channel", "list", "--org", org], env)).length).toBe(1)
    const again = await runCli(["channel", "remove", "--channel", channel.uuid], env)
    expect(again.code).not.toBe(0)
    expect(again.stderr).toMatch(/^error: No channel with uuid/m)

    for (const output of [added.stdout, added.stderr, second.stdout, removed.stdout]) expect(output).not.toContain(TOKEN)
    const bytes = Buffer.concat([filename, `${filename}-wal`].filter(existsSync).map((file) => readFileSync(file)))
    expect(bytes.includes("106540352242923")).toBe(true)
    expect(bytes.includes(TOKEN)).toBe(false)
  })

  it.each([["0"], ["1001"], ["2.5"], ["fast"]])("--throughput-mps %s → error naming throughput_mps, exit 1, Meta not asked, nothing stored", async (value) => {
    const { env, org, tokenFile } = await freshOrganization()
    const before = calls().length
    const result = await runCli([...addArgs(org, "106540352242926", ["--access-token-file", tokenFile]), "--throughput-mps", value], env)
    expect(result.code).toBe(1)
    expect(result.stdout).toBe("")
    expect(result.stderr).toMatch(/^error: throughput_mps must be an integer from 1 to 1000/m)
    expect(calls().length).toBe(before)
    expect(await runCliJson(["channel", "list", "--org", org], env)).toEqual([])
  })

  it("a token Meta refuses → error on stderr without the token, exit 1, nothing stored", async () => {
    const { env, org } = await freshOrganization()
    const result = await runCli(addArgs(org, "106540352242924", ["--access-token-env", "WA"]), { ...env, WA: REFUSED })
    expect(result.code).toBe(1)
    expect(result.stdout).toBe("")
    expect(result.stderr).toMatch(/^error: The access token could not be verified/m)
    expect(result.stderr).not.toContain(REFUSED)
    expect(await runCliJson(["channel", "list", "--org", org], env)).toEqual([])
  })

  it.each([
    ["no token option", []],
    ["both token options", ["--access-token-file", "/nonexistent", "--access-token-env", "WA"]],
    ["an unreadable token file", ["--access-token-file", "/nonexistent/token"]],
    ["an unset token variable", ["--access-token-env", "SWITCHBOARD_TEST_UNSET_VARIABLE"]]
  ] as const)("%s → stderr, non-zero exit, nothing written (not even the key file)", async (_case, token) => {
    const { env, org, keyFile } = await freshOrganization()
    const result = await runCli(addArgs(org, "106540352242925", token), env)
    expect(result.code).not.toBe(0)
    expect(result.stdout).toBe("")
    expect(result.stderr).toMatch(/error: /)
    expect(existsSync(keyFile)).toBe(false)
  })

  it("a token on the command line is not an option", async () => {
    const { env, org } = await freshOrganization()
    const result = await runCli(addArgs(org, "106540352242926", ["--access-token", TOKEN]), env)
    expect(result.code).not.toBe(0)
    expect(result.stdout).toBe("")
  })
})

describe("the secret key", () => {
  it("the server reads the CLI's key file and serves its channels; another key stops the CLI and the server, naming SWITCHBOARD_SECRET_KEY", async () => {
    const { env, org, tokenFile } = await freshOrganization()
    const added = await runCliJson<{ uuid: string }>(addArgs(org, "106540352242927", ["--access-token-file", tokenFile]), env)
    const { api_key } = await runCliJson<{ api_key: string }>(["key", "create", "--org", org], env)
    const server = await startServer({ ...env, DEVELOPER_API_RATE_LIMIT_REDIS_DISABLED: "1" })
    const response = await fetch(`${server.baseUrl}/channels`, { headers: { authorization: `Bearer ${api_key}` } })
    expect(((await response.json()) as { data: { channels: Array<{ uuid: string }> } }).data.channels.map((c) => c.uuid)).toEqual([added.uuid])
    expect(server.output().stderr).not.toContain("created")
    killServers()

    const wrong = { ...env, SWITCHBOARD_SECRET_KEY: Buffer.alloc(32, 1).toString("base64") }
    const cli = await runCli(["channel", "list", "--org", org], wrong)
    expect(cli.code).toBe(1)
    expect(cli.stderr).toContain("SWITCHBOARD_SECRET_KEY")
    const stopped = await runServerToExit({ ...wrong, HOST: "127.0.0.1", PORT: "0" })
    expect(stopped.code).toBe(1)
    expect(stopped.stderr).toContain("SWITCHBOARD_SECRET_KEY")
  })

  it("a malformed SWITCHBOARD_SECRET_KEY, or none with mongodb://, stops the server with a message naming it", async () => {
    const malformed = await runServerToExit({ DATABASE_URL: temporaryDatabaseUrl(), SWITCHBOARD_SECRET_KEY: "tooshort", PORT: "0" })
    expect(malformed.code).toBe(1)
    expect(malformed.stderr).toMatch(/SWITCHBOARD_SECRET_KEY must be 32 bytes/)
    expect(malformed.stderr).not.toContain("tooshort")
    const mongo = await runServerToExit({ DATABASE_URL: "mongodb://127.0.0.1:9/switchboard", PORT: "0" })
    expect(mongo.code).toBe(1)
    expect(mongo.stderr).toContain("SWITCHBOARD_SECRET_KEY is required with a mongodb:// DATABASE_URL")
  })
})

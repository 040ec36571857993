import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { WhatsAppSimulator } from "@switchboard/whatsapp-simulator"
import {
  api,
  assertBuilt,
  killServers,
  removeTemporaryDirectories,
  runCli,
  runCliJson,
  runServerToExit,
  startOneNumberSimulator,
  startServer,
  temporaryDatabaseUrl,
  until
} from "./helpers.js"

// Templates from Meta through the built server and CLI on a SQLite file, the WhatsApp
// simulator playing Meta (docs/templates-and-replies.md "Templates from Meta"): the
// account holds three templates; adding a channel brings them in by itself (the server's
// loop, no call), with Meta's statuses; one deleted at Meta becomes DELETED after
// `POST /channels/{uuid}/templates/sync`; the CLI's `templates sync` prints the counts.

const TOKEN = "EAAGtemplatesFromMeta7Rk2Vq9Xw4Lp"
const PHONE_NUMBER_ID = "106540352242977"
const WABA_ID = "102290129340398"

let simulator: WhatsAppSimulator

beforeAll(async () => {
  assertBuilt()
  simulator = await startOneNumberSimulator({ phoneNumberId: PHONE_NUMBER_ID, token: TOKEN, appSecret: "templates-app-secret" })
  simulator.seedTemplates({
    waba_id: WABA_ID,
    templates: [
      { name: "order_update", language: "en_US", category: "UTILITY", components: [{ type: "BODY", text: "Your order {{1}} has shipped.", example: { body_text: [["#1234"]] } }] },
      { name: "welcome", language: "en_US", category: "MARKETING", components: [{ type: "BODY", text: "Welcome to Acme!" }] },
      {
        name: "spring_sale",
        language: "en_US",
        category: "MARKETING",
        status: "REJECTED",
        rejected_reason: "INVALID_FORMAT",
        components: [{ type: "BODY", text: "50% off everything" }]
      }
    ]
  })
})
afterAll(async () => {
  killServers()
  removeTemporaryDirectories()
  await simulator.close()
})

interface TemplateRecord {
  readonly uuid: string
  readonly name: string
  readonly status: string
  readonly rejected_reason: string | null
  readonly waba_id: string | null
  readonly provider_template_id: string | null
}

describe("templates from Meta, end to end", () => {
  it("a channel added over the API brings the account's templates in within seconds; one deleted at Meta becomes DELETED on a sync", async () => {
    const env = { DATABASE_URL: temporaryDatabaseUrl(), WHATSAPP_API_BASE_URL: simulator.url }
    const { api_key } = await runCliJson<{ org_id: string; api_key: string }>(["org", "create", "--name", "Acme"], env)
    const server = await startServer(env)
    const templates = async (): Promise<ReadonlyArray<TemplateRecord>> =>
      (await api(server.baseUrl, api_key, "GET", "/templates")).json.data.templates

    const added = await api(server.baseUrl, api_key, "POST", "/channels", { phone_number_id: PHONE_NUMBER_ID, waba_id: WABA_ID, access_token: TOKEN })
    expect(added.status, JSON.stringify(added.json)).toBe(200)
    const channelUuid: string = added.json.data.uuid

    // No sync call: the server's loop runs the new account's first sync by itself.
    await until(async () => (await templates()).length === 3, "the three templates from Meta", 10_000, 100)
    const byName = Object.fromEntries((await templates()).map((template) => [template.name, template]))
    expect(byName.order_update).toMatchObject({ status: "APPROVED", rejected_reason: null, waba_id: WABA_ID })
    expect(byName.welcome).toMatchObject({ status: "APPROVED", waba_id: WABA_ID })
    expect(byName.spring_sale).toMatchObject({ status: "REJECTED", rejected_reason: "INVALID_FORMAT", waba_id: WABA_ID })
    const atMeta = Object.fromEntries(simulator.templates.list(WABA_ID).map((template) => [template.name, template.id]))
    expect(byName.welcome!.provider_template_id).toBe(atMeta.welcome)
    const channel = await api(server.baseUrl, api_key, "GET", `/channels/${channelUuid}`)
    expect(channel.json.data.template_sync).toMatchObject({ outcome: { added: 3, updated: 0, deleted: 0, unchanged: 0 }, error: null })

    // Deleted at Meta (as its Graph DELETE does), then synced by hand.
    simulator.templates.delete(WABA_ID, "welcome", null, Date.now())
    const synced = await api(server.baseUrl, api_key, "POST", `/channels/${channelUuid}/templates/sync`)
    expect(synced.status, JSON.stringify(synced.json)).toBe(200)
    expect(synced.json.data).toEqual({ added: 0, updated: 0, deleted: 1, unchanged: 2 })
    const welcome = await api(server.baseUrl, api_key, "GET", `/templates/${byName.welcome!.uuid}`)
    expect(welcome.json.data.status).toBe("DELETED")

    // The admin CLI runs the same sync inline and prints the counts.
    const cli = await runCli(["templates", "sync", "--channel", channelUuid], env)
    expect(cli.code, cli.stderr).toBe(0)
    expect(JSON.parse(cli.stdout)).toEqual({ added: 0, updated: 0, deleted: 0, unchanged: 3 })
    const unknown = await runCli(["templates", "sync", "--channel", "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6a"], env)
    expect(unknown.code).toBe(1)
    expect(unknown.stdout).toBe("")
    expect(unknown.stderr).toContain("error:")
    expect(`${cli.stdout}${cli.stderr}${server.output().stderr}`).not.toContain(TOKEN)
  })

  it("a malformed SWITCHBOARD_TEMPLATE_SYNC_MS stops the server at start, naming it", async () => {
    const stopped = await runServerToExit({ DATABASE_URL: temporaryDatabaseUrl(), PORT: "0", SWITCHBOARD_TEMPLATE_SYNC_MS: "6h" })
    expect(stopped.code).toBe(1)
    expect(stopped.stderr).toContain("SWITCHBOARD_TEMPLATE_SYNC_MS must be a number of milliseconds")
  })
})

import { spawn } from "node:child_process"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { WhatsAppSimulator } from "@switchboard/whatsapp-simulator"
import {
  api,
  assertBuilt,
  childEnvironment,
  killServers,
  organizationWithChannel,
  removeTemporaryDirectories,
  runToExit,
  settledSend,
  startOneNumberSimulator,
  startServer,
  until
} from "./helpers.js"

/** The simulator's command line, as its package's `bin` names it (built with the workspace). */
const SIMULATOR_CLI = join(dirname(createRequire(import.meta.url).resolve("@switchboard/whatsapp-simulator/package.json")), "dist", "cli.js")

// A template submitted to Meta end to end (docs/templates-and-replies.md "Submitting and
// deleting"): the built server with the WhatsApp simulator as Meta's Graph API, a channel
// added with the CLI, POST /templates stored PENDING with Meta's id, Meta's review played
// by the simulator's `template-status` command through SIMULATOR_URL, whose signed webhook
// makes it APPROVED, then a send with it through the channel.

const TOKEN = "EAAGtemplateSubmitToken7Hc2Lp9Qw4"
const APP_SECRET = "template-submit-app-secret-9e2d"
const PHONE_NUMBER_ID = "106540352242977"
const WABA_ID = "102290129340398"

let simulator: WhatsAppSimulator
beforeAll(async () => {
  assertBuilt()
  simulator = await startOneNumberSimulator({ phoneNumberId: PHONE_NUMBER_ID, token: TOKEN, appSecret: APP_SECRET })
})
afterAll(async () => {
  killServers()
  removeTemporaryDirectories()
  await simulator.close()
})

describe("POST /templates on the standalone server", () => {
  it("is stored PENDING with Meta's id; Meta's approval (the simulator's template-status) makes it sendable through the channel", async () => {
    const { env, apiKey } = await organizationWithChannel({ simulatorUrl: simulator.url, phoneNumberId: PHONE_NUMBER_ID, token: TOKEN, throughputMps: 80 })
    const server = await startServer({ ...env, WHATSAPP_APP_SECRET: APP_SECRET, REDIS_URL: "" })
    const channels = await api(server.baseUrl, apiKey, "GET", "/channels")
    const channelUuid: string = channels.json.data.channels[0].uuid

    const submitted = await api(server.baseUrl, apiKey, "POST", "/templates", {
      channel_uuid: channelUuid,
      name: "delivery_update",
      language: "en_US",
      category: "UTILITY",
      components: [{ type: "BODY", text: "Hi {{1}}, your parcel arrives {{2}}.", example: { body_text: [["Ada", "today"]] } }]
    })
    expect(submitted.status, JSON.stringify(submitted.json)).toBe(200)
    const atMeta = simulator.templates.list(WABA_ID).find((template) => template.name === "delivery_update")
    expect(submitted.json.data).toMatchObject({ status: "PENDING", waba_id: WABA_ID, provider_template_id: atMeta?.id, category: "UTILITY" })

    // Meta's review: the simulator's own `template-status` command, through SIMULATOR_URL.
    const review = await runToExit(
      spawn(
        process.execPath,
        [SIMULATOR_CLI, "template-status", "--waba-id", WABA_ID, "--name", "delivery_update", "--language", "en_US", "--event", "APPROVED",
          "--webhook-url", `${server.baseUrl}/webhooks/whatsapp`],
        { env: childEnvironment({ SIMULATOR_URL: simulator.url }) }
      ),
      30_000
    )
    expect([review.code, review.stderr]).toEqual([0, ""])
    expect(JSON.parse(review.stdout)).toMatchObject({ status: "APPROVED", template_id: atMeta?.id })
    await until(
      async () => (await api(server.baseUrl, apiKey, "GET", `/templates/${submitted.json.data.uuid}`)).json.data.status === "APPROVED",
      "the template APPROVED",
      5_000,
      50
    )

    // Its inline attempt, when late for its pacing slot (a busy machine), is handed back and
    // the dispatcher sends it: settledSend answers as the inline attempt would have.
    const sent = await settledSend(server.baseUrl, apiKey, await api(server.baseUrl, apiKey, "POST", "/send/template", {
      phone: "+14155550123",
      template: {
        name: "delivery_update",
        language: { code: "en_US" },
        components: [{ type: "body", parameters: [{ type: "text", text: "Ada" }, { type: "text", text: "tomorrow" }] }]
      }
    }))
    expect(sent.status, JSON.stringify(sent.json)).toBe(200)
    expect([sent.json.data.status, sent.json.data.transport]).toEqual(["sent", "whatsapp"])
    expect(simulator.sends(PHONE_NUMBER_ID).some((each) => (each.body as { template?: { name?: string } }).template?.name === "delivery_update")).toBe(true)
  })
})

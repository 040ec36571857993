import { ConfigProvider, Effect, Either } from "effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { startSimulator, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"
import { loadConfig } from "../src/config.js"
import { describeTransport, type TransportChoice, transportConfig, transportLayerFor } from "../src/transport.js"
import { assertBuilt, killServers, runServerToExit, startServer } from "./helpers.js"

const load = (variables: Record<string, string>) =>
  Effect.runPromise(
    Effect.either(
      loadConfig(transportConfig).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(variables)))))
    )
  )
const loaded = async (variables: Record<string, string>): Promise<TransportChoice> =>
  Either.getOrThrowWith(await load(variables), (error) => error)
const failure = async (variables: Record<string, string>): Promise<string> =>
  Either.match(await load(variables), { onLeft: (error) => error.message, onRight: () => "loaded" })

const TOKEN = "EAAG-secret-token-never-printed"

describe("transportConfig: the WHATSAPP_* variables", () => {
  it("is the recording transport when none is set (or all are empty)", async () => {
    expect(await loaded({})).toEqual({ _tag: "Recording" })
    expect(await loaded({ WHATSAPP_PHONE_NUMBER_ID: " ", WHATSAPP_ACCESS_TOKEN: "" })).toEqual({ _tag: "Recording" })
    expect(transportLayerFor({ _tag: "Recording" })).toBeUndefined()
  })

  it("is the WhatsApp Cloud API transport with both credentials, base URL and version optional", async () => {
    expect(await loaded({ WHATSAPP_PHONE_NUMBER_ID: "1234", WHATSAPP_ACCESS_TOKEN: TOKEN })).toEqual({
      _tag: "WhatsAppCloud",
      options: { phoneNumberId: "1234", accessToken: TOKEN }
    })
    const custom = await loaded({
      WHATSAPP_PHONE_NUMBER_ID: "1234",
      WHATSAPP_ACCESS_TOKEN: TOKEN,
      WHATSAPP_API_BASE_URL: "http://127.0.0.1:9999/graph/",
      WHATSAPP_API_VERSION: "v22.0"
    })
    expect(custom).toEqual({
      _tag: "WhatsAppCloud",
      options: { phoneNumberId: "1234", accessToken: TOKEN, baseUrl: "http://127.0.0.1:9999/graph", apiVersion: "v22.0" }
    })
    expect(transportLayerFor(custom)).toBeDefined()
    expect(describeTransport(custom)).toBe("Sends: through each organization's channel when it has one, else WhatsApp Cloud API phone number id 1234, http://127.0.0.1:9999/graph")
  })

  it("names the missing or bad variable and never echoes the token", async () => {
    expect(await failure({ WHATSAPP_ACCESS_TOKEN: TOKEN })).toContain("WHATSAPP_PHONE_NUMBER_ID")
    expect(await failure({ WHATSAPP_ACCESS_TOKEN: TOKEN })).not.toContain(TOKEN)
    expect(await failure({ WHATSAPP_PHONE_NUMBER_ID: "1234" })).toContain("WHATSAPP_ACCESS_TOKEN")
    const base = { WHATSAPP_PHONE_NUMBER_ID: "1234", WHATSAPP_ACCESS_TOKEN: TOKEN }
    expect(await failure({ ...base, WHATSAPP_API_BASE_URL: "ftp://example.com" })).toContain("WHATSAPP_API_BASE_URL")
    expect(await failure({ ...base, WHATSAPP_API_BASE_URL: "not a url" })).toContain("WHATSAPP_API_BASE_URL")
    expect(await failure({ ...base, WHATSAPP_API_VERSION: "21" })).toContain("WHATSAPP_API_VERSION")
    // The Graph API's address alone also serves channel verification: no longer an error.
    expect(await loaded({ WHATSAPP_API_BASE_URL: "http://127.0.0.1:1" })).toEqual({ _tag: "Recording" })
  })
})

describe("the standalone server's sends (built server, the WhatsApp simulator as Graph API)", () => {
  let simulator: WhatsAppSimulator
  let recorderUrl = ""
  /** What the simulator received: method, URL, the authorization header and the parsed body. */
  const received = () => simulator.received().map(({ authorization, body, method, path }) => ({ method, url: path, authorization, body }))
  beforeAll(async () => {
    assertBuilt()
    simulator = await startSimulator({
      numbers: [{ phone_number_id: "1234", display_phone_number: "+1 555-078-3881", waba_id: "102290129340398", access_token: TOKEN }]
    })
    recorderUrl = simulator.url
  })
  afterEach(killServers)
  afterAll(() => simulator.close())

  it("posts a text send to {base}/{version}/{phone number id}/messages with the bearer token, and says so at start", async () => {
    const server = await startServer({
      DATABASE_URL: "memory:",
      DEVELOPER_API_RATE_LIMIT_REDIS_DISABLED: "1",
      WHATSAPP_PHONE_NUMBER_ID: "1234",
      WHATSAPP_ACCESS_TOKEN: TOKEN,
      WHATSAPP_API_BASE_URL: recorderUrl
    })
    const { api_key } = JSON.parse(server.output().stdout.trim().split("\n")[0]!) as { api_key: string }
    const response = await fetch(`${server.baseUrl}/send`, {
      method: "POST",
      headers: { authorization: `Bearer ${api_key}`, "content-type": "application/json" },
      body: JSON.stringify({ phone: "+14155550100", message: "Your order has shipped." })
    })
    const body = (await response.json()) as { message: string; data: { status: string; transport: string } }
    expect(response.status).toBe(200)
    // No channel, but the deployment's own number: it went to Meta.
    expect([body.message, body.data.status, body.data.transport]).toEqual(["Message sent", "sent", "whatsapp"])
    expect(received()).toHaveLength(1)
    expect(received()[0]).toMatchObject({ method: "POST", url: "/v21.0/1234/messages" })
    expect(received()[0]!.authorization).toBe(`Bearer ${TOKEN}`)
    expect(received()[0]!.body).toMatchObject({ type: "text", text: { body: "Your order has shipped." } })
    expect(server.output().stderr).toContain(`else WhatsApp Cloud API phone number id 1234, ${recorderUrl}`)
    expect(server.output().stderr).not.toContain(TOKEN)
  })

  it("uses the recording transport without the variables: nothing reaches the network", async () => {
    const before = received().length
    const server = await startServer({ DATABASE_URL: "memory:", DEVELOPER_API_RATE_LIMIT_REDIS_DISABLED: "1" })
    const { api_key } = JSON.parse(server.output().stdout.trim().split("\n")[0]!) as { api_key: string }
    const response = await fetch(`${server.baseUrl}/send`, {
      method: "POST",
      headers: { authorization: `Bearer ${api_key}`, "content-type": "application/json" },
      body: JSON.stringify({ phone: "+14155550100", message: "Hello" })
    })
    expect(response.status).toBe(200)
    const body = (await response.json()) as { message: string; data: { status: string; transport: string } }
    expect([body.message, body.data.status, body.data.transport]).toEqual(["Message recorded: no channel, nothing left this server", "sent", "recording"])
    expect(received().length).toBe(before)
    expect(server.output().stderr).toContain("else recorded (stored and marked sent")
  })

  it("exits 1 with the variable's name when only one credential is set", async () => {
    const result = await runServerToExit({ DATABASE_URL: "memory:", WHATSAPP_ACCESS_TOKEN: TOKEN })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("WHATSAPP_PHONE_NUMBER_ID")
    expect(result.stderr).not.toContain(TOKEN)
  })
})

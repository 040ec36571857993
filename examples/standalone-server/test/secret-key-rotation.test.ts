import Database from "better-sqlite3"
import { randomBytes } from "node:crypto"
import { Option } from "effect"
import { Webhook } from "standardwebhooks"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { isSealedUnder, openSecret, parseSecretKey, sealSecret } from "@switchboard/core"
import { startSimulator, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"
import {
  api,
  assertBuilt,
  killServers,
  organizationWithChannel,
  removeTemporaryDirectories,
  runCli,
  runCliJson,
  runServerToExit,
  settledSend,
  startServer,
  type RunningServer,
  type ReceivedDelivery,
  startWebhookReceiver
} from "./helpers.js"

// Rotating SWITCHBOARD_SECRET_KEY (docs/deployment.md "Rotating the secret key") with the
// built CLI and server on a SQLite file, Meta's Graph API played by the WhatsApp simulator
// and a local webhook receiver: a server started with "new,old" serves before and after
// `secret-key rotate`, which runs while it serves; the rotation, run against a store where
// some values are already sealed under the new key (an interrupted run), finishes the work
// and again changes nothing; then the new key alone serves every channel and endpoint, and
// the old alone no longer starts.

const TOKEN = "EAAGsecretKeyRotation7Hj2Kl9Mn4"
const PHONE_NUMBER_ID = "106540352280001"
const OLD = randomBytes(32).toString("base64")
const NEW = randomBytes(32).toString("hex")
const keyOf = (text: string): Uint8Array => {
  const parsed = parseSecretKey(text)
  if (parsed._tag === "Left") throw new Error(parsed.left)
  return parsed.right
}

let simulator: WhatsAppSimulator
/** What the receiver got: the raw body and headers, verified afterwards. */
const received: Array<ReceivedDelivery> = []
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>> | undefined
let receiverUrl: string

beforeAll(async () => {
  assertBuilt()
  simulator = await startSimulator({
    numbers: [{ phone_number_id: PHONE_NUMBER_ID, display_phone_number: "+31 6 1234 5678", waba_id: "102290129340398", access_token: TOKEN }],
    statuses: []
  })
  receiver = await startWebhookReceiver(received)
  receiverUrl = receiver.url
})
afterEach(killServers)
afterAll(async () => {
  killServers()
  removeTemporaryDirectories()
  await simulator.close()
  await receiver?.close()
})

const waitFor = async (condition: () => boolean, timeoutMs: number, what: string) => {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const verifies = (secret: string, delivery: { readonly body: string; readonly headers: Record<string, string> }): boolean => {
  try {
    new Webhook(secret).verify(delivery.body, delivery.headers)
    return true
  } catch {
    return false
  }
}

const TEMPLATE = { name: "order_update", language: "en_US", category: "UTILITY", status: "APPROVED", components: [{ type: "BODY", text: "Order {{1}} has shipped." }] }

/**
 * The server works with its keys: a template send reaches Meta with the channel's token
 * (the simulator refuses any other), and a contact import reaches every endpoint, each
 * delivery verified by that endpoint's secret.
 */
const expectServes = async (server: RunningServer, apiKey: string, secrets: ReadonlyArray<string>, n: number) => {
  const sendsBefore = simulator.sends(PHONE_NUMBER_ID).length
  const answer = await api(server.baseUrl, apiKey, "POST", "/send/template", {
    phone: `+3162${String(n).padStart(7, "0")}`,
    template: { name: "order_update", language: { code: "en_US" }, components: [{ type: "body", parameters: [{ type: "text", text: `A-${n}` }] }] }
  })
  const sent = await settledSend(server.baseUrl, apiKey, answer, 30_000)
  expect(sent.status, JSON.stringify(sent.json)).toBe(200)
  expect(sent.json.data.status, JSON.stringify(sent.json)).toBe("sent")
  expect(simulator.sends(PHONE_NUMBER_ID).length).toBeGreaterThan(sendsBefore)

  const deliveredBefore = received.length
  const imported = await api(server.baseUrl, apiKey, "POST", "/contacts/bulk", {
    contacts: [{ first_name: `Person ${n}`, phone: `+3161${String(n).padStart(7, "0")}` }]
  })
  expect(imported.status, JSON.stringify(imported.json)).toBe(200)
  await waitFor(() => received.length >= deliveredBefore + secrets.length, 30_000, "one delivery per endpoint")
  const deliveries = received.slice(deliveredBefore)
  // Each endpoint's secret verifies one of the deliveries.
  for (const secret of secrets) expect(deliveries.some((delivery) => verifies(secret, delivery))).toBe(true)
}

describe("standalone server: rotating the secret key", () => {
  it("\"new,old\" serves before, during and after secret-key rotate (resumed from a partial run); then the new key alone serves and the old alone does not start", async () => {
    simulator.reset()
    const { env: base, apiKey, filename } = await organizationWithChannel({
      simulatorUrl: simulator.url,
      phoneNumberId: PHONE_NUMBER_ID,
      token: TOKEN,
      throughputMps: 20,
      templates: [TEMPLATE],
      extraEnv: { SWITCHBOARD_SECRET_KEY: OLD, SWITCHBOARD_WEBHOOKS_ALLOW_PRIVATE: "1" }
    })
    const withKeys = (keys: string) => ({ ...base, SWITCHBOARD_SECRET_KEY: keys })

    // Under the old key: two endpoints, one rotated (its previous secret signs for 24 h).
    const first = await startServer(withKeys(OLD))
    const created = await Promise.all([0, 1].map(() => api(first.baseUrl, apiKey, "POST", "/webhook-endpoints", { url: receiverUrl })))
    for (const answer of created) expect(answer.status, JSON.stringify(answer.json)).toBe(200)
    const rotated = await api(first.baseUrl, apiKey, "POST", `/webhook-endpoints/${created[1]!.json.data.uuid}/rotate-secret`, {})
    expect(rotated.status).toBe(200)
    const secrets = [created[0]!.json.data.secret as string, rotated.json.data.secret as string]
    await expectServes(first, apiKey, secrets, 1)
    first.child.kill("SIGKILL")
    await first.exited

    // One key only: refused, nothing changed.
    const alone = await runCli(["secret-key", "rotate"], withKeys(OLD))
    expect(alone.code).toBe(1)
    expect(alone.stderr).toContain("at least two keys")
    expect(alone.stdout).toBe("")

    // "new,old" serves the store sealed under the old key.
    const both = `${NEW},${OLD}`
    const serving = await startServer(withKeys(both))
    await expectServes(serving, apiKey, secrets, 2)

    // An interrupted run: the first endpoint's secret already sealed under the new key.
    const oldKey = keyOf(OLD)
    const newKey = keyOf(NEW)
    const db = new Database(filename)
    try {
      const row = db.prepare("SELECT uuid, secret_sealed FROM webhook_endpoints WHERE uuid = ?").get(created[0]!.json.data.uuid) as { uuid: string; secret_sealed: string }
      const plaintext = Option.getOrThrow(openSecret(oldKey, row.secret_sealed))
      db.prepare("UPDATE webhook_endpoints SET secret_sealed = ? WHERE uuid = ?").run(sealSecret(newKey, plaintext), row.uuid)
    } finally {
      db.close()
    }

    // The rotation runs while the "new,old" server serves; it finishes the work.
    const report = await runCliJson<Record<string, unknown>>(["secret-key", "rotate"], withKeys(both))
    expect(report).toEqual({
      channel_tokens_resealed: 1,
      webhook_secrets_resealed: 2,
      already_current: 1,
      unreadable: 0,
      key_check: "resealed"
    })
    for (const secret of [...secrets, TOKEN]) expect(JSON.stringify(report)).not.toContain(secret)
    await expectServes(serving, apiKey, secrets, 3)
    // Run again: nothing left to do.
    expect(await runCliJson(["secret-key", "rotate"], withKeys(both))).toEqual({
      channel_tokens_resealed: 0,
      webhook_secrets_resealed: 0,
      already_current: 4,
      unreadable: 0,
      key_check: "current"
    })
    serving.child.kill("SIGKILL")
    await serving.exited

    // Everything at rest is sealed under the new key now.
    const check = new Database(filename, { readonly: true })
    try {
      const sealed = [
        ...(check.prepare("SELECT access_token_sealed AS value FROM channels").all() as Array<{ value: string }>),
        ...(check.prepare("SELECT secret_sealed AS value FROM webhook_endpoints").all() as Array<{ value: string }>),
        ...(check.prepare("SELECT previous_secret_sealed AS value FROM webhook_endpoints WHERE previous_secret_sealed IS NOT NULL").all() as Array<{ value: string }>)
      ]
      expect(sealed).toHaveLength(4)
      for (const { value } of sealed) expect(isSealedUnder(newKey, value)).toBe(true)
    } finally {
      check.close()
    }

    // The new key alone serves; the old alone is refused at start.
    const renewed = await startServer(withKeys(NEW))
    await expectServes(renewed, apiKey, secrets, 4)
    renewed.child.kill("SIGKILL")
    await renewed.exited
    const refused = await runServerToExit(withKeys(OLD))
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toContain("SWITCHBOARD_SECRET_KEY")
  }, 180_000)
})

import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { sign, startSimulator, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"
import {
  assertBuilt,
  killServers,
  removeTemporaryDirectories,
  runCli,
  runCliJson,
  settledSend,
  startServer,
  temporaryDatabaseUrl,
  temporaryDirectory,
  type RunningServer
} from "./helpers.js"

// WhatsApp through the built CLI and server on one temporary SQLite file, Meta's Graph API
// replaced by the WhatsApp simulator: a channel added with the CLI, the webhook handshake, a send
// through the channel, signed status and inbound-message webhooks (repeated, out of order,
// badly signed, for an unknown number), a basic reply answered through the channel, the
// refused parts listed by `webhook-rejects list`, a sender number libphonenumber-js calls
// invalid answered by a send, and finally the channel's token and the app secret looked
// for everywhere they must not be.
// The steps run in order on one server and share its state.

const TOKEN = "EAAGe2eChannelToken5Vq8Rm2Kx7Nw3Pz"
const APP_SECRET = "e2e-app-secret-4f9c1d7a2b"
const VERIFY_TOKEN = "e2e-verify-token-8d3b"
// The fixtures' number and account, so their metadata needs no change.
const PHONE_NUMBER_ID = "106540352242922"
const WABA_ID = "102290129340398"
const UNKNOWN_PHONE_NUMBER_ID = "199999999999999"

/**
 * The WhatsApp simulator stands in for Meta's Graph API: a number look-up answers the
 * number, a messages POST Meta's answer with a new wamid. Status notifications are posted
 * by this test itself, so the simulator posts none.
 */
let simulator: WhatsAppSimulator
let graphUrl = ""

/** What the simulator received: method, URL, authorization header and parsed body (undefined when none). */
const graphCalls = () =>
  simulator.received().map(({ authorization, body, method, path }) => ({ method, url: path, authorization: authorization ?? undefined, body: body ?? undefined }))

/** The wamid the simulator gave the message of its `n`th call (1-based). */
const wamidOf = (n: number): string => simulator.received()[n - 1]!.wamid!

beforeAll(async () => {
  assertBuilt()
  simulator = await startSimulator({
    numbers: [{ phone_number_id: PHONE_NUMBER_ID, display_phone_number: "+1 555-078-3881", waba_id: WABA_ID, access_token: TOKEN }],
    statuses: []
  })
  graphUrl = simulator.url
})
afterAll(async () => {
  killServers()
  removeTemporaryDirectories()
  await simulator.close()
})

// Payloads are Meta's own fixtures with ids, numbers and texts changed.
const fixture = (name: string): any =>
  JSON.parse(readFileSync(new URL(`../../../packages/core/test/fixtures/whatsapp/${name}.json`, import.meta.url), "utf8"))

/** `statuses.json` with one status: `status` of the message `wamid`, sent to `recipient`. */
const statusWebhook = (wamid: string, status: "delivered" | "read", recipient: string): string => {
  const payload = fixture("statuses")
  const value = payload.entry[0].changes[0].value
  const [first] = value.statuses
  value.statuses = [{ ...first, id: wamid, status, recipient_id: recipient }]
  return JSON.stringify(payload)
}

/** `text.json` with one text from `from` (profile `name`) to `phoneNumberId`. */
const textWebhook = (options: { from: string; name: string; id: string; body: string; phoneNumberId?: string }): string => {
  const payload = fixture("text")
  const value = payload.entry[0].changes[0].value
  value.metadata.phone_number_id = options.phoneNumberId ?? PHONE_NUMBER_ID
  value.contacts[0].profile.name = options.name
  value.contacts[0].wa_id = options.from
  // Stamped now: free-form replies need the customer service window open (docs/messaging.md).
  Object.assign(value.messages[0], { from: options.from, id: options.id, text: { body: options.body }, timestamp: String(Math.floor(Date.now() / 1000)) })
  return JSON.stringify(payload)
}

/** Every response body this test received, to look for the token in at the end. */
const responseBodies: Array<string> = []

interface Answer {
  readonly status: number
  readonly contentType: string | null
  readonly text: string
  readonly json: any
}

/** One request to the server; the body is sent as the exact string given. */
const call = async (
  method: string,
  path: string,
  options: { body?: string; headers?: Record<string, string> } = {}
): Promise<Answer> => {
  const response = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: { ...(options.body === undefined ? {} : { "content-type": "application/json" }), ...options.headers },
    ...(options.body === undefined ? {} : { body: options.body })
  })
  const text = await response.text()
  responseBodies.push(text)
  const contentType = response.headers.get("content-type")
  return { status: response.status, contentType, text, json: contentType?.includes("json") === true ? JSON.parse(text) : undefined }
}

/** A request with the organization's API key. */
const api = (method: string, path: string, body?: unknown): Promise<Answer> =>
  call(method, path, { headers: { authorization: `Bearer ${apiKey}` }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })

/** POSTs a webhook body signed with `signature` (default: the right one). */
const webhook = (body: string, signature = sign(body, APP_SECRET)): Promise<Answer> =>
  call("POST", "/webhooks/whatsapp", { body, headers: { "x-hub-signature-256": signature } })

const messagesOf = async (chatUuid: string): Promise<Array<any>> => {
  const answer = await api("GET", `/chats/${chatUuid}/messages`)
  expect(answer.status, answer.text).toBe(200)
  return answer.json.data.messages
}

/**
 * `POST /send`, answered as its inline attempt would answer it: when that attempt was late
 * for its pacing slot and handed back (a busy machine), the answer once the dispatcher sent
 * it ({@link settledSend}), so the Graph API has its call either way.
 */
const sendAndWait = async (body: unknown): Promise<Answer> => settledSend(server.baseUrl, apiKey, await api("POST", "/send", body))

const chats = async (): Promise<Array<any>> => {
  const answer = await api("GET", "/chats")
  expect(answer.status, answer.text).toBe(200)
  return answer.json.data.chats
}

const contactPhones = async (): Promise<Array<string>> => {
  const answer = await api("GET", "/contacts")
  expect(answer.status, answer.text).toBe(200)
  return answer.json.data.contacts.map((contact: { phone: string }) => contact.phone).sort()
}

/** What a Graph API text send carries (Meta's shape), with the message's uuid as `biz_opaque_callback_data`. */
const textSend = (to: string, body: string, messageId: unknown) => ({
  messaging_product: "whatsapp",
  recipient_type: "individual",
  to,
  biz_opaque_callback_data: messageId,
  type: "text",
  text: { preview_url: false, body }
})

// State shared by the steps, in order.
let databaseFile = ""
let env: Record<string, string> = {}
let apiKey = ""
let orgId = ""
let server: RunningServer
let cliOutput = ""
let sent: { message_id: string; chat_uuid: string; contact_uuid: string; status: string }
let sentWamid = ""

describe("WhatsApp end to end: built CLI and server, SQLite, the WhatsApp simulator as Graph API", () => {
  it("org create, then channel add with a token file, verified by the Graph API", async () => {
    const databaseUrl = temporaryDatabaseUrl()
    databaseFile = databaseUrl.slice("sqlite:".length)
    env = {
      DATABASE_URL: databaseUrl,
      WHATSAPP_API_BASE_URL: graphUrl,
      WHATSAPP_APP_SECRET: APP_SECRET,
      WHATSAPP_WEBHOOK_VERIFY_TOKEN: VERIFY_TOKEN,
      // Rate limits in the SQLite file even when the caller's environment names a Redis.
      REDIS_URL: ""
    }
    const org = await runCliJson<{ org_id: string; api_key: string }>(["org", "create", "--name", "Acme"], env)
    apiKey = org.api_key
    orgId = org.org_id
    const tokenFile = join(temporaryDirectory(), "token.txt")
    writeFileSync(tokenFile, `${TOKEN}\n`)
    const added = await runCli(
      ["channel", "add", "--org", org.org_id, "--phone-number-id", PHONE_NUMBER_ID, "--waba-id", WABA_ID, "--access-token-file", tokenFile],
      env
    )
    expect(added.code, added.stderr).toBe(0)
    cliOutput = added.stdout + added.stderr
    expect(JSON.parse(added.stdout)).toMatchObject({ phone_number_id: PHONE_NUMBER_ID, display_phone_number: "+15550783881", access_token_set: true })
    expect(graphCalls()).toEqual([{ method: "GET", url: `/v21.0/${PHONE_NUMBER_ID}`, authorization: `Bearer ${TOKEN}`, body: undefined }])
  })

  it("starts the server; the handshake echoes the challenge with the right verify token, 403 with another", async () => {
    server = await startServer(env)
    const challenge = "1158201444"
    const right = await call("GET", `/webhooks/whatsapp?hub.mode=subscribe&hub.verify_token=${VERIFY_TOKEN}&hub.challenge=${challenge}`)
    expect(right.status).toBe(200)
    expect(right.contentType).toMatch(/^text\/plain/)
    expect(right.text).toBe(challenge)
    const wrong = await call("GET", `/webhooks/whatsapp?hub.mode=subscribe&hub.verify_token=not-${VERIFY_TOKEN}&hub.challenge=${challenge}`)
    expect(wrong.status).toBe(403)
    expect(wrong.json.errors[0].code).toBe("invalid_verify_token")
    expect(wrong.text).not.toContain(challenge)
  })

  it("POST /send reaches the Graph API with the channel's number, token and the text", async () => {
    // The customer writes first: a text reply needs its customer service window open.
    const inbound = await webhook(textWebhook({ from: "14155550101", name: "Ada", id: "wamid.inbound-e2e-first", body: "Where is my order?" }))
    expect(inbound.status, inbound.text).toBe(200)
    const before = graphCalls().length
    const answer = await sendAndWait({ phone: "+14155550101", message: "Your order shipped" })
    expect(answer.status, answer.text).toBe(200)
    sent = answer.json.data
    expect(graphCalls().slice(before)).toEqual([
      {
        method: "POST",
        url: `/v21.0/${PHONE_NUMBER_ID}/messages`,
        authorization: `Bearer ${TOKEN}`,
        body: textSend("14155550101", "Your order shipped", answer.json.data.message_id)
      }
    ])
    sentWamid = wamidOf(before + 1)
    expect(sent.status).toBe("sent")
    const [message] = await messagesOf(sent.chat_uuid)
    expect(message).toMatchObject({ uuid: sent.message_id, direction: "outbound", status: "sent", provider_message_id: sentWamid })
  })

  it("signed delivered then read → 200 {received: 1} each, the message is read; delivered again leaves it read", async () => {
    const delivered = statusWebhook(sentWamid, "delivered", "14155550101")
    for (const body of [delivered, statusWebhook(sentWamid, "read", "14155550101"), delivered]) {
      const answer = await webhook(body)
      expect(answer.status, answer.text).toBe(200)
      expect(answer.json).toMatchObject({ status: 200, data: { received: 1 }, errors: [] })
    }
    const [message] = await messagesOf(sent.chat_uuid)
    expect(message).toMatchObject({ uuid: sent.message_id, status: "read", provider_message_id: sentWamid })
  })

  it("a webhook with a wrong signature → 401 invalid_signature, nothing stored", async () => {
    const contactsBefore = await contactPhones()
    const body = textWebhook({ from: "16505559876", name: "Mallory", id: "wamid.forged1", body: "hello" })
    for (const signature of [sign(body, "not-the-app-secret"), sign(`${body} `, APP_SECRET)]) {
      const answer = await webhook(body, signature)
      expect(answer.status).toBe(401)
      expect(answer.json.errors[0].code).toBe("invalid_signature")
    }
    expect(await contactPhones()).toEqual(contactsBefore)
    expect(contactsBefore).not.toContain("+16505559876")
  })

  it("an inbound text from a new number: contact named by the profile, unread chat; the same delivery again changes nothing", async () => {
    const body = textWebhook({ from: "16505551234", name: "Sheena Nelson", id: "wamid.inbound-e2e-1", body: "Does it come in another color?" })
    const first = await webhook(body)
    expect(first.status, first.text).toBe(200)
    expect(first.json.data).toEqual({ received: 1 })
    const chat = (await chats()).find((c) => c.contact.phone === "+16505551234")
    expect(chat).toMatchObject({ unread_count: 1, contact: { phone: "+16505551234", first_name: "Sheena Nelson" } })
    const again = await webhook(body)
    expect(again.status, again.text).toBe(200)
    expect((await chats()).find((c) => c.contact.phone === "+16505551234")).toMatchObject({ uuid: chat.uuid, unread_count: 1 })
    const messages = await messagesOf(chat.uuid)
    expect(messages).toHaveLength(1)
    expect(messages[0]).toMatchObject({ direction: "inbound", type: "text", text: "Does it come in another color?", provider_message_id: "wamid.inbound-e2e-1" })
    expect(await contactPhones()).toEqual(["+14155550101", "+16505551234"])
  })

  it("a basic reply's trigger is answered through the same channel, and the chat shows the reply", async () => {
    const reply = await api("POST", "/basic-replies", { name: "Hours", trigger: "opening hours", response: "We are open 9 to 5, Monday to Friday." })
    expect(reply.status, reply.text).toBe(200)
    const before = graphCalls().length
    const answer = await webhook(textWebhook({ from: "16505550199", name: "Ravi", id: "wamid.inbound-e2e-2", body: "  Opening Hours " }))
    expect(answer.status, answer.text).toBe(200)
    expect(answer.json.data).toEqual({ received: 1 })
    // The reply is queued with the inbound message; the server's dispatcher sends it at once.
    await simulator.waitFor(() => graphCalls().length > before, "the automatic reply at the Graph API")
    expect(graphCalls().slice(before)).toEqual([
      {
        method: "POST",
        url: `/v21.0/${PHONE_NUMBER_ID}/messages`,
        authorization: `Bearer ${TOKEN}`,
        body: textSend("16505550199", "We are open 9 to 5, Monday to Friday.", expect.any(String))
      }
    ])
    const chat = (await chats()).find((c) => c.contact.phone === "+16505550199")
    let messages = await messagesOf(chat.uuid)
    for (let tries = 0; messages[0]?.status !== "sent" && tries < 100; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 20))
      messages = await messagesOf(chat.uuid)
    }
    expect(messages.map((m) => [m.direction, m.text])).toEqual([
      ["outbound", "We are open 9 to 5, Monday to Friday."],
      ["inbound", "  Opening Hours "]
    ])
    expect(messages[0]).toMatchObject({ status: "sent", provider_message_id: wamidOf(before + 1), channel_uuid: messages[1].channel_uuid })
    expect(graphCalls()[before]!.body).toMatchObject({ biz_opaque_callback_data: messages[0].uuid })
  })

  it("an inbound text for a phone_number_id no channel has → 200 {received: 0}, no contact, chat or message stored", async () => {
    const contactsBefore = await contactPhones()
    const chatsBefore = await chats()
    const answer = await webhook(
      textWebhook({ from: "16505550777", name: "Nobody", id: "wamid.inbound-e2e-3", body: "hi", phoneNumberId: UNKNOWN_PHONE_NUMBER_ID })
    )
    expect(answer.status, answer.text).toBe(200)
    expect(answer.json.data).toEqual({ received: 0 })
    expect(await contactPhones()).toEqual(contactsBefore)
    expect(await chats()).toEqual(chatsBefore)
  })

  it("an empty text is answered 200 but kept as refused; `webhook-rejects list` shows it (--org, --limit), never the unknown number's change", async () => {
    const empty = textWebhook({ from: "16505550999", name: "Blank", id: "wamid.inbound-e2e-empty", body: "" })
    const answer = await webhook(empty)
    expect([answer.status, answer.json.data]).toEqual([200, { received: 1 }])
    const mine = await runCliJson<Array<any>>(["webhook-rejects", "list", "--org", orgId], env)
    expect(mine).toEqual([
      {
        id: expect.any(String),
        received_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
        organization_id: orgId,
        phone_number_id: PHONE_NUMBER_ID,
        reason: "text: required",
        item: JSON.parse(empty).entry[0].changes[0].value.messages[0]
      }
    ])
    const all = await runCliJson<Array<any>>(["webhook-rejects", "list"], env)
    expect(all.map((reject) => [reject.organization_id, reject.phone_number_id, reject.reason])).toEqual([[orgId, PHONE_NUMBER_ID, "text: required"]])
    await webhook(textWebhook({ from: "16505550998", name: "Blank", id: "wamid.inbound-e2e-empty-2", body: "" }))
    const both = await runCliJson<Array<any>>(["webhook-rejects", "list"], env)
    expect(both).toHaveLength(2)
    expect(await runCliJson<Array<any>>(["webhook-rejects", "list", "--limit", "1"], env)).toEqual([both[0]])
    const badLimit = await runCli(["webhook-rejects", "list", "--limit", "0"], env)
    expect([badLimit.code, badLimit.stdout]).toEqual([1, ""])
    expect(badLimit.stderr).toContain("--limit")
    // The server's log: the refusal's warning and the webhook's request line name the organization.
    const logLines = server
      .output()
      .stderr.split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as { message: string; annotations: Record<string, unknown> })
    const refusal = logLines.find((line) => line.annotations.provider_message_id === "wamid.inbound-e2e-empty")
    expect(refusal?.annotations).toMatchObject({ organization_id: orgId, reason: "text: required" })
    const webhookRequests = logLines.filter((line) => line.message === "request" && line.annotations.route === "/webhooks/whatsapp" && line.annotations.status === 200)
    expect(webhookRequests.at(-1)?.annotations.organization_id).toBe(orgId)
  })

  it("a sender libphonenumber-js calls invalid (from 999123): the message lands in its chat, the contact is unverified, a send answers it", async () => {
    const answer = await webhook(textWebhook({ from: "999123", name: "Odd", id: "wamid.inbound-e2e-odd", body: "Still there?" }))
    expect([answer.status, answer.json.data]).toEqual([200, { received: 1 }])
    const chat = (await chats()).find((each) => each.contact.phone === "+999123")
    expect(chat).toMatchObject({ unread_count: 1, last_message: { text: "Still there?" } })
    expect((await api("GET", `/contacts/${chat.contact.uuid}`)).json.data).toMatchObject({ phone: "+999123", phone_valid: false })
    const before = graphCalls().length
    const reply = await sendAndWait({ phone: "+999123", message: "Yes!" })
    expect(reply.status, reply.text).toBe(200)
    expect(reply.json.data).toMatchObject({ chat_uuid: chat.uuid, status: "sent" })
    expect(graphCalls().slice(before).map((each) => (each.body as { to: string }).to)).toEqual(["999123"])
  })

  it("the channel's token is in no log line, no response, no CLI output, not in the SQLite files; the secrets in no log line", () => {
    const { stdout, stderr } = server.output()
    const logs = `${stdout}\n${stderr}`
    // The server did log requests and webhooks: an empty log would prove nothing.
    expect(stderr.split("\n").length).toBeGreaterThan(10)
    expect(logs).not.toContain(TOKEN)
    expect(logs).not.toContain(APP_SECRET)
    expect(logs).not.toContain(VERIFY_TOKEN)
    expect(cliOutput).not.toContain(TOKEN)
    expect(responseBodies.length).toBeGreaterThan(10)
    for (const body of responseBodies) expect(body).not.toContain(TOKEN)
    const files = [databaseFile, `${databaseFile}-wal`, `${databaseFile}-shm`].filter(existsSync)
    const bytes = Buffer.concat(files.map((file) => readFileSync(file)))
    // The files do hold this flow's data; they just do not hold the token.
    expect(bytes.includes(PHONE_NUMBER_ID)).toBe(true)
    expect(bytes.includes("We are open 9 to 5")).toBe(true)
    expect(bytes.includes(TOKEN)).toBe(false)
  })
})

import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { maxInWindow, startSimulator, type WhatsAppSimulator } from "../src/index.js"
import { graph, textSend } from "./helpers.js"

// The Graph side over real sockets: the number look-up, sends, Meta's errors, the script
// (recipient, sequence, share, delay, drop) and the records.

const TOKEN = "EAAGsimulator-test-token-0001"
const OTHER_TOKEN = "EAAGsimulator-other-token-0002"
const ID = "106540352242922"
const OTHER_ID = "106540352249999"

let simulator: WhatsAppSimulator
beforeAll(async () => {
  simulator = await startSimulator({
    numbers: [
      { phone_number_id: ID, display_phone_number: "+1 555-078-3881", waba_id: "102290129340398", access_token: TOKEN, verified_name: "Acme" },
      { phone_number_id: OTHER_ID, display_phone_number: "+1 555-078-3882", waba_id: "102290129340398", access_token: [OTHER_TOKEN] }
    ]
  })
})
afterEach(() => simulator.reset())
afterAll(() => simulator.close())

const send = (to: string, extra: Record<string, unknown> = {}, token = TOKEN, id = ID) =>
  graph(simulator.url, `/v21.0/${id}/messages`, token, textSend(to, "Hello", extra))

describe("GET /{version}/{phone_number_id}", () => {
  it("answers the number's record as Meta does; ?fields keeps those and id", async () => {
    const answer = await graph(simulator.url, `/v21.0/${ID}`, TOKEN)
    expect(answer.status).toBe(200)
    expect(answer.contentType).toMatch(/^application\/json/)
    expect(answer.json).toEqual({
      verified_name: "Acme",
      code_verification_status: "VERIFIED",
      display_phone_number: "+1 555-078-3881",
      quality_rating: "GREEN",
      platform_type: "CLOUD_API",
      throughput: { level: "STANDARD" },
      id: ID
    })
    const some = await graph(simulator.url, `/v22.0/${ID}?fields=display_phone_number`, TOKEN)
    expect(some.json).toEqual({ display_phone_number: "+1 555-078-3881", id: ID })
  })

  it("a missing or unknown token is Meta's OAuth error: 401, code 190, in Meta's error shape", async () => {
    for (const token of [null, "EAAGnot-a-known-token"]) {
      const answer = await graph(simulator.url, `/v21.0/${ID}`, token)
      expect(answer.status).toBe(401)
      expect(answer.json).toEqual({
        error: { message: expect.stringContaining("Invalid OAuth access token"), type: "OAuthException", code: 190, fbtrace_id: expect.any(String) }
      })
    }
  })

  it("an unknown number, or another number's token, is Meta's 100 (subcode 33) for GET and POST", async () => {
    for (const [path, token] of [[`/v21.0/999`, TOKEN], [`/v21.0/${OTHER_ID}`, TOKEN]] as const) {
      const answer = await graph(simulator.url, path, token)
      expect(answer.status).toBe(400)
      expect(answer.json.error).toMatchObject({ type: "GraphMethodException", code: 100, error_subcode: 33 })
      expect(answer.json.error.message).toMatch(/^Unsupported get request\. Object with ID '\d+' does not exist/)
    }
    const post = await send("16505551234", {}, TOKEN, OTHER_ID)
    expect([post.status, post.json.error.code]).toEqual([400, 100])
    expect(post.json.error.message).toMatch(/^Unsupported post request/)
    expect((await send("16505551234", {}, OTHER_TOKEN, OTHER_ID)).status).toBe(200)
  })

  it("a path Graph does not have is Meta's 2500 error", async () => {
    const answer = await graph(simulator.url, "/v21.0/abc/whatever", TOKEN)
    expect([answer.status, answer.json.error.code]).toEqual([400, 2500])
  })
})

describe("POST /{version}/{phone_number_id}/messages", () => {
  it("answers Meta's shape with a fresh wamid each time, and records method, path, body, number, token and arrival time", async () => {
    const before = Date.now()
    const first = await send("+1 650-555-1234")
    const second = await graph(simulator.url, `/v21.0/${ID}/messages`, TOKEN, { messaging_product: "whatsapp", to: "16505551234", type: "template", template: { name: "t" } })
    expect(first.status).toBe(200)
    expect(first.json).toEqual({
      messaging_product: "whatsapp",
      contacts: [{ input: "+1 650-555-1234", wa_id: "16505551234" }],
      messages: [{ id: expect.stringMatching(/^wamid\.[A-Za-z0-9+/=]+$/) }]
    })
    expect(second.json.messages).toEqual([{ id: expect.stringMatching(/^wamid\./), message_status: "accepted" }])
    expect(second.json.messages[0].id).not.toBe(first.json.messages[0].id)
    const [record] = simulator.sends(ID)
    expect(record).toMatchObject({
      seq: 1,
      method: "POST",
      path: `/v21.0/${ID}/messages`,
      route: "messages",
      phone_number_id: ID,
      authorization: `Bearer ${TOKEN}`,
      body: textSend("+1 650-555-1234"),
      answer: { status: 200, body: first.json },
      wamid: first.json.messages[0].id
    })
    expect(record!.at_ms).toBeGreaterThanOrEqual(before)
    expect(record!.at_ms).toBeLessThanOrEqual(Date.now())
    expect(simulator.arrivals(ID)).toHaveLength(2)
    expect(simulator.arrivals(OTHER_ID)).toHaveLength(0)
  })

  it("a body without messaging_product, to or the type's object is Meta's (#100) error, and no wamid", async () => {
    for (const body of [{ to: "1", type: "text", text: { body: "x" } }, { messaging_product: "whatsapp", type: "text", text: {} }, { messaging_product: "whatsapp", to: "1", type: "image" }]) {
      const answer = await graph(simulator.url, `/v21.0/${ID}/messages`, TOKEN, body)
      expect(answer.status).toBe(400)
      expect(answer.json.error).toMatchObject({ code: 100, type: "OAuthException", message: expect.stringMatching(/^\(#100\) /) })
    }
    expect(simulator.sends().every((entry) => entry.wamid === null)).toBe(true)
  })
})

describe("scripting", () => {
  it("refuses by recipient (any format) with Meta's error and the code's HTTP status, or the one given; never consumed", async () => {
    simulator.script.refuseRecipient("+1 650 555 0001", { code: 131056 })
    simulator.script.refuseRecipient("16505550002", { code: 131026, http_status: 400, details: "Message undeliverable." })
    for (let round = 0; round < 2; round++) {
      const paired = await send("16505550001")
      expect(paired.status).toBe(429)
      expect(paired.json.error).toMatchObject({
        message: "(#131056) (Business Account, Consumer Account) pair rate limit hit",
        type: "OAuthException",
        code: 131056,
        error_data: { messaging_product: "whatsapp", details: expect.any(String) },
        fbtrace_id: expect.any(String)
      })
    }
    const undeliverable = await send("+16505550002")
    expect([undeliverable.status, undeliverable.json.error.code, undeliverable.json.error.error_data.details]).toEqual([400, 131026, "Message undeliverable."])
    expect((await send("16505550003")).status).toBe(200)
    simulator.script.clearRecipient("+16505550001")
    expect((await send("16505550001")).status).toBe(200)
  })

  it("a sequence of codes and HTTP statuses is consumed in order, one per send, then sends succeed", async () => {
    simulator.script.enqueue([{ code: 130429 }, { http_status: 503 }, { code: 190 }, {}, { code: 131000, http_status: 502 }])
    const answers = []
    for (let n = 0; n < 6; n++) answers.push(await send(`1650555010${n}`))
    expect(answers.map((answer) => [answer.status, answer.json?.error?.code ?? null])).toEqual([
      [429, 130429],
      [503, null],
      [401, 190],
      [200, null],
      [502, 131000],
      [200, null]
    ])
    expect(answers[1]!.contentType).toMatch(/^text\/plain/)
    expect(simulator.script.pending()).toBe(0)
  })

  it("a lookup sequence is separate from the sends' and may carry its own message", async () => {
    simulator.script.enqueue([{ code: 190, message: "Error validating access token: Session has expired" }], "lookup")
    expect((await send("16505550200")).status).toBe(200)
    const refused = await graph(simulator.url, `/v21.0/${ID}`, TOKEN)
    expect([refused.status, refused.json.error.message]).toEqual([401, "Error validating access token: Session has expired"])
    expect((await graph(simulator.url, `/v21.0/${ID}`, TOKEN)).status).toBe(200)
  })

  it("refuses a share of sends, the same ones for the same seed", async () => {
    const run = async () => {
      simulator.reset()
      simulator.script.setShare({ fraction: 0.3, seed: 42, answer: { code: 131000 } })
      const statuses = []
      for (let n = 0; n < 40; n++) statuses.push((await send(`1650555${String(n).padStart(4, "0")}`)).status)
      return statuses
    }
    const first = await run()
    const second = await run()
    expect(second).toEqual(first)
    const refused = first.filter((status) => status === 500).length
    expect(refused).toBeGreaterThan(4)
    expect(refused).toBeLessThan(24)
    expect(first.filter((status) => status === 200).length).toBe(40 - refused)
    simulator.script.setShare({ fraction: 0, seed: 1, answer: { code: 131000 } })
    expect((await send("16505559999")).status).toBe(200)
    expect(() => simulator.script.setShare({ fraction: 1.5, seed: 1, answer: {} })).toThrow(/fraction/)
  })

  it("delays an answer: the request is recorded at once, the answer only after the delay", async () => {
    simulator.script.setDefault({ delay_ms: 300 })
    const pending = send("16505550300")
    const arrived = await simulator.waitFor(() => simulator.sends()[0], "the send")
    expect(arrived.answer).toBeNull()
    const answer = await pending
    expect(answer.status).toBe(200)
    expect(simulator.sends()[0]!.answer).toMatchObject({ status: 200 })
  })

  it('drops an answer: "close" ends the connection after reading the request, "hang" never answers', async () => {
    simulator.script.enqueue([{ drop: "close" }, { drop: "hang" }])
    await expect(send("16505550400")).rejects.toThrow()
    expect(simulator.sends()[0]).toMatchObject({ body: textSend("16505550400"), answer: { dropped: "close" }, wamid: null })
    const hanging = fetch(`${simulator.url}/v21.0/${ID}/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify(textSend("16505550401")),
      signal: AbortSignal.timeout(300)
    })
    await expect(hanging).rejects.toThrow()
    expect(simulator.sends()[1]).toMatchObject({ answer: { dropped: "hang" } })
  })

  it("rejects a malformed answer with a message naming the field", () => {
    expect(() => simulator.script.enqueue([{ code: 1.5 }])).toThrow(/code must be an integer/)
    expect(() => simulator.script.refuseRecipient("1", { drop: "later" as "close" })).toThrow(/drop/)
    expect(() => simulator.script.setDefault({ http_status: 99 })).toThrow(/http_status/)
  })

  it("reset forgets the records and the script, keeps the numbers", async () => {
    simulator.script.refuseRecipient("16505550500", { code: 131026 })
    simulator.script.enqueue([{ code: 4 }])
    await send("16505550501")
    simulator.reset()
    expect(simulator.received()).toEqual([])
    expect((await send("16505550500")).status).toBe(200)
    expect(simulator.sends()[0]!.seq).toBe(1)
  })
})

describe("delayMs", () => {
  it("delays every answer no rule takes, and is kept by reset", async () => {
    const slow = await startSimulator({ numbers: [{ phone_number_id: ID, display_phone_number: "+1 555-078-3881", waba_id: "1", access_token: TOKEN }], delayMs: 300 })
    try {
      slow.script.enqueue([{ code: 131000 }])
      slow.reset()
      const pending = graph(slow.url, `/v21.0/${ID}/messages`, TOKEN, textSend("16505550600"))
      expect((await slow.waitFor(() => slow.sends()[0], "the send")).answer).toBeNull()
      expect((await pending).status).toBe(200)
    } finally {
      await slow.close()
    }
  })
})

describe("maxInWindow", () => {
  it("counts the most arrivals in any half-open window [t, t + w)", () => {
    expect(maxInWindow([], 1000)).toBe(0)
    expect(maxInWindow([0, 999, 1000, 1999.5, 3000], 1000)).toBe(2)
    expect(maxInWindow([5, 1, 3, 2, 4], 3)).toBe(3)
  })
})

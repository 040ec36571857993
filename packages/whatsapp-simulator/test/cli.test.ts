import { type ChildProcess, execFile, spawn } from "node:child_process"
import { createHash, createHmac, randomBytes } from "node:crypto"
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createInterface } from "node:readline"
import { fileURLToPath } from "node:url"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { startReceiver, graph } from "./helpers.js"

// The built CLI (dist/cli.js; `npm test` builds first): serve, inbound, template-status,
// received and reset, each printing JSON lines, and clear errors with a non-zero exit.

const cli = fileURLToPath(new URL("../dist/cli.js", import.meta.url))
const SECRET = "cli-app-secret"
const directory = mkdtempSync(join(tmpdir(), "switchboard-simulator-cli-"))

let receiver: Awaited<ReturnType<typeof startReceiver>>
const children: Array<ChildProcess> = []
beforeAll(async () => {
  if (!existsSync(cli)) throw new Error("Build the simulator first (node build.mjs packages/whatsapp-simulator): no dist/cli.js")
  receiver = await startReceiver()
})
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGTERM")
  receiver.deliveries.length = 0
})
afterAll(async () => {
  await receiver.close()
  rmSync(directory, { recursive: true, force: true })
})

/** The environment of a CLI run: none of the caller's SIMULATOR_* variables, plus `env`. */
const environment = (env: Record<string, string>) => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("SIMULATOR_"))),
  ...env
})

/** Runs the CLI to its end: exit code, stdout, stderr. */
const run = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, [cli, ...args], { env: environment(env) }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, stdout, stderr })
    )
  })

/** Starts `serve` and resolves with its first JSON line (`listening`) and the process. */
const serve = async (args: ReadonlyArray<string>, env: Record<string, string> = {}) => {
  const child = spawn(process.execPath, [cli, ...args], { env: environment(env), stdio: ["ignore", "pipe", "pipe"] })
  children.push(child)
  const lines = createInterface({ input: child.stdout! })
  const iterator = lines[Symbol.asyncIterator]()
  const first = await iterator.next()
  if (first.done === true) throw new Error("serve ended without printing")
  return { child, listening: JSON.parse(first.value as string), next: async () => JSON.parse((await iterator.next()).value as string) }
}

/**
 * Each test starts node processes (the CLI, a server): 5 s is too short on a loaded 2-core
 * machine, where a start alone took over 5 s in a full run.
 */
const PROCESS_TEST_TIMEOUT_MS = 30_000

describe("serve", { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it("without options: the default number, any free port given; answers Graph calls and prints a line per request; SIGTERM ends it with 0", async () => {
    const { child, listening, next } = await serve(["--port", "0"])
    expect(listening).toMatchObject({
      event: "listening",
      url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      numbers: [{ phone_number_id: "106540352242922", display_phone_number: "+1 555-078-3881", waba_id: "102290129340398", access_token_last4: ["0001"] }],
      webhook_url: null,
      app_secret_set: false
    })
    const lookup = await graph(listening.url, "/v21.0/106540352242922", "EAAGsimulator-access-token-0001")
    expect(lookup.json.display_phone_number).toBe("+1 555-078-3881")
    expect(await next()).toMatchObject({ event: "graph_request", method: "GET", path: "/v21.0/106540352242922", answer: { status: 200 } })
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve))
    child.kill("SIGTERM")
    expect(await exited).toBe(0)
  })

  it("numbers from a file or from variables, the webhook URL and app secret from variables; statuses signed", async () => {
    const file = join(directory, "numbers.json")
    writeFileSync(file, JSON.stringify([{ phone_number_id: "111", display_phone_number: "+1 555-000-0111", waba_id: "9", access_token: "EAAGfile-token-0111" }]))
    const fromFile = await serve(["--port", "0", "--numbers-file", file])
    expect(fromFile.listening.numbers.map((n: { phone_number_id: string }) => n.phone_number_id)).toEqual(["111"])
    const { listening } = await serve(["--status-delay-ms", "0", "--statuses", "delivered"], {
      SIMULATOR_PORT: "0",
      SIMULATOR_PHONE_NUMBER_ID: "222",
      SIMULATOR_ACCESS_TOKEN: "EAAGenv-token-0222",
      SIMULATOR_WEBHOOK_URL: receiver.url,
      SIMULATOR_APP_SECRET: SECRET
    })
    expect(listening).toMatchObject({ webhook_url: receiver.url, app_secret_set: true, statuses: ["delivered"], status_delay_ms: 0 })
    expect(JSON.stringify(listening)).not.toContain("EAAGenv-token-0222")
    const sent = await graph(listening.url, "/v21.0/222/messages", "EAAGenv-token-0222", { messaging_product: "whatsapp", to: "16505551234", type: "text", text: { body: "x" } })
    expect(sent.status).toBe(200)
    const delivery = await new Promise<(typeof receiver.deliveries)[number]>((resolve) => {
      const poll = () => (receiver.deliveries.length > 0 ? resolve(receiver.deliveries[0]!) : setTimeout(poll, 10))
      poll()
    })
    expect(delivery.headers["x-hub-signature-256"]).toBe(`sha256=${createHmac("sha256", SECRET).update(delivery.body).digest("hex")}`)
    expect(JSON.parse(delivery.body).entry[0].changes[0].value.statuses[0]).toMatchObject({ status: "delivered", id: sent.json.messages[0].id })
  })

  it.each([
    [["--port", "http"], /--port must be an integer/],
    [["--statuses", "sent,seen"], /--statuses must be/],
    [["--numbers-file", "/nonexistent/numbers.json"], /--numbers-file .* is not a readable JSON file/],
    [["--phone-number-id", "333"], /set SIMULATOR_ACCESS_TOKEN/],
    [["--bogus"], /unknown option '--bogus'/],
    [["--webhook-url", "127.0.0.1:3000/webhooks"], /--webhook-url must be an http\(s\) URL/]
  ] as const)("%j → a clear error on stderr, non-zero exit", async (args, message) => {
    const result = await run(["serve", "--port", "0", ...args])
    expect(result.code).not.toBe(0)
    expect(result.stderr).toMatch(message)
    expect(result.stdout).toBe("")
  })

  it("a port in use → an error naming it, exit 1", async () => {
    const port = new URL(receiver.url).port
    const result = await run(["serve", "--port", port])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain(`cannot listen on 127.0.0.1:${port}`)
  })
})

describe("inbound and template-status", { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it("inbound posts a signed customer message of the type asked, stamped now, and prints the answer", async () => {
    const before = Math.floor(Date.now() / 1000)
    const env = { SIMULATOR_APP_SECRET: SECRET }
    const common = ["inbound", "--webhook-url", receiver.url, "--from", "+1 650-555-1234", "--name", "Sheena Nelson", "--phone-number-id", "444"]
    const cases: Array<[ReadonlyArray<string>, Record<string, unknown>]> = [
      [["--text", "Hi"], { type: "text", text: { body: "Hi" } }],
      [["--type", "image", "--media-id", "1003", "--mime-type", "image/jpeg", "--caption", "This one"], { type: "image", image: { id: "1003", mime_type: "image/jpeg", caption: "This one" } }],
      [["--type", "location", "--latitude", "37.48", "--longitude", "-122.14", "--location-name", "HQ"], { type: "location", location: { latitude: 37.48, longitude: -122.14, name: "HQ" } }],
      [["--type", "button", "--text", "Stop", "--payload", "STOP"], { type: "button", button: { text: "Stop", payload: "STOP" } }],
      [["--type", "reaction", "--message-id", "wamid.x", "--emoji", "👍"], { type: "reaction", reaction: { message_id: "wamid.x", emoji: "👍" } }],
      [["--type", "list_reply", "--reply-id", "p1", "--title", "Express"], { type: "interactive", interactive: { type: "list_reply", list_reply: { id: "p1", title: "Express" } } }],
      [["--message-json", '{"type":"order","order":{"catalog_id":"1"}}'], { type: "order", order: { catalog_id: "1" } }]
    ]
    for (const [args, message] of cases) {
      const result = await run([...common, ...args], env)
      expect(result.code, result.stderr).toBe(0)
      const line = JSON.parse(result.stdout)
      expect(line).toMatchObject({ event: "inbound", id: expect.stringMatching(/^wamid\./), type: message.type, from: "16505551234", answered: 200, response: { received: 1 } })
      const delivery = receiver.deliveries.at(-1)!
      expect(delivery.headers["x-hub-signature-256"]).toBe(`sha256=${createHmac("sha256", SECRET).update(delivery.body).digest("hex")}`)
      const value = JSON.parse(delivery.body).entry[0].changes[0].value
      expect(value.metadata.phone_number_id).toBe("444")
      expect(value.contacts).toEqual([{ profile: { name: "Sheena Nelson" }, wa_id: "16505551234" }])
      expect(value.messages[0]).toMatchObject({ ...message, from: "16505551234", id: line.id })
      expect(Number(value.messages[0].timestamp)).toBeGreaterThanOrEqual(before)
    }
    expect(receiver.deliveries).toHaveLength(cases.length)
  })

  it("template-status posts a signed message_template_status_update", async () => {
    const result = await run(["template-status", "--webhook-url", receiver.url, "--waba-id", "555", "--name", "order_update", "--language", "en_US", "--event", "APPROVED"], { SIMULATOR_APP_SECRET: SECRET })
    expect(result.code, result.stderr).toBe(0)
    expect(JSON.parse(result.stdout)).toMatchObject({ event: "template_status", answered: 200 })
    const payload = JSON.parse(receiver.deliveries[0]!.body)
    expect(payload.entry[0]).toMatchObject({ id: "555", changes: [{ field: "message_template_status_update", value: { event: "APPROVED", message_template_name: "order_update", message_template_language: "en_US" } }] })
  })

  it.each([
    [["inbound", "--from", "16505551234", "--text", "x"], {}, /--webhook-url/],
    [["inbound", "--webhook-url", "http://127.0.0.1:9/", "--from", "16505551234", "--text", "x"], {}, /set SIMULATOR_APP_SECRET/],
    [["inbound", "--webhook-url", "http://127.0.0.1:9/", "--from", "16505551234"], { SIMULATOR_APP_SECRET: "s" }, /--type text needs --text/],
    [["inbound", "--webhook-url", "http://127.0.0.1:9/", "--from", "16505551234", "--type", "gif"], { SIMULATOR_APP_SECRET: "s" }, /argument 'gif' is invalid/],
    [["inbound", "--webhook-url", "http://127.0.0.1:9/", "--from", "16505551234", "--message-json", "{"], { SIMULATOR_APP_SECRET: "s" }, /--message-json is not JSON/],
    [["template-status", "--webhook-url", "http://127.0.0.1:9/", "--name", "t", "--language", "en", "--event", "approved"], { SIMULATOR_APP_SECRET: "s" }, /--event must be/],
    [["template-status", "--name", "t", "--language", "en", "--event", "APPROVED"], { SIMULATOR_APP_SECRET: "s" }, /set --webhook-url .* or --simulator/],
    [["template-status", "--simulator", "http://127.0.0.1:9", "--name", "t", "--language", "en", "--event", "APPROVED", "--category", "UTILITY"], {}, /the template's own category/],
    [["templates", "category", "--simulator", "http://127.0.0.1:9", "--name", "t", "--category", "UTILITY"], {}, /--id, or with --name and --language/],
    [["inbound", "--webhook-url", "http://127.0.0.1:9/", "--from", "call me", "--text", "x"], { SIMULATOR_APP_SECRET: "s" }, /--from must be a phone number/],
    [["inbound", "--webhook-url", "ftp://127.0.0.1/", "--from", "16505551234", "--text", "x"], { SIMULATOR_APP_SECRET: "s" }, /--webhook-url must be an http\(s\) URL/],
    [["inbound", "--from", "16505551234", "--text", "x"], { SIMULATOR_APP_SECRET: "s", SIMULATOR_WEBHOOK_URL: "not a url" }, /--webhook-url must be an http\(s\) URL/]
  ] as const)("%j → a clear error, non-zero exit, nothing posted", async (args, env, message) => {
    const result = await run(args, env)
    expect(result.code).not.toBe(0)
    expect(result.stderr).toMatch(message)
    expect(receiver.deliveries).toEqual([])
  })

  it("a webhook that refuses or cannot be reached → the line says so, exit 1; the secret is never printed", async () => {
    const unreachable = await run(["inbound", "--webhook-url", "http://127.0.0.1:9/", "--from", "16505551234", "--text", "x"], { SIMULATOR_APP_SECRET: SECRET })
    expect(unreachable.code).toBe(1)
    expect(JSON.parse(unreachable.stdout)).toMatchObject({ answered: null, error: expect.stringMatching(/fetch failed/) })
    expect(unreachable.stdout + unreachable.stderr).not.toContain(SECRET)
  })
})

describe("inbound --file (a customer's file, served by a running simulator)", { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it("hands the file to the simulator, posts the message with its media id and base64 sha256, and the look-up serves the bytes", async () => {
    const { listening } = await serve(["--port", "0"])
    const bytes = randomBytes(150_000)
    const file = join(directory, "photo.jpg")
    writeFileSync(file, bytes)
    const env = { SIMULATOR_APP_SECRET: SECRET, SIMULATOR_URL: listening.url }
    const result = await run(["inbound", "--webhook-url", receiver.url, "--from", "16505551234", "--type", "image", "--file", file, "--caption", "Broken box"], env)
    expect(result.code, result.stderr).toBe(0)
    const image = JSON.parse(receiver.deliveries.at(-1)!.body).entry[0].changes[0].value.messages[0].image
    const digest = createHash("sha256").update(bytes).digest()
    expect(image).toEqual({ id: expect.stringMatching(/^\d{16}$/), mime_type: "image/jpeg", sha256: digest.toString("base64"), caption: "Broken box" })
    const lookup = await graph(listening.url, `/v21.0/${image.id}`, "EAAGsimulator-access-token-0001")
    expect(lookup.json).toMatchObject({ id: image.id, sha256: digest.toString("hex"), file_size: bytes.length, mime_type: "image/jpeg" })
    const downloaded = await fetch(lookup.json.url, { headers: { authorization: "Bearer EAAGsimulator-access-token-0001" } })
    expect(Buffer.from(await downloaded.arrayBuffer()).equals(bytes)).toBe(true)

    const missing = await run(["inbound", "--webhook-url", receiver.url, "--from", "16505551234", "--type", "image", "--file", join(directory, "none.jpg")], env)
    expect([missing.code, missing.stderr]).toEqual([1, expect.stringMatching(/--file could not be handed to the simulator/)])
    const text = await run(["inbound", "--webhook-url", receiver.url, "--from", "16505551234", "--text", "x", "--file", file], env)
    expect([text.code, text.stderr]).toEqual([1, expect.stringMatching(/--file is for a media type/)])
  })

  it("--type image without --media-id or --file makes a media id, with the type's usual MIME type", async () => {
    const result = await run(["inbound", "--webhook-url", receiver.url, "--from", "16505551234", "--type", "image"], { SIMULATOR_APP_SECRET: SECRET })
    expect(result.code, result.stderr).toBe(0)
    const image = JSON.parse(receiver.deliveries.at(-1)!.body).entry[0].changes[0].value.messages[0].image
    expect(image).toMatchObject({ id: expect.stringMatching(/^\d{16}$/), mime_type: "image/jpeg" })
  })
})

describe("templates and template-status through a running simulator (SIMULATOR_URL)", { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it("seed and list its templates; template-status sets the simulator's status and it posts the webhook with the template's id", async () => {
    const { listening } = await serve(["--port", "0", "--webhook-url", receiver.url], { SIMULATOR_APP_SECRET: SECRET })
    const env = { SIMULATOR_URL: listening.url }
    const file = join(directory, "templates.json")
    // Meta's own list answer seeds as it is.
    const components = [{ type: "BODY", text: "Your order {{1}} has shipped.", example: { body_text: [["A-1"]] } }]
    writeFileSync(file, JSON.stringify({ data: [{ name: "order_update", language: "en_US", category: "UTILITY", components, status: "PENDING" }] }))
    const seeded = await run(["templates", "seed", "--waba", "102290129340398", "--file", file], env)
    expect(seeded.code, seeded.stderr).toBe(0)
    const template = JSON.parse(seeded.stdout)
    expect(template).toEqual({ id: expect.stringMatching(/^\d{16}$/), waba_id: "102290129340398", name: "order_update", language: "en_US", status: "PENDING", category: "UTILITY", components, rejected_reason: "NONE" })

    // The command's flags as before, without --webhook-url or an app secret: the simulator posts, signed with its own.
    const approved = await run(["template-status", "--name", "order_update", "--language", "en_US", "--event", "APPROVED"], env)
    expect(approved.code, approved.stderr).toBe(0)
    expect(JSON.parse(approved.stdout)).toMatchObject({ event: "template_status", template_id: template.id, status: "APPROVED", status_event: "APPROVED", answered: 200 })
    const delivery = receiver.deliveries.at(-1)!
    expect(delivery.headers["x-hub-signature-256"]).toBe(`sha256=${createHmac("sha256", SECRET).update(delivery.body).digest("hex")}`)
    expect(JSON.parse(delivery.body).entry[0]).toMatchObject({
      id: "102290129340398",
      changes: [{ field: "message_template_status_update", value: { event: "APPROVED", message_template_id: Number(template.id), message_template_name: "order_update", message_template_category: "UTILITY" } }]
    })
    const listed = await run(["templates", "list", "--waba", "102290129340398"], env)
    expect(JSON.parse(listed.stdout)).toMatchObject({ id: template.id, status: "APPROVED" })
    const atMeta = await graph(listening.url, "/v21.0/102290129340398/message_templates?fields=status", "EAAGsimulator-access-token-0001")
    expect(atMeta.json.data).toEqual([{ status: "APPROVED", id: template.id }])

    const recategorised = await run(["templates", "category", "--id", template.id, "--category", "MARKETING"], env)
    expect(recategorised.code, recategorised.stderr).toBe(0)
    expect(JSON.parse(recategorised.stdout)).toMatchObject({ event: "template_category", template_id: template.id, previous_category: "UTILITY", new_category: "MARKETING", answered: 200 })
    expect(JSON.parse(receiver.deliveries.at(-1)!.body).entry[0].changes[0].field).toBe("template_category_update")

    const unknown = await run(["template-status", "--name", "no_such_template", "--language", "en_US", "--event", "APPROVED"], env)
    expect([unknown.code, unknown.stderr]).toEqual([1, expect.stringMatching(/HTTP 404.*no template no_such_template \(en_US\)/)])
    const badFile = await run(["templates", "seed", "--waba", "102290129340398", "--file", join(directory, "none.json")], env)
    expect([badFile.code, badFile.stderr]).toEqual([1, expect.stringMatching(/is not a readable JSON file/)])
    expect(receiver.deliveries).toHaveLength(2)
  })
})

describe("received and reset (the control API of a running simulator)", { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it("received prints one JSON line per request, without the token; reset empties it", async () => {
    const { listening } = await serve(["--port", "0"])
    await graph(listening.url, "/v21.0/106540352242922", "EAAGsimulator-access-token-0001")
    const received = await run(["received", "--simulator", listening.url])
    expect(received.code, received.stderr).toBe(0)
    const lines = received.stdout.trim().split("\n").map((line) => JSON.parse(line))
    expect(lines).toEqual([expect.objectContaining({ seq: 1, method: "GET", route: "lookup", authorization: "Bearer …0001" })])
    expect(received.stdout).not.toContain("EAAGsimulator-access-token-0001")
    expect(JSON.parse((await run(["reset", "--simulator", listening.url])).stdout)).toEqual({ reset: true })
    expect((await run(["received", "--simulator", listening.url])).stdout).toBe("")
    const down = await run(["received", "--simulator", "http://127.0.0.1:9"])
    expect([down.code, down.stderr]).toEqual([1, expect.stringMatching(/could not be reached/)])
  })
})

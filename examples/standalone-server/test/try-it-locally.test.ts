import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { assertBuilt, runToExit } from "./helpers.js"

// docs/whatsapp-webhooks.md "Try it locally", run as written: its shell blocks are taken
// from the Markdown; the blocks headed `# terminal 1` and `# terminal 2` (the simulator
// and the server, which run until stopped) start in the background, the others run in
// order in one bash (`-e -o pipefail`), like terminal 3. The section's receiver (its
// `js run webhook-receiver` block, whose first line names the file the reader saves it
// as) is written to that file first, as the reader does. Ports come from PORT,
// SIMULATOR_PORT and RECEIVER_PORT (free ones), so the run collides with nothing;
// ./data/try-it, where the section keeps its data, is removed before and after.

const root = fileURLToPath(new URL("../../../", import.meta.url))
const dataDirectory = `${root}data/try-it`
/** Whether ./data existed before the run (else it is removed after, when empty). */
const hadDataDirectory = existsSync(`${root}data`)

/** The text of the section `## Try it locally`. */
const section = (): string => {
  const markdown = readFileSync(`${root}docs/whatsapp-webhooks.md`, "utf8")
  const start = markdown.indexOf("\n## Try it locally\n")
  if (start < 0) throw new Error('docs/whatsapp-webhooks.md has no "## Try it locally" section')
  const next = markdown.indexOf("\n## ", start + 1)
  return markdown.slice(start, next < 0 ? undefined : next)
}

/** The ```sh blocks of the section, in order. */
const sectionBlocks = (): Array<string> => [...section().matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((match) => match[1]!)

/** The section's receiver: the file its first line names (`// data/try-it/….mjs: …`) and its source. */
const receiverBlock = (): { readonly file: string; readonly source: string } => {
  const source = /^```js run webhook-receiver\n([\s\S]*?)^```$/m.exec(section())?.[1]
  const file = source === undefined ? undefined : /^\/\/ (data\/try-it\/[\w.-]+\.mjs):/.exec(source)?.[1]
  if (source === undefined || file === undefined) {
    throw new Error("the section has no `js run webhook-receiver` block whose first line names its file under data/try-it")
  }
  return { file, source }
}

/** A port nothing listens on now. */
const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })

/** Every JSON object printed in `text` (curl prints no newline after a body, so objects may share a line). */
const jsonObjects = (text: string): Array<any> => {
  const objects: Array<any> = []
  let depth = 0
  let start = -1
  let inString = false
  for (let index = 0; index < text.length; index++) {
    const char = text[index]
    if (inString) {
      if (char === "\\") index++
      else if (char === '"') inString = false
    } else if (char === '"' && depth > 0) inString = true
    else if (char === "{") {
      if (depth++ === 0) start = index
    } else if (char === "}" && depth > 0 && --depth === 0) {
      objects.push(JSON.parse(text.slice(start, index + 1)))
    }
  }
  return objects
}

const background: Array<{ child: ChildProcess; output: () => string }> = []
let environment: NodeJS.ProcessEnv = {}
let ports = { PORT: "", SIMULATOR_PORT: "", RECEIVER_PORT: "" }

/** Starts a block in its own process group (so the whole of `npm …` can be stopped). */
const startInBackground = (script: string) => {
  const child = spawn("bash", ["-e", "-c", script], { cwd: root, env: environment, detached: true, stdio: ["ignore", "pipe", "pipe"] })
  let output = ""
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (output += chunk))
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (output += chunk))
  background.push({ child, output: () => output })
}

/** Waits until `url` answers 200 (the program in the background is up), at most 90 s. */
const waitUntilUp = async (url: string, what: string) => {
  const deadline = Date.now() + 90_000
  while (Date.now() < deadline) {
    const ok = await fetch(url).then((response) => response.ok, () => false)
    if (ok) return
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  throw new Error(`${what} did not come up:\n${background.map((entry) => entry.output()).join("\n---\n")}`)
}

/**
 * Runs the foreground blocks in one bash; resolves with its exit code and output. It runs
 * in its own process group, stopped when bash exits: a process it left in the background
 * (the receiver, when a step failed before stopping it) would keep its output open.
 */
const runInForeground = (script: string) => {
  const child = spawn("bash", ["-e", "-o", "pipefail", "-c", script], { cwd: root, env: environment, detached: true })
  child.once("exit", () => {
    try {
      process.kill(-child.pid!, "SIGTERM")
    } catch {
      // the group is gone already
    }
  })
  return runToExit(child)
}

beforeAll(async () => {
  assertBuilt()
  rmSync(dataDirectory, { recursive: true, force: true })
  ports = { PORT: String(await freePort()), SIMULATOR_PORT: String(await freePort()), RECEIVER_PORT: String(await freePort()) }
  const inherited = Object.entries(process.env).filter(
    ([name]) => !/^(npm_|DATABASE_URL$|HOST$|PORT$|RECEIVER_PORT$|REDIS_URL$|WHATSAPP_|SIMULATOR_|SWITCHBOARD_)/i.test(name)
  )
  // REDIS_URL empty: rate limits in the SQLite file even when the caller's environment names a Redis.
  environment = { ...Object.fromEntries(inherited), ...ports, REDIS_URL: "" }
})

afterAll(async () => {
  for (const { child } of background.splice(0)) {
    const exited = new Promise((resolve) => child.once("exit", resolve))
    if (child.exitCode === null && child.pid !== undefined) process.kill(-child.pid, "SIGTERM")
    await exited
  }
  rmSync(dataDirectory, { recursive: true, force: true })
  if (!hadDataDirectory && existsSync(`${root}data`) && readdirSync(`${root}data`).length === 0) rmdirSync(`${root}data`)
}, 30_000)

describe('docs/whatsapp-webhooks.md "Try it locally", run as written', () => {
  it("an inbound message from the simulator lands in GET /chats, and the reply ends read; a photo is fetched and downloaded, a PDF uploaded and sent; the organization's receiver gets the signed message.received", async () => {
    const blocks = sectionBlocks()
    const isTerminal = (block: string, n: number) => block.startsWith(`# terminal ${n}`)
    const simulator = blocks.find((block) => isTerminal(block, 1))
    const server = blocks.find((block) => isTerminal(block, 2))
    expect(simulator, "a `# terminal 1` block").toBeDefined()
    expect(server, "a `# terminal 2` block").toBeDefined()
    startInBackground(simulator!)
    await waitUntilUp(`http://127.0.0.1:${ports.SIMULATOR_PORT}/_simulator/settings`, "the simulator")
    startInBackground(server!)
    await waitUntilUp(`http://127.0.0.1:${ports.PORT}/api/v1/api/`, "the server")

    const foreground = blocks.filter((block) => !isTerminal(block, 1) && !isTerminal(block, 2))
    expect(foreground.length).toBeGreaterThanOrEqual(3)
    const receiver = receiverBlock()
    mkdirSync(`${root}data/try-it`, { recursive: true })
    writeFileSync(`${root}${receiver.file}`, receiver.source)
    const result = await runInForeground(foreground.join("\n"))
    expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0)
    const printed = jsonObjects(result.stdout)

    expect(printed).toContainEqual(
      expect.objectContaining({ phone_number_id: "106540352242922", display_phone_number: "+15550783881", access_token_set: true })
    )
    expect(printed).toContainEqual(
      expect.objectContaining({ event: "inbound", answered: 200, response: expect.objectContaining({ data: { received: 1 } }) })
    )
    const chats = printed.find((object) => Array.isArray(object.data?.chats))
    expect(chats.data.chats).toEqual([
      expect.objectContaining({
        contact: expect.objectContaining({ phone: "+16505551234", first_name: "Sheena Nelson" }),
        last_message: expect.objectContaining({ direction: "outbound", text: "Yes, it ships today.", status: "read" })
      })
    ])
    const messages = printed.find((object) => Array.isArray(object.data?.messages))
    expect(messages.data.messages.map((message: any) => [message.direction, message.type, message.text])).toEqual([
      ["outbound", "text", "Yes, it ships today."],
      ["inbound", "text", "Hi! Is my order on its way?"]
    ])
    // The reply's answer: sent inline, or, when that attempt was late for its pacing slot (a
    // busy machine), the hand-back ("Message queued", queued, no failure), sent by the
    // dispatcher during the script's pause: read in the chat either way.
    const reply = printed.find((object) => object.status === 200 && object.data?.message_id === messages.data.messages[0].uuid)
    expect([["Message sent", "sent", null], ["Message queued", "queued", null]], JSON.stringify(reply)).toContainEqual([
      reply?.message,
      reply?.data?.status,
      reply?.data?.failure
    ])
    // The customer's photo: stored from the simulator, downloaded byte for byte.
    expect(printed).toContainEqual(
      expect.objectContaining({ data: expect.objectContaining({ type: "image", source: "inbound", status: "stored", mime_type: "image/jpeg" }) })
    )
    const photo = printed.find((object) => object.photo !== undefined)
    expect(photo.downloaded).toBe(photo.photo)
    // The PDF uploaded, sent by media_uuid: the simulator received the same bytes.
    expect(printed).toContainEqual(
      expect.objectContaining({ data: expect.objectContaining({ type: "document", source: "upload", status: "stored", mime_type: "application/pdf" }) })
    )
    const pdf = printed.find((object) => object.uploaded !== undefined)
    expect(pdf.at_meta).toBe(pdf.uploaded)
    expect(messages.data.messages[0].status).toBe("read")
    // The last step: an endpoint on the receiver's http://127.0.0.1 URL (allowed by the
    // server's SWITCHBOARD_WEBHOOKS_ALLOW_PRIVATE=1), the customer's next message delivered
    // to it signed and verified, and a forged delivery refused.
    expect(server).toContain("SWITCHBOARD_WEBHOOKS_ALLOW_PRIVATE=1")
    expect(printed).toContainEqual(
      expect.objectContaining({
        message: "Webhook endpoint created",
        data: expect.objectContaining({ url: `http://127.0.0.1:${ports.RECEIVER_PORT}/switchboard`, secret: expect.stringMatching(/^whsec_/) })
      })
    )
    expect(result.stdout).toContain('message.received "Thanks, see you tomorrow."')
    expect(printed).toContainEqual({ forged: 400 })
    // The simulator posted the three receipts of the reply, each accepted by the server.
    const simulatorLog = background[0]!.output()
    for (const status of ["sent", "delivered", "read"]) {
      expect(simulatorLog).toMatch(new RegExp(`"event":"webhook_posted","kind":"status"[^\\n]*"status":"${status}","answered":200`))
    }
  }, 180_000)
})

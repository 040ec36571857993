/**
 * The documentation's programs run as written (docs/getting-started.md, docs/mounting.md,
 * README.md "Mounting the handler in your own server", docs/webhooks.md, docs/api-reference.md):
 * - every code block of README.md and docs/*.md marked ```` ```ts run ```` or
 *   ```` ```js run ```` is transpiled with esbuild and written into a scratch folder inside
 *   the workspace (so `@switchboard/*` resolve to the built packages, and `effect`,
 *   `express`, `fastify` and `standardwebhooks` to the workspace's node_modules), then run
 *   by its kind (programs.ts): a server of the API gets a free `PORT`, answers
 *   `GET /api/v1/api/verify` with the API key it prints with 200, and exits 0 on SIGTERM; a
 *   `webhook-receiver` answers a signed delivery 204 and a forged one 400, and exits 0 on
 *   SIGTERM; a `script` exits 0 with nothing on stderr; a `client` program runs to its end
 *   against docs/getting-started.md's server (started beside it, stopped after) with the
 *   server's API base and key in `SWITCHBOARD_BASE_URL` and `SWITCHBOARD_API_KEY`, and exits
 *   0 with nothing on stderr (docs/client.md's prints what `CLIENT_EXAMPLE_OUTPUT` says);
 * - a ts/js block that starts a server (`.listen(`) is marked, so a program cannot leave
 *   the check by losing its mark; option examples and other fragments stay unmarked;
 * - the README walkthrough writes its files under `./data`.
 *
 * The packages must be built first (`npm test` builds before vitest). The scratch folder
 * (`.docs-programs-*` at the root, git-ignored) is removed after the file's tests.
 */
import { randomBytes, randomUUID } from "node:crypto"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { transform } from "esbuild"
import { Webhook } from "standardwebhooks"
import { afterAll, describe, expect, it } from "vitest"
import { CLIENT_EXAMPLE_OUTPUT, clientProbe, type DocProgram, type Probe, runnableBlocksOf, runProgram, runScript, verifyProbe } from "./programs.js"

const root = fileURLToPath(new URL("../../../", import.meta.url))

/** README.md and every docs/*.md, relative to the root. */
const markdownFiles = ["README.md", ...readdirSync(join(root, "docs")).filter((name) => name.endsWith(".md")).map((name) => `docs/${name}`)]
const programs = markdownFiles.flatMap((file) => runnableBlocksOf(join(root, file), file))

const scratch = mkdtempSync(join(root, ".docs-programs-"))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

/** The environment of the programs, without the `npm_*` settings of the `npm test` that may run us. */
const childEnvironment = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith("npm_")))

describe("the documentation's programs", () => {
  it("include the getting-started server, the mounting examples and the README's", () => {
    const files = new Set(programs.map(({ file }) => file))
    expect([...files]).toEqual(expect.arrayContaining(["README.md", "docs/getting-started.md", "docs/mounting.md"]))
    expect(programs.filter(({ file }) => file === "docs/mounting.md")).toHaveLength(3)
  })

  it("are all marked: every ts/js block that starts a server is `ts run` or `js run`", () => {
    const unmarked = markdownFiles.flatMap((file) => {
      const lines = readFileSync(join(root, file), "utf8").split("\n")
      return lines.flatMap((line, index) => {
        if (!/^```(ts|js)\s*$/.test(line)) return []
        const body = lines.slice(index + 1, lines.indexOf("```", index + 1)).join("\n")
        return /\.listen\(/.test(body) ? [`${file}:${index + 1}`] : []
      })
    })
    expect(unmarked).toEqual([])
  })

  const servers = programs.filter(({ kind }) => kind === "server")
  const receivers = programs.filter(({ kind }) => kind === "webhook-receiver")
  const scripts = programs.filter(({ kind }) => kind === "script")
  const clients = programs.filter(({ kind }) => kind === "client")

  it.each(servers)("$file:$line answers GET /verify with the key it prints, and stops on SIGTERM", async (program) => {
    const run = await runProgram("program.mjs", await writeProgram(program), childEnvironment, verifyProbe)

    expect(run.result, run.stderr).toMatchObject({ status: 200, body: { success: true, data: { organization: { name: "Acme" } } } })
    expect(run.exit, `${run.stdout}\n${run.stderr}`).toEqual({ code: 0, signal: null })
  }, 60_000)

  it.each(receivers)("$file:$line (a webhook receiver) takes a signed delivery, refuses a forged one, and stops on SIGTERM", async (program) => {
    const secret = `whsec_${randomBytes(24).toString("base64")}`
    const env = { ...childEnvironment, SWITCHBOARD_WEBHOOK_SECRET: secret }
    const run = await runProgram("program.mjs", await writeProgram(program), env, deliveries(secret))

    expect(run.result, run.stderr).toEqual({ signed: 204, forged: 400 })
    expect(run.stdout).toContain("message.received")
    expect(run.exit, `${run.stdout}\n${run.stderr}`).toEqual({ code: 0, signal: null })
  }, 60_000)

  it.each(scripts)("$file:$line (a script) runs to its end", async (program) => {
    const run = await runScript("program.mjs", await writeProgram(program), childEnvironment)

    expect(run, run.stderr).toMatchObject({ code: 0, stderr: "" })
  }, 60_000)

  it("include docs/client.md's whole program, a `client` one", () => {
    expect(clients.filter(({ file, source }) => file === "docs/client.md" && source.startsWith("// example.ts"))).toHaveLength(1)
  })

  it.each(clients)("$file:$line (a client program) runs to its end against the getting-started server", async (program) => {
    const directory = await writeProgram(program)
    const server = programs.find(({ file, source }) => file === "docs/getting-started.md" && source.startsWith("// server.mjs"))
    if (server === undefined) throw new Error("docs/getting-started.md has no `js run` block starting with `// server.mjs`")
    writeFileSync(join(directory, "server.mjs"), server.source)
    const { result } = await runProgram("server.mjs", directory, childEnvironment, clientProbe("program.mjs", directory, childEnvironment))

    expect(result.verify.status).toBe(200)
    expect(result.run, result.run.stderr).toMatchObject({ code: 0, stderr: "" })
    if (program.file === "docs/client.md" && program.source.startsWith("// example.ts")) {
      expectLines(result.run.stdout, CLIENT_EXAMPLE_OUTPUT)
    }
  }, 60_000)
})

/** Each line of `output` matches the pattern of its place, and there are as many lines as patterns. */
const expectLines = (output: string, patterns: ReadonlyArray<RegExp>) => {
  const lines = output.trimEnd().split("\n")
  expect(lines, output).toHaveLength(patterns.length)
  lines.forEach((line, index) => expect(line).toMatch(patterns[index]!))
}

/** Transpiles a block into `program.mjs` of its own scratch folder; returns the folder. */
const writeProgram = async ({ file, line, language, source }: DocProgram) => {
  const directory = join(scratch, `${file.replace(/\W/g, "-")}-${line}`)
  mkdirSync(directory)
  const { code } = await transform(source, { loader: language, format: "esm", target: "node20", sourcefile: `${file}:${line}` })
  writeFileSync(join(directory, "program.mjs"), code)
  return directory
}

/** Posts one event signed with `secret` and the same event with a forged signature to `/switchboard`; their statuses. */
const deliveries =
  (secret: string): Probe<{ signed: number; forged: number }> =>
  (port) => {
    const url = `http://127.0.0.1:${port}/switchboard`
    const id = randomUUID()
    const body = JSON.stringify({ id, type: "message.received", created_at: new Date().toISOString(), data: { uuid: randomUUID() } })
    const timestamp = new Date()
    const headers = (signature: string) => ({
      "content-type": "application/json",
      "webhook-id": id,
      "webhook-timestamp": String(Math.floor(timestamp.getTime() / 1000)),
      "webhook-signature": signature
    })
    const post = (signature: string) => fetch(url, { method: "POST", headers: headers(signature), body }).then((response) => response.status)
    return (async () => ({
      signed: await post(new Webhook(secret).sign(id, timestamp, body)),
      forged: await post(new Webhook(`whsec_${randomBytes(24).toString("base64")}`).sign(id, timestamp, body))
    }))()
  }

describe("the README walkthrough", () => {
  it("writes its files under ./data (the server's git-ignored data directory), never into the repository root", () => {
    const readme = readFileSync(join(root, "README.md"), "utf8")
    const shellBlocks = [...readme.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((match) => match[1]!)
    // The commands' lines (comments show answers), their `> file` and `cat > file <<EOF`, not `2>&1`
    const commands = shellBlocks.flatMap((block) => block.split("\n")).filter((line) => !line.trimStart().startsWith("#"))
    const written = commands.flatMap((line) => [...line.matchAll(/(?<![0-9&])>\s*([^\s&|;]+)/g)].map((match) => match[1]!))
    expect(written.length).toBeGreaterThan(0)
    expect(written.filter((target) => target !== "/dev/null" && !target.startsWith("data/"))).toEqual([])
    expect(readFileSync(join(root, ".gitignore"), "utf8").split("\n")).toContain("data/")
  })
})

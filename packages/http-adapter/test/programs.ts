/**
 * Runs a documented program the way a reader would, for docs-programs.test.ts and
 * packaging.test.ts. Code blocks marked ```` ```ts run ```` / ```` ```js run ```` in
 * README.md and docs/*.md are such programs; a word after `run` says what kind:
 * - none: a server of the API (docs/getting-started.md shows the pattern): `node <file>`
 *   with a free `PORT`, then `GET /api/v1/api/verify` with the API key it prints (`sb_…` on
 *   stdout) until it answers ({@link verifyProbe}), then SIGTERM, which must end it;
 * - `webhook-receiver`: a server receiving the API's signed webhooks on `POST /switchboard`
 *   with the secret in `SWITCHBOARD_WEBHOOK_SECRET` (docs/webhooks.md);
 * - `script`: a program that does its work and exits;
 * - `client`: a program calling the API with `@switchboard/client` (docs/client.md), run to
 *   its end against a running server of the API (the getting-started page's) with the base
 *   URL in `SWITCHBOARD_BASE_URL` and the key the server printed in `SWITCHBOARD_API_KEY`
 *   ({@link clientProbe}).
 * A server still running 20 s after SIGTERM is killed with SIGKILL, which its run reports.
 */
import { execFile, spawn } from "node:child_process"
import { createServer } from "node:net"
import { readFileSync } from "node:fs"
import { setTimeout as sleep } from "node:timers/promises"

/** What one run of a server gave: its probe's result, how it ended, and its output. */
export interface ProgramRun<A> {
  readonly result: A
  readonly exit: { readonly code: number | null; readonly signal: NodeJS.Signals | null }
  readonly stdout: string
  readonly stderr: string
}

/** What a `/verify` call answered. */
export interface VerifyAnswer {
  readonly status: number
  readonly body: unknown
}

/**
 * Calls a running program on `port`: undefined while it is not ready (no key printed yet);
 * a refused connection is tried again.
 */
export type Probe<A> = (port: number, stdout: string) => Promise<A> | undefined

/** A runnable block of a Markdown file: where it is, its language, its kind and its source. */
export interface DocProgram {
  readonly file: string
  readonly line: number
  readonly language: "ts" | "js"
  readonly kind: "server" | "webhook-receiver" | "script" | "client"
  readonly source: string
}

/** An API key as the programs print it. */
const API_KEY = /\bsb_[A-Za-z0-9_-]{20,}/
/** How often, and how long apart (ms), `/verify` is tried while the program starts. */
const CONNECT_ATTEMPTS = 600
const CONNECT_PAUSE_MS = 100
/** How long a program may take to stop after SIGTERM before it is killed (ms). */
const STOP_GRACE_MS = 20_000

/** The code blocks of `markdown` whose info string is `ts run` or `js run`, with its kind (1-based opening line). */
export const runnableBlocks = (file: string, markdown: string): Array<DocProgram> => {
  const blocks: Array<DocProgram> = []
  const lines = markdown.split("\n")
  for (let index = 0; index < lines.length; index++) {
    const opening = /^```(ts|js) run(?: (webhook-receiver|script|client))?\s*$/.exec(lines[index]!)
    if (opening === null) continue
    const end = lines.indexOf("```", index + 1)
    if (end === -1) throw new Error(`${file}:${index + 1}: a code block that never closes`)
    const [language, kind] = [opening[1] as DocProgram["language"], (opening[2] ?? "server") as DocProgram["kind"]]
    blocks.push({ file, line: index + 1, language, kind, source: lines.slice(index + 1, end).join("\n") })
    index = end
  }
  return blocks
}

/** The runnable blocks of a Markdown file on disk. */
export const runnableBlocksOf = (path: string, file = path) => runnableBlocks(file, readFileSync(path, "utf8"))

/** A TCP port nothing listens on right now (the OS picks it). */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))))
    })
  })

/** `GET /api/v1/api/verify` with the API key the program printed. */
export const verifyProbe: Probe<VerifyAnswer> = (port, stdout) => {
  const apiKey = API_KEY.exec(stdout)?.[0]
  if (apiKey === undefined) return undefined
  return fetch(`http://127.0.0.1:${port}/api/v1/api/verify`, { headers: { authorization: `Bearer ${apiKey}` } }).then(
    async (response) => ({ status: response.status, body: await response.json() })
  )
}

/**
 * Runs `node <file>` in `cwd` with `PORT` set, calls it with `probe` until it answers, sends
 * SIGTERM and waits for the exit. Fails with the program's output when it exits first.
 */
export const runProgram = async <A>(file: string, cwd: string, env: NodeJS.ProcessEnv, probe: Probe<A>): Promise<ProgramRun<A>> => {
  const port = await freePort()
  const child = spawn(process.execPath, [file], { cwd, env: { ...env, PORT: String(port) }, stdio: ["ignore", "pipe", "pipe"] })
  let stdout = ""
  let stderr = ""
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
  const exited = new Promise<ProgramRun<A>["exit"]>((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })))
  let ended: ProgramRun<A>["exit"] | undefined
  void exited.then((exit) => (ended = exit))
  try {
    const result = await whenListening(() => probe(port, stdout), () => ended !== undefined)
    if (result === undefined) {
      throw new Error(`${file} exited (${JSON.stringify(ended)}) before answering\n--- stdout\n${stdout}\n--- stderr\n${stderr}`)
    }
    child.kill("SIGTERM")
    const grace = new AbortController()
    const exit = await Promise.race([exited, sleep(STOP_GRACE_MS, undefined, { signal: grace.signal }).then(() => undefined, () => undefined)])
    grace.abort()
    if (exit === undefined) child.kill("SIGKILL")
    return { result: result.value, exit: exit ?? (await exited), stdout, stderr }
  } finally {
    if (ended === undefined && child.exitCode === null) child.kill("SIGKILL")
  }
}

/** What a program run to its end gave: its exit code and output. */
export interface ScriptRun {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** What a `client` program gave: the server's `/verify` answer first, then the program's run against the server. */
export interface ClientRun {
  readonly verify: VerifyAnswer
  readonly run: ScriptRun
}

/**
 * A probe of a server program (docs/getting-started.md's) that, once `/verify` answers with
 * the key it printed, runs the `client` program `node <file>` in `cwd` to its end with
 * `SWITCHBOARD_BASE_URL` (the server's API base) and `SWITCHBOARD_API_KEY` (that key).
 */
export const clientProbe =
  (file: string, cwd: string, env: NodeJS.ProcessEnv): Probe<ClientRun> =>
  (port, stdout) => {
    const verifying = verifyProbe(port, stdout)
    if (verifying === undefined) return undefined
    return verifying.then(async (verify) => {
      const apiKey = API_KEY.exec(stdout)![0]
      const baseUrl = `http://127.0.0.1:${port}/api/v1/api`
      return { verify, run: await runScript(file, cwd, { ...env, SWITCHBOARD_BASE_URL: baseUrl, SWITCHBOARD_API_KEY: apiKey }) }
    })
  }

/**
 * What docs/client.md's whole program (the `client` block starting `// example.ts`) prints,
 * line by line, as docs-programs.test.ts and packaging.test.ts check it.
 */
export const CLIENT_EXAMPLE_OUTPUT: ReadonlyArray<RegExp> = [
  /^organization: Acme$/,
  /^imported: 1 created, 0 updated$/,
  /^contact: Ada \+14155550100$/,
  /^not found: not_found \(request \S+\)$/,
  /^webhook verified: contact\.created \+14155550100$/,
  /^webhook refused: No webhook signature matches$/
]

/** Runs `node <file>` in `cwd` to its end: its exit code and output. */
export const runScript = (file: string, cwd: string, env: NodeJS.ProcessEnv) =>
  new Promise<ScriptRun>((resolve) =>
    execFile(process.execPath, [file], { cwd, env }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, stdout, stderr })
    )
  )

/** Calls `attempt` until it answers (wrapped, so an answer may be undefined); undefined when the program ended first. */
const whenListening = async <A>(attempt: () => Promise<A> | undefined, ended: () => boolean): Promise<{ value: A } | undefined> => {
  for (let count = 0; count < CONNECT_ATTEMPTS && !ended(); count++) {
    const answer = attempt()
    if (answer !== undefined) {
      try {
        return { value: await answer }
      } catch (error) {
        if (!isConnectionRefused(error)) throw error
      }
    }
    await sleep(CONNECT_PAUSE_MS)
  }
  return undefined
}

/** Whether a fetch failed because nothing listens on the port yet. */
const isConnectionRefused = (error: unknown) =>
  error instanceof TypeError && (error.cause as { code?: string } | undefined)?.code === "ECONNREFUSED"

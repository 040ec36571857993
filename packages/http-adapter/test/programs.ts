/**
 * Runs a documented program the way a reader would, for docs-programs.test.ts and
 * packaging.test.ts: `node <file>` with a free `PORT`, then `GET /api/v1/api/verify` with the
 * API key the program prints (`sb_…` on stdout), then SIGTERM, which must end it cleanly
 * (a program still running 20 s later is killed with SIGKILL, which its run then reports).
 * Code blocks marked ```` ```ts run ```` / ```` ```js run ```` in README.md and docs/*.md
 * are such programs (docs/getting-started.md shows the pattern).
 */
import { spawn } from "node:child_process"
import { createServer } from "node:net"
import { readFileSync } from "node:fs"
import { setTimeout as sleep } from "node:timers/promises"

/** What one run gave: the `/verify` answer, how the program ended, and its output. */
export interface ProgramRun {
  readonly verify: { readonly status: number; readonly body: unknown }
  readonly exit: { readonly code: number | null; readonly signal: NodeJS.Signals | null }
  readonly stdout: string
  readonly stderr: string
}

/** A runnable block of a Markdown file: where it is, its language and its source. */
export interface DocProgram {
  readonly file: string
  readonly line: number
  readonly language: "ts" | "js"
  readonly source: string
}

/** An API key as the programs print it. */
const API_KEY = /\bsb_[A-Za-z0-9_-]{20,}/
/** How often, and how long apart (ms), `/verify` is tried while the program starts. */
const CONNECT_ATTEMPTS = 600
const CONNECT_PAUSE_MS = 100
/** How long a program may take to stop after SIGTERM before it is killed (ms). */
const STOP_GRACE_MS = 20_000

/** The code blocks of `markdown` whose info string is `ts run` or `js run` (1-based opening line). */
export const runnableBlocks = (file: string, markdown: string): Array<DocProgram> => {
  const blocks: Array<DocProgram> = []
  const lines = markdown.split("\n")
  for (let index = 0; index < lines.length; index++) {
    const opening = /^```(ts|js) run\s*$/.exec(lines[index]!)
    if (opening === null) continue
    const end = lines.indexOf("```", index + 1)
    if (end === -1) throw new Error(`${file}:${index + 1}: a code block that never closes`)
    blocks.push({ file, line: index + 1, language: opening[1] as "ts" | "js", source: lines.slice(index + 1, end).join("\n") })
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

/**
 * Runs `node <file>` in `cwd` with `PORT` set, waits for the key it prints and for its
 * `/verify` to answer, sends SIGTERM and waits for the exit. Fails with the program's output
 * when it exits before answering or prints no key.
 */
export const runProgram = async (file: string, cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<ProgramRun> => {
  const port = await freePort()
  const child = spawn(process.execPath, [file], { cwd, env: { ...env, PORT: String(port) }, stdio: ["ignore", "pipe", "pipe"] })
  let stdout = ""
  let stderr = ""
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
  const exited = new Promise<ProgramRun["exit"]>((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })))
  let ended: ProgramRun["exit"] | undefined
  void exited.then((exit) => (ended = exit))
  const output = () => `\n--- stdout\n${stdout}\n--- stderr\n${stderr}`
  try {
    const verify = await verifyWhenListening(port, () => API_KEY.exec(stdout)?.[0], () => ended)
    if (verify === undefined) throw new Error(`${file} exited (${JSON.stringify(ended)}) or printed no API key before answering${output()}`)
    child.kill("SIGTERM")
    // A program that does not stop is killed (and then reports SIGKILL), never left running.
    const grace = new AbortController()
    const exit = await Promise.race([exited, sleep(STOP_GRACE_MS, undefined, { signal: grace.signal }).then(() => undefined, () => undefined)])
    grace.abort()
    if (exit === undefined) child.kill("SIGKILL")
    return { verify, exit: exit ?? (await exited), stdout, stderr }
  } finally {
    if (ended === undefined && child.exitCode === null) child.kill("SIGKILL")
  }
}

/** Tries `GET /verify` with the printed key until the program answers; undefined when it ended first. */
const verifyWhenListening = async (
  port: number,
  key: () => string | undefined,
  ended: () => ProgramRun["exit"] | undefined
): Promise<ProgramRun["verify"] | undefined> => {
  for (let attempt = 0; attempt < CONNECT_ATTEMPTS && ended() === undefined; attempt++) {
    const apiKey = key()
    if (apiKey !== undefined) {
      try {
        const response = await fetch(`http://127.0.0.1:${port}/api/v1/api/verify`, {
          headers: { authorization: `Bearer ${apiKey}` }
        })
        return { status: response.status, body: await response.json() }
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

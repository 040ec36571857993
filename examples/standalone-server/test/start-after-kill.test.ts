/**
 * `npm start` is kill-safe and rebuilds only what is stale (docs/standalone-server.md,
 * "Builds"). Every case runs the real root `start` script on a private copy of the
 * repository (the real `dist/` directories serve other tests meanwhile), in its own process
 * group, and SIGKILLs the whole group: right after the spawn, while the rebuild runs, and in
 * the state a kill between the two renames of the swap leaves. The next `npm start` must
 * answer GET /verify with the demo key it prints.
 *
 * The stale package is the standalone server itself: it has no dependents and its build is
 * ESM only without declarations (about 1 s), while touching any package under `packages/`
 * would rebuild it and every package depending on it (tens of seconds of `.d.ts` builds).
 *
 * The copy: the files git knows (tracked and untracked-but-not-ignored) plus every
 * package's `dist/` and `dist.stamp`, all with their modification times, so the copy is
 * exactly as up to date as this tree; a real `node_modules/` whose entries link to this
 * tree's, except `@switchboard/*`, which link to the copy's own packages (Node follows
 * links to real paths, so a link to this tree's `@switchboard` would load its packages).
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process"
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { basename, dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { childEnvironment, until } from "./helpers.js"

const repository = fileURLToPath(new URL("../../../", import.meta.url))
const SERVER = "examples/standalone-server"
const workspaces = (JSON.parse(readFileSync(join(repository, "package.json"), "utf8")) as { workspaces: Array<string> })
  .workspaces

/** Copies `from` to `to` (recursively), keeping modification times. */
const copyKeepingTimes = (from: string, to: string): void => {
  mkdirSync(dirname(to), { recursive: true })
  if (statSync(from).isDirectory()) return cpSync(from, to, { recursive: true, preserveTimestamps: true })
  copyFileSync(from, to)
  const { atime, mtime } = statSync(from)
  utimesSync(to, atime, mtime)
}

/** A private copy of the repository with its builds and a `node_modules/` of links (see above). */
const copyRepository = (): string => {
  const copy = mkdtempSync(join(tmpdir(), "switchboard-copy-"))
  const listed = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: repository,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024
  })
  for (const file of listed.split("\0")) {
    if (file !== "" && existsSync(join(repository, file))) copyKeepingTimes(join(repository, file), join(copy, file))
  }
  mkdirSync(join(copy, "node_modules", "@switchboard"), { recursive: true })
  for (const entry of readdirSync(join(repository, "node_modules"))) {
    if (entry !== "@switchboard" && entry !== ".cache") symlinkSync(join(repository, "node_modules", entry), join(copy, "node_modules", entry))
  }
  for (const workspace of workspaces) {
    for (const entry of ["dist", "dist.stamp"]) {
      if (existsSync(join(repository, workspace, entry))) copyKeepingTimes(join(repository, workspace, entry), join(copy, workspace, entry))
    }
    if (existsSync(join(repository, workspace, "node_modules"))) {
      symlinkSync(join(repository, workspace, "node_modules"), join(copy, workspace, "node_modules"))
    }
    const { name } = JSON.parse(readFileSync(join(copy, workspace, "package.json"), "utf8")) as { name: string }
    symlinkSync(join(copy, workspace), join(copy, "node_modules", "@switchboard", basename(name)))
  }
  return copy
}

/** The environment of `npm start`: no HOST/PORT/DATABASE_URL nor npm_* of the npm running vitest. */
const startEnvironment = (env: Record<string, string>): NodeJS.ProcessEnv =>
  Object.fromEntries(Object.entries(childEnvironment(env)).filter(([name]) => !name.startsWith("npm_") && name !== "INIT_CWD"))

/** `npm start` running in its own process group. */
interface Start {
  readonly child: ChildProcess
  readonly output: () => { readonly stdout: string; readonly stderr: string }
  readonly exited: Promise<number | string | null>
}

const running = new Set<ChildProcess>()

/** Spawns the root `npm start` of `copy` as a process group leader. */
const npmStart = (copy: string, directory: string): Start => {
  const child = spawn("npm", ["start"], {
    cwd: copy,
    detached: true,
    env: startEnvironment({ HOST: "127.0.0.1", PORT: "0", DATABASE_URL: `sqlite:${join(directory, "x.db")}` })
  })
  running.add(child)
  let stdout = ""
  let stderr = ""
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
  const exited = new Promise<number | string | null>((resolve) =>
    child.once("exit", (code, signal) => {
      running.delete(child)
      resolve(code ?? signal)
    })
  )
  return { child, output: () => ({ stdout, stderr }), exited }
}

/** SIGKILLs the whole process group of `start` (npm, build.mjs, tsup, esbuild, the server). */
const killGroup = (start: Start): void => {
  try {
    process.kill(-start.child.pid!, "SIGKILL")
  } catch {
    // The group is already gone.
  }
}

/**
 * Runs `npm start` until GET /verify with the demo key it prints answers (at most 60 s),
 * then kills it; returns what it printed.
 */
const startAndVerify = async (copy: string): Promise<{ readonly stdout: string; readonly stderr: string }> => {
  const start = npmStart(copy, mkdtempSync(join(scratch, "db-")))
  try {
    let ended = false
    void start.exited.then(() => (ended = true))
    const listening = () => /Switchboard listening on (http:\/\/\S+)/.exec(start.output().stderr)?.[1]
    const demoLine = () => start.output().stdout.split("\n").find((line) => line.startsWith('{"org_id"'))
    await until(() => ended || (listening() !== undefined && demoLine() !== undefined), "the server", 60_000)
    if (ended) throw new Error(`npm start exited before serving: ${start.output().stderr}`)
    const { api_key } = JSON.parse(demoLine()!) as { api_key: string }
    const response = await fetch(`${listening()}/verify`, { headers: { authorization: `Bearer ${api_key}` } })
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ status: 200, success: true })
    return start.output()
  } finally {
    killGroup(start)
    await start.exited
  }
}

/** Makes the standalone server's build stale. */
const touchServerSource = (copy: string): void => {
  const now = new Date()
  utimesSync(join(copy, SERVER, "src", "main.ts"), now, now)
}

const serverEntries = (copy: string): Array<string> => readdirSync(join(copy, SERVER))
/** The server's `dist/`: each file with its size and modification time. */
const build = (copy: string): Record<string, string> => {
  const dist = join(copy, SERVER, "dist")
  return Object.fromEntries(
    readdirSync(dist).map((file) => {
      const { size, mtimeMs } = statSync(join(dist, file))
      return [file, `${size} bytes, modified ${mtimeMs}`]
    })
  )
}
const stamp = (copy: string): string => readFileSync(join(copy, SERVER, "dist.stamp"), "utf8")

let scratch: string
let copy: string

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), "switchboard-start-"))
  copy = copyRepository()
  // The copy is as fresh as this tree; bring the server and its dependencies up to date
  // (nothing to do after `npm test`'s build).
  execFileSync(process.execPath, ["build.mjs", SERVER], { cwd: copy, stdio: "ignore", timeout: 240_000 })
}, 300_000)

afterAll(() => {
  for (const child of running) process.kill(-child.pid!, "SIGKILL")
  rmSync(scratch, { recursive: true, force: true })
  if (copy !== undefined) rmSync(copy, { recursive: true, force: true })
})

describe("npm start after a SIGKILL", () => {
  it("serves after a kill right after the spawn", async () => {
    touchServerSource(copy)
    const start = npmStart(copy, scratch)
    await new Promise((resolve) => start.child.once("spawn", resolve))
    killGroup(start)
    await start.exited
    const { stderr } = await startAndVerify(copy)
    expect(stderr).toContain("build: examples/standalone-server (examples/standalone-server/src/main.ts changed)")
  }, 120_000)

  it("serves after a kill while the rebuild runs, which had left the working build in place", async () => {
    touchServerSource(copy)
    const before = stamp(copy)
    const working = build(copy)
    const start = npmStart(copy, scratch)
    await until(() => serverEntries(copy).some((entry) => entry.startsWith("dist.next-")), "dist.next-<pid>", 60_000)
    killGroup(start)
    await start.exited
    expect(build(copy)).toEqual(working)
    expect(stamp(copy)).toBe(before)
    await startAndVerify(copy)
    expect(serverEntries(copy).filter((entry) => /^dist\.(next|old|stamp)-/.test(entry))).toEqual([])
    expect(stamp(copy)).not.toBe(before)
  }, 120_000)

  it("serves after a kill between the two renames of the swap (no dist/, a dist.old-<pid>)", async () => {
    const gone = spawn(process.execPath, ["-e", ""])
    await new Promise((resolve) => gone.once("exit", resolve))
    renameSync(join(copy, SERVER, "dist"), join(copy, SERVER, `dist.old-${gone.pid}`))
    mkdirSync(join(copy, SERVER, `dist.next-${gone.pid}`))
    writeFileSync(join(copy, SERVER, `dist.next-${gone.pid}`, "main.js"), "throw new Error('half a build')\n")
    const { stderr } = await startAndVerify(copy)
    expect(stderr).toContain("restored the build an interrupted run had moved aside")
    expect(serverEntries(copy).filter((entry) => /^dist\.(next|old|stamp)-/.test(entry))).toEqual([])
  }, 120_000)

  it("does not rebuild an up-to-date tree", async () => {
    const before = stamp(copy)
    const { stderr } = await startAndVerify(copy)
    expect(stderr).not.toContain("build:")
    expect(stamp(copy)).toBe(before)
  }, 120_000)
})

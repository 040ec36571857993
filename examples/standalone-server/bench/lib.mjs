// Shared helpers of the benchmarks: timing statistics, a temporary SQLite file, an
// organization with a key, a keep-alive HTTP client, the one way every HTTP and bulk bench
// starts a server in a child process (the built standalone server or a baseline), the
// WhatsApp simulator's CLI and other node commands in child processes, a process's RSS and
// CPU time from /proc, the baselines' own SQLite connection and API-key check, and the
// target lines every bench records for the summary `run.mjs` prints at the end.
// The baseline servers import this file too: Effect and core are loaded lazily, only by
// `createOrganization`, so a baseline process holds neither.
import { spawn } from "node:child_process"
import { createHash } from "node:crypto"
import { once } from "node:events"
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { Agent, request } from "node:http"
import { cpus, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import Database from "better-sqlite3"

/** Median and p99 of durations in ms. */
export const summarise = (durations) => {
  const sorted = [...durations].sort((a, b) => a - b)
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]
  return { median: at(0.5), p99: at(0.99), runs: sorted.length }
}

/** The median of numbers (the upper one of an even count). */
export const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

/**
 * What a figure keeps of its rounds (objects with `rps`, `serverCpu` and `loadCpu`): the
 * median throughput with its spread (`min`, `max`) and the median CPU shares of the server
 * and of the load generator.
 */
export const medianRound = (rounds) => {
  const rps = rounds.map((round) => round.rps)
  return {
    rps: median(rps),
    min: Math.min(...rps),
    max: Math.max(...rps),
    serverCpu: median(rounds.map((round) => round.serverCpu)),
    loadCpu: median(rounds.map((round) => round.loadCpu))
  }
}

/** The temporary directories made by {@link temporaryDirectory}, removed by one `exit` listener. */
const temporaryDirectories = []
process.once("exit", () => {
  for (const directory of temporaryDirectories) rmSync(directory, { recursive: true, force: true })
})

/**
 * A new temporary directory, removed at exit (one listener for them all: a listener each
 * passed Node's limit of 10 and printed a MaxListenersExceededWarning in a whole run).
 */
export const temporaryDirectory = () => {
  const directory = mkdtempSync(join(tmpdir(), "switchboard-bench-"))
  temporaryDirectories.push(directory)
  return directory
}

/** Creates an organization with an unlimited plan and returns its id and API key. */
export const createOrganization = async (storageLayer) => {
  const { Effect } = await import("effect")
  const { Core, Organizations } = await import("@switchboard/core")
  return Effect.runPromise(
    Effect.gen(function* () {
      const organizations = yield* Organizations
      const organization = yield* organizations.create({ name: "Bench" })
      const key = yield* organizations.issueApiKey(organization.id)
      return { organizationId: organization.id, apiKey: key.api_key }
    }).pipe(Effect.provide(Core.layer), Effect.provide(storageLayer))
  )
}

const agent = new Agent({ keepAlive: true, maxSockets: 64 })

/** One HTTP request on a keep-alive connection; resolves `{status, body}`. */
export const send = (url, { method = "GET", headers = {}, body } = {}) =>
  new Promise((resolve, reject) => {
    const req = request(url, { method, headers, agent }, (res) => {
      const chunks = []
      res.on("data", (chunk) => chunks.push(chunk))
      res.on("end", () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString("utf8") }))
    })
    req.on("error", reject)
    req.end(body)
  })

/** `send`, then throws unless the answer has `status` (default 200); resolves the body. */
export const expectStatus = async (url, options = {}, status = 200) => {
  const answer = await send(url, options)
  if (answer.status !== status) {
    throw new Error(`${options.method ?? "GET"} ${url} answered ${answer.status} (expected ${status}): ${answer.body.slice(0, 500)}`)
  }
  return answer.body
}

// ---------------------------------------------------------------------------------------
// Servers in child processes

const BENCH_DIRECTORY = fileURLToPath(new URL(".", import.meta.url))
/** The repository's root: where `npm start` runs the standalone server from. */
const REPOSITORY = fileURLToPath(new URL("../../../", import.meta.url))

/** The built standalone server, as `npm start` runs it. */
export const STANDALONE_MAIN = fileURLToPath(new URL("../dist/main.js", import.meta.url))

/** Limits no run reaches (the rate limiter still counts every request in its store). */
export const UNREACHED_LIMIT = "1000000000"

/**
 * The standalone server's environment for the SQLite file `filename`: its defaults
 * (SQLite rate-limit counters in `<filename>-rate-limits`, request logging on stderr,
 * `secret.key` created beside the file) except the port (0: any free one) and limits no
 * run reaches. Variables that would pick another store or key are emptied.
 */
export const standaloneEnv = (filename) => ({
  DATABASE_URL: `sqlite:${filename}`,
  PORT: "0",
  HOST: "127.0.0.1",
  REDIS_URL: "",
  DEVELOPER_API_RATE_LIMIT_REDIS_DISABLED: "",
  DEVELOPER_API_RATE_LIMIT_MAX: UNREACHED_LIMIT,
  DEVELOPER_API_SEND_RATE_LIMIT_MAX: UNREACHED_LIMIT,
  SWITCHBOARD_SECRET_KEY: ""
})

/** The `METRICS_TOKEN` of the server measured with its metrics on (never a real token). */
export const BENCH_METRICS_TOKEN = "bench-metrics-token"

/** The secret key of the benches' PostgreSQL servers (PostgreSQL requires one; never a real key). */
export const BENCH_SECRET_KEY = "7".repeat(64)

/**
 * A fresh schema name in the database of `POSTGRES_URL` for one PostgreSQL bench, dropped
 * when this process exits normally; `undefined` (with the reason printed by the caller)
 * when `POSTGRES_URL` is unset.
 */
export const temporaryPostgresSchema = async () => {
  if (!process.env.POSTGRES_URL) return undefined
  const schema = `switchboard_bench_${Math.random().toString(36).slice(2, 12)}`
  benchSchemas.push(schema)
  return schema
}
const benchSchemas = []

/** Drops the schemas of {@link temporaryPostgresSchema} (run at the end of a bench). */
export const dropPostgresSchemas = async () => {
  if (benchSchemas.length === 0) return
  const { default: Pg } = await import("pg")
  const pool = new Pg.Pool({ connectionString: process.env.POSTGRES_URL, max: 1 })
  try {
    for (const schema of benchSchemas.splice(0)) await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  } finally {
    await pool.end()
  }
}

/**
 * The servers of the HTTP and bulk benches. Each `name` is started by {@link startServer};
 * `requestLine` is what its log holds once per request (the proof its logging ran), or
 * `null` for a server that does not log.
 */
export const SERVERS = {
  switchboard: {
    label: "Switchboard (standalone server, defaults)",
    // BENCH_CPU_PROFILE_DIR=dir: the server writes a V8 CPU profile there when it stops (docs/benchmarks.md).
    args: () => [...(process.env.BENCH_CPU_PROFILE_DIR ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROFILE_DIR}`] : []), STANDALONE_MAIN],
    env: standaloneEnv,
    requestLine: '"message":"request"'
  },
  // The same server with its Prometheus metrics on (METRICS_TOKEN; docs/benchmarks.md "Metrics").
  switchboardMetrics: {
    label: "Switchboard (defaults + METRICS_TOKEN: metrics on)",
    args: () => [...(process.env.BENCH_CPU_PROFILE_DIR ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROFILE_DIR}`] : []), STANDALONE_MAIN],
    env: (filename) => ({ ...standaloneEnv(filename), METRICS_TOKEN: BENCH_METRICS_TOKEN }),
    requestLine: '"message":"request"'
  },
  baseline: {
    label: "bare node:http + better-sqlite3",
    args: (filename) => [join(BENCH_DIRECTORY, "servers/baseline.mjs"), filename],
    env: () => ({}),
    requestLine: null
  },
  express: {
    label: "Express 5 + express-rate-limit + pino",
    args: (filename) => [join(BENCH_DIRECTORY, "servers/express.mjs"), filename],
    env: () => ({}),
    requestLine: '"msg":"request"'
  },
  // On PostgreSQL the `filename` argument of startServer is the schema's name (in the database of POSTGRES_URL).
  switchboardPostgres: {
    label: "Switchboard (standalone server, defaults, DATABASE_URL=postgres://…)",
    // BENCH_DISPATCH_POSTGRES_MAIN: another build's dist/main.js (inside the repository) for the PostgreSQL part, for an A/B across runs.
    args: () => [
      ...(process.env.BENCH_CPU_PROFILE_DIR ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROFILE_DIR}`] : []),
      process.env.BENCH_DISPATCH_POSTGRES_MAIN ?? STANDALONE_MAIN
    ],
    env: (schema) => ({
      ...standaloneEnv(""),
      DATABASE_URL: process.env.POSTGRES_URL,
      DATABASE_SCHEMA: schema,
      SWITCHBOARD_SECRET_KEY: BENCH_SECRET_KEY
    }),
    requestLine: '"message":"request"'
  },
  postgresBaseline: {
    label: "hand-written node:http + pg",
    args: (schema) => [join(BENCH_DIRECTORY, "servers/postgres-baseline.mjs"), schema],
    env: () => ({}),
    requestLine: null
  },
  bulkBaseline: {
    label: "hand-written node:http + libphonenumber-js + better-sqlite3",
    args: (filename) => [join(BENCH_DIRECTORY, "servers/bulk-baseline.mjs"), filename],
    env: () => ({}),
    requestLine: null
  },
  // Meta's webhooks (ingest.mjs): WHATSAPP_APP_SECRET comes from startServer's extraEnv.
  ingestBaseline: {
    label: "hand-written node:http + better-sqlite3 webhook receiver",
    args: (filename) => [join(BENCH_DIRECTORY, "servers/ingest-baseline.mjs"), filename],
    env: () => ({}),
    requestLine: null
  },
  // Another build of the standalone server (BENCH_OTHER_BUILD_MAIN: its dist/main.js, inside
  // this repository so that it finds node_modules), for an A/B in one run (dispatch.mjs).
  switchboardOtherBuild: {
    label: "Switchboard (BENCH_OTHER_BUILD_MAIN, defaults)",
    args: () => [...(process.env.BENCH_CPU_PROFILE_DIR ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROFILE_DIR}`] : []), process.env.BENCH_OTHER_BUILD_MAIN],
    env: standaloneEnv,
    requestLine: '"message":"request"'
  },
  // The outbound dispatch (dispatch.mjs): a hand-written dispatcher on a copy of the backlog's
  // SQLite file; SWITCHBOARD_SECRET_KEY and WHATSAPP_API_BASE_URL come from startServer's extraEnv.
  dispatchBaseline: {
    label: "hand-written dispatcher: node + better-sqlite3 + undici",
    args: (filename) => [...(process.env.BENCH_CPU_PROFILE_DIR ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROFILE_DIR}`] : []), join(BENCH_DIRECTORY, "servers/dispatch-baseline.mjs"), filename],
    env: () => ({}),
    requestLine: null
  },
  // The media download (media.mjs): the `filename` argument is the file it answers every GET with.
  mediaBaseline: {
    label: "bare node:http + fs.createReadStream(file).pipe(res)",
    args: (file) => [join(BENCH_DIRECTORY, "servers/media-baseline.mjs"), file],
    env: () => ({}),
    requestLine: null
  },
  // Meta's webhooks on PostgreSQL (ingest.mjs): the `filename` argument is the schema's name;
  // POSTGRES_URL (the database copy) and WHATSAPP_APP_SECRET come from startServer's extraEnv.
  ingestPostgresBaseline: {
    label: "hand-written node:http + pg webhook receiver",
    args: (schema) => [join(BENCH_DIRECTORY, "servers/ingest-postgres-baseline.mjs"), schema],
    env: () => ({}),
    requestLine: null
  }
}

/** What every server of {@link SERVERS} writes on stderr once it accepts connections. */
const LISTENING = /listening on (http:\/\/127\.0\.0\.1:\d+\/api\/v1\/api)/

let started = 0
/** The servers started and not yet exited: killed when this process exits, even on an error. */
const running = new Set()
const killRunning = () => {
  for (const child of running) child.kill("SIGKILL")
}
process.once("exit", killRunning)

/**
 * Starts server `name` of {@link SERVERS} on the SQLite file `filename` in its own child
 * process, stdout and stderr going straight to a log file in `directory` (no pipe through
 * this process, which runs the load). Resolves, once the log says it listens,
 * `{name, url, pid, logFile, stop(), checkLogged(answered)}`:
 * `checkLogged` (after `stop`) throws unless the log holds at least `answered` request
 * lines, and removes the log.
 */
export const startServer = async (name, filename, directory, extraEnv = {}) => {
  const spec = SERVERS[name]
  started += 1
  const logFile = join(directory, `${name}-${started}.log`)
  const fd = openSync(logFile, "w")
  // BENCH_SERVER_NODE_ARGS: node options for every server, e.g. "--cpu-prof --cpu-prof-dir=/tmp/profiles".
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? "").split(" ").filter((arg) => arg !== "")
  const child = spawn(process.execPath, [...nodeArgs, ...spec.args(filename)], {
    cwd: REPOSITORY,
    env: { ...process.env, ...spec.env(filename), ...extraEnv },
    stdio: ["ignore", fd, fd]
  })
  closeSync(fd)
  running.add(child)
  let exited = false
  const exit = once(child, "exit").then(([code, signal]) => {
    exited = true
    running.delete(child)
    return { code, signal }
  })
  const deadline = Date.now() + 30_000
  let url
  while (url === undefined) {
    const match = LISTENING.exec(readFileSync(logFile, "utf8"))
    if (match) url = match[1]
    else if (exited) throw new Error(`${name} server exited before listening (${JSON.stringify(await exit)}):\n${readFileSync(logFile, "utf8")}`)
    else if (Date.now() > deadline) {
      child.kill("SIGKILL")
      throw new Error(`${name} server did not listen within 30 s:\n${readFileSync(logFile, "utf8")}`)
    } else await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return {
    name,
    url,
    pid: child.pid,
    logFile,
    stop: async () => {
      if (!exited) child.kill("SIGTERM")
      const { code, signal } = await exit
      if (code !== 0) throw new Error(`${name} server stopped with code ${code} (signal ${signal}):\n${readFileSync(logFile, "utf8").slice(-2000)}`)
    },
    checkLogged: (answered) => {
      if (spec.requestLine === null) return null
      const lines = countOccurrences(readFileSync(logFile, "utf8"), spec.requestLine)
      if (lines < answered) {
        throw new Error(`${name}: its log ${logFile} holds ${lines} request lines for ${answered} answered requests: was request logging on?`)
      }
      rmSync(logFile, { force: true })
      return lines
    }
  }
}

/** The WhatsApp simulator's command line, built (`npm run simulator` runs it). */
export const SIMULATOR_CLI = fileURLToPath(new URL("../../../packages/whatsapp-simulator/dist/cli.js", import.meta.url))

/** The standalone server's admin command line, built (`npm run cli` runs it). */
export const STANDALONE_CLI = fileURLToPath(new URL("../dist/cli.js", import.meta.url))

/**
 * Starts the WhatsApp simulator's CLI (`serve --port 0` followed by `args`) in a child
 * process with `env` added to this process's, its output going to a log file in
 * `directory`, killed when this process exits. Resolves, once it listens (at most 15 s),
 * `{url, client, close()}`: `client` is `connectSimulator(url)` (its control API).
 */
export const startSimulatorProcess = async (directory, args = [], env = {}) => {
  const { connectSimulator } = await import("@switchboard/whatsapp-simulator")
  started += 1
  const logFile = join(directory, `simulator-${started}.log`)
  const fd = openSync(logFile, "w")
  const child = spawn(process.execPath, [SIMULATOR_CLI, "serve", "--port", "0", ...args], { env: { ...process.env, ...env }, stdio: ["ignore", fd, fd] })
  closeSync(fd)
  running.add(child)
  const exit = once(child, "exit").then(() => running.delete(child))
  const deadline = Date.now() + 15_000
  let url
  while (url === undefined) {
    const line = readFileSync(logFile, "utf8").split("\n").find((each) => each.includes('"listening"'))
    if (line !== undefined) url = JSON.parse(line).url
    else if (child.exitCode !== null || Date.now() > deadline) {
      child.kill("SIGKILL")
      throw new Error(`the simulator did not listen within 15 s:\n${readFileSync(logFile, "utf8")}`)
    } else await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return {
    url,
    client: connectSimulator(url),
    close: async () => {
      child.kill("SIGTERM")
      await exit
    }
  }
}

/**
 * Runs `node <args>` with `env` added to this process's environment and resolves its
 * stdout; rejects, with its output, when it exits with another code than 0 or runs longer
 * than `timeoutMs` (then it is killed).
 */
export const runNode = (args, env = {}, timeoutMs = 60_000) =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: REPOSITORY, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk) => (stdout += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk) => (stderr += chunk))
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs)
    child.on("error", reject)
    child.on("close", (code, signal) => {
      clearTimeout(timer)
      if (code === 0) resolve(stdout)
      else reject(new Error(`node ${args.join(" ")} ${signal === "SIGKILL" ? `ran past ${timeoutMs} ms` : `exited with code ${code}`}:\n${stdout}${stderr}`))
    })
  })

const countOccurrences = (text, needle) => {
  let count = 0
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) count += 1
  return count
}

/**
 * The resident set size of process `pid` now (`rss`, VmRSS) and its peak since it started
 * or since {@link resetPeakMemory} (`peak`, VmHWM), in bytes, from /proc.
 */
export const processMemory = (pid) => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  const bytes = (field) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? Number.NaN) * 1024
  return { rss: bytes("VmRSS"), peak: bytes("VmHWM") }
}

/**
 * Resets the kernel's peak RSS (VmHWM) of process `pid` to its current RSS (writing 5 to
 * `/proc/<pid>/clear_refs`, Linux ≥ 4.0, the process's owner or root); whether it could.
 */
export const resetPeakMemory = (pid) => {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5")
    return true
  } catch {
    return false
  }
}

/** CPU seconds (user + system) the process `pid` has used so far, from /proc (NaN elsewhere). */
export const processCpuSeconds = (pid) => {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")
    return (Number(fields[11]) + Number(fields[12])) / 100 // utime, stime in clock ticks (100 Hz on Linux)
  } catch {
    return Number.NaN
  }
}

// ---------------------------------------------------------------------------------------
// What the baseline servers share with each other

/**
 * Opens `filename` for a baseline server with the settings the SQLite adapter uses
 * (WAL, `synchronous = NORMAL`, foreign keys on), so both write and read alike.
 */
export const openDatabase = (filename) => {
  const db = new Database(filename, { fileMustExist: true })
  db.pragma("journal_mode = WAL")
  db.pragma("synchronous = NORMAL")
  db.pragma("foreign_keys = ON")
  return db
}

/**
 * The baselines' API-key check, as Switchboard does it: the key from
 * `Authorization: Bearer <key>`, its SHA-256 as lowercase hex, ONE prepared SELECT on
 * `api_keys.hash` (unique index) joined to its organization; a revoked key is refused, and
 * so is an organization whose subscription is not `active` or whose plan has no
 * `api_access`. No cache. Returns `(authorization) => {status: 200, organization: {id, name}}`
 * or `{status: 401 | 403, message}`.
 */
export const apiKeyCheck = (db) => {
  const find = db.prepare(`SELECT o.id, o.name, o.api_access, o.subscription
    FROM api_keys AS k JOIN organizations AS o ON o.id = k.organization_id
    WHERE k.hash = ? AND k.revoked_at IS NULL`)
  return (authorization) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "")
    if (match === null) return { status: 401, message: "Missing API key" }
    const found = find.get(createHash("sha256").update(match[1]).digest("hex"))
    if (found === undefined) return { status: 401, message: "Invalid API key" }
    if (found.subscription !== "active") return { status: 403, message: "Subscription inactive" }
    if (found.api_access !== 1) return { status: 403, message: "API access not allowed" }
    return { status: 200, organization: { id: found.id, name: found.name } }
  }
}

/** The envelope every Switchboard answer has, as JSON text. */
export const envelope = (status, message, data, errors = []) =>
  JSON.stringify({ status, success: status < 400, message, data, errors })

/**
 * Serves `handle(request, response)` on 127.0.0.1 (any free port) the way the standalone
 * server is set up (keep-alive), prints `<label> listening on http://…/api/v1/api` on
 * stderr, and closes on SIGTERM with exit code 0.
 */
export const listen = async (label, server) => {
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve))
  process.stderr.write(`${label} listening on http://127.0.0.1:${server.address().port}/api/v1/api\n`)
  process.once("SIGTERM", () => {
    server.close(() => process.exit(0))
    server.closeIdleConnections()
  })
}

// ---------------------------------------------------------------------------------------
// Figures and targets

/** The target lines measured in this process, for {@link summaryBlock}. */
const targets = []

/**
 * Records one target (docs/benchmarks.md "Targets"): `value` against `target` in the
 * direction `at` ("least": value ≥ target, "most": value ≤ target). Returns its mark.
 */
export const recordTarget = (line, value, at, target, unit = "x") => {
  const met = at === "least" ? value >= target : value <= target
  targets.push({ line, value, at, target, unit, met })
  return met ? "✔" : "✘"
}

/** Adds target lines another process recorded (a part of `run.mjs`) to this process's summary. */
export const recordTargets = (lines) => {
  targets.push(...lines)
}

/** `0.53x` or `12.3 ms`. */
export const formatValue = (value, unit) => (unit === "x" ? `${value.toFixed(2)}x` : `${value.toFixed(unit === "ms" ? 2 : 0)} ${unit}`)

/** Node, time, CPUs and load average: other work on the machine skews every figure. */
export const machineLine = () =>
  `Switchboard benchmarks — node ${process.version}, ${new Date().toISOString()}, ${cpus().length} CPUs, ` +
  `load average at start ${loadavg().map((value) => value.toFixed(2)).join(" ")}`

/** The summary of every recorded target: line, value, target, ✔ or ✘. */
export const summaryBlock = () =>
  [
    "Summary: every target of this run (docs/benchmarks.md \"Targets\")",
    ...targets.map(
      ({ line, value, at, target, unit, met }) =>
        `  ${met ? "✔" : "✘"} ${line.padEnd(66)} ${formatValue(value, unit).padStart(10)}   target ${at === "least" ? ">=" : "<="} ${formatValue(target, unit)}`
    ),
    `  ${targets.filter((t) => t.met).length} of ${targets.length} targets met`
  ].join("\n")

/**
 * Runs `run` (which resolves the text of one bench) when `moduleUrl` is the script node
 * was started with, then prints the text and the summary; exit code 1 on any error.
 * Started by `run.mjs` (with an IPC channel), it prints the text only, sends its target
 * lines to `run.mjs` (which prints the machine line and the summary of every part) and
 * exits.
 */
export const runIfMain = (moduleUrl, run) => {
  if (process.argv[1] === undefined || pathToFileURL(process.argv[1]).href !== moduleUrl) return
  const part = process.send !== undefined
  if (!part) console.log(`${machineLine()}\n`)
  run().then(
    (text) => {
      console.log(text)
      // A part exits once its targets are sent, whatever handle a library left open.
      if (part) process.send({ targets }, () => process.exit(0))
      else console.log(`\n${summaryBlock()}`)
    },
    (error) => {
      console.error(error)
      killRunning()
      process.exitCode = 1
      if (part) process.exit(1)
    }
  )
}

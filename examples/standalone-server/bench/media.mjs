// Media (docs/benchmarks.md "Media", docs/media.md): a BENCH_MEDIA_MEGABYTES (100) MB
// document (a PDF header, then random bytes, written to a file by streaming) sent by a
// customer through the WhatsApp simulator (its CLI in a process of its own: `serve`, and
// `inbound --type document --file …`, which streams the file into it and posts the signed
// webhook) to the BUILT standalone server with its defaults (SQLite, MEDIA_DIR in the
// bench's temporary directory), which fetches it from the simulator in the background.
// 1. Fetch: the server's RSS before the inbound, its peak until the record is `stored`
//    (sampled every 50 ms, and the kernel's high-water mark, reset before) and after;
//    target: growth (peak − before) ≤ 30 MB. The record must hold the file's size and
//    SHA-256. Beside it, servers/media-fetch-baseline.mjs, a fresh process fetching the same
//    file from the simulator with `fetch` into a file (look-up, download, SHA-256), measured
//    the same way. Then one download from that server, its RSS growth printed.
// 2. Download: `GET /media/{uuid}/content` with the API key from the standalone server
//    started afresh on the same file and directory, beside a bare node:http server in its
//    own process answering the same file with `fs.createReadStream(file).pipe(res)`
//    (servers/media-baseline.mjs), from the same client in this process, one keep-alive
//    connection each: one download each whose SHA-256 is checked, then
//    BENCH_MEDIA_DOWNLOADS (5) timed downloads each, alternating. Figures: MB/s (median,
//    spread), each server's CPU time per download (/proc), the client's CPU share, and each
//    server's RSS growth over its downloads (peak − RSS before the first). Targets: the
//    fresh server's RSS growth ≤ 30 MB; throughput ≥ 0.5× the bare server's.
// MB are 10^6 bytes. Every wait has a time limit; the processes and the temporary directory
// are removed at the end, also on failure.
import { spawn } from "node:child_process"
import { createHash, randomBytes } from "node:crypto"
import { createWriteStream, rmSync } from "node:fs"
import { Agent, request } from "node:http"
import { join } from "node:path"
import { createInterface } from "node:readline"
import { pipeline } from "node:stream/promises"
import { fileURLToPath } from "node:url"
import {
  BENCH_SECRET_KEY,
  expectStatus,
  median,
  processCpuSeconds,
  processMemory,
  recordTarget,
  resetPeakMemory,
  runIfMain,
  runNode,
  SIMULATOR_CLI,
  STANDALONE_CLI,
  standaloneEnv,
  startServer,
  startSimulatorProcess,
  temporaryDirectory
} from "./lib.mjs"

const MEGABYTE = 1_000_000
const DOCUMENT_BYTES = Math.round(Number(process.env.BENCH_MEDIA_MEGABYTES ?? 100) * MEGABYTE)
const DOWNLOADS = Number(process.env.BENCH_MEDIA_DOWNLOADS ?? 5)
/** How often a server's RSS is sampled, in ms. */
const SAMPLE_MS = 50
/** The longest wait for a fetch (from the webhook's answer to `stored`), in ms. */
const FETCH_TIMEOUT_MS = 300_000
/** The longest one download may take, in ms. */
const DOWNLOAD_TIMEOUT_MS = 120_000
/** The RSS growth the fetch and the downloads may each cause, in MB (docs/benchmarks.md "Media"). */
const RSS_GROWTH_TARGET_MB = 30
/** The least download throughput against the bare server's (docs/benchmarks.md "Media"). */
const THROUGHPUT_TARGET = 0.5

/** The Meta app secret the simulator signs with and the server checks (never a real secret). */
const APP_SECRET = "bench-media-app-secret"
/** The bench's business number at the simulator, and the token of its channel (never a real token). */
const NUMBER = { phone_number_id: "106540352270001", display_phone_number: "+1 555-078-3881", waba_id: "102290129340398" }
const TOKEN = "EAAGmediaBenchToken00000000000001"
const CUSTOMER = "+16505551234"
const FETCH_BASELINE = fileURLToPath(new URL("servers/media-fetch-baseline.mjs", import.meta.url))

const megabytes = (bytes) => bytes / MEGABYTE

/**
 * Writes `size` bytes to `path` by streaming (a PDF header, then random bytes, 1 MiB at a
 * time: never the whole file in memory); resolves their SHA-256 (hex).
 */
const writeDocument = async (path, size) => {
  const hash = createHash("sha256")
  async function* chunks() {
    const header = Buffer.from("%PDF-1.7\n% Switchboard media bench\n")
    hash.update(header)
    yield header
    for (let written = header.length; written < size; ) {
      const chunk = randomBytes(Math.min(2 ** 20, size - written))
      written += chunk.length
      hash.update(chunk)
      yield chunk
    }
  }
  await pipeline(chunks(), createWriteStream(path))
  return hash.digest("hex")
}

/**
 * Watches the RSS of process `pid` from now: sampled every {@link SAMPLE_MS} ms, and the
 * kernel's high-water mark reset now where it can be. `stop()` answers, in bytes, `{before,
 * peak, sampled, kernel, after, growth}`: `peak` the larger of the highest sample and the
 * kernel's mark (`kernel` NaN when it could not be reset), `after` the RSS at the stop,
 * `growth` peak − before (MB).
 */
const watchMemory = (pid) => {
  const before = processMemory(pid).rss
  const kernelReset = resetPeakMemory(pid)
  let sampled = before
  const timer = setInterval(() => {
    try {
      sampled = Math.max(sampled, processMemory(pid).rss)
    } catch {
      // The process is gone: the bench fails where it waits for it.
    }
  }, SAMPLE_MS).unref()
  return {
    stop: () => {
      clearInterval(timer)
      const now = processMemory(pid)
      sampled = Math.max(sampled, now.rss)
      const kernel = kernelReset ? now.peak : Number.NaN
      const peak = Math.max(sampled, Number.isNaN(kernel) ? 0 : kernel)
      return { before, peak, sampled, kernel, after: now.rss, growth: megabytes(peak - before) }
    }
  }
}

/** A watch's figures as printed: before, peak (and how it was read), after, growth, in MB. */
const memoryLine = (watched, when) =>
  `RSS ${megabytes(watched.before).toFixed(1)} MB before ${when}, peak ${megabytes(watched.peak).toFixed(1)} MB ` +
  `(sampled every ${SAMPLE_MS} ms ${megabytes(watched.sampled).toFixed(1)}, kernel's high-water mark ` +
  `${Number.isNaN(watched.kernel) ? "not readable" : megabytes(watched.kernel).toFixed(1)}), ` +
  `${megabytes(watched.after).toFixed(1)} MB after: +${watched.growth.toFixed(1)} MB`

/**
 * One `GET url` on `agent`'s keep-alive connection, read to its end and thrown away (hashed
 * when `hash`): resolves `{status, bytes, seconds, sha256}` (`sha256` hex, or null). Rejects
 * when the connection fails, the body ends short, or no complete answer came within
 * {@link DOWNLOAD_TIMEOUT_MS}.
 */
const download = (agent, url, headers, hash = false) =>
  new Promise((resolve, reject) => {
    const started = performance.now()
    const digest = hash ? createHash("sha256") : null
    const req = request(url, { headers, agent }, (res) => {
      let bytes = 0
      res.on("data", (chunk) => {
        bytes += chunk.length
        digest?.update(chunk)
      })
      res.on("end", () => {
        clearTimeout(timer)
        resolve({ status: res.statusCode, bytes, seconds: (performance.now() - started) / 1000, sha256: digest?.digest("hex") ?? null })
      })
      res.on("close", () => {
        clearTimeout(timer)
        if (!res.complete) reject(new Error(`GET ${url}: the body ended after ${bytes} bytes`))
      })
    })
    const timer = setTimeout(() => req.destroy(new Error(`GET ${url}: no complete answer within ${DOWNLOAD_TIMEOUT_MS} ms`)), DOWNLOAD_TIMEOUT_MS)
    req.on("error", (error) => {
      clearTimeout(timer)
      reject(error)
    })
    req.end()
  })

/** {@link download} from `server` (`{label, url, headers, onRequest}`), hashed; throws unless it answered the whole file (`sha256`). */
const checkedDownload = async (agent, server, sha256) => {
  const answer = await download(agent, server.url, server.headers, true)
  server.onRequest()
  if (answer.status !== 200 || answer.bytes !== DOCUMENT_BYTES || answer.sha256 !== sha256) {
    throw new Error(`${server.label} answered ${answer.status} with ${answer.bytes} bytes of SHA-256 ${answer.sha256}; the file has ${DOCUMENT_BYTES}, ${sha256}`)
  }
}

/** The organization's API key, with the simulator's number as its channel, through the standalone server's CLI. */
const setUp = async (filename, simulatorUrl) => {
  const env = { ...standaloneEnv(filename), SWITCHBOARD_SECRET_KEY: BENCH_SECRET_KEY, WHATSAPP_API_BASE_URL: simulatorUrl, BENCH_MEDIA_ACCESS_TOKEN: TOKEN }
  const organization = JSON.parse(await runNode([STANDALONE_CLI, "org", "create", "--name", "Media bench"], env))
  await runNode(
    [STANDALONE_CLI, "channel", "add", "--org", organization.org_id, "--phone-number-id", NUMBER.phone_number_id, "--waba-id", NUMBER.waba_id, "--access-token-env", "BENCH_MEDIA_ACCESS_TOKEN"],
    env
  )
  return organization.api_key
}

/**
 * The customer sends `document` through the simulator's CLI (`inbound --type document
 * --file …`: streamed into the simulator, then the signed webhook posted to the server);
 * resolves the time the command took, in ms.
 */
const sendInbound = async (serverUrl, simulatorUrl, document) => {
  const started = performance.now()
  const printed = await runNode(
    [SIMULATOR_CLI, "inbound", "--webhook-url", `${serverUrl}/webhooks/whatsapp`, "--simulator", simulatorUrl,
      "--phone-number-id", NUMBER.phone_number_id, "--display-phone-number", NUMBER.display_phone_number, "--waba-id", NUMBER.waba_id,
      "--from", CUSTOMER, "--name", "Bench Customer", "--type", "document", "--file", document, "--caption", "The signed contract"],
    { SIMULATOR_APP_SECRET: APP_SECRET },
    120_000
  )
  const answer = JSON.parse(printed.trim().split("\n").pop())
  if (answer.answered !== 200) throw new Error(`the inbound document's webhook was answered ${printed}`)
  return performance.now() - started
}

/** Polls the organization's newest inbound media every 100 ms until it is `stored` (at most {@link FETCH_TIMEOUT_MS}); the record. */
const storedInboundMedia = async (server) => {
  const deadline = Date.now() + FETCH_TIMEOUT_MS
  for (;;) {
    server.onRequest()
    const [media] = JSON.parse(await expectStatus(`${server.url}/media?source=inbound&limit=1`, { headers: server.headers })).data.media
    if (media?.status === "stored") return media
    if (media?.status === "failed") throw new Error(`the inbound document's fetch failed: ${JSON.stringify(media)}`)
    if (Date.now() > deadline) throw new Error(`the inbound document was not stored within ${FETCH_TIMEOUT_MS} ms: ${JSON.stringify(media)}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/**
 * Part 1 on `server` (`{url, pid, headers, onRequest}`, started for it): the inbound
 * document fetched from the simulator; its record, its RSS watch and the lines.
 */
const fetching = async (server, simulatorUrl, document, sha256) => {
  server.onRequest()
  await expectStatus(`${server.url}/verify`, { headers: server.headers })
  await new Promise((resolve) => setTimeout(resolve, 500))
  const cpuBefore = processCpuSeconds(server.pid)
  const memory = watchMemory(server.pid)
  const inboundMs = await sendInbound(server.url, simulatorUrl, document)
  const answeredAt = performance.now()
  const media = await storedInboundMedia(server)
  const fetchSeconds = (performance.now() - answeredAt) / 1000
  const watched = memory.stop()
  const cpuSeconds = processCpuSeconds(server.pid) - cpuBefore
  if (media.size !== DOCUMENT_BYTES || media.sha256 !== sha256 || media.mime_type !== "application/pdf") {
    throw new Error(`the stored record is not the document's (${DOCUMENT_BYTES} bytes, ${sha256}): ${JSON.stringify(media)}`)
  }
  return {
    media,
    watched,
    line:
      `  fetch: the simulator took the file and the server answered its webhook in ${(inboundMs / 1000).toFixed(1)} s; ` +
      `the record was stored ${fetchSeconds.toFixed(1)} s after that answer (polled every 100 ms), size and SHA-256 the file's; server CPU ${cpuSeconds.toFixed(2)} s from the inbound to stored`
  }
}

/**
 * Waits for the next line of `lines` (a readline interface) that `accept`s, at most
 * `timeoutMs`; rejects naming `what` when the stream ends first or the time runs out.
 */
const nextLine = (lines, accept, what, timeoutMs) =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(() => finish(new Error(`${what}: nothing within ${timeoutMs} ms`)), timeoutMs)
    const onLine = (line) => accept(line) && finish(undefined, line)
    const onClose = () => finish(new Error(`${what}: the process ended first`))
    const finish = (error, line) => {
      clearTimeout(timer)
      lines.off("line", onLine)
      lines.off("close", onClose)
      if (error) reject(error)
      else resolve(line)
    }
    lines.on("line", onLine)
    lines.once("close", onClose)
  })

/** The fetch baseline (servers/media-fetch-baseline.mjs) in a fresh process: the simulator's copy of the file fetched; its RSS watch. */
const fetchBaseline = async (simulator, directory, sha256) => {
  const [media] = (await simulator.client.media()).filter((each) => each.file_size === DOCUMENT_BYTES)
  if (media === undefined) throw new Error("the simulator holds no media of the document's size")
  const child = spawn(process.execPath, [FETCH_BASELINE, simulator.url, media.id, join(directory, "fetched-by-baseline.pdf")], {
    env: { ...process.env, BENCH_MEDIA_ACCESS_TOKEN: TOKEN },
    stdio: ["pipe", "pipe", "inherit"]
  })
  const lines = createInterface({ input: child.stdout })
  const exited = new Promise((resolve) => child.once("exit", resolve))
  try {
    await nextLine(lines, (line) => line === "ready", "the fetch baseline's start", 30_000)
    await new Promise((resolve) => setTimeout(resolve, 500))
    const memory = watchMemory(child.pid)
    child.stdin.write("go\n")
    const fetched = JSON.parse(await nextLine(lines, (line) => line.startsWith("{"), "the fetch baseline's fetch", FETCH_TIMEOUT_MS))
    const watched = memory.stop()
    if (fetched.size !== DOCUMENT_BYTES || fetched.sha256 !== sha256) throw new Error(`the fetch baseline fetched ${JSON.stringify(fetched)}, not the document`)
    return watched
  } finally {
    child.stdin.end()
    const killer = setTimeout(() => child.kill("SIGKILL"), 5_000)
    await exited
    clearTimeout(killer)
  }
}

/**
 * Part 2: from `servers` (Switchboard's, the bare one's: `{label, url, pid, headers,
 * onRequest}`), one checked download each, then {@link DOWNLOADS} timed downloads each,
 * alternating; each server's figures.
 */
const downloading = async (agent, servers, sha256) => {
  const memories = servers.map((server) => watchMemory(server.pid))
  for (const server of servers) await checkedDownload(agent, server, sha256)
  const rounds = servers.map(() => [])
  for (let round = 0; round < DOWNLOADS; round++) {
    for (const index of round % 2 === 0 ? [0, 1] : [1, 0]) {
      const server = servers[index]
      const cpuBefore = processCpuSeconds(server.pid)
      const clientBefore = process.cpuUsage()
      const answer = await download(agent, server.url, server.headers)
      server.onRequest()
      const client = process.cpuUsage(clientBefore)
      if (answer.status !== 200 || answer.bytes !== DOCUMENT_BYTES) throw new Error(`${server.label} answered ${answer.status} with ${answer.bytes} bytes (expected ${DOCUMENT_BYTES})`)
      rounds[index].push({
        megabytesPerSecond: megabytes(answer.bytes) / answer.seconds,
        cpuMs: (processCpuSeconds(server.pid) - cpuBefore) * 1000,
        clientShare: (client.user + client.system) / 1e6 / answer.seconds
      })
    }
  }
  return servers.map((server, index) => {
    const speeds = rounds[index].map((each) => each.megabytesPerSecond)
    return {
      megabytesPerSecond: median(speeds),
      min: Math.min(...speeds),
      max: Math.max(...speeds),
      cpuMs: median(rounds[index].map((each) => each.cpuMs)),
      clientShare: median(rounds[index].map((each) => each.clientShare)),
      watched: memories[index].stop()
    }
  })
}

export const run = async () => {
  const directory = temporaryDirectory()
  const document = join(directory, "document.pdf")
  const filename = join(directory, "media.db")
  // The client's keep-alive connections (one per server: downloads run one at a time).
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const stops = []
  let failure
  try {
    const written = performance.now()
    const sha256 = await writeDocument(document, DOCUMENT_BYTES)
    const writeSeconds = (performance.now() - written) / 1000
    const simulator = await startSimulatorProcess(
      directory,
      ["--phone-number-id", NUMBER.phone_number_id, "--display-phone-number", NUMBER.display_phone_number, "--waba-id", NUMBER.waba_id, "--statuses", "none"],
      { SIMULATOR_ACCESS_TOKEN: TOKEN }
    )
    stops.push(simulator.close)
    const apiKey = await setUp(filename, simulator.url)
    const headers = { authorization: `Bearer ${apiKey}` }
    /**
     * The standalone server on the bench's file and media directory, as `{label, url (its
     * API's base), pid, headers, onRequest, stop()}`; stopped (once) at the end at the
     * latest, its log then checked for a line per request the bench counted.
     */
    const startSwitchboard = async () => {
      const server = await startServer("switchboard", filename, directory, {
        SWITCHBOARD_SECRET_KEY: BENCH_SECRET_KEY,
        WHATSAPP_APP_SECRET: APP_SECRET,
        WHATSAPP_API_BASE_URL: simulator.url,
        MEDIA_DIR: join(directory, "media")
      })
      let answered = 0
      let stopped
      const stop = () =>
        (stopped ??= server.stop().then(() => {
          if (failure === undefined) server.checkLogged(answered)
        }))
      stops.push(stop)
      return { label: "Switchboard GET /media/{uuid}/content (API key)", url: server.url, pid: server.pid, headers, onRequest: () => answered++, stop }
    }

    // Part 1: the fetch, on a server started for it, then the fetch baseline; one download from the server that fetched.
    const fetcher = await startSwitchboard()
    const fetched = await fetching(fetcher, simulator.url, document, sha256)
    const fetchedByBaseline = await fetchBaseline(simulator, directory, sha256)
    const contentPath = `/media/${fetched.media.uuid}/content`
    const afterFetch = watchMemory(fetcher.pid)
    await checkedDownload(agent, { ...fetcher, url: `${fetcher.url}${contentPath}` }, sha256)
    const downloadAfterFetch = afterFetch.stop()
    await fetcher.stop()

    // Part 2: the downloads, from a server started afresh (its RSS not starting from what
    // the fetch left in the allocator) and the bare server, alternating.
    const fresh = await startSwitchboard()
    const baseline = await startServer("mediaBaseline", document, directory)
    stops.push(baseline.stop)
    const servers = [
      { ...fresh, url: `${fresh.url}${contentPath}` },
      { label: "bare node:http + fs.createReadStream(file).pipe(res)", url: baseline.url, pid: baseline.pid, headers: {}, onRequest: () => undefined }
    ]
    const [ours, theirs] = await downloading(agent, servers, sha256)
    const ratio = ours.megabytesPerSecond / theirs.megabytesPerSecond
    const size = megabytes(DOCUMENT_BYTES).toFixed(0)
    const row = (server, figure) =>
      `    ${server.label.padEnd(54)} ${figure.megabytesPerSecond.toFixed(0).padStart(5)} MB/s (downloads ${figure.min.toFixed(0)}–${figure.max.toFixed(0)})` +
      `  server CPU ${figure.cpuMs.toFixed(0)} ms a download, client CPU ${(figure.clientShare * 100).toFixed(0)}%`
    return [
      `Media: a ${size} MB document (a PDF header, then random bytes; written in ${writeSeconds.toFixed(1)} s) sent by a customer through the ` +
        `WhatsApp simulator (its CLI, a process of its own), fetched by the standalone server (defaults, SQLite, MEDIA_DIR a directory), then downloaded`,
      fetched.line,
      `  ${recordTarget(`media fetch of ${size} MB: server RSS growth (≤ ${RSS_GROWTH_TARGET_MB} MB)`, fetched.watched.growth, "most", RSS_GROWTH_TARGET_MB, "MB")} ` +
        `server ${memoryLine(fetched.watched, "the inbound")}`,
      `    a fresh node process fetching the same file with fetch() into a file (servers/media-fetch-baseline.mjs): ${memoryLine(fetchedByBaseline, "its fetch")}`,
      `    one download from the server that fetched (SHA-256 checked): ${memoryLine(downloadAfterFetch, "it")}`,
      `  downloads from a server started afresh and a bare one: one each whose SHA-256 matched the file's, then ${DOWNLOADS} timed each on one keep-alive connection per server, alternating`,
      row(servers[0], ours),
      row(servers[1], theirs),
      `    ${recordTarget("media download: MB/s, Switchboard / createReadStream().pipe(res)", ratio, "least", THROUGHPUT_TARGET)} ` +
        `throughput, Switchboard / bare: ${ratio.toFixed(2)}x (target >= ${THROUGHPUT_TARGET}x); CPU per download, Switchboard / bare: ${(ours.cpuMs / theirs.cpuMs).toFixed(2)}x`,
      `  ${recordTarget(`media download of ${size} MB: server RSS growth (≤ ${RSS_GROWTH_TARGET_MB} MB)`, ours.watched.growth, "most", RSS_GROWTH_TARGET_MB, "MB")} ` +
        `server started afresh, over its ${DOWNLOADS + 1} downloads: ${memoryLine(ours.watched, "the first")}`,
      `    the bare server, over its ${DOWNLOADS + 1} downloads: ${memoryLine(theirs.watched, "the first")}`
    ].join("\n")
  } catch (error) {
    failure = error
    throw error
  } finally {
    agent.destroy()
    // Every process stopped and the directory removed, whatever failed; the first failure is thrown.
    for (const stop of stops.reverse()) await stop().catch((error) => (failure ??= error))
    rmSync(directory, { recursive: true, force: true })
    if (failure !== undefined) throw failure
  }
}

runIfMain(import.meta.url, run)

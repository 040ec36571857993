import { Cause, FiberId, List, Logger } from "effect"
// CommonJS: the default import is `module.exports`, which carries the class as `SonicBoom`.
import sonicBoom from "sonic-boom"
import type { RequestLogLine } from "@switchboard/http-adapter"

/**
 * The standalone server's log output (docs/standalone-server.md "Logs"): JSON lines on
 * stderr, in the format of Effect's `Logger.jsonLogger`. `logger` is the handler's `logger`
 * (storage failures, defects, warnings; {@link formatJsonLine}), `requestLog` its
 * `requestLog` (the one line per request; {@link formatRequestLine}). The lines of one turn
 * of the event loop are joined and handed to pino's `sonic-boom` once, at the end of the
 * turn ({@link makeLineBatcher}), which writes them synchronously, as pino's default
 * destination does: under load one system call carries the many lines of a turn, and
 * nothing waits on a thread-pool write (docs/benchmarks.md). `flushSync()` writes
 * everything logged so far; it also runs when the process exits (`process.exit` after
 * SIGINT/SIGTERM included). A process killed with SIGKILL can lose the lines of the turn
 * it was in. When stderr fails for good (its reader gone: EPIPE), later lines are dropped
 * and the server goes on answering.
 *
 * @category logging
 */
export interface StderrLog {
  readonly logger: Logger.Logger<unknown, void>
  readonly requestLog: (line: RequestLogLine) => void
  readonly flushSync: () => void
}

/**
 * Opens the standalone server's {@link StderrLog} on file descriptor 2.
 *
 * @category logging
 */
export const stderrJsonLog = (): StderrLog => {
  // Synchronous: one write(2) per turn of the event loop, done on this thread. An
  // asynchronous write goes through libuv's thread pool (a thread wake-up and a completion
  // callback per write) and cost ~9% of `GET /verify`'s throughput (docs/benchmarks.md).
  const destination = new sonicBoom.SonicBoom({ fd: 2, sync: true })
  // stderr can fail for good: its reader gone (EPIPE), the descriptor closed. The server
  // then keeps answering and drops its log lines: without this listener the error is
  // thrown out of the end-of-turn write and the process exits, and `sonic-boom`'s own
  // `flushSync` (run at exit) retries a failed write every 100 ms forever, so the process
  // hung instead of exiting. A full pipe (EAGAIN) is not such a failure: `sonic-boom`
  // waits for the reader.
  let failed = false
  destination.on("error", () => {
    failed = true
  })
  const lines = makeLineBatcher((text) => {
    if (!failed) destination.write(text)
  })
  // In synchronous mode `write` writes at once (sonic-boom's `minLength` is 0), so handing
  // over what is pending is the whole flush; `destination.flushSync()` is never called.
  const flushSync = () => lines.flush()
  process.once("exit", flushSync)
  return {
    logger: Logger.make((options) => lines.add(formatJsonLine(options))),
    requestLog: (line) => lines.add(formatRequestLine(line)),
    flushSync
  }
}

/**
 * Joins the lines added during one turn of the event loop and hands them to `write` once,
 * as one text (each line followed by `\n`), when `schedule` runs its callback (default
 * `setImmediate`: after this turn's I/O callbacks). `flush()` hands over what is pending
 * now. Lines keep their order.
 *
 * @category logging
 */
export const makeLineBatcher = (
  write: (text: string) => void,
  schedule: (flush: () => void) => unknown = setImmediate
): { readonly add: (line: string) => void; readonly flush: () => void } => {
  let pending = ""
  const flush = () => {
    if (pending === "") return
    const text = pending
    pending = ""
    write(text)
  }
  return {
    add: (line) => {
      if (pending === "") schedule(flush)
      pending += `${line}\n`
    },
    flush
  }
}

/**
 * A request line (the handler's {@link RequestLogLine}) as `Logger.jsonLogger` writes the
 * handler's request entry, character for character (a test compares them): message
 * `request`, the level, the ISO timestamp, the six annotations in the order of Effect's
 * `HashMap`, no spans, fiber id none. Built as one string, without an intermediate object.
 *
 * @category logging
 */
export const formatRequestLine = (line: RequestLogLine): string =>
  `{"message":"request","logLevel":"${line.level}","timestamp":"${isoTimestampOf(line.timestamp)}",` +
  `"annotations":{"request_id":${JSON.stringify(line.requestId)},"organization_id":${JSON.stringify(line.organizationId)},` +
  `"status":${JSON.stringify(line.status)},"method":${JSON.stringify(line.method)},` +
  `"duration_ms":${JSON.stringify(line.durationMs)},"route":${JSON.stringify(line.route)}},"spans":{},"fiberId":""}`

let lastTimestamp = Number.NaN
let lastIsoTimestamp = ""

/** `new Date(ms).toISOString()`, reusing the last one for the same millisecond (many lines share one under load). */
const isoTimestampOf = (ms: number): string => {
  if (ms !== lastTimestamp) {
    lastIsoTimestamp = new Date(ms).toISOString()
    lastTimestamp = ms
  }
  return lastIsoTimestamp
}

/**
 * One log entry as `Logger.jsonLogger` formats it (`message`, `logLevel`, `timestamp`,
 * `cause`, `annotations`, `spans`, `fiberId`), character for character. The request log
 * line (a string message, annotations of strings, numbers and null, no cause, no spans)
 * takes a plain `JSON.stringify`: `jsonLogger`'s circular-safe serializer with a replacer
 * cost about as much as the rest of the line (docs/benchmarks.md). Anything else goes
 * through `jsonLogger` itself.
 *
 * @category logging
 */
export const formatJsonLine = (options: Logger.Logger.Options<unknown>): string => {
  if (typeof options.message !== "string" || !Cause.isEmpty(options.cause) || List.isCons(options.spans)) {
    return Logger.jsonLogger.log(options)
  }
  const annotations: Record<string, string | number | boolean | null> = {}
  for (const [key, value] of options.annotations) {
    if (value !== null && typeof value !== "string" && typeof value !== "boolean" && typeof value !== "number") {
      return Logger.jsonLogger.log(options)
    }
    annotations[key] = value
  }
  return JSON.stringify({
    message: options.message,
    logLevel: options.logLevel.label,
    timestamp: options.date.toISOString(),
    annotations,
    spans: {},
    fiberId: FiberId.threadName(options.fiberId)
  })
}

import { Cause, FiberId, List, Logger } from "effect"
// CommonJS: the default import is `module.exports`, which carries the class as `SonicBoom`.
import sonicBoom from "sonic-boom"

/**
 * The standalone server's logger (docs/standalone-server.md "Logs"): Effect's JSON lines
 * (the format of `Logger.jsonLogger`, see {@link formatJsonLine}), one per line, on
 * stderr, written asynchronously through pino's `sonic-boom`. A line is queued and written
 * at once when no write is in flight; lines queued meanwhile leave together in the next
 * write, so under load one `write(2)` carries many lines instead of one system call per
 * request. Whatever is still queued is written synchronously when the process exits
 * (`process.exit` after SIGINT/SIGTERM included); a process killed with SIGKILL can lose
 * the lines of its last write.
 *
 * @category logging
 */
export const stderrJsonLogger = (): Logger.Logger<unknown, void> => {
  const destination = new sonicBoom.SonicBoom({ fd: 2, sync: false })
  process.once("exit", () => {
    try {
      destination.flushSync()
    } catch {
      // stderr is gone (closed pipe): nothing can be written anywhere.
    }
  })
  return Logger.make((options) => {
    destination.write(`${formatJsonLine(options)}\n`)
  })
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

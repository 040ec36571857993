import { LogLevel } from "effect"

/**
 * The least severe log line a handler writes (docs/http-adapter.md "Log level"), lowest
 * first: `debug` (every line), `info` (the default: request lines and everything above),
 * `warn` (warnings, errors and the request lines of 5xx answers), `error` (errors and the
 * request lines of 5xx answers). The standalone server reads it from `LOG_LEVEL`.
 *
 * @category logging
 */
export type HandlerLogLevel = (typeof HANDLER_LOG_LEVELS)[number]

/**
 * Every {@link HandlerLogLevel}, lowest first.
 *
 * @category logging
 */
export const HANDLER_LOG_LEVELS = ["debug", "info", "warn", "error"] as const

const effectLevels: Record<HandlerLogLevel, LogLevel.LogLevel> = {
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warn: LogLevel.Warning,
  error: LogLevel.Error
}

/**
 * Effect's level for a {@link HandlerLogLevel}; throws a `TypeError` naming the allowed
 * values for anything else (a host passing an unchecked string).
 *
 * @internal
 */
export const effectLogLevelOf = (level: HandlerLogLevel | undefined): LogLevel.LogLevel => {
  if (level === undefined) return LogLevel.Info
  const found = Object.hasOwn(effectLevels, level) ? effectLevels[level] : undefined
  if (found === undefined) throw new TypeError(`logLevel must be one of ${HANDLER_LOG_LEVELS.join(", ")}; got ${String(level)}`)
  return found
}

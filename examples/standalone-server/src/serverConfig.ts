import { HANDLER_LOG_LEVELS, type HandlerLogLevel } from "@switchboard/http-adapter"
import { Config, ConfigError, Either } from "effect"
import { databaseConfig, type DatabaseLocation } from "./config.js"

// The server's own settings, apart from config.ts so the admin CLI, which shares config.ts,
// never loads the HTTP adapter (docs/standalone-server.md "Builds").

/**
 * Settings of the standalone server: the interface and port to listen on (`port` 0 asks
 * the system for a free port), the parsed `DATABASE_URL` and the least severe log line
 * written (`LOG_LEVEL`).
 *
 * @category models
 */
export interface ServerConfig {
  readonly host: string
  readonly port: number
  readonly database: DatabaseLocation
  readonly logLevel: HandlerLogLevel
}

/**
 * The server's settings from the environment: `HOST` (default `127.0.0.1`), `PORT`
 * (default 3000; an integer from 0 to 65535, 0 = a free port chosen by the system) and
 * `DATABASE_URL` ({@link databaseConfig}) and `LOG_LEVEL` ({@link logLevelConfig}).
 *
 * @category config
 */
export const serverConfig: Config.Config<ServerConfig> = Config.all({
  host: Config.string("HOST").pipe(
    Config.withDefault("127.0.0.1"),
    Config.mapOrFail((host) =>
      host.trim() === ""
        ? Either.left(ConfigError.InvalidData(["HOST"], "HOST must not be empty"))
        : Either.right(host.trim())
    )
  ),
  port: Config.string("PORT").pipe(Config.withDefault("3000"), Config.mapOrFail((text) => parsePort(text))),
  database: databaseConfig,
  logLevel: Config.suspend(() => logLevelConfig)
})

/**
 * `LOG_LEVEL`: `debug`, `info` (default), `warn` or `error`, in any case
 * (docs/standalone-server.md "Logs"). Anything else is an invalid configuration naming the
 * four values.
 *
 * @category config
 */
export const logLevelConfig: Config.Config<HandlerLogLevel> = Config.string("LOG_LEVEL").pipe(
  Config.withDefault("info"),
  Config.mapOrFail((text) => {
    const level = HANDLER_LOG_LEVELS.find((candidate) => candidate === text.trim().toLowerCase())
    return level === undefined
      ? Either.left(ConfigError.InvalidData(["LOG_LEVEL"], `LOG_LEVEL must be one of ${HANDLER_LOG_LEVELS.join(", ")}`))
      : Either.right(level)
  })
)

const parsePort = (text: string): Either.Either<number, ConfigError.ConfigError> => {
  const port = Number(text.trim())
  return /^\s*\d+\s*$/.test(text) && Number.isSafeInteger(port) && port <= 65535
    ? Either.right(port)
    : Either.left(ConfigError.InvalidData(["PORT"], `PORT must be an integer from 0 to 65535 (got "${text}")`))
}

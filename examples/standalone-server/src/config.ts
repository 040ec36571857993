import { mkdirSync } from "node:fs"
import { dirname, isAbsolute, resolve } from "node:path"
import { MemoryStorage, type Storage, type StorageError } from "@switchboard/core"
import { SqliteStorage } from "@switchboard/storage-sqlite"
import { Config, ConfigError, Data, Effect, Either, Layer, Option } from "effect"
import { layerOnImport } from "./lazyLayer.js"

/**
 * A configuration value the standalone server or the admin CLI cannot use: an invalid
 * `HOST`, `PORT` or `DATABASE_URL`, or a database directory that cannot be created.
 * `message` says which variable is wrong and what is expected; it never echoes a
 * connection string that could hold credentials.
 *
 * @category errors
 */
export class InvalidConfiguration extends Data.TaggedError("InvalidConfiguration")<{
  readonly message: string
}> {}

/**
 * Where the data lives, parsed from `DATABASE_URL` (docs/configuration.md): a SQLite file (an
 * absolute `filename`), the in-memory store of one process, a MongoDB server, or a
 * PostgreSQL server (with the schema from `DATABASE_SCHEMA`, default `switchboard`).
 *
 * @category models
 */
export type DatabaseLocation =
  | { readonly _tag: "Sqlite"; readonly filename: string }
  | { readonly _tag: "Memory" }
  | { readonly _tag: "MongoDb"; readonly url: string }
  | { readonly _tag: "Postgres"; readonly url: string; readonly schema: string }

/**
 * `DATABASE_URL` when none is set (docs/configuration.md).
 *
 * @category config
 */
export const DEFAULT_DATABASE_URL = "sqlite:./data/switchboard.db"

/**
 * The PostgreSQL schema Switchboard's tables live in when `DATABASE_SCHEMA` is unset
 * (docs/configuration.md).
 *
 * @category config
 */
export const DEFAULT_DATABASE_SCHEMA = "switchboard"

/**
 * The directory relative SQLite paths are resolved against: npm's `INIT_CWD` (the
 * directory `npm start` or `npm run cli` was run from), else the working directory.
 *
 * @category config
 */
export const baseDirectoryConfig: Config.Config<string> = Config.option(Config.string("INIT_CWD")).pipe(
  Config.map((initCwd) => Option.getOrElse(initCwd, () => process.cwd()))
)

/**
 * `DATABASE_URL` (default {@link DEFAULT_DATABASE_URL}) parsed by {@link parseDatabaseUrl}
 * against {@link baseDirectoryConfig}, with `DATABASE_SCHEMA` (default
 * {@link DEFAULT_DATABASE_SCHEMA}) for PostgreSQL, both read from the `ConfigProvider`.
 *
 * @category config
 */
export const databaseConfig: Config.Config<DatabaseLocation> = Config.all([
  Config.string("DATABASE_URL").pipe(Config.withDefault(DEFAULT_DATABASE_URL)),
  baseDirectoryConfig,
  Config.string("DATABASE_SCHEMA").pipe(Config.withDefault(""))
]).pipe(
  Config.mapOrFail(([url, baseDirectory, schema]) =>
    Either.mapLeft(parseDatabaseUrl(url, baseDirectory, schema.trim() || DEFAULT_DATABASE_SCHEMA), (error) =>
      ConfigError.InvalidData(["DATABASE_URL"], error.message)
    )
  )
)

/**
 * Loads a {@link Config} from the current `ConfigProvider` (the environment by default)
 * and turns any failure into one {@link InvalidConfiguration} listing every problem.
 *
 * @category config
 */
export const loadConfig = <A>(config: Config.Config<A>): Effect.Effect<A, InvalidConfiguration> =>
  Effect.mapError(config, (error) => new InvalidConfiguration({ message: describeConfigError(error) }))

/**
 * Parses a `DATABASE_URL` (docs/configuration.md):
 * - `sqlite:PATH`: a SQLite file; an absolute `PATH` (`sqlite:/var/db/s.db`, also
 *   `sqlite:///var/db/s.db`) is used as it is, a relative one (`sqlite:./data/s.db`,
 *   `sqlite:s.db`) is resolved against `baseDirectory`;
 * - `memory:`: the in-memory store of one process;
 * - `mongodb://…` / `mongodb+srv://…`: MongoDB;
 * - `postgres://…` / `postgresql://…`: PostgreSQL, its tables in the schema `schema`
 *   (`DATABASE_SCHEMA`, default `switchboard`).
 * Anything else fails with an {@link InvalidConfiguration} naming the accepted forms.
 *
 * @category config
 */
export const parseDatabaseUrl = (
  url: string,
  baseDirectory: string = process.env.INIT_CWD ?? process.cwd(),
  schema: string = process.env.DATABASE_SCHEMA?.trim() || DEFAULT_DATABASE_SCHEMA
): Either.Either<DatabaseLocation, InvalidConfiguration> => {
  const value = url.trim()
  if (value.startsWith("sqlite:")) return parseSqlitePath(value.slice("sqlite:".length), baseDirectory)
  if (value === "memory:") return Either.right({ _tag: "Memory" })
  if (value.startsWith("mongodb://") || value.startsWith("mongodb+srv://")) {
    return Either.right({ _tag: "MongoDb", url: value })
  }
  if (value.startsWith("postgres://") || value.startsWith("postgresql://")) {
    return Either.right({ _tag: "Postgres", url: value, schema })
  }
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(value)?.[1]
  const got = value === "" ? "an empty value" : scheme === undefined ? `"${value}"` : `scheme "${scheme}:"`
  return Either.left(
    new InvalidConfiguration({
      message: `DATABASE_URL must be sqlite:PATH, memory:, postgres://… or mongodb://… (got ${got})`
    })
  )
}

/**
 * The {@link Storage} Layer for a {@link DatabaseLocation}. For SQLite it creates the
 * file's parent directory first (failing with {@link InvalidConfiguration} when it
 * cannot), then opens the file with `@switchboard/storage-sqlite`; the Layer closes the
 * database when released. For MongoDB it connects with `@switchboard/storage-mongodb`
 * (database from the URL's path, default `switchboard`), waiting at most
 * {@link MONGODB_CONNECT_TIMEOUT_MS} for a server unless the URL sets
 * `serverSelectionTimeoutMS`; a server that cannot be reached fails with an
 * {@link InvalidConfiguration} naming the URL without its credentials. For PostgreSQL it
 * opens a pool with `@switchboard/storage-postgres` and migrates `location.schema`; a
 * server that cannot be reached (or a schema newer than this code) fails the same way.
 *
 * @category layers
 */
export const storageLayerFor = (
  location: DatabaseLocation
): Layer.Layer<Storage, InvalidConfiguration | StorageError> => {
  switch (location._tag) {
    case "Memory":
      return MemoryStorage.layer
    case "MongoDb":
      return mongoStorageLayer(location.url)
    case "Postgres":
      return postgresStorageLayer(location.url, location.schema)
    case "Sqlite":
      return Layer.unwrapEffect(
        Effect.as(createParentDirectory(location.filename), SqliteStorage.layer({ filename: location.filename }))
      )
  }
}

/**
 * The {@link Storage} Layer for a `DATABASE_URL`: {@link parseDatabaseUrl} then
 * {@link storageLayerFor}. An invalid URL fails the Layer with
 * {@link InvalidConfiguration}.
 *
 * @category layers
 * @example
 * import { Core } from "@switchboard/core"
 * import { ManagedRuntime, Layer } from "effect"
 *
 * const runtime = ManagedRuntime.make(
 *   Core.layer.pipe(Layer.provideMerge(storageLayerFromUrl("sqlite:./data/switchboard.db")))
 * )
 */
export const storageLayerFromUrl = (
  url: string,
  baseDirectory?: string
): Layer.Layer<Storage, InvalidConfiguration | StorageError> =>
  Either.match(parseDatabaseUrl(url, baseDirectory), {
    onLeft: (error) => Layer.fail(error),
    onRight: storageLayerFor
  })

/**
 * How long the standalone server and the CLI wait for a MongoDB server before giving up,
 * in milliseconds, unless the URL sets `serverSelectionTimeoutMS` itself.
 *
 * @category config
 */
export const MONGODB_CONNECT_TIMEOUT_MS = 5000

/**
 * The MongoDB storage, its package loaded only when a `mongodb://` URL asks for it: the
 * driver takes about a second to load, which every SQLite start and CLI command would pay.
 */
const mongoStorageLayer = (url: string): Layer.Layer<Storage, InvalidConfiguration | StorageError> => {
  const ownTimeout = /[?&]serverSelectionTimeoutMS=/i.test(url)
  const timeout = ownTimeout ? {} : { serverSelectionTimeoutMS: MONGODB_CONNECT_TIMEOUT_MS }
  return layerOnImport(
    () => import("@switchboard/storage-mongodb"),
    ({ MongoStorage }) => mongoStorageLayerOf(MongoStorage, url, timeout)
  )
}

const mongoStorageLayerOf = (
  MongoStorage: typeof import("@switchboard/storage-mongodb").MongoStorage,
  url: string,
  timeout: { readonly serverSelectionTimeoutMS?: number }
): Layer.Layer<Storage, InvalidConfiguration | StorageError> =>
  MongoStorage.layer({ url, ...timeout }).pipe(
    Layer.catchAll((error) =>
      Layer.fail(
        error.operation === "connect"
          ? new InvalidConfiguration({
              message: `DATABASE_URL ${MongoStorage.redactUrl(url)}: cannot reach the MongoDB server (${MongoStorage.redactUrl(
                error.cause instanceof Error ? error.cause.message : String(error.cause)
              )})`
            })
          : error
      )
    )
  )

/**
 * The PostgreSQL storage, its package loaded only when a `postgres://` URL asks for it.
 */
const postgresStorageLayer = (url: string, schema: string): Layer.Layer<Storage, InvalidConfiguration | StorageError> =>
  layerOnImport(
    () => import("@switchboard/storage-postgres"),
    ({ PostgresStorage }) =>
      PostgresStorage.layer({ connectionString: url, schema }).pipe(
        Layer.catchAll((error) =>
          Layer.fail(
            error.operation === "migrate"
              ? new InvalidConfiguration({
                  message: `DATABASE_URL ${PostgresStorage.redactUrl(url)}: cannot open the PostgreSQL store (${PostgresStorage.redactUrl(
                    error.cause instanceof Error ? error.cause.message : String(error.cause)
                  )})`
                })
              : error
          )
        )
      )
  )

const parseSqlitePath = (
  path: string,
  baseDirectory: string
): Either.Either<DatabaseLocation, InvalidConfiguration> => {
  if (path.startsWith("//") && !path.startsWith("///")) {
    return Either.left(
      new InvalidConfiguration({
        message: "DATABASE_URL sqlite://HOST/… is not supported; use sqlite:/absolute/path.db or sqlite:relative/path.db"
      })
    )
  }
  const filename = path.startsWith("///") ? path.slice(2) : path
  if (filename === "") {
    return Either.left(
      new InvalidConfiguration({
        message: "DATABASE_URL sqlite: needs a file path, such as sqlite:./data/switchboard.db"
      })
    )
  }
  return Either.right({ _tag: "Sqlite", filename: isAbsolute(filename) ? filename : resolve(baseDirectory, filename) })
}

const createParentDirectory = (filename: string): Effect.Effect<void, InvalidConfiguration> =>
  Effect.try({
    try: () => void mkdirSync(dirname(filename), { recursive: true }),
    catch: (cause) =>
      new InvalidConfiguration({
        message: `Cannot create the database directory ${dirname(filename)}: ${
          cause instanceof Error ? cause.message : String(cause)
        }`
      })
  })

const describeConfigError = (error: ConfigError.ConfigError): string => {
  switch (error._op) {
    case "And":
    case "Or":
      return `${describeConfigError(error.left)}; ${describeConfigError(error.right)}`
    case "MissingData":
      return `${error.path.join(".")} is missing`
    default:
      return error.message
  }
}

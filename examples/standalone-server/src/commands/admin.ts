import { existsSync } from "node:fs"
import { Core, MetaTemplateApi, SecretKey, type Storage } from "@switchboard/core"
import { type Command, InvalidArgumentError } from "commander"
import { type Cause, Effect, Exit, Layer, ManagedRuntime, Option, Schema } from "effect"
import { type DatabaseLocation, databaseConfig, InvalidConfiguration, loadConfig, storageLayerFor } from "../config.js"
import { describeCause } from "../failures.js"
import { loadSecretKey } from "../secretKey.js"
import { channelVerifierFor, graphApiConfig } from "../transport.js"

/**
 * Everything an admin command's Effect program may use: the services of `Core.layer` and
 * the {@link Storage} it runs on.
 *
 * @category cli
 */
export type AdminServices = Layer.Layer.Success<typeof Core.layer> | Storage

/**
 * What every admin command reads from the configuration (the environment by default) before
 * it opens the store: the store's location (`DATABASE_URL`; `memory:` is refused, that store
 * lives only inside a server process), the secret key found like the server finds it
 * (`SWITCHBOARD_SECRET_KEY`, else the SQLite key file; see `secretKey.ts`; created only with
 * `createSecretKey`) and the Graph API options (`WHATSAPP_API_BASE_URL`,
 * `WHATSAPP_API_VERSION`). Fails with {@link InvalidConfiguration} naming the problem.
 *
 * @category cli
 */
export const loadAdminSetup = (options: { readonly createSecretKey?: boolean } = {}) =>
  Effect.gen(function* () {
    const location = yield* loadConfig(databaseConfig).pipe(
      Effect.filterOrFail(
        (database) => database._tag !== "Memory",
        () =>
          new InvalidConfiguration({
            message: "memory: storage lives only inside a server process; use sqlite:PATH, postgres://… or mongodb://… for the admin CLI"
          })
      )
    )
    const [secret, graphApi] = yield* Effect.all([loadSecretKey(location, { create: options.createSecretKey ?? false }), loadConfig(graphApiConfig)])
    return { location, secret, graphApi }
  })

/** What {@link loadAdminSetup} reads. */
export type AdminSetup = Effect.Effect.Success<ReturnType<typeof loadAdminSetup>>

/**
 * The services an admin command runs on, for {@link AdminSetup}: `Core.layer` over the
 * store, the secret key (when one is configured), the channel verifier and Meta's template
 * API at the configured Graph API. Building it opens the store (and migrates it).
 *
 * @category cli
 */
export const adminLayer = ({ graphApi, location, secret }: AdminSetup) =>
  Core.layer.pipe(
    // Merged too: `secret-key rotate` reads the configured keys.
    Layer.provideMerge(
      Layer.merge(
        Option.match(secret, { onNone: () => Layer.empty, onSome: ({ keys }) => SecretKey.layer(keys) }),
        channelVerifierFor(graphApi)
      )
    ),
    Layer.provideMerge(storageLayerFor(location)),
    // `templates sync` reads Meta's templates at the same Graph API.
    Layer.merge(MetaTemplateApi.graph(graphApi))
  )

/**
 * Runs one admin command against the store named by `DATABASE_URL` and prints its
 * result as JSON (2-space indented, one trailing newline) on stdout.
 *
 * The store is opened through a `ManagedRuntime` of `Core.layer` and the storage Layer,
 * and closed at the end whatever happens. `memory:` is refused (that store lives only
 * inside a server process). The secret key is found like the server finds it
 * (`SWITCHBOARD_SECRET_KEY`, else the SQLite key file; see `secretKey.ts`); only
 * `options.createSecretKey` (`channel add`) may create the key file. The channel verifier
 * uses `WHATSAPP_API_BASE_URL` / `WHATSAPP_API_VERSION`. Once the store is open, stderr
 * names it ({@link describeOpenedDatabase}), with a warning when the SQLite file had to be
 * created. Any failure (bad configuration, a domain error such as
 * `OrganizationNotFound`, `ApiKeyNotFound` or `InvalidInput`, a storage failure) prints
 * `error: <message>` on stderr, prints nothing on stdout and sets exit code 1.
 *
 * @category cli
 */
export const runAdminCommand = async <A, E>(
  program: Effect.Effect<A, E, AdminServices>,
  options: { readonly createSecretKey?: boolean } = {}
): Promise<void> => {
  const setup = await Effect.runPromiseExit(loadAdminSetup(options))
  if (Exit.isFailure(setup)) return reportFailure(setup.cause)
  const { location, secret } = setup.value
  if (Option.isSome(secret) && secret.value.note !== undefined) process.stderr.write(`${secret.value.note}\n`)
  const existed = location._tag !== "Sqlite" || existsSync(location.filename)
  const runtime = ManagedRuntime.make(adminLayer(setup.value))
  const opened = await runtime.runPromiseExit(Effect.void)
  if (Exit.isSuccess(opened)) process.stderr.write(await describeOpenedDatabase(location, existed))
  const result = await runtime.runPromiseExit(program)
  await runtime.dispose()
  if (Exit.isFailure(result)) return reportFailure(result.cause)
  process.stdout.write(`${JSON.stringify(result.value, null, 2)}\n`)
}

/**
 * The CLI's stderr lines about the store it opened (docs/standalone-server.md "Admin
 * CLI"): `Database: sqlite:/absolute/path.db` (or the PostgreSQL or MongoDB URL without its
 * credentials), and, when the SQLite file did not exist before the command (`existed`
 * false), a warning that a new, empty database was created, since a server on another
 * `DATABASE_URL` will not know what the command writes.
 *
 * @category cli
 */
export const describeOpenedDatabase = async (location: DatabaseLocation, existed: boolean): Promise<string> => {
  switch (location._tag) {
    case "Sqlite":
      return existed
        ? `Database: sqlite:${location.filename}\n`
        : `Database: sqlite:${location.filename}\n` +
            `warning: ${location.filename} did not exist: a new, empty database was created. ` +
            "A server started with another DATABASE_URL will not see what this command writes.\n"
    case "MongoDb": {
      // Already loaded: the store was opened through it.
      const { MongoStorage } = await import("@switchboard/storage-mongodb")
      return `Database: ${MongoStorage.redactUrl(location.url)}\n`
    }
    case "Postgres": {
      const { PostgresStorage } = await import("@switchboard/storage-postgres")
      return `Database: ${PostgresStorage.redactUrl(location.url)} (schema ${location.schema})\n`
    }
    case "Memory":
      return "Database: memory:\n"
  }
}

/**
 * Commander argument parser for a count (such as the coming `seed --contacts N`): a
 * non-negative integer written in digits. Throws commander's `InvalidArgumentError`
 * otherwise, so the command stops before the store is opened.
 *
 * @category cli
 */
export const parseNonNegativeInteger = (value: string): number => {
  if (!isNonNegativeInteger(value)) throw new InvalidArgumentError("It must be a non-negative integer.")
  return Number(value)
}

/**
 * Commander argument parser for a plan limit: a non-negative integer, or `unlimited`.
 * (It keeps `"unlimited"` as it is: commander replaces a parser's `null` by `""`; see
 * {@link planLimit}.)
 *
 * @category cli
 */
export const parsePlanLimit = (value: string): number | "unlimited" => {
  if (value === "unlimited") return value
  if (!isNonNegativeInteger(value)) throw new InvalidArgumentError('It must be a non-negative integer or "unlimited".')
  return Number(value)
}

/**
 * The plan limit of a parsed `--…-limit` option: `null` for `unlimited`, `undefined` when
 * the option was not given.
 *
 * @category cli
 */
export const planLimit = (argument: number | "unlimited" | undefined): number | null | undefined =>
  argument === "unlimited" ? null : argument

/**
 * Commander argument parser for an id (of an organization, an API key…): a UUID.
 *
 * @category cli
 */
export const parseUuid = (value: string): string => {
  if (!Schema.is(Schema.UUID)(value)) throw new InvalidArgumentError("It must be a UUID.")
  return value
}

/**
 * Stops a command for a usage problem found after commander parsed it (for example
 * "nothing to update"): prints the message like commander's own errors and exits
 * non-zero through the program's exit override.
 *
 * @category cli
 */
export const failUsage = (command: Command, message: string): never => command.error(`error: ${message}`)

/**
 * A copy of `fields` without the keys whose value is `undefined`, so a partial input
 * never overwrites a stored value with `undefined`.
 *
 * @category cli
 */
export const definedFields = <T extends Record<string, unknown>>(fields: T): Partial<T> =>
  Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as Partial<T>

const reportFailure = (cause: Cause.Cause<unknown>): void => {
  process.exitCode = 1
  process.stderr.write(`error: ${describeCause(cause)}\n`)
}

/** Digits only, and small enough to be an exact JavaScript number. */
const isNonNegativeInteger = (value: string): boolean => /^\d+$/.test(value) && Number.isSafeInteger(Number(value))

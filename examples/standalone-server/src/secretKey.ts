import { randomUUID } from "node:crypto"
import { linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { encodeSecretKey, generateSecretKey, parseSecretKeys } from "@switchboard/core"
import { Config, Effect, Either, Option } from "effect"
import { type DatabaseLocation, InvalidConfiguration } from "./config.js"

/**
 * The key channel access tokens and webhook signing secrets are encrypted under (`key`),
 * every key that decrypts (`keys`, `key` first: several while the key is rotated,
 * docs/deployment.md "Rotating the secret key"), and what to tell the operator about where
 * they came from (a line for stderr, or none).
 *
 * @category models
 */
export interface LoadedSecretKey {
  readonly key: Uint8Array
  readonly keys: ReadonlyArray<Uint8Array>
  readonly note: string | undefined
}

/**
 * The environment variable holding the secret key (32 bytes as base64 or hex), or several
 * separated by commas (the first encrypts, every one decrypts).
 *
 * @category config
 */
export const SECRET_KEY_VARIABLE = "SWITCHBOARD_SECRET_KEY"

/**
 * The key file beside a SQLite database: `<data dir>/secret.key`.
 *
 * @category config
 */
export const secretKeyFileOf = (sqliteFilename: string): string => join(dirname(sqliteFilename), "secret.key")

/**
 * Finds the secret key (docs/channels.md "The secret key"), the same way for the server
 * and the admin CLI so both encrypt and decrypt alike:
 * 1. `SWITCHBOARD_SECRET_KEY` when set: one key, or several separated by commas (malformed →
 *    {@link InvalidConfiguration} naming it and the entry's position);
 * 2. with `mongodb://` or `postgres://`: none; the server (`create`) fails naming the variable, since
 *    every instance sharing the database must share the key;
 * 3. with SQLite: `<data dir>/secret.key` when it exists (malformed → an error naming the
 *    file); when it does not and `create` is set, a new random key is written there
 *    (base64, mode 0600) and the note says so;
 * 4. with `memory:` and `create`: a random key living only in this process.
 * `None` when there is no key and none may be created (channel commands then fail with a
 * message naming the variable). Never prints or returns the key's text.
 *
 * @category config
 */
export const loadSecretKey = (
  database: DatabaseLocation,
  options: { readonly create: boolean }
): Effect.Effect<Option.Option<LoadedSecretKey>, InvalidConfiguration> =>
  Effect.flatMap(
    Effect.orDie(Config.option(Config.string(SECRET_KEY_VARIABLE))),
    (variable): Effect.Effect<Option.Option<LoadedSecretKey>, InvalidConfiguration> => {
      const text = Option.filter(Option.map(variable, (value) => value.trim()), (value) => value !== "")
      if (Option.isSome(text)) return Effect.map(parsed(text.value, SECRET_KEY_VARIABLE), (keys) => Option.some(loaded(keys, undefined)))
      switch (database._tag) {
        case "MongoDb":
        case "Postgres":
          return options.create
            ? Effect.fail(
                new InvalidConfiguration({
                  message: `${SECRET_KEY_VARIABLE} is required with a ${database._tag === "MongoDb" ? "mongodb://" : "postgres://"} DATABASE_URL (every instance sharing the database must use the same key)`
                })
              )
            : Effect.succeedNone
        case "Memory":
          return Effect.succeed(
            options.create
              ? Option.some(
                  loaded(
                    [generateSecretKey()],
                    `${SECRET_KEY_VARIABLE} is unset: channel access tokens are encrypted under a key that lives only in this process (memory: storage)`
                  )
                )
              : Option.none()
          )
        case "Sqlite":
          return keyFile(secretKeyFileOf(database.filename), options.create)
      }
    }
  )

/** Reads the key file, or creates it when allowed; see {@link loadSecretKey}. */
const keyFile = (path: string, create: boolean): Effect.Effect<Option.Option<LoadedSecretKey>, InvalidConfiguration> =>
  Effect.suspend(() => {
    const existing = readIfExists(path)
    if (existing instanceof InvalidConfiguration) return Effect.fail(existing)
    if (existing !== undefined) return Effect.map(parsed(existing, path), (keys) => Option.some(loaded(keys, undefined)))
    if (!create) return Effect.succeedNone
    const key = generateSecretKey()
    // Written whole to a file of this process's own, then linked to `path`: another process
    // starting at the same time never reads a half-written key, and a key it linked first
    // is never overwritten (`link` fails with EEXIST; read that one instead).
    const whole = `${path}.${process.pid}.${randomUUID()}.tmp`
    try {
      mkdirSync(dirname(path), { recursive: true })
      writeFileSync(whole, `${encodeSecretKey(key)}\n`, { mode: 0o600, flag: "wx" })
      linkSync(whole, path)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EEXIST") return keyFile(path, false)
      return Effect.fail(new InvalidConfiguration({ message: `Cannot create the secret key file ${path}: ${(error as Error).message}` }))
    } finally {
      rmSync(whole, { force: true })
    }
    return Effect.succeed(
      Option.some(
        loaded(
          [key],
          `${SECRET_KEY_VARIABLE} is unset: created ${path} (mode 0600), the key that encrypts channel access tokens; keep it with the database`
        )
      )
    )
  })

const readIfExists = (path: string): string | undefined | InvalidConfiguration => {
  try {
    return readFileSync(path, "utf8")
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined
    return new InvalidConfiguration({ message: `Cannot read the secret key file ${path}: ${(error as Error).message}` })
  }
}

const loaded = (keys: ReadonlyArray<Uint8Array>, note: string | undefined): LoadedSecretKey => ({ key: keys[0]!, keys, note })

const parsed = (text: string, source: string): Effect.Effect<ReadonlyArray<Uint8Array>, InvalidConfiguration> =>
  Either.match(parseSecretKeys(text), {
    onLeft: (problem) => Effect.fail(new InvalidConfiguration({ message: `${source} ${problem}` })),
    onRight: Effect.succeed
  })

import { existsSync } from "node:fs"
import { join, resolve } from "node:path"
import { Core, Organizations } from "@switchboard/core"
import { ConfigProvider, Effect, Either, Layer } from "effect"
import { afterEach, describe, expect, it, vi } from "vitest"
import {
  databaseConfig,
  loadConfig,
  parseDatabaseUrl,
  storageLayerFromUrl,
  type DatabaseLocation
} from "../src/config.js"
import { serverConfig } from "../src/serverConfig.js"
import { removeTemporaryDirectories, temporaryDirectory } from "./helpers.js"

const withEnvironment = (variables: Record<string, string>) =>
  Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(variables))))

const load = <A>(config: Parameters<typeof loadConfig<A>>[0], variables: Record<string, string>) =>
  Effect.runPromise(Effect.either(loadConfig(config).pipe(withEnvironment(variables))))

const parsed = (url: string, baseDirectory = "/base"): DatabaseLocation =>
  Either.getOrThrowWith(parseDatabaseUrl(url, baseDirectory), (error) => error)

const parseError = (url: string): string =>
  Either.match(parseDatabaseUrl(url, "/base"), {
    onLeft: (error) => error.message,
    onRight: (location) => `parsed as ${JSON.stringify(location)}`
  })

afterEach(() => {
  vi.unstubAllEnvs()
  removeTemporaryDirectories()
})

describe("parseDatabaseUrl", () => {
  it("resolves relative sqlite paths against the base directory", () => {
    expect(parsed("sqlite:./data/switchboard.db")).toEqual({ _tag: "Sqlite", filename: "/base/data/switchboard.db" })
    expect(parsed("sqlite:switchboard.db")).toEqual({ _tag: "Sqlite", filename: "/base/switchboard.db" })
    expect(parsed("sqlite:../up.db")).toEqual({ _tag: "Sqlite", filename: "/up.db" })
  })

  it("keeps absolute sqlite paths, also in the sqlite:/// form", () => {
    expect(parsed("sqlite:/var/lib/s.db")).toEqual({ _tag: "Sqlite", filename: "/var/lib/s.db" })
    expect(parsed("sqlite:///var/lib/s.db")).toEqual({ _tag: "Sqlite", filename: "/var/lib/s.db" })
  })

  it("defaults the base directory to INIT_CWD, then to the working directory", () => {
    vi.stubEnv("INIT_CWD", "/from/npm")
    expect(Either.getOrThrow(parseDatabaseUrl("sqlite:s.db"))).toEqual({ _tag: "Sqlite", filename: "/from/npm/s.db" })
    vi.stubEnv("INIT_CWD", undefined)
    expect(Either.getOrThrow(parseDatabaseUrl("sqlite:s.db"))).toEqual({
      _tag: "Sqlite",
      filename: resolve(process.cwd(), "s.db")
    })
  })

  it("accepts memory: and mongodb URLs", () => {
    expect(parsed("memory:")).toEqual({ _tag: "Memory" })
    expect(parsed("mongodb://localhost:27017/switchboard")).toEqual({
      _tag: "MongoDb",
      url: "mongodb://localhost:27017/switchboard"
    })
    expect(parsed("mongodb+srv://cluster.example.com/db")._tag).toBe("MongoDb")
  })

  it("accepts postgres:// and postgresql:// URLs, with the schema of DATABASE_SCHEMA (default switchboard)", () => {
    expect(Either.getOrThrow(parseDatabaseUrl("postgres://db:5432/app", "/base", "tenant_a"))).toEqual({
      _tag: "Postgres",
      url: "postgres://db:5432/app",
      schema: "tenant_a"
    })
    vi.stubEnv("DATABASE_SCHEMA", "")
    expect(Either.getOrThrow(parseDatabaseUrl("postgresql://db/app", "/base"))).toMatchObject({ _tag: "Postgres", schema: "switchboard" })
    vi.stubEnv("DATABASE_SCHEMA", " tenant_b ")
    expect(Either.getOrThrow(parseDatabaseUrl("postgresql://db/app", "/base"))).toMatchObject({ schema: "tenant_b" })
    vi.unstubAllEnvs()
  })

  it("databaseConfig reads DATABASE_SCHEMA from the ConfigProvider it runs under, as DATABASE_URL", async () => {
    vi.stubEnv("DATABASE_SCHEMA", "from_process_env")
    const location = await load(databaseConfig, { DATABASE_URL: "postgres://db/app", DATABASE_SCHEMA: " tenant_c " })
    expect(Either.getOrThrow(location)).toMatchObject({ _tag: "Postgres", schema: "tenant_c" })
    expect(Either.getOrThrow(await load(databaseConfig, { DATABASE_URL: "postgres://db/app" }))).toMatchObject({ schema: "switchboard" })
    vi.unstubAllEnvs()
  })

  it("rejects other values with a message naming the accepted forms, never echoing credentials", () => {
    expect(parseError("")).toMatch(/DATABASE_URL must be sqlite:PATH, memory:, postgres:\/\/… or mongodb:\/\/… \(got an empty value\)/)
    expect(parseError("sqlite:")).toMatch(/needs a file path/)
    expect(parseError("sqlite://host/s.db")).toMatch(/not supported/)
    expect(parseError("memory:extra")).toMatch(/DATABASE_URL must be/)
    expect(parseError("./switchboard.db")).toMatch(/got "\.\/switchboard\.db"/)
    const mysql = parseError("mysql://user:secret@db/switchboard")
    expect(mysql).toMatch(/got scheme "mysql:"/)
    expect(mysql).not.toContain("secret")
  })
})

describe("serverConfig", () => {
  it("defaults to 127.0.0.1:3000, sqlite:./data/switchboard.db under INIT_CWD and log level info", async () => {
    const config = await load(serverConfig, { INIT_CWD: "/project" })
    expect(config).toEqual(
      Either.right({
        host: "127.0.0.1",
        port: 3000,
        database: { _tag: "Sqlite", filename: "/project/data/switchboard.db" },
        logLevel: "info"
      })
    )
  })

  it("reads HOST, PORT (0 allowed), DATABASE_URL and LOG_LEVEL (any case)", async () => {
    const config = await load(serverConfig, { HOST: "0.0.0.0", PORT: "0", DATABASE_URL: "memory:", LOG_LEVEL: " Debug " })
    expect(config).toEqual(Either.right({ host: "0.0.0.0", port: 0, database: { _tag: "Memory" }, logLevel: "debug" }))
  })

  it.each(["abc", "-1", "65536", "3.5", "", "1e3"])("rejects PORT=%j with a clear message", async (port) => {
    const config = await load(serverConfig, { PORT: port })
    expect(Either.isLeft(config) && config.left.message).toBe(`PORT must be an integer from 0 to 65535 (got "${port}")`)
  })

  it("rejects an empty HOST and reports every bad variable at once", async () => {
    const config = await load(serverConfig, { HOST: " ", PORT: "x", DATABASE_URL: "redis://cache" })
    const message = Either.isLeft(config) ? config.left.message : ""
    expect(message).toContain("HOST must not be empty")
    expect(message).toContain("PORT must be an integer")
    expect(message).toContain('DATABASE_URL must be sqlite:PATH, memory:, postgres://… or mongodb://… (got scheme "redis:")')
  })

  it("reads DATABASE_URL alone for the admin CLI", async () => {
    expect(await load(databaseConfig, { DATABASE_URL: "sqlite:db/s.db", INIT_CWD: "/here" })).toEqual(
      Either.right({ _tag: "Sqlite", filename: "/here/db/s.db" })
    )
  })
})

describe("storageLayerFromUrl", () => {
  const listOrganizations = (layer: ReturnType<typeof storageLayerFromUrl>) =>
    Effect.runPromise(
      Effect.either(
        Effect.flatMap(Organizations, (organizations) => organizations.list()).pipe(
          Effect.provide(Core.layer.pipe(Layer.provide(layer)))
        )
      )
    )

  it("creates the SQLite file's parent directory, relative to the base directory", async () => {
    const base = temporaryDirectory()
    expect(await listOrganizations(storageLayerFromUrl("sqlite:nested/dir/s.db", base))).toEqual(Either.right([]))
    expect(existsSync(join(base, "nested/dir/s.db"))).toBe(true)
  })

  it("provides the in-memory store for memory:", async () => {
    expect(await listOrganizations(storageLayerFromUrl("memory:"))).toEqual(Either.right([]))
  })

  it("fails with a clear error naming the URL without credentials for an unreachable MongoDB, and for invalid URLs", async () => {
    // Nothing listens on port 9: connecting gives up after serverSelectionTimeoutMS.
    const mongo = await listOrganizations(storageLayerFromUrl("mongodb://admin:pw@127.0.0.1:9/switchboard?serverSelectionTimeoutMS=200"))
    expect(Either.isLeft(mongo) && mongo.left._tag).toBe("InvalidConfiguration")
    expect(Either.isLeft(mongo) && mongo.left.message).toMatch(
      /^DATABASE_URL mongodb:\/\/127\.0\.0\.1:9\/switchboard\?serverSelectionTimeoutMS=200: cannot reach the MongoDB server \(/
    )
    expect(Either.isLeft(mongo) && mongo.left.message).not.toContain("admin:pw")
    const invalid = await listOrganizations(storageLayerFromUrl("ftp://files"))
    expect(Either.isLeft(invalid) && invalid.left._tag).toBe("InvalidConfiguration")
  })
})

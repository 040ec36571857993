import { fileURLToPath } from "node:url"
import { defineProject, type UserWorkspaceConfig } from "vitest/config"

const root = fileURLToPath(new URL(".", import.meta.url))

/**
 * Every workspace package resolved to its TypeScript source, so tests need no build; the
 * subpath entries first (an alias also matches the paths under its name).
 */
const alias = Object.fromEntries([
  ["@switchboard/http-adapter/tracing", `${root}packages/http-adapter/src/tracing/index.ts`],
  ["@switchboard/http-adapter/metrics", `${root}packages/http-adapter/src/metrics/index.ts`],
  ...["core", "storage-contract", "storage-sql", "storage-sqlite", "storage-mongodb", "storage-postgres", "rate-limit-redis", "blob-s3", "http-adapter", "whatsapp-simulator", "client"].map((name) => [
    `@switchboard/${name}`,
    `${root}packages/${name}/src/index.ts`
  ])
])

/**
 * The vitest project of one package or example: its `test/**\/*.test.ts`, the shared
 * aliases and the setup file that registers Effect's equality testers.
 */
export const project = (name: string, overrides: UserWorkspaceConfig["test"] = {}) =>
  defineProject({
    resolve: { alias },
    test: {
      name,
      include: ["test/**/*.test.ts"],
      setupFiles: [`${root}vitest.setup.ts`],
      ...overrides
    }
  })

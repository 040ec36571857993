import { fileURLToPath } from "node:url"
import { configDefaults, defineProject, type UserWorkspaceConfig } from "vitest/config"

const root = fileURLToPath(new URL(".", import.meta.url))

/**
 * Every workspace package resolved to its TypeScript source, so tests need no build; the
 * subpath entries first (an alias also matches the paths under its name).
 */
const alias = Object.fromEntries([
  ["@switchboard/http-adapter/tracing", `${root}packages/http-adapter/src/tracing/index.ts`],
  ["@switchboard/http-adapter/metrics", `${root}packages/http-adapter/src/metrics/index.ts`],
  ["@switchboard/blob-s3/url", `${root}packages/blob-s3/src/url.ts`],
  ...["core", "storage-contract", "storage-sql", "storage-sqlite", "storage-mongodb", "storage-postgres", "rate-limit-redis", "blob-s3", "http-adapter", "whatsapp-simulator", "client"].map((name) => [
    `@switchboard/${name}`,
    `${root}packages/${name}/src/index.ts`
  ])
])

/**
 * Test files that must run in a process of their own (each `vi.mock`s a module other files
 * load), by project: the project leaves them out and `project-isolated` runs them
 * (vitest.workspace.ts).
 */
export const isolatedFiles: Record<string, ReadonlyArray<string>> = {
  core: ["test/whatsapp-transport-fetch.test.ts", "test/whatsapp-transport-ready.test.ts"]
}

/**
 * The vitest project of one package or example: its `test/**\/*.test.ts`, the shared
 * aliases and the setup file that registers Effect's equality testers.
 *
 * The files of a project share their worker processes (`isolate: false`): a fresh process
 * per file loaded effect, the packages' sources and the drivers again each time, about
 * 0.8 s of start-up per file (docs/benchmarks.md "The test suite's time"). Files that
 * cannot share a process (`vi.mock` of a module others load) run in a project of their
 * own with `isolate: true` (vitest.workspace.ts). Environment variables stubbed with
 * `vi.stubEnv` are restored after each test; a shared helper closes what it opened for a
 * file through `afterFile` (vitest.after-file.ts), not with a top-level `afterAll`.
 */
export const project = (name: string, overrides: UserWorkspaceConfig["test"] = {}) =>
  defineProject({
    resolve: { alias },
    test: {
      name,
      include: ["test/**/*.test.ts"],
      exclude: [...configDefaults.exclude, ...(isolatedFiles[name] ?? [])],
      setupFiles: [`${root}vitest.setup.ts`],
      isolate: false,
      unstubEnvs: true,
      unstubGlobals: true,
      ...overrides
    }
  })

import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { defineConfig } from "tsup"

/**
 * The standalone server is one application, so its build bundles what it runs of `effect`
 * and of the workspace packages (docs/standalone-server.md "Builds"): only the modules it
 * uses are loaded, which keeps its memory down (about 10 MiB less live heap at start-up
 * than importing `effect`'s whole index, and the heap's peak grows with it:
 * docs/benchmarks.md). Every other package stays an import resolved in `node_modules` at
 * run time: native addons (`better-sqlite3`), drivers loaded only when configured
 * (`mongodb`, `ioredis`) and CommonJS packages.
 */
const bundled = (name: string): boolean =>
  name === "effect" || name.startsWith("@switchboard/") || name === "@effect/opentelemetry"

/** The dependencies of this package and of every workspace package, except the bundled ones. */
const external = (): Array<string> => {
  const manifests = [
    "package.json",
    ...readdirSync("../../packages").map((directory) => join("../../packages", directory, "package.json"))
  ]
  const names = new Set<string>()
  for (const path of manifests) {
    const manifest = JSON.parse(readFileSync(path, "utf8")) as Record<string, Record<string, string> | undefined>
    for (const field of ["dependencies", "peerDependencies", "optionalDependencies"]) {
      for (const name of Object.keys(manifest[field] ?? {})) if (!bundled(name)) names.add(name)
    }
  }
  return [...names]
}

export default defineConfig({
  entry: ["src/main.ts", "src/cli.ts"],
  format: ["esm"],
  dts: false,
  clean: true,
  sourcemap: true,
  target: "node20",
  // `@effect/opentelemetry` too: it imports `effect`, and one copy of `effect` must serve all.
  noExternal: [/^effect(\/|$)/, /^@switchboard\//, /^@effect\/opentelemetry(\/|$)/],
  external: external(),
  // The workspace packages from their TypeScript sources (the `@switchboard/source` export
  // condition), not their built files: esbuild then splits them module by module, so a
  // module only the server reaches (the HTTP adapter, the S3 store) stays out of the CLI's
  // chunks and a driver imported on demand stays in a chunk of its own.
  esbuildOptions(options) {
    options.conditions = ["@switchboard/source"]
  }
})

import { defineConfig, type Options } from "tsup"

/**
 * The build of every published package (docs/extending.md "Packaging and releases"): `src/index.ts` to ESM and CJS with
 * `.d.ts`/`.d.cts`, source maps, for Node 20. `overrides` adjust one package (for example
 * ESM only for the storage contract, which vitest cannot load through `require`).
 */
export const packageConfig = (overrides: Options = {}) =>
  defineConfig({
    entry: ["src/index.ts"],
    format: ["esm", "cjs"],
    dts: true,
    clean: true,
    sourcemap: true,
    target: "node20",
    ...overrides
  })

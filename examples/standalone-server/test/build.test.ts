import { readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { beforeAll, describe, expect, it } from "vitest"
import { assertBuilt, CLI_PATH, SERVER_PATH } from "./helpers.js"

// What the built programs load at start (docs/standalone-server.md "Builds"): each process
// of the CLI and each server start pays for every module its entry imports statically,
// ~0.2 s of CPU for the HTTP adapter's part in the CLI and ~0.35 s for the AWS SDK, so what
// only some configurations use is imported on demand (`import()`), in chunks of its own.

/** Static `import … from "x"` and `import "x"` at a line's start of esbuild's output (never `import("x")`). */
const STATIC_IMPORT = /^import\s*(?:[^;"]*?\sfrom\s*)?"([^"]+)";/gm

/**
 * Every module the built file `entry` loads before it runs: its relative static imports
 * followed through the build's chunks; the answer is the bare specifiers (packages and
 * Node's modules) they import.
 */
const staticPackages = (entry: string): Set<string> => {
  const packages = new Set<string>()
  const seen = new Set<string>()
  const pending = [entry]
  while (pending.length > 0) {
    const file = pending.pop()!
    if (seen.has(file)) continue
    seen.add(file)
    for (const [, specifier] of readFileSync(file, "utf8").matchAll(STATIC_IMPORT)) {
      if (specifier!.startsWith(".")) pending.push(join(dirname(file), specifier!))
      else packages.add(specifier!)
    }
  }
  return packages
}

beforeAll(assertBuilt)

describe("the built programs' static imports", () => {
  it("reads static imports and follows chunks, never a dynamic import()", () => {
    // The rule below says something only if the reader finds what the server does load.
    const server = staticPackages(SERVER_PATH)
    expect(server).toContain("better-sqlite3")
    expect(server).toContain("find-my-way")
    const sample = ['const x = await import("x");', 'import "y";', 'import { a } from "z";', "import {", "  b", '} from "w";'].join("\n")
    expect([...sample.matchAll(STATIC_IMPORT)].map((match) => match[1])).toEqual(["y", "z", "w"])
  })

  it("the CLI loads neither the HTTP adapter's router, validator and body parser nor any driver it is not configured for", () => {
    const cli = staticPackages(CLI_PATH)
    for (const name of ["find-my-way", "fastest-validator", "busboy", "@aws-sdk/client-s3", "@aws-sdk/lib-storage", "pg", "mongodb", "ioredis"]) {
      expect(cli, name).not.toContain(name)
    }
  })

  it("the server loads the S3 store's AWS SDK, PostgreSQL, MongoDB and Redis only when configured", () => {
    const server = staticPackages(SERVER_PATH)
    for (const name of ["@aws-sdk/client-s3", "@aws-sdk/lib-storage", "pg", "mongodb", "ioredis"]) {
      expect(server, name).not.toContain(name)
    }
  })
})

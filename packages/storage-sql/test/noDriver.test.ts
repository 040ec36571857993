import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

/**
 * `@switchboard/storage-sql` is what both SQL engines share, for any adapter author: it
 * depends on no database driver (docs/architecture.md "The packages"), and its source
 * imports only `@switchboard/core`, `effect` and its own modules.
 */
const root = fileURLToPath(new URL("..", import.meta.url))
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as Record<string, Record<string, string> | undefined>

const sourceFiles = (directory: string): Array<string> =>
  readdirSync(directory, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(directory, entry.name)) : entry.name.endsWith(".ts") ? [join(directory, entry.name)] : []
  )

describe("storage-sql depends on no driver", () => {
  it("declares only @switchboard/core and effect", () => {
    const declared = ["dependencies", "peerDependencies", "optionalDependencies"].flatMap((field) => Object.keys(manifest[field] ?? {}))
    expect(declared.sort()).toEqual(["@switchboard/core", "effect"])
  })

  it("imports only @switchboard/core, effect and its own modules", () => {
    const imported = sourceFiles(join(root, "src")).flatMap((file) =>
      [...readFileSync(file, "utf8").matchAll(/\bfrom\s*["']([^"']+)["'];?\s*$|\bimport\s*\(\s*["']([^"']+)["']\s*\)|^\s*import\s*["']([^"']+)["']/gm)]
        .map((match) => match[1] ?? match[2] ?? match[3] ?? "")
        .filter((specifier) => !specifier.startsWith("."))
        .map((specifier) => `${file.slice(root.length)} imports "${specifier}"`)
    )
    expect(imported.filter((line) => !/ imports "(@switchboard\/core|effect(\/[^"]*)?)"$/.test(line))).toEqual([])
  })
})

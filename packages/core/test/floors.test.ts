import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve, sep } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

/**
 * Core's floors, bottom to top: a top-level entry of `src/` imports only entries on a lower
 * floor. The domain folders share one floor; among them only a cycle is refused.
 */
const floors: Record<string, number> = {
  model: 1,
  internal: 2,
  random: 2,
  storage: 3,
  memory: 4,
  files: 4,
  dispatch: 4.5,
  metrics: 4.5,
  common: 5,
  organizations: 6,
  contacts: 6,
  groups: 6,
  labels: 6,
  templates: 6,
  "basic-replies": 6,
  channels: 6,
  chats: 6,
  messaging: 6,
  broadcasts: 6,
  webhooks: 6,
  whatsapp: 6,
  imports: 6,
  media: 6,
  idempotency: 6,
  "rate-limits": 6,
  errors: 7,
  Core: 8,
  index: 9
}
const domainFloor = 6

const src = fileURLToPath(new URL("../src", import.meta.url))

/** One relative import: the importing file (relative to `src/`), its specifier and the file it names. */
interface Import {
  readonly file: string
  readonly specifier: string
  readonly target: string
}

const sourceFiles = (directory: string): Array<string> =>
  readdirSync(directory, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(directory, entry.name))
      : entry.name.endsWith(".ts") ? [join(directory, entry.name)] : []
  )

/** `import … from`, `import type … from`, `export … from`, `import "…"` and `import("…")`. */
const importPattern = /\b(?:import|export)\s[^;]*?\bfrom\s*["'](\.[^"']*)["']|\bimport\s*\(\s*["'](\.[^"']*)["']\s*\)|\bimport\s+["'](\.[^"']*)["']/g

const imports: ReadonlyArray<Import> = sourceFiles(src).flatMap((path) =>
  [...readFileSync(path, "utf8").matchAll(importPattern)].map((match) => {
    const specifier = match[1] ?? match[2] ?? match[3] ?? ""
    return {
      file: relative(src, path),
      specifier,
      target: relative(src, resolve(dirname(path), specifier))
    }
  })
)

/** The top-level entry a path of `src/` belongs to: its first folder, or the file's own name. */
const entry = (path: string): string => path.split(sep)[0]!.replace(/\.[jt]s$/, "")

const describeImport = (imported: Import) => `${imported.file} imports "${imported.specifier}"`

const crossing = imports.filter((imported) => entry(imported.file) !== entry(imported.target))

describe("core's floors", () => {
  it("every top-level entry of src/ has a floor", () => {
    const entries = readdirSync(src).map((name) => name.replace(/\.ts$/, ""))
    expect(entries.filter((name) => floors[name] === undefined)).toEqual([])
  })

  it("an import never names an entry without a floor", () => {
    const unknown = crossing.filter((imported) => floors[entry(imported.target)] === undefined)
    expect(unknown.map(describeImport)).toEqual([])
  })

  it("an import never runs up (or across, outside the domain floor)", () => {
    const upward = crossing.filter((imported) => {
      const from = floors[entry(imported.file)]
      const to = floors[entry(imported.target)]
      return from !== undefined && to !== undefined && (to > from || (to === from && from !== domainFloor))
    })
    expect(upward.map((imported) => `${describeImport(imported)} (${entry(imported.file)} → ${entry(imported.target)})`))
      .toEqual([])
  })

  it("no cycle between top-level entries", () => {
    expect(folderCycles(crossing)).toEqual([])
  })
})

/**
 * One cycle through each strongly connected group of entries, each hop named by one import
 * that makes it: `chats → messaging: chats/Chats.ts imports "../messaging/x.js"`.
 */
const folderCycles = (edges: ReadonlyArray<Import>): Array<Array<string>> => {
  const hops = new Map<string, Map<string, Import>>()
  for (const imported of edges) {
    const from = entry(imported.file)
    const to = entry(imported.target)
    const next = hops.get(from) ?? new Map<string, Import>()
    if (!next.has(to)) next.set(to, imported)
    hops.set(from, next)
  }
  const cycles: Array<Array<string>> = []
  const inCycle = new Set<string>()
  for (const start of [...hops.keys()].sort()) {
    if (inCycle.has(start)) continue
    // Breadth-first from `start` until a hop returns to it: the shortest cycle through it.
    const previous = new Map<string, string>()
    const queue = [start]
    let closing: string | undefined
    while (queue.length > 0 && closing === undefined) {
      const node = queue.shift()!
      for (const to of hops.get(node)?.keys() ?? []) {
        if (to === start) {
          closing = node
          break
        }
        if (!previous.has(to)) {
          previous.set(to, node)
          queue.push(to)
        }
      }
    }
    if (closing === undefined) continue
    const path = [closing]
    while (path[0] !== start) path.unshift(previous.get(path[0]!)!)
    path.push(start)
    path.forEach((node) => inCycle.add(node))
    cycles.push(path.slice(1).map((to, index) => {
      const from = path[index]!
      return `${from} → ${to}: ${describeImport(hops.get(from)!.get(to)!)}`
    }))
  }
  return cycles
}

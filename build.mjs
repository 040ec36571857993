/**
 * Builds the workspace packages with tsup, rebuilding only what is stale and never deleting
 * a working build first (docs/standalone-server.md, "Builds").
 *
 *   node build.mjs                   every workspace package whose build is stale
 *   node build.mjs <dir>...          those packages and their workspace dependencies, if stale
 *   node build.mjs --force <dir>...  those packages, stale or not (each package's `build` script)
 *
 * Stale packages are built in dependency order (`dependencies`, `peerDependencies` and
 * `optionalDependencies` between workspace packages). A package is stale when it has no
 * `dist/` or no `dist.stamp`, when a file of its `src/`, its `package.json`,
 * `tsup.config.ts` or `tsconfig.json`, or the root `tsup.shared.ts` or `tsconfig.json` was
 * modified after its last build started, or when a workspace package it depends on was built
 * after it. The check only reads modification times: an up-to-date tree costs a few
 * milliseconds and spawns nothing.
 *
 * A build goes to `dist.next-<pid>` (tsup `--out-dir`); only when tsup succeeded is it
 * swapped in: `dist` -> `dist.old-<pid>`, `dist.next-<pid>` -> `dist`, then the stamp is
 * written and the old build removed. A kill at any moment therefore leaves either the old
 * build or the new one; the next run puts `dist.old-<pid>` back when a kill fell between the
 * two renames, and removes the temporary directories of processes that are gone (never
 * those of a live one). Progress goes to stderr, so the server's stdout stays its own.
 * Exit code 1 when a build failed (its output is printed), 2 on bad arguments.
 */
import { spawn } from "node:child_process"
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"

const root = dirname(fileURLToPath(import.meta.url))
/** Inputs shared by every package's build. */
const SHARED_INPUTS = ["tsup.shared.ts", "tsconfig.json"].map((file) => join(root, file))
/** Inputs of one package besides `src/`. */
const PACKAGE_INPUTS = ["package.json", "tsup.config.ts", "tsconfig.json"]
/** `dist.next-<pid>`, `dist.old-<pid>`, `dist.stamp-<pid>`: what a build leaves while it runs. */
const TEMPORARY = /^dist\.(next|old|stamp)-(\d+)$/

const log = (message) => process.stderr.write(`build: ${message}\n`)

/** The workspace packages of the root package.json: `{ name, dir, path, deps }`. */
const workspacePackages = () => {
  const rootManifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"))
  const packages = rootManifest.workspaces.map((dir) => {
    const manifest = JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8"))
    const deps = Object.keys({ ...manifest.dependencies, ...manifest.peerDependencies, ...manifest.optionalDependencies })
    return { name: manifest.name, dir, path: join(root, dir), deps }
  })
  const names = new Set(packages.map((pkg) => pkg.name))
  for (const pkg of packages) pkg.deps = pkg.deps.filter((dep) => names.has(dep))
  return packages
}

/** `selected` and their workspace dependencies, dependencies first. Throws on a cycle. */
const inDependencyOrder = (packages, selected) => {
  const byName = new Map(packages.map((pkg) => [pkg.name, pkg]))
  const order = []
  const state = new Map()
  const visit = (pkg) => {
    if (state.get(pkg.name) === "done") return
    if (state.get(pkg.name) === "visiting") throw new Error(`dependency cycle through ${pkg.name}`)
    state.set(pkg.name, "visiting")
    for (const dep of pkg.deps) visit(byName.get(dep))
    state.set(pkg.name, "done")
    order.push(pkg)
  }
  for (const pkg of selected) visit(pkg)
  return order
}

/**
 * Whether process `pid` still runs (a process we may not signal counts as running). A zombie
 * does not: a killed build whose parent died too stays one where no init process reaps it
 * (containers), so on Linux its state in `/proc/<pid>/stat` is read as well.
 */
const isAlive = (pid) => {
  try {
    process.kill(pid, 0)
  } catch (error) {
    return error.code === "EPERM"
  }
  try {
    return !/^\d+ \(.*\) Z/s.test(readFileSync(`/proc/${pid}/stat`, "utf8"))
  } catch {
    return true
  }
}

/**
 * Repairs what a killed build left in one package: puts `dist.old-<pid>` back when there is
 * no `dist` (a kill between the two renames), then removes the temporary entries of
 * processes that no longer run.
 */
const recover = (pkg) => {
  const leftovers = readdirSync(pkg.path)
    .map((entry) => TEMPORARY.exec(entry))
    .filter((match) => match !== null && !isAlive(Number(match[2])))
  const old = leftovers.find((match) => match[1] === "old")
  if (old !== undefined && !existsSync(join(pkg.path, "dist"))) {
    renameSync(join(pkg.path, old[0]), join(pkg.path, "dist"))
    log(`${pkg.dir}: restored the build an interrupted run had moved aside`)
    leftovers.splice(leftovers.indexOf(old), 1)
  }
  for (const match of leftovers) rmSync(join(pkg.path, match[0]), { recursive: true, force: true })
}

/** When the build in `dist/` started (ms since the epoch), or undefined without a build. */
const builtAt = (pkg) => {
  if (!existsSync(join(pkg.path, "dist"))) return undefined
  try {
    const stamp = JSON.parse(readFileSync(join(pkg.path, "dist.stamp"), "utf8"))
    return typeof stamp.startedAt === "number" ? stamp.startedAt : undefined
  } catch {
    return undefined
  }
}

/** The first file of `directory` (recursively) modified after `time`, or undefined. */
const newerFileIn = (directory, time) => {
  if (!existsSync(directory)) return undefined
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name)
    if (entry.isDirectory()) {
      const newer = newerFileIn(path, time)
      if (newer !== undefined) return newer
    } else if (statSync(path).mtimeMs > time) return path
  }
  return undefined
}

/** Why `pkg` needs a build (a short phrase), or undefined when its build is up to date. */
const staleness = (pkg, stamps, byName) => {
  const startedAt = stamps.get(pkg.name)
  if (startedAt === undefined) return "no complete build"
  const inputs = [...SHARED_INPUTS, ...PACKAGE_INPUTS.map((file) => join(pkg.path, file))]
  const changed =
    inputs.find((path) => existsSync(path) && statSync(path).mtimeMs > startedAt) ??
    newerFileIn(join(pkg.path, "src"), startedAt)
  if (changed !== undefined) return `${relative(root, changed)} changed`
  const rebuilt = pkg.deps.find((dep) => (stamps.get(dep) ?? Infinity) > startedAt)
  return rebuilt === undefined ? undefined : `${byName.get(rebuilt).dir} was rebuilt`
}

/** Runs tsup in `pkg` into `outDir`; resolves with its output, rejects with it on failure. */
const tsup = (pkg, outDir, quiet) =>
  new Promise((resolvePromise, reject) => {
    const require = createRequire(import.meta.url)
    const manifestPath = require.resolve("tsup/package.json")
    const cli = join(dirname(manifestPath), JSON.parse(readFileSync(manifestPath, "utf8")).bin.tsup)
    const child = spawn(process.execPath, [cli, "--out-dir", outDir], {
      cwd: pkg.path,
      stdio: ["ignore", quiet ? "pipe" : "inherit", quiet ? "pipe" : "inherit"]
    })
    let output = ""
    child.stdout?.setEncoding("utf8").on("data", (chunk) => (output += chunk))
    child.stderr?.setEncoding("utf8").on("data", (chunk) => (output += chunk))
    child.once("error", reject)
    child.once("close", (code, signal) =>
      code === 0 ? resolvePromise(output) : reject(new Error(`tsup failed (${code ?? signal})\n${output}`))
    )
  })

/** Builds `pkg` beside its current build, then swaps it in; returns the new stamp time. */
const build = async (pkg, quiet) => {
  const startedAt = Date.now()
  const next = `dist.next-${process.pid}`
  const old = join(pkg.path, `dist.old-${process.pid}`)
  const dist = join(pkg.path, "dist")
  // Made before tsup starts, so the build in progress is visible from the first moment.
  mkdirSync(join(pkg.path, next))
  try {
    await tsup(pkg, next, quiet)
  } catch (error) {
    rmSync(join(pkg.path, next), { recursive: true, force: true })
    throw error
  }
  const hadBuild = existsSync(dist)
  if (hadBuild) renameSync(dist, old)
  renameSync(join(pkg.path, next), dist)
  // The stamp comes after the swap: a kill before it leaves the package stale, never a
  // stamp vouching for a build that is not in place.
  const stampTemporary = join(pkg.path, `dist.stamp-${process.pid}`)
  writeFileSync(stampTemporary, `${JSON.stringify({ startedAt })}\n`)
  renameSync(stampTemporary, join(pkg.path, "dist.stamp"))
  if (hadBuild) rmSync(old, { recursive: true, force: true })
  return startedAt
}

/** Parses the arguments: `{ force, packages }` (undefined packages: every workspace package). */
const parseArguments = (args, packages) => {
  const force = args[0] === "--force"
  const dirs = force ? args.slice(1) : args
  if (dirs.length === 0) {
    if (force) throw new Error("--force needs the directories of the packages to build")
    return { force, selected: packages }
  }
  const selected = dirs.map((dir) => {
    const pkg = packages.find((candidate) => candidate.path === resolve(dir))
    if (pkg === undefined) throw new Error(`${dir} is not a workspace package directory`)
    return pkg
  })
  return { force, selected }
}

const main = async () => {
  const packages = workspacePackages()
  let options
  try {
    options = parseArguments(process.argv.slice(2), packages)
  } catch (error) {
    log(error.message)
    return 2
  }
  const byName = new Map(packages.map((pkg) => [pkg.name, pkg]))
  const order = options.force ? options.selected : inDependencyOrder(packages, options.selected)
  for (const pkg of order) recover(pkg)
  const stamps = new Map(packages.map((pkg) => [pkg.name, builtAt(pkg)]))
  for (const pkg of order) {
    const reason = options.force ? "requested" : staleness(pkg, stamps, byName)
    if (reason === undefined) continue
    log(`${pkg.dir} (${reason})`)
    const began = performance.now()
    try {
      stamps.set(pkg.name, await build(pkg, !options.force))
    } catch (error) {
      log(`${pkg.dir} failed; its previous build, if any, is untouched\n${error.message}`)
      return 1
    }
    log(`${pkg.dir} built in ${((performance.now() - began) / 1000).toFixed(1)} s`)
  }
  return 0
}

process.exitCode = await main()

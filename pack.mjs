/**
 * Writes the tarball of every publishable package into one folder (`npm run pack`), so a
 * project can install Switchboard from a clone (docs/getting-started.md, "Install"):
 *
 *   node pack.mjs              every non-private package of packages/* into ./packs
 *   node pack.mjs <folder>     the same into <folder> (created when missing)
 *
 * The packages are found by listing packages/* (a new package needs no change here), and
 * each must be built first (`npm run pack` runs `node build.mjs`, which rebuilds what is
 * stale). The folder's old tarballs are removed first, so `./packs/*.tgz` is exactly one
 * version of each package. Prints one line per tarball on stdout (its path), progress and
 * npm's own output on stderr. Exit code 1 when a package has no build or `npm pack` failed.
 */
import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"

const root = dirname(fileURLToPath(import.meta.url))

/** Every non-private package of packages/*: `{ name, path }`. */
const publishablePackages = () =>
  readdirSync(join(root, "packages"))
    .map((directory) => join(root, "packages", directory))
    .filter((path) => existsSync(join(path, "package.json")))
    .map((path) => ({ path, manifest: JSON.parse(readFileSync(join(path, "package.json"), "utf8")) }))
    .filter(({ manifest }) => manifest.private !== true)
    .map(({ path, manifest }) => ({ name: manifest.name, path }))

const main = () => {
  const destination = resolve(process.argv[2] ?? join(root, "packs"))
  const packages = publishablePackages()
  const unbuilt = packages.filter(({ path }) => !existsSync(join(path, "dist")))
  if (unbuilt.length > 0) {
    process.stderr.write(`pack: build first (node build.mjs): no dist/ in ${unbuilt.map(({ name }) => name).join(", ")}\n`)
    return 1
  }
  mkdirSync(destination, { recursive: true })
  for (const entry of readdirSync(destination)) if (entry.endsWith(".tgz")) rmSync(join(destination, entry))
  for (const { name, path } of packages) {
    try {
      const output = execFileSync("npm", ["pack", "--json", "--pack-destination", destination], {
        cwd: path,
        encoding: "utf8",
        stdio: ["ignore", "pipe", "inherit"]
      })
      const [packed] = JSON.parse(output)
      process.stdout.write(`${relative(process.cwd(), join(destination, packed.filename)) || packed.filename}\n`)
    } catch (error) {
      process.stderr.write(`pack: ${name} failed: ${error.message}\n`)
      return 1
    }
  }
  process.stderr.write(`pack: ${packages.length} tarballs in ${destination}\n`)
  return 0
}

process.exitCode = main()

/**
 * Packages ready to publish (docs/extending.md "Packaging and releases"), for every package in `packages/*`:
 * - complete package.json metadata, `files: ["dist"]`, ESM + CJS exports with their own
 *   types (`storage-contract` ESM-only: vitest cannot be `require`d); `effect` a peer
 *   dependency (`^3.22`) of every package whose declarations import it, never a
 *   dependency, so a project shares one Effect 3 with them;
 * - `publint --strict` and `@arethetypeswrong/cli`'s check pass on the packed tarball (both
 *   called in this process through their functions, `publint` and `@arethetypeswrong/core`'s
 *   `checkPackage`; the esm-only profile's resolutions ignored for the ESM-only package);
 * - pack and consume, as docs/getting-started.md "Install" says: `npm run pack` (run once)
 *   writes every tarball into `switchboard/packs/` of a scratch folder, and an empty
 *   project beside it (`my-app/`) installs the tarballs the page names with the install
 *   line taken from that page (core, http-adapter, storage-sqlite and the storage-sql it
 *   depends on, with `effect@^3.22`): exactly those packages, and the page's server program
 *   (`server.mjs`) then answers GET /verify with the key it prints and stops on SIGTERM
 *   (programs.ts). While that server runs, a second empty project (`my-client/`) that
 *   installs only the client's tarball (it has no dependencies) runs docs/client.md's
 *   whole program (its `ts run client` block, transpiled to ESM) against it, as a reader
 *   would, and prints what the page says. Then every other tarball is installed too (`packs/*.tgz`), and
 *   `verify.mjs` / `verify.cjs` load each runtime package by `import` and by `require` and
 *   answer GET /verify through the Node and the Fetch handler, on memory storage and on a
 *   SQLite file;
 * - `npm run pack` writes one tarball per publishable package, and nothing else;
 * - npm refuses Effect 4 beside the packages with a resolution error (ERESOLVE);
 * - every locked package with an install script is reviewed in the root `allowScripts`
 *   (else `npm ci` warns about it; `@scarf/scarf` is denied);
 * - changesets: `changeset version`, run on a copy of the manifests and the config with a
 *   changeset of its own, bumps every package and writes its CHANGELOG.md.
 *
 * The packages must be built first (`npm test` builds before vitest). Unlike the documented
 * line, the test's install adds `--ignore-scripts` (and `--prefer-offline`, quiet output),
 * and better-sqlite3 is linked from the workspace's node_modules (a `file:` dependency of
 * `my-app` written before the install), so its native module is not built again; the rest
 * comes from npm's cache or the registry. Lives in the http-adapter project because it is
 * the package the consumer exercises end to end.
 */
import { execFile } from "node:child_process"
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { checkPackage, createPackageFromTarballData } from "@arethetypeswrong/core"
import { transform } from "esbuild"
import { publint } from "publint"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { CLIENT_EXAMPLE_OUTPUT, type ClientRun, clientProbe, type ProgramRun, runnableBlocks, runProgram } from "./programs.js"

const run = promisify(execFile)
const root = fileURLToPath(new URL("../../../", import.meta.url))

/** Runs a command; a failure carries the command's stdout and stderr in its message. */
const runTool = (command: string, args: ReadonlyArray<string>, cwd: string) =>
  run(command, args, { cwd, env: childEnvironment, maxBuffer: 16 * 1024 * 1024 }).catch(
    (error: { stdout?: string; stderr?: string; message?: string }) => {
      throw new Error(`${command} ${args.join(" ")} failed: ${error.message}\n${error.stdout ?? ""}\n${error.stderr ?? ""}`)
    }
  )

interface Manifest {
  readonly name: string
  readonly version: string
  readonly private?: boolean
  readonly description?: string
  readonly license?: string
  readonly keywords?: ReadonlyArray<string>
  readonly repository?: { readonly type?: string; readonly url?: string; readonly directory?: string }
  readonly engines?: { readonly node?: string }
  readonly sideEffects?: boolean
  readonly files?: ReadonlyArray<string>
  readonly type?: string
  readonly main?: string
  readonly types?: string
  readonly exports?: Record<string, unknown>
  readonly dependencies?: Record<string, string>
  readonly devDependencies?: Record<string, string>
  readonly peerDependencies?: Record<string, string>
}

/** What verify.mjs and verify.cjs print: export names and resolved files per package, and the GET /verify answers. */
interface ConsumerResult {
  readonly exports: Record<string, ReadonlyArray<string>>
  readonly resolved: Record<string, string>
  readonly memory: VerifyResult
  readonly sqlite: VerifyResult
}
interface VerifyResult {
  readonly organizationId: string
  readonly node: unknown
  readonly fetch: unknown
  /** Status, content type and body length of `/openapi.json`, `/docs` and a `/docs` asset. */
  readonly discovery: Record<string, { readonly status: number; readonly type: string | null; readonly length: number }>
}

/** Every publishable package of `packages/*`, with its directory and manifest. */
const packages = readdirSync(join(root, "packages"))
  .filter((directory) => existsSync(join(root, "packages", directory, "package.json")))
  .map((directory) => ({
    directory,
    path: join(root, "packages", directory),
    manifest: JSON.parse(readFileSync(join(root, "packages", directory, "package.json"), "utf8")) as Manifest
  }))
  .filter(({ manifest }) => manifest.private !== true)

/**
 * The tarball install command of docs/getting-started.md "Install": `npm install` of
 * tarballs of `../switchboard/packs/` (a clone beside the project) with `effect@^3.22`
 * pinned, its continued lines (`\` at a line's end) joined into one.
 */
const documentedInstallLine = (markdown: string) => {
  const command = /^npm install \.\.\/switchboard\/packs\/(?:.*\\\n)*.*$/m.exec(markdown)?.[0]
  if (command === undefined) throw new Error("docs/getting-started.md shows no `npm install ../switchboard/packs/… ` command")
  return command.replace(/\\\n\s*/g, " ")
}

/** The packages an application installs from tarballs, as docs/getting-started.md "Install" names them. */
const APPLICATION_PACKAGES = ["@switchboard/core", "@switchboard/http-adapter", "@switchboard/storage-sql", "@switchboard/storage-sqlite"]

/** The package's `"."` export conditions. */
const mainExport = (manifest: Manifest) => manifest.exports?.["."] as Record<string, unknown> | undefined
/** A package is ESM-only when its `"."` export has no `require` condition. */
const isEsmOnly = (manifest: Manifest) => mainExport(manifest)?.require === undefined

/** The environment of child npm processes, without the `npm_*` settings of the `npm test` that may run us. */
const childEnvironment = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith("npm_")))

const workDirectory = mkdtempSync(join(tmpdir(), "switchboard-pack-"))
/** Where `npm run pack` writes, as a clone's `packs/` beside the consumer project. */
const packsDirectory = join(workDirectory, "switchboard", "packs")
const tarballs = new Map<string, string>()

/** The tarball name npm gives a package: `@scope/name` 1.2.3 -> `scope-name-1.2.3.tgz`. */
const tarballName = (manifest: Manifest) => `${manifest.name.replace(/^@/, "").replace("/", "-")}-${manifest.version}.tgz`

beforeAll(async () => {
  const unbuilt = packages.filter(({ path }) => !existsSync(join(path, "dist", "index.js"))).map(({ directory }) => directory)
  if (unbuilt.length > 0) throw new Error(`Build the packages first (npm run build): no dist/index.js in ${unbuilt.join(", ")}`)
  await runTool("npm", ["run", "pack", "--", packsDirectory], root)
  for (const { manifest } of packages) tarballs.set(manifest.name, join(packsDirectory, tarballName(manifest)))
}, 180_000)

afterAll(() => rmSync(workDirectory, { recursive: true, force: true }))

describe.each(packages)("$manifest.name", ({ directory, path, manifest }) => {
  it("has complete metadata", () => {
    expect(manifest.description?.length ?? 0).toBeGreaterThan(20)
    expect(manifest.license).toBe("MIT")
    expect(manifest.keywords?.length ?? 0).toBeGreaterThan(0)
    expect(manifest.repository).toMatchObject({ type: "git", directory: `packages/${directory}` })
    expect(manifest.repository?.url).toMatch(/^git\+https:\/\/.+\.git$/)
    expect(manifest.engines?.node).toBe(">=20.19")
    expect(manifest.sideEffects).toBe(false)
    expect(manifest.files).toEqual(["dist"])
    expect(manifest.type).toBe("module")
    expect(existsSync(join(path, "README.md")), "a README.md for the npm page").toBe(true)
  })

  it("takes effect as a peer dependency (^3.22) when its API exposes Effect types, never as a dependency", () => {
    // The public API is the built declarations: an import from "effect" there exposes its types.
    const declarations = readFileSync(join(path, "dist", "index.d.ts"), "utf8")
    if (!/from ["']effect(\/[^"']*)?["']/.test(declarations)) return
    expect(manifest.peerDependencies?.effect).toBe("^3.22")
    expect(manifest.dependencies?.effect).toBeUndefined()
    expect(manifest.devDependencies?.effect, "the workspace's own build and tests").toMatch(/^\^3\./)
  })

  it("exports ESM and CJS, each with its own types (storage-contract: ESM only)", () => {
    const conditions = mainExport(manifest)
    if (directory === "storage-contract") {
      expect(isEsmOnly(manifest)).toBe(true)
      expect(conditions).toMatchObject({ types: "./dist/index.d.ts", default: "./dist/index.js" })
      return
    }
    expect(conditions).toMatchObject({
      import: { types: "./dist/index.d.ts", default: "./dist/index.js" },
      require: { types: "./dist/index.d.cts", default: "./dist/index.cjs" }
    })
    expect(Object.keys(conditions?.import as object)[0]).toBe("types")
    expect(Object.keys(conditions?.require as object)[0]).toBe("types")
    expect(manifest.main).toBe("./dist/index.cjs")
    expect(manifest.types).toBe("./dist/index.d.cts")
  })

  it("passes publint --strict", async () => {
    // publint's own function, as its CLI runs it (`publint --strict` prints "All good!" for no message).
    const { messages } = await publint({ pkgDir: path, strict: true })
    expect(messages).toEqual([])
  }, 60_000)

  it("passes @arethetypeswrong/cli on its tarball", async () => {
    // The check the attw CLI runs on a tarball (`attw <tarball>`), called in this process:
    // TypeScript is loaded once for every package instead of once per attw process. Every
    // problem counts, but the resolutions the esm-only profile ignores (node10 and require
    // from node16: an ESM-only package cannot be required).
    const analysis = await checkPackage(createPackageFromTarballData(new Uint8Array(readFileSync(tarballs.get(manifest.name)!))))
    if (analysis.types === false) throw new Error(`${manifest.name}: the tarball carries no types`)
    const ignored = isEsmOnly(manifest) ? ["node10", "node16-cjs"] : []
    const problems = analysis.problems.filter((problem) => !ignored.includes(("resolutionKind" in problem ? problem.resolutionKind : undefined) ?? ""))
    expect(problems).toEqual([])
  }, 60_000)
})

describe("npm run pack", () => {
  it("writes exactly one tarball per publishable package (every non-private package of packages/*) into its folder", () => {
    const written = readdirSync(packsDirectory).sort()
    expect(written).toEqual(packages.map(({ manifest }) => tarballName(manifest)).sort())
  })
})

describe("install scripts: `npm ci` prints no install-script warning", () => {
  it("every locked package with an install script is allowed or denied in the root allowScripts", () => {
    const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8")) as {
      packages: Record<string, { readonly hasInstallScript?: boolean; readonly name?: string }>
    }
    const rootManifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { allowScripts?: Record<string, boolean> }
    const withScripts = Object.entries(lock.packages)
      .filter(([path, entry]) => entry.hasInstallScript === true && path.includes("node_modules/"))
      .map(([path, entry]) => entry.name ?? path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length))
    expect(withScripts.length).toBeGreaterThan(0)
    expect(withScripts.filter((name) => rootManifest.allowScripts?.[name] === undefined)).toEqual([])
    // @scarf/scarf (pulled by swagger-ui-dist) only reports installs: denied.
    expect(rootManifest.allowScripts?.["@scarf/scarf"]).toBe(false)
  })
})

describe("changesets: `changeset version` produces versions and CHANGELOGs", () => {
  it("bumps every package named in a changeset, writes its CHANGELOG.md, and leaves the private examples alone", async () => {
    // A copy of what changesets reads (manifests and .changeset/), never the working tree.
    const copy = join(workDirectory, "changesets")
    const manifests = [
      "package.json",
      ...readdirSync(join(root, "packages")).map((name) => join("packages", name, "package.json")),
      ...readdirSync(join(root, "examples")).map((name) => join("examples", name, "package.json"))
    ].filter((file) => existsSync(join(root, file)))
    for (const file of manifests) {
      mkdirSync(join(copy, file, ".."), { recursive: true })
      copyFileSync(join(root, file), join(copy, file))
    }
    mkdirSync(join(copy, ".changeset"))
    copyFileSync(join(root, ".changeset", "config.json"), join(copy, ".changeset", "config.json"))
    const names = packages.map(({ manifest }) => manifest.name)
    writeFileSync(
      join(copy, ".changeset", "packaging-check.md"),
      `---\n${names.map((name) => `"${name}": patch`).join("\n")}\n---\n\nA change checked by the packaging test.\n`
    )
    symlinkSync(join(root, "node_modules"), join(copy, "node_modules"))
    await runTool("node", [join(root, "node_modules", "@changesets", "cli", "bin.js"), "version"], copy)

    for (const { directory, manifest } of packages) {
      const changelog = readFileSync(join(copy, "packages", directory, "CHANGELOG.md"), "utf8")
      expect(changelog).toContain(`# ${manifest.name}`)
      expect(changelog).toContain("A change checked by the packaging test.")
      const bumped = JSON.parse(readFileSync(join(copy, "packages", directory, "package.json"), "utf8")) as { version: string }
      expect(bumped.version).not.toBe(manifest.version)
    }
    for (const example of readdirSync(join(copy, "examples"))) {
      const before = JSON.parse(readFileSync(join(root, "examples", example, "package.json"), "utf8")) as { version: string }
      const after = JSON.parse(readFileSync(join(copy, "examples", example, "package.json"), "utf8")) as { version: string }
      expect(after.version).toBe(before.version)
      expect(existsSync(join(copy, "examples", example, "CHANGELOG.md"))).toBe(false)
    }
  }, 60_000)
})

describe("pack and consume: the tarballs installed into a new project as docs/getting-started.md says", () => {
  const runtimePackages = packages.filter(({ manifest }) => !isEsmOnly(manifest)).map(({ manifest }) => manifest.name)
  const consumer = join(workDirectory, "my-app")
  /** The project of an application that only calls the API: the client's tarball alone. */
  const clientProject = join(workDirectory, "my-client")
  const gettingStarted = readFileSync(join(root, "docs", "getting-started.md"), "utf8")
  const clientPage = readFileSync(join(root, "docs", "client.md"), "utf8")

  beforeAll(async () => {
    mkdirSync(consumer, { recursive: true })
    // Linked from the workspace: its native module is already built there.
    const dependencies = { "better-sqlite3": `file:${join(root, "node_modules", "better-sqlite3")}` }
    writeFileSync(
      join(consumer, "package.json"),
      JSON.stringify({ name: "my-app", version: "1.0.0", private: true, dependencies }, null, 2)
    )
    for (const file of ["verify.mjs", "verify.cjs"]) {
      copyFileSync(fileURLToPath(new URL(`./fixtures/consumer/${file}`, import.meta.url)), join(consumer, file))
    }
    const installLine = documentedInstallLine(gettingStarted)
    const server = runnableBlocks("docs/getting-started.md", gettingStarted).find(({ source }) => source.startsWith("// server.mjs"))
    if (server === undefined) throw new Error("docs/getting-started.md has no `js run` block starting with `// server.mjs`")
    writeFileSync(join(consumer, "server.mjs"), server.source)
    const example = runnableBlocks("docs/client.md", clientPage).find(({ kind, source }) => kind === "client" && source.startsWith("// example.ts"))
    if (example === undefined) throw new Error("docs/client.md has no `ts run client` block starting with `// example.ts`")
    mkdirSync(clientProject, { recursive: true })
    writeFileSync(join(clientProject, "package.json"), JSON.stringify({ name: "my-client", version: "1.0.0", private: true }, null, 2))
    const { code } = await transform(example.source, { loader: example.language, format: "esm", target: "node20", sourcefile: "docs/client.md" })
    writeFileSync(join(clientProject, "example.mjs"), code)
    const quietly = "--prefer-offline --no-audit --no-fund --ignore-scripts --loglevel=error"
    try {
      const installingClient = runTool("sh", ["-c", `npm install ../switchboard/packs/switchboard-client-*.tgz ${quietly}`], clientProject)
      await runTool("sh", ["-c", `${installLine} ${quietly}`], consumer)
      await installingClient
      installedByThePage = readdirSync(join(consumer, "node_modules", "@switchboard")).map((name) => `@switchboard/${name}`).sort()
      installedByTheClient = readdirSync(join(clientProject, "node_modules"))
      gettingStartedRun = await runProgram("server.mjs", consumer, childEnvironment, clientProbe("example.mjs", clientProject, childEnvironment))
      await runTool("sh", ["-c", `npm install ../switchboard/packs/*.tgz ${quietly}`], consumer)
    } catch (error) {
      // Without the npm registry (and nothing in npm's cache) the consumer cannot be set up:
      // skip with the reason instead of failing. Any other install failure fails.
      const message = String(error)
      const networkFailure = /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ENETUNREACH|ECONNRESET/
      if (!networkFailure.test(message)) throw error
      registryUnreachable = message.split("\n").find((line) => line.includes("reason:")) ?? message.match(networkFailure)![0]
      console.warn(`pack and consume skipped: the npm registry is unreachable (${registryUnreachable})`)
      return
    }
    esm = await consume("verify.mjs")
    cjs = await consume("verify.cjs")
  }, 300_000)

  let registryUnreachable: string | undefined
  let installedByThePage: ReadonlyArray<string>
  let installedByTheClient: ReadonlyArray<string>
  let esm: ConsumerResult
  let cjs: ConsumerResult
  let gettingStartedRun: ProgramRun<ClientRun>
  /** Skips the test (with the reason printed in beforeAll) when the registry was unreachable. */
  const requireInstall = (context: { skip: (note?: string) => void }) => {
    if (registryUnreachable !== undefined) context.skip(`npm registry unreachable: ${registryUnreachable}`)
  }

  const consume = async (file: string) => {
    const { stdout } = await runTool("node", [file, JSON.stringify(runtimePackages), join(consumer, `${file}.db`)], consumer)
    return JSON.parse(stdout) as ConsumerResult
  }

  const expectDiscovery = (result: VerifyResult) => {
    expect(result.discovery["/openapi.json"]).toMatchObject({ status: 200, type: expect.stringContaining("json") })
    expect(result.discovery["/docs"]).toMatchObject({ status: 200, type: expect.stringContaining("text/html") })
    expect(result.discovery["/docs/swagger-ui.css"]).toMatchObject({ status: 200, type: expect.stringContaining("text/css") })
    expect(result.discovery["/docs/swagger-ui.css"]?.length).toBeGreaterThan(1000)
  }

  const expectVerified = (result: VerifyResult) => {
    for (const envelope of [result.node, result.fetch]) {
      expect(envelope).toMatchObject({
        status: 200,
        success: true,
        errors: [],
        data: { organization: { id: result.organizationId, name: "Consumer" } }
      })
    }
  }

  it("installs the packages an application needs, and only those, with the page's command", (context) => {
    requireInstall(context)
    expect(installedByThePage).toEqual(APPLICATION_PACKAGES)
  })

  it("installs every package from its tarball, with the Effect 3 the page pins", (context) => {
    requireInstall(context)
    expect(runtimePackages).toEqual(expect.arrayContaining(["@switchboard/core", "@switchboard/http-adapter", "@switchboard/storage-sqlite"]))
    for (const { manifest } of packages) {
      const installed = JSON.parse(readFileSync(join(consumer, "node_modules", ...manifest.name.split("/"), "package.json"), "utf8")) as Manifest
      expect(installed.name).toBe(manifest.name)
      expect(existsSync(join(consumer, "node_modules", ...manifest.name.split("/"), "src"))).toBe(false)
    }
    const effect = JSON.parse(readFileSync(join(consumer, "node_modules", "effect", "package.json"), "utf8")) as Manifest
    expect(effect.version).toMatch(/^3\./)
  })

  it("runs the page's server on those packages alone: GET /verify with the key it prints answers 200, SIGTERM stops it cleanly", (context) => {
    requireInstall(context)
    expect(gettingStartedRun.result.verify).toMatchObject({ status: 200, body: { success: true, data: { organization: { name: "Acme" } } } })
    expect(gettingStartedRun.exit, `${gettingStartedRun.stdout}\n${gettingStartedRun.stderr}`).toEqual({ code: 0, signal: null })
  })

  it("runs docs/client.md's whole program, by import, in a project with the client's tarball alone, against that server", (context) => {
    requireInstall(context)
    expect(installedByTheClient.filter((name) => !name.startsWith("."))).toEqual(["@switchboard"])
    expect(readdirSync(join(clientProject, "node_modules", "@switchboard"))).toEqual(["client"])
    const { run } = gettingStartedRun.result
    expect(run, run.stderr).toMatchObject({ code: 0, stderr: "" })
    const lines = run.stdout.trimEnd().split("\n")
    expect(lines, run.stdout).toHaveLength(CLIENT_EXAMPLE_OUTPUT.length)
    lines.forEach((line, index) => expect(line).toMatch(CLIENT_EXAMPLE_OUTPUT[index]!))
  })

  it("by import (verify.mjs): the ESM builds answer GET /verify on memory and SQLite storage, and serve /docs", (context) => {
    requireInstall(context)
    for (const name of runtimePackages) expect(esm.resolved[name]).toMatch(/\/dist\/index\.js$/)
    expectVerified(esm.memory)
    expectVerified(esm.sqlite)
    expectDiscovery(esm.memory)
  })

  it("by require (verify.cjs): the CJS builds answer GET /verify on memory and SQLite storage, and serve /docs", (context) => {
    requireInstall(context)
    for (const name of runtimePackages) expect(cjs.resolved[name]).toMatch(/\/dist\/index\.cjs$/)
    expectVerified(cjs.memory)
    expectVerified(cjs.sqlite)
    expectDiscovery(cjs.memory)
  })

  it("exports the same names by import and by require", (context) => {
    requireInstall(context)
    for (const name of runtimePackages) {
      expect(esm.exports[name]?.length ?? 0).toBeGreaterThan(0)
      expect(cjs.exports[name]).toEqual(esm.exports[name])
    }
  })
})

describe("an incompatible Effect: npm refuses it with a resolution error", () => {
  it("installing the tarballs beside effect 4 fails with ERESOLVE naming the peer range", async (context) => {
    const project = join(workDirectory, "effect-4-app")
    mkdirSync(project, { recursive: true })
    writeFileSync(join(project, "package.json"), JSON.stringify({ name: "effect-4-app", version: "1.0.0", private: true }, null, 2))
    const core = tarballs.get("@switchboard/core")!
    // --dry-run: npm resolves the whole tree (where ERESOLVE arises) but writes nothing.
    const failure = await runTool(
      "npm",
      ["install", "--dry-run", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", core, "effect@4"],
      project
    ).then(
      () => undefined,
      (error: Error) => error.message
    )
    if (failure !== undefined && /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ENETUNREACH|ECONNRESET/.test(failure)) {
      context.skip("npm registry unreachable")
    }
    expect(failure).toContain("ERESOLVE")
    expect(failure).toContain('peer effect@"^3.22"')
  }, 120_000)
})

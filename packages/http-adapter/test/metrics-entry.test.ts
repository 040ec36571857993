import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { describe, expect, it } from "vitest"

// prom-client is an optional peer dependency (docs/http-adapter.md "Metrics"): the main
// entry's build must load without it, and only `@switchboard/http-adapter/metrics` needs it.
// A child Node process loads the built files (the package must be built first, as for
// packaging.test.ts) with module hooks that note every request for `prom-client`, by
// `import` (a resolve hook) and by `require` (Module._resolveFilename).

const run = promisify(execFile)
const dist = fileURLToPath(new URL("../dist/", import.meta.url))

/** The hooks and the loads, as one ESM program: prints `{"requested": [...]}`, the prom-client requests seen. */
const program = (load: string) => `
import { register, createRequire } from "node:module"
import Module from "node:module"
const requested = []
const { port1, port2 } = new MessageChannel()
port1.on("message", (specifier) => requested.push(specifier))
port1.unref()
register("data:text/javascript," + encodeURIComponent(\`
  let port
  export const initialize = (data) => { port = data.port }
  export const resolve = (specifier, context, next) => {
    if (specifier === "prom-client" || specifier.startsWith("prom-client/")) port.postMessage(specifier)
    return next(specifier, context)
  }\`), { parentURL: import.meta.url, data: { port: port2 }, transferList: [port2] })
const original = Module._resolveFilename
Module._resolveFilename = function (request, ...rest) {
  if (request === "prom-client" || request.startsWith("prom-client/")) requested.push(request)
  return original.call(this, request, ...rest)
}
const require = createRequire(import.meta.url)
${load}
await new Promise((resolve) => setTimeout(resolve, 50))
console.log(JSON.stringify({ requested }))
`

const requestsOf = async (load: string): Promise<ReadonlyArray<string>> => {
  const { stdout } = await run(process.execPath, ["--input-type=module", "-e", program(load)], { cwd: dist })
  return (JSON.parse(stdout.trim().split("\n").pop()!) as { requested: Array<string> }).requested
}

describe("the main entry loads without prom-client", () => {
  it("dist/index.js (import) and dist/index.cjs (require) never ask for prom-client; dist/metrics.js and .cjs do", async () => {
    const main = await requestsOf(`
      const esm = await import(${JSON.stringify(`${dist}index.js`)})
      const cjs = require(${JSON.stringify(`${dist}index.cjs`)})
      if (typeof esm.createHandler !== "function" || typeof cjs.createHandler !== "function") throw new Error("not loaded")`)
    expect(main).toEqual([])
    // The control: the same hooks see the metrics entry ask for it, both ways.
    const metricsEsm = await requestsOf(`await import(${JSON.stringify(`${dist}metrics.js`)})`)
    expect(metricsEsm).toContain("prom-client")
    const metricsCjs = await requestsOf(`require(${JSON.stringify(`${dist}metrics.cjs`)})`)
    expect(metricsCjs).toContain("prom-client")
  }, 30_000) // four node processes, each loading the built entry: 4 s on a quiet 2-core machine
})

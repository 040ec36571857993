// `npm run bench`: every benchmark, each figure beside its baselines measured in the same
// run (docs/benchmarks.md, DESIGN §5), then a summary of every target with its ratio.
// Exit code 0 when targets are missed (it is a measurement), 1 on any error.
import { cpus, loadavg } from "node:os"
import { summaryBlock } from "./lib.mjs"

console.log(
  `Switchboard benchmarks — node ${process.version}, ${new Date().toISOString()}, ${cpus().length} CPUs, ` +
    `load average at start ${loadavg().map((value) => value.toFixed(2)).join(" ")}\n`
)
console.log(await (await import("./http.mjs")).run())
console.log(await (await import("./bulk-import.mjs")).run())
console.log(await (await import("./rate-limits.mjs")).run())
console.log(await (await import("./chats.mjs")).run())
console.log(`\n${summaryBlock()}`)

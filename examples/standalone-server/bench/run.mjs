// `npm run bench`: every benchmark, each figure beside its baseline measured in the same
// run (docs/benchmarks.md). Speed is measured here, never in tests.
import { run as bulkImport } from "./bulk-import.mjs"

console.log(`Switchboard benchmarks — node ${process.version}, ${new Date().toISOString()}\n`)
console.log(await (await import("./http.mjs")).run())
console.log(await bulkImport())
console.log(await (await import("./rate-limits.mjs")).run())
console.log(await (await import("./chats.mjs")).run())

// `npm run bench`: every benchmark, each figure beside its baselines measured in the same
// run (docs/benchmarks.md "Targets"), then a summary of every target with its ratio.
// Exit code 0 when targets are missed (it is a measurement), 1 on any error.
import { machineLine, summaryBlock } from "./lib.mjs"

console.log(`${machineLine()}\n`)
console.log(await (await import("./http.mjs")).run())
console.log(await (await import("./bulk-import.mjs")).run())
console.log(await (await import("./rate-limits.mjs")).run())
console.log(await (await import("./chats.mjs")).run())
console.log(await (await import("./chats-postgres.mjs")).run())
console.log(await (await import("./dispatch.mjs")).run())
console.log(await (await import("./broadcasts.mjs")).run())
console.log(await (await import("./ingest.mjs")).run())
console.log(await (await import("./media.mjs")).run())
console.log(await (await import("./soak.mjs")).run())
console.log(`\n${summaryBlock()}`)

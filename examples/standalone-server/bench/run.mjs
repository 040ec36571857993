// `npm run bench`: every benchmark, each figure beside its baselines measured in the same
// run (docs/benchmarks.md "Targets"), then a summary of every target with its ratio.
// Each part runs in a child process of its own (its script, as `node bench/<part>.mjs` runs
// it alone): what one part leaves in a process — its heap, its open databases — does not
// weigh on the next part's load generator and timings. A part prints its figures as it
// goes and sends its target lines here for the summary. BENCH_PARTS=chats,chats-postgres
// runs only the parts named (file names without `.mjs`), in this file's order.
// Exit code 0 when targets are missed (it is a measurement), 1 on any error.
import { fork } from "node:child_process"
import { once } from "node:events"
import { fileURLToPath } from "node:url"
import { machineLine, recordTargets, summaryBlock } from "./lib.mjs"

const PARTS = ["http", "bulk-import", "rate-limits", "chats", "chats-postgres", "dispatch", "broadcasts", "ingest", "media", "soak", "idle"]

const selected = process.env.BENCH_PARTS === undefined ? PARTS : process.env.BENCH_PARTS.split(",").map((name) => name.trim())
const unknown = selected.filter((name) => !PARTS.includes(name))
if (unknown.length > 0) {
  console.error(`BENCH_PARTS: no part ${unknown.join(", ")} (parts: ${PARTS.join(", ")})`)
  process.exit(1)
}

console.log(`${machineLine()}\n`)
for (const name of PARTS.filter((part) => selected.includes(part))) {
  const child = fork(fileURLToPath(new URL(`${name}.mjs`, import.meta.url)), [], { stdio: "inherit" })
  child.on("message", (message) => recordTargets(message.targets))
  const [code, signal] = await once(child, "exit")
  if (code !== 0) {
    console.error(`bench part ${name} failed (${signal ?? `exit code ${code}`})`)
    process.exit(1)
  }
}
console.log(`\n${summaryBlock()}`)

import { setFlagsFromString } from "node:v8"

/**
 * How far V8 may let the old generation grow over the live heap before its next
 * mark-compact, in percent: 50 (V8's own factor, chosen at each mark-compact, reaches 4×
 * on a small heap). A broadcast start of 100 000 recipients promotes short-lived objects
 * (the runtime's fibers among them) at ~2.5 MB a second; with V8's factor the server's
 * first mark-compact after start-up set a limit of ~82 MB over a 20 MB live heap, and RSS
 * grew by 59–73 MB before the next one; with 50% it grew by 34–39 MB (docs/benchmarks.md
 * "The start's memory: V8's heap growing factor"). The cost is more frequent mark-compacts
 * (a few ms each, mostly incremental).
 */
export const HEAP_GROWING_PERCENT = 50

/**
 * The V8 flag the standalone server sets as it starts (`--heap-growing-percent=50`), or
 * `null` when the process was started with its own `--heap-growing-percent` (in `execArgv`
 * or `NODE_OPTIONS`), which is then kept.
 */
export const heapGrowingFlag = (execArgv: ReadonlyArray<string>, nodeOptions: string | undefined): string | null =>
  [...execArgv, ...(nodeOptions ?? "").split(/\s+/)].some((argument) => argument.startsWith("--heap-growing-percent"))
    ? null
    : `--heap-growing-percent=${HEAP_GROWING_PERCENT}`

/** Sets {@link heapGrowingFlag} on this process's V8 (before the server allocates much). */
export const limitHeapGrowth = (): void => {
  const flag = heapGrowingFlag(process.execArgv, process.env.NODE_OPTIONS)
  if (flag !== null) setFlagsFromString(flag)
}

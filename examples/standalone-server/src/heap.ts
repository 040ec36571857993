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
 * Whether a command-line argument sets V8's flag `name` (given with dashes): V8 reads `-`
 * and `_` alike in a flag's name, and a boolean flag may be given as `--no-name`.
 */
const settingOf =
  (name: string) =>
  (argument: string): boolean =>
    new RegExp(`^--(no-)?${name.replace(/-/g, "[-_]")}(=|$)`).test(argument)

/**
 * The V8 flags the standalone server sets as it starts (docs/standalone-server.md "Memory"),
 * each kept out when the process was started with its own setting of it:
 *
 * - `--heap-growing-percent=50`: see {@link HEAP_GROWING_PERCENT}.
 * - `--no-allocation-site-pretenuring`: V8 otherwise learns, from allocation sites whose
 *   objects survived a scavenge or two while the server warmed up or worked through a
 *   burst, to allocate their later objects straight in the old generation. It did so for
 *   `pg`'s result rows and the server's response bodies: every request's rows went to the
 *   old generation (~33 KB a request), a mark-compact ran every ~1.5 s with main-thread
 *   marking steps of 8–11 ms, and `GET /chats` on PostgreSQL took 20–35 ms for the
 *   requests they met (p50 3–6 ms). Without it those objects die young, as they are
 *   (docs/benchmarks.md "PostgreSQL `GET /chats`: V8's pretenuring").
 */
export const SERVER_V8_FLAGS: ReadonlyArray<{ readonly flag: string; readonly given: (argument: string) => boolean }> = [
  { flag: `--heap-growing-percent=${HEAP_GROWING_PERCENT}`, given: settingOf("heap-growing-percent") },
  { flag: "--no-allocation-site-pretenuring", given: settingOf("allocation-site-pretenuring") }
]

/**
 * The flags of {@link SERVER_V8_FLAGS} to set on this process: those not given in
 * `execArgv` or `NODE_OPTIONS` (a setting of the process's own is kept).
 */
export const serverV8Flags = (execArgv: ReadonlyArray<string>, nodeOptions: string | undefined): ReadonlyArray<string> => {
  const argumentsGiven = [...execArgv, ...(nodeOptions ?? "").split(/\s+/)]
  return SERVER_V8_FLAGS.filter(({ given }) => !argumentsGiven.some(given)).map(({ flag }) => flag)
}

/** Sets {@link serverV8Flags} on this process's V8 (before the server allocates much). */
export const setServerV8Flags = (): void => {
  for (const flag of serverV8Flags(process.execArgv, process.env.NODE_OPTIONS)) setFlagsFromString(flag)
}

/**
 * Work a shared test helper hands over to be done after the last test of the test file being
 * run. Test files of a project share a worker process (`isolate: false`, vitest.shared.ts):
 * a helper module is then evaluated once per worker, so an `afterAll` it registers at its top
 * level would run after the first file only. vitest.setup.ts, run before every test file,
 * runs these closers after that file's own `afterAll` hooks, newest first.
 */
type Closer = () => void | Promise<void>

// One list per worker, on globalThis so a helper and the setup file meet even if a module
// were evaluated twice.
const key = Symbol.for("switchboard.test.afterFile")
const closers: Array<Closer> = ((globalThis as unknown as Record<symbol, Array<Closer>>)[key] ??= [])

/** Runs `close` after the last test of the test file being run (its afterAll hooks first). */
export const afterFile = (close: Closer): void => {
  closers.push(close)
}

/** Runs and forgets the closers registered during this test file, newest first. */
export const runAfterFile = async (): Promise<void> => {
  for (const close of closers.splice(0).reverse()) await close()
}

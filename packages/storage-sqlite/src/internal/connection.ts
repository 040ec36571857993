import Sqlite from "better-sqlite3"

/** Default of `busyTimeoutMs`: how long a statement waits for another connection's lock. */
export const DEFAULT_BUSY_TIMEOUT_MS = 5000

/**
 * Opens `filename` (created when missing; `":memory:"` for a private in-memory database)
 * and sets the connection up: `busy_timeout` (through better-sqlite3's `timeout` option, in
 * milliseconds), `journal_mode = WAL` (files only; it persists in the file),
 * `synchronous = NORMAL` (durable across crashes of the process in WAL mode; a power loss
 * may lose the last commits) and `foreign_keys = ON`. Throws the driver's error, closing
 * the connection first when it was already open.
 */
export const openDatabase = (filename: string, busyTimeoutMs: number): Sqlite.Database => {
  const db = new Sqlite(filename, { timeout: busyTimeoutMs })
  try {
    if (!db.memory) enableWriteAheadLog(db, busyTimeoutMs)
    db.pragma("synchronous = NORMAL")
    db.pragma("foreign_keys = ON")
    return db
  } catch (error) {
    db.close()
    throw error
  }
}

/**
 * Switches the file to WAL. SQLite answers `SQLITE_BUSY` at once, without the busy handler,
 * when another process is switching the same new file at the same moment; this retries
 * every 10 ms until `busyTimeoutMs` has passed, then throws the driver's error.
 */
const enableWriteAheadLog = (db: Sqlite.Database, busyTimeoutMs: number): void => {
  const deadline = Date.now() + busyTimeoutMs
  const pause = new Int32Array(new SharedArrayBuffer(4))
  for (;;) {
    try {
      db.pragma("journal_mode = WAL")
      return
    } catch (error) {
      const busy = (error as { code?: string }).code?.startsWith("SQLITE_BUSY") ?? false
      if (!busy || Date.now() >= deadline) throw error
      Atomics.wait(pause, 0, 0, 10)
    }
  }
}

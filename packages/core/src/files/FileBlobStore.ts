import { randomUUID } from "node:crypto"
import { createWriteStream } from "node:fs"
import { mkdir, open, readdir, rename, rm, stat, unlink } from "node:fs/promises"
import { hostname } from "node:os"
import { dirname, join } from "node:path"
import { pipeline } from "node:stream/promises"
import { Effect, Layer } from "effect"
import { BlobNotFound, BlobStore, BlobStoreError, type BlobStoreService } from "../storage/BlobStore.js"
import { blobCall, measuredSource, putFailure } from "../storage/blobSupport.js"

/**
 * Options of the file-system blob store:
 * - `directory`: where the blobs live, one file per key at `<directory>/<key>` (created when
 *   missing); the standalone server's `MEDIA_DIR`;
 * - `partialMaxAgeMs`: partial files of `put`s older than this are removed when the store
 *   starts (left by a process that stopped mid-write; default 86 400 000, a day, so that a
 *   write of another process sharing the directory is never removed). The partial files of
 *   a process of this host that is no longer running (or that had this process's id: an
 *   earlier run in the same container) are removed at the start whatever their age.
 *
 * @category storage
 */
export interface FileBlobStoreOptions {
  readonly directory: string
  readonly partialMaxAgeMs?: number
}

/** The directory of partial files under the store's own, not a key (keys never start with a dot). */
const PARTIAL = ".partial"
const DAY_MS = 86_400_000

/** This host's name as it may appear in a file name (`~` separates a partial file's parts). */
const hostTag = (): string => hostname().replace(/[^A-Za-z0-9.-]/g, "_")

/**
 * The partial files this process is writing, shared by every store of the process (and by
 * every copy of this module loaded in it): a store starting over the same directory must
 * not take them for an earlier process's.
 */
const writing: Set<string> = ((globalThis as Record<symbol, unknown>)[Symbol.for("@switchboard/core/FileBlobStore/writing")] ??= new Set<string>()) as Set<string>

/** Whether the process `pid` of this host runs (a process we may not signal runs too). */
const isRunning = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (cause) {
    return (cause as NodeJS.ErrnoException).code === "EPERM"
  }
}

const isMissing = (cause: unknown): boolean => (cause as NodeJS.ErrnoException | undefined)?.code === "ENOENT"

/**
 * Builds a file-system blob store (docs/media.md "Blob stores"). A `put` streams into a
 * partial file under `<directory>/.partial/` (named after this host and process), flushed
 * to disk, then renamed onto the key's path: readers see the whole blob or none, and a
 * process stopped mid-write leaves no half file under any key; its partial file is removed
 * when a store starts on the same host (see {@link FileBlobStoreOptions}). `move` is a rename. Fails with {@link BlobStoreError} (operation
 * `"blobs.open"`) when the directory cannot be created.
 *
 * @category constructors
 */
export const make = (options: FileBlobStoreOptions): Effect.Effect<BlobStoreService, BlobStoreError> =>
  Effect.tryPromise({
    try: async () => {
      const partials = join(options.directory, PARTIAL)
      await mkdir(partials, { recursive: true })
      await removeOldPartials(partials, options.partialMaxAgeMs ?? DAY_MS)
      return service(options.directory, partials)
    },
    catch: (cause) => new BlobStoreError({ operation: "blobs.open", cause })
  })

/**
 * Removes the partial files no put will finish: those of a process of this host that is not
 * running, or that had this process's id (an earlier run: this one is only starting), and
 * any not written to for `maxAgeMs` (another host's, whose processes cannot be asked).
 * A partial file is named `<host>~<pid>~<uuid>`.
 */
const removeOldPartials = async (partials: string, maxAgeMs: number): Promise<void> => {
  const before = Date.now() - maxAgeMs
  const host = hostTag()
  for (const name of await readdir(partials)) {
    const path = join(partials, name)
    if (writing.has(path)) continue
    const owner = /^(.+)~(\d+)~[^~]+$/.exec(name)
    const pid = owner === null ? undefined : Number(owner[2])
    const abandoned = owner?.[1] === host && pid !== undefined && (pid === process.pid || !isRunning(pid))
    if (abandoned) {
      await rm(path, { force: true })
      continue
    }
    const stats = await stat(path).catch(() => undefined)
    if (stats !== undefined && stats.mtimeMs < before) await rm(path, { force: true })
  }
}

const service = (directory: string, partials: string): BlobStoreService => {
  const pathOf = (key: string) => join(directory, ...key.split("/"))

  return {
    put: (key, source, options) =>
      blobCall(
        "blobs.put",
        [key],
        async () => {
          const partial = join(partials, `${hostTag()}~${process.pid}~${randomUUID()}`)
          const measured = measuredSource(source, options?.maxBytes)
          writing.add(partial)
          const file = createWriteStream(partial, { flags: "wx", flush: true })
          try {
            await pipeline(measured.bytes, file)
            const target = pathOf(key)
            await mkdir(dirname(target), { recursive: true })
            await rename(partial, target)
          } catch (cause) {
            // A source that fails before the file is open still lets the stream open (create)
            // it: removed only once the stream has closed, it cannot appear after the removal.
            if (!file.closed) await new Promise<void>((resolve) => file.once("close", () => resolve()))
            await rm(partial, { force: true })
            throw cause
          } finally {
            writing.delete(partial)
          }
          return measured.written()
        },
        (cause) => putFailure("blobs.put", cause)
      ),
    get: (key, options) =>
      blobCall(
        "blobs.get",
        [key],
        async () => {
          // Opened first: a delete or a replacement after this point does not change the bytes read.
          const handle = await open(pathOf(key), "r")
          try {
            const stats = await handle.stat()
            if (!stats.isFile()) throw Object.assign(new Error(`Not a file: ${key}`), { code: "ENOENT" })
            const size = stats.size
            const range = options?.range
            const stream = handle.createReadStream(range === undefined ? {} : { start: range.start, end: range.end })
            return { size, length: range === undefined ? size : range.end - range.start + 1, stream }
          } catch (cause) {
            await handle.close()
            throw cause
          }
        },
        (cause) => (isMissing(cause) ? new BlobNotFound({ key }) : new BlobStoreError({ operation: "blobs.get", cause }))
      ),
    head: (key) =>
      blobCall("blobs.head", [key], async () => {
        try {
          const stats = await stat(pathOf(key))
          return stats.isFile() ? { size: stats.size } : undefined
        } catch (cause) {
          if (isMissing(cause)) return undefined
          throw cause
        }
      }),
    delete: (key) =>
      blobCall("blobs.delete", [key], async () => {
        await unlink(pathOf(key)).catch((cause: unknown) => {
          if (!isMissing(cause)) throw cause
        })
      }),
    move: (from, to) =>
      blobCall(
        "blobs.move",
        [from, to],
        async () => {
          await stat(pathOf(from))
          await mkdir(dirname(pathOf(to)), { recursive: true })
          await rename(pathOf(from), pathOf(to))
        },
        (cause) => (isMissing(cause) ? new BlobNotFound({ key: from }) : new BlobStoreError({ operation: "blobs.move", cause }))
      )
  }
}

/**
 * A Layer of a file-system {@link BlobStore} over `options.directory` (see {@link make}).
 *
 * @category layers
 * @example
 * import { FileBlobStore } from "@switchboard/core"
 *
 * const BlobStoreLive = FileBlobStore.layer({ directory: "./data/media" })
 */
export const layer = (options: FileBlobStoreOptions): Layer.Layer<BlobStore, BlobStoreError> =>
  Layer.effect(BlobStore, make(options))

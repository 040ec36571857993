import { describe, expect, it } from "@effect/vitest"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs"
import { spawn } from "node:child_process"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Fiber } from "effect"
import { afterAll } from "vitest"
import { FileBlobStore, MemoryBlobStore } from "@switchboard/core"
import { runBlobStoreContract } from "@switchboard/storage-contract"

const directories: Array<string> = []
const freshDirectory = () => {
  const directory = mkdtempSync(join(tmpdir(), "switchboard-blobs-"))
  directories.push(directory)
  return directory
}
afterAll(() => {
  for (const directory of directories) rmSync(directory, { recursive: true, force: true })
})

runBlobStoreContract({ name: "memory", makeLayer: () => MemoryBlobStore.layer })
runBlobStoreContract({ name: "file system", makeLayer: () => FileBlobStore.layer({ directory: freshDirectory() }) })

/** The id of a process that ran and has exited. */
const exitedPid = async (): Promise<number> => {
  const child = spawn(process.execPath, ["-e", ""])
  await new Promise((resolve) => child.once("exit", resolve))
  return child.pid!
}

async function* bytesOf(text: string): AsyncGenerator<Uint8Array> {
  yield Buffer.from(text)
}

async function* brokenAfter(text: string): AsyncGenerator<Uint8Array> {
  yield Buffer.from(text)
  throw new Error("connection reset")
}

describe("FileBlobStore", () => {
  it.effect("keeps a blob at <directory>/<key>, and leaves no partial file after a put, a failed one included", () =>
    Effect.gen(function* () {
      const directory = freshDirectory()
      const store = yield* FileBlobStore.make({ directory })
      yield* store.put("media/org-1/abc", bytesOf("hello"))
      expect(readFileSync(join(directory, "media", "org-1", "abc"), "utf8")).toBe("hello")
      yield* Effect.flip(store.put("media/org-1/too-large", bytesOf("0123456789"), { maxBytes: 5 }))
      yield* Effect.flip(store.put("media/org-1/broken", brokenAfter("half")))
      expect(readdirSync(join(directory, ".partial"))).toEqual([])
      expect(readdirSync(join(directory, "media", "org-1"))).toEqual(["abc"])
    }))

  it.effect("removes partial files older than partialMaxAgeMs when it starts, and keeps newer ones (another process's write)", () =>
    Effect.gen(function* () {
      const directory = freshDirectory()
      mkdirSync(join(directory, ".partial"), { recursive: true })
      writeFileSync(join(directory, ".partial", "stale"), "left by a crash")
      const twoDaysAgo = new Date(Date.now() - 2 * 86_400_000)
      utimesSync(join(directory, ".partial", "stale"), twoDaysAgo, twoDaysAgo)
      writeFileSync(join(directory, ".partial", "writing"), "another process, now")
      yield* FileBlobStore.make({ directory })
      expect(readdirSync(join(directory, ".partial"))).toEqual(["writing"])
    }))

  it.effect("removes at its start the partial files of a stopped process of this host, whatever their age, and keeps those of running processes and of other hosts", () =>
    Effect.gen(function* () {
      const directory = freshDirectory()
      const partials = join(directory, ".partial")
      mkdirSync(partials, { recursive: true })
      const host = hostname().replace(/[^A-Za-z0-9.-]/g, "_")
      const stopped = yield* Effect.promise(() => exitedPid())
      writeFileSync(join(partials, `${host}~${stopped}~killed-mid-download`), "half a file")
      // An earlier run with this process's id (a restarted container): it is not writing now.
      writeFileSync(join(partials, `${host}~${process.pid}~earlier-run`), "half a file")
      writeFileSync(join(partials, `${host}~${process.ppid}~running`), "a running process's write")
      writeFileSync(join(partials, `another-host~${stopped}~elsewhere`), "another host's write, now")
      // A put of this process in progress, its source waiting.
      let release: () => void = () => undefined
      const released = new Promise<void>((resolve) => (release = resolve))
      async function* waiting(): AsyncGenerator<Uint8Array> {
        yield Buffer.from("first half, ")
        await released
        yield Buffer.from("second half")
      }
      const store = yield* FileBlobStore.make({ directory })
      const put = yield* Effect.fork(store.put("media/org/slow", waiting()))
      yield* Effect.promise(async () => {
        while (!readdirSync(partials).some((name) => name.startsWith(`${host}~${process.pid}~`) && !name.endsWith("earlier-run"))) {
          await new Promise((resolve) => setTimeout(resolve, 5))
        }
      })
      yield* FileBlobStore.make({ directory })
      const kept = readdirSync(partials).sort()
      expect(kept.filter((name) => !name.startsWith(`${host}~${process.pid}~`))).toEqual([`${host}~${process.ppid}~running`, `another-host~${stopped}~elsewhere`].sort())
      expect(kept.filter((name) => name.startsWith(`${host}~${process.pid}~`))).toHaveLength(1)
      release()
      expect(yield* Fiber.join(put)).toMatchObject({ size: 23 })
      expect(readFileSync(join(directory, "media", "org", "slow"), "utf8")).toBe("first half, second half")
    }))

  it.effect("two stores over one directory (two processes sharing MEDIA_DIR) see each other's blobs", () =>
    Effect.gen(function* () {
      const directory = freshDirectory()
      const first = yield* FileBlobStore.make({ directory })
      const second = yield* FileBlobStore.make({ directory })
      yield* first.put("media/shared", bytesOf("one"))
      expect(yield* second.head("media/shared")).toEqual({ size: 3 })
      yield* second.delete("media/shared")
      expect(yield* first.head("media/shared")).toBeUndefined()
    }))

  it.effect("a directory under a key's path is no blob: undefined to head, BlobNotFound to get", () =>
    Effect.gen(function* () {
      const store = yield* FileBlobStore.make({ directory: freshDirectory() })
      yield* store.put("media/org/blob", bytesOf("x"))
      expect(yield* store.head("media/org")).toBeUndefined()
      expect((yield* Effect.flip(store.get("media/org")))._tag).toBe("BlobNotFound")
    }))

  it.effect("fails BlobStoreError when its directory cannot be created", () =>
    Effect.gen(function* () {
      const directory = freshDirectory()
      writeFileSync(join(directory, "a-file"), "")
      const error = yield* Effect.flip(FileBlobStore.make({ directory: join(directory, "a-file", "media") }))
      expect(error).toMatchObject({ _tag: "BlobStoreError", operation: "blobs.open" })
    }))
})

describe("MemoryBlobStore", () => {
  it.effect("holds only complete blobs: a failed put leaves no key", () =>
    Effect.gen(function* () {
      const store = MemoryBlobStore.make()
      yield* store.put("a/complete", bytesOf("whole"))
      yield* Effect.flip(store.put("a/broken", brokenAfter("half")))
      yield* Effect.flip(store.put("a/large", bytesOf("0123456789"), { maxBytes: 3 }))
      expect(store.keys()).toEqual(["a/complete"])
    }))
})

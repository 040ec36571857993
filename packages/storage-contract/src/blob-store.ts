import { describe, expect, it } from "@effect/vitest"
import { createHash, randomBytes, randomUUID } from "node:crypto"
import type { Readable } from "node:stream"
import { Effect, Exit, type Layer } from "effect"
import { BlobStore, type BlobStoreService } from "@switchboard/core"

/**
 * Options of {@link runBlobStoreContract}.
 *
 * @category contract
 */
export interface BlobStoreContractOptions {
  /** Shown in test names, for example `"s3"`. */
  readonly name: string
  /**
   * Returns a Layer of a store. Called once per test; a scoped Layer is released after it.
   * The store may hold other blobs (a shared bucket): every test uses fresh random keys.
   */
  readonly makeLayer: () => Layer.Layer<BlobStore, unknown>
  /** Size in bytes of the large blob streamed through the store; default 8 MiB. */
  readonly largeBytes?: number
}

/**
 * Registers the contract every blob store must pass (docs/extending.md "Writing a blob
 * store") with vitest: bytes, size and SHA-256 kept exactly, large blobs streamed, ranges,
 * a `put` past `maxBytes` or with a failing source leaving nothing visible (nor replacing
 * the blob before it), nothing visible while a `put` is under way, `move`, `delete`, and
 * keys that are not blob keys refused.
 *
 * @category contract
 * @example
 * import { MemoryBlobStore } from "@switchboard/core"
 * import { runBlobStoreContract } from "@switchboard/storage-contract"
 *
 * runBlobStoreContract({ name: "memory", makeLayer: () => MemoryBlobStore.layer })
 */
export const runBlobStoreContract = (options: BlobStoreContractOptions): void => {
  const run = <A, E>(body: (store: BlobStoreService) => Effect.Effect<A, E>) =>
    Effect.flatMap(BlobStore, body).pipe(Effect.provide(options.makeLayer()))
  const prefix = () => `contract/${randomUUID()}`
  const largeBytes = options.largeBytes ?? 8 * 1024 * 1024

  describe(`blob store contract: ${options.name}`, () => {
    it.effect("keeps the bytes, and answers their size and SHA-256", () =>
      run((store) =>
        Effect.gen(function* () {
          const key = `${prefix()}/photo.jpg`
          const bytes = randomBytes(70_000)
          const written = yield* store.put(key, chunksOf(bytes, 16_384), { contentType: "image/jpeg" })
          expect(written).toEqual({ size: bytes.length, sha256: sha256(bytes) })
          expect(yield* store.head(key)).toEqual({ size: bytes.length })
          const content = yield* store.get(key)
          expect(content.size).toBe(bytes.length)
          expect(content.length).toBe(bytes.length)
          expect((yield* read(content.stream)).equals(bytes)).toBe(true)
        })
      ))

    it.effect("keeps an empty blob", () =>
      run((store) =>
        Effect.gen(function* () {
          const key = `${prefix()}/empty`
          expect(yield* store.put(key, chunksOf(Buffer.alloc(0), 1))).toEqual({ size: 0, sha256: sha256(Buffer.alloc(0)) })
          expect(yield* store.head(key)).toEqual({ size: 0 })
          expect((yield* read((yield* store.get(key)).stream)).length).toBe(0)
        })
      ))

    it.effect("streams a large blob in and out", () =>
      run((store) =>
        Effect.gen(function* () {
          const key = `${prefix()}/large.bin`
          const bytes = randomBytes(largeBytes)
          const written = yield* store.put(key, chunksOf(bytes, 65_536), { contentType: "application/octet-stream" })
          expect(written).toEqual({ size: bytes.length, sha256: sha256(bytes) })
          const content = yield* store.get(key)
          expect(sha256(yield* read(content.stream))).toBe(sha256(bytes))
        })
      ), 60_000)

    it.effect("reads a range, both ends included", () =>
      run((store) =>
        Effect.gen(function* () {
          const key = `${prefix()}/ranged`
          const bytes = randomBytes(10_000)
          yield* store.put(key, chunksOf(bytes, 4096))
          for (const range of [{ start: 0, end: 0 }, { start: 100, end: 4195 }, { start: 9_000, end: 9_999 }]) {
            const content = yield* store.get(key, { range })
            expect(content.size).toBe(bytes.length)
            expect(content.length).toBe(range.end - range.start + 1)
            expect((yield* read(content.stream)).equals(bytes.subarray(range.start, range.end + 1))).toBe(true)
          }
        })
      ))

    it.effect("a put past maxBytes fails BlobTooLarge and leaves nothing, nor replaces the blob before it", () =>
      run((store) =>
        Effect.gen(function* () {
          const fresh = `${prefix()}/fresh`
          const error = yield* Effect.flip(store.put(fresh, chunksOf(randomBytes(5_000), 1000), { maxBytes: 4_999 }))
          expect(error._tag).toBe("BlobTooLarge")
          expect(yield* store.head(fresh)).toBeUndefined()
          expect(yield* store.put(`${prefix()}/exact`, chunksOf(randomBytes(5_000), 1000), { maxBytes: 5_000 })).toMatchObject({ size: 5_000 })

          const kept = `${prefix()}/kept`
          const before = randomBytes(300)
          yield* store.put(kept, chunksOf(before, 100))
          expect((yield* Effect.flip(store.put(kept, chunksOf(randomBytes(2_000), 500), { maxBytes: 1_000 })))._tag).toBe("BlobTooLarge")
          expect((yield* read((yield* store.get(kept)).stream)).equals(before)).toBe(true)
        })
      ))

    it.effect("a put whose source fails fails BlobStoreError and leaves nothing", () =>
      run((store) =>
        Effect.gen(function* () {
          const key = `${prefix()}/broken`
          const error = yield* Effect.flip(store.put(key, failingAfter(randomBytes(3_000), 1000)))
          expect(error._tag).toBe("BlobStoreError")
          expect(yield* store.head(key)).toBeUndefined()
          expect((yield* Effect.flip(store.get(key)))._tag).toBe("BlobNotFound")
        })
      ))

    it.effect("shows nothing under the key while a put is under way", () =>
      run((store) =>
        Effect.gen(function* () {
          const key = `${prefix()}/slow`
          const gate = deferred()
          const firstRead = deferred()
          async function* slow() {
            yield randomBytes(1_000)
            firstRead.resolve()
            await gate.promise
            yield randomBytes(1_000)
          }
          const fiber = yield* Effect.fork(store.put(key, slow()))
          yield* Effect.promise(() => firstRead.promise)
          expect(yield* store.head(key)).toBeUndefined()
          gate.resolve()
          expect(Exit.isSuccess(yield* fiber.await)).toBe(true)
          expect(yield* store.head(key)).toEqual({ size: 2_000 })
        })
      ))

    it.effect("a put replaces the blob under its key", () =>
      run((store) =>
        Effect.gen(function* () {
          const key = `${prefix()}/replaced`
          yield* store.put(key, chunksOf(randomBytes(500), 500))
          const after = randomBytes(200)
          yield* store.put(key, chunksOf(after, 200))
          expect((yield* read((yield* store.get(key)).stream)).equals(after)).toBe(true)
        })
      ))

    it.effect("moves a blob onto another key, replacing it, and fails BlobNotFound for a missing one", () =>
      run((store) =>
        Effect.gen(function* () {
          const base = prefix()
          const bytes = randomBytes(1_500)
          yield* store.put(`${base}/tmp/attempt-1`, chunksOf(bytes, 500))
          yield* store.put(`${base}/final`, chunksOf(randomBytes(10), 10))
          yield* store.move(`${base}/tmp/attempt-1`, `${base}/final`)
          expect(yield* store.head(`${base}/tmp/attempt-1`)).toBeUndefined()
          expect((yield* read((yield* store.get(`${base}/final`)).stream)).equals(bytes)).toBe(true)
          expect((yield* Effect.flip(store.move(`${base}/tmp/attempt-1`, `${base}/other`)))._tag).toBe("BlobNotFound")
          expect(yield* store.head(`${base}/other`)).toBeUndefined()
        })
      ))

    it.effect("deletes a blob; deleting a missing key succeeds; a missing key is BlobNotFound to get, undefined to head", () =>
      run((store) =>
        Effect.gen(function* () {
          const key = `${prefix()}/deleted`
          yield* store.put(key, chunksOf(randomBytes(100), 100))
          yield* store.delete(key)
          yield* store.delete(key)
          expect(yield* store.head(key)).toBeUndefined()
          const missing = yield* Effect.flip(store.get(key))
          expect(missing).toMatchObject({ _tag: "BlobNotFound", key })
        })
      ))

    it.effect("refuses keys that are not blob keys, in every call, writing nothing", () =>
      run((store) =>
        Effect.gen(function* () {
          const base = prefix()
          for (const key of ["", "/absolute", `${base}/../escape`, `${base}//double`, `${base}/.hidden`, `${base}/a b`, `${base}/trailing/`, "x".repeat(513)]) {
            expect((yield* Effect.flip(store.put(key, chunksOf(randomBytes(10), 10))))._tag).toBe("BlobStoreError")
            expect((yield* Effect.flip(store.get(key)))._tag).toBe("BlobStoreError")
            expect((yield* Effect.flip(store.head(key)))._tag).toBe("BlobStoreError")
            expect((yield* Effect.flip(store.delete(key)))._tag).toBe("BlobStoreError")
            expect((yield* Effect.flip(store.move(key, `${base}/ok`)))._tag).toBe("BlobStoreError")
          }
          expect(yield* store.head(`${base}/ok`)).toBeUndefined()
        })
      ))
  })
}

/** A promise with its resolve function (Node 20 lacks `Promise.withResolvers`). */
const deferred = () => {
  let resolve: () => void = () => undefined
  const promise = new Promise<void>((done) => (resolve = done))
  return { promise, resolve }
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

/** `bytes` as a source of chunks of `size` bytes. */
async function* chunksOf(bytes: Buffer, size: number): AsyncGenerator<Uint8Array> {
  for (let offset = 0; offset < bytes.length; offset += size) yield bytes.subarray(offset, offset + size)
}

/** A source that yields `bytes` in chunks of `size`, then fails. */
async function* failingAfter(bytes: Buffer, size: number): AsyncGenerator<Uint8Array> {
  yield* chunksOf(bytes, size)
  throw new Error("the source broke")
}

/** Every byte of a stream, as one Buffer. */
const read = (stream: Readable) =>
  Effect.promise(async () => {
    const chunks: Array<Buffer> = []
    for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array))
    return Buffer.concat(chunks)
  })

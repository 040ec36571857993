import { Readable } from "node:stream"
import { Effect, Layer } from "effect"
import { BlobNotFound, BlobStore, type BlobStoreService } from "../storage/BlobStore.js"
import { blobCall, blobKeyProblem, measuredSource, putFailure } from "../storage/blobSupport.js"

/**
 * The in-memory {@link BlobStoreService}, plus `keys()`: the keys it holds, sorted (for tests
 * and diagnostics).
 *
 * @category storage
 */
export interface MemoryBlobStoreService extends BlobStoreService {
  readonly keys: () => ReadonlyArray<string>
}

/**
 * Builds an in-memory blob store: one `Map` of whole blobs inside this process, for tests
 * and `DATABASE_URL=memory:` (docs/media.md "Blob stores"). A `put` keeps its chunks apart
 * and makes the blob visible only once its source ended within `maxBytes`.
 *
 * @category constructors
 */
export const make = (): MemoryBlobStoreService => {
  const blobs = new Map<string, Buffer>()

  const checked = <A, E>(operation: string, keys: ReadonlyArray<string>, body: () => Effect.Effect<A, E>) => {
    const problem = blobKeyProblem(operation, keys)
    return problem === undefined ? Effect.suspend(body) : Effect.fail(problem)
  }

  return {
    put: (key, source, options) =>
      blobCall(
        "blobs.put",
        [key],
        async () => {
          const measured = measuredSource(source, options?.maxBytes)
          const chunks: Array<Uint8Array> = []
          for await (const chunk of measured.bytes) chunks.push(chunk)
          blobs.set(key, Buffer.concat(chunks))
          return measured.written()
        },
        (cause) => putFailure("blobs.put", cause)
      ),
    get: (key, options) =>
      checked("blobs.get", [key], () => {
        const blob = blobs.get(key)
        if (blob === undefined) return Effect.fail(new BlobNotFound({ key }))
        const bytes = options?.range === undefined ? blob : blob.subarray(options.range.start, options.range.end + 1)
        return Effect.succeed({ size: blob.length, length: bytes.length, stream: Readable.from([bytes], { objectMode: false }) })
      }),
    head: (key) =>
      checked("blobs.head", [key], () => {
        const blob = blobs.get(key)
        return Effect.succeed(blob === undefined ? undefined : { size: blob.length })
      }),
    delete: (key) => checked("blobs.delete", [key], () => Effect.sync(() => void blobs.delete(key))),
    move: (from, to) =>
      checked("blobs.move", [from, to], () => {
        const blob = blobs.get(from)
        if (blob === undefined) return Effect.fail(new BlobNotFound({ key: from }))
        blobs.delete(from)
        blobs.set(to, blob)
        return Effect.void
      }),
    keys: () => [...blobs.keys()].sort()
  }
}

/**
 * A Layer providing a fresh in-memory {@link BlobStore} each time it is built (see
 * {@link make}).
 *
 * @category layers
 */
export const layer: Layer.Layer<BlobStore> = Layer.sync(BlobStore, make)


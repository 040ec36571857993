import { createHash } from "node:crypto"
import { Effect } from "effect"
import { BlobStoreError, BlobTooLarge, type BlobWritten } from "./BlobStore.js"

// What every blob store shares: the rule of keys, and the counting and hashing of a source
// as it is read (docs/media.md "Blob stores").

/** One segment of a key: letters, digits, `.`, `_`, `-`, not starting with a dot. */
const SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/
/** The longest key accepted, in characters (S3 allows 1 024 bytes). */
const MAX_KEY_LENGTH = 512

/**
 * Whether `key` is a blob key: segments of `A–Z a–z 0–9 . _ -` joined by `/`, none empty
 * and none starting with a dot (so a file-system store cannot leave its directory, and its
 * own `.partial` directory is no key), at most 512 characters.
 *
 * @category storage
 */
export const isBlobKey = (key: string): boolean =>
  key.length > 0 && key.length <= MAX_KEY_LENGTH && key.split("/").every((segment) => SEGMENT.test(segment))

/**
 * The {@link BlobStoreError} of `operation` (the key in its cause) for the first of `keys`
 * that is not a blob key ({@link isBlobKey}), or `undefined` when all are: for a store's
 * calls to check their keys first.
 *
 * @category storage
 */
export const blobKeyProblem = (operation: string, keys: ReadonlyArray<string>): BlobStoreError | undefined => {
  const key = keys.find((candidate) => !isBlobKey(candidate))
  return key === undefined ? undefined : new BlobStoreError({ operation, cause: new Error(`Not a blob key: ${JSON.stringify(key)}`) })
}

/**
 * One call of a store that works with promises: fails with {@link blobKeyProblem}'s error
 * when a key is not a blob key, else runs `body` (given the fiber's `AbortSignal`), a
 * rejection becoming `failure(cause)` (by default a {@link BlobStoreError} of `operation`).
 *
 * @category storage
 */
export const blobCall = <A, E = never>(
  operation: string,
  keys: ReadonlyArray<string>,
  body: (signal: AbortSignal) => Promise<A>,
  failure: (cause: unknown) => E | BlobStoreError = (cause) => new BlobStoreError({ operation, cause })
): Effect.Effect<A, E | BlobStoreError> => {
  const problem = blobKeyProblem(operation, keys)
  return problem === undefined ? Effect.tryPromise({ try: body, catch: failure }) : Effect.fail(problem)
}

/**
 * A source read through a count and a SHA-256: `bytes` yields `source`'s chunks as they come
 * (as `Uint8Array`s; never more than one in memory) and throws {@link BlobTooLarge} as soon
 * as more than `maxBytes` were read; `written()` answers the size and hash once `bytes` has
 * ended; `failure()` the error `bytes` threw (the source's own, or {@link BlobTooLarge}),
 * if it threw, for a store whose client reports another error of its own on the way out.
 *
 * @category storage
 */
export const measuredSource = (
  source: AsyncIterable<Uint8Array>,
  maxBytes: number | undefined
): {
  readonly bytes: AsyncGenerator<Uint8Array>
  readonly written: () => BlobWritten
  readonly failure: () => unknown
} => {
  const hash = createHash("sha256")
  let size = 0
  let digest: string | undefined
  let thrown: unknown
  async function* bytes(): AsyncGenerator<Uint8Array> {
    try {
      for await (const chunk of source) {
        const view = typeof chunk === "string" ? Buffer.from(chunk) : chunk
        size += view.byteLength
        if (maxBytes !== undefined && size > maxBytes) throw new BlobTooLarge({ maxBytes })
        hash.update(view)
        yield view
      }
    } catch (cause) {
      thrown = cause
      throw cause
    }
    digest = hash.digest("hex")
  }
  return {
    bytes: bytes(),
    failure: () => thrown,
    written: () => {
      if (digest === undefined) throw new Error("measuredSource: written() before the source ended")
      return { size, sha256: digest }
    }
  }
}

/**
 * The error a failed `put` fails with: {@link BlobTooLarge} as thrown by
 * {@link measuredSource}, else a {@link BlobStoreError} of `operation` keeping the cause.
 *
 * @category storage
 */
export const putFailure = (operation: string, cause: unknown): BlobStoreError | BlobTooLarge =>
  cause instanceof BlobTooLarge ? cause : new BlobStoreError({ operation, cause })

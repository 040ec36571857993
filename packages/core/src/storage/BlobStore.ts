import type { Readable } from "node:stream"
import { Context, type Effect, Schema } from "effect"

/**
 * A blob store's infrastructure failure: a file-system or network call failed, or the
 * source handed to `put` failed while it was read. `operation` names the call (for example
 * `"blobs.put"`); `cause` keeps the underlying error for logs and is never exposed over HTTP
 * (docs/media.md "Blob stores").
 *
 * @category errors
 */
export class BlobStoreError extends Schema.TaggedError<BlobStoreError>()("BlobStoreError", {
  operation: Schema.String,
  cause: Schema.Defect
}) {
  override get message(): string {
    return `Blob store operation ${this.operation} failed`
  }
}

/**
 * `put` read more than its `maxBytes`: it stopped reading, and nothing was written under the
 * key (docs/media.md "Blob stores").
 *
 * @category errors
 */
export class BlobTooLarge extends Schema.TaggedError<BlobTooLarge>()("BlobTooLarge", {
  maxBytes: Schema.Number
}) {
  override get message(): string {
    return `The blob is larger than ${this.maxBytes} bytes`
  }
}

/**
 * No blob is stored under the key `get` or `move` named (docs/media.md "Blob stores").
 *
 * @category errors
 */
export class BlobNotFound extends Schema.TaggedError<BlobNotFound>()("BlobNotFound", {
  key: Schema.String
}) {
  override get message(): string {
    return `No blob is stored under ${this.key}`
  }
}

/**
 * Options of {@link BlobStoreService.put}:
 * - `contentType`: the MIME type, kept where the store has a place for it (S3's
 *   `Content-Type`); the media record is what answers with it;
 * - `maxBytes`: the most bytes to accept; past it `put` fails with {@link BlobTooLarge}.
 *
 * @category storage
 */
export interface BlobPutOptions {
  readonly contentType?: string
  readonly maxBytes?: number
}

/**
 * What `put` wrote: `size` in bytes and the SHA-256 of the bytes, lowercase hex.
 *
 * @category storage
 */
export interface BlobWritten {
  readonly size: number
  readonly sha256: string
}

/**
 * A range of bytes to read: `start` and `end` are offsets in bytes, both included (as HTTP's
 * `Range: bytes=start-end`), `0 ≤ start ≤ end < size`. The caller checks the range against
 * the blob's size (`head`) before asking.
 *
 * @category storage
 */
export interface BlobRange {
  readonly start: number
  readonly end: number
}

/**
 * A blob being read: `size` of the whole blob in bytes, `length` the bytes `stream` will
 * yield (the range's, or `size`), and `stream`, which the caller consumes or destroys
 * (destroying it ends the read and releases what the store holds open).
 *
 * @category storage
 */
export interface BlobContent {
  readonly size: number
  readonly length: number
  readonly stream: Readable
}

/**
 * Where media bytes live (docs/media.md "Blob stores"): a flat space of keys, each a path of
 * segments of `A–Z a–z 0–9 . _ -` joined by `/` (no empty segment, none starting with a
 * dot, at most 512 characters), for example `media/<organization>/<uuid>`; any other key
 * fails with {@link BlobStoreError}.
 *
 * - `put(key, source, options)`: reads `source` to its end, never holding the whole blob in
 *   memory, while counting and hashing it, and stores it under `key` (replacing what was
 *   there). Atomic: until `put` succeeds nothing is visible under `key` (or the previous blob
 *   still is), and when it fails — {@link BlobTooLarge} past `maxBytes`, {@link BlobStoreError}
 *   when the store or the source fails — nothing it wrote is left visible.
 * - `get(key, { range })`: the bytes, streamed; {@link BlobNotFound} when none.
 * - `head(key)`: the blob's `size` in bytes, or `undefined` when none.
 * - `delete(key)`: removes the blob; deleting a missing key succeeds.
 * - `move(from, to)`: makes the blob under `from` the one under `to` (replacing it) and
 *   removes `from`, atomically for readers of `to`; {@link BlobNotFound} when `from` has none.
 *
 * Implementations: `MemoryBlobStore` and `FileBlobStore` (here), `S3BlobStore`
 * (`@switchboard/blob-s3`). `runBlobStoreContract` of `@switchboard/storage-contract`
 * checks one.
 *
 * @category storage
 */
export interface BlobStoreService {
  readonly put: (
    key: string,
    source: AsyncIterable<Uint8Array>,
    options?: BlobPutOptions
  ) => Effect.Effect<BlobWritten, BlobStoreError | BlobTooLarge>
  readonly get: (
    key: string,
    options?: { readonly range?: BlobRange }
  ) => Effect.Effect<BlobContent, BlobStoreError | BlobNotFound>
  readonly head: (key: string) => Effect.Effect<{ readonly size: number } | undefined, BlobStoreError>
  readonly delete: (key: string) => Effect.Effect<void, BlobStoreError>
  readonly move: (from: string, to: string) => Effect.Effect<void, BlobStoreError | BlobNotFound>
}

/**
 * Tag of the {@link BlobStoreService}.
 *
 * @category storage
 */
export class BlobStore extends Context.Tag("@switchboard/core/BlobStore")<BlobStore, BlobStoreService>() {}

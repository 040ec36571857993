import {
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  S3Client,
  type S3ClientConfig
} from "@aws-sdk/client-s3"
import { Upload } from "@aws-sdk/lib-storage"
import { Readable } from "node:stream"
import { Effect, Layer } from "effect"
import {
  BlobNotFound,
  BlobStore,
  BlobStoreError,
  type BlobStoreService,
  blobCall,
  measuredSource,
  putFailure
} from "@switchboard/core"
import { parseS3Url, type S3Location } from "./url.js"

export { parseS3Url, type S3Location }


/**
 * Options of {@link layer} and {@link make}:
 * - `url`: `s3://bucket` or `s3://bucket/prefix` (the standalone server's `MEDIA_URL`);
 * - `client`: the S3 client's configuration, merged over the defaults. By default the AWS
 *   SDK reads its own variables: credentials (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
 *   profiles, roles), `AWS_REGION` (`us-east-1` when none), and the endpoint of an
 *   S3-compatible server from `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL`; path-style
 *   addressing (`forcePathStyle`) is on whenever an endpoint is set, as MinIO and the like
 *   need;
 * - `partSizeBytes`: the size of each part of a multipart upload (default 8 MiB, at least
 *   5 MiB); a blob smaller than one part is one `PutObject`.
 *
 * @category options
 */
export interface S3BlobStoreOptions {
  readonly url: string
  readonly client?: S3ClientConfig
  readonly partSizeBytes?: number
}

const MIN_PART_BYTES = 5 * 1024 * 1024
const DEFAULT_PART_BYTES = 8 * 1024 * 1024


/**
 * The client configuration {@link make} uses: `region` from `AWS_REGION` or `us-east-1`,
 * `forcePathStyle` when an endpoint is set (in `config` or by `AWS_ENDPOINT_URL_S3` /
 * `AWS_ENDPOINT_URL`), then `config` over them.
 *
 * @category options
 */
export const clientConfig = (config: S3ClientConfig = {}, environment: NodeJS.ProcessEnv = process.env): S3ClientConfig => {
  const endpoint = config.endpoint ?? environment["AWS_ENDPOINT_URL_S3"] ?? environment["AWS_ENDPOINT_URL"]
  return {
    region: environment["AWS_REGION"] ?? environment["AWS_DEFAULT_REGION"] ?? "us-east-1",
    ...(endpoint !== undefined && endpoint !== "" ? { forcePathStyle: true } : {}),
    ...config
  }
}

/** Whether an SDK error is S3's answer that no object has the key (404 `NoSuchKey`/`NotFound`). */
const isMissing = (cause: unknown): boolean => {
  const error = cause as { name?: string; $metadata?: { httpStatusCode?: number } } | undefined
  return error?.name === "NoSuchKey" || error?.name === "NotFound" || error?.$metadata?.httpStatusCode === 404
}

/** The size of the whole object, from a ranged answer's `Content-Range` (`bytes a-b/size`) or `Content-Length`. */
const objectSize = (contentRange: string | undefined, contentLength: number | undefined): number => {
  const total = contentRange === undefined ? undefined : /\/(\d+)$/.exec(contentRange)?.[1]
  return total !== undefined ? Number(total) : (contentLength ?? 0)
}

/** The bytes an answer holds (`Content-Range: bytes a-b/size`), the whole object without one. */
const answerRange = (contentRange: string | undefined, size: number): { start: number; end: number } => {
  const match = contentRange === undefined ? null : /^bytes (\d+)-(\d+)\//.exec(contentRange)
  return match === null ? { start: 0, end: size - 1 } : { start: Number(match[1]), end: Number(match[2]) }
}

/** `length` bytes of `body` after its first `skip` bytes; `body` is destroyed once they are read. */
const sliced = (body: Readable, skip: number, length: number): Readable =>
  Readable.from(
    (async function* () {
      let offset = 0
      let left = length
      try {
        for await (const chunk of body) {
          const bytes = chunk as Buffer
          const from = Math.max(0, skip - offset)
          offset += bytes.length
          if (from >= bytes.length) continue
          const part = bytes.subarray(from, from + left)
          left -= part.length
          yield part
          if (left === 0) return
        }
      } finally {
        body.destroy()
      }
    })(),
    { objectMode: false }
  )

/**
 * Builds an S3 blob store over `client` (docs/media.md "Blob stores"). A `put` streams
 * through `@aws-sdk/lib-storage`'s `Upload` (one `PutObject` for a blob under a part,
 * else a multipart upload, aborted on failure): S3 shows an object only once it is
 * complete, so readers see the whole blob or none. `move` is `CopyObject` then
 * `DeleteObject` (for blobs up to 5 GiB). Every failure of the SDK is a
 * {@link BlobStoreError} (its operation `blobs.put`, `blobs.get`…), a missing object
 * {@link BlobNotFound} where the port says so.
 *
 * @category constructors
 */
export const fromClient = (
  client: S3Client,
  location: S3Location,
  options: { readonly partSizeBytes?: number } = {}
): BlobStoreService => {
  const partSize = Math.max(MIN_PART_BYTES, options.partSizeBytes ?? DEFAULT_PART_BYTES)
  const objectKey = (key: string) => `${location.prefix}${key}`

  return {
    put: (key, source, putOptions) =>
      blobCall(
        "blobs.put",
        [key],
        async () => {
          const measured = measuredSource(source, putOptions?.maxBytes)
          const upload = new Upload({
            client,
            partSize,
            queueSize: 2,
            leavePartsOnError: false,
            params: {
              Bucket: location.bucket,
              Key: objectKey(key),
              Body: Readable.from(measured.bytes, { objectMode: false }),
              ...(putOptions?.contentType === undefined ? {} : { ContentType: putOptions.contentType })
            }
          })
          try {
            await upload.done()
          } catch (cause) {
            // The source's own error first: a failed abort of the multipart upload (some
            // S3-compatible servers refuse it) would otherwise hide it.
            throw measured.failure() ?? cause
          }
          return measured.written()
        },
        (cause) => putFailure("blobs.put", cause)
      ),
    get: (key, getOptions) =>
      blobCall(
        "blobs.get",
        [key],
        async (signal) => {
          const range = getOptions?.range
          const answer = await client.send(
            new GetObjectCommand({
              Bucket: location.bucket,
              Key: objectKey(key),
              ...(range === undefined ? {} : { Range: `bytes=${range.start}-${range.end}` })
            }),
            { abortSignal: signal }
          )
          const size = objectSize(answer.ContentRange, answer.ContentLength)
          const body = answer.Body as Readable
          if (range === undefined) return { size, length: size, stream: body }
          const length = range.end - range.start + 1
          // A server that answered other bytes than the range asked (s3rver ignores
          // `bytes=0-0`) is cut down to the range here.
          const answered = answerRange(answer.ContentRange, size)
          const exact = answered.start === range.start && answered.end === range.end
          return { size, length, stream: exact ? body : sliced(body, range.start - answered.start, length) }
        },
        (cause) => (isMissing(cause) ? new BlobNotFound({ key }) : new BlobStoreError({ operation: "blobs.get", cause }))
      ),
    head: (key) =>
      blobCall("blobs.head", [key], async (signal) => {
        try {
          const answer = await client.send(new HeadObjectCommand({ Bucket: location.bucket, Key: objectKey(key) }), {
            abortSignal: signal
          })
          return { size: answer.ContentLength ?? 0 }
        } catch (cause) {
          if (isMissing(cause)) return undefined
          throw cause
        }
      }),
    delete: (key) =>
      blobCall("blobs.delete", [key], async (signal) => {
        await client.send(new DeleteObjectCommand({ Bucket: location.bucket, Key: objectKey(key) }), { abortSignal: signal })
      }),
    move: (from, to) =>
      blobCall(
        "blobs.move",
        [from, to],
        async (signal) => {
          await client.send(
            new CopyObjectCommand({
              Bucket: location.bucket,
              Key: objectKey(to),
              // Keys are blob keys (no character that needs escaping but `/`, which stays).
              CopySource: `${location.bucket}/${objectKey(from)}`
            }),
            { abortSignal: signal }
          )
          await client.send(new DeleteObjectCommand({ Bucket: location.bucket, Key: objectKey(from) }), { abortSignal: signal })
        },
        (cause) => (isMissing(cause) ? new BlobNotFound({ key: from }) : new BlobStoreError({ operation: "blobs.move", cause }))
      )
  }
}

/**
 * Builds an S3 blob store from {@link S3BlobStoreOptions}, with a client of its own that
 * the scope destroys. Fails with {@link BlobStoreError} (operation `"blobs.open"`) when
 * `url` is not an `s3://` URL.
 *
 * @category constructors
 */
export const make = (options: S3BlobStoreOptions) =>
  Effect.gen(function* () {
    const location = yield* Effect.try({
      try: () => parseS3Url(options.url),
      catch: (cause) => new BlobStoreError({ operation: "blobs.open", cause })
    })
    const client = yield* Effect.acquireRelease(
      Effect.sync(() => new S3Client(clientConfig(options.client))),
      (client) => Effect.sync(() => client.destroy())
    )
    return fromClient(client, location, options)
  })

/**
 * A Layer of an S3 {@link BlobStore} (see {@link make}); its client is destroyed when the
 * Layer is released.
 *
 * @category layers
 * @example
 * import { S3BlobStore } from "@switchboard/blob-s3"
 *
 * // AWS_ENDPOINT_URL_S3=http://127.0.0.1:9000 for MinIO; credentials as the AWS SDK reads them.
 * const BlobStoreLive = S3BlobStore.layer({ url: "s3://switchboard-media/production" })
 */
export const layer = (options: S3BlobStoreOptions): Layer.Layer<BlobStore, BlobStoreError> =>
  Layer.scoped(BlobStore, make(options))

/**
 * A Layer of an S3 {@link BlobStore} over a client of yours (left open when the Layer is
 * released).
 *
 * @category layers
 */
export const layerFromClient = (
  client: S3Client,
  location: S3Location,
  options: { readonly partSizeBytes?: number } = {}
): Layer.Layer<BlobStore> => Layer.succeed(BlobStore, fromClient(client, location, options))

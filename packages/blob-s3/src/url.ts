/**
 * `@switchboard/blob-s3/url`: the bucket and prefix of an `s3://` URL, apart from the store
 * so that a program can check a configured URL without loading the AWS SDK (the standalone
 * server loads the store only when `MEDIA_URL` names a bucket: docs/media.md "Blob stores").
 * Also exported as `S3BlobStore.parseS3Url`.
 *
 * @packageDocumentation
 */
/**
 * Where the blobs go: a bucket, and a prefix every key is put under (`""`, or ending in
 * `/`).
 *
 * @category options
 */
export interface S3Location {
  readonly bucket: string
  readonly prefix: string
}

/**
 * Reads `s3://bucket/prefix` into a {@link S3Location}; throws a `TypeError` naming the
 * problem for anything else (a bucket name must be 3–63 lowercase letters, digits, `.`, `-`).
 *
 * @category options
 */
export const parseS3Url = (url: string): S3Location => {
  const match = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(url)
  if (match === null) throw new TypeError(`MEDIA_URL must be s3://bucket or s3://bucket/prefix, with a valid bucket name (got ${JSON.stringify(url)})`)
  const prefix = (match[2] ?? "").replace(/^\/+|\/+$/g, "")
  return { bucket: match[1]!, prefix: prefix === "" ? "" : `${prefix}/` }
}

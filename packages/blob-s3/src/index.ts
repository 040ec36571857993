/**
 * `@switchboard/blob-s3`: a blob store for Switchboard's media on S3 or any S3-compatible
 * server (MinIO, Cloudflare R2, Ceph…), built on the official AWS SDK v3 — the store for
 * several instances sharing their media (docs/media.md "Blob stores").
 *
 * @packageDocumentation
 */
export * as S3BlobStore from "./S3BlobStore.js"

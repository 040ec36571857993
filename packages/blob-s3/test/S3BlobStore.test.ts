import { describe, expect, it } from "@effect/vitest"
import { randomBytes, randomUUID } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { GetObjectCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3"
import { Effect } from "effect"
import { afterAll } from "vitest"
import { runBlobStoreContract } from "@switchboard/storage-contract"
import { S3BlobStore } from "@switchboard/blob-s3"

// The contract and the S3 store's own rules against an S3-compatible server started here
// (s3rver, in this process, on a free port, its files in a temporary directory).

const BUCKET = "switchboard-test"
const credentials = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" }

interface Started {
  readonly endpoint: string
  readonly close: () => Promise<void>
}

let started: Started | undefined
let reason: string | undefined
const directory = mkdtempSync(join(tmpdir(), "switchboard-s3rver-"))

/** Starts s3rver with the test bucket, or keeps why it could not. */
const startServer = async (): Promise<void> => {
  try {
    const { default: S3rver } = await import("s3rver")
    const server = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory, configureBuckets: [{ name: BUCKET, configs: [] }] })
    // Bounded: an await at a file's top level has no test timeout, and a server that
    // never answers would hold the whole run.
    const { port } = (await Promise.race([
      server.run(),
      new Promise((_resolve, reject) => setTimeout(() => reject(new Error("did not start within 20 s")), 20_000).unref())
    ])) as { port: number }
    started = { endpoint: `http://127.0.0.1:${port}`, close: () => server.close() }
  } catch (cause) {
    reason = `no S3-compatible server could start here (s3rver: ${(cause as Error).message}), so the S3 blob store tests are skipped`
    console.warn(`skipped: ${reason}`)
  }
}

await startServer()
const skip = started === undefined

afterAll(async () => {
  await started?.close()
  rmSync(directory, { recursive: true, force: true })
})

const clientConfig = () => ({ endpoint: started?.endpoint ?? "", credentials, region: "us-east-1" })
/** A client of the test's own, to see what the store wrote (the oracle). */
const inspector = () => new S3Client(S3BlobStore.clientConfig(clientConfig(), {}))

if (!skip) {
  runBlobStoreContract({
    name: "s3 (s3rver)",
    makeLayer: () => S3BlobStore.layer({ url: `s3://${BUCKET}/contract-${randomUUID()}`, client: clientConfig() }),
    largeBytes: 12 * 1024 * 1024
  })
}

async function* chunks(bytes: Buffer, size: number): AsyncGenerator<Uint8Array> {
  for (let offset = 0; offset < bytes.length; offset += size) yield bytes.subarray(offset, offset + size)
}

async function* brokenAfter(bytes: Buffer): AsyncGenerator<Uint8Array> {
  yield* chunks(bytes, 65_536)
  throw new Error("connection reset")
}

const objectsUnder = async (client: S3Client, prefix: string) =>
  ((await client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }))).Contents ?? []).map((object) => object.Key)

describe.skipIf(skip)("S3BlobStore on s3rver", () => {
  it.scoped("puts each key under the URL's prefix, with its content type", () =>
    Effect.gen(function* () {
      const prefix = `prefixed-${randomUUID()}`
      const store = yield* S3BlobStore.make({ url: `s3://${BUCKET}/${prefix}/`, client: clientConfig() })
      yield* store.put("media/org/one", chunks(Buffer.from("hello"), 5), { contentType: "text/plain" })
      const client = inspector()
      expect(yield* Effect.promise(() => objectsUnder(client, `${prefix}/`))).toEqual([`${prefix}/media/org/one`])
      const object = yield* Effect.promise(() => client.send(new GetObjectCommand({ Bucket: BUCKET, Key: `${prefix}/media/org/one` })))
      expect(object.ContentType).toBe("text/plain")
    }))

  it.scoped("a multipart upload whose source breaks, or that passes maxBytes, leaves no object", () =>
    Effect.gen(function* () {
      const prefix = `broken-${randomUUID()}`
      const store = yield* S3BlobStore.make({ url: `s3://${BUCKET}/${prefix}`, client: clientConfig(), partSizeBytes: 5 * 1024 * 1024 })
      const broken = yield* Effect.flip(store.put("a", brokenAfter(randomBytes(11 * 1024 * 1024))))
      expect(broken._tag).toBe("BlobStoreError")
      const large = yield* Effect.flip(store.put("b", chunks(randomBytes(11 * 1024 * 1024), 65_536), { maxBytes: 10 * 1024 * 1024 }))
      expect(large).toMatchObject({ _tag: "BlobTooLarge", maxBytes: 10 * 1024 * 1024 })
      expect(yield* Effect.promise(() => objectsUnder(inspector(), `${prefix}/`))).toEqual([])
    }), 60_000)

  it.scoped("a store whose bucket does not exist fails BlobStoreError, not a defect", () =>
    Effect.gen(function* () {
      const store = yield* S3BlobStore.make({ url: `s3://no-such-bucket-${Date.now()}`, client: clientConfig() })
      const error = yield* Effect.flip(store.put("a", chunks(Buffer.from("x"), 1)))
      expect(error).toMatchObject({ _tag: "BlobStoreError", operation: "blobs.put" })
      expect(error.message).not.toContain("S3RVER")
    }))
})

describe("S3BlobStore options", () => {
  it("reads s3://bucket and s3://bucket/prefix, and refuses anything else naming the problem", () => {
    expect(S3BlobStore.parseS3Url("s3://media")).toEqual({ bucket: "media", prefix: "" })
    expect(S3BlobStore.parseS3Url("s3://media/a/b/")).toEqual({ bucket: "media", prefix: "a/b/" })
    expect(S3BlobStore.parseS3Url("s3://my.media-bucket/x")).toEqual({ bucket: "my.media-bucket", prefix: "x/" })
    for (const url of ["https://media", "s3://", "s3://UPPER", "media/prefix", "s3://a"]) {
      expect(() => S3BlobStore.parseS3Url(url)).toThrow(/MEDIA_URL must be s3:\/\/bucket/)
    }
  })

  it("turns path-style on when an endpoint is set (option or the SDK's variables), not for AWS itself", () => {
    expect(S3BlobStore.clientConfig({}, {})).toEqual({ region: "us-east-1" })
    expect(S3BlobStore.clientConfig({}, { AWS_REGION: "eu-west-1" })).toEqual({ region: "eu-west-1" })
    expect(S3BlobStore.clientConfig({}, { AWS_ENDPOINT_URL_S3: "http://127.0.0.1:9000" })).toMatchObject({ forcePathStyle: true })
    expect(S3BlobStore.clientConfig({}, { AWS_ENDPOINT_URL: "http://minio:9000" })).toMatchObject({ forcePathStyle: true })
    expect(S3BlobStore.clientConfig({ endpoint: "http://r2" }, {})).toMatchObject({ forcePathStyle: true, endpoint: "http://r2" })
    expect(S3BlobStore.clientConfig({ endpoint: "http://r2", forcePathStyle: false }, {})).toMatchObject({ forcePathStyle: false })
  })

  it.effect("an invalid url fails BlobStoreError blobs.open", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(Effect.scoped(S3BlobStore.make({ url: "http://nope" })))
      expect(error).toMatchObject({ _tag: "BlobStoreError", operation: "blobs.open" })
    }))
})

import { randomUUID } from "node:crypto"
import { ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { WhatsAppSimulator } from "@switchboard/whatsapp-simulator"
import {
  api,
  assertBuilt,
  dropTemporarySchemas,
  killServers,
  mediaContent,
  organizationWithChannel,
  pdfBytes,
  postgresUrl,
  removeTemporaryDirectories,
  sha256Hex,
  startS3rver,
  startOneNumberSimulator,
  startServer,
  until,
  type S3Server
} from "./helpers.js"

// Media through the built server on PostgreSQL (a schema of its own) with its files in an
// S3 bucket (MEDIA_URL=s3://bucket/prefix, s3rver started here, the AWS SDK's own
// variables), the WhatsApp simulator as Meta (docs/media.md):
// (a) a customer's 20 MB PDF arrives, is fetched into the bucket and ends stored with its
//     SHA-256; GET /media/{uuid}/content answers the same bytes, and a range of them;
// (b) a 20 MB PDF uploaded with POST /media and sent twice with POST /send/media by its media_uuid
//     reaches the simulator, which holds the same bytes.
// The bucket holds the two files under the prefix, no temporary blob.
// Skipped, saying why, without POSTGRES_URL or where s3rver cannot start.

const TOKEN = "EAAGmediaS3Token2Lk8Jh5Gf1Ds6"
const APP_SECRET = "media-s3-app-secret-6c1d"
const PHONE_NUMBER_ID = "106540352242922"
const BUCKET = "switchboard-e2e"
const CUSTOMER = "+16505551234"
const CREDENTIALS = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" }

const started = postgresUrl === undefined ? { reason: "POSTGRES_URL is not set" } : await startS3rver(BUCKET)
const s3: S3Server | undefined = "endpoint" in started ? started : undefined
if (!("endpoint" in started)) console.warn(`standalone-server: the PostgreSQL + S3 media test is skipped: ${started.reason}`)

let simulator: WhatsAppSimulator
beforeAll(async () => {
  if (s3 === undefined) return
  assertBuilt()
  simulator = await startOneNumberSimulator({ phoneNumberId: PHONE_NUMBER_ID, token: TOKEN, appSecret: APP_SECRET })
})
afterAll(async () => {
  killServers()
  await simulator?.close()
  await s3?.close()
  removeTemporaryDirectories()
  await dropTemporarySchemas()
})

/** The keys of the bucket's objects under `prefix`, sorted, with their sizes. */
const objectsUnder = async (prefix: string): Promise<Array<{ key: string; size: number }>> => {
  const client = new S3Client({ endpoint: s3!.endpoint, region: "us-east-1", forcePathStyle: true, credentials: CREDENTIALS })
  try {
    const listed = await client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `${prefix}/` }))
    return (listed.Contents ?? []).map((object) => ({ key: object.Key!.slice(prefix.length + 1), size: object.Size! })).sort((a, b) => a.key.localeCompare(b.key))
  } finally {
    client.destroy()
  }
}

describe.skipIf(s3 === undefined)("media on PostgreSQL and S3 through the standalone server", () => {
  it("a customer's 20 MB PDF is stored in the bucket and downloaded whole and by range; an uploaded PDF sent by media_uuid reaches Meta byte for byte", async () => {
    const { env, apiKey } = await organizationWithChannel({ store: "postgres", simulatorUrl: simulator.url, phoneNumberId: PHONE_NUMBER_ID, token: TOKEN, throughputMps: 80 })
    const prefix = `e2e-${randomUUID()}`
    const server = await startServer({
      ...env,
      MEDIA_URL: `s3://${BUCKET}/${prefix}`,
      AWS_ENDPOINT_URL_S3: s3!.endpoint,
      AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
      AWS_REGION: "us-east-1",
      WHATSAPP_APP_SECRET: APP_SECRET,
      REDIS_URL: ""
    })
    simulator.configure({ webhookUrl: `${server.baseUrl}/webhooks/whatsapp` })

    // (a) The customer's file, fetched in the background into the bucket.
    const statement = pdfBytes(20 * 1024 * 1024)
    const { delivery } = await simulator.postInboundMedia({
      from: CUSTOMER,
      profile_name: "Sheena Nelson",
      type: "document",
      mime_type: "application/pdf",
      bytes: statement,
      filename: "statement.pdf",
      caption: "My statement"
    })
    expect(delivery.status).toBe(200)
    const listed = await api(server.baseUrl, apiKey, "GET", "/media?source=inbound")
    const inboundUuid: string = listed.json.data.media[0].uuid
    let inbound: any
    await until(
      async () => {
        inbound = (await api(server.baseUrl, apiKey, "GET", `/media/${inboundUuid}`)).json.data
        expect(inbound.status, `${inbound.status}: ${JSON.stringify(inbound.failure)}`).toMatch(/^(pending|stored)$/)
        return inbound.status === "stored"
      },
      "the customer's PDF to be stored",
      60_000,
      200
    )
    expect(inbound).toMatchObject({ type: "document", mime_type: "application/pdf", size: statement.length, sha256: sha256Hex(statement), filename: "statement.pdf", source: "inbound" })
    const whole = await mediaContent(server.baseUrl, apiKey, inboundUuid)
    expect(whole.status).toBe(200)
    expect(whole.headers.get("content-length")).toBe(String(statement.length))
    expect(whole.headers.get("etag")).toBe(`"${sha256Hex(statement)}"`)
    expect(whole.bytes.length).toBe(statement.length)
    expect(sha256Hex(whole.bytes)).toBe(sha256Hex(statement))
    const start = 5 * 1024 * 1024 + 7
    const end = start + 1024 * 1024 - 1
    const range = await mediaContent(server.baseUrl, apiKey, inboundUuid, { range: `bytes=${start}-${end}` })
    expect(range.status).toBe(206)
    expect(range.headers.get("content-range")).toBe(`bytes ${start}-${end}/${statement.length}`)
    expect(range.bytes.equals(statement.subarray(start, end + 1))).toBe(true)
    const suffix = await mediaContent(server.baseUrl, apiKey, inboundUuid, { range: "bytes=-100" })
    expect(suffix.status).toBe(206)
    expect(suffix.bytes.equals(statement.subarray(statement.length - 100))).toBe(true)

    // (b) A PDF of the business's, uploaded, then sent by its media_uuid: the send queue
    // uploads it to Meta through the channel first.
    const offer = pdfBytes(20 * 1024 * 1024)
    const form = new FormData()
    form.append("file", new Blob([offer], { type: "application/pdf" }), "offer.pdf")
    const uploaded = await api(server.baseUrl, apiKey, "POST", "/media", form)
    expect(uploaded.status).toBe(200)
    expect(uploaded.json.data).toMatchObject({ status: "stored", source: "upload", size: offer.length, sha256: sha256Hex(offer), filename: "offer.pdf" })
    const sent = await api(server.baseUrl, apiKey, "POST", "/send/media", {
      phone: CUSTOMER,
      media: { media_uuid: uploaded.json.data.uuid, caption: "Our offer" }
    })
    expect(sent.status, JSON.stringify(sent.json)).toBe(200)
    expect(sent.json.data).toMatchObject({ status: "queued" })
    const send = await simulator.waitFor(() => simulator.sends(PHONE_NUMBER_ID).find((entry) => (entry.body as any)?.type === "document"), "the document send", 30_000)
    const body = send.body as { type: string; document: { id: string; caption: string; filename: string } }
    expect(body).toMatchObject({ type: "document", document: { id: expect.any(String), caption: "Our offer", filename: "offer.pdf" } })
    const atMeta = await fetch(`${simulator.url}/_simulator/media/${body.document.id}/content`)
    expect(atMeta.status).toBe(200)
    expect(sha256Hex(Buffer.from(await atMeta.arrayBuffer()))).toBe(sha256Hex(offer))
    expect(simulator.media.get(body.document.id)).toMatchObject({ source: "upload", mime_type: "application/pdf", file_size: offer.length, sha256: sha256Hex(offer) })
    let message: any
    await until(
      async () => {
        message = (await api(server.baseUrl, apiKey, "GET", `/messages/${sent.json.data.message_id}`)).json.data
        return message.status === "sent"
      },
      "the message to be sent",
      30_000,
      200
    )
    expect(message.media).toMatchObject({ media_uuid: uploaded.json.data.uuid, type: "document", mime_type: "application/pdf", caption: "Our offer" })

    // A second send of the file through the same channel reuses Meta's id: one upload.
    const again = await api(server.baseUrl, apiKey, "POST", "/send/media", { phone: CUSTOMER, media: { media_uuid: uploaded.json.data.uuid } })
    expect(again.status, JSON.stringify(again.json)).toBe(200)
    const documentSends = () => simulator.sends(PHONE_NUMBER_ID).filter((entry) => (entry.body as any)?.type === "document")
    await simulator.waitFor(() => documentSends().length === 2 || undefined, "the second document send", 30_000)
    expect(documentSends().map((entry) => (entry.body as any).document.id)).toEqual([body.document.id, body.document.id])
    expect(simulator.received({ route: "media_upload" }).length).toBe(1)
    expect(simulator.media.list().filter((media) => media.source === "upload").length).toBe(1)

    // The bucket: the two files under the prefix, whole; no temporary blob left.
    const objects = await objectsUnder(prefix)
    expect(objects.map(({ key }) => key.replace(/^media\/[^/]+\//, "media/<org>/")).sort()).toEqual(
      [`media/<org>/${inboundUuid}`, `media/<org>/${uploaded.json.data.uuid}`].sort()
    )
    expect(Object.fromEntries(objects.map(({ key, size }) => [key.split("/").pop(), size]))).toEqual({
      [inboundUuid]: statement.length,
      [uploaded.json.data.uuid]: offer.length
    })
    expect(server.output().stderr).not.toMatch(/"level":"(ERROR|FATAL)"/)
  }, 120_000)
})

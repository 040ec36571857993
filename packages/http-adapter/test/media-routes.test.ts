import { createHash, randomBytes } from "node:crypto"
import { mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, afterEach, describe, expect, it } from "vitest"
import { FileBlobStore, generateSecretKey } from "@switchboard/core"
import { bearer, createOrganization, expectEnvelope, listen, makeHandler, makeSharedStorage, updatePlan } from "./helpers.js"

// The media routes (docs/media.md) over a real socket, on the memory store and a
// file-system blob store: uploads checked against their bytes and limits, records, the
// bytes by range, deletion, signed links, and isolation between organizations.

const directory = mkdtempSync(join(tmpdir(), "switchboard-media-routes-"))
afterAll(() => rmSync(directory, { recursive: true, force: true }))

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of closers.splice(0)) await close()
})

/** A PDF's first bytes, then `size` random ones. */
const pdf = (size = 10_000) => Buffer.concat([Buffer.from("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "latin1"), randomBytes(size)])
/** A PNG's signature and header chunk, then an IDAT chunk of `size` random bytes. */
const png = (size = 1_000) => {
  const length = Buffer.alloc(4)
  length.writeUInt32BE(size)
  return Buffer.concat([
    Buffer.from("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489", "hex"),
    length,
    Buffer.from("IDAT"),
    randomBytes(size),
    randomBytes(4)
  ])
}
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

const served = async (options: { readonly media?: boolean } = {}) => {
  const storage = makeSharedStorage()
  const { key, organization } = await createOrganization(storage)
  const other = await createOrganization(storage, { name: "Other" })
  const storeDirectory = mkdtempSync(join(directory, "store-"))
  const handler = makeHandler(storage, {
    secretKey: generateSecretKey(),
    ...(options.media === false ? {} : { media: { store: FileBlobStore.layer({ directory: storeDirectory }) } })
  })
  const server = await listen(handler)
  closers.push(async () => {
    await server.close()
    await handler.dispose()
  })
  const call = async (method: string, path: string, init: { body?: string | FormData; headers?: Record<string, string>; apiKey?: string | null } = {}) => {
    const apiKey = init.apiKey === undefined ? key.api_key : init.apiKey
    return fetch(`${server.base}${path}`, {
      method,
      headers: { ...(apiKey === null ? {} : bearer(apiKey)), ...init.headers },
      ...(init.body === undefined ? {} : { body: init.body })
    })
  }
  const json = async (method: string, path: string, init: Parameters<typeof call>[2] = {}) => {
    const response = await call(method, path, init)
    return expectEnvelope(response.status, await response.text())
  }
  const upload = (bytes: Uint8Array, mime: string, filename = "file.bin", extra: Record<string, string> = {}, apiKey?: string) => {
    const form = new FormData()
    for (const [name, value] of Object.entries(extra)) form.append(name, value)
    form.append("file", new Blob([bytes], { type: mime }), filename)
    return json("POST", "/media", { body: form, ...(apiKey === undefined ? {} : { apiKey }) })
  }
  return { call, json, upload, base: server.base, organization, other, storage, storeDirectory }
}

describe("POST /media and reading it back", () => {
  it("a PDF is stored: the record, then its bytes with ETag, Content-Disposition, Range 206 and 416", async () => {
    const api = await served()
    const bytes = pdf(50_000)
    const uploaded = await api.upload(bytes, "application/pdf", "Offer – März.pdf")
    expect(uploaded.status).toBe(200)
    const record = uploaded.data as Record<string, unknown>
    expect(record).toMatchObject({
      type: "document",
      mime_type: "application/pdf",
      size: bytes.length,
      sha256: sha256(bytes),
      filename: "Offer – März.pdf",
      status: "stored",
      failure: null,
      source: "upload",
      message_uuid: null
    })
    expect((await api.json("GET", `/media/${record.uuid}`)).data).toEqual(record)
    const whole = await api.call("GET", `/media/${record.uuid}/content`)
    expect(whole.status).toBe(200)
    expect(whole.headers.get("content-type")).toBe("application/pdf")
    expect(whole.headers.get("content-length")).toBe(String(bytes.length))
    expect(whole.headers.get("etag")).toBe(`"${sha256(bytes)}"`)
    expect(whole.headers.get("accept-ranges")).toBe("bytes")
    expect(whole.headers.get("content-disposition")).toContain("filename*=UTF-8''Offer%20%E2%80%93%20M%C3%A4rz.pdf")
    expect(Buffer.from(await whole.arrayBuffer()).equals(bytes)).toBe(true)
    const part = await api.call("GET", `/media/${record.uuid}/content`, { headers: { range: "bytes=10-19" } })
    expect(part.status).toBe(206)
    expect(part.headers.get("content-range")).toBe(`bytes 10-19/${bytes.length}`)
    expect(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(10, 20))).toBe(true)
    const tail = await api.call("GET", `/media/${record.uuid}/content`, { headers: { range: "bytes=-5" } })
    expect(Buffer.from(await tail.arrayBuffer()).equals(bytes.subarray(bytes.length - 5))).toBe(true)
    const outside = await api.call("GET", `/media/${record.uuid}/content`, { headers: { range: `bytes=${bytes.length}-` } })
    expect(outside.status).toBe(416)
    expect(outside.headers.get("content-range")).toBe(`bytes */${bytes.length}`)
    expect(expectEnvelope(416, await outside.text()).errors[0]?.code).toBe("range_not_satisfiable")
  })

  it("bytes that are not the declared type, a type media may not have, non-UTF-8 text and an empty file are 400 unsupported_media_type; nothing is kept", async () => {
    const api = await served()
    for (const [bytes, mime] of [
      [pdf(), "image/png"],
      [png(), "application/pdf"],
      [randomBytes(100), "application/zip"],
      [Buffer.from([0xff, 0xfe, 0xfd, 0x00, 0xc3]), "text/plain"],
      [Buffer.alloc(0), "application/pdf"]
    ] as const) {
      const refused = await api.upload(bytes, mime)
      expect([refused.status, refused.errors[0]?.code]).toEqual([400, "unsupported_media_type"])
    }
    expect(((await api.json("GET", "/media")).data as { media: Array<unknown> }).media).toEqual([])
    const text = await api.upload(Buffer.from("Grüße aus Köln\n"), "text/plain; charset=utf-8", "note.txt")
    expect(text.status).toBe(200)
  })

  it("a file over its type's limit is 413 payload_too_large; a type field not matching the MIME type is 400; no file part is 400", async () => {
    const api = await served()
    const big = await api.upload(png(5 * 1024 * 1024), "image/png")
    expect([big.status, big.errors[0]?.code]).toEqual([413, "payload_too_large"])
    const mismatch = await api.upload(png(), "image/png", "a.png", { type: "document" })
    expect([mismatch.status, mismatch.errors[0]?.field]).toEqual([400, "type"])
    const form = new FormData()
    form.append("type", "image")
    const missing = await api.json("POST", "/media", { body: form })
    expect([missing.status, missing.errors[0]?.field]).toEqual([400, "file"])
    expect(((await api.json("GET", "/media")).data as { media: Array<unknown> }).media).toEqual([])
  })

  it("media_bytes_limit: an upload past it is 403 media_bytes_limit_reached and nothing is kept", async () => {
    const api = await served()
    await updatePlan(api.storage, api.organization.id, { media_bytes_limit: 20_000 })
    expect((await api.upload(pdf(15_000), "application/pdf")).status).toBe(200)
    const over = await api.upload(pdf(15_000), "application/pdf")
    expect([over.status, over.errors[0]?.code]).toEqual([403, "media_bytes_limit_reached"])
    expect(((await api.json("GET", "/media")).data as { media: Array<unknown> }).media.length).toBe(1)
  })

  it("another organization's media is 404 on every route; GET /media lists one organization's, newest first, by cursor", async () => {
    const api = await served()
    const first = (await api.upload(pdf(), "application/pdf")).data as { uuid: string }
    const second = (await api.upload(png(), "image/png")).data as { uuid: string }
    const otherKey = api.other.key.api_key
    for (const [method, path] of [["GET", `/media/${first.uuid}`], ["GET", `/media/${first.uuid}/content`], ["DELETE", `/media/${first.uuid}`], ["POST", `/media/${first.uuid}/links`]]) {
      const answer = await api.json(method!, path!, { apiKey: otherKey, ...(method === "POST" ? { body: "{}", headers: { "content-type": "application/json" } } : {}) })

      expect([method, path, answer.status]).toEqual([method, path, 404])
    }
    const page = await api.json("GET", "/media?limit=1")
    expect(page.data).toMatchObject({ media: [{ uuid: second.uuid }], pagination: { mode: "cursor", limit: 1, has_more: true } })
    const next = (page.data as { pagination: { next_cursor: string } }).pagination.next_cursor
    expect((await api.json("GET", `/media?limit=1&cursor=${next}`)).data).toMatchObject({ media: [{ uuid: first.uuid }], pagination: { has_more: false, next_cursor: null } })
    expect((await api.json("GET", "/media?source=inbound")).data).toMatchObject({ media: [] })
    expect((await api.json("GET", "/media", { apiKey: otherKey })).data).toMatchObject({ media: [] })
  })

  it("DELETE removes the bytes and keeps the record deleted; its content is then 410", async () => {
    const api = await served()
    const record = (await api.upload(pdf(), "application/pdf")).data as { uuid: string }
    const deleted = await api.json("DELETE", `/media/${record.uuid}`)
    expect(deleted.data).toMatchObject({ uuid: record.uuid, status: "deleted" })
    const gone = await api.json("GET", `/media/${record.uuid}/content`)
    expect([gone.status, gone.errors[0]?.code]).toEqual([410, "media_unavailable"])
    expect((await api.json("GET", "/media?status=deleted")).data).toMatchObject({ media: [{ uuid: record.uuid }] })
  })

  it("a stored file sent by media_uuid without a channel is recorded at once by the recording transport (nothing leaves)", async () => {
    const api = await served()
    const uploaded = await api.upload(pdf(), "application/pdf", "offer.pdf")
    const uuid = (uploaded.data as { uuid: string }).uuid
    const sent = await api.json("POST", "/send/media", {
      body: JSON.stringify({ phone: "+14155550100", media: { media_uuid: uuid } }),
      headers: { "content-type": "application/json" }
    })
    expect([sent.status, (sent.data as { status: string }).status]).toEqual([200, "sent"])
    const message = await api.json("GET", `/messages/${(sent.data as { message_id: string }).message_id}`)
    expect(message.data).toMatchObject({ type: "media", status: "sent", media: { media_uuid: uuid, type: "document", filename: "offer.pdf" } })
  })

  it("without a blob store the media routes answer 503 media_not_configured", async () => {
    const api = await served({ media: false })
    const answer = await api.call("GET", "/media")
    expect(answer.status).toBe(503)
    expect(JSON.parse(await answer.text())).toMatchObject({ status: 503, success: false, errors: [{ code: "media_not_configured" }] })
  })
})

describe("POST /media with an Idempotency-Key", () => {
  const uploadWithKey = async (api: Awaited<ReturnType<typeof served>>, bytes: Uint8Array, key: string, filename = "offer.pdf") => {
    const form = new FormData()
    form.append("file", new Blob([bytes], { type: "application/pdf" }), filename)
    const response = await api.call("POST", "/media", { body: form, headers: { "Idempotency-Key": key } })
    return { replayed: response.headers.get("idempotent-replayed"), ...expectEnvelope(response.status, await response.text()) }
  }
  const blobFiles = (api: Awaited<ReturnType<typeof served>>) =>
    readdirSync(api.storeDirectory, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile())

  it("a retry with the key and the same file answers the first record again; another file or name under it is 422; one record and one blob are kept", async () => {
    const api = await served()
    const bytes = pdf()
    const first = await uploadWithKey(api, bytes, "upload-1")
    expect([first.status, first.replayed]).toEqual([200, null])
    const again = await uploadWithKey(api, bytes, "upload-1")
    expect([again.status, again.replayed]).toEqual([200, "true"])
    expect((again.data as { uuid: string }).uuid).toBe((first.data as { uuid: string }).uuid)
    for (const [file, name] of [[pdf(), "offer.pdf"], [bytes, "renamed.pdf"]] as const) {
      const reused = await uploadWithKey(api, file, "upload-1", name)
      expect([reused.status, reused.errors[0]?.code]).toEqual([422, "idempotency_key_reused"])
    }
    const listed = (await api.json("GET", "/media")).data as { media: Array<{ uuid: string }> }
    expect(listed.media.map((media) => media.uuid)).toEqual([(first.data as { uuid: string }).uuid])
    expect(blobFiles(api).length).toBe(1)
    const content = await api.call("GET", `/media/${(first.data as { uuid: string }).uuid}/content`)
    expect(sha256(new Uint8Array(await content.arrayBuffer()))).toBe(sha256(bytes))
  })

  it("a refused upload keeps nothing and leaves the key free; a malformed key is 400 before anything is stored", async () => {
    const api = await served()
    await updatePlan(api.storage, api.organization.id, { media_bytes_limit: 5_000 })
    const bytes = pdf(8_000)
    const refused = await uploadWithKey(api, bytes, "upload-2")
    expect([refused.status, refused.errors[0]?.code]).toEqual([403, "media_bytes_limit_reached"])
    expect(blobFiles(api).length).toBe(0)
    await updatePlan(api.storage, api.organization.id, { media_bytes_limit: null })
    const accepted = await uploadWithKey(api, bytes, "upload-2")
    expect([accepted.status, accepted.replayed]).toEqual([200, null])
    const malformed = await uploadWithKey(api, pdf(), "two words")
    expect([malformed.status, malformed.errors[0]?.code]).toEqual([400, "invalid_idempotency_key"])
    expect(blobFiles(api).length).toBe(1)
  })
})

describe("signed links", () => {
  it("a link answers the bytes without a key until it expires; a changed signature or expiry is 403; no key and no signature is 401", async () => {
    const api = await served()
    const bytes = png(2_000)
    const record = (await api.upload(bytes, "image/png")).data as { uuid: string }
    const created = await api.json("POST", `/media/${record.uuid}/links`, {
      body: JSON.stringify({ expires_in: 60 }),
      headers: { "content-type": "application/json" }
    })
    expect(created.status).toBe(200)
    const { url, expires_at } = created.data as { url: string; expires_at: string }
    expect(Date.parse(expires_at) - Date.now()).toBeGreaterThan(55_000)
    expect(url.startsWith(`${api.base}/media/${record.uuid}/content?expires=`)).toBe(true)
    const opened = await fetch(url)
    expect(opened.status).toBe(200)
    expect(Buffer.from(await opened.arrayBuffer()).equals(bytes)).toBe(true)
    const tampered = url.replace(/signature=(.)/, (_, first: string) => `signature=${first === "A" ? "B" : "A"}`)
    const refused = await fetch(tampered)
    expect([refused.status, expectEnvelope(403, await refused.text()).errors[0]?.code]).toEqual([403, "invalid_signature"])
    const later = url.replace(/expires=(\d+)/, (_, expires: string) => `expires=${Number(expires) + 1000}`)
    expect((await fetch(later)).status).toBe(403)
    const bare = await fetch(`${api.base}/media/${record.uuid}/content`)
    expect(bare.status).toBe(401)
    const tooLong = await api.json("POST", `/media/${record.uuid}/links`, { body: JSON.stringify({ expires_in: 3_601 }), headers: { "content-type": "application/json" } })
    expect(tooLong.status).toBe(400)
  })

  it("a link past its time is 403 link_expired", async () => {
    const api = await served()
    const record = (await api.upload(png(), "image/png")).data as { uuid: string }
    const created = await api.json("POST", `/media/${record.uuid}/links`, { body: JSON.stringify({ expires_in: 1 }), headers: { "content-type": "application/json" } })
    const { url } = created.data as { url: string }
    await new Promise((resolve) => setTimeout(resolve, 1_100))
    const expired = await fetch(url)
    expect([expired.status, expectEnvelope(403, await expired.text()).errors[0]?.code]).toEqual([403, "link_expired"])
  })
})

describe("the blob store's files", () => {
  it("leaves no temporary file behind a refused upload", async () => {
    const api = await served()
    await api.upload(pdf(), "image/png")
    const leftovers = readdirSync(api.storeDirectory, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile())
    expect(leftovers.map((entry) => entry.name)).toEqual([])
  })
})

describe("the media option", () => {
  it("refuses a malformed fetch setting when the handler is created, naming it", () => {
    const store = FileBlobStore.layer({ directory: mkdtempSync(join(directory, "store-")) })
    const create = (fetch: Record<string, unknown>) => () => makeHandler(makeSharedStorage(), { media: { store, fetch } })
    expect(create({ retryDelaysMs: [] })).toThrow(/media\.fetch\.retryDelaysMs/)
    expect(create({ retentionDays: 0 })).toThrow(/media\.fetch\.retentionDays/)
    for (const leaseMs of [999, Number.NaN, "60000"]) expect(create({ leaseMs })).toThrow(/media\.fetch\.leaseMs must be a number of milliseconds of at least 1000/)
    const handler = create({ leaseMs: 1_000 })()
    return handler.dispose()
  })
})

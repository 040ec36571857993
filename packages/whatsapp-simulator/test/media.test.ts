import { createHash, randomBytes } from "node:crypto"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { connectSimulator, DOWNLOAD_URL_LIFETIME_MS, startSimulator, type WhatsAppSimulator } from "../src/index.js"
import { graph, startReceiver } from "./helpers.js"

// Meta's media, as the simulator plays it over real sockets: the look-up by media id, the
// short-lived download URL, uploads (multipart, streamed), media ids checked on sends, the
// scripted failures of each, and the control API's copy of the bytes.

const TOKEN = "EAAGsimulator-test-token-0001"
const OTHER_TOKEN = "EAAGsimulator-other-token-0002"
const ID = "106540352242922"
const OTHER_ID = "106540352249999"

let simulator: WhatsAppSimulator
let receiver: Awaited<ReturnType<typeof startReceiver>>
beforeAll(async () => {
  receiver = await startReceiver()
  simulator = await startSimulator({
    webhookUrl: receiver.url,
    appSecret: "media-secret",
    numbers: [
      { phone_number_id: ID, display_phone_number: "+1 555-078-3881", waba_id: "102290129340398", access_token: TOKEN },
      { phone_number_id: OTHER_ID, display_phone_number: "+1 555-078-3882", waba_id: "102290129340398", access_token: OTHER_TOKEN }
    ]
  })
})
afterEach(() => {
  simulator.reset()
  receiver.deliveries.length = 0
})
afterAll(async () => {
  await simulator.close()
  await receiver.close()
})

const hex = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

/** `GET url` with a bearer token: status, headers and the body's bytes. */
const download = async (url: string, token: string | null) => {
  const response = await fetch(url, { headers: token === null ? {} : { authorization: `Bearer ${token}` } })
  return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) }
}

/** An upload as Meta's docs show it: `file`, `type`, `messaging_product` in one multipart body. */
const upload = async (
  parts: { readonly bytes?: Uint8Array; readonly type?: string; readonly product?: string; readonly filename?: string },
  token = TOKEN,
  id = ID
) => {
  const form = new FormData()
  if (parts.bytes !== undefined) form.append("file", new Blob([parts.bytes], { type: parts.type ?? "application/octet-stream" }), parts.filename ?? "file.bin")
  if (parts.type !== undefined) form.append("type", parts.type)
  form.append("messaging_product", parts.product ?? "whatsapp")
  const response = await fetch(`${simulator.url}/v21.0/${id}/media`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: form })
  return { status: response.status, json: (await response.json()) as any }
}

describe("a customer's media: the look-up and its download URL", () => {
  it("answers the record with a download URL that serves the exact bytes with the number's token", async () => {
    const bytes = randomBytes(300_000)
    const media = await simulator.registerMedia({ mime_type: "image/jpeg", bytes, filename: "photo.jpg" })
    expect(media).toMatchObject({ phone_number_id: ID, mime_type: "image/jpeg", file_size: bytes.length, sha256: hex(bytes), source: "inbound" })
    expect(media.id).toMatch(/^\d{16}$/)
    expect(Buffer.from(media.sha256_base64, "base64").toString("hex")).toBe(media.sha256)

    const lookup = await graph(simulator.url, `/v21.0/${media.id}`, TOKEN)
    expect(lookup.status).toBe(200)
    expect(lookup.json).toEqual({
      messaging_product: "whatsapp",
      url: expect.stringMatching(new RegExp(`^${simulator.url}/_media/`)),
      mime_type: "image/jpeg",
      sha256: hex(bytes),
      file_size: bytes.length,
      id: media.id
    })
    const fetched = await download(lookup.json.url, TOKEN)
    expect(fetched.status).toBe(200)
    expect(fetched.headers.get("content-type")).toBe("image/jpeg")
    expect(fetched.headers.get("content-length")).toBe(String(bytes.length))
    expect(fetched.bytes.equals(bytes)).toBe(true)
    expect(simulator.received().map((entry) => entry.route)).toEqual(["media_lookup", "media_download"])
  })

  it("refuses the look-up and the download to a token that is not the media's number's, and to no token", async () => {
    const media = await simulator.registerMedia({ mime_type: "audio/ogg", bytes: randomBytes(10) })
    const foreign = await graph(simulator.url, `/v21.0/${media.id}`, OTHER_TOKEN)
    expect(foreign.status).toBe(400)
    expect(foreign.json.error).toMatchObject({ code: 100, error_subcode: 33 })
    expect((await graph(simulator.url, `/v21.0/${media.id}`, null)).status).toBe(401)
    const { json } = await graph(simulator.url, `/v21.0/${media.id}`, TOKEN)
    expect((await download(json.url, OTHER_TOKEN)).status).toBe(401)
    expect((await download(json.url, null)).status).toBe(401)
    expect((await download(json.url, TOKEN)).status).toBe(200)
  })

  it("a download URL ends after 5 minutes: 404, and a new look-up gives a working one", async () => {
    const media = await simulator.registerMedia({ mime_type: "application/pdf", bytes: randomBytes(100), filename: "a.pdf" })
    const { json } = await graph(simulator.url, `/v21.0/${media.id}`, TOKEN)
    const token = new URL(json.url).pathname.split("/").pop()!
    expect(simulator.media.redeem(token, Date.now() + DOWNLOAD_URL_LIFETIME_MS + 1)).toBeUndefined()
    expect((await download(json.url, TOKEN)).status).toBe(404)
    const again = await graph(simulator.url, `/v21.0/${media.id}`, TOKEN)
    expect((await download(again.json.url, TOKEN)).status).toBe(200)
    expect((await download(`${simulator.url}/_media/not-a-token`, TOKEN)).status).toBe(404)
  })

  it("scripts the look-up and the download: refusals, HTTP statuses, and a connection closed mid-stream", async () => {
    const bytes = randomBytes(200_000)
    const media = await simulator.registerMedia({ mime_type: "video/mp4", bytes })
    simulator.script.enqueue([{ code: 131052 }, { http_status: 503 }], "media_lookup")
    expect((await graph(simulator.url, `/v21.0/${media.id}`, TOKEN)).json.error.code).toBe(131052)
    expect((await graph(simulator.url, `/v21.0/${media.id}`, TOKEN)).status).toBe(503)
    const { json } = await graph(simulator.url, `/v21.0/${media.id}`, TOKEN)
    simulator.script.enqueue([{ http_status: 500 }, { drop: "mid_stream" }], "media_download")
    expect((await download(json.url, TOKEN)).status).toBe(500)
    // Headers and half the bytes, then the socket is destroyed: reading the body fails.
    const response = await fetch(json.url, { headers: { authorization: `Bearer ${TOKEN}` } })
    expect(response.status).toBe(200)
    await expect(response.arrayBuffer()).rejects.toThrow()
    expect(simulator.received({ route: "media_download" }).at(-1)!.answer).toEqual({ dropped: "mid_stream" })
    expect((await download(json.url, TOKEN)).bytes.equals(bytes)).toBe(true)
  })

  it("scripts a slow download: bytes_per_second sends the whole file no faster than that, and a cut one slowly", async () => {
    const bytes = randomBytes(200_000)
    const media = await simulator.registerMedia({ mime_type: "application/pdf", bytes })
    expect(() => simulator.script.enqueue([{ bytes_per_second: 0 }], "media_download")).toThrow(/bytes_per_second/)
    simulator.script.enqueue([{ bytes_per_second: 100_000 }], "media_download")
    const { json } = await graph(simulator.url, `/v21.0/${media.id}`, TOKEN)
    const started = performance.now()
    const response = await fetch(json.url, { headers: { authorization: `Bearer ${TOKEN}` } })
    expect(response.headers.get("content-length")).toBe(String(bytes.length))
    expect(Buffer.from(await response.arrayBuffer()).equals(bytes)).toBe(true)
    // A lower bound only (a busy machine makes it longer, never shorter): the last of the
    // 5 000-byte slices leaves 1.95 s after the first at 100 000 bytes a second.
    expect(performance.now() - started).toBeGreaterThanOrEqual(1_900)
    await simulator.waitFor(() => simulator.received({ route: "media_download" }).at(-1)!.answer !== null, "the download's answer")
    expect(simulator.received({ route: "media_download" }).at(-1)!.answer).toEqual({ status: 200, body: { media_id: media.id, file_size: bytes.length } })
    // Throttled and cut: the first half, slowly, then the socket closes.
    simulator.script.enqueue([{ bytes_per_second: 400_000, drop: "mid_stream" }], "media_download")
    const cut = await fetch(json.url, { headers: { authorization: `Bearer ${TOKEN}` } })
    await expect(cut.arrayBuffer()).rejects.toThrow()
    await simulator.waitFor(() => simulator.received({ route: "media_download" }).at(-1)!.answer !== null, "the cut download's answer")
    expect(simulator.received({ route: "media_download" }).at(-1)!.answer).toEqual({ dropped: "mid_stream" })
  })

  it("postInboundMedia registers the file and posts the signed message with its id, type and base64 sha256", async () => {
    const bytes = randomBytes(5_000)
    const { media } = await simulator.postInboundMedia({ from: "+1 650-555-1234", profile_name: "Ana", type: "document", mime_type: "application/pdf", bytes, filename: "invoice.pdf", caption: "Invoice" })
    const message = JSON.parse(receiver.deliveries[0]!.body).entry[0].changes[0].value.messages[0]
    expect(message).toMatchObject({ type: "document", document: { id: media.id, mime_type: "application/pdf", sha256: media.sha256_base64, filename: "invoice.pdf", caption: "Invoice" } })
  })
})

describe("POST /{version}/{phone_number_id}/media", () => {
  it("streams the file in, answers {id}, and keeps its name, type, size and sha256 (never the bytes) in the record", async () => {
    const bytes = randomBytes(700_000)
    const answer = await upload({ bytes, type: "image/png", filename: "chart.png" })
    expect(answer).toEqual({ status: 200, json: { id: expect.stringMatching(/^\d{16}$/) } })
    const media = simulator.media.get(answer.json.id)!
    expect(media).toMatchObject({ phone_number_id: ID, mime_type: "image/png", file_size: bytes.length, sha256: hex(bytes), filename: "chart.png", source: "upload" })
    const entry = simulator.received({ route: "media_upload" })[0]!
    expect(entry.body).toEqual({ messaging_product: "whatsapp", type: "image/png", file: { filename: "chart.png", mime_type: "image/png", file_size: bytes.length, sha256: hex(bytes) } })
    expect((await simulator.media.bytes(media.id)).equals(bytes)).toBe(true)
  })

  it("refuses what Meta refuses, keeping nothing: no messaging_product, no file, no type, a type it does not take, a file over its type's limit", async () => {
    const cases: Array<[Parameters<typeof upload>[0], number, RegExp]> = [
      [{ bytes: randomBytes(10), type: "image/jpeg", product: "" }, 100, /messaging_product/],
      [{ type: "image/jpeg" }, 100, /file/],
      [{ bytes: randomBytes(10) }, 100, /type/],
      [{ bytes: randomBytes(10), type: "image/gif" }, 131053, /Unsupported media type image\/gif/],
      [{ bytes: randomBytes(5 * 1024 * 1024 + 1), type: "image/jpeg" }, 131053, /5242880 bytes allowed for image\/jpeg/],
      [{ bytes: randomBytes(500 * 1024 + 1), type: "image/webp" }, 131053, /512000 bytes/]
    ]
    for (const [parts, code, details] of cases) {
      const answer = await upload(parts)
      expect(answer.status).toBe(400)
      expect(answer.json.error.code).toBe(code)
      expect(JSON.stringify(answer.json.error)).toMatch(details)
    }
    expect(simulator.media.list()).toEqual([])
    const notMultipart = await graph(simulator.url, `/v21.0/${ID}/media`, TOKEN, { file: "x" })
    expect(notMultipart.json.error.code).toBe(100)
  })

  it("checks the token and the number first, and follows the upload's script (keeping nothing when it refuses)", async () => {
    expect((await upload({ bytes: randomBytes(10), type: "image/jpeg" }, "EAAG-unknown")).status).toBe(401)
    expect((await upload({ bytes: randomBytes(10), type: "image/jpeg" }, OTHER_TOKEN, ID)).json.error).toMatchObject({ code: 100, error_subcode: 33 })
    simulator.script.enqueue([{ code: 131053, message: "(#131053) Media upload error" }], "media_upload")
    const refused = await upload({ bytes: randomBytes(10), type: "image/jpeg" })
    expect(refused.json.error).toMatchObject({ code: 131053, message: "(#131053) Media upload error" })
    expect(simulator.media.list()).toEqual([])
    expect((await upload({ bytes: randomBytes(10), type: "image/jpeg" })).status).toBe(200)
  })
})

describe("sends naming a media id", () => {
  const mediaSend = (id: unknown) => ({ messaging_product: "whatsapp", to: "16505551234", type: "image", image: { id, caption: "Here" } })

  it("are sent when the id is an upload of the sending number, refused 131009 otherwise", async () => {
    const mine = (await upload({ bytes: randomBytes(10), type: "image/jpeg" })).json.id
    const theirs = (await upload({ bytes: randomBytes(10), type: "image/jpeg" }, OTHER_TOKEN, OTHER_ID)).json.id
    const inbound = (await simulator.registerMedia({ mime_type: "image/jpeg", bytes: randomBytes(10) })).id
    const sent = await graph(simulator.url, `/v21.0/${ID}/messages`, TOKEN, mediaSend(mine))
    expect(sent.json.messages[0].id).toMatch(/^wamid\./)
    for (const id of [theirs, inbound, "1234567890123456", 42]) {
      const refused = await graph(simulator.url, `/v21.0/${ID}/messages`, TOKEN, mediaSend(id))
      expect(refused.status).toBe(400)
      expect(refused.json.error.code).toBe(131009)
    }
    const byLink = await graph(simulator.url, `/v21.0/${ID}/messages`, TOKEN, { messaging_product: "whatsapp", to: "16505551234", type: "image", image: { link: "https://example.com/a.jpg" } })
    expect(byLink.status).toBe(200)
  })
})

describe("the control API's media", () => {
  it("registers a file streamed in, lists media, and returns the bytes a send referred to", async () => {
    const client = connectSimulator(simulator.url)
    const bytes = randomBytes(64_000)
    const registered = await client.registerMedia(bytes, { mime_type: "audio/ogg", filename: "voice.ogg" })
    expect(registered).toMatchObject({ mime_type: "audio/ogg", file_size: bytes.length, sha256: hex(bytes), filename: "voice.ogg", source: "inbound" })
    const uploaded = (await upload({ bytes: randomBytes(20), type: "application/pdf" })).json.id
    expect((await client.media()).map((media) => media.id)).toEqual([registered.id, uploaded])
    expect((await client.mediaContent(registered.id)).equals(bytes)).toBe(true)
    await expect(client.mediaContent("404")).rejects.toThrow(/404/)
    await expect(client.registerMedia(bytes, { mime_type: "audio/ogg", phone_number_id: "999" })).rejects.toThrow(/no number 999/)
  })

  it("reset forgets every media and removes its files", async () => {
    const media = await simulator.registerMedia({ mime_type: "image/jpeg", bytes: randomBytes(10) })
    simulator.reset()
    expect(simulator.media.list()).toEqual([])
    expect((await graph(simulator.url, `/v21.0/${media.id}`, TOKEN)).status).toBe(400)
  })
})

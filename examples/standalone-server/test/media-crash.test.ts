import { statSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { WhatsAppSimulator } from "@switchboard/whatsapp-simulator"
import {
  api,
  assertBuilt,
  filesUnder,
  killServers,
  mediaContent,
  organizationWithChannel,
  pdfBytes,
  removeTemporaryDirectories,
  sha256Hex,
  startOneNumberSimulator,
  startServer,
  temporaryDirectory,
  until,
  type RunningServer
} from "./helpers.js"

// A customer's 50 MB document fetched by the built server on a SQLite file, its files in
// MEDIA_DIR, the WhatsApp simulator as Meta serving the file slowly (docs/media.md "Inbound"):
// the server is SIGKILLed in the middle of the download (its partial file under
// MEDIA_DIR/.partial growing), and a second process on the same file and directory takes
// the fetch over once the lease (SWITCHBOARD_MEDIA_FETCH_LEASE_MS, 3 s here) lapses.
// Throughout, the file is never visible half-written: GET /media/{uuid}/content answers 409
// media_not_ready until the record is stored, then the whole file; nothing but a whole file
// ever exists under the media's key; the killed attempt's partial file is gone after the
// restart.

const TOKEN = "EAAGmediaCrashToken7Qw2Er9Ty4"
const APP_SECRET = "media-crash-app-secret-3b8e"
const PHONE_NUMBER_ID = "106540352242922"
const SIZE = 50 * 1024 * 1024
/** The first download's pace: 4 MiB a second, so the kill lands in its first quarter. */
const SLOW = 4 * 1024 * 1024

let simulator: WhatsAppSimulator
beforeAll(async () => {
  assertBuilt()
  simulator = await startOneNumberSimulator({ phoneNumberId: PHONE_NUMBER_ID, token: TOKEN, appSecret: APP_SECRET })
})
afterAll(async () => {
  killServers()
  removeTemporaryDirectories()
  await simulator.close()
})

describe("SIGKILL during a 50 MB inbound download", () => {
  it("shows no half file, then a second process fetches it again once the lease lapses and stores it whole; no partial file is left", async () => {
    const { env, apiKey } = await organizationWithChannel({ simulatorUrl: simulator.url, phoneNumberId: PHONE_NUMBER_ID, token: TOKEN, throughputMps: 80 })
    const mediaDirectory = temporaryDirectory()
    const serverEnv = {
      ...env,
      MEDIA_DIR: mediaDirectory,
      WHATSAPP_APP_SECRET: APP_SECRET,
      SWITCHBOARD_MEDIA_FETCH_LEASE_MS: "3000",
      // Rate-limit counters in the SQLite file even when the caller's environment names a Redis.
      REDIS_URL: ""
    }
    const partials = join(mediaDirectory, ".partial")
    /** Every file under MEDIA_DIR but the partial files of puts in progress. */
    const blobs = () => filesUnder(mediaDirectory).filter((path) => !path.startsWith(".partial"))
    /**
     * Fails when a blob is not the whole file: a put is atomic, so the temporary blob of an
     * attempt and the media's own appear whole or not at all.
     */
    const noHalfBlob = () => {
      for (const path of blobs()) {
        const size = statSync(join(mediaDirectory, path), { throwIfNoEntry: false })?.size
        if (size !== undefined) expect(size, `${path} has ${size} bytes`).toBe(SIZE)
      }
    }

    const first = await startServer(serverEnv)
    simulator.configure({ webhookUrl: `${first.baseUrl}/webhooks/whatsapp` })
    const file = pdfBytes(SIZE)
    simulator.script.enqueue([{ bytes_per_second: SLOW }], "media_download")
    const { delivery } = await simulator.postInboundMedia({
      from: "+16505551234",
      profile_name: "Sheena Nelson",
      type: "document",
      mime_type: "application/pdf",
      bytes: file,
      filename: "contract.pdf"
    })
    expect(delivery.status).toBe(200)
    const listed = await api(first.baseUrl, apiKey, "GET", "/media?source=inbound")
    expect(listed.json.data.media).toHaveLength(1)
    const uuid: string = listed.json.data.media[0].uuid

    // The first process is downloading: a partial file grows; the media is not ready.
    const partialBytes = () => filesUnder(partials).reduce((sum, name) => sum + (statSync(join(partials, name), { throwIfNoEntry: false })?.size ?? 0), 0)
    await until(
      () => {
        noHalfBlob()
        return partialBytes() >= SLOW
      },
      "the first download's partial file to pass 4 MiB",
      20_000,
      50
    )
    const pending = await mediaContent(first.baseUrl, apiKey, uuid)
    expect(pending.status).toBe(409)
    expect(JSON.parse(pending.bytes.toString("utf8")).errors[0].code).toBe("media_not_ready")

    first.child.kill("SIGKILL")
    expect(await first.exited).toBe("SIGKILL")
    const leftBehind = filesUnder(partials)
    expect(leftBehind).toHaveLength(1)
    expect(partialBytes()).toBeLessThan(SIZE)
    expect(blobs(), "nothing under a key after the kill").toEqual([])

    // A second process on the same file and directory: the fetch starts again once the lease lapses.
    const second: RunningServer = await startServer(serverEnv)
    let answers = 0
    await until(
      async () => {
        noHalfBlob()
        const record = (await api(second.baseUrl, apiKey, "GET", `/media/${uuid}`)).json.data
        const content = await mediaContent(second.baseUrl, apiKey, uuid)
        answers++
        if (content.status === 200) {
          expect(content.bytes.length, "a download of the media is the whole file").toBe(SIZE)
          expect(sha256Hex(content.bytes)).toBe(sha256Hex(file))
        } else {
          expect(content.status).toBe(409)
          expect(JSON.parse(content.bytes.toString("utf8")).errors[0].code).toBe("media_not_ready")
          expect(record.status).toBe("pending")
        }
        return record.status === "stored" && content.status === 200
      },
      "the second process to store the file",
      60_000,
      200
    )
    expect(answers).toBeGreaterThan(0)
    const stored = (await api(second.baseUrl, apiKey, "GET", `/media/${uuid}`)).json.data
    expect(stored).toMatchObject({ status: "stored", size: SIZE, sha256: sha256Hex(file), filename: "contract.pdf", mime_type: "application/pdf", source: "inbound" })
    // Two downloads: the one cut by the kill, and the one that stored the file.
    expect(simulator.received({ route: "media_download" })).toHaveLength(2)

    // What is left under MEDIA_DIR: the media's file, whole; no partial, no temporary blob.
    expect(filesUnder(partials), "the killed attempt's partial file is removed").toEqual([])
    const [only, ...others] = blobs()
    expect(others).toEqual([])
    expect(only).toMatch(new RegExp(`^media/[^/]+/${uuid}$`))
    expect(statSync(join(mediaDirectory, only!)).size).toBe(SIZE)
    expect(second.output().stderr).not.toMatch(/"level":"(ERROR|FATAL)"/)
  }, 90_000)
})

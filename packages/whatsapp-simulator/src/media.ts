import { createHash, randomBytes, randomInt } from "node:crypto"
import { createReadStream, createWriteStream, mkdtempSync, rmSync, type ReadStream } from "node:fs"
import { readFile, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { pipeline } from "node:stream/promises"

/**
 * One media file the simulator holds, as Meta would: a customer's file it delivers by id
 * (`source: "inbound"`, registered through `registerMedia` or the control API) or a
 * business's upload (`source: "upload"`, `POST /{version}/{phone_number_id}/media`):
 * - `id`: Meta's media id (digits);
 * - `phone_number_id`: the number it belongs to (only that number's tokens reach it);
 * - `mime_type`, `file_size` (bytes), `sha256` (lowercase hex, as the media look-up answers
 *   it) and `sha256_base64` (the same digest in base64, as a message webhook carries it);
 * - `filename`: the upload's or registration's file name, when given;
 * - `created_at_ms`: when it was stored (ms since the epoch).
 *
 * The bytes live in a temporary file of the simulator's, never in memory.
 *
 * @category media
 */
export interface SimulatedMedia {
  readonly id: string
  readonly phone_number_id: string
  readonly mime_type: string
  readonly file_size: number
  readonly sha256: string
  readonly sha256_base64: string
  readonly filename: string | null
  readonly source: "inbound" | "upload"
  readonly created_at_ms: number
}

/** A media type of WhatsApp. */
export type MediaKind = "image" | "video" | "audio" | "document" | "sticker"

const MiB = 1024 * 1024

/**
 * The MIME types Meta accepts for uploads, with their kind and size limit in bytes: image
 * (jpeg, png) 5 MiB; video (mp4, 3gpp) 16 MiB; audio (aac, amr, mpeg, mp4, ogg) 16 MiB;
 * document (plain text, PDF, Office formats) 100 MiB; sticker (webp) 500 KiB (Meta: 100 KiB
 * static, 500 KiB animated; the simulator does not tell them apart).
 *
 * @category media
 */
export const UPLOAD_TYPES: Readonly<Record<string, { readonly kind: MediaKind; readonly maxBytes: number }>> = {
  "image/jpeg": { kind: "image", maxBytes: 5 * MiB },
  "image/png": { kind: "image", maxBytes: 5 * MiB },
  "video/mp4": { kind: "video", maxBytes: 16 * MiB },
  "video/3gpp": { kind: "video", maxBytes: 16 * MiB },
  "audio/aac": { kind: "audio", maxBytes: 16 * MiB },
  "audio/amr": { kind: "audio", maxBytes: 16 * MiB },
  "audio/mpeg": { kind: "audio", maxBytes: 16 * MiB },
  "audio/mp4": { kind: "audio", maxBytes: 16 * MiB },
  "audio/ogg": { kind: "audio", maxBytes: 16 * MiB },
  "text/plain": { kind: "document", maxBytes: 100 * MiB },
  "application/pdf": { kind: "document", maxBytes: 100 * MiB },
  "application/msword": { kind: "document", maxBytes: 100 * MiB },
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": { kind: "document", maxBytes: 100 * MiB },
  "application/vnd.ms-excel": { kind: "document", maxBytes: 100 * MiB },
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": { kind: "document", maxBytes: 100 * MiB },
  "application/vnd.ms-powerpoint": { kind: "document", maxBytes: 100 * MiB },
  "application/vnd.openxmlformats-officedocument.presentationml.presentation": { kind: "document", maxBytes: 100 * MiB },
  "image/webp": { kind: "sticker", maxBytes: 500 * 1024 }
}

/** The largest file the simulator takes at all (a customer's file over it is Meta's 131052), in bytes. */
export const MAX_MEDIA_BYTES = 100 * MiB

/** How long a download URL of the media look-up works, in ms (Meta: 5 minutes). */
export const DOWNLOAD_URL_LIFETIME_MS = 5 * 60_000

/** A fresh media id in Meta's form: 16 digits. */
export const newMediaId = (): string => `${randomInt(1, 10)}${String(randomInt(0, 1e9)).padStart(9, "0")}${String(randomInt(0, 1e6)).padStart(6, "0")}`

/** A MIME type without its parameters, lowercase (`"image/JPEG; x=y"` → `"image/jpeg"`). */
export const essenceOf = (mimeType: string): string => mimeType.split(";")[0]!.trim().toLowerCase()

/**
 * The simulator's media: files in a temporary directory of its own (made on the first
 * file, removed by {@link MediaLibrary.close}), their records, and the short-lived download
 * tokens of the media look-up.
 *
 * @category media
 */
export class MediaLibrary {
  private directory: string | null = null
  private readonly records = new Map<string, SimulatedMedia>()
  private readonly tokens = new Map<string, { readonly id: string; readonly expiresAt: number }>()

  /**
   * Streams `source` into a file of its own, hashing it, and keeps it under a fresh id.
   * Answers `"too_large"` (and keeps nothing) past `maxBytes` (default
   * {@link MAX_MEDIA_BYTES}); a failing source rejects and keeps nothing.
   */
  async add(
    source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
    info: {
      readonly phone_number_id: string
      readonly mime_type: string
      readonly filename?: string | null
      readonly source: SimulatedMedia["source"]
      readonly maxBytes?: number
    }
  ): Promise<SimulatedMedia | "too_large"> {
    const id = newMediaId()
    const path = this.pathOf(id)
    const hash = createHash("sha256")
    const maxBytes = info.maxBytes ?? MAX_MEDIA_BYTES
    let size = 0
    let tooLarge = false
    async function* counted() {
      for await (const chunk of source) {
        size += chunk.byteLength
        if (size > maxBytes) {
          tooLarge = true
          throw new Error("too large")
        }
        hash.update(chunk)
        yield chunk
      }
    }
    try {
      await pipeline(counted(), createWriteStream(path))
    } catch (error) {
      await rm(path, { force: true })
      if (tooLarge) return "too_large"
      throw error
    }
    const digest = hash.digest()
    const media: SimulatedMedia = {
      id,
      phone_number_id: info.phone_number_id,
      mime_type: essenceOf(info.mime_type),
      file_size: size,
      sha256: digest.toString("hex"),
      sha256_base64: digest.toString("base64"),
      filename: info.filename ?? null,
      source: info.source,
      created_at_ms: Date.now()
    }
    this.records.set(id, media)
    return media
  }

  /** The media with this id, if any. */
  get(id: string): SimulatedMedia | undefined {
    return this.records.get(id)
  }

  /** Every media held, oldest first. */
  list(): ReadonlyArray<SimulatedMedia> {
    return [...this.records.values()]
  }

  /** Forgets the media `id` and removes its file (an upload refused after it was read). */
  remove(id: string): void {
    if (this.records.delete(id) && this.directory !== null) rmSync(join(this.directory, id), { force: true })
  }

  /** Sets the MIME type of `id` (an upload's declared `type`, known once every part is read). */
  retype(id: string, mimeType: string): void {
    const media = this.records.get(id)
    if (media !== undefined) this.records.set(id, { ...media, mime_type: essenceOf(mimeType) })
  }

  /** A new download token for `id`, valid {@link DOWNLOAD_URL_LIFETIME_MS} from `now` (ms). */
  issueToken(id: string, now: number): string {
    const token = randomBytes(24).toString("base64url")
    this.tokens.set(token, { id, expiresAt: now + DOWNLOAD_URL_LIFETIME_MS })
    return token
  }

  /** The media a download token gives at `now` (ms), or `undefined` when unknown or expired. */
  redeem(token: string, now: number): SimulatedMedia | undefined {
    const issued = this.tokens.get(token)
    if (issued === undefined) return undefined
    if (issued.expiresAt <= now) {
      this.tokens.delete(token)
      return undefined
    }
    return this.records.get(issued.id)
  }

  /** The media's bytes as a stream (`start`/`end` included, for a cut-short answer). */
  stream(id: string, range?: { readonly start: number; readonly end: number }): ReadStream {
    return createReadStream(this.pathOf(id), range)
  }

  /** The media's bytes, whole (the control API's copy of what a send referred to). */
  bytes(id: string): Promise<Buffer> {
    return readFile(this.pathOf(id))
  }

  /** Forgets every media and token and removes their files. */
  clear(): void {
    this.records.clear()
    this.tokens.clear()
    this.close()
  }

  /** Removes the directory and its files. */
  close(): void {
    if (this.directory !== null) rmSync(this.directory, { recursive: true, force: true })
    this.directory = null
  }

  private pathOf(id: string): string {
    this.directory ??= mkdtempSync(join(tmpdir(), "switchboard-simulator-media-"))
    return join(this.directory, id)
  }
}
